/* half.c: half the vector across regions (docs/SWARM.md, "Half the vector across").
 *
 * After a region round whose pair updated both parts, both peers of the region hold the same
 * vector and weight. In the next (cross-region) round each then carries one half across: the
 * peer at place 0 averages slice 0 with the other regions' place-0 peers, the peer at place 1
 * slice 1 with theirs, and the two swap the halves they averaged (SWARM_HALF). Each peer sends
 * half the bytes across; the swap stays on the region's fast link.
 *
 * Why this is exact. Partners entering with the same state (x, w), a line's members are one
 * peer of each region, so the line's mean of slice s is the mean over all regions; the partner
 * adopting it along with the slice's weight makes the region hold two copies of what the line
 * member holds, as both copies held the same before. Over the line, the slice weights of the
 * members sum to their entering weights (butterfly.c), so the weights of all peers still sum to
 * the total. A peer adopts only when its partner says it averaged the other slice starting from
 * the same state (the hash of vector and weight both held entering the round); otherwise it keeps
 * its own values, which is always consistent (it is what a failed part does), only less averaged.
 *
 * A line runs half only when every member offered the same slice, so that its members agree on
 * the parts; a peer offers only when its state is exactly what its last region round, a pair,
 * left (no training step between), and the codec is f32 with no int8ef residual pending. A
 * dead or absent partner therefore means the whole vector (the existing path).
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HALF_FIXED 25 /* hash (16) | u8 1 + slice averaged, 0: none | f64 that slice's weight */

static void state_hash(const float *values, size_t count, double weight, uint8_t out[16]) {
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, 16);
  crypto_generichash_update(&st, (const uint8_t *)&weight, sizeof weight);
  crypto_generichash_update(&st, (const uint8_t *)values, count * sizeof *values);
  crypto_generichash_final(&st, out, 16);
}

static void slice_bounds(size_t count, int slice, size_t *lo, size_t *len) {
  *lo = slice == 0 ? 0 : count / 2;
  *len = slice == 0 ? count / 2 : count - count / 2;
}

void swarm_half_after_round(tern_swarm *sw, uint32_t round, const swarm_member *group, int n,
                            bool pooled, const swarm_avg_result *res, const float *values,
                            size_t count, double weight) {
  if (!sw->regional || round % 2 != 0) return;
  /* a pooled partner is of another region, and on the same place */
  sw->has_region_partner = n == 2 && !pooled;
  sw->region_hash_set = false;
  if (!sw->has_region_partner) return;
  sw->region_partner = group[group[0].id == sw->id ? 1 : 0];
  sw->region_partner_round = round;
  if (res->failed_count == 0 && res->parts_updated == 2) {
    state_hash(values, count, weight, sw->region_hash);
    sw->region_hash_set = true;
  }
}

void swarm_half_begin(tern_swarm *sw, const float *values, size_t count, double weight,
                      tern_compress codec, swarm_half *hf) {
  *hf = (swarm_half){.slice = -1, .weight_in = weight};
  sw->self.half = 0;
  hf->paired = sw->regional && sw->has_region_partner && sw->round % 2 == 1 &&
               sw->round == sw->region_partner_round + 1;
  if (!hf->paired) return;
  state_hash(values, count, weight, hf->entering);
  hf->offered = sw->region_hash_set && count >= 2 && sw->coords[0] <= 1 &&
                codec == TERN_COMPRESS_NONE && !sw->ef_mass &&
                sodium_memcmp(hf->entering, sw->region_hash, 16) == 0;
  if (hf->offered) sw->self.half = (uint8_t)(1 + sw->coords[0]);
}

void swarm_half_choose(tern_swarm *sw, const swarm_member *group, int n, size_t count,
                       swarm_half *hf) {
  uint8_t want = sw->self.half;
  sw->self.half = 0;
  hf->slice = -1;
  /* a late peer may have jumped past the round it offered for */
  if (!hf->offered || want == 0 || n < 2 || sw->round % 2 != 1 ||
      sw->round != sw->region_partner_round + 1)
    return;
  for (int i = 0; i < n; i++)
    if (group[i].half != want) return;
  hf->slice = want - 1;
  slice_bounds(count, hf->slice, &hf->lo, &hf->len);
}

/* The partner's message for this round. */
typedef struct half_want {
  uint32_t round;
  uint64_t sender;
} half_want;

static bool is_half(const swarm_conn *c, void *arg) {
  const half_want *w = arg;
  return c->hdr.type == SWARM_HALF && c->hdr.round == w->round && c->hdr.sender == w->sender;
}

typedef struct half_send {
  tern_swarm *sw;
  swarm_hdr h;
  const uint8_t *fixed;
  const float *values;
  uint64_t deadline;
  atomic_bool failed;
  unsigned long long sent;
} half_send;

/* To the partner on a connection of its own; a thread, as both partners send at once. */
static void *send_half(void *arg) {
  half_send *s = arg;
  const swarm_member *m = &s->sw->region_partner;
  core_err err = {0};
  int fd = -1;
  uint8_t *buf = malloc(s->h.len);
  if (!buf)
    core_err_set(&err, TERN_ERR_NOMEM, "a half of %llu bytes", (unsigned long long)s->h.len);
  if (buf) {
    memcpy(buf, s->fixed, HALF_FIXED);
    if (s->h.len > HALF_FIXED) memcpy(buf + HALF_FIXED, s->values, s->h.len - HALF_FIXED);
  }
  if (buf &&
      swarm_dial_refused(s->sw, m, s->deadline, SWARM_REFUSED_DEAD_SECONDS, &fd, &err) == TERN_OK &&
      swarm_send(fd, &s->h, buf, s->deadline, "the region partner", &err) == TERN_OK)
    s->sent = SWARM_HDR_LEN + s->h.len;
  if (err.msg[0]) {
    CORE_INFO("swarm: round %u: half to the region partner %016llx: %s", s->sw->round,
              (unsigned long long)m->id, err.msg);
    atomic_store(&s->failed, true);
  }
  if (fd >= 0) close(fd);
  free(buf);
  return NULL;
}

/* Reads the partner's message; true when it averaged slice 1 - mine from our entering state:
 * its half is then in values and its slice weight in *their_w. */
static bool take_half(tern_swarm *sw, const swarm_half *hf, half_send *s, float *values,
                      size_t count, double *their_w, unsigned long long *received) {
  half_want w = {sw->round, sw->region_partner.id};
  swarm_conn c = {.fd = -1};
  bool took = false;
  while (!took && !atomic_load(&s->failed) && core_now_ns() < s->deadline)
    took =
        swarm_queue_take(sw, is_half, &w, CORE_MIN(s->deadline, core_now_ns() + 100000000ull), &c);
  if (!took) {
    CORE_INFO("swarm: round %u: no half from the region partner %016llx: own values kept",
              sw->round, (unsigned long long)w.sender);
    return false;
  }
  int other = 1 - hf->slice;
  size_t lo, len;
  slice_bounds(count, other, &lo, &len);
  core_err err = {0};
  bool ok = c.hdr.len == HALF_FIXED || c.hdr.len == HALF_FIXED + len * sizeof(float);
  uint8_t *buf = ok ? malloc(c.hdr.len) : NULL;
  ok = buf && swarm_recv_payload(c.fd, buf, c.hdr.len, s->deadline, c.from, &err) == TERN_OK;
  if (ok) *received += SWARM_HDR_LEN + c.hdr.len;
  ok = ok && c.hdr.len > HALF_FIXED && buf[16] == 1 + other &&
       sodium_memcmp(buf, hf->entering, 16) == 0;
  if (ok) {
    *their_w = core_get_f64(buf + 17);
    ok = isfinite(*their_w) && *their_w > 0;
  }
  float *got = ok ? malloc(CORE_MAX(len, 1) * sizeof *got) : NULL;
  if (got) memcpy(got, buf + HALF_FIXED, len * sizeof *got); /* little-endian, as sent */
  ok = got && swarm_values_finite(got, len);
  if (ok) memcpy(values + lo, got, len * sizeof *got);
  free(got);
  if (!ok)
    CORE_INFO("swarm: round %u: the region partner %016llx averaged %s: own values kept%s%s",
              sw->round, (unsigned long long)w.sender,
              buf && c.hdr.len > HALF_FIXED ? "another state or slice" : "no half",
              err.msg[0] ? ": " : "", err.msg);
  free(buf);
  swarm_conn_close(&c);
  return ok;
}

/* The whole vector's weight: its slices' weights by length, slice 0 first (both partners add
 * the same two terms in the same order, so they end with the same weight). */
static double whole_weight(size_t count, double w0, double w1) {
  size_t len0 = count / 2;
  return ((double)len0 * w0 + (double)(count - len0) * w1) / (double)count;
}

void swarm_half_end(tern_swarm *sw, swarm_half *hf, float *values, size_t count, double *weight,
                    double timeout_s, swarm_avg_result *res) {
  if (!hf->paired) return;
  uint8_t fixed[HALF_FIXED];
  memcpy(fixed, hf->entering, 16);
  fixed[16] = (uint8_t)(hf->slice + 1);
  core_put_f64(fixed + 17, hf->slice >= 0 ? *weight : hf->weight_in);
  half_send s = {.sw = sw,
                 .h = {.type = SWARM_HALF,
                       .round = sw->round,
                       .sender = sw->id,
                       .len = HALF_FIXED + (hf->slice >= 0 ? hf->len * sizeof(float) : 0)},
                 .fixed = fixed,
                 .values = values + hf->lo,
                 .deadline = core_deadline_after(timeout_s)};
  unsigned long long across = res->sent;
  if (hf->slice < 0) { /* the whole vector averaged: the partner's half is of no use here */
    send_half(&s);
    res->sent += s.sent;
    return;
  }
  pthread_t th;
  bool started = pthread_create(&th, NULL, send_half, &s) == 0;
  if (!started) send_half(&s);
  double mine = *weight, theirs = hf->weight_in;
  unsigned long long got = 0;
  bool adopted = take_half(sw, hf, &s, values, count, &theirs, &got);
  if (started) pthread_join(th, NULL);
  *weight = hf->slice == 0 ? whole_weight(count, mine, theirs) : whole_weight(count, theirs, mine);
  res->sent += s.sent;
  res->received += got;
  CORE_INFO("swarm: round %u: half: slice %d of %zu values across (sent %llu bytes); partner "
            "%016llx: %s (%llu bytes sent in the region)",
            sw->round, hf->slice, hf->len, across, (unsigned long long)sw->region_partner.id,
            adopted ? "its half adopted" : "own values kept", s.sent);
}

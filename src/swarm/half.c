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
 * the total. A peer adopts only when its partner says it averaged a slice of which this peer's
 * copy is untouched, starting from the same state (the hash of vector and weight both held
 * entering the round); otherwise it keeps
 * its own values: exact as long as its line-mates' partners keep theirs too (the lines' modes
 * are uniform, so they do unless a partner fails or averages in another group: docs/SWARM.md).
 *
 * A line runs half only when every member offered the same slice, so that its members agree on
 * the parts; a peer offers only when its state is exactly what its last region round, a pair,
 * left (no training step between), and the codec is f32 with no int8ef residual pending. A
 * dead or absent partner therefore means the whole vector (the existing path). A partner that
 * averaged nothing (alone, or past the round) adopts the half all the same: its copy of that
 * slice is untouched, and two copies of the line member's result is what the pair needs.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HALF_FIXED 25    /* hash (16) | u8 1 + slice averaged, 0: none | f64 that slice's weight */
#define HALF_WHOLE 0     /* byte 16: this peer averaged the whole vector (takes no half) */
#define HALF_UNTOUCHED 3 /* ... or nothing (alone, or past the round): takes the partner's */
#define SWARM_HALF_NOTICE_SECONDS 2.0     /* "no half here": 65 bytes to a peer of the region */
#define HALF_ALIVE_EVERY_NS 1000000000ull /* how often a partner that sent nothing is asked */

/* The state's fingerprint: four xxh64-style lanes over the vector, then the weight. Not a MAC
 * (a partner is a key holder, and could lie about its half anyway); fast, because both partners
 * hash the whole vector twice per pair of rounds: BLAKE2b took 0.25 s for 64 MiB here, this
 * about a tenth, which the matching of the cross-region round would otherwise wait for. */
#define LANE_P1 11400714785092667399ull
#define LANE_P2 14029467366897019727ull

static uint64_t lane(uint64_t acc, uint64_t in) {
  acc += in * LANE_P2;
  acc = (acc << 31) | (acc >> 33);
  return acc * LANE_P1;
}

static uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= LANE_P2;
  h ^= h >> 29;
  h *= LANE_P1;
  return h ^ (h >> 32);
}

static void state_hash(const float *values, size_t count, double weight, uint8_t out[16]) {
  uint64_t v[4] = {LANE_P1 + LANE_P2, LANE_P2, 0, 0 - LANE_P1}, word;
  const uint8_t *p = (const uint8_t *)values;
  size_t bytes = count * sizeof *values, at = 0;
  for (; at + 32 <= bytes; at += 32)
    for (int i = 0; i < 4; i++) {
      memcpy(&word, p + at + 8 * (size_t)i, 8);
      v[i] = lane(v[i], word);
    }
  for (; at < bytes; at += 4) { /* the last floats, fewer than 8 */
    uint32_t w32;
    memcpy(&w32, p + at, 4);
    v[0] = lane(v[0], w32);
  }
  memcpy(&word, &weight, 8);
  v[1] = lane(v[1], word);
  v[2] = lane(v[2], (uint64_t)count);
  uint64_t h0 = avalanche(v[0] ^ ((v[1] << 7) | (v[1] >> 57)) ^ ((v[2] << 12) | (v[2] >> 52)) ^
                          ((v[3] << 18) | (v[3] >> 46)));
  uint64_t h1 = avalanche(v[3] + ((v[2] << 1) | (v[2] >> 63)) + ((v[1] << 23) | (v[1] >> 41)) +
                          ((v[0] << 37) | (v[0] >> 27)));
  memcpy(out, &h0, 8);
  memcpy(out + 8, &h1, 8);
}

static void slice_bounds(size_t count, int slice, size_t *lo, size_t *len) {
  *lo = slice == 0 ? 0 : count / 2;
  *len = slice == 0 ? count / 2 : count - count / 2;
}

void swarm_half_after_round(tern_swarm *sw, uint32_t round, const swarm_member *group, int n,
                            bool pooled, const swarm_avg_result *res, const float *values,
                            size_t count, double weight) {
  if (!swarm_region_within(sw, round)) return;
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
  *hf = (swarm_half){.slice = -1, .weight_in = weight, .round = sw->round};
  sw->self.half = 0;
  hf->paired = swarm_region_across(sw, sw->round) && sw->has_region_partner &&
               sw->round == sw->region_partner_round + 1;
  if (!hf->paired) return;
  state_hash(values, count, weight, hf->entering);
  /* no-half-offer (tests/swarm/region_half_mixed.sh): a peer whose state is the region's all the
   * same offers nothing, so that its line averages the whole vector while the other carries a
   * half */
  hf->offered = !swarm_fault("no-half-offer") && sw->region_hash_set && count >= 2 &&
                sw->coords[0] <= 1 && codec == TERN_COMPRESS_NONE && !sw->ef_mass &&
                sodium_memcmp(hf->entering, sw->region_hash, 16) == 0;
  if (hf->offered) sw->self.half = (uint8_t)(1 + sw->coords[0]);
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
  pthread_mutex_t mu; /* guards fd, which the waiting thread may shut down (half_abort) */
  int fd;
  bool aborted;
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
  if (buf) swarm_dial_refused(s->sw, m, s->deadline, SWARM_REFUSED_DEAD_SECONDS, &fd, &err);
  pthread_mutex_lock(&s->mu);
  s->fd = s->aborted ? -1 : fd;
  pthread_mutex_unlock(&s->mu);
  if (fd >= 0 && s->fd >= 0 &&
      swarm_send(fd, &s->h, buf, s->deadline, "the region partner", &err) == TERN_OK)
    s->sent = SWARM_HDR_LEN + s->h.len;
  if (err.msg[0] && !s->aborted) {
    CORE_INFO("swarm: round %u: half to the region partner %016llx: %s", s->sw->round,
              (unsigned long long)m->id, err.msg);
    atomic_store(&s->failed, true);
  }
  pthread_mutex_lock(&s->mu);
  s->fd = -1;
  pthread_mutex_unlock(&s->mu);
  if (fd >= 0) close(fd);
  free(buf);
  return NULL;
}

/* The partner will not read our half (it averaged the whole vector, or another state): stops
 * the send at once, rather than at its deadline. */
static void half_abort(half_send *s) {
  pthread_mutex_lock(&s->mu);
  s->aborted = true;
  if (s->fd >= 0) shutdown(s->fd, SHUT_RDWR);
  pthread_mutex_unlock(&s->mu);
}

/* What this peer averaged, for the partner: hash | 1 + slice, 0: none | that slice's weight. */
static void half_fixed(const swarm_half *hf, double slice_weight, uint8_t out[HALF_FIXED]) {
  memcpy(out, hf->entering, 16);
  out[16] = (uint8_t)(hf->slice + 1);
  core_put_f64(out + 17, slice_weight);
}

static void half_send_init(half_send *s, tern_swarm *sw, const swarm_half *hf, const uint8_t *fixed,
                           const float *slice_values, double timeout_s) {
  *s = (half_send){.sw = sw,
                   .h = {.type = SWARM_HALF,
                         .round = hf->round,
                         .sender = sw->id,
                         .len = HALF_FIXED + (hf->slice >= 0 ? hf->len * sizeof(float) : 0)},
                   .fixed = fixed,
                   .values = slice_values,
                   .deadline = core_deadline_after(timeout_s),
                   .fd = -1};
  pthread_mutex_init(&s->mu, NULL);
}

/* The partner's message: what it averaged (HALF_WHOLE, HALF_UNTOUCHED or 1 + a slice) from
 * which state. */
typedef struct half_got {
  bool same;   /* it entered the round with our state */
  uint8_t did; /* its byte 16 */
  bool adopted;
  double w_slice; /* its slice's weight, when adopted */
  unsigned long long received;
} half_got;

/* Reads the partner's message, waiting until deadline (or *stop); adopts its slice into values
 * when it averaged one from our entering state and ours is untouched there (we averaged the
 * other slice, or nothing). */
static void take_half(tern_swarm *sw, const swarm_half *hf, const atomic_bool *stop,
                      uint64_t deadline, float *values, size_t count, half_got *g) {
  half_want w = {hf->round, sw->region_partner.id};
  swarm_conn c = {.fd = -1};
  bool took = false;
  *g = (half_got){0};
  /* The partner is asked every second whether it is alive: one killed after it took our half
   * (the send succeeded) sends nothing, and waiting for it to the deadline (the matching and
   * averaging times: 80 s on the WAN benchmark) left a survivor of the WAN kill test out of
   * every later cross-region group. */
  uint64_t ask_at = core_now_ns() + HALF_ALIVE_EVERY_NS;
  bool gone = false;
  while (!took && !gone && !(stop && atomic_load(stop)) && core_now_ns() < deadline) {
    took = swarm_queue_take(sw, is_half, &w, CORE_MIN(deadline, core_now_ns() + 100000000ull), &c);
    if (!took && core_now_ns() >= ask_at) {
      gone = !swarm_peer_answers(sw, &sw->region_partner);
      ask_at = core_now_ns() + HALF_ALIVE_EVERY_NS;
    }
  }
  if (!took) {
    CORE_INFO("swarm: round %u: no word from the region partner %016llx: own values kept",
              sw->round, (unsigned long long)w.sender);
    return;
  }
  core_err err = {0};
  uint8_t *buf = c.hdr.len >= HALF_FIXED && c.hdr.len <= HALF_FIXED + (count - count / 2) * 4
                     ? malloc(c.hdr.len)
                     : NULL;
  bool ok = buf && swarm_recv_payload(c.fd, buf, c.hdr.len, deadline, c.from, &err) == TERN_OK;
  if (ok) {
    g->received = SWARM_HDR_LEN + c.hdr.len;
    g->same = sodium_memcmp(buf, hf->entering, 16) == 0;
    g->did = buf[16];
  }
  int theirs = ok && (g->did == 1 || g->did == 2) ? g->did - 1 : -1;
  size_t lo = 0, len = 0;
  if (theirs >= 0) slice_bounds(count, theirs, &lo, &len);
  bool mine_untouched = hf->slice < 0 ? hf->untouched : hf->slice != theirs;
  ok = theirs >= 0 && g->same && mine_untouched && c.hdr.len == HALF_FIXED + len * sizeof(float);
  g->w_slice = ok ? core_get_f64(buf + 17) : 0;
  ok = ok && isfinite(g->w_slice) && g->w_slice > 0;
  float *got = ok ? malloc(CORE_MAX(len, 1) * sizeof *got) : NULL;
  if (got) memcpy(got, buf + HALF_FIXED, len * sizeof *got); /* little-endian, as sent */
  g->adopted = got && swarm_values_finite(got, len);
  if (g->adopted)
    memcpy(values + lo, got, len * sizeof *got);
  else
    CORE_INFO("swarm: round %u: the region partner %016llx averaged %s: own values kept%s%s",
              sw->round, (unsigned long long)w.sender,
              !ok && err.msg[0] ? "?"
              : !g->same        ? "from another state"
              : theirs < 0      ? "no half"
                                : "the same slice",
              err.msg[0] ? ": " : "", err.msg);
  free(got);
  free(buf);
  swarm_conn_close(&c);
}

/* The whole vector's weight: its slices' weights by length, slice 0 first (both partners add
 * the same two terms in the same order, so they end with the same weight). */
static double whole_weight(size_t count, double w0, double w1) {
  size_t len0 = count / 2;
  return ((double)len0 * w0 + (double)(count - len0) * w1) / (double)count;
}

void swarm_half_choose(tern_swarm *sw, const swarm_member *group, int n, size_t count,
                       swarm_half *hf) {
  uint8_t want = sw->self.half;
  sw->self.half = 0;
  hf->slice = -1;
  bool all = hf->offered && want != 0 && n >= 2 && sw->round == hf->round; /* not jumped */
  for (int i = 0; all && i < n; i++)
    all = group[i].half == want;
  if (all) {
    hf->slice = want - 1;
    slice_bounds(count, hf->slice, &hf->lo, &hf->len);
    return;
  }
  if (!hf->paired) return;
  /* Told at once, so that a partner carrying a half need not wait: averaging the whole vector,
   * this peer takes nothing (its values moved on both halves); alone (or past the round), it
   * takes the partner's half. */
  hf->untouched = n == 1; /* 0: the matching failed; this call ends without taking anything */
  uint8_t fixed[HALF_FIXED];
  half_fixed(hf, hf->weight_in, fixed);
  fixed[16] = hf->untouched ? HALF_UNTOUCHED : HALF_WHOLE;
  half_send s;
  half_send_init(&s, sw, hf, fixed, NULL, SWARM_HALF_NOTICE_SECONDS);
  send_half(&s);
  hf->notice_failed = atomic_load(&s.failed);
  pthread_mutex_destroy(&s.mu);
}

/* The whole vector's weight: slice `slice` at w_slice, the rest at w_rest. */
static double with_slice(size_t count, int slice, double w_slice, double w_rest) {
  return slice == 0 ? whole_weight(count, w_slice, w_rest) : whole_weight(count, w_rest, w_slice);
}

/* Alone this round: the partner's half, if it carried one from our state. */
static void take_while_alone(tern_swarm *sw, swarm_half *hf, float *values, size_t count,
                             double *weight, double timeout_s, swarm_avg_result *res) {
  if (hf->notice_failed) return; /* the partner is gone */
  half_got g;
  take_half(sw, hf, NULL, core_deadline_after(timeout_s), values, count, &g);
  res->received += g.received;
  if (!g.adopted) return;
  *weight = with_slice(count, g.did - 1, g.w_slice, hf->weight_in);
  CORE_INFO("swarm: round %u: alone; the region partner %016llx carried slice %d: adopted",
            sw->round, (unsigned long long)sw->region_partner.id, g.did - 1);
}

void swarm_half_end(tern_swarm *sw, swarm_half *hf, float *values, size_t count, double *weight,
                    double timeout_s, swarm_avg_result *res) {
  if (!hf->paired) return;
  if (hf->slice < 0) {
    if (hf->untouched) take_while_alone(sw, hf, values, count, weight, timeout_s, res);
    return;
  }
  uint8_t fixed[HALF_FIXED];
  half_fixed(hf, *weight, fixed);
  half_send s;
  half_send_init(&s, sw, hf, fixed, values + hf->lo, timeout_s);
  unsigned long long across = res->sent;
  pthread_t th;
  bool started = pthread_create(&th, NULL, send_half, &s) == 0;
  if (!started) send_half(&s);
  half_got g;
  take_half(sw, hf, &s.failed, s.deadline, values, count, &g);
  /* The partner reads our half when it takes it: it averaged the other slice (the same test on
   * both sides) or nothing, from our state. */
  if (!g.same || !(g.adopted || g.did == HALF_UNTOUCHED)) half_abort(&s);
  if (started) pthread_join(th, NULL);
  pthread_mutex_destroy(&s.mu);
  *weight = with_slice(count, hf->slice, *weight, g.adopted ? g.w_slice : hf->weight_in);
  res->sent += s.sent;
  res->received += g.received;
  CORE_INFO("swarm: round %u: half: slice %d of %zu values across (sent %llu bytes); partner "
            "%016llx: %s (%llu bytes sent in the region)",
            sw->round, hf->slice, hf->len, across, (unsigned long long)sw->region_partner.id,
            g.adopted ? "its half adopted" : "own values kept", s.sent);
}

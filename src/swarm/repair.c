/* repair.c: results that a dying reducer sent to some members of its part and not to others.
 *
 * Reducer j sends the averaged part j, with its total weight W and contributor set S, to every
 * member of S; all get the same bytes. If j dies halfway through, member a has the average (which
 * counts b's contribution) while b, who never heard back, would keep its own values: b's values
 * would then be counted twice, once in a's average and once in b's vector. So b, whose part
 * reached j but whose result did not come, asks the other living members for part j first:
 *
 *   SWARM_RESULT_REQ (round, tag, part j)  ->  SWARM_RESULT (W, S, the part as f32): they have it
 *                                           ->  SWARM_PENDING: their own wait on j still runs; ask
 *                                               again shortly (it ends soon: j is dead)
 *                                           ->  SWARM_REJECT: they did not get it
 *
 * b adopts the first result whose S holds b, exactly as if j had sent it; if every living member
 * says no, nobody holds an average with b's values in it and b keeping its own is right. Each
 * peer keeps the results of its current all-reduce (the held table, under sw->mu) until its next
 * all-reduce begins. What stays open: a member that got the result and cannot be reached in the
 * repair's time (a second failure) leaves b with its own values.
 *
 * A living reducer answers too, last (a stalled one would take the whole deadline): it holds its
 * decision from the moment it makes it, so a member of S that was slow, whose result wait ran
 * out before the result came, takes the result the others took. A member whose wait ran out
 * closes its connection before it asks, and a reducer that has not decided yet leaves out of S a
 * contributor that hung up (butterfly.c): whichever comes first, both agree on whether b's part
 * was counted. What stays open: a reducer that decided with b in S, failed to send it the result
 * (a whole quarter of the deadline in which b read nothing) and began its next all-reduce
 * before b asked.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPAIR_RETRY_MS 50

void swarm_held_free(tern_swarm *sw) {
  for (int j = 0; j < SWARM_MAX_GROUP; j++) {
    free(sw->held.values[j]);
    sw->held.values[j] = NULL;
  }
}

void swarm_held_begin(tern_swarm *sw, uint32_t round, uint64_t tag, int n) {
  pthread_mutex_lock(&sw->mu);
  swarm_held_free(sw);
  sw->held.round = round;
  sw->held.tag = tag;
  sw->held.n = n;
  memset(sw->held.status, SWARM_HELD_PENDING, sizeof sw->held.status);
  pthread_mutex_unlock(&sw->mu);
}

void swarm_held_set(tern_swarm *sw, int part, double W, uint64_t mask, float *values, size_t len) {
  pthread_mutex_lock(&sw->mu);
  free(sw->held.values[part]);
  sw->held.values[part] = values;
  sw->held.len[part] = len;
  sw->held.W[part] = W;
  sw->held.mask[part] = mask;
  sw->held.status[part] = values ? SWARM_HELD_HAVE : SWARM_HELD_NONE;
  pthread_mutex_unlock(&sw->mu);
}

void swarm_held_serve(tern_swarm *sw, int fd, const swarm_hdr *req, const char *from) {
  swarm_hdr h = {.type = SWARM_REJECT,
                 .round = req->round,
                 .part = req->part,
                 .sender = sw->id,
                 .tag = req->tag};
  uint8_t *payload = NULL;
  pthread_mutex_lock(&sw->mu);
  const swarm_held *hd = &sw->held;
  if (hd->round == req->round && hd->tag == req->tag && req->part < hd->n) {
    int j = req->part;
    if (hd->status[j] == SWARM_HELD_PENDING) h.type = SWARM_PENDING;
    if (hd->status[j] == SWARM_HELD_HAVE && (payload = malloc(16 + 4 * hd->len[j]))) {
      h.type = SWARM_RESULT;
      h.len = 16 + 4 * (uint64_t)hd->len[j];
      core_put_f64(payload, hd->W[j]);
      core_put64(payload + 8, hd->mask[j]);
      for (size_t k = 0; k < hd->len[j]; k++)
        core_put_f32(payload + 16 + 4 * k, hd->values[j][k]);
    }
  }
  pthread_mutex_unlock(&sw->mu);
  core_err err = {0};
  if (swarm_send(fd, &h, payload, core_deadline_after(10), from, &err) != TERN_OK)
    CORE_INFO("swarm: a held result for %s: %s", from, err.msg);
  free(payload);
}

/* One question to member m: 1 adopted, 0 it has nothing for us, -1 ask again later. */
static int ask(tern_swarm *sw, const swarm_member *m, int me, int part, uint64_t tag, float *out,
               size_t len, double *W, uint64_t *mask, uint64_t deadline) {
  char what[96];
  snprintf(what, sizeof what, "peer %016llx (%s:%d)", (unsigned long long)m->id, m->host, m->port);
  core_err err = {0};
  int fd = -1;
  swarm_hdr h = {.type = SWARM_RESULT_REQ,
                 .part = (uint16_t)part,
                 .round = sw->round,
                 .sender = sw->id,
                 .tag = tag};
  uint8_t *buf = NULL;
  /* A member of the group listens: a refused connection is its death, not retried (the dead
   * reducer, asked last, cost the round of a kill a quarter of a second: bench/swarm/pace.sh). */
  tern_status rc = swarm_dial_refused(sw, m, deadline, SWARM_REFUSED_DEAD_SECONDS, &fd, &err);
  if (rc == TERN_OK) rc = swarm_send(fd, &h, NULL, deadline, what, &err);
  if (rc == TERN_OK) rc = swarm_recv_hdr(fd, &h, deadline, what, &err);
  int verdict = 0;
  if (rc == TERN_OK && h.type == SWARM_PENDING) verdict = -1;
  if (rc == TERN_OK && h.type == SWARM_RESULT && h.len == 16 + 4 * (uint64_t)len &&
      h.part == part && h.tag == tag && (buf = malloc(h.len)) &&
      swarm_recv_payload(fd, buf, h.len, deadline, what, &err) == TERN_OK) {
    *W = core_get_f64(buf);
    *mask = core_get64(buf + 8);
    if (*W > 0 && *mask >> me & 1) {
      for (size_t k = 0; k < len; k++)
        out[k] = core_get_f32(buf + 16 + 4 * k);
      verdict = swarm_values_finite(out, len) ? 1 : 0; /* clip.c: no peer's NaN is taken */
    }
  }
  if (err.msg[0]) CORE_INFO("swarm: round %u: asking for part %d: %s", sw->round, part, err.msg);
  free(buf);
  if (fd >= 0) close(fd);
  return verdict;
}

bool swarm_repair(tern_swarm *sw, const swarm_member *g, int n, int me, int part, uint64_t tag,
                  float *out, size_t len, double *W, uint64_t *mask, uint64_t deadline) {
  /* The other members first, the reducer itself last: alive, it holds its decision (a result
   * whose S holds us, one without us, or none); stalled, it would take the whole deadline. */
  for (int k = 0; k < n; k++) {
    int i = k == n - 1 ? part : k + (k >= part);
    if (i == me) continue;
    int v;
    while ((v = ask(sw, &g[i], me, part, tag, out, len, W, mask, deadline)) < 0 &&
           core_now_ns() < deadline)
      core_sleep_ms(REPAIR_RETRY_MS);
    if (v > 0 && i == part)
      CORE_WARN("swarm: round %u: part %d's result did not come; its reducer %016llx sent it "
                "when asked",
                sw->round, part, (unsigned long long)g[part].id);
    else if (v > 0)
      CORE_WARN("swarm: round %u: part %d's reducer %016llx did not answer; took its result from "
                "peer %016llx, who got it",
                sw->round, part, (unsigned long long)g[part].id, (unsigned long long)g[i].id);
    if (v > 0) return true;
  }
  return false;
}

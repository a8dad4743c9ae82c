/* probe.c: bandwidth measured, not declared (docs/SWARM.md, "Regions").
 *
 * A peer that declared no bandwidth measures it: every SWARM_PROBE_EVERY rounds it sends
 * SWARM_PROBE_PAIRS pairs of messages (up to SWARM_PROBE_PAIRS_MAX while the two kinds cannot
 * be told apart) to each member of its last group outside its region,
 * SWARM_PROBE_SMALL then SWARM_PROBE_BYTES bytes on one connection, each answered with the count
 * of bytes read. The fastest big round trip less the fastest small one is what the extra bytes
 * took: latency, the handshake and the start of the connection are in both and cancel, and a
 * round trip a busy CPU delayed (a scheduler slice is as long as a loopback megabyte) is not the
 * fastest of its kind. The slowest member's rate is what this
 * peer can count on to the other regions, and becomes the bandwidth its records carry, which
 * sizes its part of every group (swarm_parts, as hivemind's load balancing sizes parts by
 * throughput). A probe costs about 1 MiB per member and a few round trips, within its deadline.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_SECONDS 3.0 /* one member's probe, and one answer's whole transfer */

/* One timed message of len bytes on fd: the seconds until its answer came. */
static tern_status timed(tern_swarm *sw, int fd, const uint8_t *bytes, size_t len,
                         uint64_t deadline, const char *what, double *secs, core_err *err) {
  swarm_hdr h = {.type = SWARM_PROBE, .sender = sw->id, .len = len};
  uint64_t t0 = core_now_ns();
  tern_status rc = swarm_send(fd, &h, bytes, deadline, what, err);
  uint8_t got[8];
  if (rc == TERN_OK) rc = swarm_recv_hdr(fd, &h, deadline, what, err);
  if (rc == TERN_OK && (h.type != SWARM_PROBE || h.len != sizeof got))
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "%s answered a probe with a %s of %llu bytes", what,
                      swarm_type_name(h.type), (unsigned long long)h.len);
  if (rc == TERN_OK) rc = swarm_recv_payload(fd, got, sizeof got, deadline, what, err);
  if (rc == TERN_OK && core_get64(got) != len)
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "%s says it read %llu bytes of a %zu-byte probe",
                      what, (unsigned long long)core_get64(got), len);
  *secs = (double)(core_now_ns() - t0) / 1e9;
  return rc;
}

tern_status swarm_probe(tern_swarm *sw, const swarm_member *m, double timeout_s, double *bw,
                        core_err *err) {
  char what[128];
  snprintf(what, sizeof what, "peer %016llx (%s:%d)", (unsigned long long)m->id, m->host, m->port);
  uint64_t deadline = core_deadline_after(timeout_s);
  uint8_t *bytes = calloc(1, SWARM_PROBE_BYTES);
  if (!bytes) return core_err_set(err, TERN_ERR_NOMEM, "a probe");
  randombytes_buf(bytes, SWARM_PROBE_BYTES); /* incompressible, whatever lies on the path */
  int fd = -1;
  double small = INFINITY, big = INFINITY;
  tern_status rc = swarm_dial(sw, m, deadline, &fd, err);
  /* More pairs while the fastest big round trip is no slower than the fastest small one: that
   * is a machine too busy to time a message yet, not a link. */
  for (int k = 0;
       rc == TERN_OK && k < SWARM_PROBE_PAIRS_MAX && (k < SWARM_PROBE_PAIRS || !(big > small));
       k++) {
    double s = 0, b = 0;
    rc = timed(sw, fd, bytes, SWARM_PROBE_SMALL, deadline, what, &s, err);
    if (rc == TERN_OK) rc = timed(sw, fd, bytes, SWARM_PROBE_BYTES, deadline, what, &b, err);
    small = fmin(small, s);
    big = fmin(big, b);
  }
  if (fd >= 0) close(fd);
  free(bytes);
  if (rc != TERN_OK) return rc;
  double rate = (double)(SWARM_PROBE_BYTES - SWARM_PROBE_SMALL) / (big - small);
  if (!(big > small) || !isfinite(rate) || rate > SWARM_PROBE_MAX_RATE)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "probe of %s: %.6f s for %u bytes, %.6f s for %u: no rate", what, small,
                        SWARM_PROBE_SMALL, big, SWARM_PROBE_BYTES);
  *bw = rate;
  return TERN_OK;
}

typedef struct probe_answer {
  tern_swarm *sw; /* its leave waits for probes_serving to fall to 0 (swarm.c) */
  int fd;
  swarm_hdr h;
  char from[96];
} probe_answer;

/* Reads a probe's bytes (the first header came through the listener) and the rest of its pairs,
 * answers each with the count, and ends when the prober closes between two pairs. */
static void *answer(void *arg) {
  probe_answer *a = arg;
  uint64_t deadline = core_deadline_after(PROBE_SECONDS);
  uint8_t *buf = malloc(SWARM_PROBE_MAX);
  core_err err = {0};
  tern_status rc = buf ? TERN_OK : TERN_ERR_NOMEM;
  for (int k = 0; k < 2 * SWARM_PROBE_PAIRS_MAX && rc == TERN_OK; k++) {
    if (k > 0) rc = swarm_recv_hdr(a->fd, &a->h, deadline, a->from, &err);
    if (rc == TERN_ERR_PEER_LOST && k % 2 == 0) { /* the prober had its figure */
      err.msg[0] = '\0';
      break;
    }
    if (rc == TERN_OK && (a->h.type != SWARM_PROBE || a->h.len > SWARM_PROBE_MAX))
      rc = core_err_set(&err, TERN_ERR_PROTOCOL, "%s sent a %s of %llu bytes after a probe",
                        a->from, swarm_type_name(a->h.type), (unsigned long long)a->h.len);
    if (rc == TERN_OK) rc = swarm_recv_payload(a->fd, buf, a->h.len, deadline, a->from, &err);
    uint8_t n[8];
    core_put64(n, a->h.len);
    swarm_hdr h = {.type = SWARM_PROBE, .sender = a->sw->id, .len = sizeof n};
    if (rc == TERN_OK) rc = swarm_send(a->fd, &h, n, deadline, a->from, &err);
  }
  if (rc != TERN_OK && err.msg[0]) CORE_INFO("swarm: probe from %s: %s", a->from, err.msg);
  close(a->fd);
  free(buf);
  atomic_fetch_sub(&a->sw->probes_serving, 1);
  free(a);
  return NULL;
}

void swarm_probe_serve(tern_swarm *sw, int fd, const swarm_hdr *h, const char *from) {
  probe_answer *a = NULL;
  if (atomic_fetch_add(&sw->probes_serving, 1) >= SWARM_PROBE_SERVING || !(a = malloc(sizeof *a))) {
    atomic_fetch_sub(&sw->probes_serving, 1);
    CORE_INFO("swarm: a probe from %s not answered: %d in progress", from, SWARM_PROBE_SERVING);
    close(fd);
    return;
  }
  *a = (probe_answer){.sw = sw, .fd = fd, .h = *h};
  snprintf(a->from, sizeof a->from, "%s", from);
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &attr, answer, a) != 0) answer(a);
  pthread_attr_destroy(&attr);
}

void swarm_probe_refresh(tern_swarm *sw) {
  if (!sw->measure_bw || sw->last_group_n < 2) return;
  if (sw->probed && sw->round < sw->probed_round + SWARM_PROBE_EVERY) return;
  /* Regional: the last group of the cross-region axis (the round before this one when this one
   * is the region's) is what the rate must hold for. */
  if (swarm_region_across(sw, sw->round)) return;
  double slowest = 0;
  int measured = 0;
  for (int i = 0; i < sw->last_group_n; i++) {
    const swarm_member *m = &sw->last_group[i];
    if (m->id == sw->id) continue;
    double bw = 0;
    core_err err = {0};
    if (swarm_probe(sw, m, PROBE_SECONDS, &bw, &err) != TERN_OK) {
      CORE_INFO("swarm: round %u: %s", sw->round, err.msg);
      continue;
    }
    CORE_INFO("swarm: round %u: %.3g bytes/s to peer %016llx (%s:%d)", sw->round, bw,
              (unsigned long long)m->id, m->host, m->port);
    if (!measured++ || bw < slowest) slowest = bw;
  }
  sw->probed = true;
  sw->probed_round = sw->round;
  if (measured) sw->self.bw = slowest;
}

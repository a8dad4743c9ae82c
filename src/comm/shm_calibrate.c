/* shm_calibrate.c: whether single copy pays on this host, measured at start-up.
 *
 * Single copy (CMA, net/shm.c) saves a copy but costs a system call that pins the peer's pages,
 * and what that costs depends on the host far more than a memcpy does: on one kind of host single
 * copy beat the rings by about 2x from 64 KiB, on another the rings beat it by 2-3x from 16 KiB
 * to 4 MiB, the kernel's copy there running at a quarter of memcpy's rate (docs/perf/shm.md,
 * "Single copy against the rings, by host"). So unless TERN_SHM_CMA says, the two lowest ranks of
 * each host time both ways at start-up, in two patterns (one way and exchanged, below; best of
 * ROUNDS each after WARM_ROUNDS untimed, about 2 ms in all), and the host's ranks keep single copy,
 * per pattern, only where it won. The lowest rank decides and publishes the verdict in the store;
 * the second learns first whether to take part at all, in a message of its own, so the two can
 * never disagree on it.
 *
 * An oversubscribed host is timed too. There single copy starts only at NET_CMA_CROWDED_MIN
 * (comm/shm_setup.c), and that floor assumed the kernel's copy is worth having at all. Where it is
 * slow it is not, crowded or not: the rings alone were 2-3x faster there. The two lowest
 * ranks time it while the others wait for the verdict in the store, asleep; tern run binds
 * them to two CPUs.
 */
#include "comm/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_BYTES (256u << 10)
#define ROUNDS 6
/* untimed first: once round the ring, whose first trip ran about 0.5 ms a round trip against
 * 5 us after when a slot's first use page-faulted. net/shm.c's prefault now writes every page
 * at start-up; the rounds are kept (one of each pattern and mode), not measured again without
 * them. */
#define WARM_ROUNDS (NET_SHM_SLOTS * NET_SHM_SLOT_BYTES / PROBE_BYTES)

enum { KEEP_DEFAULT = 0, CALIBRATE = 1 };

/* The two patterns timed: one way (a message, and an 8-byte reply), as a broadcast meets it,
 * with the shared copy where the host has it; and an exchange (a message each way at once), as
 * an allgather or allreduce meets it, where both cores are busy and nothing is shared. A host
 * can favour single copy one way and the rings in exchanges (docs/perf/shm.md). */
typedef enum pattern { ONE_WAY, EXCHANGE, NUM_PATTERNS } pattern;
static const char *const pattern_names[NUM_PATTERNS] = {"one way", "exchanged"};

/* The rounds: WARM_ROUNDS untimed, then ROUNDS of each (pattern, mode), interleaved so that
 * drift hits all alike; both ranks derive a round's pattern and mode from its number. */
#define ALL_ROUNDS (WARM_ROUNDS + ROUNDS * NUM_PATTERNS * 2)
static pattern round_pattern(uint32_t i) {
  return (pattern)(i / 2 % NUM_PATTERNS);
}
static bool round_cma(uint32_t i) {
  return i % 2 == 1;
}

static net_xfer probe_xfer(int peer, bool is_send, char *buf, uint64_t bytes, uint32_t seq) {
  net_xfer x = {.hdr = {.kind = NET_KIND_CALIBRATE,
                        .dtype = TERN_U8,
                        .seq = seq,
                        .count = bytes,
                        .bytes = bytes},
                .peer = peer,
                .is_send = is_send};
  if (is_send)
    x.src = buf;
  else
    x.dst = buf;
  return x;
}

/* Posts xs[0..n) and waits for them under the communicator's deadline. */
static tern_status transfer(tern_comm *c, net_xfer *xs, size_t n) {
  tern_status rc = TERN_OK;
  for (size_t i = 0; i < n && rc == TERN_OK; i++)
    rc = comm_post(c, &xs[i]);
  return rc == TERN_OK ? comm_wait_all(c, xs, n) : rc;
}

/* One round as either rank runs it (first: the lowest rank, which sends first one way), single
 * copy on or off for the calibration's messages (NET_KIND_CALIBRATE meets cma_floor). out and
 * in hold PROBE_BYTES each. */
static tern_status one_round(tern_comm *c, int peer, bool first, uint32_t i, char *out, char *in) {
  net_shm_chan *ch = &c->peers[peer].shm;
  ch->cma_floor = round_cma(i) ? 0 : UINT64_MAX;
  if (round_pattern(i) == EXCHANGE) {
    net_xfer xs[2] = {probe_xfer(peer, true, out, PROBE_BYTES, i),
                      probe_xfer(peer, false, in, PROBE_BYTES, i)};
    return transfer(c, xs, 2);
  }
  net_xfer there = probe_xfer(peer, first, first ? out : in, PROBE_BYTES, i);
  net_xfer back = probe_xfer(peer, !first, first ? in : out, 8, i);
  tern_status rc = transfer(c, &there, 1);
  return rc == TERN_OK ? transfer(c, &back, 1) : rc;
}

/* Both ranks run every round; the lowest (first) times them. keep[p]: single copy was the faster
 * in pattern p. The channel's floor and sharing are put back after. */
static tern_status run_rounds(tern_comm *c, int peer, bool first, bool keep[NUM_PATTERNS]) {
  /* written, so that real pages back it: untouched, a buffer sent from maps the kernel's one
   * zero page, which stays in the cache however large the message, a bias toward the rings */
  char *buf = malloc(2 * PROBE_BYTES);
  if (buf == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory to time single copy");
  memset(buf, 1, 2 * PROBE_BYTES);
  net_shm_chan *ch = &c->peers[peer].shm;
  uint64_t floor = ch->cma_floor, best[NUM_PATTERNS][2], t0;
  bool share = ch->share;
  for (int p = 0; p < NUM_PATTERNS; p++)
    best[p][0] = best[p][1] = UINT64_MAX;
  tern_status rc = TERN_OK;
  for (uint32_t i = 0; i < ALL_ROUNDS && rc == TERN_OK; i++) {
    pattern p = round_pattern(i);
    ch->share = share && p == ONE_WAY;
    t0 = core_now_ns();
    rc = one_round(c, peer, first, i, buf, buf + PROBE_BYTES);
    uint64_t ns = core_now_ns() - t0;
    if (i >= WARM_ROUNDS && ns < best[p][round_cma(i)]) best[p][round_cma(i)] = ns;
  }
  free(buf);
  ch->cma_floor = floor;
  ch->share = share;
  for (int p = 0; first && rc == TERN_OK && p < NUM_PATTERNS; p++) {
    keep[p] = best[p][1] < best[p][0];
    CORE_INFO("shared memory on this host, %s: single copy %s (a %u KiB message, %s: through "
              "the rings %.1f us, single copy %.1f us)",
              pattern_names[p], keep[p] ? "kept" : "off", PROBE_BYTES >> 10,
              p == ONE_WAY ? "and its reply" : "each way", best[p][0] / 1e3, best[p][1] / 1e3);
  }
  return rc;
}

/* The verdict as stored: 'd' (the defaults: nobody timed), or '0' plus a bit per pattern in
 * which single copy is kept. */
static char verdict_of(const bool keep[NUM_PATTERNS]) {
  char v = '0';
  for (int p = 0; p < NUM_PATTERNS; p++)
    v = (char)(v | (keep[p] << p));
  return v;
}

/* Whether a stored verdict ('0'-'3') keeps single copy in pattern p. */
static bool kept(char verdict, pattern p) {
  return ((verdict - '0') >> p) & 1;
}

/* Single copy off for every peer on this host in each pattern the verdict did not keep it. */
static void follow(tern_comm *c, char verdict) {
  for (int r = 0; r < c->size; r++) {
    if (c->peers[r].link != COMM_LINK_SHM) continue;
    net_shm_chan *ch = &c->peers[r].shm;
    if (!kept(verdict, ONE_WAY)) ch->cma_floor = UINT64_MAX;
    if (!kept(verdict, EXCHANGE)) ch->cma_floor_exchange = UINT64_MAX;
  }
}

tern_status comm_calibrate_shm(tern_comm *c, const char *gen, uint64_t deadline) {
  int lowest = -1, second = -1; /* this host's two lowest ranks */
  for (int r = 0; r < c->size && second < 0; r++) {
    if (r != c->rank && c->peers[r].link != COMM_LINK_SHM) continue;
    if (lowest < 0)
      lowest = r;
    else
      second = r;
  }
  if (second < 0) return TERN_OK; /* alone on the host */
  char key[64], verdict = 'd';
  snprintf(key, sizeof key, "%s/shm-cma/%d", gen, lowest);
  uint64_t plan = KEEP_DEFAULT;
  tern_status rc = TERN_OK;
  int peer = c->rank == lowest ? second : lowest;
  net_xfer ask = probe_xfer(peer, c->rank == lowest, (char *)&plan, sizeof plan, UINT32_MAX);
  if (c->rank == lowest) {
    bool asked = core_config_get()->shm_cma < 0 && c->peers[second].shm.cma;
    plan = asked ? CALIBRATE : KEEP_DEFAULT;
    rc = transfer(c, &ask, 1);
    bool keep[NUM_PATTERNS];
    if (rc == TERN_OK && plan == CALIBRATE) rc = run_rounds(c, second, true, keep);
    if (rc == TERN_OK && plan == CALIBRATE) verdict = verdict_of(keep);
    if (rc == TERN_OK) rc = store_set(c->store, key, &verdict, 1, &c->err);
  } else {
    if (c->rank == second) {
      rc = transfer(c, &ask, 1);
      if (rc == TERN_OK && plan == CALIBRATE) rc = run_rounds(c, lowest, false, NULL);
    }
    void *val = NULL;
    size_t len = 0;
    if (rc == TERN_OK) rc = store_get(c->store, key, &val, &len, deadline, &c->err);
    if (rc == TERN_OK && len == 1) verdict = *(char *)val;
    free(val);
  }
  if (rc != TERN_OK || verdict == 'd') return rc;
  if (verdict < '0' || verdict > '3')
    return core_err_set(&c->err, TERN_ERR_PROTOCOL,
                        "rank %d stored a single-copy verdict '%c' "
                        "that is none of d, 0-3",
                        lowest, verdict);
  follow(c, verdict);
  if (c->rank != lowest)
    CORE_DEBUG("single copy %s one way and %s exchanged for this host's peers, as rank %d timed "
               "it",
               kept(verdict, ONE_WAY) ? "kept" : "off", kept(verdict, EXCHANGE) ? "kept" : "off",
               lowest);
  return rc;
}

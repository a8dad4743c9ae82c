/* shm_calibrate.c: whether single copy pays on this host, measured at start-up.
 *
 * Single copy (CMA, net/shm.c) saves a copy but costs a system call that pins the peer's pages,
 * and what that costs depends on the host far more than a memcpy does. On this project's 2-core
 * VM, on an Intel guest (2026-12-03), single copy beat the rings by about 2x from 64 KiB (a
 * 256 KiB broadcast at n = 2 19.3 -> 9.1 us); on an AMD guest (2026-12-04) the rings beat it by
 * 2-3x from 16 KiB to 4 MiB (the same broadcast 4.5 us through the rings against 10.1 us shared,
 * an allreduce of 1 MiB 70 against 170-200 us), the kernel's copy there running at a quarter of
 * memcpy's rate (bench/peers' membw). So unless TERN_SHM_CMA says, the two lowest ranks of each
 * host time both ways at start-up (a 256 KiB message and an 8-byte reply, best of ROUNDS each
 * after WARM_ROUNDS untimed, about 2 ms in all), and the host's ranks keep single copy only where it
 * won. The lowest rank decides and publishes the verdict in the store; the second learns first
 * whether to take part at all, in a message of its own, so the two can never disagree on it.
 *
 * An oversubscribed host is timed too. There single copy starts only at NET_CMA_CROWDED_MIN
 * (comm/shm_setup.c), and that floor assumed the kernel's copy is worth having at all. On the AMD
 * guest it is not, crowded or not: 4 ranks on 2 cores, 2026-12-05, interleaved, single copy
 * from 1 MiB -> the rings only: allreduce 4 MiB 2.2-2.5 -> 0.83-0.92 ms, 16 MiB 9.0-9.7 ->
 * 5.1-5.4 ms, broadcast 16 MiB 6.4-6.8 -> 2.5-3.0 ms (docs/PERFORMANCE.md). The two lowest
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
 * at start-up; the rounds are kept, not measured again without them. */
#define WARM_ROUNDS (NET_SHM_SLOTS * NET_SHM_SLOT_BYTES / PROBE_BYTES)

enum { KEEP_DEFAULT = 0, CALIBRATE = 1 };

/* One message of the timing, to or from peer, waited for under the communicator's deadline. */
static tern_status transfer(tern_comm *c, int peer, bool is_send, char *buf, uint64_t bytes,
                            uint32_t seq) {
  net_xfer x = {.hdr = {.kind = NET_KIND_CALIBRATE, .dtype = TERN_U8, .seq = seq,
                        .count = bytes, .bytes = bytes},
                .peer = peer, .is_send = is_send};
  if (is_send) x.src = buf;
  else x.dst = buf;
  tern_status rc = comm_post(c, &x);
  return rc == TERN_OK ? comm_wait_all(c, &x, 1) : rc;
}

/* The lowest rank's side: one round trip of PROBE_BYTES to the peer and its 8-byte reply, in
 * the mode the channel's cma_floor sets; its time in nanoseconds. */
static tern_status round_trip(tern_comm *c, int peer, char *buf, uint32_t seq, uint64_t *ns) {
  uint64_t t0 = core_now_ns();
  tern_status rc = transfer(c, peer, true, buf, PROBE_BYTES, seq);
  if (rc == TERN_OK) rc = transfer(c, peer, false, buf, 8, seq);
  *ns = core_now_ns() - t0;
  return rc;
}

/* Times the rings against single copy to the peer; *use_cma: single copy was faster. */
static tern_status measure(tern_comm *c, int peer, char *buf, bool *use_cma) {
  net_shm_chan *ch = &c->peers[peer].shm;
  uint64_t floor = ch->cma_floor, best[2] = {UINT64_MAX, UINT64_MAX}, ns;
  tern_status rc = TERN_OK;
  for (uint32_t i = 0; i < WARM_ROUNDS + 2 * ROUNDS && rc == TERN_OK; i++) {
    int cma = i < WARM_ROUNDS ? 0 : i % 2; /* interleaved, so that drift hits both alike */
    ch->cma_floor = cma ? 0 : UINT64_MAX;
    rc = round_trip(c, peer, buf, i, &ns);
    if (rc == TERN_OK && i >= WARM_ROUNDS && ns < best[cma]) best[cma] = ns;
  }
  ch->cma_floor = floor;
  *use_cma = best[1] < best[0];
  CORE_INFO("shared memory on this host: %s (a %u KiB message and its reply: through the rings "
            "%.1f us, single copy %.1f us)",
            *use_cma ? "single copy kept" : "single copy off", PROBE_BYTES >> 10, best[0] / 1e3,
            best[1] / 1e3);
  return rc;
}

/* The second rank's side: receives and answers what measure() sends, sharing off (the lowest
 * rank times single copy as an allgather meets it, one side copying). */
static tern_status answer(tern_comm *c, int peer, char *buf) {
  net_shm_chan *ch = &c->peers[peer].shm;
  bool share = ch->share;
  ch->share = false;
  tern_status rc = TERN_OK;
  for (uint32_t i = 0; i < WARM_ROUNDS + 2 * ROUNDS && rc == TERN_OK; i++) {
    rc = transfer(c, peer, false, buf, PROBE_BYTES, i);
    if (rc == TERN_OK) rc = transfer(c, peer, true, buf, 8, i);
  }
  ch->share = share;
  return rc;
}

/* Single copy off for every peer on this host. */
static void cma_off(tern_comm *c) {
  for (int r = 0; r < c->size; r++)
    if (c->peers[r].link == COMM_LINK_SHM) c->peers[r].shm.cma_floor = UINT64_MAX;
}

tern_status comm_calibrate_shm(tern_comm *c, const char *gen, uint64_t deadline) {
  int lowest = -1, second = -1; /* this host's two lowest ranks */
  for (int r = 0; r < c->size && second < 0; r++) {
    if (r != c->rank && c->peers[r].link != COMM_LINK_SHM) continue;
    if (lowest < 0) lowest = r;
    else second = r;
  }
  if (second < 0) return TERN_OK; /* alone on the host */
  char key[64], verdict = 'd'; /* 'd': defaults, 'c': single copy kept, 'r': rings only */
  snprintf(key, sizeof key, "%s/shm-cma/%d", gen, lowest);
  char *buf = calloc(1, PROBE_BYTES);
  if (buf == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory to time single copy");
  uint64_t plan = KEEP_DEFAULT;
  tern_status rc = TERN_OK;
  if (c->rank == lowest) {
    bool asked = core_config_get()->shm_cma < 0 && c->peers[second].shm.cma;
    plan = asked ? CALIBRATE : KEEP_DEFAULT;
    rc = transfer(c, second, true, (char *)&plan, sizeof plan, UINT32_MAX);
    bool use_cma = true;
    if (rc == TERN_OK && plan == CALIBRATE) rc = measure(c, second, buf, &use_cma);
    if (plan == CALIBRATE) verdict = use_cma ? 'c' : 'r';
    if (rc == TERN_OK) rc = store_set(c->store, key, &verdict, 1, &c->err);
  } else {
    if (c->rank == second) {
      rc = transfer(c, lowest, false, (char *)&plan, sizeof plan, UINT32_MAX);
      if (rc == TERN_OK && plan == CALIBRATE) rc = answer(c, lowest, buf);
    }
    void *val = NULL;
    size_t len = 0;
    if (rc == TERN_OK) rc = store_get(c->store, key, &val, &len, deadline, &c->err);
    if (rc == TERN_OK && len == 1) verdict = *(char *)val;
    free(val);
  }
  free(buf);
  if (rc == TERN_OK && verdict == 'r') cma_off(c);
  if (rc == TERN_OK && verdict != 'd' && c->rank != lowest)
    CORE_DEBUG("single copy %s for this host's peers, as rank %d timed it",
               verdict == 'c' ? "kept" : "off", lowest);
  return rc;
}

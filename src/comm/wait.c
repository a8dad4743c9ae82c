/* wait.c: how a rank waits for its peers without burning the CPU they need.
 *
 * A wait escalates: for the first SPIN_NS without progress it only spins (a peer on another core
 * usually answers within a microsecond or two); then it yields the CPU between looks (on an
 * oversubscribed host the rank it waits for may need this very core, so spinning starts out as
 * yielding there); after that it sleeps: in poll() on the TCP sockets it waits for, or on its
 * shared-memory doorbell (a futex that senders ring, see net/shm.c), in slices of at most
 * SLICE_MS.
 *
 * How long it yields before sleeping: a sleeper costs the wait its wake-up, and on a virtual
 * machine waking an idle vCPU is slow (tens of microseconds against a few on bare metal:
 * docs/perf/shm.md, "Yielding before sleeping"). A rank that has its own CPU therefore yields for
 * up to YIELD_OWN_CPU_NS, which bounds the wake-up's share of a longer wait to about 2%. On an
 * oversubscribed host it sleeps after YIELD_CROWDED_NS:
 * there a yielding rank would keep taking turns from the ranks that have work.
 *
 * Every slice, and every CHECK_NS while spinning, it checks what could end the wait for good:
 * tern_comm_abort (the abort eventfd, also in every poll set), a notice from the store that a
 * rank was lost, the exit of a shared-memory peer it waits for (a pidfd), a peer segment marked
 * aborted or closed, and the deadline: TERN_TIMEOUT seconds without progress.
 *
 * BASELINES.md (shared/peers) shows what happens to libraries that only spin when 4 ranks share
 * 2 cores: MPICH's 8-byte allreduce goes from 0.5 us to 4.4 ms, one scheduler tick per step.
 */
#include "comm/comm.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#define SPIN_NS 5000ull
#define YIELD_CROWDED_NS 50000ull
#define YIELD_OWN_CPU_NS 2000000ull
#define CHECK_NS 2000000ull
#define SLICE_MS 20
#define MAX_POLL 256
#define ALIVE_CHECK_NS 10000000ull
/* How long a lost connection waits for the store to name the cause: the store waits 250 ms for
 * `tern run` to say how a rank died, plus the way to each rank (about 100 ms across the WAN
 * harness's links). The wait ends as soon as the notice comes. */
#define CAUSE_WAIT_MS 600

void comm_idle_reset(comm_idle_state *st) {
  st->idle_since_ns = 0;
  st->last_check_ns = 0;
  st->looks = 0;
  st->spinning = false;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void describe(const tern_comm *c, const net_xfer *w, char *out, size_t len) {
  if (w == NULL) {
    snprintf(out, len, "its peers");
    return;
  }
  if (w->peer < 0) {
    snprintf(out, len, "any rank to send %llu bytes (a receive from any source)",
             (unsigned long long)w->hdr.bytes);
    return;
  }
  snprintf(out, len, "%s to %s %llu bytes in %s #%u", c->peers[w->peer].what,
           w->is_send ? "take" : "send", (unsigned long long)w->hdr.bytes,
           net_kind_name(w->hdr.kind), w->hdr.seq);
}

/* What could end the wait for good, checked every slice. */
static tern_status check_world(tern_comm *c, const net_xfer *waiting) {
  tern_status rc = comm_check_usable(c);
  if (rc != TERN_OK) return rc;
  int lost = -1;
  if (c->store != NULL && (rc = store_check(c->store, &lost, &c->err)) != TERN_OK)
    return comm_break(c, rc);
  for (int i = 0; i < c->nactive; i++) {
    comm_peer *p = &c->peers[c->active[i]];
    if (p->link != COMM_LINK_SHM) continue;
    uint32_t state = atomic_load(net_shm_seg_state(p->seg));
    bool gave_up = state == NET_SHM_ABORTED, closed = state == NET_SHM_CLOSED;
    struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
    bool exited = !gave_up && !closed && p->pidfd >= 0 && poll(&pf, 1, 0) == 1;
    if (!gave_up && !closed && !exited) continue;
    /* A peer that finished its part and then left, or broke in a later operation, may have
     * sent us all we wait for first: what it wrote is in our own segment. Take it before
     * calling the peer lost; a peer that died mid-way moves nothing, and the next look names
     * it. */
    bool moved = false;
    if ((rc = comm_progress(c, &moved)) != TERN_OK || moved) return rc;
    if (gave_up) {
      core_err_set(&c->err, TERN_ERR_PEER_LOST,
                   "%s gave up on the communicator (it failed or was aborted)", p->what);
      comm_explain_loss(c);
      return comm_break(c, TERN_ERR_PEER_LOST);
    }
    char what[256];
    describe(c, waiting, what, sizeof what);
    core_err_set(&c->err, TERN_ERR_PEER_LOST, "%s (pid %d) %s while waiting for %s", p->what,
                 p->pid, closed ? "closed the communicator" : "exited", what);
    return comm_break(c, TERN_ERR_PEER_LOST);
  }
  return TERN_OK;
}

/* Sleeps until a socket we wait on is ready, the doorbell rings, or a slice passes. */
static void sleep_slice(tern_comm *c, int slice_ms) {
  struct pollfd fds[MAX_POLL];
  int n = 0;
  bool shm = false;
  fds[n++] = (struct pollfd){.fd = c->abort_fd, .events = POLLIN};
  if (c->store) fds[n++] = (struct pollfd){.fd = store_fd(c->store), .events = POLLIN};
  for (int i = 0; i < c->nactive && n < MAX_POLL; i++) {
    comm_peer *p = &c->peers[c->active[i]];
    if (p->link == COMM_LINK_TCP)
      n += net_tcp_pollfds(&p->tcp, fds + n, MAX_POLL - n);
    else
      shm = true;
  }
  /* a receive from any source waits for every peer: a message starts on a TCP peer's first
   * stream, and a shared-memory sender rings our doorbell */
  for (int q = 0; c->any_source && q < c->size && n < MAX_POLL; q++) {
    comm_peer *p = &c->peers[q];
    if (p->link == COMM_LINK_TCP)
      fds[n++] = (struct pollfd){.fd = net_tcp_first_fd(&p->tcp), .events = POLLIN};
    else if (p->link == COMM_LINK_SHM)
      shm = true;
  }
  bool tcp = n > (c->store ? 2 : 1);
  if (shm && !tcp) {
    uint32_t seen = net_shm_sleep_begin(c->seg);
    bool moved = false;
    int sender = -1;
    /* one more look after announcing the sleep: a sender that rang before we announced it saw
     * no sleeper and did not wake us */
    if (comm_progress(c, &moved) != TERN_OK || moved ||
        (c->any_source && (comm_peek_p2p(c, &sender) != TERN_OK || sender >= 0))) {
      net_shm_sleep_cancel(c->seg);
      return;
    }
    net_shm_sleep(c->seg, seen, slice_ms);
    return;
  }
  /* TCP (and, if some peers are on shared memory too, short slices so that they are looked at) */
  poll(fds, (nfds_t)n, shm ? 1 : slice_ms);
}

/* Called once per operation. The clock is read on every 16th call only: at 20-30 ns a read here
 * it was a tenth of an 8-byte allreduce. An operation that waits reads it anyway (comm_idle),
 * so only a run of 16 operations that never wait can go 16 operations without a look. */
tern_status comm_check_alive(tern_comm *c) {
  if (c->alive_calls++ & 15) return comm_check_usable(c);
  uint64_t now = core_now_ns();
  if (now - c->alive_checked_ns < ALIVE_CHECK_NS) return comm_check_usable(c);
  c->alive_checked_ns = now;
  return check_world(c, NULL);
}

void comm_explain_loss(tern_comm *c) {
  if (c->store == NULL) return;
  struct pollfd pf = {.fd = store_fd(c->store), .events = POLLIN};
  poll(&pf, 1, CAUSE_WAIT_MS);
  core_err cause = {0};
  int lost = -1;
  if (store_check(c->store, &lost, &cause) == TERN_OK || cause.msg[0] == '\0') return;
  size_t len = strlen(c->err.msg);
  snprintf(c->err.msg + len, sizeof c->err.msg - len, " (the store reports: %s)", cause.msg);
}

/* Looks while spinning between two reads of the clock: a look (a pass over the slots and a pause)
 * takes about 40 ns here and a clock read 20-30 ns, so reading it on every look made the spin
 * mostly clock; every 8th keeps the spin's length within a third of a microsecond. */
#define LOOKS_PER_CLOCK 8

tern_status comm_idle(tern_comm *c, comm_idle_state *st, const net_xfer *waiting) {
  if (st->spinning && ++st->looks < LOOKS_PER_CLOCK) {
    cpu_relax(); /* still spinning: the clock said so at most LOOKS_PER_CLOCK looks ago */
    return TERN_OK;
  }
  st->looks = 0;
  uint64_t now = core_now_ns();
  if (st->idle_since_ns == 0) {
    st->idle_since_ns = now;
    st->last_check_ns = now;
  }
  uint64_t idle = now - st->idle_since_ns;
  uint64_t spin_ns = c->oversubscribed ? 0 : SPIN_NS;
  st->spinning = idle < spin_ns;
  if (st->spinning) {
    /* One pause per look: a pause was 30 ns on the AMD EPYC this was measured on (and about as
     * long on recent Xeons), so the 32 there were before put about 1 us between looks and added
     * half of that to every wait; the clock is read once per LOOKS_PER_CLOCK looks for the same
     * reason. */
    cpu_relax();
    if (now - st->last_check_ns >= CHECK_NS) {
      st->last_check_ns = now;
      return check_world(c, waiting);
    }
    return TERN_OK;
  }
  if (idle < (c->oversubscribed ? YIELD_CROWDED_NS : YIELD_OWN_CPU_NS)) {
    sched_yield();
  } else {
    uint64_t timeout_ns = (uint64_t)(c->timeout_s * 1e9);
    if (idle >= timeout_ns) {
      char what[256];
      describe(c, waiting, what, sizeof what);
      core_err_set(&c->err, TERN_ERR_TIMEOUT, "timed out after %.1f s waiting for %s", c->timeout_s,
                   what);
      return comm_break(c, TERN_ERR_TIMEOUT);
    }
    uint64_t left_ms = (timeout_ns - idle) / 1000000 + 1;
    sleep_slice(c, (int)CORE_MIN((uint64_t)SLICE_MS, left_ms));
    st->last_check_ns = 0; /* check after every sleep */
  }
  now = core_now_ns();
  if (st->last_check_ns == 0 || now - st->last_check_ns >= CHECK_NS) {
    st->last_check_ns = now;
    return check_world(c, waiting);
  }
  return TERN_OK;
}

tern_status comm_wait_all(tern_comm *c, net_xfer *xs, size_t n) {
  comm_idle_state idle;
  comm_idle_reset(&idle);
  size_t first = 0; /* transfers before it are known complete */
  for (;;) {
    /* looked at first: shared-memory transfers often complete as they are posted */
    while (first < n && xs[first].complete)
      first++;
    if (first == n) return TERN_OK;
    bool moved = false;
    tern_status rc = comm_progress(c, &moved);
    if (rc != TERN_OK) return rc;
    if (moved) {
      comm_idle_reset(&idle);
      continue;
    }
    if ((rc = comm_idle(c, &idle, &xs[first])) != TERN_OK) return rc;
  }
}

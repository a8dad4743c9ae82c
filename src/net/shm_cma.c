/* shm_cma.c: single copy over shared memory, one-sided and shared (see shm_cma.h).
 *
 * Every copy here crosses into the peer's memory, which is only promised while the peer is
 * healthy. The sender's buffer: a sender that gives up on the communicator (a peer of its died)
 * marks its segment aborted and returns, and its caller may free or reuse the buffer while we
 * read; so the peer's state is looked at after every read, and once it says aborted what was
 * read may be anything and the peer is lost. The receiver's buffer, which a sharing sender
 * writes: a receiver that gives up revokes the offer and waits for the chunk in flight
 * (shm_cma_share_revoke) before its caller gets the buffer back.
 */
#include "net/shm_cma.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

#define SHARE_CLOSED (1ull << 62)
#define REVOKE_WAIT_NS 100000000ull /* a chunk takes tens of microseconds to write */

static tern_status read_failed(net_shm_chan *ch, int why, size_t n, core_err *err) {
  if (why == ESRCH)
    return core_err_set(err, TERN_ERR_PEER_LOST, "%s exited while this rank read from it",
                        ch->what);
  if (why == EFAULT)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s described %zu bytes at an address it does not have mapped", ch->what,
                        n);
  return core_err_errno(err, why ? why : EIO, "reading %zu bytes from %s", n, ch->what);
}

/* A reducing receive goes through a cache-sized bounce buffer, so the extra copy stays in
 * cache. */
tern_status shm_cma_read(net_shm_chan *ch, net_xfer *x, uint64_t addr, uint64_t at, uint64_t end,
                         core_err *err) {
  size_t esize = tern_dtype_size((tern_dtype)x->hdr.dtype);
  size_t chunk = x->reduce ? NET_BOUNCE_BYTES : (size_t)(end - at);
  if (x->reduce && ch->bounce == NULL && (ch->bounce = malloc(NET_BOUNCE_BYTES)) == NULL)
    return core_err_set(err, TERN_ERR_NOMEM, "no memory for a receive buffer (%s)", ch->what);
  while (at < end) {
    size_t n = (size_t)CORE_MIN(chunk, end - at);
    struct iovec local = {x->reduce ? ch->bounce : x->dst + at, n};
    struct iovec remote = {(void *)(uintptr_t)(addr + at), n};
    ssize_t got = process_vm_readv(ch->pid, &local, 1, &remote, 1, 0);
    int why = got < 0 ? errno : 0;
    if (atomic_load(ch->peer_state) == NET_SHM_ABORTED)
      return core_err_set(err, TERN_ERR_PEER_LOST,
                          "%s gave up on the communicator while this rank read from it", ch->what);
    if (got <= 0) {
      if (why == EINTR) continue;
      return read_failed(ch, why, n, err);
    }
    if (x->reduce) {
      size_t whole = (size_t)got / esize * esize;
      if (whole == 0) continue;
      core_reduce((tern_dtype)x->hdr.dtype, (tern_op)x->hdr.op, x->dst + at, x->src + at,
                  ch->bounce, whole / esize);
      got = (ssize_t)whole;
    }
    at += (uint64_t)got;
  }
  return TERN_OK;
}

bool shm_cma_shares(const net_shm_chan *ch, const net_xfer *x, uint64_t seq) {
  if (ch->share_seq == seq) return true; /* offered already */
  return ch->share && !x->reduce && x->hdr.bytes >= NET_SHARE_MIN && ch->sendq.len == 0;
}

/* A message is split in SHARE_PARTS chunks (from SHARE_CHUNK_MIN to NET_SHARE_CHUNK bytes), so
 * that from NET_SHARE_MIN on both sides get one. Smaller chunks cost a call each; larger ones
 * leave one side idle at the end (docs/perf/shm.md, "Shared copy"). */
#define SHARE_PARTS 2
#define SHARE_CHUNK_MIN (16u << 10)

static uint64_t chunk_bytes(const net_xfer *x) {
  uint64_t c = (x->hdr.bytes / SHARE_PARTS + 4095) & ~(uint64_t)4095;
  return CORE_MAX((uint64_t)SHARE_CHUNK_MIN, CORE_MIN(c, (uint64_t)NET_SHARE_CHUNK));
}

static uint64_t chunks_of(const net_xfer *x) {
  return (x->hdr.bytes + chunk_bytes(x) - 1) / chunk_bytes(x);
}

/* Chunk k's bytes: [*at, *end). */
static void chunk_span(const net_xfer *x, uint64_t k, uint64_t *at, uint64_t *end) {
  *at = k * chunk_bytes(x);
  *end = CORE_MIN(*at + chunk_bytes(x), x->hdr.bytes);
}

/* The next chunk nobody has claimed, or false once all are. The counter is read before it is
 * bumped: once it is past the end, neither side keeps writing its line. */
static bool claim(shm_share *s, uint64_t nchunks, uint64_t *k) {
  if (atomic_load_explicit(&s->next, memory_order_relaxed) >= nchunks) return false;
  *k = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
  return *k < nchunks;
}

/* The chunks the sender has claimed and not yet finished (written or given back), of claimed
 * in all; below zero when the sender reports more than it can have claimed. */
static int64_t sender_in_flight(const net_shm_chan *ch, const shm_share *s, uint64_t claimed,
                                uint64_t nchunks) {
  uint64_t by_sender = CORE_MIN(claimed, nchunks) - ch->share_claimed;
  uint64_t finished = atomic_load_explicit(&s->sender_done, memory_order_acquire) +
                      (atomic_load_explicit(&s->given_back, memory_order_acquire) != 0);
  return (int64_t)(by_sender - finished);
}

tern_status shm_cma_share_read(net_shm_chan *ch, net_xfer *x, shm_share *s, uint64_t seq,
                               uint64_t addr, bool *finished, bool *moved, core_err *err) {
  uint64_t nchunks = chunks_of(x), k, at, end;
  *finished = false;
  if (ch->share_seq != seq) {
    s->dst = (uint64_t)(uintptr_t)x->dst;
    atomic_store_explicit(&s->next, 0, memory_order_relaxed);
    atomic_store_explicit(&s->sender_done, 0, memory_order_relaxed);
    atomic_store_explicit(&s->given_back, 0, memory_order_relaxed);
    atomic_store_explicit(&s->offer, seq, memory_order_release);
    net_shm_ring_bell(ch->peer_bell, ch->peer_sleeping); /* the sender may be asleep */
    ch->share_seq = seq;
    ch->share_claimed = 0;
    ch->share_took_back = false;
  }
  while (claim(s, nchunks, &k)) {
    ch->share_claimed++;
    chunk_span(x, k, &at, &end);
    tern_status rc = shm_cma_read(ch, x, addr, at, end, err);
    if (rc != TERN_OK) return rc;
    *moved = true;
  }
  /* in flight first: a chunk given back after this look is taken on the next call */
  int64_t in_flight = sender_in_flight(ch, s, nchunks, nchunks);
  if (in_flight < 0)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s reported more chunks of a shared copy done than it took (%lld over)",
                        ch->what, (long long)-in_flight);
  uint64_t given_back = atomic_load_explicit(&s->given_back, memory_order_acquire);
  if (given_back && !ch->share_took_back) {
    chunk_span(x, given_back - 1, &at, &end);
    tern_status rc = shm_cma_read(ch, x, addr, at, end, err);
    if (rc != TERN_OK) return rc;
    ch->share_took_back = true;
    *moved = true;
  }
  if (in_flight == 0) {
    ch->share_seq = 0;
    *finished = true;
  }
  return TERN_OK;
}

void shm_cma_share_write(net_shm_chan *ch, const net_xfer *x, shm_share *s, uint64_t seq,
                         bool *moved) {
  if (ch->share_failed || atomic_load_explicit(&s->offer, memory_order_acquire) != seq) return;
  char *dst = (char *)(uintptr_t)s->dst;
  uint64_t nchunks = chunks_of(x), k, at, end;
  while (claim(s, nchunks, &k)) {
    chunk_span(x, k, &at, &end);
    struct iovec local = {(char *)x->src + at, (size_t)(end - at)};
    struct iovec remote = {dst + at, (size_t)(end - at)};
    if (process_vm_writev(ch->pid, &local, 1, &remote, 1, 0) != (ssize_t)(end - at)) {
      /* the receiver reads it itself; a partial write is rewritten whole, with the same bytes */
      atomic_store_explicit(&s->given_back, k + 1, memory_order_release);
      ch->share_failed = true;
    } else {
      atomic_fetch_add_explicit(&s->sender_done, 1, memory_order_release);
    }
    net_shm_ring_bell(ch->peer_bell, ch->peer_sleeping);
    *moved = true;
    if (ch->share_failed) return;
  }
}

void shm_cma_share_revoke(net_shm_chan *ch, net_xfer *x, shm_share *s) {
  uint64_t nchunks = chunks_of(x);
  uint64_t claimed = atomic_exchange_explicit(&s->next, SHARE_CLOSED, memory_order_acq_rel);
  uint64_t deadline = core_now_ns() + REVOKE_WAIT_NS;
  while (sender_in_flight(ch, s, claimed, nchunks) > 0) {
    if (kill(ch->pid, 0) != 0 && errno == ESRCH) break;
    if (core_now_ns() > deadline) {
      CORE_WARN("%s may still be writing into a receive buffer of this rank", ch->what);
      break;
    }
    nanosleep(&(struct timespec){0, 20000}, NULL);
  }
  ch->share_seq = 0;
}

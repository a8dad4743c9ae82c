/* ring.c: the ring, bandwidth-optimal: every rank talks only to its two neighbours.
 *
 *  - reduce-scatter: the vector is cut into n blocks; in step k (0 <= k < n-1) rank r sends
 *    block r-k-1 and receives block r-k-2, which it reduces with its own; after n-1 steps it
 *    holds block r reduced over all ranks. The partial block in flight lives in TMP, two slots
 *    used in turn (the one received in step k is sent in step k+1), so the result never
 *    touches more than the output block.
 *  - allgather: in step k rank r sends block r-k and receives block r-k-1.
 *  - allreduce: reduce-scatter then allgather (Patarasuk and Yuan 2009), each element reduced
 *    at one rank and copied to the others, so every rank ends with identical bits. Two ranks
 *    over shared memory with a large vector run the two in pieces, one behind the other.
 *  - broadcast and reduce: a chain through the ranks from the root (reduce: towards it),
 *    pipelined in segments (coll_pipeline_seg): rank v passes segment t-1 on while it receives
 *    segment t, as NCCL's ring broadcast does.
 *  - barrier: n-1 rounds of an empty message to the next rank.
 */
#include "coll/algo/algo.h"

/* Ring reduce-scatter of the total elements at in, in n blocks: block r, reduced, lands at
 * out[out_off]. */
void coll_ring_rs(coll_sched *s, const coll_args *a, coll_buf in, size_t total, coll_buf out,
                  size_t out_off) {
  int n = a->size, r = a->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  size_t slot = coll_block_len(total, n, 0);
  if (n > 2) coll_need_tmp(s, 2 * slot);
  for (int k = 0; k < n - 1; k++) {
    int bs = coll_mod(r - k - 1, n), br = coll_mod(r - k - 2, n);
    if (k == 0)
      coll_data_send(s, next, in, coll_block_off(total, n, bs), coll_block_len(total, n, bs));
    else
      coll_data_send(s, next, COLL_BUF_TMP, ((k - 1) % 2) * slot, coll_block_len(total, n, bs));
    coll_buf to = k == n - 2 ? out : COLL_BUF_TMP;
    size_t to_off = k == n - 2 ? out_off : (k % 2) * slot;
    coll_data_recv_reduce(s, prev, to, to_off, in, coll_block_off(total, n, br),
                          coll_block_len(total, n, br));
    coll_sched_end_phase(s);
  }
}

/* Ring allgather of the total elements of buf in n blocks, rank r's own block being read at
 * first[first_off] in the first step. */
void coll_ring_ag(coll_sched *s, const coll_args *a, coll_buf buf, size_t total, coll_buf first,
                  size_t first_off) {
  int n = a->size, r = a->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int k = 0; k < n - 1; k++) {
    int bs = coll_mod(r - k, n), br = coll_mod(r - k - 1, n);
    if (k == 0)
      coll_data_send(s, next, first, first_off, coll_block_len(total, n, bs));
    else
      coll_data_send(s, next, buf, coll_block_off(total, n, bs), coll_block_len(total, n, bs));
    coll_data_recv(s, prev, buf, coll_block_off(total, n, br), coll_block_len(total, n, br));
    coll_sched_end_phase(s);
  }
}

/* Piece t of a block of len elements: its length, 0 past the end. */
static size_t piece_len(size_t len, size_t piece, size_t t) {
  size_t at = t * piece;
  return at < len ? CORE_MIN(piece, len - at) : 0;
}

/* Two ranks over shared memory, a large vector: the allreduce in pieces. The ring's two phases
 * each run over a whole half, so once the half outgrows the cache a rank reads its reduced half
 * back from memory to send it. Here phase t reduces piece t of this rank's half while piece t-1,
 * reduced a phase before and still in cache, goes back to the peer: a fifth faster from 4 MiB,
 * a little slower at 1 and 2 MiB (docs/perf/shm.md). Over TCP the pieces would cut each message
 * below what is striped over the streams (net/tcp.c), so they are kept to shared memory. */
static void pair_allreduce_in_pieces(coll_sched *s, const coll_args *a, size_t piece) {
  int peer = 1 - a->rank;
  size_t c = a->count;
  size_t mine = coll_block_off(c, 2, a->rank), my_len = coll_block_len(c, 2, a->rank);
  size_t its = coll_block_off(c, 2, peer), its_len = coll_block_len(c, 2, peer);
  size_t npieces = (CORE_MAX(my_len, its_len) + piece - 1) / piece;
  for (size_t t = 0; t <= npieces; t++) {
    if (t < npieces) {
      coll_data_send(s, peer, COLL_BUF_SEND, its + t * piece, piece_len(its_len, piece, t));
      coll_data_recv_reduce(s, peer, COLL_BUF_RECV, mine + t * piece, COLL_BUF_SEND,
                            mine + t * piece, piece_len(my_len, piece, t));
    }
    if (t > 0) {
      coll_data_send(s, peer, COLL_BUF_RECV, mine + (t - 1) * piece,
                     piece_len(my_len, piece, t - 1));
      coll_data_recv(s, peer, COLL_BUF_RECV, its + (t - 1) * piece,
                     piece_len(its_len, piece, t - 1));
    }
    coll_sched_end_phase(s);
  }
}

void coll_ring_allreduce(coll_sched *s, const coll_args *a) {
  if (a->size == 2 && a->shared_memory && a->count >= COLL_PAIR_PIECES_FROM) {
    pair_allreduce_in_pieces(s, a, a->seg_count ? a->seg_count : COLL_PAIR_PIECE);
    return;
  }
  size_t mine = coll_block_off(a->count, a->size, a->rank);
  coll_ring_rs(s, a, COLL_BUF_SEND, a->count, COLL_BUF_RECV, mine);
  coll_ring_ag(s, a, COLL_BUF_RECV, a->count, COLL_BUF_RECV, mine);
}

void coll_ring_reduce_scatter(coll_sched *s, const coll_args *a) {
  coll_ring_rs(s, a, COLL_BUF_SEND, (size_t)a->size * a->count, COLL_BUF_RECV, 0);
}

void coll_ring_allgather(coll_sched *s, const coll_args *a) {
  size_t c = a->count, mine = (size_t)a->rank * c;
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, mine, COLL_BUF_SEND, 0, c);
  coll_ring_ag(s, a, COLL_BUF_RECV, (size_t)a->size * c, a->inplace ? COLL_BUF_RECV : COLL_BUF_SEND,
               a->inplace ? mine : 0);
}

/* The chain's segments: count and seg, segment t being [t seg, min((t+1) seg, count)). */
static size_t seg_len(size_t count, size_t seg, size_t t) {
  size_t off = t * seg;
  return count - off < seg ? count - off : seg;
}

void coll_ring_broadcast(coll_sched *s, const coll_args *a) {
  int n = a->size, v = coll_mod(a->rank - a->root, n);
  int next = (a->rank + 1) % n, prev = (a->rank + n - 1) % n;
  size_t c = a->count, seg = coll_pipeline_seg(c, n, a->seg_count), nseg = (c + seg - 1) / seg;
  if (v == 0) {
    if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, c);
    for (size_t t = 0; t < nseg; t++) {
      coll_data_send(s, next, COLL_BUF_SEND, t * seg, seg_len(c, seg, t));
      coll_sched_end_phase(s);
    }
    return;
  }
  for (size_t t = 0; t <= nseg; t++) {
    if (t < nseg) coll_data_recv(s, prev, COLL_BUF_RECV, t * seg, seg_len(c, seg, t));
    if (t > 0 && v < n - 1)
      coll_data_send(s, next, COLL_BUF_RECV, (t - 1) * seg, seg_len(c, seg, t - 1));
    coll_sched_end_phase(s);
  }
}

/* The chain runs from relative rank n-1 down to the root; a rank in between reduces segment t
 * into TMP slot t % 2 while it passes segment t-1 on from the other slot. */
void coll_ring_reduce(coll_sched *s, const coll_args *a) {
  int n = a->size, v = coll_mod(a->rank - a->root, n);
  int down = (a->rank + n - 1) % n, up = (a->rank + 1) % n;
  size_t c = a->count, seg = coll_pipeline_seg(c, n, a->seg_count), nseg = (c + seg - 1) / seg;
  if (v == n - 1) {
    for (size_t t = 0; t < nseg; t++) {
      coll_data_send(s, down, COLL_BUF_SEND, t * seg, seg_len(c, seg, t));
      coll_sched_end_phase(s);
    }
    return;
  }
  if (v == 0) {
    for (size_t t = 0; t < nseg; t++) {
      coll_data_recv_reduce(s, up, COLL_BUF_RECV, t * seg, COLL_BUF_SEND, t * seg,
                            seg_len(c, seg, t));
      coll_sched_end_phase(s);
    }
    return;
  }
  coll_need_tmp(s, nseg > 1 ? 2 * seg : seg);
  for (size_t t = 0; t <= nseg; t++) {
    if (t < nseg)
      coll_data_recv_reduce(s, up, COLL_BUF_TMP, (t % 2) * seg, COLL_BUF_SEND, t * seg,
                            seg_len(c, seg, t));
    if (t > 0) coll_data_send(s, down, COLL_BUF_TMP, ((t - 1) % 2) * seg, seg_len(c, seg, t - 1));
    coll_sched_end_phase(s);
  }
}

void coll_ring_barrier(coll_sched *s, const coll_args *a) {
  int n = a->size;
  for (int k = 0; k < n - 1; k++) {
    coll_sched_send(s, (a->rank + 1) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(s, (a->rank + n - 1) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
}

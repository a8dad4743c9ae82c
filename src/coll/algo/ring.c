/* ring.c: the ring, bandwidth-optimal: every rank talks only to its two neighbours.
 *
 *  - reduce-scatter: the vector is cut into n blocks; in step k (0 <= k < n-1) rank r sends
 *    block r-k-1 and receives block r-k-2, which it reduces with its own; after n-1 steps it
 *    holds block r reduced over all ranks. The partial block in flight lives in TMP, two slots
 *    used in turn (the one received in step k is sent in step k+1), so the result never
 *    touches more than the output block.
 *  - allgather: in step k rank r sends block r-k and receives block r-k-1.
 *  - allreduce: reduce-scatter then allgather (Patarasuk and Yuan 2009), each element reduced
 *    at one rank and copied to the others, so every rank ends with identical bits. (Two ranks
 *    over shared memory with a large vector run the two halves in pieces instead: pair.c.)
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

static void allreduce(coll_sched *s, const coll_args *a) {
  size_t mine = coll_block_off(a->count, a->size, a->rank);
  coll_ring_rs(s, a, COLL_BUF_SEND, a->count, COLL_BUF_RECV, mine);
  coll_ring_ag(s, a, COLL_BUF_RECV, a->count, COLL_BUF_RECV, mine);
}

static void reduce_scatter(coll_sched *s, const coll_args *a) {
  coll_ring_rs(s, a, COLL_BUF_SEND, (size_t)a->size * a->count, COLL_BUF_RECV, 0);
}

static void allgather(coll_sched *s, const coll_args *a) {
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

static void broadcast(coll_sched *s, const coll_args *a) {
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
static void reduce(coll_sched *s, const coll_args *a) {
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

static void barrier(coll_sched *s, const coll_args *a) {
  int n = a->size;
  for (int k = 0; k < n - 1; k++) {
    coll_sched_send(s, (a->rank + 1) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(s, (a->rank + n - 1) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
}

/* ---- cost -------------------------------------------------------------------------------- */

/* The chain pipeline: (nseg + n - 2) rounds of one segment. On a crowded host its stages take
 * turns on the CPUs, and what that costs depends on the transport.
 *
 * Over TCP the stages do not overlap at all (each hand-off is a socket wake-up), so the chain
 * costs what it would unpipelined, n - 1 hops of the whole vector (handoff 0), and
 * halving-doubling wins from 1 MiB. Direct was faster still at 1 MiB and the slowest at 64 MiB,
 * which this model does not capture.
 *
 * Over shared memory a stage leaves its segment in the slots and yields, so the pipeline still
 * runs, at a cost per round: the handoff, fitted to n = 4 on 2 cores, which puts the crossover
 * with halving-doubling between 16 and 32 MiB as measured (docs/perf/select.md, "The crowded
 * chain"). */
static double chain(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double red = x->red;
  if (m->crowded && m->handoff == 0) return (x->n - 1) * coll_cost_phase(m, 1, x->B, red * x->B);
  size_t seg = coll_pipeline_seg(x->count, (int)x->n, 0), nseg = (x->count + seg - 1) / seg;
  double S = (double)(seg * x->elem_size);
  /* a rank in the middle passes one segment on while it receives the next */
  double round =
      x->n > 2 ? coll_cost_exchange(m, 1, S, red * S) : coll_cost_phase(m, 1, S, red * S);
  return ((double)nseg + x->n - 2) * (m->handoff + round);
}

static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B;
  switch (x->kind) {
  case COLL_ALLREDUCE: {
    size_t most = (x->count + (size_t)n - 1) / (size_t)n; /* the longest block */
    double blk = (double)(most * x->elem_size);
    return (n - 1) * (coll_cost_exchange(m, 1, blk, blk) + coll_cost_exchange(m, 1, blk, 0));
  }
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return (n - 1) * coll_cost_exchange(m, 1, B, x->red * B);
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return chain(x);
  case COLL_BARRIER:
    return (n - 1) * m->alpha;
  default:
    return HUGE_VAL;
  }
}

static coll_work work(const coll_shape *x) {
  double n = x->n, B = x->B;
  switch (x->kind) {
  case COLL_ALLREDUCE:
    return coll_work_of(2 * n * (n - 1), 2 * (n - 1) * B, (n - 1) * B);
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return coll_work_of(n * (n - 1), n * (n - 1) * B, x->red * n * (n - 1) * B);
  case COLL_BROADCAST:
  case COLL_REDUCE: { /* the chain: every hop carries every segment */
    size_t seg = coll_pipeline_seg(x->count, (int)n, 0);
    double nseg = (double)((x->count + seg - 1) / seg);
    return coll_work_of((n - 1) * nseg, (n - 1) * B, x->red * (n - 1) * B);
  }
  case COLL_BARRIER:
    return coll_work_of(n * (n - 1), 0, 0);
  default:
    return COLL_NO_WORK;
  }
}

/* Every step of the rings is an exchange; the chain has none (data flows one way). */
static double turns(const coll_shape *x) {
  if (x->rooted) return 0;
  return x->kind == COLL_ALLREDUCE ? 2 * (x->n - 1) : x->n - 1;
}

const coll_algo_desc coll_algo_ring = {
    .build = {[COLL_ALLREDUCE] = allreduce,
              [COLL_REDUCE_SCATTER] = reduce_scatter,
              [COLL_ALLGATHER] = allgather,
              [COLL_BROADCAST] = broadcast,
              [COLL_REDUCE] = reduce,
              [COLL_BARRIER] = barrier},
    .path = path,
    .work = work,
    .turns = turns,
};

/* algo.h: what the schedule builders share inside coll/: their prototypes (one file per
 * algorithm under algo/, dispatched by build.c) and the arithmetic several of them use: blocks
 * of a vector, binomial trees, the fold of a non-power-of-two group onto a power of two, the
 * segments of a pipeline.
 *
 * A builder appends rank a->rank's steps to an empty schedule and sets tmp_count; build.c has
 * already checked the arguments and handled count 0 and size 1, so a builder sees n >= 2 and
 * count >= 1 (barrier: count ignored). The append status is sticky (sched.c), so builders do
 * not check it.
 */
#ifndef TERN_COLL_ALGO_H
#define TERN_COLL_ALGO_H

#include "coll/sched.h"

typedef void coll_builder(coll_sched *s, const coll_args *a);

coll_builder coll_ring_allreduce, coll_ring_reduce_scatter, coll_ring_allgather,
    coll_ring_broadcast, coll_ring_reduce, coll_ring_barrier;
coll_builder coll_rhd_allreduce, coll_rhd_reduce_scatter, coll_rhd_allgather, coll_rhd_broadcast,
    coll_rhd_reduce;
coll_builder coll_rd_allreduce, coll_rd_barrier;
coll_builder coll_tree_allreduce, coll_tree_reduce_scatter, coll_tree_allgather,
    coll_tree_broadcast, coll_tree_reduce, coll_tree_barrier;
coll_builder coll_direct_allreduce, coll_direct_reduce_scatter, coll_direct_allgather,
    coll_direct_broadcast, coll_direct_reduce, coll_direct_alltoall, coll_direct_barrier;
coll_builder coll_bruck_allgather, coll_bruck_alltoall, coll_bruck_barrier;
/* How many of n slots have bit set: what one message of Bruck's alltoall packs (bruck.c), for
 * the cost model (select.c) and the host's work (work.c). */
static inline int coll_bruck_slots(int n, int bit) {
  return n / (2 * bit) * bit + CORE_MAX(0, n % (2 * bit) - bit);
}
coll_builder coll_pairwise_alltoall;
coll_builder coll_direct_gather;  /* gather_direct.c */
coll_builder coll_direct_scatter; /* scatter_direct.c */
coll_builder coll_hier_allreduce, coll_hier_reduce_scatter, coll_hier_allgather;

/* The ring's two halves over a vector of total elements in n uneven blocks (coll_block_*), for
 * hier's intra-host phases: reduce-scatter leaves block rank, reduced, at out[out_off];
 * allgather starts from rank's block at first[first_off] and fills buf. */
void coll_ring_rs(coll_sched *s, const coll_args *a, coll_buf in, size_t total, coll_buf out,
                  size_t out_off);
void coll_ring_ag(coll_sched *s, const coll_args *a, coll_buf buf, size_t total, coll_buf first,
                  size_t first_off);

/* Every rank sends SEND[q stride, +count) to each rank q and receives rank q's into RECV block
 * q, its own block copied (not in place): all in one phase (one_phase), or peer r+k in phase k.
 * stride count is alltoall's exchange, stride 0 allgather's. */
void coll_exchange(coll_sched *s, const coll_args *a, size_t stride, bool one_phase);

/* ---- messages of data collectives -------------------------------------------------------- */

/* Data builders leave zero-element messages out (both ends see the same empty block, so they
 * stay matched); only barriers send empty messages, through coll_sched_send itself. */
static inline void coll_data_send(coll_sched *s, int peer, coll_buf b, size_t off, size_t count) {
  if (count) coll_sched_send(s, peer, b, off, count);
}
static inline void coll_data_recv(coll_sched *s, int peer, coll_buf b, size_t off, size_t count) {
  if (count) coll_sched_recv(s, peer, b, off, count);
}
static inline void coll_data_recv_reduce(coll_sched *s, int peer, coll_buf b, size_t off,
                                         coll_buf src, size_t src_off, size_t count) {
  if (count) coll_sched_recv_reduce(s, peer, b, off, src, src_off, count);
}
static inline void coll_need_tmp(coll_sched *s, size_t count) {
  /* through a view, the builder's TMP is a region further on in the real one */
  if (s->view.on) {
    if (s->view.buf[COLL_BUF_TMP] != COLL_BUF_TMP) return;
    count += s->view.off[COLL_BUF_TMP];
  }
  if (count > s->tmp_count) s->tmp_count = count;
}

/* ---- blocks: total elements split into nb nearly equal parts, the first total % nb one longer */

static inline size_t coll_block_off(size_t total, int nb, int i) {
  size_t q = total / (size_t)nb, r = total % (size_t)nb, ui = (size_t)i;
  return ui * q + (ui < r ? ui : r);
}
static inline size_t coll_block_len(size_t total, int nb, int i) {
  return total / (size_t)nb + ((size_t)i < total % (size_t)nb);
}
/* i mod n for any int i. */
static inline int coll_mod(int i, int n) {
  int m = i % n;
  return m < 0 ? m + n : m;
}

/* ---- binomial trees over relative ranks (v = (rank - root) mod n) ------------------------ */

/* The lowest set bit of v; for the root (v = 0), the first power of two >= n. */
static inline int coll_lowbit(int v, int n) {
  if (v) return v & -v;
  int b = 1;
  while (b < n)
    b <<= 1;
  return b;
}
/* ceil(log2 n) for n >= 1. */
static inline int coll_log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n)
    l++;
  return l;
}

/* ---- the fold (Thakur, Rabenseifner and Gropp 2005, sec. 4) ------------------------------- *
 * With p the largest power of two <= n and rem = n - p, relative ranks 2i and 2i+1 (i < rem)
 * pair up: the even one takes part in the power-of-two algorithm as new rank i, the odd one
 * (its helper) only hands its data in before and takes the result after. Relative ranks from
 * 2 rem on take part as new rank v - rem. The even one is the participant so that the root of a
 * rooted collective (relative rank 0) always takes part. */
typedef struct coll_fold {
  int n, p, rem, root;
  int newrank; /* -1 on a helper */
  int partner; /* actual rank of the helper (participant) or participant (helper); -1: none */
} coll_fold;

void coll_fold_init(coll_fold *f, int rank, int n, int root);
/* The actual rank of new rank j. */
int coll_fold_actual(const coll_fold *f, int j);
/* The relative rank of new rank j's first member. */
static inline int coll_fold_rel(const coll_fold *f, int j) {
  return j < f->rem ? 2 * j : j + f->rem;
}

/* ---- pipelines --------------------------------------------------------------------------- */

/* The segment (in elements) of a chain pipeline of count elements over n ranks: seg_count when
 * the caller gave one, else count / nseg with nseg near the optimum of the chain's time
 * (nseg + n - 2)(alpha + beta count / nseg), nseg = sqrt((n - 2) count beta / alpha), taking
 * alpha / beta = 2048 elements: the geometric mean of the built-in shared-memory ratio (0.34
 * us x 12.45 GB/s = 4.2 KB) and TCP's (4.55 us x 3 GB/s = 13.7 KB) is 7.6 KB, about 2048 f32
 * elements (select.c's defaults). At most 256 segments, to keep schedules short. */
size_t coll_pipeline_seg(size_t count, int n, size_t seg_count);

#endif /* TERN_COLL_ALGO_H */

/* pairwise.c: alltoall by pairwise exchange (as MPICH's and Open MPI's "pairwise"): in phase k
 * (1 <= k < n) rank r sends its block for r+k and receives the block from r-k, so each phase
 * is a permutation and no rank is hit by two senders at once; n-1 rounds, each block sent
 * once. alltoallv the same, with counts per peer (coll_exchange_v). In place, the blocks to send
 * are staged in TMP first (stage_blocks). The same exchange in one phase is direct.c's alltoall and
 * allgather. */
#include "coll/algo/algo.h"

/* An in-place alltoall (SEND is RECV) would receive a block over one it has still to send, so
 * the blocks for the others go to TMP first, in a phase of their own; this rank's own block
 * stays where it is. */
static coll_buf stage_blocks(coll_sched *s, const coll_args *a) {
  size_t c = a->count, r = (size_t)a->rank, n = (size_t)a->size;
  coll_need_tmp(s, n * c);
  coll_sched_copy(s, COLL_BUF_TMP, 0, COLL_BUF_SEND, 0, r * c);
  coll_sched_copy(s, COLL_BUF_TMP, (r + 1) * c, COLL_BUF_SEND, (r + 1) * c, (n - r - 1) * c);
  coll_sched_end_phase(s);
  return COLL_BUF_TMP;
}

void coll_exchange(coll_sched *s, const coll_args *a, size_t stride, bool one_phase) {
  int n = a->size, r = a->rank;
  size_t c = a->count;
  coll_buf from_buf = COLL_BUF_SEND;
  if (a->inplace && stride) from_buf = stage_blocks(s, a);
  if (!a->inplace)
    coll_sched_copy(s, COLL_BUF_RECV, (size_t)r * c, COLL_BUF_SEND, (size_t)r * stride, c);
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r + n - k) % n;
    coll_data_send(s, to, from_buf, (size_t)to * stride, c);
    coll_data_recv(s, from, COLL_BUF_RECV, (size_t)from * c, c);
    if (!one_phase) coll_sched_end_phase(s);
  }
  coll_sched_end_phase(s);
}

static void alltoall(coll_sched *s, const coll_args *a) {
  coll_exchange(s, a, a->count, false);
}

/* alltoallv's blocks are where the counts put them, so in place the whole of SEND's extent is
 * staged in TMP, in a phase of its own, and sent from there. Every pair exchanges a message,
 * empty or not (sched.h says why), so n = 1 is the copy alone. */
void coll_exchange_v(coll_sched *s, const coll_args *a, bool one_phase) {
  int n = a->size, r = a->rank;
  coll_buf from_buf = COLL_BUF_SEND;
  if (a->inplace) {
    size_t extent = coll_v_extent(a, true);
    coll_need_tmp(s, extent);
    coll_sched_copy(s, COLL_BUF_TMP, 0, COLL_BUF_SEND, 0, extent);
    coll_sched_end_phase(s);
    from_buf = COLL_BUF_TMP;
  }
  size_t own_from = coll_v_displ(a, true, r), own_to = coll_v_displ(a, false, r);
  if (!a->inplace || own_from != own_to) /* in place at one spot, it is there already */
    coll_sched_copy(s, COLL_BUF_RECV, own_to, from_buf, own_from, coll_v_count(a, true, r));
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r + n - k) % n;
    coll_sched_send(s, to, from_buf, coll_v_displ(a, true, to), coll_v_count(a, true, to));
    coll_sched_recv(s, from, COLL_BUF_RECV, coll_v_displ(a, false, from),
                    coll_v_count(a, false, from));
    if (!one_phase) coll_sched_end_phase(s);
  }
  coll_sched_end_phase(s);
}

static void alltoallv(coll_sched *s, const coll_args *a) {
  coll_exchange_v(s, a, false);
}

/* ---- cost -------------------------------------------------------------------------------- */

static double path(const coll_shape *x) {
  return (x->n - 1) * coll_cost_exchange(x->m, 1, x->B, 0);
}

static coll_work work(const coll_shape *x) {
  double n = x->n;
  return coll_work_of(n * (n - 1), n * (n - 1) * x->B, 0);
}

/* every round is an exchange */
static double turns(const coll_shape *x) {
  return x->n - 1;
}

const coll_algo_desc coll_algo_pairwise = {
    .build = {[COLL_ALLTOALL] = alltoall, [COLL_ALLTOALLV] = alltoallv},
    .path = path,
    .work = work,
    .turns = turns,
};

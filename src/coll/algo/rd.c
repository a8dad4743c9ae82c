/* rd.c: recursive doubling with whole vectors, what small allreduces want: log2 p phases, in
 * each of which rank j and j^mask swap their whole partial sums and both reduce them, with the
 * fold (algo.h) around it for a number of ranks that is not a power of two. Both ends of a swap
 * compute op(x, y) and op(y, x), which are the same bits for a commutative op, so the ranks end
 * bit-identical.
 *
 * A swap cannot reduce into the vector it is sending, so the partial sums go back and forth
 * between RECV and TMP, ordered so that the last lands in RECV. In place the data starts in
 * RECV; when that order would make the first swap read and write RECV, every stage shifts by
 * one and a copy ends it.
 *
 * The barrier is the same pattern with empty messages.
 */
#include "coll/algo/algo.h"

static void allreduce(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, 0);
  size_t c = a->count;
  if (f.newrank < 0) {
    coll_data_send(s, f.partner, COLL_BUF_SEND, 0, c);
    coll_sched_end_phase(s);
    coll_data_recv(s, f.partner, COLL_BUF_RECV, 0, c);
    return;
  }
  int fold = f.partner >= 0, stages = coll_log2_ceil(f.p) + fold;
  int shift = a->inplace && !fold && (stages - 1) % 2 == 0;
  coll_buf cur = COLL_BUF_SEND;
  for (int i = 0; i < stages; i++) {
    coll_buf to = (stages - 1 - i + shift) % 2 == 0 ? COLL_BUF_RECV : COLL_BUF_TMP;
    if (to == COLL_BUF_TMP) coll_need_tmp(s, c);
    int peer = f.partner;
    if (!fold || i > 0) {
      peer = coll_fold_actual(&f, f.newrank ^ (1 << (i - fold)));
      coll_data_send(s, peer, cur, 0, c);
    }
    coll_data_recv_reduce(s, peer, to, 0, cur, 0, c);
    coll_sched_end_phase(s);
    cur = to;
  }
  if (shift) {
    coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, 0, c);
    coll_sched_end_phase(s);
  }
  if (fold) coll_data_send(s, f.partner, COLL_BUF_RECV, 0, c);
}

void coll_rd_barrier(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, 0);
  if (f.newrank < 0) {
    coll_sched_send(s, f.partner, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
    coll_sched_recv(s, f.partner, COLL_BUF_RECV, 0, 0);
    return;
  }
  if (f.partner >= 0) {
    coll_sched_recv(s, f.partner, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
  for (int mask = 1; mask < f.p; mask *= 2) {
    int peer = coll_fold_actual(&f, f.newrank ^ mask);
    coll_sched_send(s, peer, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(s, peer, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
  if (f.partner >= 0) coll_sched_send(s, f.partner, COLL_BUF_RECV, 0, 0);
}

/* ---- cost -------------------------------------------------------------------------------- */

static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double B = x->B;
  if (x->kind == COLL_BARRIER) return (x->L + 2 * x->fold) * m->alpha;
  double fold = x->fold ? coll_cost_phase(m, 1, B, B) + coll_cost_phase(m, 1, B, 0) : 0;
  return fold + x->L * coll_cost_exchange(m, 1, B, B);
}

static coll_work work(const coll_shape *x) {
  double p = x->p, L = x->L, extra = x->n - p, B = x->B;
  if (x->kind == COLL_BARRIER) return coll_work_of(p * L + 2 * extra, 0, 0);
  return coll_work_of(p * L + 2 * extra, (p * L + 2 * extra) * B, (p * L + extra) * B);
}

/* every swap is an exchange, and so are the fold's two steps */
static double turns(const coll_shape *x) {
  return x->L + 2 * x->fold;
}

const coll_algo_desc coll_algo_rd = {
    .build = {[COLL_ALLREDUCE] = allreduce, [COLL_BARRIER] = coll_rd_barrier},
    .path = path,
    .work = work,
    .turns = turns,
};

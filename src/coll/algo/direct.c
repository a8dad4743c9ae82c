/* direct.c: one phase of messages, every rank to every rank (the root to all, or all to the
 * root), for small messages on few ranks: the fewest rounds (one alpha), the most bytes.
 *
 * Reductions receive every other rank's contribution into its own TMP slot (slot k for rank
 * k), then reduce them locally in the one order every rank uses, x0 op x1 op ... op x(n-1),
 * one step per phase (each writes the whole result). So an allreduce is bit-identical on every
 * rank, and costs n-1 local reductions of the whole vector. In place, a rank's own contribution
 * is in the buffer the result goes to; it is saved to its slot first unless it is x0.
 */
#include "coll/algo/algo.h"

/* The reduction of count elements into RECV; this rank's own contribution is at SEND[own]. */
static void reduce_local(coll_sched *s, const coll_args *a, size_t own) {
  size_t c = a->count;
  for (int k = 0; k < a->size; k++) {
    coll_buf b = COLL_BUF_TMP;
    size_t off = (size_t)k * c;
    if (k == a->rank && !a->inplace) b = COLL_BUF_SEND, off = own;
    if (k == 0 && !(a->rank == 0 && a->inplace)) coll_sched_copy(s, COLL_BUF_RECV, 0, b, off, c);
    if (k > 0) coll_sched_reduce(s, COLL_BUF_RECV, 0, b, off, c);
    coll_sched_end_phase(s);
  }
}

/* Everyone's contribution into this rank's TMP slots: rank q's is read at its SEND[q stride]
 * (stride c: each rank's block of a reduce_scatter; 0: the whole vector); own is this rank's. */
static void gather_slots(coll_sched *s, const coll_args *a, size_t stride, size_t own) {
  int n = a->size, r = a->rank;
  size_t c = a->count;
  coll_need_tmp(s, (size_t)n * c);
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r + n - i) % n;
    coll_data_send(s, to, COLL_BUF_SEND, (size_t)to * stride, c);
    coll_data_recv(s, from, COLL_BUF_TMP, (size_t)from * c, c);
  }
  if (a->inplace && r != 0) coll_sched_copy(s, COLL_BUF_TMP, (size_t)r * c, COLL_BUF_SEND, own, c);
  coll_sched_end_phase(s);
}

static void allreduce(coll_sched *s, const coll_args *a) {
  gather_slots(s, a, 0, 0);
  reduce_local(s, a, 0);
}

static void reduce_scatter(coll_sched *s, const coll_args *a) {
  size_t own = (size_t)a->rank * a->count;
  gather_slots(s, a, a->count, own);
  reduce_local(s, a, own);
}

static void reduce(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  size_t c = a->count;
  if (r != a->root) {
    coll_data_send(s, a->root, COLL_BUF_SEND, 0, c);
    return;
  }
  coll_need_tmp(s, (size_t)n * c);
  for (int i = 1; i < n; i++) {
    int from = (r + i) % n;
    coll_data_recv(s, from, COLL_BUF_TMP, (size_t)from * c, c);
  }
  if (a->inplace && r != 0) coll_sched_copy(s, COLL_BUF_TMP, (size_t)r * c, COLL_BUF_SEND, 0, c);
  coll_sched_end_phase(s);
  reduce_local(s, a, 0);
}

static void allgather(coll_sched *s, const coll_args *a) {
  coll_exchange(s, a, 0, true);
}

static void alltoall(coll_sched *s, const coll_args *a) {
  coll_exchange(s, a, a->count, true);
}

static void alltoallv(coll_sched *s, const coll_args *a) {
  coll_exchange_v(s, a, true);
}

static void broadcast(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  size_t c = a->count;
  if (r != a->root) {
    coll_data_recv(s, a->root, COLL_BUF_RECV, 0, c);
    return;
  }
  for (int i = 1; i < n; i++)
    coll_data_send(s, (r + i) % n, COLL_BUF_SEND, 0, c);
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, c);
}

/* MPI_Gather: every rank sends its c elements straight to the root, which receives rank q's
 * into RECV block q and copies its own (in place, it is there already). The root takes n - 1
 * messages at once: one alpha, and the (n - 1) c elements it must take whatever the algorithm.
 * torch.distributed's gather is this call (python/tern). */
static void gather(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank, root = a->root;
  size_t c = a->count;
  if (r != root) {
    coll_data_send(s, root, COLL_BUF_SEND, 0, c);
    return;
  }
  for (int i = 1; i < n; i++) {
    int from = (r + i) % n;
    coll_data_recv(s, from, COLL_BUF_RECV, (size_t)from * c, c);
  }
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, (size_t)r * c, COLL_BUF_SEND, 0, c);
}

/* MPI_Scatter: the root sends SEND block q straight to rank q and copies its own block (in
 * place, it is there already); every other rank receives its c elements. One alpha; the root
 * sends the (n - 1) c elements it must send whatever the algorithm. */
static void scatter(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank, root = a->root;
  size_t c = a->count;
  if (r != root) {
    coll_data_recv(s, root, COLL_BUF_RECV, 0, c);
    return;
  }
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n;
    coll_data_send(s, to, COLL_BUF_SEND, (size_t)to * c, c);
  }
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, (size_t)r * c, c);
}

static void barrier(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  for (int i = 1; i < n; i++) {
    coll_sched_send(s, (r + i) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(s, (r + n - i) % n, COLL_BUF_RECV, 0, 0);
  }
}

/* ---- cost -------------------------------------------------------------------------------- */

/* plain receives into TMP, then local reductions */
static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B;
  switch (x->kind) {
  case COLL_ALLREDUCE:
    return coll_cost_exchange(m, n - 1, (n - 1) * B, 0) + (n - 1) * B * m->gamma;
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return coll_cost_exchange(m, n - 1, (n - 1) * B, 0) + x->red * (n - 1) * B * m->gamma;
  case COLL_BROADCAST:
  case COLL_REDUCE:
  case COLL_GATHER:
  case COLL_SCATTER:
    return coll_cost_phase(m, n - 1, (n - 1) * B, 0) + x->red * (n - 1) * B * m->gamma;
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV:
    return coll_cost_exchange(m, n - 1, (n - 1) * B, 0);
  case COLL_BARRIER:
    return coll_cost_phase(m, n - 1, 0, 0);
  default:
    return HUGE_VAL;
  }
}

/* The reductions come after the receives (above), so none is of a message as it arrives, and a
 * crowded host's CPUs copy each byte twice, into shared memory's slots and out, before summing
 * it (coll_host_time). Counted as one copy a byte, these reductions looked as cheap as a ring's
 * and a crowded reduce_scatter went to direct at every size, 1.4-2.2x slower than the best
 * (docs/perf/select.md, "The host's work"). */
static coll_work reduced_after_receiving(coll_work w) {
  w.red_received = 0;
  return w;
}

static coll_work work(const coll_shape *x) {
  double n = x->n, B = x->B;
  switch (x->kind) {
  case COLL_ALLREDUCE:
    return reduced_after_receiving(coll_work_of(n * (n - 1), n * (n - 1) * B, n * (n - 1) * B));
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return reduced_after_receiving(
        coll_work_of(n * (n - 1), n * (n - 1) * B, x->red * n * (n - 1) * B));
  case COLL_BROADCAST:
  case COLL_REDUCE:
  case COLL_GATHER:
  case COLL_SCATTER:
    return reduced_after_receiving(coll_work_of(n - 1, (n - 1) * B, x->red * (n - 1) * B));
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV:
    return coll_work_of(n * (n - 1), n * (n - 1) * B, 0);
  case COLL_BARRIER:
    return coll_work_of(n * (n - 1), 0, 0);
  default:
    return COLL_NO_WORK;
  }
}

/* its one phase, where all ranks exchange */
static double turns(const coll_shape *x) {
  return x->rooted ? 0 : 1;
}

const coll_algo_desc coll_algo_direct = {
    .build = {[COLL_ALLREDUCE] = allreduce,
              [COLL_REDUCE_SCATTER] = reduce_scatter,
              [COLL_ALLGATHER] = allgather,
              [COLL_BROADCAST] = broadcast,
              [COLL_REDUCE] = reduce,
              [COLL_ALLTOALL] = alltoall,
              [COLL_BARRIER] = barrier,
              [COLL_GATHER] = gather,
              [COLL_SCATTER] = scatter,
              [COLL_ALLTOALLV] = alltoallv},
    .path = path,
    .work = work,
    .turns = turns,
};

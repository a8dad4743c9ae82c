/* build.c: coll_build, the one door to the builders: it checks the arguments, answers the
 * cases every algorithm shares (nothing to move, or a single rank) and hands the rest to the
 * table of (kind, algorithm) builders in algo/. A missing entry is an algorithm that has no
 * schedule for that kind: TERN_ERR_UNSUPPORTED, and the executor asks the selector instead.
 */
#include "coll/algo/algo.h"

#include <limits.h>

static coll_builder *const builders[COLL_NUM_KINDS][COLL_NUM_ALGOS] = {
    [COLL_ALLREDUCE] = {[COLL_ALGO_RING] = coll_ring_allreduce,
                        [COLL_ALGO_RHD] = coll_rhd_allreduce,
                        [COLL_ALGO_TREE] = coll_tree_allreduce,
                        [COLL_ALGO_DIRECT] = coll_direct_allreduce,
                        [COLL_ALGO_RD] = coll_rd_allreduce,
                        [COLL_ALGO_HIER] = coll_hier_allreduce},
    [COLL_REDUCE_SCATTER] = {[COLL_ALGO_RING] = coll_ring_reduce_scatter,
                             [COLL_ALGO_RHD] = coll_rhd_reduce_scatter,
                             [COLL_ALGO_TREE] = coll_tree_reduce_scatter,
                             [COLL_ALGO_DIRECT] = coll_direct_reduce_scatter,
                             [COLL_ALGO_HIER] = coll_hier_reduce_scatter},
    [COLL_ALLGATHER] = {[COLL_ALGO_RING] = coll_ring_allgather,
                        [COLL_ALGO_RHD] = coll_rhd_allgather,
                        [COLL_ALGO_TREE] = coll_tree_allgather,
                        [COLL_ALGO_DIRECT] = coll_direct_allgather,
                        [COLL_ALGO_BRUCK] = coll_bruck_allgather,
                        [COLL_ALGO_HIER] = coll_hier_allgather},
    [COLL_BROADCAST] = {[COLL_ALGO_RING] = coll_ring_broadcast,
                        [COLL_ALGO_RHD] = coll_rhd_broadcast,
                        [COLL_ALGO_TREE] = coll_tree_broadcast,
                        [COLL_ALGO_DIRECT] = coll_direct_broadcast},
    [COLL_REDUCE] = {[COLL_ALGO_RING] = coll_ring_reduce,
                     [COLL_ALGO_RHD] = coll_rhd_reduce,
                     [COLL_ALGO_TREE] = coll_tree_reduce,
                     [COLL_ALGO_DIRECT] = coll_direct_reduce},
    [COLL_ALLTOALL] = {[COLL_ALGO_DIRECT] = coll_direct_alltoall,
                       [COLL_ALGO_BRUCK] = coll_bruck_alltoall,
                       [COLL_ALGO_PAIRWISE] = coll_pairwise_alltoall},
    /* A barrier has nothing to halve: rhd's is rd's exchange. */
    [COLL_BARRIER] = {[COLL_ALGO_RING] = coll_ring_barrier,
                      [COLL_ALGO_RHD] = coll_rd_barrier,
                      [COLL_ALGO_TREE] = coll_tree_barrier,
                      [COLL_ALGO_DIRECT] = coll_direct_barrier,
                      [COLL_ALGO_RD] = coll_rd_barrier,
                      [COLL_ALGO_BRUCK] = coll_bruck_barrier},
    [COLL_GATHER] = {[COLL_ALGO_DIRECT] = coll_direct_gather},
    [COLL_SCATTER] = {[COLL_ALGO_DIRECT] = coll_direct_scatter},
};

bool coll_algo_supported(coll_kind kind, coll_algo algo) {
  return (unsigned)kind < COLL_NUM_KINDS && (unsigned)algo < COLL_NUM_ALGOS &&
         builders[kind][algo] != NULL;
}

static bool args_valid(const coll_args *a) {
  if ((unsigned)a->kind >= COLL_NUM_KINDS || a->size < 1 || a->size > INT_MAX / 2) return false;
  if (a->rank < 0 || a->rank >= a->size) return false;
  if (coll_kind_rooted(a->kind) && (a->root < 0 || a->root >= a->size)) return false;
  /* The largest extent a builder uses is under 2 n count (Bruck's alltoall). */
  return a->kind == COLL_BARRIER || a->count <= SIZE_MAX / (2 * (size_t)a->size + 2);
}

/* The rooted collectives (broadcast, reduce, gather, scatter): each rank first sends its
 * successor an empty message, which carries the
 * call's identity, root included, like every message (net_msg_match checks it on arrival).
 * Without it, ranks that each take themselves for the root of a small broadcast (or for a
 * sender of a reduce) only send, return TERN_OK with data the others never agreed to, and leave
 * a message behind that the next call misreads; ranks that wait on each other waited for the
 * deadline. With it, some pair of neighbours on the ring of ranks disagrees whenever any ranks
 * do, and the later one is told in this call, at every size (docs/API.md). The steps open the
 * first phase, beside the algorithm's own first steps, so a root's data does not wait for them.
 * It costs a root a wait for its neighbour (docs/PERFORMANCE.md); TERN_CHECK_ROOTS=0 leaves it
 * out, as MPI and NCCL do (the closed forms of select.c still count it: the same o for every
 * algorithm). */
static void check_root(coll_sched *s, const coll_args *a) {
  if (!coll_kind_rooted(a->kind) || a->unchecked_root) return;
  coll_sched_send(s, (a->rank + 1) % a->size, COLL_BUF_RECV, 0, 0);
  coll_sched_recv(s, (a->rank + a->size - 1) % a->size, COLL_BUF_RECV, 0, 0);
}

/* One rank: the result is its own data. */
static void build_alone(coll_sched *s, const coll_args *a) {
  if (a->kind != COLL_BARRIER && !a->inplace)
    coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, a->count);
}

tern_status coll_build(coll_sched *s, const coll_args *a, coll_algo algo) {
  coll_sched_reset(s);
  if (!args_valid(a) || algo == COLL_ALGO_AUTO || (unsigned)algo >= COLL_NUM_ALGOS)
    return TERN_ERR_INVALID_ARG;
  if (!builders[a->kind][algo]) return TERN_ERR_UNSUPPORTED;
  s->algo = algo;
  if (a->size == 1) {
    build_alone(s, a);
  } else if (a->count > 0 || a->kind == COLL_BARRIER) {
    if (algo == COLL_ALGO_HIER && !coll_hier_fits(a)) return TERN_ERR_UNSUPPORTED;
    check_root(s, a);
    builders[a->kind][algo](s, a);
  }
  coll_sched_end_phase(s);
  return coll_sched_status(s);
}

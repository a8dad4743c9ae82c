/* build.c: coll_build, the one door to the builders: it checks the arguments, answers the
 * cases every algorithm shares (nothing to move, or a single rank) and hands the rest to the
 * algorithm's descriptor (algo/list.h). An algorithm without a builder for the kind has no
 * schedule for it: TERN_ERR_UNSUPPORTED, and the executor asks the selector instead.
 */
#include "coll/algo/algo.h"

#include <limits.h>

static const coll_algo_desc *const descs[COLL_NUM_ALGOS] = {
#define COLL_ALGORITHM(ID, name) [COLL_ALGO_##ID] = &coll_algo_##name,
#include "coll/algo/list.h"
#undef COLL_ALGORITHM
};

const coll_algo_desc *coll_algo_desc_of(coll_algo algo) {
  return (unsigned)algo < COLL_NUM_ALGOS ? descs[algo] : NULL;
}

bool coll_algo_supported(coll_kind kind, coll_algo algo) {
  const coll_algo_desc *d = coll_algo_desc_of(algo);
  return d && (unsigned)kind < COLL_NUM_KINDS && d->build[kind] != NULL;
}

bool coll_algo_fits(coll_algo algo, const coll_args *a) {
  const coll_algo_desc *d = coll_algo_desc_of(algo);
  return coll_algo_supported(a->kind, algo) && (!d->fits || a->size < 2 || d->fits(a));
}

static bool args_valid(const coll_args *a) {
  if ((unsigned)a->kind >= COLL_NUM_KINDS || a->size < 1 || a->size > INT_MAX / 2) return false;
  if (a->rank < 0 || a->rank >= a->size) return false;
  if (coll_kind_rooted(a->kind) && (a->root < 0 || a->root >= a->size)) return false;
  if (a->v && a->kind != COLL_ALLTOALLV) return false;
  /* The largest extent a builder uses is under 2 n count (an alltoall's scratch). */
  if (a->kind != COLL_BARRIER && a->count > SIZE_MAX / (2 * (size_t)a->size + 2)) return false;
  return a->kind != COLL_ALLTOALLV ||
         (coll_v_extent(a, true) != SIZE_MAX && coll_v_extent(a, false) != SIZE_MAX);
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

/* One rank: the result is its own data (alltoallv's own block, where its counts put it, is the
 * builder's). */
static void build_alone(coll_sched *s, const coll_args *a) {
  if (a->kind != COLL_BARRIER && !a->inplace)
    coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, a->count);
}

tern_status coll_build(coll_sched *s, const coll_args *a, coll_algo algo) {
  coll_sched_reset(s);
  const coll_algo_desc *d = coll_algo_desc_of(algo);
  if (!args_valid(a) || d == NULL) return TERN_ERR_INVALID_ARG;
  if (!d->build[a->kind]) return TERN_ERR_UNSUPPORTED;
  s->algo = algo;
  if (a->size == 1 && a->v == NULL) {
    build_alone(s, a);
  } else if (a->count > 0 || coll_kind_runs_empty(a->kind)) {
    if (d->fits && !d->fits(a)) return TERN_ERR_UNSUPPORTED;
    check_root(s, a);
    d->build[a->kind](s, a);
  }
  coll_sched_end_phase(s);
  return coll_sched_status(s);
}

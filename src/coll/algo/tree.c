/* tree.c: binomial trees (as in MPICH's binomial broadcast and reduce), over members counted
 * from the root, v = (place(rank) - place(root)) mod n, where a rank's place is the rank itself
 * unless the ranks share fewer CPUs (tree_place). The parent of v is v minus its lowest set bit;
 * its children are v + m for the powers of two m below that bit (all of them below n at the
 * root), and the subtree of v + m is the m members from it, cut at n.
 *
 *  - broadcast: receive from the parent, then send to each child, largest subtree first, one
 *    child per phase: ceil(log2 n) rounds on the critical path;
 *  - reduce: reduce each child's partial sum in turn, smallest subtree first (it is ready
 *    first), then send to the parent. Partial sums live in RECV at the root, in TMP elsewhere;
 *  - allreduce: reduce to rank 0, then broadcast from it (every rank gets rank 0's bits);
 *  - reduce_scatter: reduce the whole n blocks to rank 0, then scatter the subtrees' blocks;
 *  - allgather: gather the subtrees' blocks to rank 0, then broadcast all of them;
 *  - barrier: an empty gather, then an empty broadcast.
 */
#include "coll/algo/algo.h"

typedef struct tree {
  int n, v, parent;   /* parent: an actual rank, -1 at the root */
  int at, cpus;       /* the root's place in the order of ranks, and that order (tree_place) */
  int nkids, kid[31]; /* children's offsets m (child v + m), smallest first */
} tree;

/* The place of rank r in the order the tree is laid on. That is rank order, unless the ranks
 * share fewer CPUs (coll_args.cpus: rank r on CPU r mod cpus, the crowded host's layout): then
 * the order lists each CPU's ranks together. In rank order a binomial tree's
 * inner members (0, n/2, n/4, ...: every send of a broadcast, every receive of a reduce) were all
 * on CPU 0 and its leaves on the others; laid on CPU order they spread over the CPUs (a small
 * broadcast 1.5-2x faster at n = 4 on 2 CPUs: docs/perf/select.md). The trees whose members hold
 * blocks in rank order (reduce_scatter, allgather) keep rank order. */
static int tree_place(const tree *t, int r) {
  if (t->cpus < 2) return r;
  int cpu = r % t->cpus;
  return (int)coll_block_off((size_t)t->n, t->cpus, cpu) + r / t->cpus;
}

/* The rank at place p: tree_place's inverse. */
static int tree_rank_at(const tree *t, int p) {
  if (t->cpus < 2) return p;
  int cpu = 0;
  while (cpu + 1 < t->cpus && (int)coll_block_off((size_t)t->n, t->cpus, cpu + 1) <= p)
    cpu++;
  return (p - (int)coll_block_off((size_t)t->n, t->cpus, cpu)) * t->cpus + cpu;
}

/* The actual rank of tree member v (places counted from the root's). */
static int member_rank(const tree *t, int v) {
  return tree_rank_at(t, (v + t->at) % t->n);
}

/* cpus: coll_args's, or 0 for a tree whose members hold blocks in rank order. */
static void tree_init(tree *t, int rank, int n, int root, int cpus) {
  t->n = n;
  t->cpus = cpus < n ? cpus : 0;
  t->at = tree_place(t, root);
  t->v = coll_mod(tree_place(t, rank) - t->at, n);
  int low = coll_lowbit(t->v, n);
  t->parent = t->v ? member_rank(t, t->v - low) : -1;
  t->nkids = 0;
  for (int m = 1; m < low && t->v + m < n; m *= 2)
    t->kid[t->nkids++] = m;
}

/* The actual rank of child i. */
static int kid_rank(const tree *t, int i) {
  return member_rank(t, t->v + t->kid[i]);
}

/* Ranks in the subtree of child i (in_blocks: cut at n). */
static int kid_size(const tree *t, int i) {
  return CORE_MIN(t->kid[i], t->n - t->v - t->kid[i]);
}

/* Reduce count elements, read at SEND, to the root; partial sums in acc. */
static void reduce_up(coll_sched *s, const tree *t, size_t count, coll_buf acc) {
  coll_buf cur = COLL_BUF_SEND;
  for (int i = 0; i < t->nkids; i++) {
    coll_data_recv_reduce(s, kid_rank(t, i), acc, 0, cur, 0, count);
    coll_sched_end_phase(s);
    cur = acc;
  }
  if (t->parent >= 0) coll_data_send(s, t->parent, cur, 0, count);
  coll_sched_end_phase(s);
}

/* Broadcast count elements into RECV, the root reading them at src. */
static void bcast_down(coll_sched *s, const tree *t, size_t count, coll_buf src) {
  if (t->parent >= 0) {
    coll_data_recv(s, t->parent, COLL_BUF_RECV, 0, count);
    coll_sched_end_phase(s);
  }
  for (int i = t->nkids - 1; i >= 0; i--) {
    coll_data_send(s, kid_rank(t, i), t->parent >= 0 ? COLL_BUF_RECV : src, 0, count);
    coll_sched_end_phase(s);
  }
}

static void broadcast(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, a->root, a->cpus);
  if (t.parent < 0 && !a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, a->count);
  bcast_down(s, &t, a->count, COLL_BUF_SEND);
}

static void reduce(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, a->root, a->cpus);
  if (t.parent >= 0 && t.nkids) coll_need_tmp(s, a->count);
  reduce_up(s, &t, a->count, t.parent < 0 ? COLL_BUF_RECV : COLL_BUF_TMP);
}

static void allreduce(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, 0, a->cpus);
  reduce_up(s, &t, a->count, COLL_BUF_RECV);
  bcast_down(s, &t, a->count, COLL_BUF_RECV);
}

/* After the reduce, rank v holds in TMP the blocks of its subtree, v to v + hold, and hands its
 * children theirs; a leaf receives its one block straight into RECV. */
static void reduce_scatter(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, 0, 0);
  size_t c = a->count, total = (size_t)a->size * c;
  if (t.nkids) coll_need_tmp(s, total);
  reduce_up(s, &t, total, COLL_BUF_TMP);
  if (t.parent >= 0) {
    int hold = CORE_MIN(coll_lowbit(t.v, t.n), t.n - t.v);
    coll_buf to = t.nkids ? COLL_BUF_TMP : COLL_BUF_RECV;
    coll_data_recv(s, t.parent, to, t.nkids ? (size_t)t.v * c : 0, (size_t)hold * c);
    coll_sched_end_phase(s);
  }
  if (t.nkids) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)t.v * c, c);
  for (int i = t.nkids - 1; i >= 0; i--) {
    size_t first = (size_t)(t.v + t.kid[i]) * c;
    coll_data_send(s, kid_rank(&t, i), COLL_BUF_TMP, first, (size_t)kid_size(&t, i) * c);
    coll_sched_end_phase(s);
  }
}

/* Children's subtrees land in RECV at their blocks, one child per phase; then the subtree goes
 * up, read from SEND by a leaf (its own block is all it has, and the broadcast brings it back
 * with the rest). */
static void allgather(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, 0, 0);
  size_t c = a->count, mine = (size_t)t.v * c;
  if (!a->inplace && t.nkids) coll_sched_copy(s, COLL_BUF_RECV, mine, COLL_BUF_SEND, 0, c);
  for (int i = 0; i < t.nkids; i++) {
    coll_data_recv(s, kid_rank(&t, i), COLL_BUF_RECV, (size_t)(t.v + t.kid[i]) * c,
                   (size_t)kid_size(&t, i) * c);
    coll_sched_end_phase(s);
  }
  if (t.parent >= 0) {
    int hold = CORE_MIN(coll_lowbit(t.v, t.n), t.n - t.v);
    bool leaf = t.nkids == 0 && !a->inplace;
    coll_data_send(s, t.parent, leaf ? COLL_BUF_SEND : COLL_BUF_RECV, leaf ? 0 : mine,
                   (size_t)hold * c);
    coll_sched_end_phase(s);
  }
  bcast_down(s, &t, (size_t)a->size * c, COLL_BUF_RECV);
}

static void barrier(coll_sched *s, const coll_args *a) {
  tree t;
  tree_init(&t, a->rank, a->size, 0, a->cpus);
  for (int i = 0; i < t.nkids; i++) {
    coll_sched_recv(s, kid_rank(&t, i), COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
  if (t.parent >= 0) {
    coll_sched_send(s, t.parent, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
    coll_sched_recv(s, t.parent, COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
  for (int i = t.nkids - 1; i >= 0; i--) {
    coll_sched_send(s, kid_rank(&t, i), COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
}

/* ---- cost -------------------------------------------------------------------------------- */

static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, N = n * B, Lc = x->Lc;
  switch (x->kind) {
  case COLL_ALLREDUCE:
    return Lc * (coll_cost_phase(m, 1, B, B) + coll_cost_phase(m, 1, B, 0));
  case COLL_REDUCE_SCATTER:
    return Lc * (coll_cost_phase(m, 1, N, N) + m->alpha) + (n - 1) * B * m->beta;
  case COLL_ALLGATHER:
    return Lc * (m->alpha + coll_cost_phase(m, 1, N, 0)) + (n - 1) * B * m->beta;
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return Lc * coll_cost_phase(m, 1, B, x->red * B);
  case COLL_BARRIER:
    return 2 * Lc * m->alpha;
  default:
    return HUGE_VAL;
  }
}

static coll_work work(const coll_shape *x) {
  double n = x->n, B = x->B, N = n * B;
  switch (x->kind) {
  case COLL_ALLREDUCE: /* reduce to the root, then broadcast */
    return coll_work_of(2 * (n - 1), 2 * (n - 1) * B, (n - 1) * B);
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER: /* the whole N along the tree, then each subtree's blocks (about n/2
                          blocks at each of log2 n levels) */
    return coll_work_of(2 * (n - 1), (n - 1) * N + n / 2 * log2(n) * B, x->red * (n - 1) * N);
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return coll_work_of(n - 1, (n - 1) * B, x->red * (n - 1) * B);
  case COLL_BARRIER:
    return coll_work_of(2 * (n - 1), 0, 0);
  default:
    return COLL_NO_WORK;
  }
}

/* the way up and back down when all ranks need the result; none for broadcast and reduce, whose
 * senders do not wait for their receivers */
static double turns(const coll_shape *x) {
  return x->rooted ? 0 : 2 * x->Lc;
}

const coll_algo_desc coll_algo_tree = {
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

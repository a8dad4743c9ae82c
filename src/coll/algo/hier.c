/* hier.c: two-level collectives: within a host over shared memory, across hosts over TCP, with
 * every local rank carrying its own slice across at once, so that every host's NIC (and, on a
 * real cluster, every NIC of a host) is busy (PCCL, "The Big Send-off", IPDPS 2026).
 *
 * Ranks may sit on hosts in any numbering and any numbers (coll_hosts, hier_hosts.c; without
 * it, a->ppn's contiguous blocks). The algorithms run on the grid: H hosts x K lanes, K the
 * ranks of the smallest host, grid rank (h, k) being host h's k-th rank whatever its number.
 *
 *  - allreduce: the host's K grid ranks reduce-scatter the vector in K parts (a ring over shared
 *    memory), lane k then allreduces part k with the H grid ranks of lane k (ring or rhd across
 *    hosts: a->inner), and the host's grid ranks allgather the parts. Only 1/K of the vector
 *    leaves each rank, the least any scheme sends across hosts.
 *  - reduce_scatter: the blocks are first permuted (a local copy into TMP) so that the blocks
 *    lane k will carry across hosts lie together; the host reduce-scatters them in K parts of H
 *    blocks; then the H grid ranks of lane k reduce-scatter part k across hosts, host h keeping
 *    block (h, k), which is this rank's.
 *  - allgather: the reverse: across hosts first (each rank gathers the H blocks of its lane),
 *    then within the host (the K parts), then the permutation back into RECV.
 *
 * Uneven hosts (3 + 1 ranks, say): a rank past the grid (an extra, local index l >= K) hands
 * its data to grid rank (h, l mod K) and takes the result back, over shared memory. The
 * allreduce folds the extras' vectors in and runs on the grid; the reduce_scatter folds the
 * whole vectors in, allreduces them on the grid and hands each extra its block (twice the
 * bytes across hosts of the even form: the grid's blocks would be of unequal sizes); the
 * allgather gathers each lane's blocks into a bundle of m blocks (m the largest lane; shorter
 * bundles padded with copies, never read back), allgathers the bundles on the grid and unpacks
 * them by rank.
 * Each phase is built by the flat builders through the schedule's view (coll_view): a builder
 * written for ranks 0..m-1 of its own call is pointed at a sub-group of the grid and at regions
 * of the real buffers, so the checker proves hier with the same code it proves the flat
 * algorithms with.
 */
#include "coll/algo/algo.h"

typedef struct layout {
  int H, K, h, l;          /* hosts, lanes, this rank's host and local index */
  const coll_hosts *hosts; /* NULL: ppn's contiguous blocks, where grid rank h K + k is a rank */
} layout;

static layout layout_of(const coll_args *a) {
  const coll_hosts *x = a->hosts;
  if (x)
    return (layout){
        .H = x->nhosts, .K = x->lanes, .h = x->host[a->rank], .l = x->local[a->rank], .hosts = x};
  return (layout){.H = a->size / a->ppn, .K = a->ppn, .h = a->rank / a->ppn, .l = a->rank % a->ppn};
}

static int grid_rank(const layout *g, int i) {
  return g->hosts ? g->hosts->grid[i] : i;
}

static bool uneven(const layout *g) {
  return g->hosts && g->hosts->n != g->H * g->K;
}

/* The ranks of lane k on host h: the grid rank and the extras that hand it their data. */
static int lane_size(const layout *g, int h, int k) {
  if (!g->hosts) return 1;
  int on_host = g->hosts->start[h + 1] - g->hosts->start[h];
  return 1 + (on_host - 1 - k) / g->K;
}
/* Its j-th rank (j = 0: the grid rank). */
static int lane_member(const layout *g, int h, int k, int j) {
  return g->hosts->order[g->hosts->start[h] + k + j * g->K];
}

typedef struct region {
  coll_buf buf;
  size_t off;
} region;
#define AT(b, o) ((region){(b), (o)})

/* Points the view at this rank's host (intra) or at the grid ranks of its lane (inter), with
 * the virtual SEND, RECV and TMP placed at the regions given. */
static void view(coll_sched *s, const layout *g, bool intra, region send, region recv, region tmp) {
  s->view = (coll_view){.on = true,
                        .first = intra ? g->h * g->K : g->l,
                        .stride = intra ? 1 : g->K,
                        .ranks = g->hosts ? g->hosts->grid : NULL,
                        .buf = {send.buf, recv.buf, tmp.buf},
                        .off = {send.off, recv.off, tmp.off}};
}

static coll_args sub(coll_kind kind, int rank, int size, size_t count, bool inplace) {
  return (coll_args){.kind = kind, .rank = rank, .size = size, .count = count, .inplace = inplace};
}

/* The inter-host level's builder: rhd's when a->inner asks for it, else the ring's. */
static coll_builder *inner(coll_algo algo, coll_kind kind) {
  const coll_algo_desc *d = algo == COLL_ALGO_RHD ? &coll_algo_rhd : &coll_algo_ring;
  /* cppcheck does not see the descriptors' declarations, which list.h's macro writes */
  // cppcheck-suppress CastIntegerToAddressAtReturn
  return d->build[kind];
}

/* ---- the grid's collectives ------------------------------------------------------------ */

/* The allreduce of c elements at `in` into `out` among the grid ranks, scratch from tmp on. */
static void allreduce_grid(coll_sched *s, coll_algo across_algo, const layout *g, region in,
                           region out, region tmp, size_t c) {
  size_t off = coll_block_off(c, g->K, g->l), len = coll_block_len(c, g->K, g->l);
  coll_args local = sub(COLL_ALLREDUCE, g->l, g->K, c, false);
  if (g->K == 1) { /* a host of one lane: its part is the whole vector */
    coll_sched_copy(s, out.buf, out.off, in.buf, in.off, c);
    coll_sched_end_phase(s);
  }
  view(s, g, true, in, out, tmp);
  coll_ring_rs(s, &local, COLL_BUF_SEND, c, COLL_BUF_RECV, off);
  if (len > 0) { /* a part can be empty when c < K; the whole lane has the same part */
    coll_args across = sub(COLL_ALLREDUCE, g->h, g->H, len, true);
    region part = AT(out.buf, out.off + off);
    view(s, g, false, part, part, tmp);
    inner(across_algo, COLL_ALLREDUCE)(s, &across);
    coll_sched_end_phase(s);
  }
  view(s, g, true, in, out, tmp);
  coll_ring_ag(s, &local, COLL_BUF_RECV, c, COLL_BUF_RECV, off);
  s->view.on = false;
}

/* Block (h', j) of the grid, c elements, between its place in rank order (at the real rank's
 * block when real, else at grid rank h' K + j) and its place in lane order (j H + h'). */
static void permute(coll_sched *s, const layout *g, size_t c, bool to_lanes, region ranks,
                    region lanes, bool real) {
  for (int j = 0; j < g->K; j++)
    for (int hh = 0; hh < g->H; hh++) {
      int i = hh * g->K + j;
      size_t rank_major = ranks.off + (size_t)(real ? grid_rank(g, i) : i) * c;
      size_t lane_major = lanes.off + ((size_t)j * (size_t)g->H + (size_t)hh) * c;
      if (to_lanes)
        coll_sched_copy(s, lanes.buf, lane_major, ranks.buf, rank_major, c);
      else
        coll_sched_copy(s, ranks.buf, rank_major, lanes.buf, lane_major, c);
    }
  coll_sched_end_phase(s);
}

/* Every host holding K ranks: the reduce_scatter of SEND's n blocks of c, block r to rank r. */
static void reduce_scatter_grid(coll_sched *s, coll_algo across_algo, const layout *g, size_t c) {
  size_t part = (size_t)g->H * c, all = (size_t)g->K * part;
  coll_need_tmp(s, all);
  permute(s, g, c, true, AT(COLL_BUF_SEND, 0), AT(COLL_BUF_TMP, 0), true);
  /* within the host, in place in TMP: lane l ends with part l (the H blocks it carries) */
  coll_args local = sub(COLL_REDUCE_SCATTER, g->l, g->K, part, true);
  view(s, g, true, AT(COLL_BUF_TMP, 0), AT(COLL_BUF_TMP, g->l * part), AT(COLL_BUF_TMP, all));
  coll_algo_ring.build[COLL_REDUCE_SCATTER](s, &local);
  coll_sched_end_phase(s);
  /* across hosts: host h keeps block h of part l, which is grid rank (h, l): this rank's */
  coll_args across = sub(COLL_REDUCE_SCATTER, g->h, g->H, c, false);
  view(s, g, false, AT(COLL_BUF_TMP, g->l * part), AT(COLL_BUF_RECV, 0), AT(COLL_BUF_TMP, all));
  inner(across_algo, COLL_REDUCE_SCATTER)(s, &across);
  coll_sched_end_phase(s);
  s->view.on = false;
}

/* The allgather of c elements at `in` from every grid rank into `out`, in rank order (real) or
 * grid order; TMP from w on is its work area. In the in-place form SEND lies in RECV, which
 * nothing writes before the last phase. */
static void allgather_grid(coll_sched *s, coll_algo across_algo, const layout *g, region in,
                           size_t c, region out, bool real, size_t w) {
  size_t part = (size_t)g->H * c, all = (size_t)g->K * part;
  coll_need_tmp(s, w + all);
  /* across hosts: the H blocks of this lane, into part l of the work area */
  coll_args across = sub(COLL_ALLGATHER, g->h, g->H, c, false);
  view(s, g, false, in, AT(COLL_BUF_TMP, w + g->l * part), AT(COLL_BUF_TMP, w + all));
  inner(across_algo, COLL_ALLGATHER)(s, &across);
  coll_sched_end_phase(s);
  /* within the host, in place: every part to every grid rank of the host */
  coll_args local = sub(COLL_ALLGATHER, g->l, g->K, part, true);
  view(s, g, true, AT(COLL_BUF_TMP, w + g->l * part), AT(COLL_BUF_TMP, w),
       AT(COLL_BUF_TMP, w + all));
  coll_algo_ring.build[COLL_ALLGATHER](s, &local);
  coll_sched_end_phase(s);
  s->view.on = false;
  permute(s, g, c, false, out, AT(COLL_BUF_TMP, w), real);
}

/* ---- extras: ranks past the grid on hosts larger than the smallest --------------------- */

/* An extra: sent elements of SEND to its lane's grid rank, then back elements into RECV. */
static void extra(coll_sched *s, const layout *g, size_t sent, size_t back) {
  int to = grid_rank(g, g->h * g->K + g->l % g->K);
  coll_data_send(s, to, COLL_BUF_SEND, 0, sent);
  coll_sched_end_phase(s);
  coll_data_recv(s, to, COLL_BUF_RECV, 0, back);
  coll_sched_end_phase(s);
}

/* A grid rank: the sum of SEND and its extras' count elements into `into`, one extra a phase
 * (each reduces into the same region); how many extras it has. */
static int fold_in(coll_sched *s, const layout *g, region into, size_t count) {
  int nx = lane_size(g, g->h, g->l) - 1;
  for (int j = 1; j <= nx; j++) {
    region src = j == 1 ? AT(COLL_BUF_SEND, 0) : into;
    coll_data_recv_reduce(s, lane_member(g, g->h, g->l, j), into.buf, into.off, src.buf, src.off,
                          count);
    coll_sched_end_phase(s);
  }
  return nx;
}

/* ---- the collectives ------------------------------------------------------------------- */

static void allreduce(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  size_t c = a->count;
  if (g.l >= g.K) {
    extra(s, &g, c, c);
    return;
  }
  int nx = fold_in(s, &g, AT(COLL_BUF_RECV, 0), c);
  region in = AT(nx ? COLL_BUF_RECV : COLL_BUF_SEND, 0);
  allreduce_grid(s, a->inner, &g, in, AT(COLL_BUF_RECV, 0), AT(COLL_BUF_TMP, 0), c);
  for (int j = 1; j <= nx; j++)
    coll_data_send(s, lane_member(&g, g.h, g.l, j), COLL_BUF_RECV, 0, c);
  coll_sched_end_phase(s);
}

static void reduce_scatter(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  size_t c = a->count, all = (size_t)a->size * c;
  if (!uneven(&g)) {
    reduce_scatter_grid(s, a->inner, &g, c);
    return;
  }
  if (g.l >= g.K) {
    extra(s, &g, all, c);
    return;
  }
  coll_need_tmp(s, all);
  int nx = fold_in(s, &g, AT(COLL_BUF_TMP, 0), all);
  region in = AT(nx ? COLL_BUF_TMP : COLL_BUF_SEND, 0);
  allreduce_grid(s, a->inner, &g, in, AT(COLL_BUF_TMP, 0), AT(COLL_BUF_TMP, all), all);
  for (int j = 1; j <= nx; j++) {
    int x = lane_member(&g, g.h, g.l, j);
    coll_data_send(s, x, COLL_BUF_TMP, (size_t)x * c, c);
  }
  coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)a->rank * c, c);
  coll_sched_end_phase(s);
}

/* Uneven hosts: each lane's blocks in a bundle of m, the bundles allgathered on the grid. */
static void allgather_bundled(coll_sched *s, const coll_args *a, const layout *g) {
  size_t c = a->count;
  int m = 0, b = lane_size(g, g->h, g->l);
  for (int hh = 0; hh < g->H; hh++)
    m = CORE_MAX(m, lane_size(g, hh, 0));
  size_t bundle = (size_t)m * c, gathered = (size_t)g->H * (size_t)g->K * bundle;
  coll_need_tmp(s, gathered + bundle);
  for (int j = 0; j < m; j++) {
    if (j == 0 || j >= b)
      coll_sched_copy(s, COLL_BUF_TMP, gathered + (size_t)j * c, COLL_BUF_SEND, 0, c);
    else
      coll_data_recv(s, lane_member(g, g->h, g->l, j), COLL_BUF_TMP, gathered + (size_t)j * c, c);
  }
  coll_sched_end_phase(s);
  allgather_grid(s, a->inner, g, AT(COLL_BUF_TMP, gathered), bundle, AT(COLL_BUF_TMP, 0), false,
                 gathered + bundle);
  for (int hh = 0; hh < g->H; hh++)
    for (int k = 0; k < g->K; k++)
      for (int j = 0; j < lane_size(g, hh, k); j++) {
        size_t from = ((size_t)(hh * g->K + k) * (size_t)m + (size_t)j) * c;
        coll_sched_copy(s, COLL_BUF_RECV, (size_t)lane_member(g, hh, k, j) * c, COLL_BUF_TMP, from,
                        c);
      }
  coll_sched_end_phase(s);
  for (int j = 1; j < b; j++)
    coll_data_send(s, lane_member(g, g->h, g->l, j), COLL_BUF_RECV, 0, (size_t)a->size * c);
  coll_sched_end_phase(s);
}

static void allgather(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  if (!uneven(&g))
    allgather_grid(s, a->inner, &g, AT(COLL_BUF_SEND, 0), a->count, AT(COLL_BUF_RECV, 0), true, 0);
  else if (g.l >= g.K)
    extra(s, &g, a->count, (size_t)a->size * a->count);
  else
    allgather_bundled(s, a, &g);
}

const coll_algo_desc coll_algo_hier = {
    .build = {[COLL_ALLREDUCE] = allreduce,
              [COLL_REDUCE_SCATTER] = reduce_scatter,
              [COLL_ALLGATHER] = allgather},
    .fits = coll_hier_fits,
    .inner = {COLL_ALGO_RING, COLL_ALGO_RHD},
    .ninner = 2,
};

/* hier.c: two-level collectives: within a host over shared memory, across hosts over TCP, with
 * every local rank carrying its own slice across at once, so that every host's NIC (and, on a
 * real cluster, every NIC of a host) is busy (PCCL, "The Big Send-off", IPDPS 2026). Hosts hold
 * equal, contiguous blocks of ranks: H hosts of L = ppn ranks, rank r = h L + l.
 *
 *  - allreduce: the host's L ranks reduce-scatter the vector in L parts (a ring over shared
 *    memory), local rank l then allreduces part l with the H ranks of local index l (ring or
 *    rhd across hosts: a->inner), and the host's ranks allgather the parts. Only 1/L of the
 *    vector leaves each rank, the least any scheme sends across hosts.
 *  - reduce_scatter: the blocks are first permuted (a local copy into TMP) so that the blocks
 *    local rank l will carry across hosts, {h' L + l}, lie together; the host reduce-scatters
 *    them in L parts of H blocks; then the H ranks of index l reduce-scatter part l across hosts,
 *    host h keeping block h L + l, which is this rank's.
 *  - allgather: the reverse: across hosts first (each rank gathers the H blocks of its local
 *    index), then within the host (the L parts), then the permutation back into RECV.
 * Each phase is built by the flat builders through the schedule's view (coll_view): a builder
 * written for ranks 0..m-1 of its own call is pointed at a sub-group and at regions of the real
 * buffers, so the checker proves hier with the same code it proves the flat algorithms with.
 */
#include "coll/algo/algo.h"

typedef struct layout {
  int H, L, h, l; /* hosts, ranks per host, this rank's host and local index */
} layout;

static layout layout_of(const coll_args *a) {
  layout g = {.L = a->ppn, .H = a->size / a->ppn};
  g.h = a->rank / g.L;
  g.l = a->rank % g.L;
  return g;
}

typedef struct region {
  coll_buf buf;
  size_t off;
} region;

/* Points the view at this rank's host (intra) or at the ranks of its local index (inter), with
 * the virtual SEND, RECV and TMP placed at the regions given. */
static void view(coll_sched *s, const layout *g, bool intra, region send, region recv, region tmp) {
  s->view = (coll_view){.on = true,
                        .first = intra ? g->h * g->L : g->l,
                        .stride = intra ? 1 : g->L,
                        .buf = {send.buf, recv.buf, tmp.buf},
                        .off = {send.off, recv.off, tmp.off}};
}

static coll_args sub(coll_kind kind, int rank, int size, size_t count, bool inplace) {
  return (coll_args){.kind = kind, .rank = rank, .size = size, .count = count, .inplace = inplace};
}

static coll_builder *inner(const coll_args *a, coll_kind kind) {
  bool rhd = a->inner == COLL_ALGO_RHD;
  switch (kind) {
  case COLL_ALLREDUCE: return rhd ? coll_rhd_allreduce : coll_ring_allreduce;
  case COLL_REDUCE_SCATTER: return rhd ? coll_rhd_reduce_scatter : coll_ring_reduce_scatter;
  default: return rhd ? coll_rhd_allgather : coll_ring_allgather;
  }
}

#define AT(b, o) ((region){(b), (o)})

void coll_hier_allreduce(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  size_t c = a->count, off = coll_block_off(c, g.L, g.l), len = coll_block_len(c, g.L, g.l);
  coll_args local = sub(COLL_ALLREDUCE, g.l, g.L, c, a->inplace);
  view(s, &g, true, AT(COLL_BUF_SEND, 0), AT(COLL_BUF_RECV, 0), AT(COLL_BUF_TMP, 0));
  coll_ring_rs(s, &local, COLL_BUF_SEND, c, COLL_BUF_RECV, off);
  if (len > 0) { /* a part can be empty when c < L; the whole inter group has the same part */
    coll_args across = sub(COLL_ALLREDUCE, g.h, g.H, len, true);
    view(s, &g, false, AT(COLL_BUF_RECV, off), AT(COLL_BUF_RECV, off), AT(COLL_BUF_TMP, 0));
    inner(a, COLL_ALLREDUCE)(s, &across);
    coll_sched_end_phase(s);
  }
  view(s, &g, true, AT(COLL_BUF_SEND, 0), AT(COLL_BUF_RECV, 0), AT(COLL_BUF_TMP, 0));
  coll_ring_ag(s, &local, COLL_BUF_RECV, c, COLL_BUF_RECV, off);
  s->view.on = false;
}

/* Block h' L + j of `from` <-> block j H + h' of `to` (to_tmp: into TMP), for every block. */
static void permute(coll_sched *s, const layout *g, size_t c, bool to_tmp) {
  for (int j = 0; j < g->L; j++)
    for (int hh = 0; hh < g->H; hh++) {
      size_t rank_major = ((size_t)hh * (size_t)g->L + (size_t)j) * c;
      size_t index_major = ((size_t)j * (size_t)g->H + (size_t)hh) * c;
      if (to_tmp) coll_sched_copy(s, COLL_BUF_TMP, index_major, COLL_BUF_SEND, rank_major, c);
      else coll_sched_copy(s, COLL_BUF_RECV, rank_major, COLL_BUF_TMP, index_major, c);
    }
  coll_sched_end_phase(s);
}

void coll_hier_reduce_scatter(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  size_t c = a->count, part = (size_t)g.H * c, all = (size_t)a->size * c;
  coll_need_tmp(s, all);
  permute(s, &g, c, true);
  /* within the host, in place in TMP: local rank l ends with part l (the H blocks it carries) */
  coll_args local = sub(COLL_REDUCE_SCATTER, g.l, g.L, part, true);
  view(s, &g, true, AT(COLL_BUF_TMP, 0), AT(COLL_BUF_TMP, g.l * part), AT(COLL_BUF_TMP, all));
  coll_ring_reduce_scatter(s, &local);
  coll_sched_end_phase(s);
  /* across hosts: host h keeps block h of part l, which is block h L + l: this rank's */
  coll_args across = sub(COLL_REDUCE_SCATTER, g.h, g.H, c, false);
  view(s, &g, false, AT(COLL_BUF_TMP, g.l * part), AT(COLL_BUF_RECV, 0), AT(COLL_BUF_TMP, all));
  inner(a, COLL_REDUCE_SCATTER)(s, &across);
  coll_sched_end_phase(s);
  s->view.on = false;
}

void coll_hier_allgather(coll_sched *s, const coll_args *a) {
  layout g = layout_of(a);
  size_t c = a->count, part = (size_t)g.H * c, all = (size_t)a->size * c;
  coll_need_tmp(s, all);
  /* across hosts: the H blocks of this local index, into part l of TMP. In the in-place form
   * SEND lies in RECV, which nothing writes before the last phase. */
  coll_args across = sub(COLL_ALLGATHER, g.h, g.H, c, false);
  view(s, &g, false, AT(COLL_BUF_SEND, 0), AT(COLL_BUF_TMP, g.l * part), AT(COLL_BUF_TMP, all));
  inner(a, COLL_ALLGATHER)(s, &across);
  coll_sched_end_phase(s);
  /* within the host, in place in TMP: every part to every local rank */
  coll_args local = sub(COLL_ALLGATHER, g.l, g.L, part, true);
  view(s, &g, true, AT(COLL_BUF_TMP, g.l * part), AT(COLL_BUF_TMP, 0), AT(COLL_BUF_TMP, all));
  coll_ring_allgather(s, &local);
  coll_sched_end_phase(s);
  s->view.on = false;
  permute(s, &g, c, false);
}

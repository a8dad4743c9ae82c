/* rhd.c: recursive halving and doubling (Thakur, Rabenseifner and Gropp 2005), with the fold
 * (algo.h) for a number of ranks that is not a power of two.
 *
 * Among the p = 2^L participants (new ranks j), the data is cut into p units, unit j being the
 * one new rank j owns:
 *  - halving (reduce-scatter): at level mask = p/2, p/4, ..., 1, rank j exchanges with j^mask
 *    the half of its current unit range it does not keep, and reduces the half it keeps; it
 *    ends holding unit j reduced over all;
 *  - doubling (allgather): at mask = 1, 2, ..., p/2 it sends the aligned group of mask units
 *    it holds and receives its partner's;
 *  - binomial scatter and gather over the same units move data from and to new rank 0.
 * allreduce is fold, halving, doubling, unfold (Rabenseifner's algorithm): each element is
 * reduced at one rank and copied, so the ranks end bit-identical. reduce_scatter stops after
 * the halving, allgather is the doubling alone, reduce is halving then gather (Rabenseifner's
 * reduce), broadcast is scatter then doubling (van de Geijn's).
 *
 * The units: for allreduce, broadcast and reduce the count split evenly in p; for
 * reduce_scatter and allgather each participant's unit is the blocks of the ranks it stands for
 * (its helper's and its own), so that the halving ends with every block where it belongs.
 */
#include "coll/algo/algo.h"

typedef struct units {
  const coll_fold *f;
  size_t total; /* elements */
  size_t block; /* 0: total split evenly in p; else: unit j is the blocks of j's ranks */
} units;

static size_t unit_off(const units *u, int j) {
  if (u->block) return u->block * (size_t)coll_fold_rel(u->f, j);
  return coll_block_off(u->total, u->f->p, j);
}

static size_t span(const units *u, int lo, int hi) {
  return unit_off(u, hi) - unit_off(u, lo);
}

/* Halving: on entry this rank's data is in cur (SEND, or acc after the fold); partial sums and
 * the result go to acc, at the same offsets. */
static void halve(coll_sched *s, const units *u, coll_buf cur, coll_buf acc) {
  const coll_fold *f = u->f;
  int j = f->newrank, lo = 0, hi = f->p;
  for (int mask = f->p / 2; mask >= 1; mask /= 2) {
    int mid = lo + mask, peer = coll_fold_actual(f, j ^ mask);
    bool upper = (j & mask) != 0; /* keeps the upper half */
    int klo = upper ? mid : lo, khi = upper ? hi : mid;
    int slo = upper ? lo : mid, shi = upper ? mid : hi;
    coll_data_send(s, peer, cur, unit_off(u, slo), span(u, slo, shi));
    coll_data_recv_reduce(s, peer, acc, unit_off(u, klo), cur, unit_off(u, klo), span(u, klo, khi));
    coll_sched_end_phase(s);
    cur = acc;
    lo = klo;
    hi = khi;
  }
}

/* Whether new rank x already holds the units from g on, after a scatter: its subtree's,
 * [x, x + lowbit(x)). */
static bool holds(const coll_fold *f, int x, int g) {
  return g >= x && g < x + coll_lowbit(x, f->p);
}

/* Doubling; after a scatter (scattered), units a rank holds already are not sent to it. */
static void doubling(coll_sched *s, const units *u, coll_buf buf, bool scattered) {
  const coll_fold *f = u->f;
  int j = f->newrank;
  for (int mask = 1; mask < f->p; mask *= 2) {
    int mine = j & ~(mask - 1), theirs = (j ^ mask) & ~(mask - 1);
    int peer = coll_fold_actual(f, j ^ mask);
    if (!scattered || !holds(f, j ^ mask, mine))
      coll_data_send(s, peer, buf, unit_off(u, mine), span(u, mine, mine + mask));
    if (!scattered || !holds(f, j, theirs))
      coll_data_recv(s, peer, buf, unit_off(u, theirs), span(u, theirs, theirs + mask));
    coll_sched_end_phase(s);
  }
}

/* Binomial gather of the units into acc at new rank 0. */
static void gather(coll_sched *s, const units *u, coll_buf acc) {
  const coll_fold *f = u->f;
  int j = f->newrank;
  for (int mask = 1; mask < f->p; mask *= 2) {
    if (j & mask) {
      coll_data_send(s, coll_fold_actual(f, j - mask), acc, unit_off(u, j), span(u, j, j + mask));
      coll_sched_end_phase(s);
      return;
    }
    coll_data_recv(s, coll_fold_actual(f, j + mask), acc, unit_off(u, j + mask),
                   span(u, j + mask, j + 2 * mask));
    coll_sched_end_phase(s);
  }
}

/* Binomial scatter of the units from new rank 0, which reads them at src, into RECV. */
static void scatter(coll_sched *s, const units *u, coll_buf src) {
  const coll_fold *f = u->f;
  int j = f->newrank;
  for (int mask = f->p / 2; mask >= 1; mask /= 2) {
    if (j % (2 * mask) == 0)
      coll_data_send(s, coll_fold_actual(f, j + mask), j ? COLL_BUF_RECV : src,
                     unit_off(u, j + mask), span(u, j + mask, j + 2 * mask));
    else if (j % (2 * mask) == mask)
      coll_data_recv(s, coll_fold_actual(f, j - mask), COLL_BUF_RECV, unit_off(u, j),
                     span(u, j, j + mask));
    else
      continue;
    coll_sched_end_phase(s);
  }
}

/* A helper's part: hand in `in` count elements (if any), then take `out` elements into RECV. */
static void helper(coll_sched *s, const coll_fold *f, coll_buf in, size_t in_off, size_t in_count,
                   size_t out_count) {
  coll_data_send(s, f->partner, in, in_off, in_count);
  coll_sched_end_phase(s);
  coll_data_recv(s, f->partner, COLL_BUF_RECV, 0, out_count);
  coll_sched_end_phase(s);
}

static void allreduce(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, 0);
  units u = {&f, a->count, 0};
  size_t c = a->count;
  if (f.newrank < 0) {
    helper(s, &f, COLL_BUF_SEND, 0, c, c);
    return;
  }
  coll_buf cur = COLL_BUF_SEND;
  if (f.partner >= 0) {
    coll_data_recv_reduce(s, f.partner, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, c);
    coll_sched_end_phase(s);
    cur = COLL_BUF_RECV;
  }
  halve(s, &u, cur, COLL_BUF_RECV);
  doubling(s, &u, COLL_BUF_RECV, false);
  if (f.partner >= 0) coll_data_send(s, f.partner, COLL_BUF_RECV, 0, c);
}

/* The partial sums live in TMP at SEND's offsets; the fold's helper hands in all n blocks and
 * takes its own one back. */
static void reduce_scatter(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, 0);
  size_t c = a->count, total = (size_t)a->size * c;
  units u = {&f, total, c};
  if (f.newrank < 0) {
    helper(s, &f, COLL_BUF_SEND, 0, total, c);
    return;
  }
  coll_need_tmp(s, total);
  coll_buf cur = COLL_BUF_SEND;
  if (f.partner >= 0) {
    coll_data_recv_reduce(s, f.partner, COLL_BUF_TMP, 0, COLL_BUF_SEND, 0, total);
    coll_sched_end_phase(s);
    cur = COLL_BUF_TMP;
  }
  halve(s, &u, cur, COLL_BUF_TMP);
  coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)a->rank * c, c);
  if (f.partner >= 0) coll_data_send(s, f.partner, COLL_BUF_TMP, (size_t)f.partner * c, c);
}

static void allgather(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, 0);
  size_t c = a->count, total = (size_t)a->size * c, mine = (size_t)a->rank * c;
  units u = {&f, total, c};
  if (f.newrank < 0) {
    helper(s, &f, a->inplace ? COLL_BUF_RECV : COLL_BUF_SEND, a->inplace ? mine : 0, c, total);
    return;
  }
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, mine, COLL_BUF_SEND, 0, c);
  if (f.partner >= 0) coll_data_recv(s, f.partner, COLL_BUF_RECV, (size_t)f.partner * c, c);
  coll_sched_end_phase(s);
  doubling(s, &u, COLL_BUF_RECV, false);
  if (f.partner >= 0) coll_data_send(s, f.partner, COLL_BUF_RECV, 0, total);
}

static void broadcast(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, a->root);
  units u = {&f, a->count, 0};
  size_t c = a->count;
  if (f.newrank < 0) {
    helper(s, &f, COLL_BUF_SEND, 0, 0, c);
    return;
  }
  if (f.newrank == 0 && !a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, c);
  scatter(s, &u, COLL_BUF_SEND);
  doubling(s, &u, COLL_BUF_RECV, true);
  if (f.partner >= 0) coll_data_send(s, f.partner, COLL_BUF_RECV, 0, c);
}

static void reduce(coll_sched *s, const coll_args *a) {
  coll_fold f;
  coll_fold_init(&f, a->rank, a->size, a->root);
  units u = {&f, a->count, 0};
  size_t c = a->count;
  if (f.newrank < 0) {
    coll_data_send(s, f.partner, COLL_BUF_SEND, 0, c);
    return;
  }
  coll_buf acc = f.newrank == 0 ? COLL_BUF_RECV : COLL_BUF_TMP;
  if (acc == COLL_BUF_TMP) coll_need_tmp(s, c);
  coll_buf cur = COLL_BUF_SEND;
  if (f.partner >= 0) {
    coll_data_recv_reduce(s, f.partner, acc, 0, COLL_BUF_SEND, 0, c);
    coll_sched_end_phase(s);
    cur = acc;
  }
  halve(s, &u, cur, acc);
  gather(s, &u, acc);
}

/* ---- cost -------------------------------------------------------------------------------- */

/* Of the bytes a rank moves in one halving or doubling among p ranks, the share in steps whose
 * two ranks share a CPU. On a crowded host tern run deals rank r to CPU r mod cpus (and
 * comm/open.c counts on it), so the step at distance mask pairs two ranks of one CPU when mask
 * is a multiple of cpus, and that CPU makes the copies at both ends in turn, while the model's
 * phase has them in parallel. Step mask moves mask / p of the vector. At n = 4 on 2 CPUs that is
 * the larger step of each half of a rooted halving-doubling: the root's first send (half the
 * vector) and the doubling's last exchange. Why it matters: unpriced, the crowded broadcast from
 * 1 MiB went to halving-doubling, whose critical path is the shorter, while the tree (its hops
 * across CPUs, algo/tree.c) was 1.2-1.7x faster (docs/perf/select.md, "Steps on one CPU"). */
static double same_cpu_share(const coll_shape *x) {
  const coll_net_model *m = x->m;
  if (!m->crowded || m->cpus < 2) return 0;
  double same = 0;
  for (int mask = 1; 2 * mask <= (int)x->p; mask *= 2)
    if (mask % m->cpus == 0) same += mask;
  return same / (x->p - 1);
}

/* reduce: a reduce-scatter, then a gather; broadcast: a scatter, then the doubling, in which no
 * rank is sent the units it holds, so the root sends all but its unit in each, and no rank
 * carries more (the last gets its unit in the scatter, and in the doubling sends one unit fewer
 * than it gets); a crowded host's CPU makes both ends of its share */
static double rooted_path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double B = x->B, even = coll_cost_even_part(x);
  double fold = x->fold ? coll_cost_phase(m, 1, B, x->red * B) : 0;
  double turned = 2 * same_cpu_share(x) * even * m->beta;
  if (x->red)
    return fold + coll_cost_halving(x, even, even, 1) + coll_cost_halving(x, even, 0, 0) + turned;
  return fold + 2 * coll_cost_halving(x, even, 0, 0) + turned;
}

static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double B = x->B, N = x->n * B, even = coll_cost_even_part(x);
  switch (x->kind) {
  case COLL_ALLREDUCE: {
    double fold = x->fold ? coll_cost_phase(m, 1, B, B) + coll_cost_phase(m, 1, B, 0) : 0;
    return fold + coll_cost_halving(x, even, even, 1) + coll_cost_halving(x, even, even, 0);
  }
  case COLL_REDUCE_SCATTER: /* the units are the ranks' blocks: all but this rank's move */
    return (x->fold ? coll_cost_phase(m, 1, N, N) + coll_cost_phase(m, 1, B, 0) : 0) +
           coll_cost_halving(x, N - B, N - B, 1);
  case COLL_ALLGATHER:
    return (x->fold ? coll_cost_phase(m, 1, B, 0) + coll_cost_phase(m, 1, N, 0) : 0) +
           coll_cost_halving(x, N - B, N - B, 0);
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return rooted_path(x);
  case COLL_BARRIER:
    return (x->L + 2 * x->fold) * m->alpha;
  default:
    return HUGE_VAL;
  }
}

static coll_work work(const coll_shape *x) {
  double n = x->n, B = x->B, N = n * B, p = x->p, L = x->L, extra = n - p;
  switch (x->kind) {
  case COLL_ALLREDUCE: /* the folded ranks hand in their vector and take the result back */
    return coll_work_of(2 * p * L + 2 * extra, 2 * (n - 1) * B, (n - 1) * B);
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER: /* p ranks move all but their own share; a folded rank N one way, B back */
    return coll_work_of(p * L + 2 * extra, (p - 1) * N + extra * (N + B), x->red * (n - 1) * N);
  case COLL_BROADCAST: /* scatter, allgather */
    return coll_work_of(p * L + extra, (n - 1) * B, 0);
  case COLL_REDUCE: /* reduce-scatter, gather */
    return coll_work_of(p * L + p - 1 + extra, (p - 1 + L / 2 + extra) * B, (n - 1) * B);
  case COLL_BARRIER:
    return coll_work_of(p * L + 2 * extra, 0, 0);
  default:
    return COLL_NO_WORK;
  }
}

/* Every halving and doubling step is an exchange, and so are the fold's two steps where all
 * ranks need the result. */
static double turns(const coll_shape *x) {
  if (x->rooted) return x->L;
  return (x->kind == COLL_ALLREDUCE ? 2 * x->L : x->L) + 2 * x->fold;
}

const coll_algo_desc coll_algo_rhd = {
    .build = {[COLL_ALLREDUCE] = allreduce,
              [COLL_REDUCE_SCATTER] = reduce_scatter,
              [COLL_ALLGATHER] = allgather,
              [COLL_BROADCAST] = broadcast,
              [COLL_REDUCE] = reduce,
              [COLL_BARRIER] = coll_rd_barrier},
    .path = path,
    .work = work,
    .turns = turns,
};

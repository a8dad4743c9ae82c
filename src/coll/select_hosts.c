/* select_hosts.c: choosing an algorithm when ranks sit on several hosts: every algorithm, flat
 * or hier, priced from its schedules, phase by phase, on the transport each phase uses.
 *
 * A rank's phase costs coll_phase_cost under the intra-host model when all its messages stay on
 * the host, under the inter-host model otherwise. But the ranks of a host share its NIC: in a
 * phase where all of them send across (flat rhd's far halves, hier's inter-host level) the NIC
 * carries all their bytes, while in a ring's phase only the one at the host's edge does. So the
 * schedules of every rank of one host are walked together, phase k of each being taken to run
 * at once (the ranks run the same algorithm in step), and phase k costs the most of the ranks'
 * own costs and of the NIC's: the bytes all of them send to other hosts, or receive, whichever
 * is more, at the inter-host beta. The host priced is that of rank 0, and with hosts of unequal
 * sizes each host's, the costliest being the critical path.
 */
#include "coll/algo/algo.h"

#include <math.h>
#include <stdlib.h>

/* The elements of steps [from, to) of s that go to, or come from, another host than rank's. */
static void crossing(const coll_sched *s, size_t from, size_t to, const coll_args *place, int rank,
                     double *out, double *in) {
  for (size_t i = from; i < to; i++) {
    const coll_step *st = &s->steps[i];
    if (st->kind > COLL_STEP_RECV_REDUCE) continue;
    if (coll_host_of(place, st->peer) == coll_host_of(place, rank)) continue;
    *(st->kind == COLL_STEP_SEND ? out : in) += (double)st->count;
  }
}

double coll_sched_cost_hosts(const coll_sched *s, size_t elem_size, const coll_args *place,
                             int rank, const coll_net_model *intra, const coll_net_model *inter) {
  double t = 0;
  coll_phase_tally p;
  for (size_t i = 0; coll_phase_next(s, &i, place, rank, &p);)
    t += coll_phase_cost(p.crosses ? inter : intra, &p, elem_size);
  return t;
}

/* The time of the host of `ranks[0..m)` running a's collective by algo: its ranks' schedules in
 * scheds[0..m), walked phase by phase together. */
static double host_cost(const coll_args *a, coll_algo algo, const int *ranks, int m,
                        coll_sched *scheds, size_t elem_size, const coll_net_model *intra,
                        const coll_net_model *inter) {
  for (int j = 0; j < m; j++) {
    coll_args r = *a;
    r.rank = ranks[j];
    if (coll_build(&scheds[j], &r, algo) != TERN_OK) return HUGE_VAL;
  }
  size_t at[64] = {0};
  double t = 0;
  for (bool any = true; any;) {
    any = false;
    double slowest = 0, out = 0, in = 0;
    for (int j = 0; j < m; j++) {
      coll_phase_tally p;
      size_t from = at[j];
      if (!coll_phase_next(&scheds[j], &at[j], a, ranks[j], &p)) continue;
      any = true;
      slowest = fmax(slowest, coll_phase_cost(p.crosses ? inter : intra, &p, elem_size));
      crossing(&scheds[j], from, at[j], a, ranks[j], &out, &in);
    }
    t += fmax(slowest, inter->beta * fmax(out, in) * (double)elem_size);
  }
  return t;
}

/* The ranks of host h, at most max of them, into ranks; how many. */
static int host_ranks(const coll_args *a, int h, int *ranks, int max) {
  int m = 0;
  if (a->hosts) {
    for (int i = a->hosts->start[h]; i < a->hosts->start[h + 1] && m < max; i++)
      ranks[m++] = a->hosts->order[i];
  } else {
    for (int r = h * a->ppn; r < (h + 1) * a->ppn && m < max; r++)
      ranks[m++] = r;
  }
  return m;
}

/* The costliest host (one suffices when hosts are alike). */
static double cost(const coll_args *a, coll_algo algo, coll_sched *scheds, size_t elem_size,
                   const coll_net_model *intra, const coll_net_model *inter) {
  int nhosts = coll_host_count(a), ranks[64];
  bool alike = coll_ranks_per_host(a) > 0;
  double worst = 0;
  for (int h = 0; h < (alike ? 1 : nhosts); h++) {
    int m = host_ranks(a, h, ranks, 64);
    worst = fmax(worst, host_cost(a, algo, ranks, m, scheds, elem_size, intra, inter));
  }
  return worst;
}

coll_algo coll_select_hosts(const coll_args *place, size_t elem_size, const coll_net_model *intra,
                            const coll_net_model *inter, coll_algo *inner) {
  coll_sched scheds[64];
  for (int j = 0; j < 64; j++)
    coll_sched_init(&scheds[j]);
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL;
  *inner = COLL_ALGO_RING;
  coll_args a = {.kind = place->kind,
                 .size = place->size,
                 .count = place->count,
                 .ppn = place->ppn,
                 .hosts = place->hosts};
  for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
    const coll_algo_desc *d = coll_algo_desc_of((coll_algo)algo);
    if (!d->build[a.kind] || d->refines != COLL_ALGO_AUTO || (d->fits && !d->fits(&a))) continue;
    for (int i = 0; i < CORE_MAX(1, d->ninner); i++) {
      a.inner = d->ninner ? d->inner[i] : COLL_ALGO_RING;
      double t = cost(&a, (coll_algo)algo, scheds, elem_size, intra, inter);
      if (t < best_t) best = (coll_algo)algo, best_t = t, *inner = a.inner;
    }
  }
  for (int j = 0; j < 64; j++)
    coll_sched_free(&scheds[j]);
  if (best == COLL_ALGO_AUTO) best = coll_select(a.kind, a.size, a.count, elem_size, inter);
  return best;
}

/* select_hosts.c: choosing an algorithm when ranks sit on several hosts: the flat algorithms,
 * priced on the slower (inter-host) transport, against hier, priced phase by phase on the
 * transport each phase uses.
 *
 * hier's cost is read off the schedules themselves: those of the first grid rank of every host
 * (its blocks are the longest, and on a host larger than the smallest it also folds the
 * extras' data in), the costliest being the critical path. A phase is priced with the
 * intra-host model when all its messages stay on the host and with the inter-host model
 * otherwise: the same rule as coll_sched_cost, with the model chosen per phase. The flat
 * algorithms keep their closed forms under the inter-host model: an upper bound, since some of
 * their messages stay on a host.
 */
#include "coll/sched.h"

#include <math.h>

double coll_sched_cost_hosts(const coll_sched *s, size_t elem_size, const coll_args *place,
                             int rank, const coll_net_model *intra, const coll_net_model *inter) {
  double t = 0;
  coll_phase_tally p;
  for (size_t i = 0; coll_phase_next(s, &i, place, rank, &p);)
    t += coll_phase_cost(p.crosses ? inter : intra, &p, elem_size);
  return t;
}

/* The costliest of the hosts' first ranks running hier with a's inner algorithm. */
static double hier_cost(coll_args a, size_t elem_size, const coll_net_model *intra,
                        const coll_net_model *inter, coll_sched *scratch) {
  int nhosts = a.hosts ? a.hosts->nhosts : a.size / a.ppn;
  double worst = 0;
  for (int h = 0; h < nhosts; h++) {
    a.rank = a.hosts ? a.hosts->order[a.hosts->start[h]] : h * a.ppn;
    if (coll_build(scratch, &a, COLL_ALGO_HIER) != TERN_OK) return HUGE_VAL;
    worst = fmax(worst, coll_sched_cost_hosts(scratch, elem_size, &a, a.rank, intra, inter));
    if (!a.hosts || a.hosts->n == a.hosts->nhosts * a.hosts->lanes) break; /* hosts alike */
  }
  return worst;
}

coll_algo coll_select_hosts(const coll_args *place, size_t elem_size, const coll_net_model *intra,
                            const coll_net_model *inter, coll_sched *scratch, coll_algo *inner) {
  coll_kind kind = place->kind;
  int n = place->size;
  coll_algo best = coll_select(kind, n, place->count, elem_size, inter);
  double best_t = coll_algo_cost(kind, best, n, place->count, elem_size, inter);
  *inner = COLL_ALGO_RING;
  if (!coll_algo_supported(kind, COLL_ALGO_HIER) || !coll_hier_fits(place)) return best;
  const coll_algo inners[] = {COLL_ALGO_RING, COLL_ALGO_RHD};
  for (size_t i = 0; i < CORE_ARRAY_LEN(inners); i++) {
    coll_args a = {.kind = kind,
                   .size = n,
                   .count = place->count,
                   .ppn = place->ppn,
                   .hosts = place->hosts,
                   .inner = inners[i]};
    double t = hier_cost(a, elem_size, intra, inter, scratch);
    if (t < best_t) best = COLL_ALGO_HIER, best_t = t, *inner = inners[i];
  }
  return best;
}

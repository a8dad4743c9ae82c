/* select_hosts.c: choosing an algorithm when ranks sit on several hosts: the flat algorithms,
 * priced on the slower (inter-host) transport, against hier, priced phase by phase on the
 * transport each phase uses.
 *
 * hier's cost is read off the schedule itself (rank 0's: its blocks are the longest, so it is
 * on the critical path), a phase priced with the intra-host model when all its messages stay on
 * the host and with the inter-host model otherwise: the same rule as coll_sched_cost, with the
 * model chosen per phase. The flat algorithms keep their closed forms under the inter-host
 * model: an upper bound, since some of their messages stay on a host.
 */
#include "coll/sched.h"

#include <math.h>

double coll_sched_cost_hosts(const coll_sched *s, size_t elem_size, int ppn, int rank,
                             const coll_net_model *intra, const coll_net_model *inter) {
  double t = 0;
  coll_phase_tally p;
  for (size_t i = 0; coll_phase_next(s, &i, ppn, rank, &p);)
    t += coll_phase_cost(p.crosses ? inter : intra, &p, elem_size);
  return t;
}

coll_algo coll_select_hosts(coll_kind kind, int n, int ppn, size_t count, size_t elem_size,
                            const coll_net_model *intra, const coll_net_model *inter,
                            coll_sched *scratch, coll_algo *inner) {
  coll_algo best = coll_select(kind, n, count, elem_size, inter);
  double best_t = coll_algo_cost(kind, best, n, count, elem_size, inter);
  *inner = COLL_ALGO_RING;
  if (!coll_algo_supported(kind, COLL_ALGO_HIER) || ppn < 2 || ppn >= n || n % ppn) return best;
  const coll_algo inners[] = {COLL_ALGO_RING, COLL_ALGO_RHD};
  for (size_t i = 0; i < CORE_ARRAY_LEN(inners); i++) {
    coll_args a = {.kind = kind, .rank = 0, .size = n, .count = count, .ppn = ppn,
                   .inner = inners[i]};
    if (coll_build(scratch, &a, COLL_ALGO_HIER) != TERN_OK) continue;
    double t = coll_sched_cost_hosts(scratch, elem_size, ppn, 0, intra, inter);
    if (t < best_t) best = COLL_ALGO_HIER, best_t = t, *inner = inners[i];
  }
  return best;
}

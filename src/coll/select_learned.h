/* select_learned.h: a selector learned from simulated sweeps (bench/scale/train.py fits it on
 * bench/scale/results/: tern's own schedules simulated on a family of platforms, 8 to 4096 ranks).
 *
 * The terms of a schedule are the cost model's (coll_sched_cost_hosts) with unit constants, for
 * rank 0, phase by phase on the host or across hosts: latencies (phases that move anything),
 * bytes of the busier direction, bytes reduced, messages beyond a phase's first; four on the
 * host, four across. A row of the model weights twelve prices of them, non-negatively, for one
 * (collective, algorithm[, inner]): the host's terms at the intra-host constants, the terms across
 * hosts at the inter-host ones, and the terms across hosts again at the slower of the two (a
 * phase that crosses while the host's other ranks move bytes over shared memory, as a flat
 * ring's, goes at the slower link's pace: a sum of the first eight cannot say which is slower
 * once the site's NIC is). Its prediction of the time: what the simulations say each price
 * costs on the critical path (contention included), so the model keeps the cost model's shape and
 * extrapolates along it.
 *
 * The weights are given at one platform's constants (intra, inter, kept beside them: the first
 * training platform's), so that each weight divided by its price there is the factor the fit
 * found over all its platforms. A site with other constants is priced with the same factors times
 * its own prices: the weights carry the algorithms' shapes to the site, not a platform's
 * absolute times.
 *
 * It is an input of the one selector: across hosts, coll_choose prices with it on a site whose
 * profile carries it (coll_site.learned; exec.c gives every site across hosts the cluster's),
 * when the placement is the one it was trained on: every host with rph ranks
 * (coll_learned_fits). Elsewhere (other ranks per host, hosts of unequal sizes, a collective it
 * has no rows for) the phases of coll_select_hosts price. docs/SCALE.md, "The learned selector".
 */
#ifndef TERN_COLL_SELECT_LEARNED_H
#define TERN_COLL_SELECT_LEARNED_H

#include "coll/sched.h"

#define COLL_LEARNED_TERMS 8
/* a row's weights: the terms at their own side's prices, then those across at the slower side's */
#define COLL_LEARNED_WEIGHTS 12

typedef struct coll_learned_row {
  coll_kind kind;
  coll_algo algo, inner; /* inner: hier's inter-host algorithm */
  double w[COLL_LEARNED_WEIGHTS];
} coll_learned_row;

typedef struct coll_learned_model {
  int rph;                     /* ranks per host of the platforms it was trained on */
  coll_net_model intra, inter; /* the weights' constants, within a host and across */
  const coll_learned_row *rows;
  size_t nrows;
} coll_learned_model;

/* The model trained on the simulated clusters of docs/SCALE.md ("The learned selector"). */
extern const coll_learned_model coll_learned_cluster;

/* The eight terms of schedule s (rank's own), the hosts being place's (coll_host_of). */
void coll_learned_terms(const coll_sched *s, size_t elem_size, const coll_args *place, int rank,
                        double f[COLL_LEARNED_TERMS]);
/* Whether m was trained for a's placement: two hosts or more, each of m->rph ranks. */
bool coll_learned_fits(const coll_learned_model *m, const coll_args *a);
/* The row's predicted seconds for rank 0 of a (kind, size, count, placement) on a site whose
 * constants are intra and inter (NULL: m's own platform's); HUGE_VAL when the row's algorithm
 * has no schedule there. scratch is overwritten. */
double coll_learned_cost(const coll_learned_model *m, const coll_learned_row *row,
                         const coll_args *a, size_t elem_size, const coll_net_model *intra,
                         const coll_net_model *inter, coll_sched *scratch);
/* The least predicted time among m's rows of a->kind: the algorithm, and in *inner hier's inner
 * one. AUTO when m has no row of that kind with a schedule there. The same on every rank. */
coll_algo coll_select_learned(const coll_learned_model *m, const coll_args *a, size_t elem_size,
                              const coll_net_model *intra, const coll_net_model *inter,
                              coll_sched *scratch, coll_algo *inner);

#endif /* TERN_COLL_SELECT_LEARNED_H */

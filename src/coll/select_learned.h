/* select_learned.h: a selector learned from simulated sweeps (bench/scale/train.py fits it on
 * bench/scale/results/sweep.csv, tern's own schedules simulated on 8 to 4096 ranks).
 *
 * The terms of a schedule are the cost model's (coll_sched_cost_hosts) with unit constants, for
 * rank 0, phase by phase on the host or across hosts: latencies (phases that move anything),
 * bytes of the busier direction, bytes reduced, messages beyond a phase's first; four on the
 * host, four across. A row of the model weights those eight terms, non-negatively, for one
 * (collective, algorithm[, inner]): its prediction of the time. The weights are what the
 * simulation says one latency, byte, reduced byte and message cost on that platform, on the
 * critical path, as each algorithm experiences it (contention included), so the model keeps the
 * cost model's shape and extrapolates along it.
 *
 * The weights are the simulated platform's times; the platform's own constants (intra, inter)
 * are kept beside them, so that each weight divided by its constant is what the simulation
 * says an algorithm pays per unit of the cost model's, on top of the model (contention on the
 * NIC, a phase's messages that do not overlap). A site with other constants is priced with the
 * same factors times its own: the weights carry the algorithms' shapes to the site, not the
 * platform's absolute times.
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

typedef struct coll_learned_row {
  coll_kind kind;
  coll_algo algo, inner; /* inner: hier's inter-host algorithm */
  double w[COLL_LEARNED_TERMS];
} coll_learned_row;

typedef struct coll_learned_model {
  int rph;                     /* ranks per host of the platform it was trained on */
  coll_net_model intra, inter; /* that platform's constants, within a host and across */
  const coll_learned_row *rows;
  size_t nrows;
} coll_learned_model;

/* The model trained on the default simulated cluster (docs/SCALE.md). */
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

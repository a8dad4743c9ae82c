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
 * It is an input of the one selector: coll_choose prices with it, in place of
 * coll_select_hosts' phases, on a site whose profile carries it (coll_site.learned). At run time
 * no site does yet: the weights describe the simulated platform they were trained on, and
 * nothing tells that a real cluster is that one (issue 31 is to learn them for real hosts).
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
  int rph; /* ranks per host of the platform it was trained on */
  const coll_learned_row *rows;
  size_t nrows;
} coll_learned_model;

/* The model trained on the default simulated cluster (docs/SCALE.md). */
extern const coll_learned_model coll_learned_cluster;

/* The eight terms of schedule s (rank's own) with ppn ranks per host. */
void coll_learned_terms(const coll_sched *s, size_t elem_size, int ppn, int rank,
                        double f[COLL_LEARNED_TERMS]);
/* The row's predicted seconds for rank 0 of (n, ppn, count, elem_size); HUGE_VAL when the row's
 * algorithm has no schedule there. scratch is overwritten. */
double coll_learned_cost(const coll_learned_row *row, int n, int ppn, size_t count,
                         size_t elem_size, coll_sched *scratch);
/* The least predicted time among m's rows of kind: the algorithm, and in *inner hier's inner
 * one. AUTO when m has no row of kind that has a schedule there. The same on every rank. */
coll_algo coll_select_learned(const coll_learned_model *m, coll_kind kind, int n, int ppn,
                              size_t count, size_t elem_size, coll_sched *scratch,
                              coll_algo *inner);

#endif /* TERN_COLL_SELECT_LEARNED_H */

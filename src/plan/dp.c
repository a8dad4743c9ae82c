/* dp.c: data parallelism across pipeline replicas (DP x PP): the gradient all-reduce among a
 * stage's copies, priced with the alpha-beta ring of tern's collective cost model
 * (docs/PLANNING.md, "DP x PP"). src/plan links nothing of src/coll (plan_links_alone), so the
 * closed form is written here and tests/unit/test_plan_dp.c checks it against coll's.
 */
#include "plan/plan.h"

#include <math.h>

/* Bytes of one gradient element: bf16, as the weights the pipeline model holds. */
#define GRAD_BYTES 2.0

double plan_ring_allreduce_s(int n, double bytes, double alpha_s, double Bps) {
  if (n <= 1) return 0;
  if (!(Bps > 0)) return INFINITY;
  return 2.0 * (n - 1) * (alpha_s + bytes / n / Bps);
}

double plan_dp_allreduce_s(const plan_cluster *c, const plan_job *j, const plan_placement *p) {
  int d = plan_replicas(p);
  if (d <= 1) return 0;
  double per_layer = j->params / j->layers * GRAD_BYTES, worst = 0;
  for (int s = 0, i = 0; s < p->nseg; s++) {
    double Bps = c->regions[p->seg[s].region].intra_Bps;
    for (int g = 0; g < p->seg[s].gpus; g++, i++)
      worst = fmax(worst, plan_ring_allreduce_s(d, p->layers[i] * per_layer, 0, Bps));
  }
  return worst;
}

int plan_dp_microbatches(const plan_job *j, const plan_placement *p) {
  int d = plan_replicas(p);
  return (j->microbatches + d - 1) / d;
}

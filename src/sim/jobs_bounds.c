/* jobs_bounds.c: lower bounds on a job's JCT and electricity cost that no policy can beat,
 * derived from the pipeline and energy models alone (docs/PLANNING.md, "Bounds").
 *
 * Any placement of a job is S stages of l_i layers on GPUs of per-layer forward+backward time
 * f_i and power p_i, with S - 1 hops between them. Its 1F1B iteration is at least
 * sum_i l_i f_i + 2 (S - 1) beta + (m - 1) max(max_i l_i f_i, beta if S > 1), beta a boundary's
 * bytes over the fastest bandwidth anywhere (latency, link sharing and 1F1B's cycles only add).
 * With f the fastest type's per-layer time, the sum is at least L f and the largest stage at least
 * max(f, L f / S). S is at least the least memory floor over the types and at most
 * min(L, the cluster's GPUs): the least of the bound over those S holds for every placement. The
 * job starts no earlier than it arrives, so its JCT is at least iterations times that.
 * DP x PP: D copies of S stages (D S GPUs, D up to PLAN_MAX_REPLICAS) each run ceil(m / D)
 * micro-batches, so m becomes ceil(m / D) above, plus the all-reduce of the largest stage's
 * gradients (at least ceil(L / S) layers' bf16) over the fastest bandwidth anywhere (plan/dp.c);
 * the held power is D S p.
 *
 * Energy: each stage's GPU is held the whole iteration, so the held power times the iteration is
 * at least S p times the iteration's bound above (p the least power of any type), least over S;
 * and, as each stage's iteration holds at least m of its own micro-batches, at least
 * sum_i p_i m l_i f_i >= m L e, e the least energy of one layer's micro-batch over the types.
 * Each hour is paid at least at the cheapest price of any region and hour.
 */
#include "sim/jobs.h"

#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <stdbool.h>

/* The fastest type's per-layer seconds, the least power, the least energy per layer-pass. */
static void type_extremes(const plan_cluster *c, const plan_job *j, double *f, double *p,
                          double *e) {
  double flops = 3.0 * plan_job_layer_fwd_flops(j);
  *f = *p = *e = INFINITY;
  for (int r = 0; r < c->nregions; r++) { /* types no region holds cannot be used */
    const plan_gpu_type *t = &c->types[c->regions[r].type];
    double fb = flops / (t->peak_flops * c->mfu);
    *f = CORE_MIN(*f, fb);
    *p = CORE_MIN(*p, t->power_w);
    *e = CORE_MIN(*e, fb * t->power_w);
  }
}

/* The fewest stages any placement has: the least memory floor over the types. */
static int least_floor(const plan_cluster *c, const plan_demand *d) {
  int smin = INT_MAX;
  for (int t = 0; t < c->ntypes; t++)
    smin = CORE_MIN(smin, d->smin[t]);
  return CORE_MAX(smin, 1);
}

/* Bytes per second of the fastest stage boundary anywhere: inside a region or over a link. */
static double fastest_Bps(const plan_cluster *c) {
  double b = 0;
  for (int r = 0; r < c->nregions; r++) {
    b = CORE_MAX(b, c->regions[r].intra_Bps);
    for (int q = 0; q < c->nregions; q++)
      b = CORE_MAX(b, plan_link_at(c, r, q)->Bps);
  }
  return b;
}

/* The least iteration time of any placement of s stages in d copies (the header's bound). */
static double iter_bound(const plan_job *j, int s, int d, double f, double beta, double Bps) {
  double beat = CORE_MAX(f, j->layers * f / s);
  if (s > 1) beat = CORE_MAX(beat, beta);
  double grads = ceil((double)j->layers / s) * j->params / j->layers * 2;
  return j->layers * f + 2 * (s - 1) * beta + ((j->microbatches + d - 1) / d - 1) * beat +
         plan_ring_allreduce_s(d, grads, 0, Bps);
}

/* The least of iter_bound (held_power false) or of d s p iter_bound (true) over the stage and
 * copy counts a placement can have. */
static double least_over_stages(const plan_cluster *c, const plan_job *j, const plan_demand *d,
                                bool held_power) {
  double f, p, e, Bps = fastest_Bps(c), beta = plan_job_boundary_bytes(j) / Bps, best = INFINITY;
  type_extremes(c, j, &f, &p, &e);
  int gpus = plan_cluster_total_gpus(c),
      smax = CORE_MIN(CORE_MIN(j->layers, PLAN_MAX_STAGES), gpus);
  for (int s = least_floor(c, d); s <= smax; s++)
    for (int k = 1; k <= PLAN_MAX_REPLICAS && k * s <= gpus; k++)
      best = CORE_MIN(best, (held_power ? k * s * p : 1.0) * iter_bound(j, s, k, f, beta, Bps));
  return best;
}

double sim_job_jct_bound(const plan_cluster *c, const plan_job *j, const plan_demand *d) {
  return plan_job_iterations(j) * least_over_stages(c, j, d, false);
}

double sim_job_cost_bound(const plan_cluster *c, const plan_job *j, const plan_demand *d) {
  double f, p, e, price = INFINITY;
  type_extremes(c, j, &f, &p, &e);
  for (int r = 0; r < c->nregions; r++)
    for (int h = 0; h < 24; h++)
      price = CORE_MIN(price, c->regions[r].price[h]);
  double joules_per_iter =
      CORE_MAX(least_over_stages(c, j, d, true), j->microbatches * j->layers * e);
  return plan_job_iterations(j) * joules_per_iter * c->pue / 3.6e6 * price;
}

/* The sum of one bound over the scenario's jobs, 0 if a job fits nowhere. */
static double sum_bounds(const plan_scenario *sc, bool cost) {
  plan_demand *d = calloc((size_t)(sc->njobs > 0 ? sc->njobs : 1), sizeof *d);
  double sum = 0;
  if (d == NULL || !plan_jobs_demand(&sc->c, sc->jobs, sc->njobs, d, NULL, NULL)) {
    free(d);
    return 0;
  }
  for (int i = 0; i < sc->njobs; i++)
    sum += cost ? sim_job_cost_bound(&sc->c, &sc->jobs[i], &d[i])
                : sim_job_jct_bound(&sc->c, &sc->jobs[i], &d[i]);
  free(d);
  return sum;
}

double sim_jobs_ideal_jct(const plan_scenario *sc) {
  return sc->njobs ? sum_bounds(sc, false) / sc->njobs : 0;
}

double sim_jobs_ideal_cost(const plan_scenario *sc) {
  return sum_bounds(sc, true);
}

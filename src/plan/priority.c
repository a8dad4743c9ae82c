/* priority.c: BACE-Pipe's dynamic job priority, and FCFS for the baselines and the ablation.
 *
 *     P_j = (1 - a)(1 - I_j) + a (1 - D_j)
 *
 * I_j is the job's compute intensity (FLOPs of its whole run) and D_j its bandwidth demand (the
 * bytes per second one stage boundary must carry for communication not to stall its pipeline at
 * K*), each divided by the largest among the queued jobs. a is the network's live congestion:
 * the mean over inter-region links of min(1, load / bandwidth), the load being the demand of the
 * running jobs that cross the link. An idle network (a = 0) runs the least work first; a
 * congested one (a -> 1) runs the lightest traffic first. When no running job crosses a link, a
 * is instead the share of queued jobs that no single region can give its K* now: those will
 * cross regions (or shrink), so the network they are about to load weighs in before it is
 * loaded (docs/PLANNING.md, "alpha on an idle network").
 */
#include "plan/plan.h"

#include <stdlib.h>

double plan_congestion(const plan_state *s) {
  const plan_cluster *c = s->c;
  double sum = 0;
  int links = 0;
  for (int a = 0; a < c->nregions; a++)
    for (int b = a + 1; b < c->nregions; b++) {
      const plan_link *l = plan_link_at(c, a, b);
      if (l->Bps <= 0) continue;
      double u = s->load_Bps[(size_t)a * (size_t)c->nregions + (size_t)b] / l->Bps;
      sum += u < 1 ? u : 1;
      links++;
    }
  return links ? sum / links : 0;
}

/* Whether any running job crosses a link. */
static bool links_in_use(const plan_state *s) {
  size_t n = (size_t)s->c->nregions;
  for (size_t i = 0; i < n * n; i++)
    if (s->share[i] > 0) return true;
  return false;
}

double plan_pressure(const plan_state *s, const plan_queued *q, int n) {
  int must_cross = 0;
  for (int i = 0; i < n; i++) {
    bool fits_one = false;
    for (int r = 0; r < s->c->nregions && !fits_one; r++) {
      int k = plan_kstar_at(s->c, q[i].d, r);
      fits_one = k > 0 && s->free[r] >= k;
    }
    must_cross += !fits_one;
  }
  return n > 0 ? (double)must_cross / n : 0;
}

double plan_alpha(const plan_state *s, const plan_queued *q, int n) {
  return links_in_use(s) ? plan_congestion(s) : plan_pressure(s, q, n);
}

void plan_priorities(const plan_state *s, const plan_queued *q, int n, double *prio) {
  double imax = 0, dmax = 0, a = plan_alpha(s, q, n);
  for (int i = 0; i < n; i++) {
    imax = CORE_MAX(imax, q[i].d->work_flops);
    dmax = CORE_MAX(dmax, q[i].d->demand_Bps);
  }
  for (int i = 0; i < n; i++) {
    double ij = imax > 0 ? q[i].d->work_flops / imax : 0;
    double dj = dmax > 0 ? q[i].d->demand_Bps / dmax : 0;
    prio[i] = (1 - a) * (1 - ij) + a * (1 - dj);
  }
}

typedef struct keyed {
  double key;
  plan_queued q;
} keyed;

/* Descending key; ties by arrival, then by id, so every order is total and reproducible. */
static int cmp_keyed(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  if (a->q.job->arrival_s != b->q.job->arrival_s)
    return a->q.job->arrival_s < b->q.job->arrival_s ? -1 : 1;
  return (a->q.id > b->q.id) - (a->q.id < b->q.id);
}

static void sort_by(plan_queued *q, int n, const double *key) {
  keyed *k = malloc((size_t)n * sizeof *k);
  if (k == NULL) return; /* out of memory: the queue keeps its order, still a valid one */
  for (int i = 0; i < n; i++)
    k[i] = (keyed){key ? key[i] : 0, q[i]};
  qsort(k, (size_t)n, sizeof *k, cmp_keyed);
  for (int i = 0; i < n; i++)
    q[i] = k[i].q;
  free(k);
}

void plan_order_priority(const plan_state *s, plan_queued *q, int n) {
  double *prio = malloc((size_t)(n > 0 ? n : 1) * sizeof *prio);
  if (prio == NULL) return;
  plan_priorities(s, q, n, prio);
  sort_by(q, n, prio);
  free(prio);
}

void plan_order_fcfs(plan_queued *q, int n) {
  sort_by(q, n, NULL);
}

void plan_policy_fcfs(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  (void)pol;
  (void)s;
  plan_order_fcfs(q, n);
}

void plan_order_shortest(plan_queued *q, int n) {
  double *key = malloc((size_t)(n > 0 ? n : 1) * sizeof *key);
  if (key == NULL) return;
  for (int i = 0; i < n; i++) /* sort_by is descending: the shortest run has the largest key */
    key[i] = -q[i].d->iter_kstar * plan_job_iterations(q[i].job);
  sort_by(q, n, key);
  free(key);
}

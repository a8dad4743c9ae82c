/* alloc.c: turning a chain of regions into a placement, and the cost-min allocator.
 *
 * BACE-Pipe's allocator gives every region on the path at least one stage, so that the path the
 * pathfinder checked is the path that runs, and fills the rest of the job's GPUs in ascending
 * electricity price (the price of the hour the job starts). The in-order fill is its ablation
 * and what the cross-region baselines do: take each region's free GPUs in the order the chain
 * was built.
 */
#include "plan/plan.h"

#include <limits.h>
#include <string.h>

static bool build(plan_memo *memo, const plan_cluster *c, const plan_job *j, const int *regions,
                  const int *gpus, int n, plan_placement *out) {
  out->nseg = 0;
  out->replicas = 1;
  if (n > PLAN_MAX_PATH) return false;
  for (int i = 0; i < n; i++) {
    if (gpus[i] <= 0) continue;
    out->seg[out->nseg].region = regions[i];
    out->seg[out->nseg].gpus = gpus[i];
    out->nseg++;
  }
  return out->nseg > 0 && plan_split_layers_kept(memo, c, j, out);
}

bool plan_build(const plan_cluster *c, const plan_job *j, const int *regions, const int *gpus,
                int n, plan_placement *out) {
  return build(NULL, c, j, regions, gpus, n, out);
}

bool plan_build_at(const plan_state *s, const plan_job *j, const int *regions, const int *gpus,
                   int n, plan_placement *out) {
  return build(s->memo, s->c, j, regions, gpus, n, out);
}

void plan_alloc_costmin(const plan_state *s, const int *regions, int n, int k, int *gpus) {
  int order[PLAN_MAX_PATH];
  for (int i = 0; i < n; i++) {
    gpus[i] = k > 0 ? 1 : 0;
    k -= gpus[i];
    order[i] = i;
  }
  for (int i = 1; i < n; i++) /* insertion sort by price: n <= PLAN_MAX_PATH */
    for (int m = i; m > 0; m--) {
      double a = plan_price_at(&s->c->regions[regions[order[m]]], s->now);
      double b = plan_price_at(&s->c->regions[regions[order[m - 1]]], s->now);
      if (a >= b) break;
      int t = order[m];
      order[m] = order[m - 1];
      order[m - 1] = t;
    }
  for (int i = 0; i < n && k > 0; i++) {
    int r = order[i], more = CORE_MIN(k, s->free[regions[r]] - gpus[r]);
    gpus[r] += more;
    k -= more;
  }
}

void plan_alloc_inorder(const plan_state *s, const int *regions, int n, int k, int *gpus) {
  for (int i = 0; i < n; i++) {
    gpus[i] = CORE_MIN(k, s->free[regions[i]]);
    k -= gpus[i];
  }
}

int plan_smin_path(const plan_cluster *c, const plan_demand *d, const int *regions, int n) {
  int lo = INT_MAX;
  for (int i = 0; i < n; i++)
    lo = CORE_MIN(lo, d->smin[c->regions[regions[i]].type]);
  return lo;
}

double plan_predict_iter(const plan_state *s, const plan_job *j, const plan_placement *p) {
  return plan_iter_time(s->c, j, p, s->share, 1);
}

double plan_predict_cost(const plan_state *s, const plan_job *j, const plan_placement *p,
                         double iter_s) {
  double run = iter_s * plan_job_iterations(j);
  return plan_placement_cost(s->c, p, s->now, s->now + run);
}

/* single.c: the single-region baselines, LCF and LDF: the whole job in one region.
 *
 * LCF (lowest cost first) puts the job in the cheapest region (price of the hour now) that has
 * all of its K* GPUs (K* on the region's GPU type) free; LDF (least delay first) in the region with
 * the most free GPUs. Both take up to K* GPUs, and when no region has K* free they still start the
 * job on fewer, down to its memory floor, in the region their rule picks among those that can hold
 * it: every policy here is work-conserving alike, so a baseline never idles GPUs the job could use.
 * Jobs are considered in arrival order (FCFS).
 */
#include "plan/plan.h"

#include <math.h>

static int floor_of(const plan_state *s, const plan_queued *q, int r) {
  return q->d->smin[s->c->regions[r].type];
}

static bool place_in(const plan_state *s, const plan_queued *q, int r, plan_placement *out) {
  int k = CORE_MIN(plan_kstar_at(s->c, q->d, r), s->free[r]);
  return plan_build_at(s, q->job, &r, &k, 1, out);
}

/* The cheapest region with its K* GPUs free (all_kstar) or its memory floor, -1 if none. */
static int cheapest(const plan_state *s, const plan_queued *q, bool all_kstar) {
  int best = -1;
  double best_price = INFINITY;
  for (int r = 0; r < s->c->nregions; r++) {
    int want = all_kstar ? plan_kstar_at(s->c, q->d, r) : floor_of(s, q, r);
    if (want < 1 || s->free[r] < want) continue; /* a type that cannot hold the job, or full */
    double price = plan_price_at(&s->c->regions[r], s->now);
    if (price < best_price) {
      best = r;
      best_price = price;
    }
  }
  return best;
}

/* Whether some region could hold the job alone with all its GPUs free. When none could, LCF
 * and LDF place it across regions as CR-LCF and CR-LDF do: a baseline never refuses a job the
 * cluster can hold (our decision; docs/PLANNING.md, "Baselines"). */
static bool one_region_can(const plan_state *s, const plan_queued *q) {
  for (int r = 0; r < s->c->nregions; r++)
    if (s->c->regions[r].gpus >= floor_of(s, q, r)) return true;
  return false;
}

static bool lcf_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                      plan_placement *out) {
  (void)pol;
  if (!one_region_can(s, q)) return plan_cross_place(s, q, true, out);
  int r = cheapest(s, q, true);
  if (r < 0) r = cheapest(s, q, false);
  return r >= 0 && place_in(s, q, r, out);
}

static bool ldf_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                      plan_placement *out) {
  (void)pol;
  if (!one_region_can(s, q)) return plan_cross_place(s, q, false, out);
  int best = -1;
  for (int r = 0; r < s->c->nregions; r++)
    if (s->free[r] >= floor_of(s, q, r) && (best < 0 || s->free[r] > s->free[best])) best = r;
  return best >= 0 && place_in(s, q, best, out);
}

const plan_policy plan_policy_lcf = {"lcf", "LCF: whole job in the cheapest region",
                                     plan_policy_fcfs, lcf_place, 0};
const plan_policy plan_policy_ldf = {"ldf", "LDF: whole job in the region with most free GPUs",
                                     plan_policy_fcfs, ldf_place, 0};

/* bace.c: BACE-Pipe (Zhang, Liu, Xu, 2026) and its three ablations behind the policy interface.
 *
 * Order: the dynamic priority of priority.c (ablation: FCFS). Placement: the pathfinder grows
 * one chain from every region with free GPUs; each chain that can hold the job (at least its
 * memory floor) is a candidate, its GPUs allocated by the cost-min allocator and priced over the
 * predicted run from now. Among the candidates that give the job all of its K* GPUs the cheapest
 * wins (ties: the faster). K* is that of the chain's start region's GPU type. When no chain
 * can give K*, the job still starts, on the cheapest candidate at most 10% slower than the
 * fastest, rather than idle the cluster: every policy here is work-conserving alike. (The paper
 * is silent on this case; "the most GPUs" would be worse, since GPUs past the ceil(L/k) layers
 * of the slowest stage do not shorten the iteration; docs/PLANNING.md gives the reasons.)
 *
 * When no chain that the link check accepts could hold the job (its memory floor) even on the
 * idle cluster, the chains grow without the check, as in the pathfinder's ablation: a job the
 * cluster can hold across regions is never refused (our decision; the paper is silent).
 *
 * Ablations: without the pathfinder the chain grows through the cheapest regions with no link
 * check; without the cost-min allocator the chain's GPUs are taken in chain order and the
 * fastest candidate wins instead of the cheapest, ties going to the chain with the most GPUs
 * left over: no price is looked at. PLAN_BACE_TRIM is ours (ours.c).
 */
#include "plan/plan.h"

#include <math.h>

typedef struct candidate {
  plan_placement p;
  int k, spare, kstar; /* GPUs taken; GPUs the chain had left over; K* on its start's type */
  double iter_s, cost;
} candidate;

/* Short of K*, a chain at most this much slower than the fastest may win by price
 * (docs/PLANNING.md, "BACE-Pipe's fallback"). */
#define FALLBACK_SLACK 0.10

void plan_bace_order(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  if (pol->flags & PLAN_BACE_NO_PRIORITY)
    plan_order_fcfs(q, n);
  else
    plan_order_priority(s, q, n);
}

/* The faster; on ties the cheaper, or without cost-min (blind to prices) the chain with the
 * most GPUs left over. */
static bool faster(unsigned flags, const candidate *a, const candidate *b) {
  if (a->iter_s != b->iter_s) return a->iter_s < b->iter_s;
  return (flags & PLAN_BACE_NO_COSTMIN) ? a->spare > b->spare : a->cost < b->cost;
}

/* Whether a beats b: all K* GPUs first; then the cheaper (the faster without cost-min). Short
 * of K* the faster here; plan_bace_choose then lets a cheaper chain within FALLBACK_SLACK win. */
static bool better(unsigned flags, const candidate *a, const candidate *b) {
  bool afull = a->k >= a->kstar, bfull = b->k >= b->kstar;
  if (afull != bfull) return afull;
  if (!afull || (flags & PLAN_BACE_NO_COSTMIN)) return faster(flags, a, b);
  return a->cost < b->cost || (a->cost == b->cost && a->iter_s < b->iter_s);
}

/* Allocates k GPUs over the path and builds the placement; false when it does not fit. */
static bool allocate(const plan_state *s, const plan_queued *q, unsigned flags,
                     const plan_path *path, int k, candidate *out) {
  int gpus[PLAN_MAX_PATH];
  if (flags & PLAN_BACE_NO_COSTMIN)
    plan_alloc_inorder(s, path->region, path->n, k, gpus);
  else
    plan_alloc_costmin(s, path->region, path->n, k, gpus);
  if (!plan_build_at(s, q->job, path->region, gpus, path->n, &out->p)) return false;
  out->k = out->p.stages;
  out->spare = path->free_gpus - out->k;
  out->iter_s = plan_predict_iter(s, q->job, &out->p);
  out->cost = plan_predict_cost(s, q->job, &out->p, out->iter_s);
  return isfinite(out->iter_s);
}

/* Ours: short of K*, the fewest GPUs whose slowest stage has as few layers, if no slower. */
static void trim(const plan_state *s, const plan_queued *q, unsigned flags, const plan_path *path,
                 candidate *c) {
  static _Thread_local candidate t;
  t.kstar = c->kstar;
  int layers = q->job->layers, k = (int)ceil(layers / ceil((double)layers / c->k));
  if (c->k >= c->kstar || k >= c->k || k < path->n) return;
  if (allocate(s, q, flags, path, k, &t) && t.iter_s <= c->iter_s * (1 + 1e-3)) *c = t;
}

/* The candidate the chain from `start` gives, false when the job does not fit on it. */
static bool from_start(const plan_state *s, const plan_queued *q, unsigned flags, int start,
                       candidate *out) {
  plan_path path;
  int kstar = plan_kstar_at(s->c, q->d, start);
  if (kstar < 1) return false; /* the start's type cannot hold the job */
  plan_pathfind(s, q, start, kstar, !(flags & PLAN_BACE_NO_PATHFINDER), &path);
  if (path.k < plan_smin_path(s->c, q->d, path.region, path.n)) return false;
  out->kstar = kstar;
  if (!allocate(s, q, flags, &path, path.k, out)) return false;
  if (flags & PLAN_BACE_TRIM) trim(s, q, flags, &path, out);
  return true;
}

/* Short of K* everywhere, the cheapest chain at most FALLBACK_SLACK slower than the fastest:
 * the fastest alone is blind to price (a job sent to the dearest region for a few percent). */
static int cheap_fallback(const plan_state *s, const double *iter, const double *cost,
                          double fastest) {
  int pick = -1;
  for (int r = 0; r < s->c->nregions; r++)
    if (iter[r] <= fastest * (1 + FALLBACK_SLACK) &&
        (pick < 0 || cost[r] < cost[pick] || (cost[r] == cost[pick] && iter[r] < iter[pick])))
      pick = r;
  return pick;
}

bool plan_bace_choose(const plan_state *s, const plan_queued *q, unsigned flags,
                      plan_placement *out, double *iter_s, double *cost) {
  static _Thread_local candidate best, cand;
  static _Thread_local double iter[PLAN_MAX_REGIONS], usd[PLAN_MAX_REGIONS];
  bool found = false;
  for (int r = 0; r < s->c->nregions; r++) {
    iter[r] = usd[r] = INFINITY;
    if (s->free[r] <= 0 || !from_start(s, q, flags, r, &cand)) continue;
    iter[r] = cand.iter_s;
    usd[r] = cand.cost;
    if (!found || better(flags, &cand, &best)) best = cand;
    found = true;
  }
  if (!found) /* no linked chain holds the job even on the idle cluster: grow them unchecked */
    return !(flags & PLAN_BACE_NO_PATHFINDER) && !plan_linked_can_hold(s, q) &&
           plan_bace_choose(s, q, flags | PLAN_BACE_NO_PATHFINDER, out, iter_s, cost);
  if (best.k < best.kstar && !(flags & PLAN_BACE_NO_COSTMIN)) {
    int r = cheap_fallback(s, iter, usd, best.iter_s);
    if (usd[r] < best.cost && from_start(s, q, flags, r, &cand)) best = cand;
  }
  *out = best.p;
  if (iter_s) *iter_s = best.iter_s;
  if (cost) *cost = best.cost;
  return true;
}

static bool bace_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                       plan_placement *out) {
  return plan_bace_choose(s, q, pol->flags, out, NULL, NULL);
}

const plan_policy plan_policy_bace = {
    "bace", "BACE-Pipe: priority, bandwidth-aware pathfinder, cost-min allocator", plan_bace_order,
    bace_place, 0};
const plan_policy plan_policy_bace_noprio = {"bace-noprio", "BACE-Pipe without the priority (FCFS)",
                                             plan_bace_order, bace_place, PLAN_BACE_NO_PRIORITY};
const plan_policy plan_policy_bace_nopath = {
    "bace-nopath", "BACE-Pipe without the pathfinder (cheapest regions, no link check)",
    plan_bace_order, bace_place, PLAN_BACE_NO_PATHFINDER};
const plan_policy plan_policy_bace_nocost = {
    "bace-nocost", "BACE-Pipe without the cost-min allocator (chain order, fastest path)",
    plan_bace_order, bace_place, PLAN_BACE_NO_COSTMIN};

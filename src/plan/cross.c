/* cross.c: the cross-region baselines, CR-LCF and CR-LDF: one pipeline over several regions.
 *
 * Both build a chain of regions and take each one's free GPUs in chain order until the job has
 * its K* GPUs (or all the chain offers, down to its memory floor); neither checks whether a link
 * can keep up with the stages.
 *   CR-LCF takes regions in ascending price (the hour's price), cost first.
 *   CR-LDF starts at the region with the most free GPUs and then extends the chain's tail with
 *   the region that maximises free GPUs x the bandwidth left on the link to it: greedy by
 *   capacity and bandwidth together.
 * A region joins only over a direct link to the chain's tail. Jobs go in arrival order.
 */
#include "plan/plan.h"

#include <math.h>

typedef double (*score_fn)(const plan_state *s, int tail, int r);

static double score_price(const plan_state *s, int tail, int r) {
  (void)tail;
  return -plan_price_at(&s->c->regions[r], s->now);
}

static double score_capacity(const plan_state *s, int tail, int r) {
  if (tail < 0) return s->free[r];
  size_t n = (size_t)s->c->nregions;
  double share = s->share[(size_t)tail * n + (size_t)r] + 1;
  return s->free[r] * plan_link_at(s->c, tail, r)->Bps / share;
}

/* The chain: repeatedly the best-scoring region with free GPUs, linked to the tail. */
static void chain_by(const plan_state *s, const plan_queued *q, score_fn score, plan_path *p) {
  const plan_cluster *c = s->c;
  unsigned char used[PLAN_MAX_REGIONS] = {0};
  p->n = 0;
  p->free_gpus = 0;
  while (p->free_gpus < q->d->kstar && p->n < PLAN_MAX_PATH) {
    int tail = p->n ? p->region[p->n - 1] : -1, best = -1;
    double best_score = -INFINITY;
    for (int r = 0; r < c->nregions; r++) {
      if (used[r] || s->free[r] <= 0) continue;
      if (tail >= 0 && plan_link_at(c, tail, r)->Bps <= 0) continue;
      double v = score(s, tail, r);
      if (v > best_score) {
        best = r;
        best_score = v;
      }
    }
    if (best < 0) break;
    used[best] = 1;
    p->region[p->n++] = best;
    p->free_gpus += s->free[best];
  }
  p->k = CORE_MIN(q->d->kstar, p->free_gpus);
}

static bool place_chain(const plan_state *s, const plan_queued *q, score_fn score,
                        plan_placement *out) {
  plan_path p;
  int gpus[PLAN_MAX_PATH];
  chain_by(s, q, score, &p);
  if (p.n == 0 || p.k < plan_smin_path(s->c, q->d, p.region, p.n)) return false;
  plan_alloc_inorder(s, p.region, p.n, p.k, gpus);
  return plan_build_at(s, q->job, p.region, gpus, p.n, out);
}

bool plan_cross_place(const plan_state *s, const plan_queued *q, bool by_price,
                      plan_placement *out) {
  return place_chain(s, q, by_price ? score_price : score_capacity, out);
}

static bool crlcf_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                        plan_placement *out) {
  (void)pol;
  return plan_cross_place(s, q, true, out);
}

static bool crldf_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                        plan_placement *out) {
  (void)pol;
  return plan_cross_place(s, q, false, out);
}

const plan_policy plan_policy_crlcf = {"cr-lcf", "CR-LCF: across regions in ascending price",
                                       plan_policy_fcfs, crlcf_place, 0};
const plan_policy plan_policy_crldf = {"cr-ldf",
                                       "CR-LDF: across regions, greedy by capacity and bandwidth",
                                       plan_policy_fcfs, crldf_place, 0};

/* ours.c: tern's policy: shortest run first, BACE-Pipe's pathfinder, and a choice among more
 * placements, each scored on the job's own objective (docs/PLANNING.md, "Ours").
 *
 *  1. More candidates. From every start region the pathfinder grows a chain for the K* of the
 *     start's GPU type, and the start region alone is a candidate too (up to its K*); on a chain
 *     the job may take the chain's GPUs (up to K*), or only as many as its slowest stage needs (trim: ceil(L / ceil(L / k)) run as fast), or, when the queue asks
 *     for more GPUs than are free, its energy-delay count (least K T^2, Gonzalez and Horowitz,
 *     IEEE JSSC 1996) so that a crowded cluster runs more jobs at once.
 *  2. One score for all of them: predicted run time over the least run time among them, plus
 *     the cost weight times predicted cost over the least cost among them. Both terms are
 *     ratios, so the score trades a percent of time for a percent of cost whatever the job's
 *     size, and it needs no constant fitted to a scenario. The weights are the user's
 *     objective (plan_ours_weights: 1 and 1 by default).
 *     An option more than SLOWER_AT_MOST slower than the fastest is not taken.
 *  3. Start or wait: a job short of its K* replays the next releases of the running jobs (up to
 *     LOOKAHEAD) and stays queued if a later start scores better, the wait counted in its time.
 *     It is planned again at the next event.
 */
#include "plan/plan.h"

#include <math.h>

/* Releases looked at: the next few completions decide nearly every case, and each costs a
 * whole choice (tests/unit/test_plan_scale.c times a 1,000-job workload). */
#define LOOKAHEAD 3

enum { OURS_WAIT = 16u, OURS_EDP = 32u, OURS_FLAGS = PLAN_BACE_TRIM | OURS_WAIT | OURS_EDP };

/* An option more than this much slower than the fastest is never taken, whatever it saves: a
 * floor under the JCT side of the objective (docs/PLANNING.md gives the measured choice). */
#define SLOWER_AT_MOST 0.20

static double w_time = 1, w_cost = 1;

void plan_ours_weights(double jct, double cost) {
  w_time = jct;
  w_cost = cost;
}

typedef struct option {
  plan_placement p;
  double run_s, cost; /* predicted from now (or from the release it waits for) */
  double wait_s;
  int kstar;
} option;

/* Builds the option of k GPUs over path (cost-min fill); false if it does not fit or run. */
static bool build(const plan_state *s, const plan_queued *q, const plan_path *path, int k,
                  option *o) {
  int gpus[PLAN_MAX_PATH];
  plan_alloc_costmin(s, path->region, path->n, k, gpus);
  if (!plan_build(s->c, q->job, path->region, gpus, path->n, &o->p)) return false;
  double iter = plan_predict_iter(s, q->job, &o->p);
  if (!isfinite(iter)) return false;
  o->run_s = iter * plan_job_iterations(q->job);
  o->cost = plan_predict_cost(s, q->job, &o->p, iter);
  return true;
}

typedef struct options {
  option best, o;
  double score_best;
  double tmin, cmin; /* least run time and cost over the options seen */
  int n;
} options;

/* Every option of a state into the running minima (first pass) or the score (second pass). */
typedef void (*visit_fn)(options *all, const option *o);

static void visit_minima(options *all, const option *o) {
  all->tmin = fmin(all->tmin, o->wait_s + o->run_s);
  all->cmin = fmin(all->cmin, o->cost);
}

static double score(const options *all, const option *o) {
  return w_time * (o->wait_s + o->run_s) / all->tmin + w_cost * o->cost / all->cmin;
}

static void visit_score(options *all, const option *o) {
  if (o->wait_s + o->run_s > all->tmin * (1 + SLOWER_AT_MOST)) return;
  double v = score(all, o);
  if (all->n == 0 || v < all->score_best) {
    all->best = *o;
    all->score_best = v;
  }
  all->n++;
}

/* The options of the chains from every start region, as s stands, each waiting wait_s. */
static void each_option(const plan_state *s, const plan_queued *q, unsigned flags, double wait_s,
                        options *all, visit_fn fn) {
  const plan_cluster *c = s->c;
  for (int r = 0; r < c->nregions; r++) {
    int kstar = plan_kstar_at(c, q->d, r);
    if (s->free[r] <= 0 || kstar < 1) continue;
    plan_path path, alone = {1, {r}, s->free[r], CORE_MIN(kstar, s->free[r])};
    plan_pathfind(s, q, r, kstar, true, &path);
    if (path.n > 1 && alone.k >= q->d->smin[c->regions[r].type]) {
      all->o.wait_s = wait_s; /* the start region alone, as the single-region baselines do */
      all->o.kstar = kstar;
      if (build(s, q, &alone, alone.k, &all->o)) fn(all, &all->o);
    }
    if (path.k < plan_smin_path(c, q->d, path.region, path.n)) continue;
    int layers = q->job->layers, ks[3] = {path.k, 0, 0};
    if (path.k < kstar) ks[1] = (int)ceil(layers / ceil((double)layers / path.k));
    if (s->contended && (flags & OURS_EDP) && q->d->kedp < path.k) ks[2] = q->d->kedp;
    for (int i = 0; i < 3; i++) {
      if (ks[i] < path.n || ks[i] < 1 || (i > 0 && ks[i] >= path.k)) continue;
      all->o.wait_s = wait_s;
      all->o.kstar = kstar;
      if (build(s, q, &path, ks[i], &all->o)) fn(all, &all->o);
    }
  }
}

/* The best option as s stands; false when the job fits nowhere now. */
static bool choose(const plan_state *s, const plan_queued *q, unsigned flags, options *all) {
  all->n = 0;
  all->tmin = all->cmin = INFINITY;
  each_option(s, q, flags, 0, all, visit_minima);
  if (!isfinite(all->tmin)) return false;
  each_option(s, q, flags, 0, all, visit_score);
  return all->n > 0;
}

/* Whether a start after one of the next releases scores better than now's best. */
static bool later_is_better(const plan_state *s, const plan_queued *q, unsigned flags,
                            options *all) {
  plan_state later;
  bool better = false;
  double now_score = all->score_best;
  if (s->nreleases == 0 || plan_state_init(&later, s->c, NULL) != TERN_OK) return false;
  plan_state_copy(&later, s);
  later.nreleases = 0;
  for (int i = 0; i < s->nreleases && i < LOOKAHEAD && !better; i++) {
    const plan_release *r = &s->releases[i];
    plan_state_apply(&later, r->job, r->d, r->p, -1);
    later.now = CORE_MAX(s->now, r->t);
    options then = *all; /* scored against now's minima: one scale for both */
    then.n = 0;
    each_option(&later, q, flags, later.now - s->now, &then, visit_score);
    better = then.n > 0 && then.score_best < now_score;
  }
  plan_state_free(&later);
  return better;
}

/* Shortest run first: what minimises the mean completion time of jobs waiting together. */
static void ours_order(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  (void)pol;
  (void)s;
  plan_order_shortest(q, n);
}

static bool ours_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                       plan_placement *out) {
  static _Thread_local options all;
  if (!choose(s, q, pol->flags, &all)) return false;
  *out = all.best.p;
  if (out->stages >= all.best.kstar || !(pol->flags & OURS_WAIT)) return true;
  return !later_is_better(s, q, pol->flags, &all);
}

const plan_policy plan_policy_ours_trim = {"ours-trim", "ours without EDP sizing or waiting",
                                           ours_order, ours_place, PLAN_BACE_TRIM};
const plan_policy plan_policy_ours_nowait = {"ours-nowait", "ours without start-or-wait",
                                             ours_order, ours_place, PLAN_BACE_TRIM | OURS_EDP};
const plan_policy plan_policy_ours = {
    "ours", "scored choice over more placements (trim, EDP) + start-or-wait", ours_order,
    ours_place, OURS_FLAGS};

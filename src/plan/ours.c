/* ours.c: BACE-Pipe with three ideas of ours, each measured against it in docs/PLANNING.md
 * (the policies ours-trim and ours-nowait switch the later ones off).
 *
 *  1. Trim: when a job cannot have its K* GPUs, it takes only as many as its slowest stage
 *     needs. The iteration time of a pipeline of k GPUs is set by its slowest stage, ceil(L / k)
 *     layers on homogeneous GPUs, so k = ceil(L / ceil(L / k)) GPUs run as fast and the rest
 *     would only burn energy in the bubble (PLAN_BACE_TRIM in bace.c).
 *  2. Energy-delay sizing under contention: when the queue asks for more GPUs than are free,
 *     a job is sized at the GPU count that minimises energy x delay (K T^2, the metric of
 *     Gonzalez and Horowitz, IEEE JSSC 1996) instead of K*. With m micro-batches a pipeline of
 *     K stages idles (K - 1) / (m + K - 1) of the time, so past about m stages GPUs mostly buy
 *     bubble: a crowded cluster then runs more jobs at once for less energy. An idle cluster
 *     still gives K*.
 *  3. Start or wait: a job that cannot have its (target) GPUs now looks ahead before settling
 *     for fewer. It replays the releases of the running jobs (their predicted finishes) one by
 *     one, up to LOOKAHEAD of them, asks BACE-Pipe where it would run after each, and stays
 *     queued only if a later start is predicted to finish it sooner at no higher cost; it is
 *     then planned again at the next event (GPUs and links freeing up re-plan every queued job).
 *     The lookahead is optimistic (jobs queued behind it might take the released GPUs first);
 *     re-planning at each event corrects that.
 */
#include "plan/plan.h"

#include <math.h>

/* Releases looked at: the next few completions decide nearly every case, and the cost of a
 * planning round grows with it (bench/plan measures the round). */
#define LOOKAHEAD 8

enum { OURS_WAIT = 16u, OURS_EDP = 32u, OURS_FLAGS = PLAN_BACE_TRIM | OURS_WAIT | OURS_EDP };

/* Whether a start after one of the next releases is predicted to finish the job sooner than
 * finish_now, at no higher cost than cost_now. */
static bool later_is_better(const plan_state *s, const plan_queued *q, unsigned flags,
                            double finish_now, double cost_now) {
  static _Thread_local plan_placement p;
  plan_state later;
  bool better = false;
  double iters = plan_job_iterations(q->job), iter_s, cost;
  if (s->nreleases == 0 || plan_state_init(&later, s->c, NULL) != TERN_OK) return false;
  plan_state_copy(&later, s);
  later.nreleases = 0;
  for (int i = 0; i < s->nreleases && i < LOOKAHEAD && !better; i++) {
    const plan_release *r = &s->releases[i];
    plan_state_apply(&later, r->job, r->d, r->p, -1);
    later.now = CORE_MAX(s->now, r->t);
    if (plan_bace_choose(&later, q, flags, &p, &iter_s, &cost))
      better = later.now + iters * iter_s < finish_now && cost <= cost_now;
  }
  plan_state_free(&later);
  return better;
}

static bool ours_place(const plan_policy *pol, const plan_state *s, const plan_queued *q0,
                       plan_placement *out) {
  double iter_s, cost;
  plan_demand d = *q0->d;
  plan_queued qq = *q0, *q = &qq;
  qq.d = &d;
  if (s->contended && (pol->flags & OURS_EDP)) {
    d.kstar = d.kedp;
    for (int t = 0; t < s->c->ntypes; t++)
      d.kstar_type[t] = CORE_MIN(d.kstar_type[t], d.kedp);
  }
  if (!plan_bace_choose(s, q, pol->flags, out, &iter_s, &cost)) return false;
  if (out->stages >= plan_kstar_at(s->c, &d, out->seg[0].region) || !(pol->flags & OURS_WAIT))
    return true;
  double finish = s->now + plan_job_iterations(q->job) * iter_s;
  return !later_is_better(s, q, pol->flags, finish, cost);
}

const plan_policy plan_policy_ours_trim = {"ours-trim", "ours with the trim alone", plan_bace_order,
                                           ours_place, PLAN_BACE_TRIM};
const plan_policy plan_policy_ours_nowait = {
    "ours-nowait", "ours without start-or-wait (trim + EDP sizing)", plan_bace_order, ours_place,
    PLAN_BACE_TRIM | OURS_EDP};
const plan_policy plan_policy_ours = {
    "ours", "BACE-Pipe + trimmed partial allocations + start-or-wait lookahead", plan_bace_order,
    ours_place, OURS_FLAGS};

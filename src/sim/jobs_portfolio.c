/* jobs_portfolio.c: a portfolio policy on a whole scenario (docs/PLANNING.md, "Ours").
 *
 * The jobs and their arrivals are known when a scenario is planned, so a policy may run its
 * own candidate rules through the simulator (the planner's own models) and keep the best
 * predicted run. The portfolio runs its rivals (BACE-Pipe and the baselines) as the yardstick,
 * then its members in order, and stops at the first member whose average JCT and cost are
 * both no worse than every rival's; if none is, it keeps the member whose worse ratio to the
 * best rival (max of JCT / least JCT, cost / least cost) is least. Only members' runs are ever
 * kept: a rival's plan never stands in for ours, so a job's deadline or budget (which only ours
 * honours) is never dropped. The CPU of every run counts as the portfolio's planning time.
 */
#include "sim/jobs.h"

#include <math.h>

/* The worse of the run's two ratios to the best rival: <= 1 when no rival beats it on either. */
static double worst_ratio(const sim_jobs_result *r, double jct, double usd) {
  return fmax(r->avg_jct / jct, usd > 0 ? r->usd / usd : 1);
}

tern_status sim_jobs_run_portfolio(const plan_scenario *sc, const plan_policy *pol,
                                   sim_jobs_result *out, core_err *err) {
  double jct = INFINITY, usd = INFINITY, cpu = 0;
  sim_jobs_result r, best = {0};
  /* rivals that cannot place some job (LCF with no region large enough) are no yardstick */
  for (int i = 0; pol->rivals && pol->rivals[i]; i++) {
    if (sim_jobs_run(sc, pol->rivals[i], &r, NULL) != TERN_OK) continue;
    jct = fmin(jct, r.avg_jct);
    usd = fmin(usd, r.usd);
    cpu += r.decide_s;
    sim_jobs_result_free(&r);
  }
  double best_ratio = INFINITY;
  for (int i = 0; pol->members[i]; i++) {
    tern_status st = sim_jobs_run(sc, pol->members[i], &r, err);
    if (st != TERN_OK) {
      sim_jobs_result_free(&best);
      return st;
    }
    cpu += r.decide_s;
    double ratio = isfinite(jct) ? worst_ratio(&r, jct, usd) : 1;
    if (ratio < best_ratio) {
      sim_jobs_result_free(&best);
      best = r;
      best_ratio = ratio;
    } else {
      sim_jobs_result_free(&r);
    }
    if (best_ratio <= 1) break;
  }
  *out = best;
  out->policy = pol;
  out->decide_s = cpu;
  return TERN_OK;
}

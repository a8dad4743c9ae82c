/* jobs_json.c: a simulated run as JSON: the summary, then every job's times, placement,
 * predicted and realised iteration time, energy and cost. Seconds, kWh and USD throughout.
 */
#include "sim/jobs.h"

static json_t *job_json(const plan_scenario *sc, const sim_jobs_result *r, int i) {
  const plan_job *j = &sc->jobs[i];
  const sim_job_out *o = &r->jobs[i];
  return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o}", "name", j->name,
                   "arrival_s", j->arrival_s, "start_s", o->start, "finish_s", o->finish, "jct_s",
                   o->jct, "wait_s", o->start - j->arrival_s, "iteration_s_predicted", o->iter_pred,
                   "iteration_s_mean", o->iter_mean, "energy_kwh", o->kwh, "cost_usd", o->usd,
                   "placement", plan_placement_json(&sc->c, &o->pl));
}

tern_status sim_jobs_write_json(const plan_scenario *sc, const sim_jobs_result *r, FILE *out,
                                core_err *err) {
  json_t *jobs = json_array();
  for (int i = 0; i < r->njobs; i++)
    json_array_append_new(jobs, job_json(sc, r, i));
  json_t *root = json_pack("{s:s, s:s, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:f}, s:o}",
                           "scenario", sc->source, "policy", r->policy->name, "summary",
                           "avg_jct_s", r->avg_jct, "ideal_avg_jct_s", sim_jobs_ideal_jct(sc),
                           "ideal_cost_usd", sim_jobs_ideal_cost(sc), "makespan_s", r->makespan,
                           "energy_kwh", r->kwh, "cost_usd", r->usd, "gpu_utilisation", r->gpu_util,
                           "planning_rounds", r->rounds, "planning_s", r->decide_s, "jobs", jobs);
  if (root == NULL) return core_err_set(err, TERN_ERR_NOMEM, "building the run's JSON");
  int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
  json_decref(root);
  if (rc != 0 || fputc('\n', out) == EOF)
    return core_err_set(err, TERN_ERR_SYSTEM, "writing the run's JSON failed");
  return TERN_OK;
}

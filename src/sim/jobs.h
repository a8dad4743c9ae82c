/* jobs.h: the job-queue simulator: pipeline-parallel training jobs arriving over time on a
 * geo-distributed cluster, placed by a planner policy (src/plan), sharing inter-region links.
 *
 * Event-driven (jobs.c): arrivals and completions are the events; between two events every
 * running job advances at one iteration per current iteration time, which changes whenever a
 * job starts or ends on a link it shares. A planning round runs at every event. Results: per
 * job start, finish, JCT, placement, energy and cost; in sum average JCT, makespan, energy,
 * cost, GPU utilisation, and the spans of GPUs each job held (for the Gantt chart and for
 * checking that no GPU is ever held twice). jobs_gantt.c draws the spans as SVG; jobs_json.c
 * writes the results as JSON.
 */
#ifndef TERN_SIM_JOBS_H
#define TERN_SIM_JOBS_H

#include "plan/plan.h"

#include <stdio.h>

/* GPUs first .. first+count-1 of a region, held by one job over [t0, t1]. */
typedef struct sim_span {
  int job, region, first, count;
  double t0, t1;
} sim_span;

typedef struct sim_job_out {
  double start, finish, jct;
  plan_placement pl;
  double iter_pred;           /* predicted iteration time when placed */
  int sharers[PLAN_MAX_PATH]; /* jobs on the link into each segment when placed, this one too */
  double iter_mean;           /* realised: run time / iterations */
  double kwh, usd;
} sim_job_out;

typedef struct sim_jobs_result {
  const plan_policy *policy;
  int njobs;
  sim_job_out *jobs; /* in the scenario's job order */
  int nspans;
  sim_span *spans;
  double avg_jct, makespan, kwh, usd, gpu_util;
  int rounds;      /* planning rounds run */
  double decide_s; /* CPU seconds (this thread) spent in planning rounds, a portfolio's all */
  const plan_policy *member; /* a portfolio's member whose run this is; else policy */
} sim_jobs_result;

/* Runs every job of sc to completion under pol. A job that the policy cannot place even on an
 * idle cluster is an error that names the job and the policy. */
tern_status sim_jobs_run(const plan_scenario *sc, const plan_policy *pol, sim_jobs_result *out,
                         core_err *err);
void sim_jobs_result_free(sim_jobs_result *r);
/* A portfolio policy (pol->members, docs/PLANNING.md "Ours"): runs the rivals and the members on
 * sc and gives the run of the first member no worse than every rival on both average JCT and
 * cost, else of the member whose worst ratio to the best rival is least (jobs_portfolio.c).
 * decide_s counts the planning CPU of every run it made. sim_jobs_run calls it. */
tern_status sim_jobs_run_portfolio(const plan_scenario *sc, const plan_policy *pol,
                                   sim_jobs_result *out, core_err *err);
/* Lower bounds that no policy can beat (jobs_bounds.c, docs/PLANNING.md "Bounds"): one job's
 * JCT (alone, from its arrival, on the fastest GPU type with no hop at all) and its electricity
 * cost (its least possible GPU energy at the cheapest price of any region and hour). */
double sim_job_jct_bound(const plan_cluster *c, const plan_job *j, const plan_demand *d);
double sim_job_cost_bound(const plan_cluster *c, const plan_job *j, const plan_demand *d);
/* Their mean and their sum over the scenario's jobs. */
double sim_jobs_ideal_jct(const plan_scenario *sc);
double sim_jobs_ideal_cost(const plan_scenario *sc);

/* The Gantt chart of a run as SVG: one band per region, one row per GPU, a box per job. */
tern_status sim_jobs_gantt_svg(const plan_scenario *sc, const sim_jobs_result *r, FILE *out,
                               core_err *err);
/* The run as JSON: the summary and every job's placement, times, energy and cost. */
tern_status sim_jobs_write_json(const plan_scenario *sc, const sim_jobs_result *r, FILE *out,
                                core_err *err);

#endif /* TERN_SIM_JOBS_H */

/* sim/plan.c: `tern sim plan`, the job-queue simulator of the geo planner.
 *
 *   tern sim plan SCENARIO.json [--policy P] [--json FILE] [--gantt FILE.svg]
 *       one policy: every job's wait, JCT, GPUs, regions, iteration time and cost, then the
 *       average JCT, makespan, energy, cost and GPU utilisation;
 *   tern sim plan SCENARIO.json --compare [--markdown | --csv] [--gantt-dir DIR] [--json FILE]
 *       every policy on the same scenario, one table (and a Gantt chart per policy); --csv
 *       prints only the rows, for scripts (bench/plan/run.sh);
 *   tern sim plan --list
 *       the policies.
 */
#include "tern/cmd.h"
#include "plan/plan.h"
#include "sim/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct opts {
  const char *scenario, *policy, *json, *gantt, *gantt_dir;
  bool compare, markdown, csv;
} opts;

static int write_file(const char *path, const plan_scenario *sc, const sim_jobs_result *r,
                      tern_status (*fn)(const plan_scenario *, const sim_jobs_result *, FILE *,
                                        core_err *)) {
  core_err err = {0};
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "tern sim plan: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  tern_status st = fn(sc, r, f, &err);
  if (fclose(f) != 0 && st == TERN_OK) st = core_err_set(&err, TERN_ERR_SYSTEM, "close failed");
  if (st != TERN_OK) fprintf(stderr, "tern sim plan: %s: %s\n", path, err.msg);
  return st == TERN_OK ? 0 : 1;
}

static void print_jobs(const plan_scenario *sc, const sim_jobs_result *r) {
  printf("%-18s %8s %8s %8s %5s %8s %9s  %s\n", "job", "arrive_h", "wait_h", "JCT_h", "GPUs",
         "iter_s", "cost_USD", "regions: GPUs");
  for (int i = 0; i < r->njobs; i++) {
    const sim_job_out *o = &r->jobs[i];
    const plan_job *j = &sc->jobs[i];
    printf("%-18s %8.2f %8.2f %8.2f %5d %8.2f %9.0f  ", j->name, j->arrival_s / 3600,
           (o->start - j->arrival_s) / 3600, o->jct / 3600, o->pl.stages * plan_replicas(&o->pl),
           o->iter_mean, o->usd);
    if (plan_replicas(&o->pl) > 1) printf("%d copies of: ", plan_replicas(&o->pl));
    for (int s = 0; s < o->pl.nseg; s++)
      printf("%s%s %d", s ? " -> " : "", sc->c.regions[o->pl.seg[s].region].name,
             o->pl.seg[s].gpus);
    printf("\n");
  }
  printf("\naverage JCT %.2f h (bound %.2f h), makespan %.2f h, energy %.1f MWh, electricity "
         "USD %.0f, GPU utilisation %.1f%%, %d planning rounds in %.1f ms\n",
         r->avg_jct / 3600, sim_jobs_ideal_jct(sc) / 3600, r->makespan / 3600, r->kwh / 1e3, r->usd,
         100 * r->gpu_util, r->rounds, 1e3 * r->decide_s);
}

static int run_one(const opts *o, const plan_scenario *sc) {
  const plan_policy *pol = plan_policy_find(o->policy);
  if (pol == NULL) return cmd_usage_error("sim plan", "no policy '%s' (--list)", o->policy);
  sim_jobs_result r;
  core_err err = {0};
  if (sim_jobs_run(sc, pol, &r, &err) != TERN_OK) {
    fprintf(stderr, "tern sim plan: %s: %s\n", o->scenario, err.msg);
    return 1;
  }
  printf("%s, policy %s\n\n", o->scenario, pol->name);
  print_jobs(sc, &r);
  int rc = 0;
  if (o->json) rc |= write_file(o->json, sc, &r, sim_jobs_write_json);
  if (o->gantt) rc |= write_file(o->gantt, sc, &r, sim_jobs_gantt_svg);
  sim_jobs_result_free(&r);
  return rc;
}

static double pct(double x, double ref) {
  return ref > 0 ? 100 * (x - ref) / ref : 0;
}

static void row(const opts *o, const char *name, const sim_jobs_result *r,
                const sim_jobs_result *ref) {
  if (o->csv) {
    printf("%s,%.4f,%.4f,%.2f,%.4f,%.4f,%.3f\n", name, r->avg_jct / 3600, r->makespan / 3600,
           r->usd, r->kwh / 1e3, r->gpu_util, 1e3 * r->decide_s);
    return;
  }
  const char *fmt = o->markdown
                        ? "| %s | %.1f | %+.1f%% | %.1f | %.0f | %+.1f%% | %.1f | %.0f%% | %.1f |\n"
                        : "%-12s %9.1f %8.1f%% %10.1f %10.0f %8.1f%% %9.1f %6.0f%% %8.1f\n";
  printf(fmt, name, r->avg_jct / 3600, pct(r->avg_jct, ref->avg_jct), r->makespan / 3600, r->usd,
         pct(r->usd, ref->usd), r->kwh / 1e3, 100 * r->gpu_util, 1e3 * r->decide_s);
}

/* "x: JCT -a% .. -b%, cost -c% .. -d% against the four baselines" */
static void versus(const sim_jobs_result *x, const sim_jobs_result *all, int n) {
  double jlo = 1e9, jhi = -1e9, clo = 1e9, chi = -1e9;
  for (int i = 0; i < n; i++) {
    const char *name = all[i].policy->name;
    if (strcmp(name, "lcf") && strcmp(name, "ldf") && strcmp(name, "cr-lcf") &&
        strcmp(name, "cr-ldf"))
      continue;
    double j = pct(x->avg_jct, all[i].avg_jct), c = pct(x->usd, all[i].usd);
    jlo = CORE_MIN(jlo, j);
    jhi = CORE_MAX(jhi, j);
    clo = CORE_MIN(clo, c);
    chi = CORE_MAX(chi, c);
  }
  printf("%s against the four baselines: average JCT %+.1f%% to %+.1f%%, cost %+.1f%% to %+.1f%%\n",
         x->policy->name, jlo, jhi, clo, chi);
}

static int gantt_each(const opts *o, const plan_scenario *sc, const sim_jobs_result *all, int n) {
  int rc = 0;
  if (mkdir(o->gantt_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "tern sim plan: cannot create %s: %s\n", o->gantt_dir, strerror(errno));
    return 1;
  }
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/gantt-%s.svg", o->gantt_dir, all[i].policy->name);
    rc |= write_file(path, sc, &all[i], sim_jobs_gantt_svg);
  }
  return rc;
}

static void print_table(const opts *o, const plan_scenario *sc, const sim_jobs_result *all, int n,
                        int ref) {
  if (o->csv)
    printf("policy,avg_jct_h,makespan_h,cost_usd,energy_mwh,gpu_util,planning_ms\n");
  else
    printf("%s: %d jobs, %d regions, %d GPUs; bounds: average JCT %.1f h, cost USD %.0f\n\n",
           o->scenario, sc->njobs, sc->c.nregions, plan_cluster_total_gpus(&sc->c),
           sim_jobs_ideal_jct(sc) / 3600, sim_jobs_ideal_cost(sc));
  if (o->markdown)
    printf("| policy | avg JCT (h) | vs bace | makespan (h) | cost (USD) | vs bace | energy (MWh) "
           "| GPU util | planning (ms) |\n|---|---|---|---|---|---|---|---|---|\n");
  else if (!o->csv)
    printf("%-12s %9s %9s %10s %10s %9s %9s %7s %8s\n", "policy", "avgJCT_h", "vs_bace",
           "makespan_h", "cost_USD", "vs_bace", "MWh", "GPUuse", "plan_ms");
  for (int i = 0; i < n; i++)
    row(o, all[i].policy->name, &all[i], &all[ref]);
  if (o->csv) return;
  printf("\n");
  versus(&all[ref], all, n);
  for (int i = 0; i < n; i++)
    if (strcmp(all[i].policy->name, "ours") == 0) versus(&all[i], all, n);
}

/* Every policy on sc. A policy that cannot run the scenario (a job it can place nowhere, even
 * on the idle cluster) is reported under the table with its reason, and the others go on. */
static int compare(const opts *o, const plan_scenario *sc) {
  const plan_policy *const *pols = plan_policies();
  sim_jobs_result all[32];
  char failed[32][CORE_ERR_LEN + 16];
  int n = 0, nfailed = 0, rc = 0, ref = -1;
  for (int p = 0; p < 32 && pols[p]; p++) {
    core_err err = {0};
    if (sim_jobs_run(sc, pols[p], &all[n], &err) != TERN_OK) {
      snprintf(failed[nfailed++], sizeof failed[0], "%s: %s", pols[p]->name, err.msg);
      continue;
    }
    if (strcmp(pols[p]->name, "bace") == 0 || ref < 0) ref = n;
    n++;
  }
  if (n > 0) print_table(o, sc, all, n, ref);
  for (int i = 0; i < nfailed; i++)
    fprintf(o->csv ? stderr : stdout, "%snot run: %s\n", i == 0 && !o->csv ? "\n" : "", failed[i]);
  if (n == 0) return 1;
  if (o->gantt_dir) rc |= gantt_each(o, sc, all, n);
  if (o->json) rc |= write_file(o->json, sc, &all[ref], sim_jobs_write_json);
  for (int i = 0; i < n; i++)
    sim_jobs_result_free(&all[i]);
  return rc;
}

static int list(void) {
  for (const plan_policy *const *p = plan_policies(); *p; p++)
    printf("  %-12s %s\n", (*p)->name, (*p)->summary);
  return 0;
}

static int parse(int argc, char **argv, opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = strcmp(a, "--policy") == 0      ? &o->policy
                        : strcmp(a, "--json") == 0      ? &o->json
                        : strcmp(a, "--gantt") == 0     ? &o->gantt
                        : strcmp(a, "--gantt-dir") == 0 ? &o->gantt_dir
                                                        : NULL;
    if (slot) {
      if (i + 1 >= argc) return cmd_usage_error("sim plan", "'%s' needs a value", a);
      *slot = argv[++i];
    } else if (strcmp(a, "--compare") == 0) {
      o->compare = true;
    } else if (strcmp(a, "--markdown") == 0) {
      o->markdown = true;
    } else if (strcmp(a, "--csv") == 0) {
      o->csv = true;
    } else if (a[0] != '-' && o->scenario == NULL) {
      o->scenario = a;
    } else {
      return cmd_usage_error("sim plan", "bad argument '%s'", a);
    }
  }
  if (o->scenario == NULL) return cmd_usage_error("sim plan", "a scenario file is needed");
  return 0;
}

int cmd_sim_plan(int argc, char **argv) {
  opts o = {.policy = "bace"};
  if (argc >= 2 && strcmp(argv[1], "--list") == 0) return list();
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    fprintf(argc < 2 ? stderr : stdout,
            "usage: tern sim plan SCENARIO.json [--policy P] [--json FILE] [--gantt FILE.svg]\n"
            "       tern sim plan SCENARIO.json --compare [--markdown | --csv] [--gantt-dir DIR] "
            "[--json FILE]\n       tern sim plan --list\n\n"
            "  --policy P      the policy to run (default bace; --list names them all)\n"
            "  --json FILE     the run as JSON (with --compare: BACE-Pipe's run)\n"
            "  --gantt FILE    the run's Gantt chart as SVG\n"
            "  --compare       every policy on the scenario, one table, with the JCT and cost\n"
            "                  bounds; a policy that cannot place a job is named and skipped\n"
            "  --markdown      the table as markdown;  --csv  only its rows, as CSV\n"
            "  --gantt-dir DIR a Gantt chart per policy into DIR\n"
            "  --list          the policies and what each does\n");
    return argc < 2 ? 2 : 0;
  }
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  plan_scenario sc;
  core_err err = {0};
  if (plan_scenario_load(o.scenario, &sc, &err) != TERN_OK) {
    fprintf(stderr, "tern sim plan: %s\n", err.msg);
    return 1;
  }
  rc = o.compare ? compare(&o, &sc) : run_one(&o, &sc);
  plan_scenario_free(&sc);
  return rc;
}

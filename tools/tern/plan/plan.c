/* plan.c: `tern plan`, the geo planner on the command line.
 *
 *   tern plan SCENARIO.json [--policy P] [-o PLAN.json]
 *       every job's plan as the policy decides it when the job starts: regions, GPUs per
 *       region, stages and layers, predicted iteration time, run time, energy and cost;
 *       printed; with -o FILE also written as JSON, with -o - as JSON on stdout (the table then
 *       goes to stderr); never into a file not asked for. Per job the JSON holds every stage's
 *       forward and backward seconds and every hop's bytes, bandwidth and latency as priced;
 *   tern plan gen BASE.json [--bandwidth X] [--gpus X] [--jobs N] [--seed S] [-o OUT.json]
 *   tern plan gen --random [--regions R] [--jobs N] [--seed S] [-o OUT.json]
 *   tern plan gen --links LINKS.json [--jobs N] [--seed S] [-o OUT.json]
 *       the paper's variants of a scenario, or a random one, on random links or on the regions
 *       and links of a links-only file such as data/scenarios/aws-10-regions.json (gen.c);
 *   tern plan bench [--regions R] [--jobs N] [--seed S] [--policy P] [--repeat K]
 *       one planning round over N jobs queued at once on R regions, timed.
 */
#include "tern/cmd.h"
#include "plan/plan.h"
#include "sim/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const core_err *err) {
  fprintf(stderr, "tern plan: %s%s%s\n", what, what[0] ? ": " : "", err->msg);
  return 1;
}

/* Opens path for writing ("-" is stdout). */
static FILE *open_out(const char *path) {
  return strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
}

static int close_out(FILE *f) {
  return f == stdout ? fflush(f) : fclose(f);
}

static const char *value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) return NULL;
  return argv[++*i];
}

static void print_plan_row(FILE *table, const plan_scenario *sc, const sim_jobs_result *r, int i,
                           json_t *jobs) {
  const plan_job *j = &sc->jobs[i];
  const sim_job_out *o = &r->jobs[i];
  double run = o->iter_pred * plan_job_iterations(j);
  double kwh = plan_placement_kwh(&sc->c, &o->pl, run);
  double usd = plan_placement_cost(&sc->c, &o->pl, o->start, o->start + run);
  fprintf(table, "%-18s %8.2f %8.2f %5d %8.2f %8.1f %10.0f %9.0f  ", j->name, j->arrival_s / 3600,
          o->start / 3600, o->pl.stages * plan_replicas(&o->pl), o->iter_pred, run / 3600, kwh,
          usd);
  if (plan_replicas(&o->pl) > 1) fprintf(table, "%d copies of: ", plan_replicas(&o->pl));
  for (int s = 0; s < o->pl.nseg; s++) {
    char layers[256];
    plan_layers_text(&o->pl, s, layers, sizeof layers);
    fprintf(table, "%s%s %d (%s)", s ? " -> " : "", sc->c.regions[o->pl.seg[s].region].name,
            o->pl.seg[s].gpus, layers);
  }
  fprintf(table, "\n");
  json_array_append_new(
      jobs,
      json_pack("{s:s, s:f, s:f, s:o, s:o, s:{s:f, s:f, s:f, s:f}}", "name", j->name, "arrival_s",
                j->arrival_s, "start_s", o->start, "placement", plan_placement_json(&sc->c, &o->pl),
                "pipeline", plan_pipeline_json(&sc->c, j, &o->pl, o->sharers), "predicted",
                "iteration_s", o->iter_pred, "run_s", run, "energy_kwh", kwh, "cost_usd", usd));
}

static int write_plan_json(const plan_scenario *sc, const sim_jobs_result *r, json_t *jobs,
                           const char *path) {
  /* member: the portfolio's member whose plan this is (the policy itself when not a portfolio) */
  json_t *root =
      json_pack("{s:s, s:s, s:s, s:{s:f, s:f, s:f}, s:o}", "scenario", sc->source, "policy",
                r->policy->name, "member", r->member->name, "assumptions", "mfu", sc->c.mfu, "pue",
                sc->c.pue, "memory_usable_fraction", sc->c.mem_fraction, "jobs", jobs);
  FILE *f = open_out(path);
  int rc = f && json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) == 0 ? 0 : 1;
  if (f && (fputc('\n', f) == EOF || close_out(f) != 0)) rc = 1;
  json_decref(root);
  if (rc)
    fprintf(stderr, "tern plan: cannot write %s\n", path);
  else if (f != stdout)
    fprintf(stderr, "tern plan: wrote %s\n", path);
  return rc;
}

static int plan_scenario_cmd(int argc, char **argv) {
  const char *path = NULL, *out = NULL, *policy = "bace";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--policy") == 0 && (policy = value(argc, argv, &i))) continue;
    if (strcmp(argv[i], "-o") == 0 && (out = value(argc, argv, &i))) continue;
    if (argv[i][0] == '-' || path) return cmd_usage_error("plan", "unexpected '%s'", argv[i]);
    path = argv[i];
  }
  const plan_policy *pol = policy ? plan_policy_find(policy) : NULL;
  if (path == NULL || pol == NULL)
    return cmd_usage_error("plan", path ? "no policy '%s' (tern sim plan --list)" : "%s",
                           path ? (policy ? policy : "") : "a scenario file is needed");
  plan_scenario sc;
  sim_jobs_result r;
  core_err err = {0};
  if (plan_scenario_load(path, &sc, &err) != TERN_OK) return fail("", &err);
  if (sim_jobs_run(&sc, pol, &r, &err) != TERN_OK) {
    plan_scenario_free(&sc);
    return fail(path, &err);
  }
  /* the table goes to stdout, or to stderr when the plan JSON does (-o -) */
  FILE *table = out && strcmp(out, "-") == 0 ? stderr : stdout;
  fprintf(table, "%s: %d jobs on %d regions, policy %s%s%s (MFU %.2f, PUE %.2f, memory %.0f%%)\n\n",
          path, sc.njobs, sc.c.nregions, pol->name, r.member != pol ? ", kept " : "",
          r.member != pol ? r.member->name : "", sc.c.mfu, sc.c.pue, 100 * sc.c.mem_fraction);
  fprintf(table, "%-18s %8s %8s %5s %8s %8s %10s %9s  %s\n", "job", "arrive_h", "start_h", "GPUs",
          "iter_s", "run_h", "energy_kWh", "cost_USD",
          "regions in pipeline order: GPUs (stages x layers)");
  json_t *jobs = json_array();
  for (int i = 0; i < sc.njobs; i++)
    print_plan_row(table, &sc, &r, i, jobs);
  int rc = 0;
  if (out)
    rc = write_plan_json(&sc, &r, jobs, out);
  else
    json_decref(jobs);
  sim_jobs_result_free(&r);
  plan_scenario_free(&sc);
  return rc;
}

static int write_scenario(const plan_scenario *sc, const char *out) {
  core_err err = {0};
  FILE *f = open_out(out);
  if (f == NULL) {
    fprintf(stderr, "tern plan gen: cannot write %s\n", out);
    return 1;
  }
  tern_status st = plan_scenario_write(sc, f, &err);
  if (close_out(f) != 0 && st == TERN_OK) st = TERN_ERR_SYSTEM;
  if (st != TERN_OK) fprintf(stderr, "tern plan gen: %s: %s\n", out, err.msg);
  return st == TERN_OK ? 0 : 1;
}

typedef struct gen_args {
  const char *base, *out, *links;
  plan_variant v;
  long regions, jobs;
  bool random;
} gen_args;

/* A variant's scale factor, 1/1000 to 1000: wide past the paper's variants, and a bound on
 * every figure the variant scales. */
static bool factor(const char *s, double *out) {
  char *end;
  *out = strtod(s, &end);
  return end != s && *end == '\0' && *out >= 1e-3 && *out <= 1e3;
}

/* One "--name value" of `tern plan gen`; false when either is bad. */
static bool gen_option(gen_args *g, const char *name, const char *val) {
  if (strcmp(name, "-o") == 0) return (g->out = val), true;
  if (strcmp(name, "--links") == 0) return (g->links = val), true;
  if (strcmp(name, "--bandwidth") == 0) return factor(val, &g->v.bw_scale);
  if (strcmp(name, "--gpus") == 0) return factor(val, &g->v.gpu_scale);
  if (strcmp(name, "--jobs") == 0) return core_parse_int(val, 1, 1000000, &g->jobs);
  if (strcmp(name, "--microbatches") == 0) {
    long m;
    return core_parse_int(val, 1, 1 << 20, &m) && (g->v.microbatches = (int)m, true);
  }
  if (strcmp(name, "--regions") == 0) return core_parse_int(val, 1, PLAN_MAX_REGIONS, &g->regions);
  if (strcmp(name, "--seed") == 0) {
    char *end;
    g->v.seed = strtoull(val, &end, 10);
    return *end == '\0';
  }
  return false;
}

static int gen_cmd(int argc, char **argv) {
  gen_args g = {.out = "-", .v = {1, 1, 0, 1, false, 0}, .regions = 6, .jobs = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    if (strcmp(a, "--random") == 0) {
      g.random = true;
    } else if (strcmp(a, "--hourly") == 0) {
      g.v.hourly = true;
    } else if (a[0] != '-' && g.base == NULL) {
      g.base = a;
    } else if ((val = value(argc, argv, &i)) == NULL || !gen_option(&g, a, val)) {
      return cmd_usage_error("plan gen", "bad argument '%s'", a);
    }
  }
  if (g.random + (g.base != NULL) + (g.links != NULL) != 1)
    return cmd_usage_error("plan gen", "give one of: a base scenario, --random, --links FILE");
  const char *base_path = g.base, *links = g.links, *out = g.out;
  plan_variant v = g.v;
  int jobs = g.jobs ? (int)g.jobs : 8;
  v.njobs = (int)g.jobs;
  plan_scenario base, sc;
  plan_cluster mesh;
  core_err err = {0};
  tern_status st;
  if (g.random) {
    st = plan_gen_random((int)g.regions, jobs, v.seed, &sc, &err);
  } else if (links) {
    if (plan_links_load(links, &mesh, &err) != TERN_OK) return fail("", &err);
    st = plan_gen_on_links(&mesh, jobs, v.seed, &sc, &err);
    if (st == TERN_OK)
      snprintf(sc.source, sizeof sc.source,
               "random pools and %d jobs on the links of %.180s, "
               "seed %llu",
               sc.njobs, links, (unsigned long long)v.seed);
    plan_cluster_free(&mesh);
  } else {
    if (plan_scenario_load(base_path, &base, &err) != TERN_OK) return fail("", &err);
    if (v.njobs == 0) v.njobs = base.njobs;
    st = plan_gen_variant(&base, &v, &sc, &err);
    plan_scenario_free(&base);
  }
  if (st != TERN_OK) return fail("gen", &err);
  int rc = write_scenario(&sc, out);
  plan_scenario_free(&sc);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One planning round over every job of sc queued at once; its time in seconds. */
static double time_round(const plan_scenario *sc, const plan_policy *pol, plan_queued *q,
                         plan_placement *out, unsigned char *placed, int *count) {
  plan_state st;
  if (plan_state_init(&st, &sc->c, NULL) != TERN_OK) return -1;
  uint64_t t0 = core_now_ns();
  *count = plan_decide(pol, &st, q, sc->njobs, out, placed);
  double s = (core_now_ns() - t0) / 1e9;
  plan_state_free(&st);
  return s;
}

static int bench_rounds(const plan_scenario *sc, const plan_policy *pol, long repeat) {
  plan_queued *q = calloc((size_t)sc->njobs, sizeof *q);
  plan_demand *d = calloc((size_t)sc->njobs, sizeof *d);
  plan_placement *out = calloc((size_t)sc->njobs, sizeof *out);
  unsigned char *placed = calloc((size_t)sc->njobs, 1);
  double times[64];
  int count = 0, rc = 1;
  if (!q || !d || !out || !placed) goto fail;
  uint64_t t0 = core_now_ns();
  if (!plan_jobs_demand(&sc->c, sc->jobs, sc->njobs, d, NULL, NULL)) goto fail;
  for (int i = 0; i < sc->njobs; i++)
    q[i] = (plan_queued){&sc->jobs[i], &d[i], i};
  double demand_s = (core_now_ns() - t0) / 1e9;
  for (long k = 0; k < repeat; k++)
    if ((times[k] = time_round(sc, pol, q, out, placed, &count)) < 0) goto fail;
  qsort(times, (size_t)repeat, sizeof *times, cmp_double);
  printf("policy %s: one planning round over %d queued jobs on %d regions: median %.1f ms, "
         "max %.1f ms (%ld runs); %d placed, %d left queued; demands (K*, memory floors) "
         "computed once in %.1f ms\n",
         pol->name, sc->njobs, sc->c.nregions, 1e3 * times[repeat / 2], 1e3 * times[repeat - 1],
         repeat, count, sc->njobs - count, 1e3 * demand_s);
  rc = 0;
fail:
  free(q);
  free(d);
  free(out);
  free(placed);
  return rc;
}

static int bench_cmd(int argc, char **argv) {
  long regions = 50, jobs = 1000, repeat = 5;
  unsigned long long seed = 1;
  const char *policy = "bace";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = value(argc, argv, &i);
    if (val == NULL) return cmd_usage_error("plan bench", "'%s' needs a value", a);
    if (strcmp(a, "--regions") == 0 && core_parse_int(val, 1, PLAN_MAX_REGIONS, &regions)) continue;
    if (strcmp(a, "--jobs") == 0 && core_parse_int(val, 1, 1000000, &jobs)) continue;
    if (strcmp(a, "--repeat") == 0 && core_parse_int(val, 1, 64, &repeat)) continue;
    if (strcmp(a, "--seed") == 0) {
      seed = strtoull(val, NULL, 10);
      continue;
    }
    if (strcmp(a, "--policy") == 0) {
      policy = val;
      continue;
    }
    return cmd_usage_error("plan bench", "bad argument '%s %s'", a, val);
  }
  const plan_policy *pol = plan_policy_find(policy);
  if (pol == NULL) return cmd_usage_error("plan bench", "no policy '%s'", policy);
  plan_scenario sc;
  core_err err = {0};
  if (plan_gen_random((int)regions, (int)jobs, seed, &sc, &err) != TERN_OK)
    return fail("bench", &err);
  for (int i = 0; i < sc.njobs; i++)
    sc.jobs[i].arrival_s = 0;
  int rc = bench_rounds(&sc, pol, repeat);
  plan_scenario_free(&sc);
  return rc;
}

static void usage(FILE *out) {
  fprintf(
      out,
      "usage: tern plan SCENARIO.json [--policy P] [-o PLAN.json | -o -]\n"
      "       tern plan gen BASE.json [--bandwidth X] [--gpus X] [--jobs N] [--seed S] [--hourly]\n"
      "                     [--microbatches M] [-o OUT]\n"
      "       tern plan gen --random [--regions R] [--jobs N] [--seed S] [-o OUT]\n"
      "       tern plan gen --links LINKS.json [--jobs N] [--seed S] [-o OUT]\n"
      "       tern plan bench [--regions 50] [--jobs 1000] [--seed 1] [--policy bace] "
      "[--repeat 5]\n\n"
      "  --policy P        the policy that plans (tern sim plan --list; default bace)\n"
      "  -o FILE           write the plan as JSON to FILE (per job: placement, every stage's\n"
      "                    forward/backward seconds, every hop's bytes, bandwidth, latency);\n"
      "                    -o - writes it to stdout and the table to stderr. Without -o only\n"
      "                    the table is printed: no file is written\n"
      "  gen: --bandwidth X and --gpus X scale links and pools (1/1000 to 1000), --jobs N sets\n"
      "       the job count (drawing more from the base), --seed S, --hourly redraws prices as\n"
      "       daily curves, --microbatches M sets every job's, --random makes a cluster of\n"
      "       --regions R, --links starts from a links-only file; -o OUT (default stdout)\n"
      "  bench: one planning round over --jobs queued at once on --regions, --repeat times\n\n"
      "Places pipeline-parallel training jobs across regions by bandwidth and electricity\n"
      "price (BACE-Pipe, baselines and ours; docs/PLANNING.md). `tern sim plan` compares them.\n");
}

int cmd_plan(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "gen") == 0) return gen_cmd(argc - 1, argv + 1);
  if (strcmp(argv[1], "bench") == 0) return bench_cmd(argc - 1, argv + 1);
  return plan_scenario_cmd(argc, argv);
}

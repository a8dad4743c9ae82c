/* test_sim_jobs.c: the job-queue simulator. Hand-computed runs: a job alone, a job queued
 * behind another, two jobs slowing each other on a shared link and the survivor speeding up
 * again; a job no policy can place is an error, not a hang. Then properties over generated
 * scenarios for every policy: every job finishes after it arrives, no region has more GPUs held
 * than it owns at any instant and no GPU is held twice, and the cost is the sum of power x PUE x
 * time x price recomputed from the GPU spans. And the JSON and SVG writers' output reads back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"
#include "sim/jobs.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#define REGION(n, t, g, p)                                                                         \
  "{\"name\": \"" n "\", \"gpu\": \"" t "\", \"gpus\": " #g ", \"price_usd_per_kwh\": " #p         \
  ", \"intra_bandwidth_gbps\": 100}"

static void load2(plan_scenario *sc, const char *regions, const char *links, double t0, double t1) {
  char text[8192];
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [%s], \"links\": [%s], \"jobs\": [" PT_JOB "," PT_JOB
           "], " PT_ASSUME "}",
           regions, links, "first", 16384.0 * 1000, t0, "second", 16384.0 * 1000, t1);
  pt_load(text, sc);
}

static void alone_then_queued(void **state) {
  (void)state;
  plan_scenario sc;
  sim_jobs_result r;
  load2(&sc, REGION("A", "fast", 12, 0.25), "", 0, 10);
  assert_int_equal(sim_jobs_run(&sc, plan_policy_find("lcf"), &r, NULL), TERN_OK);
  /* 1000 iterations at K* = 12 alone; the second finds no GPU free and waits for the first */
  plan_demand d;
  assert_true(plan_job_demand(&sc.c, &sc.jobs[0], &d, NULL));
  double run = 1000 * d.iter_kstar;
  assert_true(r.jobs[0].start == 0 && fabs(r.jobs[0].finish - run) < 1e-6);
  assert_true(fabs(r.jobs[1].start - run) < 1e-6 && fabs(r.jobs[1].finish - 2 * run) < 1e-6);
  assert_true(fabs(r.avg_jct - (run + (2 * run - 10)) / 2) < 1e-6);
  assert_true(fabs(r.makespan - 2 * run) < 1e-6);
  assert_true(fabs(r.gpu_util - 1.0) < 1e-9);
  /* 12 GPUs x 500 W x PUE 1 x run s at USD 0.25 per kWh, twice */
  assert_true(fabs(r.usd - 2 * 12 * 0.5 * run / 3600 * 0.25) < 1e-9);
  assert_true(fabs(r.kwh - 2 * 12 * 0.5 * run / 3600) < 1e-9);
  sim_jobs_result_free(&r);
  plan_scenario_free(&sc);
}

/* A test policy: both jobs on 6 GPUs of A then 6 of B, whatever is free. */
static void fcfs(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  (void)pol;
  (void)s;
  plan_order_fcfs(q, n);
}

static bool pinned(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                   plan_placement *out) {
  (void)pol;
  return plan_build(s->c, q->job, (int[]){0, 1}, (int[]){6, 6}, 2, out);
}

static void shared_link(void **state) {
  (void)state;
  plan_scenario sc;
  sim_jobs_result r;
  const plan_policy pin = {"pinned", "test", fcfs, pinned, 0};
  double t1 = 5.0;
  load2(&sc, REGION("A", "fast", 12, 0.1) "," REGION("B", "fast", 12, 0.1),
        "{\"a\": \"A\", \"b\": \"B\", \"latency_ms\": 10, \"bandwidth_gbps\": 1}", 0, t1);
  assert_int_equal(sim_jobs_run(&sc, &pin, &r, NULL), TERN_OK);
  plan_placement p;
  assert_true(pinned(NULL, &(plan_state){.c = &sc.c}, &(plan_queued){&sc.jobs[0], NULL, 0}, &p));
  int one[4] = {0, 1, 1, 0}, two[4] = {0, 2, 2, 0};
  double T1 = plan_iter_time(&sc.c, &sc.jobs[0], &p, one, 0);
  double T2 = plan_iter_time(&sc.c, &sc.jobs[0], &p, two, 0);
  assert_true(T2 > 1.5 * T1); /* the 1 Gbit/s link is the bottleneck: halving it shows */
  /* first: alone until t1, then shares; second: shares until the first ends, then alone */
  double f0 = t1 + (1000 - t1 / T1) * T2;
  double f1 = f0 + (1000 - (f0 - t1) / T2) * T1;
  assert_true(fabs(r.jobs[0].finish - f0) < 1e-6 * f0);
  assert_true(fabs(r.jobs[1].start - t1) < 1e-9);
  assert_true(fabs(r.jobs[1].finish - f1) < 1e-6 * f1);
  assert_true(fabs(r.jobs[1].iter_pred - T2) < 1e-12); /* predicted with the sharing it met */
  sim_jobs_result_free(&r);
  plan_scenario_free(&sc);
}

/* A policy that never places a job: the simulator's refusal names it. */
static bool never(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                  plan_placement *out) {
  (void)pol, (void)s, (void)q, (void)out;
  return false;
}

/* 8 GiB GPUs: the job needs 3 (test_plan_job.c), and two regions of 2 hold it only together,
 * over a slow link the pathfinder refuses (1 Gbit/s, 50 ms) and over a fast one: every policy
 * places it across both regions (LCF and LDF as CR-LCF and CR-LDF, BACE-Pipe and ours on chains
 * grown without the link check), none refuses it. A policy that never places is refused by
 * name. */
static void cross_region_only(void **state) {
  (void)state;
  static const char *const links[] = {
      "{\"a\": \"A\", \"b\": \"B\", \"latency_ms\": 50, \"bandwidth_gbps\": 1}",
      "{\"a\": \"A\", \"b\": \"B\", \"latency_ms\": 10, \"bandwidth_gbps\": 10}"};
  for (size_t l = 0; l < CORE_ARRAY_LEN(links); l++) {
    plan_scenario sc;
    sim_jobs_result r;
    core_err err = {0};
    load2(&sc, REGION("A", "slow", 2, 0.1) "," REGION("B", "slow", 2, 0.2), links[l], 0, 0);
    for (const plan_policy *const *p = plan_policies(); *p; p++) {
      tern_status st = sim_jobs_run(&sc, *p, &r, &err);
      if (st != TERN_OK) fprintf(stderr, "%s: %s\n", (*p)->name, err.msg);
      assert_int_equal(st, TERN_OK);
      for (int j = 0; j < 2; j++)
        assert_int_equal(r.jobs[j].pl.nseg, 2);
      sim_jobs_result_free(&r);
    }
    const plan_policy none = {"never", "test", fcfs, never, 0};
    assert_int_equal(sim_jobs_run(&sc, &none, &r, &err), TERN_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "policy 'never' cannot place job 'first' even on the idle"));
    assert_non_null(strstr(err.msg, "at least 3"));
    plan_scenario_free(&sc);
  }
}

/* Ten years in, jobs of years a micro-second apart: every event still retires a job or admits
 * one, for every policy, and the whole run is over at once. */
static void far_times_end(void **state) {
  (void)state;
  char text[8192];
  plan_scenario sc;
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [" REGION("A", "fast", 12, 0.25) "," REGION(
               "B", "slow", 24, 0.1) "], \"links\": [{\"a\": \"A\", \"b\": \"B\", "
                                     "\"latency_ms\": 10000, \"bandwidth_gbps\": 0.001}], "
                                     "\"jobs\": [" PT_JOB "," PT_JOB "," PT_JOB "], " PT_ASSUME "}",
           "a", 1e13, 3e8, "b", 1e13, 3e8 + 1e-6, "c", 1.0, 3e8 + 2e-6);
  pt_load(text, &sc);
  clock_t t0 = clock();
  for (const plan_policy *const *p = plan_policies(); *p; p++) {
    sim_jobs_result r;
    core_err err = {0};
    assert_int_equal(sim_jobs_run(&sc, *p, &r, &err), TERN_OK);
    for (int i = 0; i < 3; i++)
      assert_true(isfinite(r.jobs[i].finish) && r.jobs[i].finish >= sc.jobs[i].arrival_s &&
                  isfinite(r.jobs[i].usd));
    sim_jobs_result_free(&r);
  }
  assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
  plan_scenario_free(&sc);
}

static int cmp_edge(const void *a, const void *b) {
  const double *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]); /* releases (-) before takes (+) at one instant */
}

/* No instant at which a region's held GPUs exceed its pool; no GPU in two spans at once. */
static void check_capacity(const plan_scenario *sc, const sim_jobs_result *r) {
  double *edges = malloc((size_t)r->nspans * 2 * 2 * sizeof *edges);
  assert_non_null(edges);
  for (int g = 0; g < sc->c.nregions; g++) {
    int n = 0;
    for (int i = 0; i < r->nspans; i++) {
      const sim_span *s = &r->spans[i];
      if (s->region != g) continue;
      assert_true(s->first >= 0 && s->first + s->count <= sc->c.regions[g].gpus);
      assert_true(s->t1 >= s->t0);
      edges[2 * n] = s->t0, edges[2 * n + 1] = s->count, n++;
      edges[2 * n] = s->t1, edges[2 * n + 1] = -s->count, n++;
      for (int k = 0; k < i; k++) { /* the same GPU, overlapping in time */
        const sim_span *o = &r->spans[k];
        bool gpus =
            o->region == g && o->first < s->first + s->count && s->first < o->first + o->count;
        assert_false(gpus && o->t0 < s->t1 && s->t0 < o->t1);
      }
    }
    qsort(edges, (size_t)n, 2 * sizeof *edges, cmp_edge);
    double held = 0;
    for (int e = 0; e < n; e++) {
      held += edges[2 * e + 1];
      assert_true(held <= sc->c.regions[g].gpus);
    }
  }
  free(edges);
}

/* Cost and energy from the spans alone: GPUs x W x PUE x hours x the region's (flat) price. */
static void check_cost(const plan_scenario *sc, const sim_jobs_result *r) {
  double usd = 0, kwh = 0;
  for (int i = 0; i < r->nspans; i++) {
    const sim_span *s = &r->spans[i];
    const plan_region *g = &sc->c.regions[s->region];
    double e = s->count * sc->c.types[g->type].power_w * sc->c.pue * (s->t1 - s->t0) / 3.6e6;
    kwh += e;
    usd += e * g->price[0];
  }
  assert_true(fabs(usd - r->usd) <= 1e-9 * usd);
  assert_true(fabs(kwh - r->kwh) <= 1e-9 * kwh);
}

static void check_jobs(const plan_scenario *sc, const sim_jobs_result *r) {
  double sum = 0, usd = 0;
  for (int i = 0; i < sc->njobs; i++) {
    const sim_job_out *o = &r->jobs[i];
    assert_true(isfinite(o->finish) && o->start >= sc->jobs[i].arrival_s && o->finish > o->start);
    assert_true(fabs(o->jct - (o->finish - sc->jobs[i].arrival_s)) < 1e-9 * o->finish);
    int held = 0; /* its spans hold exactly its placement's GPUs, from start to finish */
    for (int k = 0; k < r->nspans; k++)
      if (r->spans[k].job == i) {
        held += r->spans[k].count;
        assert_true(r->spans[k].t0 == o->start && r->spans[k].t1 == o->finish);
      }
    assert_int_equal(held, o->pl.stages * plan_replicas(&o->pl)); /* every DP copy */
    sum += o->jct;
    usd += o->usd;
  }
  assert_true(fabs(sum / sc->njobs - r->avg_jct) < 1e-9 * r->avg_jct);
  assert_true(fabs(usd - r->usd) < 1e-9 * usd);
  assert_true(r->gpu_util > 0 && r->gpu_util <= 1 + 1e-12);
}

static void properties(void **state) {
  (void)state;
  int waited = 0; /* the crowded seeds must make jobs queue, or the checks prove little */
  for (uint64_t seed = 1; seed <= 6; seed++) {
    plan_scenario sc;
    assert_int_equal(plan_gen_random(6, 30, seed, &sc, NULL), TERN_OK);
    if (seed % 2 == 0) /* crowd the cluster: half the GPUs, so that jobs queue */
      for (int g = 0; g < sc.c.nregions; g++)
        sc.c.regions[g].gpus = sc.c.regions[g].gpus / 2 + 8;
    for (const plan_policy *const *p = plan_policies(); *p; p++) {
      sim_jobs_result r;
      core_err err = {0};
      tern_status st = sim_jobs_run(&sc, *p, &r, &err);
      if (st != TERN_OK)
        fprintf(stderr, "seed %llu %s: %s\n", (unsigned long long)seed, (*p)->name, err.msg);
      assert_int_equal(st, TERN_OK);
      check_jobs(&sc, &r);
      check_capacity(&sc, &r);
      check_cost(&sc, &r);
      for (int i = 0; i < sc.njobs; i++)
        waited += r.jobs[i].start > sc.jobs[i].arrival_s;
      sim_jobs_result_free(&r);
    }
    plan_scenario_free(&sc);
  }
  assert_true(waited > 100);
}

static void writers(void **state) {
  (void)state;
  plan_scenario sc;
  sim_jobs_result r;
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(plan_gen_random(5, 12, 7, &sc, NULL), TERN_OK);
  snprintf(sc.jobs[0].name, sizeof sc.jobs[0].name, "a<b&\"c\"");
  assert_int_equal(sim_jobs_run(&sc, plan_policy_find("bace"), &r, NULL), TERN_OK);
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(sim_jobs_write_json(&sc, &r, f, NULL), TERN_OK);
  fclose(f);
  json_error_t jerr;
  json_t *root = json_loadb(buf, len, 0, &jerr);
  assert_non_null(root);
  json_t *jobs = json_object_get(root, "jobs");
  assert_int_equal(json_array_size(jobs), 12);
  double jct = json_real_value(json_object_get(json_object_get(root, "summary"), "avg_jct_s"));
  assert_true(fabs(jct - r.avg_jct) < 1e-6 * jct);
  json_t *pl = json_object_get(json_array_get(jobs, 0), "placement");
  assert_int_equal(json_integer_value(json_object_get(pl, "stages")), r.jobs[0].pl.stages);
  json_decref(root);
  free(buf);
  f = open_memstream(&buf, &len);
  assert_int_equal(sim_jobs_gantt_svg(&sc, &r, f, NULL), TERN_OK);
  fclose(f);
  int rects = 0;
  for (const char *p = buf; (p = strstr(p, "<title>")); p++)
    rects++;
  assert_int_equal(rects, r.nspans); /* one box per span */
  assert_non_null(strstr(buf, "a&lt;b&amp;&quot;c&quot;"));
  assert_null(strstr(buf, "a<b"));
  assert_non_null(strstr(buf, "</svg>"));
  free(buf);
  sim_jobs_result_free(&r);
  plan_scenario_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(alone_then_queued), cmocka_unit_test(shared_link),
      cmocka_unit_test(cross_region_only), cmocka_unit_test(far_times_end),
      cmocka_unit_test(properties),        cmocka_unit_test(writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

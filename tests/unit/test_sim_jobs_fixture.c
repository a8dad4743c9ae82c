/* test_sim_jobs_fixture.c: BACE-Pipe's qualitative findings, checked on the six-region fixture
 * (data/scenarios/geo-six-regions.json) and on its crowded variants (seed 1), as far as they
 * hold under our models; docs/PLANNING.md has the full tables and says where they do not:
 *  - the cross-region paradox: CR-LDF's average JCT is worse than LDF's;
 *  - BACE-Pipe beats the cross-region baselines on average JCT on the fixture, and every
 *    baseline on the crowded variants (GPUs x0.5, 24 jobs);
 *  - BACE-Pipe costs less than LDF, CR-LCF and CR-LDF on the fixture;
 *  - each ablation loses what the paper says: without the pathfinder JCT and cost, without the
 *    cost-min allocator cost, without the priority JCT (where jobs queue: 24 jobs);
 *  - ours costs less than BACE-Pipe on the fixture and is no slower (ours against every policy
 *    on a generated family: bench/plan/family.py).
 * This file is also built into plan_links_alone (tests/CMakeLists.txt) from the objects of
 * core, plan and sim alone: that it links at all proves plan and sim need no network code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/plan.h"
#include "sim/jobs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef TERN_SOURCE_DIR
#error "TERN_SOURCE_DIR: the repository, for data/scenarios (tests/CMakeLists.txt sets it)"
#endif

typedef struct outcome {
  double jct, usd;
} outcome;

static plan_scenario base;

static int setup(void **state) {
  (void)state;
  core_err err = {0};
  if (plan_scenario_load(TERN_SOURCE_DIR "/data/scenarios/geo-six-regions.json", &base, &err) ==
      TERN_OK)
    return 0;
  fprintf(stderr, "%s\n", err.msg);
  return -1;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&base);
  return 0;
}

static outcome run(const plan_scenario *sc, const char *policy) {
  sim_jobs_result r;
  core_err err = {0};
  tern_status st = sim_jobs_run(sc, plan_policy_find(policy), &r, &err);
  if (st != TERN_OK) fprintf(stderr, "%s: %s\n", policy, err.msg);
  assert_int_equal(st, TERN_OK);
  outcome o = {r.avg_jct, r.usd};
  sim_jobs_result_free(&r);
  return o;
}

static void variant(double bw, double gpus, int jobs, plan_scenario *out) {
  plan_variant v = {bw, gpus, jobs, 1};
  assert_int_equal(plan_gen_variant(&base, &v, out, NULL), TERN_OK);
}

static void fixture(void **state) {
  (void)state;
  outcome bace = run(&base, "bace"), ldf = run(&base, "ldf"), crlcf = run(&base, "cr-lcf");
  outcome crldf = run(&base, "cr-ldf"), nopath = run(&base, "bace-nopath");
  outcome nocost = run(&base, "bace-nocost"), noprio = run(&base, "bace-noprio");
  outcome ours = run(&base, "ours");
  assert_true(crldf.jct > ldf.jct); /* the cross-region paradox */
  assert_true(bace.jct < crlcf.jct && bace.jct < crldf.jct);
  assert_true(bace.usd < ldf.usd && bace.usd < crlcf.usd && bace.usd < crldf.usd);
  assert_true(nopath.jct > bace.jct && nopath.usd > bace.usd);
  assert_true(nocost.usd > bace.usd);
  assert_true(noprio.jct >= bace.jct); /* equal: 8 jobs 10 minutes apart never queue together */
  assert_true(ours.usd < bace.usd && ours.jct <= bace.jct); /* 7% cheaper, 1% faster */
}

static void bounds(void **state) {
  (void)state;
  /* one GPU type: the bounds hold for every policy, and they are close enough to bite */
  double jct = sim_jobs_ideal_jct(&base), usd = sim_jobs_ideal_cost(&base), best = INFINITY;
  for (const plan_policy *const *p = plan_policies(); *p; p++) {
    outcome o = run(&base, (*p)->name);
    assert_true(o.jct >= jct && o.usd >= usd);
    best = fmin(best, o.jct);
  }
  /* 1.41 x for the best: the bound admits DP x PP up to PLAN_MAX_REPLICAS copies on the
   * cluster's GPUs, more than 8 jobs arriving 10 minutes apart ever get */
  assert_true(best < 1.5 * jct);
}

static void crowded(void **state) {
  (void)state;
  static const struct {
    double bw, gpus;
    int jobs;
  } v[] = {{1, 0.5, 8}, {1, 1, 24}};
  for (size_t i = 0; i < CORE_ARRAY_LEN(v); i++) {
    plan_scenario sc;
    variant(v[i].bw, v[i].gpus, v[i].jobs, &sc);
    outcome bace = run(&sc, "bace");
    static const char *baselines[] = {"lcf", "ldf", "cr-lcf", "cr-ldf"};
    for (size_t b = 0; b < CORE_ARRAY_LEN(baselines); b++)
      assert_true(bace.jct < run(&sc, baselines[b]).jct);
    assert_true(run(&sc, "cr-ldf").jct > run(&sc, "ldf").jct);
    if (v[i].jobs == 24) assert_true(run(&sc, "bace-noprio").jct > bace.jct);
    plan_scenario_free(&sc);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixture),
      cmocka_unit_test(crowded),
      cmocka_unit_test(bounds),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

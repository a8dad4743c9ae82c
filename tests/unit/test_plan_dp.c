/* test_plan_dp.c: data parallelism across pipeline replicas (DP x PP, src/plan/dp.c): the ring
 * all-reduce equals tern's collective cost model's closed form (src/coll), a DP x PP
 * placement's iteration time is its copies' pipeline on m / D micro-batches plus the slowest
 * stage's all-reduce, its GPUs and cost count every copy, and ours chooses D > 1 where the
 * objective pays for speed, D = 1 where it pays for GPU-hours too (docs/PLANNING.md, "DP x PP"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/sched.h"
#include "plan_testing.h"

#include <math.h>

static void ring_matches_coll(void **state) {
  (void)state;
  /* the cross-host model: full duplex, no per-message o, no reduction cost */
  const int ns[] = {2, 3, 4, 8, 16};
  const double alphas[] = {0, 1e-3, 0.05}, bps[] = {1.25e9, 12.5e9};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof alphas / sizeof alphas[0]; b++)
      for (size_t k = 0; k < sizeof bps / sizeof bps[0]; k++) {
        coll_net_model m = {.alpha = alphas[b], .beta = 1 / bps[k]};
        size_t count = (size_t)ns[a] * 1000003; /* whole blocks: no rounding in coll's */
        double coll = coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RING, ns[a], count, 2, &m);
        double ours = plan_ring_allreduce_s(ns[a], 2.0 * (double)count, alphas[b], bps[k]);
        assert_true(fabs(ours - coll) <= 1e-12 * coll);
      }
  assert_true(plan_ring_allreduce_s(1, 1e9, 1, 1) == 0);
  assert_true(isinf(plan_ring_allreduce_s(2, 1e9, 0, 0)));
}

/* One region of 64 fast GPUs (100 Gbit/s inside), one 12-layer job with 8 micro-batches: K* is
 * 12 and one copy fits on one GPU. */
static plan_scenario sc;
static plan_demand d;

static int setup(void **state) {
  (void)state;
  char text[4096];
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [{\"name\": \"big\", \"gpu\": \"fast\", \"gpus\": 64, "
           "\"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 100}], \"links\": [], "
           "\"jobs\": [" PT_JOB "], " PT_ASSUME "}",
           "job", 1e9, 0.0);
  pt_load(text, &sc);
  assert_true(plan_job_demand(&sc.c, &sc.jobs[0], &d, NULL));
  assert_int_equal(d.kstar, 12);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&sc);
  return 0;
}

static void iteration_and_cost(void **state) {
  (void)state;
  const plan_job *j = &sc.jobs[0];
  int r = 0, k = 12;
  plan_placement p;
  assert_true(plan_build(&sc.c, j, &r, &k, 1, &p));
  assert_int_equal(plan_replicas(&p), 1);
  double one = plan_iter_time(&sc.c, j, &p, NULL, 0),
         usd1 = plan_placement_cost(&sc.c, &p, 0, 3600);
  assert_true(plan_dp_allreduce_s(&sc.c, j, &p) == 0);
  static double fb[PLAN_MAX_STAGES], lat[PLAN_MAX_STAGES], beta[PLAN_MAX_STAGES];
  int S = plan_pipeline_times(&sc.c, j, &p, NULL, 0, fb, lat, beta);
  for (int D = 2; D <= 8; D *= 2) {
    p.replicas = D;
    assert_int_equal(plan_dp_microbatches(j, &p), 8 / D);
    /* one layer a stage: each stage all-reduces one layer's bf16 gradients among D copies */
    double grads = 1.2e9 / 12 * 2, ar = 2.0 * (D - 1) * grads / D / (100e9 / 8);
    assert_true(fabs(plan_dp_allreduce_s(&sc.c, j, &p) - ar) < 1e-12);
    double want = plan_schedule_time(PLAN_1F1B, S, 8 / D, fb, lat, beta) + ar;
    assert_true(fabs(plan_iter_time(&sc.c, j, &p, NULL, 0) - want) < 1e-12 * want);
    assert_true(fabs(plan_placement_cost(&sc.c, &p, 0, 3600) - D * usd1) < 1e-9 * usd1);
  }
  /* 2 copies: (4 + 11) beats and an all-reduce against (8 + 11) beats: faster */
  p.replicas = 2;
  assert_true(plan_iter_time(&sc.c, j, &p, NULL, 0) < one);
}

/* ours on the idle region: with run time alone as the objective it runs copies (faster), with
 * the default objective one pipeline (the copies hold D x the GPUs for less than D x speed). */
static void ours_chooses_replicas(void **state) {
  (void)state;
  const plan_policy *ours = plan_policy_find("ours"), *nodp = plan_policy_find("ours-nodp");
  assert_non_null(ours);
  assert_non_null(nodp);
  plan_state st;
  assert_int_equal(plan_state_init(&st, &sc.c, NULL), TERN_OK);
  plan_job jct_only = sc.jobs[0];
  jct_only.objective = (plan_objective){.w_jct = 1, .w_cost = 0, .given = true};
  plan_queued q = {&jct_only, &d, 0};
  plan_placement p;
  assert_true(ours->place(ours, &st, &q, &p));
  assert_true(plan_replicas(&p) > 1);
  assert_true(plan_replicas(&p) * p.stages <= 64);
  double fast = plan_iter_time(&sc.c, &sc.jobs[0], &p, NULL, 0);
  assert_true(nodp->place(nodp, &st, &q, &p));
  assert_int_equal(plan_replicas(&p), 1);
  assert_true(fast < plan_iter_time(&sc.c, &sc.jobs[0], &p, NULL, 0));
  q.job = &sc.jobs[0]; /* the default objective */
  assert_true(ours->place(ours, &st, &q, &p));
  assert_int_equal(plan_replicas(&p), 1);
  plan_state_free(&st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ring_matches_coll),
      cmocka_unit_test_setup_teardown(iteration_and_cost, setup, teardown),
      cmocka_unit_test_setup_teardown(ours_chooses_replicas, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

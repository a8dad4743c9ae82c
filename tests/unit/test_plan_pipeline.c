/* test_plan_pipeline.c: the layer split and the 1F1B iteration time against cases worked by
 * hand: even and speed-proportional splits, a split that memory binds, one inter-region link
 * alone and shared, and the hop time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"

#include <math.h>

static plan_scenario sc;
static double f; /* forward+backward of one layer on a slow GPU: 3 x 4.139e11 / 5e13 s */

static int setup(void **state) {
  (void)state;
  char text[4096];
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": ["
           "{\"name\": \"A\", \"gpu\": \"slow\", \"gpus\": 8, \"price_usd_per_kwh\": 0.1, "
           "\"intra_bandwidth_gbps\": 25},"
           "{\"name\": \"B\", \"gpu\": \"fast\", \"gpus\": 8, \"price_usd_per_kwh\": 0.2, "
           "\"intra_bandwidth_gbps\": 25}],"
           "\"links\": [{\"a\": \"A\", \"b\": \"B\", \"latency_ms\": 50, \"bandwidth_gbps\": 1}],"
           "\"jobs\": [" PT_JOB "], " PT_ASSUME "}",
           "j", 1e6, 0.0);
  pt_load(text, &sc);
  f = 3 * plan_job_layer_fwd_flops(&sc.jobs[0]) / 5e13;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&sc);
  return 0;
}

static void place(plan_placement *p, int ga, int gb) {
  int regions[2] = {0, 1}, gpus[2] = {ga, gb};
  assert_true(plan_build(&sc.c, &sc.jobs[0], regions, gpus, 2, p));
}

static void even_split(void **state) {
  (void)state;
  plan_placement p;
  int r = 0, k = 4;
  assert_true(plan_build(&sc.c, &sc.jobs[0], &r, &k, 1, &p));
  assert_int_equal(p.stages, 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(p.layers[i], 3);
  double x = 4194304.0 / 3.125e9; /* 25 Gbit/s intra-region */
  /* 4 stages, 8 micro-batches: the slowest stage's 3 f a beat, plus 1F1B's worst cycle: 3
   * stages pass 3 micro-batches per round trip 9 f + 4 x, 4 x / 3 over 3 f a beat, for the 5
   * beats after their warm-up */
  assert_true(fabs(plan_iter_time(&sc.c, &sc.jobs[0], &p, NULL, 0) -
                   (12 * f + 6 * x + 7 * 3 * f + 20 * x / 3)) < 1e-12);
}

static void memory_binds(void **state) {
  (void)state;
  plan_placement p;
  int r = 0, k = 2;
  /* two 8 GiB stages hold 5 + 5 layers (test_plan_job.c): 12 do not fit */
  assert_false(plan_build(&sc.c, &sc.jobs[0], &r, &k, 1, &p));
  sc.jobs[0].layers = 14;
  sc.jobs[0].params = 1.4e9; /* still 1e8 a layer */
  k = 3;
  /* caps 5, 5, 5: the bottleneck is 5 layers and the surplus one comes off the front stage */
  assert_true(plan_build(&sc.c, &sc.jobs[0], &r, &k, 1, &p));
  assert_int_equal(p.layers[0], 4);
  assert_int_equal(p.layers[1], 5);
  assert_int_equal(p.layers[2], 5);
  sc.jobs[0].layers = 12;
  sc.jobs[0].params = 1.2e9;
}

static void speed_split_and_link(void **state) {
  (void)state;
  plan_placement p;
  place(&p, 1, 1);
  /* the fast GPU is twice as fast: 4 layers on A, 8 on B, both stages 4 f */
  assert_int_equal(p.layers[0], 4);
  assert_int_equal(p.layers[1], 8);
  assert_true(fabs(plan_stage_fb_max(&sc.c, &sc.jobs[0], &p) - 4 * f) < 1e-15);
  /* the link: 4,194,304 bytes at 1.25e8 bytes/s = 33.55 ms, plus 50 ms latency each way. The two
   * stages pass 2 micro-batches per round trip: each of the 6 beats after the warm-up is half
   * a round trip, 4 f + latency + beta */
  double beta = 4194304.0 / 1.25e8, fill = 4 * f + 8 * f / 2 + 2 * (0.05 + beta);
  assert_true(fabs(plan_iter_time(&sc.c, &sc.jobs[0], &p, NULL, 0) -
                   (fill + 7 * 4 * f + 6 * (0.05 + beta))) < 1e-12);
  assert_true(fabs(plan_hop_time(&sc.c, &sc.jobs[0], 0, 1, 1) - (0.05 + beta)) < 1e-15);
  /* four jobs on the link: a quarter each, 134 ms a micro-batch, slower than the stages */
  int share[4] = {0, 3, 3, 0};
  double fill4 = 4 * f + 8 * f / 2 + 2 * (0.05 + 4 * beta);
  assert_true(fabs(plan_iter_time(&sc.c, &sc.jobs[0], &p, share, 1) -
                   (fill4 + 7 * 4 * beta + 6 * (4 * f + 0.05))) < 1e-12);
  assert_true(fabs(plan_hop_time(&sc.c, &sc.jobs[0], 0, 1, 4) - (0.05 + 4 * beta)) < 1e-15);
}

static void uneven_stages(void **state) {
  (void)state;
  plan_placement p;
  place(&p, 3, 2);
  /* 3 slow + 2 fast: tau = 2 f lets A take 2 each (6) and B 4 each (8) = 14 >= 12; the two
   * surplus layers come off the stages that finish last (A's, front first) */
  int want[5] = {1, 1, 2, 4, 4};
  for (int i = 0; i < 5; i++)
    assert_int_equal(p.layers[i], want[i]);
}

static void no_link(void **state) {
  (void)state;
  plan_link saved = sc.c.links[1];
  sc.c.links[1].Bps = sc.c.links[2].Bps = 0;
  plan_placement p;
  place(&p, 1, 1);
  assert_true(isinf(plan_iter_time(&sc.c, &sc.jobs[0], &p, NULL, 0)));
  sc.c.links[1] = sc.c.links[2] = saved;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(even_split),
      cmocka_unit_test(memory_binds),
      cmocka_unit_test(speed_split_and_link),
      cmocka_unit_test(uneven_stages),
      cmocka_unit_test(no_link),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

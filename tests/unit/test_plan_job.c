/* test_plan_job.c: the job model against figures computed by hand, and K* and the memory floor
 * found where the arithmetic says they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"

#include <limits.h>
#include <math.h>

static plan_scenario sc;

static int setup(void **state) {
  (void)state;
  char text[2048];
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [{\"name\": \"A\", \"gpu\": \"slow\", \"gpus\": 16, "
           "\"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 25}], \"jobs\": [" PT_JOB
           "], " PT_ASSUME "}",
           "j", 1638500.0, 0.0);
  pt_load(text, &sc);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&sc);
  return 0;
}

static void flops_bytes_memory(void **state) {
  (void)state;
  const plan_job *j = &sc.jobs[0];
  /* 2048 tokens x (2 x 1e8 parameters per layer + 2 x 1024 x 1024 for attention) */
  assert_true(plan_job_layer_fwd_flops(j) == 2048.0 * (2e8 + 2.0 * 1024 * 1024));
  assert_true(plan_job_boundary_bytes(j) == 4194304.0);    /* 2 x 1024 x 1024 x 2 bytes */
  assert_true(plan_job_layer_static_bytes(j) == 1.6e9);    /* 16 bytes x 1e8 */
  assert_true(plan_job_layer_act_bytes(j) == 4194304.0);   /* the layer's input, s b h x 2 */
  assert_true(plan_job_stage_work_bytes(j) == 71303168.0); /* 34 x 1024 x 2 x 1024 */
  /* 1,638,500 tokens at 8 x 2 x 1024 = 16,384 per iteration: 100.006 -> 101 iterations */
  assert_true(plan_job_iterations(j) == 101);
}

static void demand(void **state) {
  (void)state;
  plan_demand d;
  core_err err = {0};
  assert_true(plan_job_demand(&sc.c, &sc.jobs[0], &d, &err));
  /* 8 GiB - 71.3 MB of working set = 8,518,631,424 bytes per stage; a layer with 8 micro-batches
   * in flight takes 1.6e9 + 8 x 4,194,304 = 1,633,554,432: 5 layers. Two stages hold 5 + 5 < 12,
   * three hold 15: the floor is 3. */
  assert_int_equal(d.smin[0], 3);
  /* T(S) = 12 f + 2 (S-1) x + 7 beat(S) with f = 3 x 4.139e11 / 5e13 = 24.83 ms and the intra
   * hop x = 4,194,304 / 3.125e9 = 1.34 ms falls with S down to one layer a stage. At S = 12 the
   * beat is f, plus 1F1B's worst cycle (pipeline.c): three stages at the end pass 3 micro-batches
   * per round trip 3 f + 4 x, 4 x / 3 a beat over f, for the 5 beats after their warm-up. */
  assert_int_equal(d.kstar, 12);
  double f = 3 * plan_job_layer_fwd_flops(&sc.jobs[0]) / 5e13, x = 4194304.0 / 3.125e9;
  assert_true(fabs(d.iter_kstar - (12 * f + 22 * x + 7 * f + 20 * x / 3)) < 1e-12);
  assert_true(fabs(d.stage_fb_s - f) < 1e-15);
  assert_true(fabs(d.demand_Bps - 4194304.0 / f) < 1e-3);
  assert_true(d.work_flops == 3 * plan_job_layer_fwd_flops(&sc.jobs[0]) * 12 * 8 * 101);
  /* K T^2 is least where the bubble stops paying: S = 6 (2 layers) beats 12 and 4 */
  assert_int_equal(d.kedp, 6);
}

static void fits_nowhere(void **state) {
  (void)state;
  plan_job big = sc.jobs[0];
  big.params = 1.2e11; /* 16 bytes x 1e10 parameters a layer: no 8 GiB GPU holds one layer */
  plan_demand d;
  core_err err = {0};
  assert_false(plan_job_demand(&sc.c, &big, &d, &err));
  assert_non_null(strstr(err.msg, "fits nowhere"));
  core_err_clear(&err);
  sc.c.regions[0].gpus = 2; /* the floor is 3 GPUs and the cluster has 2 */
  assert_false(plan_job_demand(&sc.c, &sc.jobs[0], &d, &err));
  assert_non_null(strstr(err.msg, "needs at least 3 GPUs"));
  sc.c.regions[0].gpus = 16;
}

static void reference_holds_the_job(void **state) {
  (void)state;
  plan_scenario mixed;
  char text[4096];
  /* 100 slow 8 GiB GPUs cannot hold a layer of 1.6e10 bytes; 5 fast 80 GiB ones hold 5 layers
   * each: the floor is 3 fast GPUs, and K* is searched on them, among at most the 5 there are */
  snprintf(
      text, sizeof text,
      "{" PT_TYPES ", \"regions\": [{\"name\": \"S\", \"gpu\": \"slow\", \"gpus\": 100, "
      "\"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 25}, {\"name\": \"F\", "
      "\"gpu\": \"fast\", \"gpus\": 5, \"price_usd_per_kwh\": 0.2, "
      "\"intra_bandwidth_gbps\": 25}], \"jobs\": [{\"name\": \"j\", \"params_b\": 12, "
      "\"layers\": 12, \"hidden\": 1024, \"seq_len\": 1024, \"microbatch_sequences\": 2, "
      "\"microbatches\": 8, \"tokens\": 1e9, \"arrival_s\": 0, \"dtype_bytes\": 2}], " PT_ASSUME
      "}");
  pt_load(text, &mixed);
  plan_demand d;
  assert_true(plan_job_demand(&mixed.c, &mixed.jobs[0], &d, NULL));
  assert_int_equal(d.smin[0], INT_MAX);
  assert_int_equal(d.smin[1], 3);
  assert_int_equal(d.kstar, 4); /* 5 would still make 3-layer stages, with one hop more */
  assert_true(isfinite(d.iter_kstar) && d.demand_Bps > 0);
  plan_scenario_free(&mixed);
}

/* The least iteration time over every stage count on region r, searched here from scratch. */
static int kstar_by_hand(const plan_scenario *m, int r, double *iter) {
  static plan_placement p;
  int best = 0;
  double t_best = INFINITY;
  for (int k = 1; k <= m->jobs[0].layers; k++) {
    if (!plan_build(&m->c, &m->jobs[0], &r, &k, 1, &p)) continue;
    double t = plan_iter_time(&m->c, &m->jobs[0], &p, NULL, 0);
    if (t < t_best) t_best = t, best = k;
  }
  *iter = t_best;
  return best;
}

/* On a mixed cluster each GPU type has its own K*, and jobs of one shape share one search. */
static void kstar_per_type(void **state) {
  (void)state;
  plan_scenario m;
  char text[4096];
  /* slow GPUs over a slow fabric (1 Gbit/s): hops cost more than the bubble saves; fast ones
   * over 400 Gbit/s: one layer a stage */
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [{\"name\": \"S\", \"gpu\": \"slow\", \"gpus\": 100, "
           "\"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 1}, {\"name\": \"F\", "
           "\"gpu\": \"fast\", \"gpus\": 20, \"price_usd_per_kwh\": 0.2, "
           "\"intra_bandwidth_gbps\": 400}], \"jobs\": [" PT_JOB "," PT_JOB "], " PT_ASSUME "}",
           "a", 1e9, 0.0, "b", 2e9, 5.0);
  pt_load(text, &m);
  plan_demand d[2], alone;
  assert_true(plan_jobs_demand(&m.c, m.jobs, 2, d, NULL, NULL));
  double ts, tf;
  int ks = kstar_by_hand(&m, 0, &ts), kf = kstar_by_hand(&m, 1, &tf);
  assert_true(ks != kf); /* the types disagree, so one K* for both would be wrong for one */
  assert_int_equal(d[0].kstar_type[0], ks);
  assert_int_equal(d[0].kstar_type[1], kf);
  assert_int_equal(plan_kstar_at(&m.c, &d[0], 1), kf);
  assert_int_equal(d[0].kstar, ks); /* the reference: the largest pool, S */
  /* the fastest one region runs it, whichever type K* was searched on (ours-fastest's floor) */
  assert_true(tf < ts && fabs(d[0].iter_kstar - ts) <= 1e-12 * ts);
  assert_true(fabs(d[0].iter_fast - tf) <= 1e-12 * tf);
  assert_true(plan_job_demand(&m.c, &m.jobs[1], &alone, NULL));
  assert_memory_equal(&alone, &d[1], sizeof alone); /* the shared search is the same search */
  assert_true(fabs(d[1].work_flops / plan_job_iterations(&m.jobs[1]) -
                   d[0].work_flops / plan_job_iterations(&m.jobs[0])) < 1e-6 * d[0].work_flops);
  plan_scenario_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(flops_bytes_memory), cmocka_unit_test(demand),
      cmocka_unit_test(fits_nowhere),       cmocka_unit_test(reference_holds_the_job),
      cmocka_unit_test(kstar_per_type),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_plan_objective.c: a job's own objective (docs/PLANNING.md, "Objectives"). The loader
 * reads `objective` {weight_jct, weight_cost, deadline_h, budget_usd}, refuses what is out of
 * range or unknown with the file, line and field, and writes it back. ours honours it: a job
 * that weighs cost starts at the cheap hour of the day, and with a deadline that the wait would
 * break it starts at once; under a budget it takes the cheaper, slower region that the default
 * objective passes over; a job that states nothing starts at once whatever the hour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"
#include "sim/jobs.h"

#include <math.h>

/* Six dear hours (USD 1 per kWh), then eighteen cheap ones (USD 0.1). */
#define DEAR_THEN_CHEAP "[1, 1, 1, 1, 1, 1, " CHEAP18 "]"
#define CHEAP18                                                                                    \
  "0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1"

/* One region of 12 fast GPUs with the day's prices above; one job (about 20 minutes alone,
 * arriving at 0) with the objective given ("" for none). */
static void one_job(plan_scenario *sc, const char *objective) {
  char text[4096];
  snprintf(
      text, sizeof text,
      "{" PT_TYPES ", \"regions\": [{\"name\": \"A\", \"gpu\": \"fast\", \"gpus\": 12, "
      "\"price_usd_per_kwh\": " DEAR_THEN_CHEAP ", \"intra_bandwidth_gbps\": 100}], "
      "\"links\": [], \"jobs\": [{\"name\": \"j\", \"params_b\": 1.2, \"layers\": 12, "
      "\"hidden\": 1024, \"seq_len\": 1024, \"microbatch_sequences\": 2, "
      "\"microbatches\": 8, \"tokens\": 8e7, \"arrival_s\": 0, \"dtype_bytes\": 2%s}], " PT_ASSUME
      "}",
      objective);
  pt_load(text, sc);
}

static sim_jobs_result run(const plan_scenario *sc, const char *policy) {
  sim_jobs_result r;
  core_err err = {0};
  tern_status st = sim_jobs_run(sc, plan_policy_find(policy), &r, &err);
  if (st != TERN_OK) fprintf(stderr, "%s: %s\n", policy, err.msg);
  assert_int_equal(st, TERN_OK);
  return r;
}

static void loaded_and_written(void **state) {
  (void)state;
  plan_scenario sc, back;
  one_job(&sc, ", \"objective\": {\"weight_jct\": 0.5, \"weight_cost\": 2, \"deadline_h\": 36, "
               "\"budget_usd\": 120}");
  const plan_objective *ob = &sc.jobs[0].objective;
  assert_true(ob->given && ob->w_jct == 0.5 && ob->w_cost == 2);
  assert_true(ob->deadline_s == 36 * 3600.0 && ob->budget_usd == 120);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(plan_scenario_write(&sc, f, NULL), TERN_OK);
  fclose(f);
  pt_load(buf, &back);
  const plan_objective *again = &back.jobs[0].objective;
  assert_true(again->given && again->w_jct == 0.5 && again->w_cost == 2);
  assert_true(fabs(again->deadline_s - ob->deadline_s) < 1e-6 && again->budget_usd == 120);
  free(buf);
  plan_scenario_free(&back);
  plan_scenario_free(&sc);
  one_job(&sc, ""); /* none given: the default, and nothing written */
  assert_false(sc.jobs[0].objective.given);
  assert_true(sc.jobs[0].objective.w_jct == 1 && sc.jobs[0].objective.w_cost == 1);
  plan_scenario_free(&sc);
}

static void refused(void **state) {
  (void)state;
  static const struct {
    const char *objective, *says;
  } bad[] = {
      {"{\"deadline_h\": 0}", "jobs[0].objective.deadline_h: 0 is out of range: valid is 0.001"},
      {"{\"deadline_h\": 1e9}", "jobs[0].objective.deadline_h: 1e+09 is out of range"},
      {"{\"budget_usd\": -5}", "jobs[0].objective.budget_usd: -5 is out of range"},
      {"{\"weight_jct\": 0, \"weight_cost\": 0}", "weight_jct and weight_cost are both 0"},
      {"{\"weight_cost\": \"high\"}", "weight_cost: expected a number, got a string"},
      {"{\"deadline\": 3}", "unknown field \"deadline\": valid are weight_jct, weight_cost"},
      {"[1, 2]", "jobs[0].objective: expected an object, got an array"},
  };
  for (size_t i = 0; i < CORE_ARRAY_LEN(bad); i++) {
    char text[4096], field[256];
    snprintf(field, sizeof field, ", \"objective\": %s", bad[i].objective);
    snprintf(text, sizeof text,
             "{" PT_TYPES ", \"regions\": [{\"name\": \"A\", \"gpu\": \"fast\", \"gpus\": 12, "
             "\"price_usd_per_kwh\": 0.1, \"intra_bandwidth_gbps\": 100}], \"links\": [], "
             "\"jobs\": [{\"name\": \"j\", \"params_b\": 1.2, \"layers\": 12, \"hidden\": 1024, "
             "\"seq_len\": 1024, \"microbatch_sequences\": 2, \"microbatches\": 8, \"tokens\": "
             "1e9, \"arrival_s\": 0, \"dtype_bytes\": 2%s}], " PT_ASSUME "}",
             field);
    plan_scenario sc;
    core_err err = {0};
    assert_int_not_equal(plan_scenario_parse("o.json", text, strlen(text), &sc, &err), TERN_OK);
    if (strstr(err.msg, bad[i].says) == NULL) fprintf(stderr, "got: %s\n", err.msg);
    assert_non_null(strstr(err.msg, bad[i].says));
    assert_non_null(strstr(err.msg, "o.json:1:"));
  }
}

static void cheaper_hour(void **state) {
  (void)state;
  plan_scenario sc;
  /* nothing stated: the job starts at once, in the dear hours */
  one_job(&sc, "");
  sim_jobs_result now = run(&sc, "ours-online");
  double run_s = now.jobs[0].finish - now.jobs[0].start;
  assert_true(now.jobs[0].start == 0);
  assert_true(run_s > 600 && run_s < 3 * 3600); /* it would end in the dear hours */
  plan_scenario_free(&sc);
  /* cost weighs most: it waits for hour 6, when the price drops tenfold */
  one_job(&sc, ", \"objective\": {\"weight_jct\": 0.01, \"weight_cost\": 1}");
  for (const char *const *p = (const char *const[]){"ours-online", "ours", NULL}; *p; p++) {
    sim_jobs_result later = run(&sc, *p);
    assert_true(fabs(later.jobs[0].start - 6 * 3600) < 1e-6);
    assert_true(later.usd < 0.2 * now.usd);
    sim_jobs_result_free(&later);
  }
  plan_scenario_free(&sc);
  /* the same with a deadline of 2 hours, which the wait would break: it starts at once */
  one_job(&sc, ", \"objective\": {\"weight_jct\": 0.01, \"weight_cost\": 1, \"deadline_h\": 2}");
  sim_jobs_result kept = run(&sc, "ours-online");
  assert_true(kept.jobs[0].start == 0 && kept.jobs[0].finish <= 2 * 3600);
  sim_jobs_result_free(&kept);
  plan_scenario_free(&sc);
  sim_jobs_result_free(&now);
}

/* Region A: 12 fast GPUs at USD 0.12; region B: 12 slow ones at USD 0.1 (the slow GPU does half
 * the FLOP/s at half the power, so B costs less per FLOP, and runs the job about twice as long). */
static void two_regions(plan_scenario *sc, const char *objective) {
  char text[4096];
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": [{\"name\": \"A\", \"gpu\": \"fast\", \"gpus\": 12, "
           "\"price_usd_per_kwh\": 0.12, \"intra_bandwidth_gbps\": 100}, {\"name\": \"B\", "
           "\"gpu\": \"slow\", \"gpus\": 12, \"price_usd_per_kwh\": 0.1, "
           "\"intra_bandwidth_gbps\": 100}], \"links\": [], \"jobs\": [{\"name\": \"j\", "
           "\"params_b\": 1.2, \"layers\": 12, \"hidden\": 1024, \"seq_len\": 1024, "
           "\"microbatch_sequences\": 2, \"microbatches\": 8, \"tokens\": 1.6e10, "
           "\"arrival_s\": 0, \"dtype_bytes\": 2%s}], " PT_ASSUME "}",
           objective);
  pt_load(text, sc);
}

static void budget(void **state) {
  (void)state;
  plan_scenario sc;
  two_regions(&sc, "");
  sim_jobs_result fast = run(&sc, "ours-online"), cheap = run(&sc, "lcf");
  assert_int_equal(fast.jobs[0].pl.seg[0].region, 0); /* the default objective takes A */
  assert_int_equal(cheap.jobs[0].pl.seg[0].region, 1);
  assert_true(cheap.usd < fast.usd && cheap.avg_jct > 1.5 * fast.avg_jct);
  plan_scenario_free(&sc);
  /* a budget between the two: B, the slower, is the one that keeps it */
  char objective[128];
  double budget = (cheap.usd + fast.usd) / 2;
  snprintf(objective, sizeof objective, ", \"objective\": {\"budget_usd\": %.17g}", budget);
  two_regions(&sc, objective);
  sim_jobs_result kept = run(&sc, "ours-online");
  assert_true(kept.usd <= budget);
  assert_int_equal(kept.jobs[0].pl.seg[0].region, 1);
  sim_jobs_result_free(&kept);
  plan_scenario_free(&sc);
  sim_jobs_result_free(&fast);
  sim_jobs_result_free(&cheap);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(loaded_and_written),
      cmocka_unit_test(refused),
      cmocka_unit_test(cheaper_hour),
      cmocka_unit_test(budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

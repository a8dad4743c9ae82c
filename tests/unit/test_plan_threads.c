/* test_plan_threads.c (label tsan): the planner keeps nothing between calls outside its state's
 * memo (docs/PLANNING.md, "State, reentrancy"). Four threads plan the same scenario at once, two
 * with ours-online and two with BACE-Pipe, each on its own state: every run equals the same
 * policy's run made alone before, to the last bit, and a run made after another in the same
 * thread equals one made first (what the portfolio relies on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/plan.h"
#include "sim/jobs.h"

#include <pthread.h>

static plan_scenario sc;

typedef struct task {
  const char *policy;
  double jct, usd;
  tern_status st;
} task;

static void *plan_one(void *arg) {
  task *t = arg;
  sim_jobs_result r;
  t->st = sim_jobs_run(&sc, plan_policy_find(t->policy), &r, NULL);
  if (t->st == TERN_OK) {
    t->jct = r.avg_jct;
    t->usd = r.usd;
    sim_jobs_result_free(&r);
  }
  return NULL;
}

static void at_once(void **state) {
  (void)state;
  assert_int_equal(plan_gen_random(6, 16, 3, &sc, NULL), TERN_OK);
  task alone[2] = {{.policy = "ours-online"}, {.policy = "bace"}};
  for (int i = 0; i < 2; i++) {
    plan_one(&alone[i]);
    assert_int_equal(alone[i].st, TERN_OK);
  }
  task again = {.policy = "ours-online"}; /* after BACE-Pipe's run in this thread */
  plan_one(&again);
  assert_true(again.jct == alone[0].jct && again.usd == alone[0].usd);
  task t[4] = {
      {.policy = "ours-online"}, {.policy = "bace"}, {.policy = "ours-online"}, {.policy = "bace"}};
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&th[i], NULL, plan_one, &t[i]), 0);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(t[i].st, TERN_OK);
    assert_true(t[i].jct == alone[i % 2].jct && t[i].usd == alone[i % 2].usd);
  }
  plan_scenario_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(at_once)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

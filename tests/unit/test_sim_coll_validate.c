/* test_sim_coll_validate.c: the simulator against this machine (label nosan: its second test
 * measures, which sanitizers distort).
 *
 * The agreement is held on a recorded validation, not on timings taken during the test:
 * bench/scale/run.sh keeps the output of `tern sim coll validate` (its calibration line and the
 * times it measured on this machine, 2 to 8 ranks over TCP) in bench/scale/results/
 * validation.md, and `validate --from` simulates those cells again. So the simulator of this
 * commit is held to this machine's measurements, and a test on a busy CI machine measures no
 * noise. What it holds it to is what it achieves (docs/SCALE.md): the mean error within the
 * issue's 25%, every cell with no more ranks than cores within 30%, every cell within 70% (on 2
 * cores, 4 to 8 ranks run up to three times as slow as the model of shared cores says).
 *
 * The live path (measure, calibrate, simulate, compare) is run too, on one small cell, for what
 * it produces rather than for how close: timings on a shared machine are the benchmark's
 * business (bench/scale/run.sh), not a test's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* A validation's table, as the command printed it. */
typedef struct table {
  int rows, small_rows_off; /* cells; cells of 2 ranks off by more than 30% */
  double mean;              /* from "# N cells, K within T%, mean |error| M%, worst W%" */
  int status;               /* the command's exit status */
} table;

static table run_validate(const char *args) {
  const char *bin = getenv("TERN_TEST_BIN");
  assert_non_null(bin);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s/tern' sim coll validate %s", bin, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  table t = {.mean = -1};
  char line[512];
  while (fgets(line, sizeof line, p)) {
    fputs(line, stderr);
    int n;
    char kind[32], algo[32];
    size_t bytes;
    double measured, simulated;
    if (sscanf(line, "| %d | %31s | %31s | %zu | %lf | %lf |", &n, kind, algo, &bytes, &measured,
               &simulated) == 6) {
      assert_true(measured > 0 && simulated > 0 && isfinite(simulated));
      t.rows++;
      t.small_rows_off += n == 2 && fabs(simulated - measured) > 0.30 * measured;
    }
    const char *m = strstr(line, "mean |error| ");
    if (m) t.mean = atof(m + strlen("mean |error| "));
  }
  int ws = pclose(p);
  assert_true(WIFEXITED(ws));
  t.status = WEXITSTATUS(ws);
  return t;
}

static void test_simulated_near_recorded_measurements(void **state) {
  (void)state;
  table t = run_validate("--from '" TERN_SOURCE_DIR "/bench/scale/results/validation.md' "
                         "--tolerance 0.7");
  assert_int_equal(t.status, 0);        /* every cell within 70% */
  assert_true(t.rows >= 5 * 3 * 2 * 3); /* ranks x collectives x algorithms x sizes */
  assert_int_equal(t.small_rows_off, 0);
  assert_true(t.mean >= 0 && t.mean <= 25);
}

static void test_recorded_file_that_is_not_one_is_refused(void **state) {
  (void)state;
  table t = run_validate("--from '" TERN_SOURCE_DIR "/README.md'");
  assert_int_equal(t.status, 2);
  assert_int_equal(t.rows, 0);
}

static void test_live_validation_measures_and_simulates(void **state) {
  (void)state;
  table t = run_validate("-n 2,3 -c allgather -a ring -b 256K -e 1M -f 4 --repeat 1 --retries 0 "
                         "--tolerance 100");
  assert_int_equal(t.status, 0);
  assert_int_equal(t.rows, 2 * 2); /* ranks x sizes */
  assert_true(t.mean >= 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_simulated_near_recorded_measurements),
      cmocka_unit_test(test_recorded_file_that_is_not_one_is_refused),
      cmocka_unit_test(test_live_validation_measures_and_simulates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

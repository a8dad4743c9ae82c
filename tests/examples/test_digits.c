/* test_digits.c: the trainer's data set reader (lib/digits/digits.c).
 *
 * The real file loads whole (1797 images, the class counts scikit-learn documents, pixels in
 * [0, 1]); every kind of bad line is refused with the line and field named; the split is a
 * permutation, the same for the same seed, holding out the fraction asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "digits/digits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *data_path(void) {
  return TRAIN_DATA_SOURCE;
}

static void the_real_file_loads(void **state) {
  (void)state;
  digits d;
  char err[256];
  if (digits_load(&d, data_path(), err, sizeof err) != 0) fail_msg("%s", err);
  assert_int_equal(d.n, 1797);
  /* per class, as counted in the file (digits.rst gives about 180 each) */
  static const int want[DIGITS_CLASSES] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
  int count[DIGITS_CLASSES] = {0};
  for (size_t i = 0; i < d.n; i++)
    count[d.label[i]]++;
  assert_memory_equal(count, want, sizeof want);
  for (size_t i = 0; i < d.n * DIGITS_PIXELS; i++)
    assert_true(d.x[i] >= 0 && d.x[i] <= 1);
  assert_true(d.x[2] == 5.0f / 16); /* the first image: 0,0,5,13,... */
  digits_free(&d);
}

/* A line of 64 pixels (all p) and a label, with the given separator after the pixels. */
static char *line(char *out, int p, const char *label) {
  out[0] = '\0';
  for (int i = 0; i < DIGITS_PIXELS; i++)
    sprintf(out + strlen(out), "%d,", p);
  strcat(out, label);
  return out;
}

static void expect_error(const char *text, const char *needle) {
  digits d;
  char err[256] = "";
  assert_int_equal(digits_parse(&d, text, strlen(text), "t.csv", err, sizeof err), -1);
  if (strstr(err, needle) == NULL) fail_msg("error '%s' does not say '%s'", err, needle);
  assert_null(d.x);
}

static void bad_lines_are_refused(void **state) {
  (void)state;
  char good[1024], tail[1024], bad[2048];
  line(good, 3, "7\n");
  snprintf(bad, sizeof bad, "%s%s", good, line(tail, 17, "1\n"));
  expect_error(bad, "t.csv:2: field 1 (a pixel): '17,17,17' is not a number in 0..16");
  snprintf(bad, sizeof bad, "%s%s", good, line(tail, 1, "10\n"));
  expect_error(bad, "t.csv:2: field 65 (the label): '10' is not a number in 0..9");
  expect_error(line(tail, 1, "x\n"), "t.csv:1: field 65 (the label): 'x'");
  expect_error(line(tail, 1, "2,3\n"), "t.csv:1: after field 65: want the end of the line");
  expect_error(line(tail, 1, "-2\n"), "t.csv:1: field 65 (the label): '-2'");
  expect_error("1,2,3\n", "t.csv:1: after field 3: want ','");
  expect_error("\n", "t.csv:1: field 1 (a pixel): ''");
  expect_error("", "t.csv: 0 lines");
  expect_error(line(tail, 99999999, "1\n"), "field 1 (a pixel): '99999999' is not a number");
}

static void line_ends_are_accepted(void **state) {
  (void)state;
  char text[2048], a[1024], b[1024];
  line(a, 16, "0\r\n");
  line(b, 0, "9"); /* the last line without "\n" */
  snprintf(text, sizeof text, "%s%s", a, b);
  digits d;
  char err[256];
  if (digits_parse(&d, text, strlen(text), "t.csv", err, sizeof err) != 0) fail_msg("%s", err);
  assert_int_equal(d.n, 2);
  assert_int_equal(d.label[0], 0);
  assert_int_equal(d.label[1], 9);
  assert_true(d.x[0] == 1.0f && d.x[DIGITS_PIXELS] == 0.0f);
  digits_free(&d);
  assert_int_equal(digits_load(&d, "/nonexistent/digits.csv", err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/digits.csv: No such file"));
}

static void split_is_a_seeded_permutation(void **state) {
  (void)state;
  digits d = {.n = 1797};
  int *a = malloc(d.n * sizeof *a), *b = malloc(d.n * sizeof *b);
  size_t ntrain;
  assert_int_equal(digits_split(&d, 0.2, 42, a, &ntrain), 0);
  assert_int_equal(ntrain, 1797 - 360); /* 20 % of 1797 is 359.4: 360 held out */
  char *seen = calloc(d.n, 1);
  for (size_t i = 0; i < d.n; i++) {
    assert_true(a[i] >= 0 && (size_t)a[i] < d.n && !seen[a[i]]);
    seen[a[i]] = 1;
  }
  assert_int_equal(digits_split(&d, 0.2, 42, b, &ntrain), 0);
  assert_memory_equal(a, b, d.n * sizeof *a);
  assert_int_equal(digits_split(&d, 0.2, 43, b, &ntrain), 0);
  assert_memory_not_equal(a, b, d.n * sizeof *a);
  d.n = 1;
  assert_int_equal(digits_split(&d, 0.2, 42, a, &ntrain), -1);
  free(seen);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_real_file_loads),
      cmocka_unit_test(bad_lines_are_refused),
      cmocka_unit_test(line_ends_are_accepted),
      cmocka_unit_test(split_is_a_seeded_permutation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

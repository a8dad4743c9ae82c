/* test_compress.c: the wire codecs of src/compress and the error each adds.
 *
 * Stated bounds, per value x (checked on 10,000 values spread over six orders of magnitude):
 *   none: exact;
 *   fp16: |error| <= |x| * 2^-11 (round to nearest, 11-bit significand) for |x| in fp16's
 *         normal range;
 *   bf16: |error| <= |x| * 2^-8 (8-bit significand);
 *   int8: |error| <= max|x| of its 256-value block / 254 (half a step of max/127).
 * Decoding refuses a wrong length and a bad block scale.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compress/compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 10000

static void fill(float *x) {
  srand(7);
  for (int i = 0; i < N; i++) {
    double mag = pow(10.0, -3 + 6.0 * rand() / RAND_MAX); /* 1e-3 .. 1e3 */
    x[i] = (float)((rand() & 1 ? 1 : -1) * mag);
  }
}

static double worst_relative(tern_compress c, const float *x, float *y) {
  uint8_t *buf = malloc(compress_size(c, N));
  compress_encode(c, x, N, buf);
  assert_int_equal(compress_decode(c, buf, compress_size(c, N), N, y, NULL), TERN_OK);
  free(buf);
  double worst = 0;
  for (int i = 0; i < N; i++)
    worst = fmax(worst, fabs((double)y[i] - x[i]) / fabs((double)x[i]));
  return worst;
}

static void float_codecs(void **state) {
  (void)state;
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  fill(x);
  assert_true(worst_relative(TERN_COMPRESS_NONE, x, y) == 0);
  double f16 = worst_relative(TERN_COMPRESS_FP16, x, y);
  double b16 = worst_relative(TERN_COMPRESS_BF16, x, y);
  assert_true(f16 <= ldexp(1, -11));
  assert_true(f16 > ldexp(1, -14)); /* it does round: the test would see a no-op codec */
  assert_true(b16 <= ldexp(1, -8));
  assert_true(b16 > ldexp(1, -11));
  assert_int_equal(compress_size(TERN_COMPRESS_FP16, N), 2 * N);
  assert_int_equal(compress_size(TERN_COMPRESS_BF16, N), 2 * N);
  free(x);
  free(y);
}

static void int8_blocks(void **state) {
  (void)state;
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  fill(x);
  size_t len = compress_size(TERN_COMPRESS_INT8, N);
  assert_int_equal(len, N + 4 * ((N + 255) / 256)); /* 1.016 bytes per value */
  uint8_t *buf = malloc(len);
  compress_encode(TERN_COMPRESS_INT8, x, N, buf);
  assert_int_equal(compress_decode(TERN_COMPRESS_INT8, buf, len, N, y, NULL), TERN_OK);
  double worst_step = 0;
  for (int b = 0; b < N; b += COMPRESS_INT8_BLOCK) {
    double m = 0;
    int hi = b + COMPRESS_INT8_BLOCK < N ? b + COMPRESS_INT8_BLOCK : N;
    for (int i = b; i < hi; i++)
      m = fmax(m, fabs(x[i]));
    for (int i = b; i < hi; i++) {
      double e = fabs((double)y[i] - x[i]);
      assert_true(e <= m / 254 * (1 + 1e-6));
      worst_step = fmax(worst_step, e / (m / 254));
    }
  }
  assert_true(worst_step > 0.5); /* the bound is reached, not loose */
  /* A bad scale and a wrong length are refused. */
  core_err err = {0};
  assert_int_equal(compress_decode(TERN_COMPRESS_INT8, buf, len - 1, N, y, &err),
                   TERN_ERR_PROTOCOL);
  float nan = NAN;
  memcpy(buf, &nan, 4);
  core_err_clear(&err);
  assert_int_equal(compress_decode(TERN_COMPRESS_INT8, buf, len, N, y, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "scale"));
  free(buf);
  free(x);
  free(y);
}

static void names(void **state) {
  (void)state;
  tern_compress c;
  assert_true(compress_parse("bf16", &c) && c == TERN_COMPRESS_BF16);
  assert_true(compress_parse("8bit", &c) && c == TERN_COMPRESS_INT8);
  assert_false(compress_parse("zstd", &c));
  assert_string_equal(compress_name(TERN_COMPRESS_FP16), "fp16");
  assert_false(compress_valid(7));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(float_codecs), cmocka_unit_test(int8_blocks),
                                     cmocka_unit_test(names)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_reduce.c: every (dtype, op) kernel against a scalar reference, at lengths that exercise
 * the vector body and its tails, out of place and in place; and AVG's final division. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One element as a double, and back, through the scalar reference conversions. */
static double get(tern_dtype dt, const void *p, size_t i) {
  switch (dt) {
  case TERN_F32:
    return ((const float *)p)[i];
  case TERN_F64:
    return ((const double *)p)[i];
  case TERN_F16:
    return core_f16_to_f32(((const uint16_t *)p)[i]);
  case TERN_BF16:
    return core_bf16_to_f32(((const uint16_t *)p)[i]);
  case TERN_I8:
    return ((const int8_t *)p)[i];
  case TERN_U8:
    return ((const uint8_t *)p)[i];
  case TERN_I32:
    return ((const int32_t *)p)[i];
  case TERN_I64:
    return (double)((const int64_t *)p)[i];
  }
  return 0;
}

static void put_random(tern_dtype dt, void *p, size_t i, unsigned *seed) {
  int r = rand_r(seed) % 200 - 100;
  switch (dt) {
  case TERN_F32:
    ((float *)p)[i] = (float)r / 8;
    break;
  case TERN_F64:
    ((double *)p)[i] = (double)r / 8;
    break;
  case TERN_F16:
    ((uint16_t *)p)[i] = core_f32_to_f16((float)r / 7);
    break;
  case TERN_BF16:
    ((uint16_t *)p)[i] = core_f32_to_bf16((float)r / 7);
    break;
  case TERN_I8:
    ((int8_t *)p)[i] = (int8_t)r;
    break;
  case TERN_U8:
    ((uint8_t *)p)[i] = (uint8_t)(r + 100);
    break;
  case TERN_I32:
    ((int32_t *)p)[i] = r * 1000003;
    break;
  case TERN_I64:
    ((int64_t *)p)[i] = (int64_t)r * 1000000007ll;
    break;
  }
}

/* The reference: combine in double for floats (then round as the kernel's type does), in the
 * wrapping unsigned type for integers. */
static void check_element(tern_dtype dt, tern_op op, const void *a, const void *b, const void *d,
                          size_t i) {
  double x = get(dt, a, i), y = get(dt, b, i), got = get(dt, d, i), want = 0;
  if (op == TERN_MIN)
    want = y < x ? y : x;
  else if (op == TERN_MAX)
    want = y > x ? y : x;
  else if (dt == TERN_F16 || dt == TERN_BF16 || dt == TERN_F32) {
    float f = op == TERN_PROD ? (float)x * (float)y : (float)x + (float)y;
    want = dt == TERN_F16    ? core_f16_to_f32(core_f32_to_f16(f))
           : dt == TERN_BF16 ? core_bf16_to_f32(core_f32_to_bf16(f))
                             : f;
  } else if (dt == TERN_F64) {
    want = op == TERN_PROD ? x * y : x + y;
  } else {
    uint64_t ux = (uint64_t)(int64_t)x, uy = (uint64_t)(int64_t)y;
    uint64_t w = op == TERN_PROD ? ux * uy : ux + uy;
    switch (dt) {
    case TERN_I8:
      want = (int8_t)w;
      break;
    case TERN_U8:
      want = (uint8_t)w;
      break;
    case TERN_I32:
      want = (int32_t)w;
      break;
    default:
      want = (double)(int64_t)w;
      break;
    }
  }
  if (got != want)
    fail_msg("%s %s element %zu: %g op %g gave %g, want %g", tern_dtype_name(dt), tern_op_name(op),
             i, x, y, got, want);
}

static void every_kernel(void **state) {
  (void)state;
  static const size_t lengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 63, 64, 65, 127, 1000, 4099};
  unsigned seed = 12345;
  enum { MAX = 4099 * 8 };
  static unsigned char a[MAX], b[MAX], d[MAX], a2[MAX];
  for (int dt = 0; dt < TERN_NUM_DTYPES; dt++) {
    for (int op = 0; op < TERN_NUM_OPS; op++) {
      for (size_t li = 0; li < CORE_ARRAY_LEN(lengths); li++) {
        size_t n = lengths[li];
        for (size_t i = 0; i < n; i++) {
          put_random((tern_dtype)dt, a, i, &seed);
          put_random((tern_dtype)dt, b, i, &seed);
        }
        core_reduce((tern_dtype)dt, (tern_op)op, d, a, b, n);
        for (size_t i = 0; i < n; i++)
          check_element((tern_dtype)dt, (tern_op)op, a, b, d, i);
        /* in place: a = a op b gives the same bytes */
        memcpy(a2, a, n * tern_dtype_size((tern_dtype)dt));
        core_reduce((tern_dtype)dt, (tern_op)op, a2, a2, b, n);
        assert_memory_equal(a2, d, n * tern_dtype_size((tern_dtype)dt) + (n == 0));
      }
    }
  }
}

static void avg_divides_once(void **state) {
  (void)state;
  float f[5] = {3, -3, 7, 0, 1};
  core_avg_finish(TERN_F32, f, 5, 2);
  assert_true(f[0] == 1.5f && f[1] == -1.5f && f[2] == 3.5f && f[3] == 0 && f[4] == 0.5f);
  int32_t i[3] = {7, -7, 8};
  core_avg_finish(TERN_I32, i, 3, 2); /* truncation toward zero */
  assert_int_equal(i[0], 3);
  assert_int_equal(i[1], -3);
  assert_int_equal(i[2], 4);
  uint16_t h[1] = {core_f32_to_f16(3.0f)};
  core_avg_finish(TERN_F16, h, 1, 4);
  assert_true(core_f16_to_f32(h[0]) == 0.75f);
  uint16_t bf[1] = {core_f32_to_bf16(-6.0f)};
  core_avg_finish(TERN_BF16, bf, 1, 3);
  assert_true(core_bf16_to_f32(bf[0]) == -2.0f);
  int8_t s8[1] = {-128};
  core_avg_finish(TERN_I8, s8, 1, 3);
  assert_int_equal(s8[0], -42);
  int64_t s64[1] = {INT64_MIN};
  core_avg_finish(TERN_I64, s64, 1, 2);
  assert_true(s64[0] == INT64_MIN / 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_kernel),
      cmocka_unit_test(avg_divides_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

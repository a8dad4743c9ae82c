/* test_dtype.c: element sizes, names, parsing, and the f16/bf16 conversions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/core.h"

#include <math.h>
#include <string.h>

static void sizes_and_names(void **state) {
  (void)state;
  static const size_t want[] = {4, 8, 2, 2, 1, 1, 4, 8};
  for (int dt = 0; dt < TERN_NUM_DTYPES; dt++) {
    assert_int_equal(tern_dtype_size((tern_dtype)dt), want[dt]);
    tern_dtype back;
    assert_true(core_dtype_parse(tern_dtype_name((tern_dtype)dt), &back));
    assert_int_equal(back, dt);
  }
  assert_int_equal(tern_dtype_size((tern_dtype)99), 0);
  assert_null(tern_dtype_name((tern_dtype)-1));
  tern_dtype dt;
  assert_true(core_dtype_parse("float", &dt) && dt == TERN_F32);
  assert_true(core_dtype_parse("half", &dt) && dt == TERN_F16);
  assert_false(core_dtype_parse("f128", &dt));
  tern_op op;
  assert_true(core_op_parse("avg", &op) && op == TERN_AVG);
  assert_false(core_op_parse("xor", &op));
}

/* Every one of the 65536 half values survives f16 -> f32 -> f16 (NaNs stay NaNs). */
static void f16_round_trip_all(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = core_f16_to_f32((uint16_t)h);
    uint16_t back = core_f32_to_f16(f);
    if (isnan(f))
      assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
    else
      assert_int_equal(back, h);
  }
}

static void f16_known_values(void **state) {
  (void)state;
  assert_int_equal(core_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(core_f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(core_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(core_f32_to_f16(65520.0f), 0x7c00); /* the tie above max rounds to inf */
  assert_int_equal(core_f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(core_f32_to_f16(0x1p-24f), 0x0001);   /* smallest subnormal */
  assert_int_equal(core_f32_to_f16(0x1p-25f), 0x0000);   /* tie to even: 0 */
  assert_int_equal(core_f32_to_f16(0x1.8p-24f), 0x0002); /* 1.5 ulp: tie to even: 2 */
  /* 1 + 2^-11 is halfway between 1 and the next half: ties to even gives 1 */
  assert_int_equal(core_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(core_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  assert_true(core_f16_to_f32(0x0001) == 0x1p-24f);
}

static void bf16_known_values(void **state) {
  (void)state;
  assert_int_equal(core_f32_to_bf16(1.0f), 0x3f80);
  assert_true(core_bf16_to_f32(0x3f80) == 1.0f);
  /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even keeps 1 */
  assert_int_equal(core_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  assert_int_equal(core_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  assert_true(isnan(core_bf16_to_f32(core_f32_to_bf16(NAN))));
  for (uint32_t b = 0; b < 65536; b++) {
    float f = core_bf16_to_f32((uint16_t)b);
    if (!isnan(f)) assert_int_equal(core_f32_to_bf16(f), b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes_and_names),
      cmocka_unit_test(f16_round_trip_all),
      cmocka_unit_test(f16_known_values),
      cmocka_unit_test(bf16_known_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

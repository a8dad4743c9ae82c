/* dtype.c: element types: sizes, names, parsing, and the 16-bit float conversions.
 *
 * The conversions are the scalar reference, used where one element is touched at a time
 * (checking results, filling patterns); reduce.c has the vectorised paths and its tests hold it
 * to these. Both round to nearest, ties to even, as IEEE 754 and every GPU do.
 */
#include "core.h"

#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  size_t size;
  const char *aliases[3];
} dtypes[TERN_NUM_DTYPES] = {
    [TERN_F32] = {"f32", 4, {"float", "float32", NULL}},
    [TERN_F64] = {"f64", 8, {"double", "float64", NULL}},
    [TERN_F16] = {"f16", 2, {"half", "float16", NULL}},
    [TERN_BF16] = {"bf16", 2, {"bfloat16", NULL, NULL}},
    [TERN_I8] = {"i8", 1, {"int8", NULL, NULL}},
    [TERN_U8] = {"u8", 1, {"uint8", NULL, NULL}},
    [TERN_I32] = {"i32", 4, {"int32", "int", NULL}},
    [TERN_I64] = {"i64", 8, {"int64", NULL, NULL}},
};

static const char *op_names[TERN_NUM_OPS] = {"sum", "prod", "min", "max", "avg"};

bool core_dtype_valid(int dt) {
  return dt >= 0 && dt < TERN_NUM_DTYPES;
}

bool core_op_valid(int op) {
  return op >= 0 && op < TERN_NUM_OPS;
}

size_t tern_dtype_size(tern_dtype dt) {
  return core_dtype_valid((int)dt) ? dtypes[dt].size : 0;
}

const char *tern_dtype_name(tern_dtype dt) {
  return core_dtype_valid((int)dt) ? dtypes[dt].name : NULL;
}

const char *tern_op_name(tern_op op) {
  return core_op_valid((int)op) ? op_names[op] : NULL;
}

bool core_dtype_parse(const char *s, tern_dtype *out) {
  for (int i = 0; i < TERN_NUM_DTYPES; i++) {
    bool match = strcasecmp(s, dtypes[i].name) == 0;
    for (int a = 0; !match && a < 3 && dtypes[i].aliases[a]; a++)
      match = strcasecmp(s, dtypes[i].aliases[a]) == 0;
    if (match) {
      *out = (tern_dtype)i;
      return true;
    }
  }
  return false;
}

bool core_op_parse(const char *s, tern_op *out) {
  for (int i = 0; i < TERN_NUM_OPS; i++) {
    if (strcasecmp(s, op_names[i]) == 0) {
      *out = (tern_op)i;
      return true;
    }
  }
  return false;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float core_bf16_to_f32(uint16_t b) {
  return bits_f32((uint32_t)b << 16);
}

uint16_t core_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float core_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24, exact in f32 */
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t core_f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {
    /* below the smallest normal half (2^-14): round a / 2^-24 to an integer, ties to even */
    float v = bits_f32(a) * 0x1p24f;
    uint32_t q = (uint32_t)v;
    float rest = v - (float)q;
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  /* normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even */
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

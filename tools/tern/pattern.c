/* pattern.c: see pattern.h. */
#include "pattern.h"

#include "core/core.h"

#include <math.h>

double pattern_value(tern_op op, int rank, size_t i) {
  switch (op) {
  case TERN_PROD:
    if ((rank + i) % 11 == 0) return 2;
    return ((size_t)rank * 3 + i) % 5 == 0 ? -1 : 1;
  case TERN_MIN:
  case TERN_MAX:
    return (double)(((size_t)rank * 7 + i * 13) % 17);
  default:
    return (double)(((size_t)rank + 1 + i) % 4);
  }
}

static void put(void *buf, tern_dtype dt, size_t i, double v) {
  switch (dt) {
  case TERN_F32:
    ((float *)buf)[i] = (float)v;
    break;
  case TERN_F64:
    ((double *)buf)[i] = v;
    break;
  case TERN_F16:
    ((uint16_t *)buf)[i] = core_f32_to_f16((float)v);
    break;
  case TERN_BF16:
    ((uint16_t *)buf)[i] = core_f32_to_bf16((float)v);
    break;
  case TERN_I8:
    ((int8_t *)buf)[i] = (int8_t)(int64_t)v;
    break;
  case TERN_U8:
    ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v;
    break;
  case TERN_I32:
    ((int32_t *)buf)[i] = (int32_t)(int64_t)v;
    break;
  case TERN_I64:
    ((int64_t *)buf)[i] = (int64_t)v;
    break;
  }
}

double pattern_get(const void *buf, tern_dtype dt, size_t i) {
  switch (dt) {
  case TERN_F32:
    return ((const float *)buf)[i];
  case TERN_F64:
    return ((const double *)buf)[i];
  case TERN_F16:
    return core_f16_to_f32(((const uint16_t *)buf)[i]);
  case TERN_BF16:
    return core_bf16_to_f32(((const uint16_t *)buf)[i]);
  case TERN_I8:
    return ((const int8_t *)buf)[i];
  case TERN_U8:
    return ((const uint8_t *)buf)[i];
  case TERN_I32:
    return ((const int32_t *)buf)[i];
  case TERN_I64:
    return (double)((const int64_t *)buf)[i];
  }
  return NAN;
}

void pattern_fill(void *buf, tern_dtype dt, tern_op op, int rank, size_t first, size_t count) {
  for (size_t i = 0; i < count; i++)
    put(buf, dt, i, pattern_value(op, rank, first + i));
}

/* The value as dt would store it (u8 wraps; others hold these small values exactly). */
static double as_stored(tern_dtype dt, double v) {
  unsigned char b[8];
  put(b, dt, 0, v);
  return pattern_get(b, dt, 0);
}

double pattern_reduced(tern_dtype dt, tern_op op, int n, size_t i) {
  double acc = as_stored(dt, pattern_value(op, 0, i));
  for (int r = 1; r < n; r++) {
    double v = as_stored(dt, pattern_value(op, r, i));
    switch (op) {
    case TERN_PROD:
      acc *= v;
      break;
    case TERN_MIN:
      acc = v < acc ? v : acc;
      break;
    case TERN_MAX:
      acc = v > acc ? v : acc;
      break;
    default:
      acc += v;
      break;
    }
  }
  if (op != TERN_AVG) return as_stored(dt, acc);
  switch (dt) {
  case TERN_F64:
    return acc / n;
  case TERN_F32:
    return (float)acc / (float)n;
  case TERN_F16:
    return core_f16_to_f32(core_f32_to_f16((float)acc / (float)n));
  case TERN_BF16:
    return core_bf16_to_f32(core_f32_to_bf16((float)acc / (float)n));
  default:
    return as_stored(dt, trunc(as_stored(dt, acc) / n));
  }
}

size_t pattern_count_wrong_reduced(const void *buf, tern_dtype dt, tern_op op, int n, size_t first,
                                   size_t count) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    wrong += pattern_get(buf, dt, i) != pattern_reduced(dt, op, n, first + i);
  return wrong;
}

size_t pattern_count_wrong_input(const void *buf, tern_dtype dt, tern_op op, int rank, size_t first,
                                 size_t count) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    wrong += pattern_get(buf, dt, i) != as_stored(dt, pattern_value(op, rank, first + i));
  return wrong;
}

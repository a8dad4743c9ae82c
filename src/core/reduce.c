/* reduce.c: the reduction kernels, one loop per (dtype, op), vectorised by the compiler.
 *
 * Each kernel is dst[i] = a[i] op b[i]. The loops are written so that gcc vectorises them at -O3
 * (no calls, no branches the vectoriser cannot turn into selects), and on x86-64 each is built
 * three times (baseline SSE2, x86-64-v3 with AVX2+F16C, x86-64-v4 with AVX-512), the best one
 * chosen when the library loads.
 *
 * Integers wrap: sums and products are done in the unsigned type of the same width, which is
 * what the hardware does and what C defines (signed overflow would be undefined).
 * f16 and bf16 are widened to f32, combined, and rounded back to nearest-even once per kernel
 * call, so a reduction over n ranks rounds n-1 times, like NCCL's.
 */
#include "core.h"

#include <string.h>

/* Sanitizer builds do without: an ifunc resolver runs before the sanitizer runtime is up. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TERN_SANITIZED)
#define KERNEL __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define KERNEL
#endif

#if defined(__FLT16_MANT_DIG__)
typedef _Float16 half_t;
#define HALF_TO_F32(h) ((float)(h))
#define F32_TO_HALF(f) ((half_t)(f))
#else
typedef uint16_t half_t;
#define HALF_TO_F32(h) core_f16_to_f32(h)
#define F32_TO_HALF(f) core_f32_to_f16(f)
#endif

static inline float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Same rounding as core_f32_to_bf16, written branch-free so that it vectorises. */
static inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

#define MINF(x, y) ((y) < (x) ? (y) : (x))
#define MAXF(x, y) ((y) > (x) ? (y) : (x))

/* A kernel over plain C types; U is the type the arithmetic is done in. */
#define DEFINE_KERNEL(name, T, U, expr)                                                            \
  KERNEL static void name(T *d, const T *a, const T *b, size_t n) {                                \
    for (size_t i = 0; i < n; i++) {                                                               \
      U x = (U)a[i], y = (U)b[i];                                                                  \
      d[i] = (T)(expr);                                                                            \
    }                                                                                              \
  }

#define DEFINE_FOUR(tag, T, U)                                                                     \
  DEFINE_KERNEL(sum_##tag, T, U, x + y)                                                            \
  DEFINE_KERNEL(prod_##tag, T, U, x *y)                                                            \
  DEFINE_KERNEL(min_##tag, T, T, MINF(x, y))                                                       \
  DEFINE_KERNEL(max_##tag, T, T, MAXF(x, y))

DEFINE_FOUR(f32, float, float)
DEFINE_FOUR(f64, double, double)
DEFINE_FOUR(i8, int8_t, uint8_t)
DEFINE_FOUR(u8, uint8_t, uint32_t)
DEFINE_FOUR(i32, int32_t, uint32_t)
DEFINE_FOUR(i64, int64_t, uint64_t)

/* 16-bit floats: widen, combine in f32, round back. */
#define DEFINE_WIDE_KERNEL(name, T, TO_F32, FROM_F32, expr)                                        \
  KERNEL static void name(T *d, const T *a, const T *b, size_t n) {                                \
    for (size_t i = 0; i < n; i++) {                                                               \
      float x = TO_F32(a[i]), y = TO_F32(b[i]);                                                    \
      d[i] = FROM_F32(expr);                                                                       \
    }                                                                                              \
  }

#define DEFINE_WIDE_FOUR(tag, T, TO_F32, FROM_F32)                                                 \
  DEFINE_WIDE_KERNEL(sum_##tag, T, TO_F32, FROM_F32, x + y)                                        \
  DEFINE_WIDE_KERNEL(prod_##tag, T, TO_F32, FROM_F32, x *y)                                        \
  DEFINE_WIDE_KERNEL(min_##tag, T, TO_F32, FROM_F32, MINF(x, y))                                   \
  DEFINE_WIDE_KERNEL(max_##tag, T, TO_F32, FROM_F32, MAXF(x, y))

DEFINE_WIDE_FOUR(f16, half_t, HALF_TO_F32, F32_TO_HALF)
DEFINE_WIDE_FOUR(bf16, uint16_t, bf16_to_f32, f32_to_bf16)

typedef void (*kernel_fn)(void *, const void *, const void *, size_t);

#define ROW(tag)                                                                                   \
  {                                                                                                \
    (kernel_fn) sum_##tag, (kernel_fn)prod_##tag, (kernel_fn)min_##tag, (kernel_fn)max_##tag,      \
        (kernel_fn)sum_##tag                                                                       \
  }

/* Indexed [dtype][op]; AVG reduces as SUM (core_avg_finish divides at the end). */
static const kernel_fn kernels[TERN_NUM_DTYPES][TERN_NUM_OPS] = {
    [TERN_F32] = ROW(f32), [TERN_F64] = ROW(f64), [TERN_F16] = ROW(f16), [TERN_BF16] = ROW(bf16),
    [TERN_I8] = ROW(i8),   [TERN_U8] = ROW(u8),   [TERN_I32] = ROW(i32), [TERN_I64] = ROW(i64),
};

void core_reduce(tern_dtype dt, tern_op op, void *dst, const void *a, const void *b, size_t count) {
  if (count > 0) kernels[dt][op](dst, a, b, count);
}

#define DEFINE_DIV(name, T, expr)                                                                  \
  KERNEL static void name(T *d, size_t n, int ranks) {                                             \
    for (size_t i = 0; i < n; i++) {                                                               \
      T x = d[i];                                                                                  \
      d[i] = (T)(expr);                                                                            \
    }                                                                                              \
  }

DEFINE_DIV(div_f32, float, x / (float)ranks)
DEFINE_DIV(div_f64, double, x / (double)ranks)
DEFINE_DIV(div_f16, half_t, F32_TO_HALF(HALF_TO_F32(x) / (float)ranks))
DEFINE_DIV(div_bf16, uint16_t, f32_to_bf16(bf16_to_f32(x) / (float)ranks))
DEFINE_DIV(div_i8, int8_t, x / ranks)
DEFINE_DIV(div_u8, uint8_t, x / ranks)
DEFINE_DIV(div_i32, int32_t, x / ranks)
DEFINE_DIV(div_i64, int64_t, x / (int64_t)ranks)

void core_avg_finish(tern_dtype dt, void *buf, size_t count, int n) {
  if (count == 0 || n <= 1) return;
  switch (dt) {
  case TERN_F32:
    div_f32(buf, count, n);
    break;
  case TERN_F64:
    div_f64(buf, count, n);
    break;
  case TERN_F16:
    div_f16(buf, count, n);
    break;
  case TERN_BF16:
    div_bf16(buf, count, n);
    break;
  case TERN_I8:
    div_i8(buf, count, n);
    break;
  case TERN_U8:
    div_u8(buf, count, n);
    break;
  case TERN_I32:
    div_i32(buf, count, n);
    break;
  case TERN_I64:
    div_i64(buf, count, n);
    break;
  }
}

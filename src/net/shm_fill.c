/* shm_fill.c: ordinary or streaming copies into a ring's slots (see shm_fill.h). */
#include "net/shm_fill.h"

#include "core/core.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Non-temporal stores of whole 64-byte lines, then an ordinary copy of the tail; the fence
 * orders the streamed lines before the slot's publication, which on x86 is an ordinary store. */
static void copy_streaming(char *dst, const char *src, uint64_t n) {
#if defined(__SSE2__)
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 64; k += 16)
      _mm_stream_si128((__m128i *)(dst + i + k), _mm_loadu_si128((const __m128i *)(src + i + k)));
  memcpy(dst + i, src + i, n - i);
  _mm_sfence();
#else
  memcpy(dst, src, n);
#endif
}

static void copy_as(bool stream, void *dst, const void *src, uint64_t n) {
  if (stream)
    copy_streaming(dst, src, n);
  else
    memcpy(dst, src, n);
}

/* Whether ordinary copies, timed at least once, average under the mark. */
static bool runs_slow(double ordinary_rate) {
  return ordinary_rate > 0 && ordinary_rate < SHM_FILL_SLOW_BYTES_PER_NS;
}

bool shm_fill_should_stream(double ordinary_rate, double streamed_rate) {
  return runs_slow(ordinary_rate) && streamed_rate > SHM_FILL_STREAM_GAIN * ordinary_rate;
}

void shm_fill_copy(shm_fill *f, void *dst, const void *src, uint64_t n) {
  if (n < SHM_FILL_MIN) {
    memcpy(dst, src, n);
    return;
  }
  /* The kind not chosen is tried again every SHM_FILL_RECHECK fills; streaming only while
   * ordinary copies average slow, since only then could it win. */
  bool recheck =
      f->since_other + 1 >= SHM_FILL_RECHECK && (f->streaming || runs_slow(f->ordinary_rate));
  bool stream = f->streaming != recheck;
  if (!recheck && n < SHM_FILL_TIME_ALL && f->since_other % SHM_FILL_SAMPLE != 0) {
    copy_as(stream, dst, src, n); /* untimed: see SHM_FILL_SAMPLE */
    f->since_other++;
    return;
  }
  uint64_t t0 = core_now_ns();
  copy_as(stream, dst, src, n);
  double rate = (double)n / (double)CORE_MAX(core_now_ns() - t0, 1);
  double *avg = stream ? &f->streamed_rate : &f->ordinary_rate;
  *avg = *avg > 0 ? *avg + (rate - *avg) * SHM_FILL_WEIGHT : rate;
  f->since_other = recheck ? 0 : f->since_other + 1;
  f->streaming = shm_fill_should_stream(f->ordinary_rate, f->streamed_rate);
}

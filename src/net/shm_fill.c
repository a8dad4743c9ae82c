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

void shm_fill_copy(shm_fill *f, void *dst, const void *src, uint64_t n) {
  if (n < SHM_FILL_MIN) {
    memcpy(dst, src, n);
    return;
  }
  if (f->streaming && ++f->streamed < SHM_FILL_RECHECK) {
    copy_streaming(dst, src, n);
    return;
  }
  uint64_t t0 = core_now_ns();
  memcpy(dst, src, n);
  uint64_t ns = core_now_ns() - t0;
  f->streaming = (double)n < SHM_FILL_SLOW_BYTES_PER_NS * (double)ns;
  f->streamed = 0;
}

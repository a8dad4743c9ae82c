/* clock.c: monotonic time and deadlines. Every wait in tern is bounded by one of these. */
#include "core.h"

#include <errno.h>
#include <time.h>

uint64_t core_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double core_wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t core_deadline_after(double seconds) {
  uint64_t now = core_now_ns();
  if (!(seconds > 0)) return now;
  double ns = seconds * 1e9;
  if (ns >= (double)(UINT64_MAX - now)) return UINT64_MAX;
  return now + (uint64_t)ns;
}

int core_ms_left(uint64_t deadline_ns, int cap_ms) {
  uint64_t now = core_now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t left_ms = (deadline_ns - now + 999999) / 1000000;
  return left_ms > (uint64_t)cap_ms ? cap_ms : (int)left_ms;
}

void core_sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

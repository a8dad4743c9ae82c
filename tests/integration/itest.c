/* itest.c: see itest.h. */
#include "itest.h"

#include <stdio.h>

tern_comm *itest_init(void) {
  tern_comm *c = NULL;
  tern_status rc = tern_comm_init_env(&c);
  if (rc == TERN_OK) return c;
  printf("FAIL: init: %s (%s)\n", tern_status_str(rc), tern_comm_last_error(NULL));
  return NULL;
}

int itest_fail(tern_comm *c, const char *what, tern_status rc) {
  printf("FAIL rank %d: %s: %s (%s)\n", tern_comm_rank(c), what, tern_status_str(rc),
         tern_comm_last_error(c));
  return 1;
}

uint8_t itest_pattern(int from, int round, int k, size_t i) {
  return (uint8_t)(from * 131 + round * 29 + k * 71 + i * 7 + (i >> 12));
}

double itest_fill(uint8_t *buf, size_t size, int from, int round, int k) {
  double sum = 0;
  for (size_t i = 0; i < size; i++) {
    buf[i] = itest_pattern(from, round, k, i);
    sum += buf[i];
  }
  return sum;
}

int itest_check(tern_comm *c, const uint8_t *buf, size_t size, int from, int round, int k) {
  for (size_t i = 0; i < size; i++) {
    uint8_t want = itest_pattern(from, round, k, i);
    if (buf[i] != want) {
      printf("FAIL rank %d: byte %zu of %zu, message %d of rank %d, round %d: %u, want %u\n",
             tern_comm_rank(c), i, size, k, from, round, buf[i], want);
      return 1;
    }
  }
  return 0;
}

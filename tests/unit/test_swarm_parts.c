/* test_swarm_parts.c: how the butterfly all-reduce splits a vector among a group's members
 * (swarm_parts): member j reduces [off[j], off[j+1]), a share of the vector proportional to
 * the bandwidth it declared, the parts contiguous and covering the vector exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "swarm/swarm.h"

#include <math.h>

static void group_of(swarm_member *g, const double *bw, int n) {
  for (int j = 0; j < n; j++)
    g[j] = (swarm_member){.id = (uint64_t)j + 1, .port = 1, .bw = bw[j]};
}

static void assert_cover(const size_t *off, int n, size_t count) {
  assert_int_equal(off[0], 0);
  assert_int_equal(off[n], count);
  for (int j = 0; j < n; j++)
    assert_true(off[j] <= off[j + 1]);
}

static void test_equal_bandwidths_equal_parts(void **state) {
  (void)state;
  double bw[4] = {1e9, 1e9, 1e9, 1e9};
  swarm_member g[4];
  size_t off[5];
  group_of(g, bw, 4);
  swarm_parts(g, 4, 1000, off);
  assert_cover(off, 4, 1000);
  for (int j = 0; j < 4; j++)
    assert_int_equal(off[j + 1] - off[j], 250);
}

/* The WAN benchmark's declared figures (bench/swarm/driver.sh): Virginia's peer, whose slowest
 * link is the fastest, reduces the most. */
static void test_parts_follow_declared_bandwidth(void **state) {
  (void)state;
  double bw[4] = {6.55e6, 4.5e6, 4.5e6, 5.05e6}, total = 20.6e6;
  const size_t count = 16777216;
  swarm_member g[4];
  size_t off[5];
  group_of(g, bw, 4);
  swarm_parts(g, 4, count, off);
  assert_cover(off, 4, count);
  for (int j = 0; j < 4; j++) {
    double want = (double)count * bw[j] / total;
    assert_true(fabs((double)(off[j + 1] - off[j]) - want) <= 1.0);
  }
  assert_true(off[1] - off[0] > off[4] - off[3]);
  assert_true(off[4] - off[3] > off[2] - off[1]);
}

/* Fewer values than members: some parts are empty, none overlaps, nothing is left out. */
static void test_short_vector_still_covered(void **state) {
  (void)state;
  double bw[5] = {1, 2, 3, 4, 5};
  swarm_member g[5];
  size_t off[6];
  group_of(g, bw, 5);
  swarm_parts(g, 5, 3, off);
  assert_cover(off, 5, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_bandwidths_equal_parts),
      cmocka_unit_test(test_parts_follow_declared_bandwidth),
      cmocka_unit_test(test_short_vector_still_covered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_swarm_region.c: a peer's place on the grid from its region (src/swarm/region.c).
 *   - names: letters, digits, '.', '_', '-', 1..63 characters; anything else is refused;
 *   - the region's coordinate is the same for every peer of the region, differs between the
 *     benchmark's regions, and is never the group key's wildcard;
 *   - the place on the cross-region axis is the peer's index in its region's group (sorted by
 *     id), follows a death (the survivor of a pair takes place 0), and only a region round
 *     moves it (to place 0 when it was matched in the pool: nobody of its region came); a move
 *     forgets what was learnt of the old line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "swarm/swarm.h"

#include <stdlib.h>
#include <string.h>

static void test_names(void **state) {
  (void)state;
  assert_true(swarm_region_name_ok("us-east-1"));
  assert_true(swarm_region_name_ok("Frankfurt"));
  assert_true(swarm_region_name_ok("eu_west.2"));
  assert_false(swarm_region_name_ok(""));
  assert_false(swarm_region_name_ok(NULL));
  assert_false(swarm_region_name_ok("a b"));
  assert_false(swarm_region_name_ok("tokyo;rm"));
  assert_false(swarm_region_name_ok("r\xc3\xa9gion"));
  char long_name[SWARM_REGION_LEN + 1];
  memset(long_name, 'a', SWARM_REGION_LEN);
  long_name[SWARM_REGION_LEN] = 0;
  assert_false(swarm_region_name_ok(long_name));
  long_name[SWARM_REGION_LEN - 1] = 0;
  assert_true(swarm_region_name_ok(long_name));
}

static void test_coordinates(void **state) {
  (void)state;
  const char *names[] = {"Virginia", "Frankfurt", "Tokyo", "Oregon"};
  uint32_t c[4];
  for (int i = 0; i < 4; i++) {
    c[i] = swarm_region_coord(names[i]);
    assert_int_equal(c[i], swarm_region_coord(names[i])); /* every peer computes the same */
    assert_true(c[i] <= 0x7fffffffu);
    for (int j = 0; j < i; j++)
      assert_int_not_equal(c[i], c[j]);
  }
  tern_swarm *sw = calloc(1, sizeof *sw);
  core_err err = {0};
  sw->ndims = 3;
  sw->coords[0] = 5;
  sw->grid[1] = 4;
  assert_int_equal(swarm_region_place(sw, "Tokyo", &err), TERN_OK);
  assert_true(sw->regional);
  assert_int_equal(sw->ndims, 2);
  assert_int_equal(sw->coords[0], 0);
  assert_int_equal((uint32_t)sw->coords[1], c[2]);
  assert_int_equal(sw->grid[1], 4); /* a line size, kept */
  /* compression across regions only */
  assert_int_equal(swarm_region_codec(sw, 0, TERN_COMPRESS_INT8EF), TERN_COMPRESS_NONE);
  assert_int_equal(swarm_region_codec(sw, 1, TERN_COMPRESS_INT8EF), TERN_COMPRESS_INT8EF);
  assert_int_equal(swarm_region_codec(sw, 4, TERN_COMPRESS_FP16), TERN_COMPRESS_NONE);
  sw->regional = false;
  assert_int_equal(swarm_region_codec(sw, 0, TERN_COMPRESS_FP16), TERN_COMPRESS_FP16);
  assert_int_equal(swarm_region_place(sw, "no way", &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "no way"));
  free(sw);
}

static void test_place_follows_the_region_group(void **state) {
  (void)state;
  tern_swarm *sw = calloc(1, sizeof *sw);
  core_err err = {0};
  assert_int_equal(swarm_region_place(sw, "Oregon", &err), TERN_OK);
  swarm_member g[2] = {{.id = 10}, {.id = 30}};
  sw->id = 30;
  sw->line_known[1] = true;
  swarm_region_after_round(sw, 0, g, 2, false);
  assert_int_equal(sw->coords[0], 1);
  assert_false(sw->line_known[1]);
  sw->line_known[1] = true;
  swarm_region_after_round(sw, 1, g, 1, false); /* a cross-region round: no move */
  assert_int_equal(sw->coords[0], 1);
  swarm_region_after_round(sw, 2, g + 1, 1, false); /* its partner died: alone, place 0 */
  assert_int_equal(sw->coords[0], 0);
  assert_false(sw->line_known[1]);
  sw->coords[0] = 1;
  swarm_region_after_round(sw, 2, g, 2, true); /* matched in the pool: nobody of its region */
  assert_int_equal(sw->coords[0], 0);
  sw->line_known[1] = true;
  swarm_region_after_round(sw, 2, g + 1, 1, false); /* alone at place 0 already: others come */
  assert_int_equal(sw->coords[0], 0);
  assert_false(sw->line_known[1]);
  sw->line_known[1] = true;
  swarm_region_after_round(sw, 4, g, 2, false); /* back in a pair: place 1 again */
  swarm_region_after_round(sw, 4, g, 2, false);
  assert_int_equal(sw->coords[0], 1);
  sw->line_known[1] = true;
  swarm_region_after_round(sw, 6, g, 2, false);
  assert_true(sw->line_known[1]);
  free(sw);
}

/* Two peers of one region take places 0 and 1, so the region is on both cross-region lines; a
 * peer without a region keeps the coordinates it was given. */
static void test_pair_spreads_and_plain_peers_untouched(void **state) {
  (void)state;
  tern_swarm *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *plain = calloc(1, sizeof *a);
  core_err err = {0};
  assert_int_equal(swarm_region_place(a, "Virginia", &err), TERN_OK);
  assert_int_equal(swarm_region_place(b, "Virginia", &err), TERN_OK);
  a->id = 7;
  b->id = 3;
  swarm_member g[2] = {{.id = 3}, {.id = 7}};
  swarm_region_after_round(a, 0, g, 2, false);
  swarm_region_after_round(b, 0, g, 2, false);
  assert_int_equal(a->coords[0], 1);
  assert_int_equal(b->coords[0], 0);
  assert_int_equal(a->coords[1], b->coords[1]);
  plain->ndims = 2;
  plain->coords[0] = 1;
  plain->id = 3;
  swarm_region_after_round(plain, 0, g, 2, false);
  assert_int_equal(plain->coords[0], 1);
  free(a);
  free(b);
  free(plain);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_coordinates),
      cmocka_unit_test(test_place_follows_the_region_group),
      cmocka_unit_test(test_pair_spreads_and_plain_peers_untouched),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* region.c: a peer's place on the grid from the region it declares (docs/SWARM.md, "Regions").
 *
 * Two axes. Axis 1's coordinate is the region's (a hash of its name), so a line of axis 0 (the
 * peers that share it) is the region: round 0, 2, 4... average inside a region, over its fast
 * links. Axis 0's coordinate is the peer's place in the group its region formed last, so a line
 * of axis 1 holds the peers of every region that took the same place: one peer of each region,
 * and rounds 1, 3, 5... spread each one's bytes over the links to all the other regions, as
 * Moshpit's 2x4 grid does on the WAN benchmark. Nobody numbers the peers: the region's group,
 * the same sorted list for each member, deals the places, and after a death the survivors take
 * the places 0, 1, ... again, so no cross-region line loses a region for good. Compression, if
 * chosen, applies across regions only: inside one, on 10 Gbit/s links, coding cost more CPU than
 * the bytes it saved (on the WAN benchmark, int8ef's region rounds took 10-12 s for 64 MiB
 * against f32's 7-9 s, the 2 cores being the bottleneck).
 */
#include "swarm/swarm.h"

#include <sodium.h>
#include <string.h>

bool swarm_region_name_ok(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n >= SWARM_REGION_LEN) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

uint32_t swarm_region_coord(const char *name) {
  uint8_t h[8];
  crypto_generichash(h, sizeof h, (const uint8_t *)name, strlen(name),
                     (const uint8_t *)"tern-swarm-region", 17);
  uint32_t c;
  memcpy(&c, h, sizeof c);
  return c & 0x7fffffffu; /* never 0xffffffff, the group key's "any" on the line's own axis */
}

tern_status swarm_region_place(tern_swarm *sw, const char *name, core_err *err) {
  if (!swarm_region_name_ok(name))
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "region '%s': 1 to %d characters of letters, digits, '.', '_', '-'",
                        name ? name : "", SWARM_REGION_LEN - 1);
  sw->regional = true;
  snprintf(sw->region, sizeof sw->region, "%s", name);
  sw->ndims = 2;
  memset(sw->coords, 0, sizeof sw->coords);
  sw->coords[1] = (int)swarm_region_coord(name);
  /* grid, when given, is (peers per region, regions): line sizes only, as the coordinate is a
   * hash and no index below grid[1] */
  return TERN_OK;
}

void swarm_region_after_round(tern_swarm *sw, uint32_t round, const swarm_member *group, int n,
                              bool pooled) {
  if (!swarm_region_within(sw, round)) return;
  int place = 0;
  while (!pooled && place < n && group[place].id != sw->id)
    place++;
  /* alone, or matched in the pool (found nobody of its region on its line: the pool's members
   * are of other regions): the only peer of its region it knows, place 0 */
  bool alone = pooled || n == 1;
  if (alone) place = 0;
  /* Alone, it forgets cross-region line 0 even when it was there already: the survivors of
   * other regions that lose their partners move to it too. Expecting only its line-mates of
   * last time, two survivors of the WAN kill run that had been on line 0 closed their group
   * on each other at once, while the two that had just moved there were a moment behind; the
   * pairs, one across fast links and one across slow ones, then drifted 12 s apart a round
   * and never met again. */
  if (alone) sw->line_known[1] = false;
  if (place == sw->coords[0]) return;
  CORE_INFO("swarm: region %s: place %d (was %d) on the cross-region axis", sw->region, place,
            sw->coords[0]);
  sw->coords[0] = place;
  sw->line_known[1] = false; /* another cross-region line: what was learnt of the old one is void */
}

tern_compress swarm_region_codec(const tern_swarm *sw, uint32_t round, tern_compress chosen) {
  return swarm_region_within(sw, round) ? TERN_COMPRESS_NONE : chosen;
}

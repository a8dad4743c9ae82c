/* swarm_layout.c: prints the layout of tern.h's swarm structs, one line per field
 * ("STRUCT FIELD OFFSET SIZE") and one per struct ("STRUCT sizeof SIZE"), for test_swarm.py to
 * compare with the ctypes Structures of python/tern/_lib.py.
 */
#include "tern.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(s, f) printf(#s " " #f " %zu %zu\n", offsetof(s, f), sizeof(((s *)0)->f))
#define SIZE(s) printf(#s " sizeof %zu\n", sizeof(s))

int main(void) {
  SIZE(tern_swarm_options);
  FIELD(tern_swarm_options, listen);
  FIELD(tern_swarm_options, bootstrap);
  FIELD(tern_swarm_options, run_id);
  FIELD(tern_swarm_options, key);
  FIELD(tern_swarm_options, ndims);
  FIELD(tern_swarm_options, coords);
  FIELD(tern_swarm_options, bandwidth);
  FIELD(tern_swarm_options, grid);
  FIELD(tern_swarm_options, insecure);
  FIELD(tern_swarm_options, region);
  SIZE(tern_swarm_average_options);
  FIELD(tern_swarm_average_options, compress);
  FIELD(tern_swarm_average_options, min_group);
  FIELD(tern_swarm_average_options, target_group);
  FIELD(tern_swarm_average_options, match_timeout);
  FIELD(tern_swarm_average_options, average_timeout);
  FIELD(tern_swarm_average_options, random_groups);
  FIELD(tern_swarm_average_options, rounds);
  FIELD(tern_swarm_average_options, clip);
  SIZE(tern_swarm_report);
  FIELD(tern_swarm_report, round);
  FIELD(tern_swarm_report, group_size);
  FIELD(tern_swarm_report, failed_count);
  FIELD(tern_swarm_report, failed);
  FIELD(tern_swarm_report, parts_updated);
  FIELD(tern_swarm_report, weight_before);
  FIELD(tern_swarm_report, weight_after);
  FIELD(tern_swarm_report, bytes_sent);
  FIELD(tern_swarm_report, bytes_received);
  FIELD(tern_swarm_report, seconds_matching);
  FIELD(tern_swarm_report, seconds_averaging);
  FIELD(tern_swarm_report, pooled);
  return 0;
}

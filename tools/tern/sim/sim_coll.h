/* sim_coll.h: what `tern sim coll` (sim/coll.c) shares with `tern sim coll validate`
 * (sim/coll_validate.c). */
#ifndef TERN_TOOLS_SIM_COLL_H
#define TERN_TOOLS_SIM_COLL_H

#include "coll/sched.h"

/* Sets flags[i] for each comma-separated kind or algorithm name ("all": every one). */
bool sim_cli_kinds(const char *s, bool flags[COLL_NUM_KINDS]);
bool sim_cli_algos(const char *s, bool flags[COLL_NUM_ALGOS]);
/* The count of a run of bytes as tern bench counts it (the whole buffer: n blocks for
 * allgather, reduce_scatter and alltoall); 0 when bytes is less than one element per block. */
size_t sim_cli_count(coll_kind kind, double bytes, int n, size_t elem_size);
/* The whole buffer's bytes of a run of count. */
double sim_cli_bytes(coll_kind kind, size_t count, int n, size_t elem_size);

int cmd_sim_coll_validate(int argc, char **argv);

#endif

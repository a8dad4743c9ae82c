/* coll.h: running collectives: the runner that every communicator's engine (comm/engine.h)
 * hands its collective requests to, the executor that runs one schedule over the transports, and
 * what the collective layer keeps for each communicator (its state: the selector's memory, the
 * schedules built last, the tuning, the scratch buffer).
 */
#ifndef TERN_COLL_COLL_H
#define TERN_COLL_COLL_H

#include "coll/sched.h"
#include "coll/tuning.h"
#include "comm/engine.h"

/* The runner of collectives (runner.c): tern_comm_init and tern_comm_split start every
 * communicator's engine with it. */
extern const comm_runner coll_runner;

/* ---- the executor (exec.c) --------------------------------------------------------------- */

/* Runs collective request r to the end (or the first failure) on the calling thread; the
 * failure's message names it ("allreduce #12 on rank 0: ..."). */
tern_status coll_exec_coll(tern_comm *c, tern_request *r);

/* ---- what the collective layer keeps for each communicator (runner.c) ------------------- */

/* The selector's last answer for a kind of collective, remembered per communicator: calls in a
 * training loop repeat the same (count, dtype), and the answer depends on nothing else. */
typedef struct coll_choice {
  size_t count, elem_size;
  coll_algo algo;   /* COLL_ALGO_AUTO: nothing remembered yet */
  coll_algo inner;  /* hier's inter-host algorithm */
  const char *from; /* what chose it (coll_choose) */
} coll_choice;
coll_choice *coll_state_choice(tern_comm *c, coll_kind kind);

/* The schedules this communicator built last (cache.c): the executor's, so used only by the
 * thread running operations (under the engine's run lock). */
coll_sched_cache *coll_state_scheds(tern_comm *c);

/* Which host each rank is on (NULL on one host, or with one rank a host): coll_args.hosts. */
const coll_hosts *coll_state_hosts(const tern_comm *c);

/* An algorithm forced for the calls that follow, with hier's inter-host one (inner: RING for
 * the others), as `tern tune` measures each; AUTO gives the choice back to TERN_ALGO and the
 * selector. */
void coll_state_force(tern_comm *c, coll_algo algo, coll_algo inner);
coll_algo coll_state_forced(tern_comm *c, coll_algo *inner);

/* Fills the fields of a that this communicator's layout decides (ppn, hosts, cpus,
 * unchecked_root), as the executor does before it builds a schedule (exec.c); `tern tune`
 * compares algorithms' schedules with them. */
void coll_args_place(const tern_comm *c, coll_args *a);
/* Where c's collectives run, as the selector sees it (exec.c): `tern tune` names its rows by it. */
coll_site coll_site_of(const tern_comm *c);

/* The tuning in use (NULL: none; the built-in model chooses). */
const coll_tuning *coll_state_tuning(tern_comm *c);
/* Rank 0 reads TERN_TUNING (or the default path) and hands the text to every rank through the
 * store, so that all choose alike (tuned.c). *out: the tuning, or none (the built-in model).
 * A TERN_TUNING that cannot be used fails start-up with the reason; a bad file at the default
 * path is only warned about. */
tern_status coll_tuning_share(tern_comm *c, coll_tuning *out, bool *tuned);

/* The scratch buffer (TMP) for the running collective: at least bytes, kept between calls. */
tern_status coll_state_tmp(tern_comm *c, size_t bytes, char **out);

/* The algorithm c's last collective of kind ran (AUTO before its first run), for tools that
 * report it (`tern demo`): the executor writes it on whichever thread runs operations, so read
 * it when none is outstanding. What they moved is c->bytes_sent and bytes_received. */
coll_algo coll_state_last_algo(tern_comm *c, coll_kind kind);
void coll_state_set_last_algo(tern_comm *c, coll_kind kind, coll_algo algo);

#endif /* TERN_COLL_COLL_H */

/* coll.h: running operations: requests, the engine that runs them in order, the executor that
 * runs one schedule over the transports.
 *
 * A public call becomes a request (what to do, on which buffers). Blocking calls on an idle
 * communicator run at once on the caller's thread; everything else queues, and runs in issue
 * order on whichever thread gets there first: the communicator's progress thread (so that
 * nonblocking operations advance while the caller computes) or a caller waiting in tern_wait.
 */
#ifndef TERN_COLL_COLL_H
#define TERN_COLL_COLL_H

#include "coll/sched.h"
#include "coll/tuning.h"
#include "comm/comm.h"

typedef enum coll_req_type { COLL_REQ_COLL, COLL_REQ_SEND, COLL_REQ_RECV } coll_req_type;
#define COLL_ANY_PEER (-1) /* tern_recv_any's peer until a sender is found (exec.c) */

struct tern_request {
  tern_comm *comm;
  coll_req_type type;
  coll_args args;      /* collectives: kind, rank, size, root, count, inplace */
  const void *sendbuf; /* collectives and send */
  void *recvbuf;       /* collectives and recv */
  tern_dtype dt;
  tern_op op;
  int peer;     /* send and recv; COLL_ANY_PEER for a receive from any source until matched */
  int *source;  /* a receive from any source: where the sender's rank goes */
  uint32_t seq; /* collectives: the communicator's count when issued */
  uint64_t submitted_ns; /* nonblocking: when it was issued (its caller's grace, engine.c) */
  /* the run */
  coll_sched sched; /* kept warm between uses of this request slot */
  net_xfer *xfers;
  size_t xfers_cap;
  bool done;
  bool in_use;
  tern_status status;
};

/* ---- the executor (exec.c) --------------------------------------------------------------- */

/* Runs a collective request to the end (or the first failure) on the calling thread. */
tern_status coll_exec_coll(tern_comm *c, tern_request *r);
/* Posts point-to-point request r (its one transfer: r->xfers[0]). The engine keeps every
 * point-to-point request issued in a row in flight together, so that a swap (each side isend then
 * irecv) completes however large the messages (engine.c, run_p2p). */
tern_status coll_exec_p2p_post(tern_comm *c, tern_request *r);
/* A receive from any source not matched yet (r->peer COLL_ANY_PEER, its transfer unposted):
 * when some peer's next message to this rank is its next send, r takes that peer, its
 * *source is set and it is posted (*matched). Otherwise nothing happens. */
tern_status coll_exec_p2p_match(tern_comm *c, tern_request *r, bool *matched);
/* Runs one point-to-point request to the end on the calling thread (a blocking call). */
tern_status coll_exec_p2p(tern_comm *c, tern_request *r);
/* Whether c is healthy as an operation starts (its error text is then cleared), so that a
 * failure of the operation names it. */
bool coll_exec_fresh(tern_comm *c);
/* Puts "send/recv (n requests)" in front of a fresh failure's message. */
tern_status coll_exec_p2p_failed(tern_comm *c, tern_status rc, bool fresh, int n);

/* ---- the engine (engine.c) --------------------------------------------------------------- */

/* Opens a communicator and starts its engine (tern_comm_init, tern_comm_split). served: a store
 * this rank already serves at `store` (split's child root), owned by the communicator from then
 * on, stopped with it or on failure; NULL otherwise. */
tern_status coll_comm_open(tern_comm **out, int rank, int size, const char *store, bool serve,
                           store_server *served);
tern_status coll_engine_start(tern_comm *c);
/* Stops the progress thread; outstanding requests end with TERN_ERR_ABORTED. */
void coll_engine_stop(tern_comm *c);
/* True while requests are outstanding. */
bool coll_engine_busy(tern_comm *c);
/* Wakes every thread waiting on c (after comm_abort). */
void coll_engine_wake_all(tern_comm *c);

/* A blocking call: runs *proto now on this thread if nothing is outstanding, else queues it
 * behind what is and waits. Uses request slots whose storage is kept warm: a warm communicator
 * allocates nothing here. */
tern_status coll_engine_run_blocking(tern_comm *c, const tern_request *proto);
/* Takes a free request slot, copies *proto into it, queues it and wakes the progress thread. */
tern_status coll_engine_submit(tern_comm *c, const tern_request *proto, tern_request **out);

/* The selector's last answer for a kind of collective, remembered per communicator: calls in a
 * training loop repeat the same (count, dtype), and the answer depends on nothing else. */
typedef struct coll_choice {
  size_t count, elem_size;
  coll_algo algo;  /* COLL_ALGO_AUTO: nothing remembered yet */
  coll_algo inner; /* hier's inter-host algorithm */
} coll_choice;
coll_choice *coll_engine_choice(tern_comm *c, coll_kind kind);

/* The schedules this communicator built last (cache.c): the executor's, so used only by the
 * thread running operations (under the engine's run lock). */
coll_sched_cache *coll_engine_scheds(tern_comm *c);

/* Which host each rank is on (NULL on one host, or with one rank a host): coll_args.hosts. */
const coll_hosts *coll_engine_hosts(const tern_comm *c);

/* An algorithm forced for the calls that follow (`tern tune` measures each one this way);
 * AUTO gives the choice back to TERN_ALGO and the selector. */
void coll_engine_force(tern_comm *c, coll_algo algo);
coll_algo coll_engine_forced(tern_comm *c);

/* Fills the fields of a that this communicator's layout decides (ppn, hosts, dealt,
 * shared_memory), as the executor does before it builds a schedule (exec.c); `tern tune`
 * compares algorithms' schedules with them. */
void coll_args_place(const tern_comm *c, coll_args *a);

/* The tuning in use (NULL: none; the built-in model chooses). */
const coll_tuning *coll_engine_tuning(tern_comm *c);
/* Rank 0 reads TERN_TUNING (or the default path) and hands the text to every rank through the
 * store, so that all choose alike. A TERN_TUNING that cannot be used fails start-up with the
 * reason; a bad file at the default path is only warned about. */
tern_status coll_engine_share_tuning(tern_comm *c);
/* Takes t (its arrays are the engine's from now on). */
void coll_engine_set_tuning(tern_comm *c, coll_tuning *t);

/* The scratch buffer (TMP) for the running collective: at least bytes, kept between calls. */
tern_status coll_engine_tmp(tern_comm *c, size_t bytes, char **out);

/* What this rank's operations have moved since the communicator opened, for tools that report
 * it (`tern demo`): payload bytes posted to peers (sent) and from them (received), and the
 * algorithm each kind of collective ran last (AUTO before its first run). The executor writes
 * them on whichever thread runs operations: read them when none is outstanding. */
typedef struct coll_counters {
  uint64_t bytes_sent, bytes_received;
  coll_algo last_algo[COLL_NUM_KINDS];
} coll_counters;
coll_counters *coll_engine_counters(tern_comm *c);

#endif /* TERN_COLL_COLL_H */

/* engine.h: the communicator's progress engine: requests, their queue, the progress thread.
 *
 * A public call becomes a request (what to do, on which buffers). Blocking calls on an idle
 * communicator run at once on the caller's thread; everything else queues, and runs in issue
 * order on whichever thread gets there first: the communicator's progress thread (so that
 * nonblocking operations advance while the caller computes) or a caller waiting in tern_wait.
 *
 * The engine runs point-to-point requests itself (p2p.c). A collective it hands to the runner
 * that the layer above plugged in when the communicator was made (coll/runner.c): comm knows
 * nothing of how a collective is done, only that it runs to the end on the calling thread.
 */
#ifndef TERN_COMM_ENGINE_H
#define TERN_COMM_ENGINE_H

#include "comm/comm.h"

typedef enum comm_req_type { COMM_REQ_COLL, COMM_REQ_SEND, COMM_REQ_RECV } comm_req_type;
#define COMM_ANY_PEER (-1) /* tern_recv_any's peer until a sender is found (p2p.c) */

struct tern_request {
  tern_comm *comm;
  comm_req_type type;
  int coll;     /* collectives: which one, in the runner's numbering */
  int root;     /* collectives with a root */
  bool inplace; /* collectives */
  size_t count;
  const size_t *v[4];  /* alltoallv: send counts, send displs, recv counts, recv displs (the
                          caller's arrays, size each, in the runner's order: coll_vcounts) */
  const void *sendbuf; /* collectives and send */
  void *recvbuf;       /* collectives and recv */
  tern_dtype dt;
  tern_op op;
  int peer;     /* send and recv; COMM_ANY_PEER for a receive from any source until matched */
  int *source;  /* a receive from any source: where the sender's rank goes */
  uint32_t seq; /* collectives: the communicator's count when it ran */
  uint64_t submitted_ns; /* nonblocking: when it was issued (its caller's grace, engine.c) */
  /* the run */
  net_xfer *xfers; /* kept between uses of this request slot: a warm one allocates nothing */
  size_t xfers_cap;
  bool done;
  bool in_use;
  tern_status status;
};

/* What the layer above supplies to run collectives on a communicator. */
typedef struct comm_runner {
  /* Makes the runner's state for c, once c is open (and before its progress thread starts); it
   * may agree on it with the other ranks through the store. */
  tern_status (*start)(tern_comm *c, void **state);
  /* Runs collective request r to the end (or its first failure) on the calling thread; it
   * reaches its state with comm_engine_runner_state. A fresh failure's message names the
   * operation (comm_op_failed). */
  tern_status (*run)(tern_comm *c, tern_request *r);
  /* Frees what start made. */
  void (*stop)(void *state);
} comm_runner;

/* Starts c's engine: the runner's state, then the progress thread. */
tern_status comm_engine_start(tern_comm *c, const comm_runner *runner);
/* Stops the progress thread; outstanding requests end with TERN_ERR_ABORTED. */
void comm_engine_stop(tern_comm *c);
/* The state the runner was started with. */
void *comm_engine_runner_state(const tern_comm *c);
/* True while requests are outstanding. */
bool comm_engine_busy(tern_comm *c);
/* Wakes every thread waiting on c (after comm_abort). */
void comm_engine_wake_all(tern_comm *c);

/* A blocking call: runs *proto now on this thread if nothing is outstanding, else queues it
 * behind what is and waits. Uses request slots whose storage is kept warm: a warm communicator
 * allocates nothing here. */
tern_status comm_engine_run_blocking(tern_comm *c, const tern_request *proto);
/* Takes a free request slot, copies *proto into it, queues it and wakes the progress thread. */
tern_status comm_engine_submit(tern_comm *c, const tern_request *proto, tern_request **out);

/* ---- operations' transfers and failures (p2p.c) ------------------------------------------ */

/* Room for n transfers in r->xfers. */
tern_status comm_request_xfers(tern_comm *c, tern_request *r, size_t n);
/* Posts one transfer of an operation, counting its payload (c->bytes_sent, bytes_received). */
tern_status comm_post_counted(tern_comm *c, net_xfer *x);
/* Posts point-to-point request r (its one transfer: r->xfers[0]). The engine keeps every
 * point-to-point request issued in a row in flight together, so that a swap (each side isend then
 * irecv) completes however large the messages (engine.c, run_p2p). */
tern_status comm_p2p_post(tern_comm *c, tern_request *r);
/* A receive from any source not matched yet (r->peer COMM_ANY_PEER, its transfer unposted):
 * when some peer's next message to this rank is its next send, r takes that peer, its
 * *source is set and it is posted (*matched). Otherwise nothing happens. */
tern_status comm_p2p_match(tern_comm *c, tern_request *r, bool *matched);
/* Runs one point-to-point request to the end on the calling thread (a blocking call). */
tern_status comm_p2p_run(tern_comm *c, tern_request *r);
/* Whether c is healthy as an operation starts (its error text is then cleared), so that a
 * failure of the operation names it. */
bool comm_op_fresh(tern_comm *c);
/* Puts the operation in front of a fresh failure's message: "allreduce #12 on rank 0: ...". */
tern_status comm_op_failed(tern_comm *c, tern_status rc, bool fresh, const char *op);
/* The same for n point-to-point requests: "send/recv (n requests)". */
tern_status comm_p2p_failed(tern_comm *c, tern_status rc, bool fresh, int n);

/* ---- making and ending communicators (api_comm.c) ---------------------------------------- */

/* Opens a communicator and starts its engine with runner. served: a store this rank already
 * serves at `store` (split's child root), owned by the communicator from then on, stopped with it
 * or on failure; NULL otherwise. On failure tern_comm_last_error(NULL) says why. */
tern_status comm_create(tern_comm **out, int rank, int size, const char *store, bool serve,
                        store_server *served, const comm_runner *runner);
/* comm_create with rank, size and store from the environment (env.c). */
tern_status comm_create_env(tern_comm **out, const comm_runner *runner);

#endif /* TERN_COMM_ENGINE_H */

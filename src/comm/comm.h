/* comm.h: the communicator: who the ranks are, how this rank reaches each of them, and how it
 * waits for them.
 *
 * comm_open() meets the other ranks at the store, connects to each (shared memory on this host,
 * TCP elsewhere, or TCP everywhere with TERN_TRANSPORT=tcp) with a handshake on every
 * connection, and returns when all are connected. comm_progress() and comm_idle() are the two
 * halves of every wait: move what can move, else wait (spin briefly, yield, then sleep on a
 * futex or in poll), while watching the deadline, the abort flag, the store's notices and the
 * liveness of the peers being waited for. The engine that runs operations (engine.h) stands on
 * these.
 */
#ifndef TERN_COMM_COMM_H
#define TERN_COMM_COMM_H

#include "comm/store.h"
#include "net/transport.h"

#include <pthread.h>

typedef enum comm_link { COMM_LINK_SELF, COMM_LINK_SHM, COMM_LINK_TCP } comm_link;

typedef struct comm_peer {
  int rank;
  comm_link link;
  net_tcp_chan tcp;
  net_shm_chan shm;
  net_shm_seg *seg; /* the peer's segment, mapped (shared memory peers) */
  int pidfd;        /* shared memory peers: readable once the process has exited */
  int pid;
  char addr[80]; /* "ip:port" it listened on */
  char host[64];
  char what[112]; /* "rank 3 (127.0.0.1:4711)" for messages */
  uint32_t p2p_send_seq, p2p_recv_seq;
  bool active; /* on the communicator's active list */
} comm_peer;

typedef struct comm_engine comm_engine; /* engine.c: requests and the progress thread */

struct tern_comm {
  int rank, size;
  int local_rank, local_size; /* among the ranks on this host */
  core_err err;               /* what went wrong in the last operation (its runner writes it) */
  core_err arg_err;           /* what was wrong with the last bad call (the caller writes it) */
  _Atomic bool arg_err_last;  /* arg_err is newer than err */
  double timeout_s;
  int nstreams;

  store_client *store;
  store_server *server; /* when this rank serves the store */
  uint8_t run_id[16];
  char gen[32]; /* this communicator's prefix of store keys */

  comm_peer *peers; /* size entries, peers[rank] is this rank (COMM_LINK_SELF) */
  int *active;      /* ranks with queued transfers, the ones progress looks at */
  int nactive;
  net_shm_seg *seg; /* this rank's segment (when it has peers on the host) */
  int listen_fd;    /* kept open after start-up only to refuse and log strays */
  int abort_fd;     /* eventfd: readable once aborted */
  _Atomic bool aborted;
  tern_status broken;  /* the first failure that left the channels in an unknown state */
  bool oversubscribed; /* more ranks on this host than CPUs we may run on */
  int host_cpus;       /* the CPUs this host's ranks share (open.c's online_cpus) */
  bool any_tcp;        /* some peer is reached over TCP */
  int ppn;             /* ranks per host when hosts hold equal contiguous blocks, else 0 */
  int *host_id;        /* size: each rank's host, named by the lowest rank on it */
  int nhosts;
  uint64_t alive_checked_ns; /* when comm_check_alive last looked */
  uint32_t alive_calls;      /* comm_check_alive calls, to read the clock on every 16th */
  bool any_source;           /* a receive from any source waits for a sender: waits watch every
                                peer (comm_peek_p2p) */
  int any_next;              /* the peer comm_peek_p2p looks at first: the one after the last
                                matched, so that none starves */

  /* what operations have moved since the communicator opened (payload posted to peers and from
   * them), written by whichever thread runs them (engine.h), for tools that report it */
  uint64_t bytes_sent, bytes_received;

  comm_engine *engine;
};

/* ---- opening and closing (open.c, connect.c, shm_setup.c) -------------------------------- */

/* Joins the group: rank of size, the store at store_addr, serving it there when serve_store.
 * Fills c (allocated by the caller, zeroed). On failure c->err says why and everything opened
 * so far is closed again. */
tern_status comm_open(tern_comm *c, int rank, int size, const char *store_addr, bool serve_store);
/* Leaves the group cleanly (a goodbye to the store; the rank serving it waits for the others to
 * leave first) and frees everything comm_open made. */
void comm_close(tern_comm *c);
/* Wakes every wait and makes every later one fail with TERN_ERR_ABORTED; peers see this rank
 * go. Any thread, any time, more than once. */
void comm_abort(tern_comm *c);
/* Marks the communicator broken by rc (the first failure wins) and tells the peers at once: its
 * TCP connections are shut and its segment is marked, so that a peer waiting on this rank fails
 * now instead of at its deadline. Returns rc. */
tern_status comm_break(tern_comm *c, tern_status rc);

/* TCP mesh set-up: connects to lower ranks, accepts higher ones (connect.c). */
tern_status comm_connect_tcp(tern_comm *c, uint64_t deadline_ns);
/* Shared-memory set-up for the peers on this host (shm_setup.c). */
tern_status comm_setup_shm(tern_comm *c, const char *gen, uint64_t deadline_ns);
/* Once every rank is connected: whether single copy pays on this host, timed by its two lowest
 * ranks (shm_calibrate.c); where the rings won, single copy is off for the host's peers. */
tern_status comm_calibrate_shm(tern_comm *c, const char *gen, uint64_t deadline_ns);
/* Accepts and refuses, with a log line, any connection to the listening port after start-up. */
void comm_refuse_strays(tern_comm *c);

/* ---- moving and waiting (progress.c, wait.c) --------------------------------------------- */

/* Queues a transfer on the channel to x->peer and puts the peer on the active list. */
tern_status comm_post(tern_comm *c, net_xfer *x);
/* Moves what can move on every active peer; drops peers that have nothing queued. A lost
 * connection breaks the communicator, and its message gets the store's account of the cause
 * when one comes (the peer at the other end may only be closing because a third rank died). */
tern_status comm_progress(tern_comm *c, bool *moved);
void comm_explain_loss(tern_comm *c);
/* A receive from any source: *peer is the first rank, looking from c->any_next on, whose next
 * message to this rank is its next send (seq p2p_recv_seq) and that has no receive of this
 * rank's queued; -1 when none has one yet. The message stays where it is, for a receive posted
 * to that peer. */
tern_status comm_peek_p2p(tern_comm *c, int *peer);

/* The state of one wait: when it started making no progress, how it escalates. */
typedef struct comm_idle_state {
  uint64_t idle_since_ns;
  uint64_t last_check_ns;
  uint32_t looks; /* while spinning: looks since the clock was last read */
  bool spinning;  /* the clock's last reading was within the spin phase */
} comm_idle_state;

void comm_idle_reset(comm_idle_state *st);
/* Called when a progress pass moved nothing: spins a little, yields, then sleeps until
 * something may have changed; checks the abort flag, the store's notices, the peers being waited
 * for, and the deadline (TERN_TIMEOUT seconds without progress). `waiting` names what the wait
 * is for in messages (the first unfinished transfer). */
tern_status comm_idle(tern_comm *c, comm_idle_state *st, const net_xfer *waiting);
/* Progresses, waiting as comm_idle does, until every transfer in xs is complete. */
tern_status comm_wait_all(tern_comm *c, net_xfer *xs, size_t n);

/* Fails fast with the communicator's standing error when it is aborted or broken. */
tern_status comm_check_usable(tern_comm *c);
/* At most every few milliseconds, reads the store's notices: a rank that never has to wait (a
 * broadcast root, say) still learns that a peer was lost. Cheap enough for every operation. */
tern_status comm_check_alive(tern_comm *c);

#endif /* TERN_COMM_COMM_H */

/* tern.h: the whole public C API of tern.
 *
 * tern moves the data of deep-learning training between processes and machines: collectives
 * over shared memory within a host and TCP across hosts (this header), swarm averaging and geo
 * planning (their own sections below as they land).
 *
 * Conventions, after NCCL and libuv:
 *  - every call that can fail returns a tern_status; tern_status_str() names it and
 *    tern_comm_last_error() says what failed, with which peer, in which operation;
 *  - counts are elements, not bytes; sendbuf == recvbuf means in place;
 *  - a communicator is used by one thread at a time, except tern_comm_abort(), which any
 *    thread may call at any moment;
 *  - the library never prints to stdout and never exits the process.
 */
#ifndef TERN_H
#define TERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TERN_VERSION_MAJOR 0
#define TERN_VERSION_MINOR 1
#define TERN_VERSION_PATCH 0

typedef enum tern_status {
  TERN_OK = 0,
  TERN_ERR_INVALID_ARG, /* a bad argument, or ranks that disagree on one (count, root, ...) */
  TERN_ERR_TIMEOUT,     /* a wait passed TERN_TIMEOUT seconds without progress */
  TERN_ERR_PEER_LOST,   /* a peer died, closed its connection, or was reported dead */
  TERN_ERR_PROTOCOL,    /* a peer sent bytes that are not tern's protocol */
  TERN_ERR_AUTH,        /* a peer without the shared key (TERN_KEY), or the wrong run */
  TERN_ERR_NOMEM,       /* out of memory */
  TERN_ERR_SYSTEM,      /* an operating-system call failed (errno is in the message) */
  TERN_ERR_ABORTED,     /* tern_comm_abort() was called, here or on a peer */
  TERN_ERR_UNSUPPORTED  /* a valid request this build or this host cannot serve */
} tern_status;

typedef enum tern_dtype {
  TERN_F32,
  TERN_F64,
  TERN_F16,  /* IEEE binary16; reduced in f32, rounded to nearest even after each step */
  TERN_BF16, /* bfloat16; reduced in f32, rounded to nearest even after each step */
  TERN_I8,
  TERN_U8,
  TERN_I32,
  TERN_I64
} tern_dtype;
#define TERN_NUM_DTYPES 8

typedef enum tern_op {
  TERN_SUM,
  TERN_PROD,
  TERN_MIN,
  TERN_MAX,
  TERN_AVG /* the sum divided by the number of ranks; integers: the sum wraps in the element
              type and the division truncates toward zero, as C does */
} tern_op;
#define TERN_NUM_OPS 5

typedef struct tern_comm tern_comm;       /* opaque: one member of a group of ranks */
typedef struct tern_request tern_request; /* opaque: one outstanding nonblocking operation */

/* ---- version, status, types -------------------------------------------------------------- */

/* "0.1.0". */
const char *tern_version_str(void);
/* A short constant text for a status: "TERN_ERR_TIMEOUT: ...". Never NULL. */
const char *tern_status_str(tern_status s);
/* Bytes per element, or 0 for a value outside tern_dtype. */
size_t tern_dtype_size(tern_dtype dt);
/* "f32", "bf16", ...; "sum", "avg", ...; NULL for values outside the enums. */
const char *tern_dtype_name(tern_dtype dt);
const char *tern_op_name(tern_op op);

/* ---- communicators ----------------------------------------------------------------------- */

/* Joins the group described by the environment: TERN_RANK, TERN_WORLD_SIZE and TERN_STORE (set
 * by `tern run`), or torchrun's RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (rank 0 then serves
 * the store), or Open MPI's, MPICH's or Slurm's rank variables with TERN_STORE or MASTER_ADDR.
 * Blocks until every rank has joined, for at most TERN_TIMEOUT seconds. On failure *comm is NULL
 * and the reason is logged; tern_comm_last_error(NULL) returns it too. */
tern_status tern_comm_init_env(tern_comm **comm);

/* Joins the group of `size` ranks as `rank`, meeting the others at the store `host:port`. When
 * rank is 0 and nothing listens at that address on this host, rank 0 serves the store itself. */
tern_status tern_comm_init(tern_comm **comm, int rank, int size, const char *store);

int tern_comm_rank(const tern_comm *comm);
int tern_comm_size(const tern_comm *comm);

/* Ends every operation in progress on comm, from any thread: each waiter returns
 * TERN_ERR_ABORTED, peers see this rank leave, and every later call returns TERN_ERR_ABORTED.
 * The communicator must still be destroyed. */
void tern_comm_abort(tern_comm *comm);

/* Leaves the group and frees everything. Outstanding requests are cancelled and freed. NULL is
 * accepted. */
void tern_comm_destroy(tern_comm *comm);

/* What went wrong last on comm (or in the last failed init when comm is NULL): the operation,
 * the peer's rank and address, and the cause. "" when nothing failed. Valid until the next call
 * on comm. */
const char *tern_comm_last_error(const tern_comm *comm);

/* What this rank's operations on comm have moved since it opened: the payload bytes posted to
 * peers (*sent) and from them (*received), headers left out. Read them while no request is
 * outstanding: the progress thread writes them. */
tern_status tern_comm_traffic(const tern_comm *comm, uint64_t *sent, uint64_t *received);

/* The algorithm ("ring", "rhd", "hier", ...) this rank's last collective of the kind named
 * ("allreduce", "broadcast", ...; tern_bench's names) ran on comm; "" before the first, NULL
 * when comm is NULL or the name is no collective's. While no request is outstanding, as above. */
const char *tern_comm_last_algorithm(const tern_comm *comm, const char *collective);

/* ---- sub-communicators (MPI_Comm_split, ncclCommSplit) ---------------------------------- */

/* No child for this rank (MPI_UNDEFINED). */
#define TERN_SPLIT_UNDEFINED (-1)

/* Collective over parent: the ranks that pass the same color (>= 0) form one child, ranked by
 * key, ties by their parent rank; *child is this rank's, or NULL for TERN_SPLIT_UNDEFINED. The
 * child has transports of its own of the parent's kinds (shared memory on a host, TCP across).
 * Bounded by TERN_TIMEOUT like every wait. */
tern_status tern_comm_split(tern_comm *parent, int color, int key, tern_comm **child);

/* ---- collectives (blocking) -------------------------------------------------------------- */

/* recvbuf[i] = op over ranks of sendbuf[i], on every rank; count elements. */
tern_status tern_allreduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           tern_dtype dt, tern_op op);
/* sendbuf holds size * recvcount elements; rank r receives block r of the reduction.
 * In place when recvbuf == sendbuf + rank * recvcount elements. */
tern_status tern_reduce_scatter(tern_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
                                tern_dtype dt, tern_op op);
/* recvbuf holds size * sendcount elements, block r from rank r.
 * In place when sendbuf == recvbuf + rank * sendcount elements. */
tern_status tern_allgather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                           tern_dtype dt);
/* root's sendbuf reaches every rank's recvbuf; sendbuf is read on root only. */
tern_status tern_broadcast(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           tern_dtype dt, int root);
/* root's recvbuf = op over ranks of sendbuf; recvbuf is written on root only (may be NULL
 * elsewhere). */
tern_status tern_reduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                        tern_dtype dt, tern_op op, int root);
/* Block j of rank i's sendbuf (count elements) lands in block i of rank j's recvbuf.
 * Not in place: sendbuf and recvbuf must not overlap. */
tern_status tern_alltoall(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                          tern_dtype dt);
/* MPI_Alltoallv: rank i's block for rank j (send_counts[j] elements at send_displs[j] of
 * sendbuf) lands in rank j's recvbuf at recv_displs[i], recv_counts[i] elements. The four arrays
 * hold one entry per rank, in elements of dt; blocks may lie in any order, with gaps, but the
 * blocks of recvbuf must not overlap. Each pair of ranks must agree (rank i's send_counts[j] is
 * rank j's recv_counts[i]): the two ends of a pair that disagrees both return
 * TERN_ERR_INVALID_ARG, at any count, zero included; they do not wait for the deadline. In place
 * when sendbuf == recvbuf (which then holds both layouts; the send blocks are staged in scratch
 * first). */
tern_status tern_alltoallv(tern_comm *c, const void *sendbuf, const size_t *send_counts,
                           const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                           const size_t *recv_displs, tern_dtype dt);
/* root's recvbuf holds size * sendcount elements, block r from rank r (MPI_Gather); recvbuf is
 * written on root only (may be NULL elsewhere). In place on root when sendbuf == recvbuf +
 * root * sendcount elements. */
tern_status tern_gather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                        tern_dtype dt, int root);
/* root's sendbuf holds size * recvcount elements; rank r's recvbuf gets block r (MPI_Scatter);
 * sendbuf is read on root only (may be NULL elsewhere). In place on root when recvbuf ==
 * sendbuf + root * recvcount elements. */
tern_status tern_scatter(tern_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
                         tern_dtype dt, int root);
/* Returns once every rank has entered it. */
tern_status tern_barrier(tern_comm *c);
/* Point to point: each tern_send to peer is matched, in order, by one tern_recv from this rank
 * with the same count and dtype. */
tern_status tern_send(tern_comm *c, const void *buf, size_t count, tern_dtype dt, int peer);
tern_status tern_recv(tern_comm *c, void *buf, size_t count, tern_dtype dt, int peer);
/* A receive from any source (MPI_ANY_SOURCE): takes the next send to this rank of whichever
 * peer has one waiting (peers with a receive of their own posted are left to it; the peers are
 * looked at in turn, so none starves). *source gets the sender's rank. The message must have
 * count elements of dt, as with tern_recv. */
tern_status tern_recv_any(tern_comm *c, void *buf, size_t count, tern_dtype dt, int *source);

/* ---- collectives (nonblocking) ----------------------------------------------------------- */
/* Each starts the operation and returns at once with *req set; the operation advances in the
 * background while the caller computes, in the order the calls were made. Buffers must stay
 * valid and untouched until the request completes. Up to TERN_MAX_OUTSTANDING requests may be
 * outstanding per communicator; blocking calls queue behind them. */
#define TERN_MAX_OUTSTANDING 64

tern_status tern_iallreduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                            tern_dtype dt, tern_op op, tern_request **req);
tern_status tern_ireduce_scatter(tern_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
                                 tern_dtype dt, tern_op op, tern_request **req);
tern_status tern_iallgather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                            tern_dtype dt, tern_request **req);
tern_status tern_ibroadcast(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                            tern_dtype dt, int root, tern_request **req);
tern_status tern_ireduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                         tern_dtype dt, tern_op op, int root, tern_request **req);
tern_status tern_ialltoall(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           tern_dtype dt, tern_request **req);
/* The counts and displacements too must stay valid until the request completes. */
tern_status tern_ialltoallv(tern_comm *c, const void *sendbuf, const size_t *send_counts,
                            const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                            const size_t *recv_displs, tern_dtype dt, tern_request **req);
tern_status tern_igather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                         tern_dtype dt, int root, tern_request **req);
tern_status tern_iscatter(tern_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
                          tern_dtype dt, int root, tern_request **req);
tern_status tern_ibarrier(tern_comm *c, tern_request **req);
tern_status tern_isend(tern_comm *c, const void *buf, size_t count, tern_dtype dt, int peer,
                       tern_request **req);
tern_status tern_irecv(tern_comm *c, void *buf, size_t count, tern_dtype dt, int peer,
                       tern_request **req);
/* *source is written when the request completes: it must stay valid until then. */
tern_status tern_irecv_any(tern_comm *c, void *buf, size_t count, tern_dtype dt, int *source,
                           tern_request **req);

/* Waits for req, frees it and returns the operation's status. */
tern_status tern_wait(tern_request *req);
/* Sets *done to 1 when req has completed; then req is freed and its status returned. Otherwise
 * *done is 0, req stays valid and TERN_OK is returned. */
tern_status tern_test(tern_request *req, int *done);

/* ---- swarm averaging (Moshpit) ----------------------------------------------------------- */
/* Peers that find each other through a DHT (OpenDHT, bootstrapped only from the addresses given)
 * average a float vector in small groups each round, after "Moshpit SGD" (Ryabinin et al.,
 * NeurIPS 2021): peer coordinates form a grid, and round r groups the peers that share every
 * coordinate but axis r mod d, so that N = M^d peers hold the exact global average after d
 * rounds. Inside a group a butterfly all-reduce: member j reduces part j (sized by its
 * bandwidth) and sends it back. A peer that dies or stalls is dropped at a deadline; the round
 * finishes with the contributions that arrived. docs/SWARM.md tells the whole story. */

typedef struct tern_swarm tern_swarm; /* opaque: this process's peer in one swarm */

/* Compression of the vectors on the wire, chosen per call of tern_swarm_average. */
typedef enum tern_compress {
  TERN_COMPRESS_NONE = 0, /* f32 */
  TERN_COMPRESS_FP16,     /* IEEE binary16, round to nearest even */
  TERN_COMPRESS_BF16,     /* bfloat16, round to nearest even */
  TERN_COMPRESS_INT8,     /* blocks of 256 values: one f32 scale (max |x| / 127) + 8-bit codes */
  TERN_COMPRESS_INT8EF    /* int8 codes of the difference to the reducer's part, with error
                             feedback: reaches the average, not 5e-3 off (docs/SWARM.md) */
} tern_compress;

#define TERN_SWARM_MAX_DIMS 8
#define TERN_SWARM_MAX_BOOTSTRAP 16

typedef struct tern_swarm_options {
  const char *listen; /* "host:port": the DHT's UDP port and the averaging TCP port (the same
                         number); port 0 picks a free one */
  const char *bootstrap[TERN_SWARM_MAX_BOOTSTRAP]; /* "host:port" of live peers, NULL-ended; the
                                                      only addresses the DHT is seeded with */
  const char *run_id; /* peers of one run share it; it also names the DHT network */
  const char *key;    /* shared secret or NULL (then TERN_KEY/TERN_KEY_FILE, if set): peers
                         and DHT records without it are refused */
  int ndims;          /* grid dimensions d (1..TERN_SWARM_MAX_DIMS); 0 means 1 */
  int coords[TERN_SWARM_MAX_DIMS]; /* this peer's place on the grid */
  double bandwidth; /* declared bandwidth in bytes/s (> 0; 0 means 1e9): part sizes follow it */
  int grid[TERN_SWARM_MAX_DIMS]; /* the grid's size per axis, or zeros (unknown). Known, a line
                                    of round r holds at most grid[r mod d] peers: its group
                                    closes once that many are in, without waiting to settle */
  int insecure;       /* without a key, a listen or bootstrap address that is not loopback is
                         refused (TERN_ERR_AUTH) unless this is 1: then anyone who reaches the
                         peer can join; the log says so (docs/SWARM.md, "Security") */
  const char *region; /* NULL, or the region this peer runs in (letters, digits, '.', '_', '-'):
                         then the grid is the regions' (ndims and coords are ignored): even
                         rounds average inside the region, odd ones with one peer of each other
                         region; with bandwidth 0 the peer measures its own (docs/SWARM.md,
                         "Regions") */
} tern_swarm_options;

typedef struct tern_swarm_average_options {
  tern_compress compress;
  int min_group;          /* fewer peers than this found: average alone (0 means 2) */
  int target_group;       /* stop matching once this many are found (0 means 64) */
  double match_timeout;   /* seconds to find and assemble a group (0 means 5) */
  double average_timeout; /* seconds for the all-reduce itself (0 means 10) */
  int random_groups;      /* 0: the group is this round's grid line. K > 0: random groups: each
                             round, the cells 0..K*target_group-1 (a peer's cell is coords[0])
                             are dealt into K groups of target_group by a permutation drawn from
                             the run id and the round, the same on every peer; K = N/2 with
                             target_group 2 is randomized pairwise gossip */
  int rounds;             /* the run's rounds, 0..rounds-1: a late peer that jumps to the others'
                             round (they closed its group without it) jumps no further than the
                             last; 0: no last round */
  double clip;            /* > 0: robust aggregation, CenteredClip with radius clip (the L2 norm of
                             a member's part minus the centre, per part): each member counts once,
                             whatever its weight; when the honest members lie within clip of the
                             centre, one member moves a part by at most clip / (members - 1).
                             0: the exact weighted mean (docs/SWARM.md, "Security") */
} tern_swarm_average_options;

#define TERN_SWARM_MAX_FAILED 16

typedef struct tern_swarm_report {
  unsigned round;   /* the round this call was (0, 1, ...) */
  int group_size;   /* members of the group, this peer included (1: alone) */
  int failed_count; /* members dropped during the all-reduce */
  unsigned long long failed[TERN_SWARM_MAX_FAILED]; /* their peer ids (the first 16) */
  int parts_updated; /* parts of the vector that came back averaged (of group_size) */
  double weight_before, weight_after; /* this peer's weight entering and leaving the round */
  unsigned long long bytes_sent, bytes_received; /* averaging traffic, headers included */
  double seconds_matching, seconds_averaging;
  int pooled; /* 1: alone on its grid line, this peer matched in the round's pool
                 of lonely peers (partners dead or gone) */
} tern_swarm_report;

/* Starts a peer: binds listen, starts the DHT, bootstraps from the given addresses. The peer id
 * is random. On failure *sw is NULL and tern_swarm_last_error(NULL) says why. */
tern_status tern_swarm_join(tern_swarm **sw, const tern_swarm_options *opt);
/* This peer's id and the "host:port" it listens on. */
unsigned long long tern_swarm_id(const tern_swarm *sw);
const char *tern_swarm_address(const tern_swarm *sw);
/* For a peer that joins a running swarm, before its first average: copies count values and the
 * round number from a live peer (one of the bootstrap addresses), so that this peer starts
 * where the swarm is. TERN_ERR_PEER_LOST when no bootstrap peer has a state to give. */
tern_status tern_swarm_download_state(tern_swarm *sw, float *values, size_t count,
                                      double timeout_s);
/* Sets the state this peer gives joiners (tern_swarm_download_state) to a copy of values, with
 * this peer's round, until its next average replaces it: a training loop that averages
 * gradients serves its parameters and optimizer state instead. */
tern_status tern_swarm_serve_state(tern_swarm *sw, const float *values, size_t count);
/* One round: finds a group, averages values (count floats, in place) with it, weighted by
 * *weight, and sets *weight to this peer's share of the group's total weight. opt may be NULL.
 * report (may be NULL) says what happened. A failed group is not an error: the call averages
 * with whoever is left (alone at worst) and says so in the report. Errors: bad arguments,
 * a count that differs from the group's (TERN_ERR_INVALID_ARG), system failures. */
tern_status tern_swarm_average(tern_swarm *sw, float *values, size_t count, double *weight,
                               const tern_swarm_average_options *opt, tern_swarm_report *report);
/* Publishes this peer's progress for `tern swarm status` (docs/CLI.md): the epoch and the
 * samples per second as the caller counts them, with this peer's round and the size of its last
 * group. The peer writes the record again every TERN_SWARM_STATUS_TTL / 3 seconds (default 30 s)
 * until it leaves; a record not refreshed within the TTL is no longer listed. Keyed, the record
 * carries a MAC and sits where only key holders look, as the matching records do. */
tern_status tern_swarm_publish_status(tern_swarm *sw, unsigned long long epoch,
                                      double samples_per_s);
/* Tells the last group this peer left, stops the DHT and frees everything. NULL is accepted. */
void tern_swarm_leave(tern_swarm *sw);
/* What went wrong last on sw (or in the last failed join when sw is NULL); "" when nothing. */
const char *tern_swarm_last_error(const tern_swarm *sw);

#ifdef __cplusplus
}
#endif
#endif /* TERN_H */

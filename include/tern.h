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
  TERN_ERR_UNSUPPORTED  /* a valid request this build or this machine cannot serve */
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

/* ---- collectives (blocking) -------------------------------------------------------------- */

/* recvbuf[i] = op over ranks of sendbuf[i], on every rank; count elements. */
tern_status tern_allreduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           tern_dtype dt, tern_op op);
/* sendbuf holds size * recvcount elements; rank r receives block r of the reduction.
 * In place when recvbuf == sendbuf + rank * recvcount elements. */
tern_status tern_reduce_scatter(tern_comm *c, const void *sendbuf, void *recvbuf,
                                size_t recvcount, tern_dtype dt, tern_op op);
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
/* Returns once every rank has entered it. */
tern_status tern_barrier(tern_comm *c);
/* Point to point: each tern_send to peer is matched, in order, by one tern_recv from this rank
 * with the same count and dtype. */
tern_status tern_send(tern_comm *c, const void *buf, size_t count, tern_dtype dt, int peer);
tern_status tern_recv(tern_comm *c, void *buf, size_t count, tern_dtype dt, int peer);

/* ---- collectives (nonblocking) ----------------------------------------------------------- */
/* Each starts the operation and returns at once with *req set; the operation advances in the
 * background while the caller computes, in the order the calls were made. Buffers must stay
 * valid and untouched until the request completes. Up to TERN_MAX_OUTSTANDING requests may be
 * outstanding per communicator; blocking calls queue behind them. */
#define TERN_MAX_OUTSTANDING 64

tern_status tern_iallreduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                            tern_dtype dt, tern_op op, tern_request **req);
tern_status tern_ireduce_scatter(tern_comm *c, const void *sendbuf, void *recvbuf,
                                 size_t recvcount, tern_dtype dt, tern_op op, tern_request **req);
tern_status tern_iallgather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                            tern_dtype dt, tern_request **req);
tern_status tern_ibroadcast(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                            tern_dtype dt, int root, tern_request **req);
tern_status tern_ireduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                         tern_dtype dt, tern_op op, int root, tern_request **req);
tern_status tern_ialltoall(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           tern_dtype dt, tern_request **req);
tern_status tern_ibarrier(tern_comm *c, tern_request **req);
tern_status tern_isend(tern_comm *c, const void *buf, size_t count, tern_dtype dt, int peer,
                       tern_request **req);
tern_status tern_irecv(tern_comm *c, void *buf, size_t count, tern_dtype dt, int peer,
                       tern_request **req);

/* Waits for req, frees it and returns the operation's status. */
tern_status tern_wait(tern_request *req);
/* Sets *done to 1 when req has completed; then req is freed and its status returned. Otherwise
 * *done is 0, req stays valid and TERN_OK is returned. */
tern_status tern_test(tern_request *req, int *done);

#ifdef __cplusplus
}
#endif
#endif /* TERN_H */

/* api_coll.c: the public collective and point-to-point calls.
 *
 * Each checks its arguments (a bad one is TERN_ERR_INVALID_ARG with a message that names the
 * argument, nothing is sent), works out whether the call is in place, and hands a request to the
 * engine: blocking calls wait for it, nonblocking ones return it. What the ranks must agree on
 * (count, dtype, op, root) travels with every message and is checked by the receiver.
 */
#include "coll/coll.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static tern_status bad_arg(tern_comm *c, const char *fmt, ...) CORE_PRINTF(2, 3);
static tern_status bad_arg(tern_comm *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  core_err_clear(&c->arg_err);
  core_err_vset(&c->arg_err, TERN_ERR_INVALID_ARG, fmt, ap);
  va_end(ap);
  atomic_store(&c->arg_err_last, true);
  return TERN_ERR_INVALID_ARG;
}

/* Checks the arguments every data call shares; *bytes gets count * elements-per-count * size. */
static tern_status check_common(tern_comm *c, const char *call, size_t count, size_t blocks,
                                tern_dtype dt, size_t *bytes) {
  if (!core_dtype_valid((int)dt))
    return bad_arg(c, "%s: dtype %d is not a tern_dtype", call, (int)dt);
  size_t esize = tern_dtype_size(dt);
  if (count > SIZE_MAX / esize / blocks)
    return bad_arg(c, "%s: count %zu of %s overflows the address space", call, count,
                   tern_dtype_name(dt));
  *bytes = count * esize;
  return TERN_OK;
}

static tern_status check_op(tern_comm *c, const char *call, tern_op op) {
  return core_op_valid((int)op) ? TERN_OK : bad_arg(c, "%s: op %d is not a tern_op", call, (int)op);
}

static tern_status check_root(tern_comm *c, const char *call, int root) {
  if (root < 0 || root >= c->size)
    return bad_arg(c, "%s: root %d is not a rank of this communicator (0..%d)", call, root,
                   c->size - 1);
  return TERN_OK;
}

static tern_status need_buf(tern_comm *c, const char *call, const char *name, const void *p,
                            size_t bytes) {
  return p == NULL && bytes > 0 ? bad_arg(c, "%s: %s is NULL", call, name) : TERN_OK;
}

static bool overlap(const void *a, size_t alen, const void *b, size_t blen) {
  const char *x = a, *y = b;
  return alen && blen && x < y + blen && y < x + alen;
}

/* Not in place, yet overlapping: the schedule would read what it already wrote. */
static tern_status check_apart(tern_comm *c, const char *call, const void *s, size_t slen,
                               const void *r, size_t rlen) {
  return overlap(s, slen, r, rlen)
             ? bad_arg(c, "%s: sendbuf and recvbuf overlap without being the in-place form", call)
             : TERN_OK;
}

static tern_status issue(tern_comm *c, const tern_request *proto, tern_request **req) {
  if (req == NULL) return comm_engine_run_blocking(c, proto);
  *req = NULL;
  return comm_engine_submit(c, proto, req);
}

static tern_request coll_proto(tern_comm *c, coll_kind kind, const void *s, void *r, size_t count,
                               tern_dtype dt, tern_op op, int root, bool inplace) {
  return (tern_request){.comm = c,
                        .type = COMM_REQ_COLL,
                        .coll = (int)kind,
                        .root = root,
                        .inplace = inplace,
                        .count = count,
                        .sendbuf = s,
                        .recvbuf = r,
                        .dt = dt,
                        .op = op};
}

#define CHECK(expr)                                                                                \
  do {                                                                                             \
    tern_status check_rc_ = (expr);                                                                \
    if (check_rc_ != TERN_OK) return check_rc_;                                                    \
  } while (0)

static tern_status do_allreduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                tern_dtype dt, tern_op op, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "allreduce", count, 1, dt, &b));
  CHECK(check_op(c, "allreduce", op));
  CHECK(need_buf(c, "allreduce", "sendbuf", sendbuf, b));
  CHECK(need_buf(c, "allreduce", "recvbuf", recvbuf, b));
  bool inplace = sendbuf == recvbuf;
  if (!inplace) CHECK(check_apart(c, "allreduce", sendbuf, b, recvbuf, b));
  tern_request p = coll_proto(c, COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op, 0, inplace);
  return issue(c, &p, req);
}

static tern_status do_reduce_scatter(tern_comm *c, const void *sendbuf, void *recvbuf,
                                     size_t recvcount, tern_dtype dt, tern_op op,
                                     tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "reduce_scatter", recvcount, (size_t)c->size, dt, &b));
  CHECK(check_op(c, "reduce_scatter", op));
  size_t all = b * (size_t)c->size;
  CHECK(need_buf(c, "reduce_scatter", "sendbuf", sendbuf, all));
  CHECK(need_buf(c, "reduce_scatter", "recvbuf", recvbuf, b));
  bool inplace = b > 0 && (const char *)recvbuf == (const char *)sendbuf + (size_t)c->rank * b;
  if (!inplace) CHECK(check_apart(c, "reduce_scatter", sendbuf, all, recvbuf, b));
  tern_request p =
      coll_proto(c, COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dt, op, 0, inplace);
  return issue(c, &p, req);
}

static tern_status do_allgather(tern_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
                                tern_dtype dt, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "allgather", sendcount, (size_t)c->size, dt, &b));
  size_t all = b * (size_t)c->size;
  CHECK(need_buf(c, "allgather", "sendbuf", sendbuf, b));
  CHECK(need_buf(c, "allgather", "recvbuf", recvbuf, all));
  bool inplace = b > 0 && (const char *)sendbuf == (const char *)recvbuf + (size_t)c->rank * b;
  if (!inplace) CHECK(check_apart(c, "allgather", sendbuf, b, recvbuf, all));
  tern_request p =
      coll_proto(c, COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dt, TERN_SUM, 0, inplace);
  return issue(c, &p, req);
}

static tern_status do_broadcast(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                tern_dtype dt, int root, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "broadcast", count, 1, dt, &b));
  CHECK(check_root(c, "broadcast", root));
  bool is_root = c->rank == root;
  if (is_root) CHECK(need_buf(c, "broadcast", "sendbuf (on the root)", sendbuf, b));
  CHECK(need_buf(c, "broadcast", "recvbuf", recvbuf, b));
  bool inplace = is_root && sendbuf == recvbuf;
  if (is_root && !inplace) CHECK(check_apart(c, "broadcast", sendbuf, b, recvbuf, b));
  tern_request p = coll_proto(c, COLL_BROADCAST, is_root ? sendbuf : NULL, recvbuf, count, dt,
                              TERN_SUM, root, inplace);
  return issue(c, &p, req);
}

static tern_status do_reduce(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                             tern_dtype dt, tern_op op, int root, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "reduce", count, 1, dt, &b));
  CHECK(check_op(c, "reduce", op));
  CHECK(check_root(c, "reduce", root));
  bool is_root = c->rank == root;
  CHECK(need_buf(c, "reduce", "sendbuf", sendbuf, b));
  if (is_root) CHECK(need_buf(c, "reduce", "recvbuf (on the root)", recvbuf, b));
  bool inplace = is_root && sendbuf == recvbuf;
  if (is_root && !inplace) CHECK(check_apart(c, "reduce", sendbuf, b, recvbuf, b));
  tern_request p =
      coll_proto(c, COLL_REDUCE, sendbuf, is_root ? recvbuf : NULL, count, dt, op, root, inplace);
  return issue(c, &p, req);
}

/* gather and scatter: the root's buffer holds size blocks of count (gather's recvbuf, scatter's
 * sendbuf), each rank's other buffer one block; in place on the root when that block is the
 * root's own in the whole. The whole is touched on the root only (may be NULL elsewhere). */
static tern_status do_rooted_blocks(tern_comm *c, coll_kind kind, const void *sendbuf,
                                    void *recvbuf, size_t count, tern_dtype dt, int root,
                                    tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  const char *call = coll_kind_name(kind);
  bool gather = kind == COLL_GATHER;
  size_t b = 0;
  CHECK(check_common(c, call, count, (size_t)c->size, dt, &b));
  CHECK(check_root(c, call, root));
  bool is_root = c->rank == root;
  size_t all = b * (size_t)c->size, sbytes = gather ? b : all, rbytes = gather ? all : b;
  if (gather || is_root) CHECK(need_buf(c, call, "sendbuf", sendbuf, sbytes));
  if (!gather || is_root) CHECK(need_buf(c, call, "recvbuf", recvbuf, rbytes));
  const char *block = gather ? sendbuf : recvbuf, *whole = gather ? recvbuf : sendbuf;
  bool inplace = is_root && b > 0 && block == whole + (size_t)root * b;
  if (is_root && !inplace) CHECK(check_apart(c, call, sendbuf, sbytes, recvbuf, rbytes));
  tern_request p =
      coll_proto(c, kind, gather || is_root ? sendbuf : NULL, !gather || is_root ? recvbuf : NULL,
                 count, dt, TERN_SUM, root, inplace);
  return issue(c, &p, req);
}

static tern_status do_alltoall(tern_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               tern_dtype dt, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t b = 0;
  CHECK(check_common(c, "alltoall", count, (size_t)c->size, dt, &b));
  size_t all = b * (size_t)c->size;
  CHECK(need_buf(c, "alltoall", "sendbuf", sendbuf, all));
  CHECK(need_buf(c, "alltoall", "recvbuf", recvbuf, all));
  bool inplace = sendbuf == recvbuf;
  if (!inplace) CHECK(check_apart(c, "alltoall", sendbuf, all, recvbuf, all));
  tern_request p = coll_proto(c, COLL_ALLTOALL, sendbuf, recvbuf, count, dt, TERN_SUM, 0, inplace);
  return issue(c, &p, req);
}

/* The elements alltoallv's blocks span in one buffer (the largest displ + count), or false with
 * the complaint made when an entry overflows the address space. */
static bool v_extent(tern_comm *c, const size_t *counts, const size_t *displs, size_t esize,
                     const char *which, size_t *out) {
  size_t end = 0, most = SIZE_MAX / esize;
  for (int q = 0; q < c->size; q++) {
    if (counts[q] > most || displs[q] > most - counts[q]) {
      bad_arg(c, "alltoallv: %s block %d (displ %zu, count %zu) overflows the address space", which,
              q, displs[q], counts[q]);
      return false;
    }
    if (counts[q]) end = CORE_MAX(end, displs[q] + counts[q]);
  }
  *out = end;
  return true;
}

/* What each pair of ranks must agree on (rank i's send count to j is j's receive count from i)
 * is checked by the two ends as the messages arrive (exec.c); here, what a rank alone can see. */
static tern_status do_alltoallv(tern_comm *c, const void *sendbuf, const size_t *scounts,
                                const size_t *sdispls, void *recvbuf, const size_t *rcounts,
                                const size_t *rdispls, tern_dtype dt, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  size_t none = 0, send = 0, recv = 0;
  CHECK(check_common(c, "alltoallv", 0, 1, dt, &none)); /* the dtype; counts are checked below */
  size_t esize = tern_dtype_size(dt);
  if (!scounts || !sdispls || !rcounts || !rdispls)
    return bad_arg(c, "alltoallv: a count or displacement array is NULL");
  if (!v_extent(c, scounts, sdispls, esize, "send", &send) ||
      !v_extent(c, rcounts, rdispls, esize, "receive", &recv))
    return TERN_ERR_INVALID_ARG;
  if (scounts[c->rank] != rcounts[c->rank])
    return bad_arg(c, "alltoallv: this rank sends itself %zu elements but receives %zu",
                   scounts[c->rank], rcounts[c->rank]);
  CHECK(need_buf(c, "alltoallv", "sendbuf", sendbuf, send * esize));
  CHECK(need_buf(c, "alltoallv", "recvbuf", recvbuf, recv * esize));
  bool inplace = sendbuf == recvbuf && sendbuf != NULL;
  if (!inplace) CHECK(check_apart(c, "alltoallv", sendbuf, send * esize, recvbuf, recv * esize));
  tern_request p = coll_proto(c, COLL_ALLTOALLV, sendbuf, recvbuf, 0, dt, TERN_SUM, 0, inplace);
  p.v[0] = scounts, p.v[1] = sdispls, p.v[2] = rcounts, p.v[3] = rdispls;
  return issue(c, &p, req);
}

static tern_status do_barrier(tern_comm *c, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  tern_request p = coll_proto(c, COLL_BARRIER, NULL, NULL, 0, TERN_U8, TERN_SUM, 0, false);
  return issue(c, &p, req);
}

/* peer COMM_ANY_PEER: a receive from any source, whose sender's rank goes to *source. */
static tern_status p2p(tern_comm *c, comm_req_type type, const void *sbuf, void *rbuf, size_t count,
                       tern_dtype dt, int peer, int *source, tern_request **req) {
  if (c == NULL) return TERN_ERR_INVALID_ARG;
  const char *call = type == COMM_REQ_SEND ? "send" : peer == COMM_ANY_PEER ? "recv_any" : "recv";
  size_t b = 0;
  CHECK(check_common(c, call, count, 1, dt, &b));
  CHECK(need_buf(c, call, "buf", type == COMM_REQ_SEND ? sbuf : rbuf, b));
  if (peer == COMM_ANY_PEER) {
    if (source == NULL) return bad_arg(c, "%s: source is NULL", call);
    if (c->size < 2) return bad_arg(c, "%s: a communicator of one rank has no peer", call);
  } else if (peer < 0 || peer >= c->size || peer == c->rank) {
    return bad_arg(c, "%s: peer %d is not another rank of this communicator (0..%d, not %d)", call,
                   peer, c->size - 1, c->rank);
  }
  tern_request p = {.comm = c,
                    .type = type,
                    .count = count,
                    .sendbuf = sbuf,
                    .recvbuf = rbuf,
                    .dt = dt,
                    .peer = peer,
                    .source = source};
  return issue(c, &p, req);
}

static tern_status do_send(tern_comm *c, const void *buf, size_t count, tern_dtype dt, int peer,
                           tern_request **req) {
  return p2p(c, COMM_REQ_SEND, buf, NULL, count, dt, peer, NULL, req);
}

static tern_status do_recv(tern_comm *c, void *buf, size_t count, tern_dtype dt, int peer,
                           tern_request **req) {
  return p2p(c, COMM_REQ_RECV, NULL, buf, count, dt, peer, NULL, req);
}

/* ---- the blocking forms ------------------------------------------------------------------ */

tern_status tern_allreduce(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                           tern_op op) {
  return do_allreduce(c, s, r, n, dt, op, NULL);
}
tern_status tern_reduce_scatter(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                                tern_op op) {
  return do_reduce_scatter(c, s, r, n, dt, op, NULL);
}
tern_status tern_allgather(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt) {
  return do_allgather(c, s, r, n, dt, NULL);
}
tern_status tern_broadcast(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                           int root) {
  return do_broadcast(c, s, r, n, dt, root, NULL);
}
tern_status tern_reduce(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, tern_op op,
                        int root) {
  return do_reduce(c, s, r, n, dt, op, root, NULL);
}
tern_status tern_alltoall(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt) {
  return do_alltoall(c, s, r, n, dt, NULL);
}
tern_status tern_alltoallv(tern_comm *c, const void *s, const size_t *scounts,
                           const size_t *sdispls, void *r, const size_t *rcounts,
                           const size_t *rdispls, tern_dtype dt) {
  return do_alltoallv(c, s, scounts, sdispls, r, rcounts, rdispls, dt, NULL);
}
tern_status tern_gather(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, int root) {
  return do_rooted_blocks(c, COLL_GATHER, s, r, n, dt, root, NULL);
}
tern_status tern_scatter(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, int root) {
  return do_rooted_blocks(c, COLL_SCATTER, s, r, n, dt, root, NULL);
}
tern_status tern_barrier(tern_comm *c) {
  return do_barrier(c, NULL);
}
tern_status tern_send(tern_comm *c, const void *buf, size_t n, tern_dtype dt, int peer) {
  return do_send(c, buf, n, dt, peer, NULL);
}
tern_status tern_recv(tern_comm *c, void *buf, size_t n, tern_dtype dt, int peer) {
  return do_recv(c, buf, n, dt, peer, NULL);
}
tern_status tern_recv_any(tern_comm *c, void *buf, size_t n, tern_dtype dt, int *source) {
  return p2p(c, COMM_REQ_RECV, NULL, buf, n, dt, COMM_ANY_PEER, source, NULL);
}

/* ---- the nonblocking forms: the same, with a request that must be given ------------------- */

#define NEED_REQ(call)                                                                             \
  do {                                                                                             \
    if (c == NULL) return TERN_ERR_INVALID_ARG;                                                    \
    if (req == NULL) return bad_arg(c, call ": req is NULL (the blocking form takes none)");       \
  } while (0)

tern_status tern_iallreduce(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                            tern_op op, tern_request **req) {
  NEED_REQ("iallreduce");
  return do_allreduce(c, s, r, n, dt, op, req);
}
tern_status tern_ireduce_scatter(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                                 tern_op op, tern_request **req) {
  NEED_REQ("ireduce_scatter");
  return do_reduce_scatter(c, s, r, n, dt, op, req);
}
tern_status tern_iallgather(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                            tern_request **req) {
  NEED_REQ("iallgather");
  return do_allgather(c, s, r, n, dt, req);
}
tern_status tern_ibroadcast(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, int root,
                            tern_request **req) {
  NEED_REQ("ibroadcast");
  return do_broadcast(c, s, r, n, dt, root, req);
}
tern_status tern_ireduce(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, tern_op op,
                         int root, tern_request **req) {
  NEED_REQ("ireduce");
  return do_reduce(c, s, r, n, dt, op, root, req);
}
tern_status tern_ialltoall(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt,
                           tern_request **req) {
  NEED_REQ("ialltoall");
  return do_alltoall(c, s, r, n, dt, req);
}
tern_status tern_ialltoallv(tern_comm *c, const void *s, const size_t *scounts,
                            const size_t *sdispls, void *r, const size_t *rcounts,
                            const size_t *rdispls, tern_dtype dt, tern_request **req) {
  NEED_REQ("ialltoallv");
  return do_alltoallv(c, s, scounts, sdispls, r, rcounts, rdispls, dt, req);
}
tern_status tern_igather(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, int root,
                         tern_request **req) {
  NEED_REQ("igather");
  return do_rooted_blocks(c, COLL_GATHER, s, r, n, dt, root, req);
}
tern_status tern_iscatter(tern_comm *c, const void *s, void *r, size_t n, tern_dtype dt, int root,
                          tern_request **req) {
  NEED_REQ("iscatter");
  return do_rooted_blocks(c, COLL_SCATTER, s, r, n, dt, root, req);
}
tern_status tern_ibarrier(tern_comm *c, tern_request **req) {
  NEED_REQ("ibarrier");
  return do_barrier(c, req);
}
tern_status tern_isend(tern_comm *c, const void *buf, size_t n, tern_dtype dt, int peer,
                       tern_request **req) {
  NEED_REQ("isend");
  return do_send(c, buf, n, dt, peer, req);
}
tern_status tern_irecv(tern_comm *c, void *buf, size_t n, tern_dtype dt, int peer,
                       tern_request **req) {
  NEED_REQ("irecv");
  return do_recv(c, buf, n, dt, peer, req);
}
tern_status tern_irecv_any(tern_comm *c, void *buf, size_t n, tern_dtype dt, int *source,
                           tern_request **req) {
  NEED_REQ("irecv_any");
  return p2p(c, COMM_REQ_RECV, NULL, buf, n, dt, COMM_ANY_PEER, source, req);
}

/* p2p.c: point-to-point requests, and what every operation's transfers share: their storage,
 * their byte counts, and the message of the failure they end in.
 *
 * A send or receive is one transfer on the channel to its peer, numbered on that channel in each
 * direction (p2p_send_seq, p2p_recv_seq), so that a receiver matches them in order. The engine
 * runs them (engine.c, run_p2p); the collectives' executor (coll/exec.c) posts its transfers
 * through comm_post_counted too.
 *
 * A receive from any source (peer COMM_ANY_PEER) stays unposted until some peer's next message
 * to this rank is its next send (comm_peek_p2p); then it takes that peer and is posted as any
 * receive, and the next look starts at the peer after it, so that none starves (c->any_next).
 */
#include "comm/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tern_status comm_request_xfers(tern_comm *c, tern_request *r, size_t n) {
  if (n <= r->xfers_cap) return TERN_OK;
  net_xfer *x = realloc(r->xfers, n * sizeof *x);
  if (x == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for %zu transfers", n);
  r->xfers = x;
  r->xfers_cap = n;
  return TERN_OK;
}

tern_status comm_post_counted(tern_comm *c, net_xfer *x) {
  *(x->is_send ? &c->bytes_sent : &c->bytes_received) += x->hdr.bytes;
  return comm_post(c, x);
}

tern_status comm_p2p_post(tern_comm *c, tern_request *r) {
  tern_status rc = comm_check_alive(c);
  if (rc != TERN_OK || (rc = comm_request_xfers(c, r, 1)) != TERN_OK) return rc;
  if (r->peer == COMM_ANY_PEER) { /* nothing to post until a sender is found */
    r->xfers[0] =
        (net_xfer){.hdr = {.kind = NET_KIND_P2P, .bytes = r->count * tern_dtype_size(r->dt)},
                   .peer = COMM_ANY_PEER};
    bool matched;
    return comm_p2p_match(c, r, &matched);
  }
  comm_peer *p = &c->peers[r->peer];
  bool send = r->type == COMM_REQ_SEND;
  net_xfer *x = &r->xfers[0];
  *x = (net_xfer){.hdr = {.kind = NET_KIND_P2P,
                          .dtype = (uint8_t)r->dt,
                          .seq = send ? p->p2p_send_seq++ : p->p2p_recv_seq++,
                          .count = r->count,
                          .bytes = r->count * tern_dtype_size(r->dt)},
                  .peer = r->peer,
                  .is_send = send,
                  .src = r->sendbuf,
                  .dst = r->recvbuf};
  CORE_INFO("%s #%u: %zu elements of %s %s rank %d over %s", send ? "send" : "recv", x->hdr.seq,
            r->count, tern_dtype_name(r->dt), send ? "to" : "from", r->peer,
            p->link == COMM_LINK_SHM ? "shm" : "tcp");
  return comm_post_counted(c, x);
}

tern_status comm_p2p_match(tern_comm *c, tern_request *r, bool *matched) {
  int sender;
  *matched = false;
  if (r->peer != COMM_ANY_PEER) return TERN_OK;
  tern_status rc = comm_peek_p2p(c, &sender);
  if (rc != TERN_OK || sender < 0) return rc;
  *matched = true;
  c->any_next = (sender + 1) % c->size;
  r->peer = sender;
  *r->source = sender;
  return comm_p2p_post(c, r);
}

/* A blocking receive from any source: waits, as every wait does, until some peer sends. */
static tern_status wait_sender(tern_comm *c, tern_request *r) {
  comm_idle_state idle;
  comm_idle_reset(&idle);
  c->any_source = true;
  tern_status rc = TERN_OK;
  while (r->peer == COMM_ANY_PEER && rc == TERN_OK) {
    bool moved = false, matched = false;
    if ((rc = comm_progress(c, &moved)) != TERN_OK ||
        (rc = comm_p2p_match(c, r, &matched)) != TERN_OK || matched)
      break;
    if (moved)
      comm_idle_reset(&idle);
    else
      rc = comm_idle(c, &idle, &r->xfers[0]);
  }
  c->any_source = false;
  return rc;
}

bool comm_op_fresh(tern_comm *c) {
  bool fresh = c->broken == TERN_OK && !atomic_load(&c->aborted);
  if (fresh) core_err_clear(&c->err);
  return fresh;
}

tern_status comm_op_failed(tern_comm *c, tern_status rc, bool fresh, const char *op) {
  if (rc == TERN_OK || !fresh) return rc;
  char what[CORE_ERR_LEN];
  memcpy(what, c->err.msg, sizeof what);
  int n = snprintf(c->err.msg, sizeof c->err.msg, "%s on rank %d: ", op, c->rank);
  if (n > 0 && (size_t)n < sizeof c->err.msg)
    snprintf(c->err.msg + n, sizeof c->err.msg - (size_t)n, "%.*s",
             (int)(sizeof c->err.msg) - n - 1, what);
  return rc;
}

tern_status comm_p2p_failed(tern_comm *c, tern_status rc, bool fresh, int n) {
  if (rc == TERN_OK || !fresh) return rc;
  char op[64];
  snprintf(op, sizeof op, "send/recv (%d request%s)", n, n == 1 ? "" : "s");
  return comm_op_failed(c, rc, fresh, op);
}

tern_status comm_p2p_run(tern_comm *c, tern_request *r) {
  bool fresh = comm_op_fresh(c);
  tern_status rc = comm_p2p_post(c, r);
  if (rc == TERN_OK && r->peer == COMM_ANY_PEER) rc = wait_sender(c, r);
  if (rc == TERN_OK) rc = comm_wait_all(c, r->xfers, 1);
  return comm_p2p_failed(c, rc, fresh, 1);
}

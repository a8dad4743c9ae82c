/* progress.c: posting transfers and moving them, over whichever link each peer has.
 *
 * Only peers with queued transfers are looked at (the active list), so a phase that talks to
 * two peers of a thousand costs two looks per pass, not a thousand.
 *
 * A shared-memory transfer is moved as it is posted, when nothing is queued before it on its
 * channel: a small send is published there and then, and a receive whose message is already in
 * its slot is taken, so neither joins the active list nor costs a pass of the wait. That is the
 * common case of small collectives (a broadcast's sends, the receives of a rank that came late),
 * where the passes and the list were a fifth of the instructions of an 8-byte call. A message
 * small enough for one slot does not even enter the channel's queue (net_shm_move_now): 1,030 ->
 * 880 instructions for the receiver of an 8-byte broadcast at n = 2 (callgrind).
 */
#include "comm/comm.h"

#include <string.h>

/* A failure of a channel breaks the communicator: it is left in an unknown state. */
static tern_status chan_failed(tern_comm *c, tern_status rc) {
  if (rc == TERN_ERR_PEER_LOST) comm_explain_loss(c);
  return comm_break(c, rc);
}

tern_status comm_post(tern_comm *c, net_xfer *x) {
  comm_peer *p = &c->peers[x->peer];
  tern_status rc;
  if (p->link == COMM_LINK_SHM) {
    net_shm_chan *ch = &p->shm;
    bool done;
    if ((rc = net_shm_move_now(ch, x, &done, &c->err)) != TERN_OK) return chan_failed(c, rc);
    if (done) return TERN_OK;
    if ((rc = net_shm_post(ch, x, &c->err)) != TERN_OK) return rc;
    if ((x->is_send ? ch->sendq.len : ch->recvq.len) == 1) {
      bool moved = false;
      if ((rc = net_shm_progress(ch, &moved, &c->err)) != TERN_OK) return chan_failed(c, rc);
      if (!net_shm_busy(ch)) return TERN_OK;
    }
  } else if ((rc = net_tcp_post(&p->tcp, x, &c->err)) != TERN_OK) {
    return rc;
  }
  if (!p->active) {
    p->active = true;
    c->active[c->nactive++] = x->peer;
  }
  return TERN_OK;
}

tern_status comm_progress(tern_comm *c, bool *moved) {
  for (int i = 0; i < c->nactive;) {
    comm_peer *p = &c->peers[c->active[i]];
    tern_status rc;
    bool busy;
    if (p->link == COMM_LINK_SHM) {
      rc = net_shm_progress(&p->shm, moved, &c->err);
      busy = net_shm_busy(&p->shm);
    } else {
      rc = net_tcp_progress(&p->tcp, moved, &c->err);
      busy = net_tcp_busy(&p->tcp);
    }
    if (rc != TERN_OK) return chan_failed(c, rc);
    if (busy) {
      i++;
    } else {
      p->active = false;
      c->active[i] = c->active[--c->nactive];
    }
  }
  return TERN_OK;
}

tern_status comm_check_usable(tern_comm *c) {
  if (atomic_load(&c->aborted)) {
    comm_break(c, TERN_ERR_ABORTED);
    return core_err_set(&c->err, TERN_ERR_ABORTED,
                        "the communicator was aborted (tern_comm_abort)");
  }
  if (c->broken != TERN_OK) {
    /* keep the first failure's text: it names the peer and the operation that broke */
    if (c->err.status == TERN_OK)
      core_err_set(&c->err, c->broken, "the communicator failed earlier and cannot be used");
    return c->broken;
  }
  return TERN_OK;
}

tern_status comm_peek_p2p(tern_comm *c, int *peer) {
  *peer = -1;
  for (int i = 0; i < c->size; i++) {
    int q = (c->any_next + i) % c->size;
    comm_peer *p = &c->peers[q];
    net_msg_hdr h;
    bool ready = false;
    if (p->link == COMM_LINK_SHM) {
      ready = net_shm_peek(&p->shm, &h);
    } else if (p->link == COMM_LINK_TCP) {
      tern_status rc = net_tcp_peek(&p->tcp, &h, &ready, &c->err);
      if (rc != TERN_OK) return chan_failed(c, rc);
    }
    if (ready && h.kind == NET_KIND_P2P && h.seq == p->p2p_recv_seq) {
      *peer = q;
      return TERN_OK;
    }
  }
  return TERN_OK;
}

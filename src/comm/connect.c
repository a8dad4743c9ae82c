/* connect.c: the TCP mesh: nstreams sockets to every peer not on this host.
 *
 * Rank i connects to every lower rank and accepts every higher one, so each pair has exactly one
 * side that dials. All handshakes (net/handshake.c) run at once in one poll loop, as state
 * machines, so that a stranger that connects and says nothing, or says garbage, costs only its
 * own short deadline: it is refused with a log line and start-up carries on. An accepted
 * connection must name a higher rank of this run that is reached over TCP, a stream index not
 * yet taken, and our stream count; anything else is refused the same way.
 */
#include "comm/comm.h"

#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define STRANGER_SECONDS 5.0 /* an accepted connection must finish its handshake within this */

typedef struct pending {
  net_handshake hs;
  uint64_t deadline;
  int peer, stream; /* outgoing: whom we dialled; incoming: -1 until the hello says */
} pending;

typedef struct mesh {
  tern_comm *c;
  int *fds; /* size * nstreams, -1 until connected */
  int missing;
  pending *pend;
  int npend, cap;
} mesh;

static tern_status add_pending(mesh *m, int fd, int peer, int stream, uint64_t deadline) {
  if (m->npend == m->cap) {
    int cap = m->cap ? 2 * m->cap : 16;
    pending *p = realloc(m->pend, (size_t)cap * sizeof *p);
    if (p == NULL) {
      close(fd);
      return core_err_set(&m->c->err, TERN_ERR_NOMEM, "no memory for connections");
    }
    m->pend = p;
    m->cap = cap;
  }
  tern_comm *c = m->c;
  net_hello mine = {.role = NET_ROLE_RANK,
                    .rank = c->rank,
                    .size = c->size,
                    .stream = (uint16_t)(stream < 0 ? 0 : stream),
                    .nstreams = (uint16_t)c->nstreams};
  memcpy(mine.run_id, c->run_id, sizeof mine.run_id);
  const core_config *cfg = core_config_get();
  pending *p = &m->pend[m->npend++];
  net_handshake_start(&p->hs, fd, &mine, cfg->have_key ? cfg->key : NULL);
  p->deadline = deadline;
  p->peer = peer;
  p->stream = stream;
  return TERN_OK;
}

static void drop_pending(mesh *m, int i, bool close_fd) {
  if (close_fd) close(m->pend[i].hs.fd);
  m->pend[i] = m->pend[--m->npend];
}

/* A finished handshake: is it the connection we expected, or a peer we are waiting for? */
static bool accept_hello(mesh *m, pending *p, char *why, size_t why_len) {
  tern_comm *c = m->c;
  const net_hello *h = &p->hs.theirs;
  bool outgoing = p->peer >= 0;
  int r = h->rank;
  if (h->role != NET_ROLE_RANK || r < 0 || r >= c->size || h->size != c->size ||
      h->nstreams != c->nstreams || h->stream >= c->nstreams) {
    snprintf(why, why_len,
             "hello of rank %d of %d, stream %u of %u does not fit rank %d of %d "
             "with %d streams",
             r, h->size, h->stream, h->nstreams, c->rank, c->size, c->nstreams);
    return false;
  }
  /* the side that accepts cannot know the stream index before reading ours: it sends 0 */
  int stream = outgoing ? p->stream : h->stream;
  if (outgoing ? r != p->peer : (r <= c->rank || c->peers[r].link != COMM_LINK_TCP)) {
    snprintf(why, why_len,
             "it says rank %d stream %u, which is not a peer this rank expects "
             "to dial it",
             r, h->stream);
    return false;
  }
  int *slot = &m->fds[r * c->nstreams + stream];
  if (*slot >= 0) {
    snprintf(why, why_len, "rank %d stream %d is already connected", r, stream);
    return false;
  }
  *slot = p->hs.fd;
  m->missing--;
  return true;
}

/* Advances one handshake; a failure of a connection we dialled is fatal, a stranger's is not. */
static tern_status step_pending(mesh *m, int i, uint64_t now) {
  pending *p = &m->pend[i];
  core_err err = {0};
  bool done = false;
  tern_status rc = now > p->deadline
                       ? core_err_set(&err, TERN_ERR_TIMEOUT, "no handshake within the deadline")
                       : net_handshake_step(&p->hs, &done, &err);
  char why[256];
  if (rc == TERN_OK && done && !accept_hello(m, p, why, sizeof why))
    rc = core_err_set(&err, TERN_ERR_PROTOCOL, "%s", why);
  if (rc != TERN_OK && p->peer >= 0) {
    core_err_set(&m->c->err, rc, "connecting to %s: %s", m->c->peers[p->peer].what, err.msg);
    return rc;
  }
  if (rc != TERN_OK) {
    CORE_WARN("refused a connection from %s: %s", p->hs.from, err.msg);
    drop_pending(m, i, true);
  } else if (done) {
    drop_pending(m, i, false);
  }
  return TERN_OK;
}

static tern_status dial_lower_ranks(mesh *m, uint64_t deadline) {
  tern_comm *c = m->c;
  for (int r = 0; r < c->rank; r++) {
    comm_peer *p = &c->peers[r];
    if (p->link != COMM_LINK_TCP) continue;
    char host[NET_HOST_LEN];
    int port;
    tern_status rc = net_parse_addr(p->addr, host, sizeof host, &port, false, &c->err);
    for (int s = 0; rc == TERN_OK && s < c->nstreams; s++) {
      int fd;
      rc = net_connect(host, port, deadline, &fd, &c->err);
      if (rc == TERN_OK) rc = add_pending(m, fd, r, s, deadline);
    }
    if (rc != TERN_OK) return rc;
  }
  return TERN_OK;
}

static tern_status run_mesh(mesh *m, uint64_t deadline) {
  tern_comm *c = m->c;
  struct pollfd *fds = NULL;
  tern_status rc = TERN_OK;
  while (m->missing > 0) {
    uint64_t now = core_now_ns();
    if (now >= deadline) {
      rc = core_err_set(&c->err, TERN_ERR_TIMEOUT,
                        "timed out after %.1f s with %d TCP "
                        "connections to peers still missing",
                        c->timeout_s, m->missing);
      break;
    }
    int lost;
    if ((rc = store_check(c->store, &lost, &c->err)) != TERN_OK) break;
    struct pollfd *grown = realloc(fds, (size_t)(m->npend + 1) * sizeof *fds);
    if (grown == NULL) {
      rc = core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for connections");
      break;
    }
    fds = grown;
    fds[0] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
    for (int i = 0; i < m->npend; i++)
      fds[i + 1] =
          (struct pollfd){.fd = m->pend[i].hs.fd, .events = net_handshake_events(&m->pend[i].hs)};
    poll(fds, (nfds_t)m->npend + 1, core_ms_left(deadline, 100));
    now = core_now_ns();
    for (int i = m->npend - 1; i >= 0; i--)
      if ((rc = step_pending(m, i, now)) != TERN_OK) goto out;
    for (;;) {
      int fd;
      char from[64];
      if ((rc = net_accept(c->listen_fd, &fd, from, sizeof from, &c->err)) != TERN_OK) goto out;
      if (fd < 0) break;
      uint64_t d = CORE_MIN(deadline, core_deadline_after(STRANGER_SECONDS));
      if ((rc = add_pending(m, fd, -1, -1, d)) != TERN_OK) goto out;
    }
  }
out:
  free(fds);
  return rc;
}

tern_status comm_connect_tcp(tern_comm *c, uint64_t deadline) {
  int ntcp = 0;
  for (int r = 0; r < c->size; r++)
    ntcp += c->peers[r].link == COMM_LINK_TCP;
  if (ntcp == 0) return TERN_OK;
  mesh m = {.c = c, .missing = ntcp * c->nstreams};
  m.fds = malloc((size_t)c->size * (size_t)c->nstreams * sizeof *m.fds);
  if (m.fds == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for connections");
  for (int i = 0; i < c->size * c->nstreams; i++)
    m.fds[i] = -1;
  tern_status rc = dial_lower_ranks(&m, deadline);
  if (rc == TERN_OK) rc = run_mesh(&m, deadline);
  bool grants = rc == TERN_OK && net_kernel_grants_buffers(NET_SHORT_PATH_BUF);
  if (rc == TERN_OK && !grants)
    CORE_DEBUG("TCP socket buffers left to the kernel's autotuning everywhere: net.core.rmem_max "
               "or wmem_max is under %d MiB",
               NET_SHORT_PATH_BUF >> 20);
  for (int r = 0; rc == TERN_OK && r < c->size; r++) {
    if (c->peers[r].link != COMM_LINK_TCP) continue;
    int fixed = 0; /* the handshakes have given each socket a measured round trip by now */
    for (int s = 0; grants && s < c->nstreams; s++)
      fixed += net_fix_short_path_buffers(m.fds[r * c->nstreams + s], NET_SHORT_PATH_RTT_US,
                                          NET_SHORT_PATH_BUF);
    if (grants)
      CORE_DEBUG("TCP to %s: %d of %d sockets on a short path, their buffers fixed at %d MiB",
                 c->peers[r].what, fixed, c->nstreams, NET_SHORT_PATH_BUF >> 20);
    rc = net_tcp_chan_init(&c->peers[r].tcp, r, &m.fds[r * c->nstreams], c->nstreams,
                           c->peers[r].what, &c->err);
  }
  if (rc != TERN_OK) /* sockets not yet handed to a channel are ours to close */
    for (int r = 0; r < c->size; r++)
      for (int s = 0; c->peers[r].tcp.streams == NULL && s < c->nstreams; s++)
        if (m.fds[r * c->nstreams + s] >= 0) close(m.fds[r * c->nstreams + s]);
  for (int i = 0; i < m.npend; i++) {
    if (m.pend[i].peer < 0)
      CORE_WARN("refused a connection from %s: no handshake by the end of start-up",
                m.pend[i].hs.from);
    close(m.pend[i].hs.fd);
  }
  free(m.pend);
  free(m.fds);
  return rc;
}

void comm_refuse_strays(tern_comm *c) {
  for (;;) {
    int fd;
    char from[64];
    core_err err = {0};
    if (net_accept(c->listen_fd, &fd, from, sizeof from, &err) != TERN_OK || fd < 0) return;
    CORE_WARN("refused a connection from %s: rank %d takes no connections after start-up", from,
              c->rank);
    close(fd);
  }
}

/* store_server.c: the rendezvous store's server: one thread, one poll loop, many clients.
 *
 * Each connection goes through three states. HANDSHAKE: net_handshake's state machine, which
 * must finish within STORE_HELLO_SECONDS of the connect; strangers, wrong keys and silent
 * sockets end here, logged and closed, costing nothing but their slot meanwhile. ACTIVE: frames
 * are read with store_reader (an absurd length is refused before any allocation), decoded,
 * served in order, and the replies queued and written without blocking. CLOSING: after a BYE,
 * the last reply is flushed and the socket closed.
 *
 * Memory per connection is bounded: one frame in (STORE_MAX_FRAME), and no new request is read
 * while more than OUT_HIGH bytes of replies wait to go out or while a GET is held, so a client
 * that sends requests without reading the answers stalls only itself (and is dropped once
 * TERN_TIMEOUT passes without progress). Connections are capped at world size + SPARE_CLIENTS.
 *
 * Watching the job: a rank whose connection ends without a BYE is reported lost (DROP_CONFIRM_S
 * later, so that a launcher's report of the cause wins), as is a rank that `tern run` reports
 * (store_server_report_lost, from any thread: it records the notice under the lock and wakes the
 * loop through a pipe). Every client then gets a NOTICE, including those that connect later, and
 * from then on a GET of a missing key is answered at once with an ERROR naming the lost rank, so no
 * rank waits for a peer that is gone.
 */
#include "store.h"

#include "net/net.h"
#include "store_table.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OUT_HIGH (64u << 10) /* replies queued past this pause reading that client */
#define OUT_KEEP 4096        /* an idle connection keeps at most this much output buffer */
#define SPARE_CLIENTS 256    /* connections beyond one per rank: tools, retries, strangers */
#define FRAMES_PER_TURN 64   /* per client per loop turn, so one busy client cannot starve */
#define CLOSE_LINGER_S 1.0   /* for the reply to a BYE to leave */
#define ACCEPT_PAUSE_S 0.1   /* after accept() fails (out of descriptors): not a busy loop */
#define NOTICE_MAX 480
/* A rank whose connection drops is reported this much later, unless a report with the cause
 * comes first: `tern run` learns "killed by signal 9" from waitpid a moment after the kernel
 * closes the socket, and that says more than "closed without a goodbye". */
#define DROP_CONFIRM_S 0.25

enum { C_HANDSHAKE, C_ACTIVE, C_CLOSING, C_DEAD };

typedef struct client {
  int fd, state, rank;
  bool bye;
  char name[96]; /* "rank 3 (127.0.0.1:5555)", or the address alone */
  net_handshake hs;
  uint64_t deadline; /* HANDSHAKE: its end; CLOSING: the linger's end */
  uint64_t last_io;  /* ACTIVE: last byte moved, for the stall check */
  store_reader in;
  uint8_t *out;
  size_t out_len, out_done, out_cap;
  bool get_pending;
  uint64_t get_deadline;
  char get_key[STORE_MAX_KEY];
  size_t get_key_len;
} client;

struct store_server {
  /* fixed at start */
  int world_size;
  uint8_t run_id[16];
  bool keyed;
  uint8_t key[32];
  double io_timeout_s;
  int listen_fd, wake_rd, wake_wr;
  char addr[NET_HOST_LEN + 16];
  pthread_t thread;
  bool running;
  /* the server thread's own */
  client **clients;
  size_t nclients, max_clients;
  struct pollfd *pfds;
  store_table *table;
  uint64_t accept_paused_until;
  uint64_t *drop_at;      /* per rank: when its dropped connection is reported (0: none) */
  char **drop_why;        /* per rank: what that report says */
  int notices_sent;       /* entries of order[] every client has been sent */
  const char *first_lost; /* the first notice sent, for GETs that can no longer be served */
  /* shared, under lock */
  pthread_mutex_t lock;
  pthread_cond_t changed;
  bool stop;
  char **lost; /* per rank: its notice once reported (never changed after) */
  int *order;  /* ranks in the order they were reported */
  int norder;
  int *live; /* per rank: connections open that have not said BYE */
  int live_total;
  bool *joined; /* per rank: it has connected once */
  int njoined;
};

static void wake(store_server *s) {
  ssize_t w = write(s->wake_wr, "w", 1);
  (void)w; /* a full pipe already holds a wake-up */
}

void store_server_report_lost(store_server *s, int rank, const char *why) {
  if (rank < 0 || rank >= s->world_size) {
    CORE_WARN("store: report of rank %d lost ignored: the job has ranks 0..%d", rank,
              s->world_size - 1);
    return;
  }
  char *text = malloc(NOTICE_MAX);
  if (text == NULL) return;
  snprintf(text, NOTICE_MAX, "rank %d lost: %s", rank, why);
  pthread_mutex_lock(&s->lock);
  bool first = s->lost[rank] == NULL;
  if (first) {
    s->lost[rank] = text;
    s->order[s->norder++] = rank;
  }
  pthread_mutex_unlock(&s->lock);
  if (!first) {
    free(text);
    return;
  }
  CORE_WARN("store: %s", text);
  wake(s);
}

/* ---- output ------------------------------------------------------------------------------ */

static void drop(store_server *s, client *c, tern_status why, const char *what);

static void flush(store_server *s, client *c) {
  while (c->out_done < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_done, c->out_len - c->out_done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) {
      char what[CORE_ERR_LEN];
      snprintf(what, sizeof what, "writing to %s failed: %s", c->name, strerror(errno));
      drop(s, c, TERN_ERR_PEER_LOST, what);
      return;
    }
    c->out_done += (size_t)w;
    c->last_io = core_now_ns();
  }
  c->out_len = c->out_done = 0;
  if (c->out_cap > OUT_KEEP) {
    free(c->out);
    c->out = NULL;
    c->out_cap = 0;
  }
}

static void send_msg(store_server *s, client *c, const store_msg *m) {
  if (c->state != C_ACTIVE) return;
  size_t n = store_msg_size(m);
  if (c->out_done > 0) { /* what went out makes room at the front */
    memmove(c->out, c->out + c->out_done, c->out_len - c->out_done);
    c->out_len -= c->out_done;
    c->out_done = 0;
  }
  if (c->out_len == 0) c->last_io = core_now_ns();
  if (c->out_cap < c->out_len + n) {
    uint8_t *b = realloc(c->out, c->out_len + n);
    if (b == NULL) {
      drop(s, c, TERN_ERR_NOMEM, "no memory for a reply");
      return;
    }
    c->out = b;
    c->out_cap = c->out_len + n;
  }
  c->out_len += store_msg_encode(m, c->out + c->out_len, c->out_cap - c->out_len);
  flush(s, c);
}

static void reply(store_server *s, client *c, store_msg_type type, const void *v, size_t n,
                  int64_t number) {
  store_msg m = {.type = type, .value = v, .value_len = n, .number = number};
  send_msg(s, c, &m);
}

static void reply_text(store_server *s, client *c, store_msg_type type, const char *text,
                       int64_t number) {
  reply(s, c, type, text, strlen(text), number);
}

/* ---- the job's watch --------------------------------------------------------------------- */

static void set_live(store_server *s, int rank, int delta) {
  if (rank < 0) return;
  pthread_mutex_lock(&s->lock);
  s->live[rank] += delta;
  s->live_total += delta;
  if (delta > 0 && !s->joined[rank]) s->joined[rank] = true, s->njoined++;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->lock);
}

/* Sends the notices reported since the last turn to every client, and answers the GETs that
 * now cannot be served. */
static void broadcast_notices(store_server *s) {
  pthread_mutex_lock(&s->lock);
  int n = s->norder;
  pthread_mutex_unlock(&s->lock);
  for (; s->notices_sent < n; s->notices_sent++) {
    int rank = s->order[s->notices_sent];
    const char *text = s->lost[rank];
    if (s->first_lost == NULL) s->first_lost = text;
    for (size_t i = 0; i < s->nclients; i++) {
      client *c = s->clients[i];
      if (c->state != C_ACTIVE) continue;
      reply_text(s, c, STORE_NOTICE, text, rank);
      if (c->get_pending) {
        c->get_pending = false;
        reply_text(s, c, STORE_ERROR, text, 0);
      }
    }
  }
}

/* Ends a connection. One that ends without a BYE after naming a rank means that rank is gone. */
static void drop(store_server *s, client *c, tern_status why, const char *what) {
  if (c->state == C_DEAD) return;
  bool was_active = c->state == C_ACTIVE;
  if (c->state == C_HANDSHAKE)
    CORE_WARN("store: refused a connection: %s", what);
  else if (why != TERN_ERR_PEER_LOST)
    CORE_WARN("store: closed a connection: %s", what);
  else
    CORE_DEBUG("store: %s left: %s", c->name, what);
  c->state = C_DEAD;
  close(c->fd);
  c->fd = -1;
  if (!was_active || c->rank < 0 || c->bye) return;
  set_live(s, c->rank, -1);
  if (s->drop_at[c->rank] != 0) return;
  char *text = malloc(NOTICE_MAX);
  if (text == NULL) return;
  if (why == TERN_ERR_PEER_LOST)
    snprintf(text, NOTICE_MAX,
             "its store connection closed without a goodbye (the process died or quit early)");
  else
    snprintf(text, NOTICE_MAX, "its store connection was closed: %s", what);
  s->drop_why[c->rank] = text;
  s->drop_at[c->rank] = core_deadline_after(DROP_CONFIRM_S);
}

/* Reports the dropped ranks whose confirmation time has come; returns the next such time. */
static uint64_t confirm_drops(store_server *s, uint64_t now) {
  uint64_t next = 0;
  for (int r = 0; r < s->world_size; r++) {
    if (s->drop_at[r] == 0 || s->drop_at[r] == UINT64_MAX) continue;
    if (now < s->drop_at[r]) {
      next = next == 0 || s->drop_at[r] < next ? s->drop_at[r] : next;
      continue;
    }
    store_server_report_lost(s, r, s->drop_why[r]);
    free(s->drop_why[r]);
    s->drop_why[r] = NULL;
    s->drop_at[r] = UINT64_MAX; /* reported: later drops of this rank add nothing */
  }
  return next;
}

/* ---- requests ---------------------------------------------------------------------------- */

static void wake_getters(store_server *s, const char *key, size_t len) {
  size_t vlen;
  const uint8_t *v = store_table_get(s->table, key, len, &vlen);
  for (size_t i = 0; i < s->nclients && v != NULL; i++) {
    client *c = s->clients[i];
    if (c->state == C_ACTIVE && c->get_pending && c->get_key_len == len &&
        memcmp(c->get_key, key, len) == 0) {
      c->get_pending = false;
      reply(s, c, STORE_VALUE, v, vlen, 0);
    }
  }
}

static void serve_get(store_server *s, client *c, const store_msg *m) {
  size_t vlen;
  const uint8_t *v = store_table_get(s->table, m->key, m->key_len, &vlen);
  if (v != NULL)
    reply(s, c, STORE_VALUE, v, vlen, 0);
  else if (s->first_lost != NULL)
    reply_text(s, c, STORE_ERROR, s->first_lost, 0);
  else if (m->number == 0)
    reply(s, c, STORE_TIMEOUT, NULL, 0, 0);
  else {
    c->get_pending = true;
    c->get_deadline = core_now_ns() + (uint64_t)m->number * 1000000u;
    memcpy(c->get_key, m->key, m->key_len);
    c->get_key_len = m->key_len;
  }
}

static void serve(store_server *s, client *c, const store_msg *m) {
  core_err err = {0};
  tern_status rc;
  int64_t count = 0;
  switch (m->type) {
  case STORE_SET:
    rc = store_table_set(s->table, m->key, m->key_len, m->value, m->value_len, &err);
    if (rc != TERN_OK)
      reply_text(s, c, STORE_ERROR, err.msg, 0);
    else
      reply(s, c, STORE_OK, NULL, 0, 0);
    if (rc == TERN_OK) wake_getters(s, m->key, m->key_len);
    break;
  case STORE_GET:
    serve_get(s, c, m);
    break;
  case STORE_ADD:
    rc = store_table_add(s->table, m->key, m->key_len, m->number, &count, &err);
    if (rc != TERN_OK)
      reply_text(s, c, STORE_ERROR, err.msg, 0);
    else
      reply(s, c, STORE_COUNT, NULL, 0, count);
    if (rc == TERN_OK) wake_getters(s, m->key, m->key_len);
    break;
  case STORE_BYE:
    c->bye = true;
    set_live(s, c->rank, -1);
    reply(s, c, STORE_OK, NULL, 0, 0);
    if (c->state == C_ACTIVE) {
      c->state = C_CLOSING;
      c->deadline = core_deadline_after(CLOSE_LINGER_S);
      if (c->out_done == c->out_len) drop(s, c, TERN_ERR_PEER_LOST, "said BYE");
    }
    break;
  default: {
    char what[CORE_ERR_LEN];
    snprintf(what, sizeof what, "%s sent a frame of type %s, which only the server sends", c->name,
             store_msg_name(m->type));
    drop(s, c, TERN_ERR_PROTOCOL, what);
  }
  }
}

static bool can_read(const client *c) {
  return c->state == C_ACTIVE && !c->get_pending && c->out_len - c->out_done <= OUT_HIGH;
}

static void read_requests(store_server *s, client *c) {
  for (int k = 0; k < FRAMES_PER_TURN && can_read(c); k++) {
    core_err err = {0};
    bool ready, moved;
    tern_status rc = store_reader_pump(&c->in, c->fd, &ready, &moved, c->name, &err);
    if (moved) c->last_io = core_now_ns();
    store_msg m;
    if (rc == TERN_OK && ready)
      rc = store_msg_decode(c->in.body, c->in.body_len, &m, c->name, &err);
    if (rc != TERN_OK) {
      drop(s, c, rc, err.msg);
      return;
    }
    if (!ready) return;
    serve(s, c, &m);
    store_reader_next(&c->in);
  }
}

/* ---- connections ------------------------------------------------------------------------- */

static void activate(store_server *s, client *c) {
  const net_hello *t = &c->hs.theirs;
  char what[CORE_ERR_LEN];
  if ((t->size != 0 && t->size != s->world_size) || t->rank >= s->world_size) {
    snprintf(what, sizeof what, "%s is rank %d of %d, and this store serves %d ranks", c->name,
             (int)t->rank, (int)t->size, s->world_size);
    drop(s, c, TERN_ERR_INVALID_ARG, what);
    return;
  }
  c->rank = t->rank;
  char addr[64]; /* an address: "[v6]:port" at most */
  snprintf(addr, sizeof addr, "%.63s", c->name);
  if (c->rank >= 0) snprintf(c->name, sizeof c->name, "rank %d (%s)", c->rank, addr);
  c->state = C_ACTIVE;
  c->last_io = core_now_ns();
  set_live(s, c->rank, +1);
  CORE_DEBUG("store: %s joined", c->name);
  for (int i = 0; i < s->notices_sent; i++) {
    int rank = s->order[i];
    reply_text(s, c, STORE_NOTICE, s->lost[rank], rank);
  }
}

static void step_handshake(store_server *s, client *c) {
  core_err err = {0};
  bool done;
  tern_status rc = net_handshake_step(&c->hs, &done, &err);
  if (rc != TERN_OK)
    drop(s, c, rc, err.msg);
  else if (done)
    activate(s, c);
}

static void accept_all(store_server *s) {
  for (int k = 0; k < 64; k++) {
    core_err err = {0};
    char peer[64];
    int fd;
    if (net_accept(s->listen_fd, &fd, peer, sizeof peer, &err) != TERN_OK) {
      CORE_WARN("store: %s; not accepting for %.1f s", err.msg, ACCEPT_PAUSE_S);
      s->accept_paused_until = core_deadline_after(ACCEPT_PAUSE_S);
      return;
    }
    if (fd < 0) return;
    client *c = s->nclients < s->max_clients ? calloc(1, sizeof *c) : NULL;
    if (c == NULL) {
      CORE_WARN("store: refused %s: %zu connections already (the most this store keeps)", peer,
                s->nclients);
      close(fd);
      continue;
    }
    c->fd = fd;
    c->rank = -1;
    snprintf(c->name, sizeof c->name, "%s", peer);
    c->deadline = core_deadline_after(STORE_HELLO_SECONDS);
    net_hello mine = {.role = NET_ROLE_STORE_SERVER,
                      .rank = -1,
                      .size = s->world_size,
                      .stream = 0,
                      .nstreams = 1};
    memcpy(mine.run_id, s->run_id, 16);
    net_handshake_start(&c->hs, fd, &mine, s->keyed ? s->key : NULL);
    s->clients[s->nclients++] = c;
    step_handshake(s, c);
  }
}

static void on_events(store_server *s, client *c, short revents) {
  if (c->state == C_HANDSHAKE) {
    step_handshake(s, c);
    return;
  }
  if (revents & POLLOUT) flush(s, c);
  if (c->state == C_ACTIVE && can_read(c))
    read_requests(s, c);
  else if (c->state == C_ACTIVE && (revents & (POLLRDHUP | POLLHUP | POLLERR)))
    drop(s, c, TERN_ERR_PEER_LOST, "connection closed with requests unanswered");
  if (c->state == C_CLOSING && c->out_done == c->out_len)
    drop(s, c, TERN_ERR_PEER_LOST, "said BYE");
}

static uint64_t earliest(uint64_t a, uint64_t b) {
  return b != 0 && b < a ? b : a;
}

/* Ends what is overdue; returns the next deadline of this client (0: none). */
static uint64_t check_deadlines(store_server *s, client *c, uint64_t now) {
  char what[CORE_ERR_LEN];
  if (c->state == C_HANDSHAKE && now >= c->deadline) {
    snprintf(what, sizeof what, "%s sent no complete handshake within %.0f s (%zu of %zu bytes)",
             c->name, STORE_HELLO_SECONDS, c->hs.in_done, c->hs.in_len);
    drop(s, c, TERN_ERR_TIMEOUT, what);
  }
  if (c->state == C_CLOSING && now >= c->deadline) drop(s, c, TERN_ERR_PEER_LOST, "said BYE");
  if (c->state == C_HANDSHAKE || c->state == C_CLOSING) return c->deadline;
  if (c->state != C_ACTIVE) return 0;
  if (c->get_pending && now >= c->get_deadline) {
    c->get_pending = false;
    reply(s, c, STORE_TIMEOUT, NULL, 0, 0);
  }
  uint64_t next = c->get_pending ? c->get_deadline : 0;
  bool busy = c->in.hdr_done > 0 || c->out_done < c->out_len;
  if (c->state == C_ACTIVE && busy) {
    uint64_t stall = c->last_io + (uint64_t)(s->io_timeout_s * 1e9);
    if (now >= stall) {
      snprintf(what, sizeof what,
               "%s made no progress for %.0f s (TERN_TIMEOUT) with a frame half sent or "
               "replies unread",
               c->name, s->io_timeout_s);
      drop(s, c, TERN_ERR_TIMEOUT, what);
      return 0;
    }
    next = earliest(stall, next);
  }
  return next;
}

static short events_of(const client *c) {
  if (c->state == C_HANDSHAKE) return net_handshake_events(&c->hs);
  short ev = c->out_done < c->out_len ? POLLOUT : 0;
  if (c->state == C_ACTIVE) ev |= can_read(c) ? POLLIN : POLLRDHUP;
  return ev;
}

static void reap(store_server *s) {
  size_t j = 0;
  for (size_t i = 0; i < s->nclients; i++) {
    client *c = s->clients[i];
    if (c->state != C_DEAD) {
      s->clients[j++] = c;
      continue;
    }
    store_reader_free(&c->in);
    free(c->out);
    free(c);
  }
  s->nclients = j;
}

static void turn(store_server *s) {
  uint64_t now = core_now_ns(), next = now + 1000000000ull;
  s->pfds[0] = (struct pollfd){.fd = s->wake_rd, .events = POLLIN};
  bool accepting = now >= s->accept_paused_until;
  s->pfds[1] = (struct pollfd){.fd = accepting ? s->listen_fd : -1, .events = POLLIN};
  if (!accepting) next = earliest(next, s->accept_paused_until);
  next = earliest(next, confirm_drops(s, now));
  size_t n = s->nclients;
  for (size_t i = 0; i < n; i++) {
    client *c = s->clients[i];
    next = earliest(next, check_deadlines(s, c, now));
    s->pfds[2 + i] = (struct pollfd){.fd = c->fd, .events = c->fd >= 0 ? events_of(c) : 0};
  }
  int r = poll(s->pfds, 2 + n, core_ms_left(next, 1000));
  if (r < 0 && errno != EINTR) CORE_WARN("store: poll failed: %s", strerror(errno));
  if (s->pfds[0].revents) {
    char buf[64];
    while (read(s->wake_rd, buf, sizeof buf) > 0) {
    }
  }
  broadcast_notices(s);
  for (size_t i = 0; i < n && r > 0; i++)
    if (s->pfds[2 + i].revents && s->clients[i]->state != C_DEAD)
      on_events(s, s->clients[i], s->pfds[2 + i].revents);
  if (r > 0 && s->pfds[1].revents) accept_all(s);
  broadcast_notices(s); /* ranks found lost in this turn */
  reap(s);
}

static void *serve_loop(void *arg) {
  store_server *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    if (stop) break;
    turn(s);
  }
  return NULL;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static void destroy(store_server *s) {
  for (size_t i = 0; i < s->nclients; i++) {
    if (s->clients[i]->fd >= 0) close(s->clients[i]->fd);
    s->clients[i]->state = C_DEAD;
  }
  reap(s);
  for (int i = 0; s->lost != NULL && i < s->world_size; i++)
    free(s->lost[i]);
  for (int i = 0; s->drop_why != NULL && i < s->world_size; i++)
    free(s->drop_why[i]);
  free(s->drop_why);
  free(s->drop_at);
  free(s->lost);
  free(s->order);
  free(s->live);
  free(s->joined);
  free(s->clients);
  free(s->pfds);
  store_table_free(s->table);
  if (s->listen_fd >= 0) close(s->listen_fd);
  if (s->wake_rd >= 0) close(s->wake_rd);
  if (s->wake_wr >= 0) close(s->wake_wr);
  pthread_cond_destroy(&s->changed);
  pthread_mutex_destroy(&s->lock);
  sodium_memzero(s->key, sizeof s->key);
  free(s);
}

static void format_addr(store_server *s, const char *host, int port) {
  char name[NET_HOST_LEN] = "";
  if (host == NULL || host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) {
    /* every interface: name the host the way other machines can look it up */
    if (gethostname(name, sizeof name - 1) != 0) strcpy(name, "127.0.0.1");
    host = name;
  }
  bool v6 = strchr(host, ':') != NULL;
  snprintf(s->addr, sizeof s->addr, v6 ? "[%s]:%d" : "%s:%d", host, port);
}

/* The server's state before its thread runs: NULL without memory. */
static store_server *create(int world_size, const uint8_t run_id[16], const uint8_t *key) {
  store_server *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->listen_fd = s->wake_rd = s->wake_wr = -1;
  s->world_size = world_size;
  memcpy(s->run_id, run_id, 16);
  s->keyed = key != NULL;
  if (key) memcpy(s->key, key, 32);
  s->io_timeout_s = CORE_MAX(core_config_get()->timeout_s, 1.0);
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->changed, &ca);
  pthread_condattr_destroy(&ca);
  size_t n = (size_t)world_size;
  s->max_clients = n + SPARE_CLIENTS;
  s->lost = calloc(n, sizeof *s->lost);
  s->order = calloc(n, sizeof *s->order);
  s->live = calloc(n, sizeof *s->live);
  s->joined = calloc(n, sizeof *s->joined);
  s->drop_at = calloc(n, sizeof *s->drop_at);
  s->drop_why = calloc(n, sizeof *s->drop_why);
  s->clients = calloc(s->max_clients, sizeof *s->clients);
  s->pfds = calloc(s->max_clients + 2, sizeof *s->pfds);
  s->table = store_table_new();
  if (s->lost && s->order && s->live && s->joined && s->drop_at && s->drop_why && s->clients &&
      s->pfds && s->table)
    return s;
  destroy(s);
  return NULL;
}

tern_status store_server_start(store_server **out, const char *host, int port, int world_size,
                               const uint8_t run_id[16], const uint8_t *key, core_err *err) {
  *out = NULL;
  if (world_size < 1 || world_size > NET_MAX_RANKS)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "store for %d ranks: want 1 to %d", world_size,
                        NET_MAX_RANKS);
  store_server *s = create(world_size, run_id, key);
  if (s == NULL)
    return core_err_set(err, TERN_ERR_NOMEM, "no memory for a store of %d ranks", world_size);
  tern_status rc;
  int wake_fds[2];
  if (pipe2(wake_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    rc = core_err_errno(err, errno, "store: pipe");
    goto fail;
  }
  s->wake_rd = wake_fds[0];
  s->wake_wr = wake_fds[1];
  int bound;
  rc = net_listen(host, port, &s->listen_fd, &bound, err);
  if (rc != TERN_OK) goto fail;
  format_addr(s, host, bound);
  if (pthread_create(&s->thread, NULL, serve_loop, s) != 0) {
    rc = core_err_errno(err, errno, "store: starting its thread");
    goto fail;
  }
  s->running = true;
  CORE_INFO("store: serving %d ranks at %s%s", world_size, s->addr, key ? " (keyed)" : "");
  *out = s;
  return TERN_OK;
fail:
  destroy(s);
  return rc;
}

const char *store_server_addr(const store_server *s) {
  return s->addr;
}

tern_status store_server_wait_all_left(store_server *s, double timeout_s, core_err *err) {
  uint64_t deadline = core_deadline_after(timeout_s);
  struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                        .tv_nsec = (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&s->lock);
  while (s->live_total > 0)
    if (pthread_cond_timedwait(&s->changed, &s->lock, &ts) == ETIMEDOUT) break;
  tern_status rc = TERN_OK;
  if (s->live_total > 0) {
    char ranks[160] = "";
    size_t len = 0;
    for (int r = 0; r < s->world_size && len < sizeof ranks - 16; r++)
      if (s->live[r] > 0)
        len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", len ? ", " : "", r);
    rc = core_err_set(err, TERN_ERR_TIMEOUT,
                      "store %s: after %.1f s, ranks are still connected without a goodbye: %s",
                      s->addr, timeout_s, ranks);
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

bool store_server_job_over(store_server *s, int wait_ms) {
  uint64_t deadline = core_deadline_after(wait_ms / 1000.0);
  struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                        .tv_nsec = (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&s->lock);
  bool over;
  while (!(over = s->live_total == 0 && (s->njoined == s->world_size || s->norder > 0)))
    if (pthread_cond_timedwait(&s->changed, &s->lock, &ts) == ETIMEDOUT) break;
  pthread_mutex_unlock(&s->lock);
  return over;
}

void store_server_stop(store_server *s) {
  if (s == NULL) return;
  if (s->running) {
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_mutex_unlock(&s->lock);
    wake(s);
    pthread_join(s->thread, NULL);
  }
  destroy(s);
}

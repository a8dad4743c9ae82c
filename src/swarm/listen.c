/* listen.c: the listener thread of a swarm peer.
 *
 * It accepts connections on the peer's TCP port and drives up to SWARM_PENDING_MAX of them at
 * once through tern's handshake and the first message header, each within its own deadline, in
 * one poll loop. Whatever is not a swarm peer of this run (a port scanner, garbage, an absurd
 * length, the wrong key) is closed with a log line and counted in sw->refused; the loop carries
 * on. What one source address may open, and how many refusals are logged, is limited (limit.c).
 * State requests, requests for a held result (repair.c), leave notices and hellos are answered
 * here; joins and parts go to the queue that tern_swarm_average takes from.
 *
 * A hello is how a new peer makes its bootstrap peers reach it in turn. Without it, the first
 * peer of a swarm, which bootstrapped from nobody, only ever hears pings from the others and
 * OpenDHT holds its gets back while it stays "connecting"; pinging the newcomer back makes it
 * connected at once.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PENDING_SECONDS 5.0      /* handshake + header + control payload */
#define QUEUED_SECONDS 30.0      /* a queued join or part nobody takes is closed after this */
#define STATE_SEND_SECONDS 300.0 /* a state download's whole transfer */

typedef struct pending {
  net_handshake hs;
  bool hs_done;
  uint8_t hdr[SWARM_HDR_LEN];
  size_t hdr_done;
  swarm_hdr h;
  uint8_t *payload;
  size_t payload_done;
  uint64_t deadline_ns;
} pending;

void swarm_conn_close(swarm_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  free(c->payload);
  c->payload = NULL;
}

static void refuse(tern_swarm *sw, pending *p, const char *why) {
  uint64_t now = core_now_ns();
  if (swarm_limit_log(&sw->limits, now)) CORE_WARN("swarm: refused %s: %s", p->hs.from, why);
  swarm_limit_done(&sw->limits, p->hs.from, true, now);
  close(p->hs.fd);
  free(p->payload);
  memset(p, 0, sizeof *p);
  p->hs.fd = -1;
  pthread_mutex_lock(&sw->mu);
  sw->refused++;
  pthread_mutex_unlock(&sw->mu);
}

/* A state download in flight: its own copy of the vector, socket and name, so that it needs
 * nothing of the peer (which may leave meanwhile). */
typedef struct state_send {
  int fd;
  swarm_hdr h;
  uint8_t *payload;
  char from[96];
} state_send;

static void *send_state(void *arg) {
  state_send *t = arg;
  core_err err = {0};
  /* 64 MiB to another region takes tens of seconds: the joiner's own deadline decides. */
  if (swarm_send(t->fd, &t->h, t->payload, core_deadline_after(STATE_SEND_SECONDS), t->from,
                 &err) != TERN_OK)
    CORE_WARN("swarm: state for %s: %s", t->from, err.msg);
  close(t->fd);
  free(t->payload);
  free(t);
  return NULL;
}

/* Answers a state request from a thread of its own: sending the whole vector on the listener
 * thread held every join and part for this peer back until it was done (and its 10 s cap cut
 * a 64 MiB download to another region short). Takes fd. */
static void serve_state(tern_swarm *sw, int fd, const char *from) {
  state_send *t = calloc(1, sizeof *t);
  if (!t) {
    close(fd);
    return;
  }
  *t = (state_send){.fd = fd, .h = {.type = SWARM_REJECT, .sender = sw->id}};
  snprintf(t->from, sizeof t->from, "%s", from);
  pthread_mutex_lock(&sw->mu);
  if (sw->has_state && (t->payload = malloc(8 + 4 * (size_t)sw->state_count))) {
    uint64_t n = sw->state_count;
    t->h.type = SWARM_STATE;
    t->h.round = sw->state_round;
    t->h.len = 8 + 4 * (uint64_t)sw->state_count;
    memcpy(t->payload, &n, 8); /* little-endian hosts only, as the f32 values that follow */
    memcpy(t->payload + 8, sw->state, 4 * sw->state_count);
  }
  pthread_mutex_unlock(&sw->mu);
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &attr, send_state, t) != 0) send_state(t);
  pthread_attr_destroy(&attr);
}

static void note_departed(tern_swarm *sw, uint64_t id) {
  pthread_mutex_lock(&sw->mu);
  sw->departed[sw->ndeparted++ % CORE_ARRAY_LEN(sw->departed)] = id;
  pthread_mutex_unlock(&sw->mu);
}

bool swarm_departed(tern_swarm *sw, uint64_t id) {
  bool found = false;
  pthread_mutex_lock(&sw->mu);
  for (size_t i = 0; i < CORE_ARRAY_LEN(sw->departed) && i < sw->ndeparted; i++)
    if (sw->departed[i] == id) found = true;
  pthread_mutex_unlock(&sw->mu);
  return found;
}

bool swarm_redirect_join(tern_swarm *sw, int fd, const swarm_hdr *j) {
  swarm_member leader;
  pthread_mutex_lock(&sw->mu);
  bool yes = sw->following && j->tag == sw->follow_tag && sw->leader.id < j->sender;
  leader = sw->leader;
  pthread_mutex_unlock(&sw->mu);
  if (yes) swarm_send_redirect(sw, fd, j->round, &leader);
  return yes;
}

void swarm_send_redirect(tern_swarm *sw, int fd, uint32_t round, const swarm_member *leader) {
  uint8_t buf[SWARM_MEMBER_MAX];
  swarm_hdr h = {.type = SWARM_REDIRECT,
                 .round = round,
                 .sender = sw->id,
                 .len = swarm_member_encode(leader, buf)};
  core_err err = {0};
  swarm_send(fd, &h, buf, core_deadline_after(1), "a joining peer", &err);
}

/* A join for a round whose matching is over here: "too late" at once, not when the averaging
 * thread next looks at its queue (a round later). */
static bool turn_away_late(tern_swarm *sw, int fd, const swarm_hdr *j) {
  pthread_mutex_lock(&sw->mu);
  uint32_t closed = sw->closed_rounds;
  pthread_mutex_unlock(&sw->mu);
  bool late = j->round < closed;
  /* A late peer that saw the line's records and leads (its id is the lowest) does not join: it
   * asks (lead, others_moved_on). Either way it is on this line and expected next time: a peer
   * that started after its column had met (7 peers on 3x3) otherwise was never expected there,
   * and the column closed without it every round. */
  if (late && (j->type == SWARM_JOIN || j->type == SWARM_ROUND_REQ)) swarm_note_late_join(sw, j);
  if (late) swarm_send_reject(sw, fd, j->round, SWARM_REJECT_LATE, closed);
  return late;
}

/* A join or ROUND_REQ for the round-free pool (match.c) when this peer is not in it: its record
 * there is stale; "gone" at once. Any other message for the pool is taken as usual. */
static bool turn_away_from_pool(tern_swarm *sw, int fd, const swarm_hdr *j) {
  pthread_mutex_lock(&sw->mu);
  bool gone = j->tag == sw->pool_tag && !sw->in_pool;
  pthread_mutex_unlock(&sw->mu);
  if (gone) swarm_send_reject(sw, fd, j->round, SWARM_REJECT_GONE, 0);
  return gone;
}

void swarm_send_reject(tern_swarm *sw, int fd, uint32_t round, uint8_t code, uint32_t open) {
  uint8_t why[SWARM_LATE_LEN] = {code};
  core_put32(why + 1, open);
  swarm_hdr h = {.type = SWARM_REJECT, .round = round, .sender = sw->id, .len = sizeof why};
  core_err err = {0};
  swarm_send(fd, &h, why, core_deadline_after(1), "a joining peer", &err);
}

/* A ROUND_REQ naming another line of the round this peer is matching in now: it will not come
 * to the asker's line ("gone" at once). A line member of last time that moved to another place
 * (region.c) answered "still open" before, and a survivor of the WAN kill test waited half the
 * matching time for it on its old line. */
static bool turn_away_off_line(tern_swarm *sw, int fd, const swarm_hdr *j) {
  pthread_mutex_lock(&sw->mu);
  bool gone = j->tag != 0 && j->tag != sw->pool_tag && sw->match_tag != 0 &&
              j->round == sw->match_round && j->tag != sw->match_tag;
  pthread_mutex_unlock(&sw->mu);
  if (gone) swarm_send_reject(sw, fd, j->round, SWARM_REJECT_GONE, 0);
  return gone;
}

/* Queues p's message on fd (-1: answered already, kept for what it says) for the averaging
 * thread; false when the queue is full (fd is left to the caller). */
static bool enqueue(tern_swarm *sw, pending *p, int fd) {
  pthread_mutex_lock(&sw->mu);
  bool room = sw->nqueue < SWARM_QUEUE_MAX;
  if (room) {
    swarm_conn *c = &sw->queue[sw->nqueue++];
    c->fd = fd;
    c->hdr = p->h;
    c->payload = p->payload;
    p->payload = NULL;
    snprintf(c->from, sizeof c->from, "%s", p->hs.from);
    c->expires_ns = core_deadline_after(QUEUED_SECONDS);
    pthread_cond_broadcast(&sw->cv);
  }
  pthread_mutex_unlock(&sw->mu);
  return room;
}

/* A ROUND_REQ from a lower id that leads a group on the line key this peer leads on too (its
 * payload's last byte): two leaders, each having seen the other's record only after it began to
 * lead. The lower leads by the rule (match.c), so the averaging thread yields to it (lead);
 * answered "still open" already, the asker waits for this peer. */
static void note_lower_leader(tern_swarm *sw, pending *p) {
  if (p->h.len < 1 || p->payload[p->h.len - 1] != 1) return;
  pthread_mutex_lock(&sw->mu);
  bool here = sw->lead_tag != 0 && p->h.tag == sw->lead_tag && p->h.sender < sw->id &&
              !sw->lead_yield_queued;
  sw->lead_yield_queued |= here;
  pthread_mutex_unlock(&sw->mu);
  if (here) enqueue(sw, p, -1);
}

/* A complete first message: answer it or queue it. */
static void dispatch(tern_swarm *sw, pending *p) {
  int fd = p->hs.fd;
  swarm_limit_done(&sw->limits, p->hs.from, false, core_now_ns());
  bool pool = p->h.tag == sw->pool_tag; /* set before the listener starts */
  if (p->h.type == SWARM_JOIN &&
      (turn_away_from_pool(sw, fd, &p->h) || swarm_redirect_join(sw, fd, &p->h) ||
       (!pool && turn_away_late(sw, fd, &p->h)))) {
    close(fd);
  } else if (p->h.type == SWARM_ROUND_REQ) {
    if (!turn_away_from_pool(sw, fd, &p->h) &&
        (pool || (!turn_away_late(sw, fd, &p->h) && !turn_away_off_line(sw, fd, &p->h)))) {
      /* still open here: a plain "no" */
      swarm_hdr h = {.type = SWARM_REJECT, .round = p->h.round, .sender = sw->id};
      core_err err = {0};
      swarm_send(fd, &h, NULL, core_deadline_after(1), p->hs.from, &err);
      if (!pool) note_lower_leader(sw, p);
    }
    close(fd);
  } else if (p->h.type == SWARM_STATE_REQ) {
    serve_state(sw, fd, p->hs.from);
  } else if (p->h.type == SWARM_RESULT_REQ) {
    swarm_held_serve(sw, fd, &p->h, p->hs.from);
    close(fd);
  } else if (p->h.type == SWARM_HELLO) {
    swarm_member m;
    size_t used;
    core_err err = {0};
    if (swarm_member_decode(p->payload, p->h.len, &used, &m, &err) == TERN_OK) {
      CORE_INFO("swarm: hello from %s (DHT port %d)", p->hs.from, m.port);
      swarm_dht_ping(sw, m.host, m.port);
      pthread_mutex_lock(&sw->mu);
      sw->hellos[sw->nhellos++ % CORE_ARRAY_LEN(sw->hellos)] = m;
      pthread_mutex_unlock(&sw->mu);
    } else
      CORE_WARN("swarm: a bad hello from %s: %s", p->hs.from, err.msg);
    close(fd);
  } else if (p->h.type == SWARM_LEAVE) {
    CORE_INFO("swarm: peer %016llx left", (unsigned long long)p->h.sender);
    note_departed(sw, p->h.sender);
    close(fd);
  } else if (p->h.type == SWARM_PROBE) {
    swarm_probe_serve(sw, fd, &p->h, p->hs.from);
  } else if (p->h.type == SWARM_JOIN || p->h.type == SWARM_PART || p->h.type == SWARM_REF ||
             p->h.type == SWARM_HALF) {
    if (enqueue(sw, p, fd)) fd = -1;
    if (fd >= 0) {
      CORE_WARN("swarm: queue full, dropped a %s from %s", swarm_type_name(p->h.type), p->hs.from);
      close(fd);
    }
  }
  free(p->payload);
  memset(p, 0, sizeof *p);
  p->hs.fd = -1;
}

/* Reads what the socket has for this pending connection. */
static void advance(tern_swarm *sw, pending *p) {
  core_err err = {0};
  if (!p->hs_done) {
    if (net_handshake_step(&p->hs, &p->hs_done, &err) != TERN_OK) return refuse(sw, p, err.msg);
    if (!p->hs_done) return;
    if (swarm_seal_begin(sw, p->hs.fd, p->hs.theirs.nonce, p->hs.mine.nonce, false, &err) !=
        TERN_OK)
      return refuse(sw, p, err.msg);
  }
  while (p->hdr_done < SWARM_HDR_LEN) {
    ssize_t r = read(p->hs.fd, p->hdr + p->hdr_done, SWARM_HDR_LEN - p->hdr_done);
    if (r == 0) return refuse(sw, p, "closed before its first message");
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return refuse(sw, p, strerror(errno));
    }
    p->hdr_done += (size_t)r;
    if (p->hdr_done == SWARM_HDR_LEN) {
      if (swarm_hdr_decode(p->hdr, &p->h, p->hs.from, &err) != TERN_OK)
        return refuse(sw, p, err.msg);
      uint8_t t = p->h.type;
      if (t != SWARM_JOIN && t != SWARM_PART && t != SWARM_STATE_REQ && t != SWARM_LEAVE &&
          t != SWARM_HELLO && t != SWARM_RESULT_REQ && t != SWARM_ROUND_REQ && t != SWARM_REF &&
          t != SWARM_PROBE && t != SWARM_HALF)
        return refuse(sw, p, "a first message that no peer sends first");
      swarm_seal_expect(p->hs.fd, p->hdr);
      size_t need = p->h.len + swarm_seal_overhead(p->hs.fd);
      bool control = p->h.type != SWARM_PART && p->h.type != SWARM_REF &&
                     p->h.type != SWARM_PROBE && p->h.type != SWARM_HALF;
      if (control && need > 0 && !(p->payload = malloc(need)))
        return refuse(sw, p, "out of memory");
    }
  }
  if (p->h.type == SWARM_PART || p->h.type == SWARM_REF || p->h.type == SWARM_PROBE ||
      p->h.type == SWARM_HALF)
    return dispatch(sw, p); /* the data is read by whoever takes it */
  size_t tag = swarm_seal_overhead(p->hs.fd), need = p->h.len + tag;
  while (p->payload_done < need) {
    ssize_t r = read(p->hs.fd, p->payload + p->payload_done, need - p->payload_done);
    if (r == 0) return refuse(sw, p, "closed in the middle of a message");
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      return refuse(sw, p, strerror(errno));
    }
    p->payload_done += (size_t)r;
  }
  if (tag && swarm_seal_open(p->hs.fd, p->payload, p->h.len, p->payload + p->h.len, p->hs.from,
                             &err) != TERN_OK)
    return refuse(sw, p, err.msg);
  dispatch(sw, p);
}

static void accept_new(tern_swarm *sw, pending *pend) {
  for (;;) {
    int fd;
    char peer[96];
    core_err err = {0};
    if (net_accept(sw->listen_fd, &fd, peer, sizeof peer, &err) != TERN_OK || fd < 0) return;
    uint64_t now = core_now_ns();
    int slot = -1;
    for (int i = 0; i < SWARM_PENDING_MAX && slot < 0; i++)
      if (pend[i].hs.fd < 0) slot = i;
    if (slot < 0) {
      if (swarm_limit_log(&sw->limits, now))
        CORE_WARN("swarm: %d connections in their handshake already, refused %s", SWARM_PENDING_MAX,
                  peer);
      close(fd);
      continue;
    }
    if (!swarm_limit_admit(&sw->limits, peer, now)) { /* limit.c: counted, told once a second */
      close(fd);
      continue;
    }
    pending *p = &pend[slot];
    memset(p, 0, sizeof *p);
    net_hello mine = {.role = NET_ROLE_PEER, .rank = -1, .size = 0, .stream = 0, .nstreams = 1};
    memcpy(mine.run_id, sw->run_id, 16);
    net_handshake_start(&p->hs, fd, &mine, sw->keyed ? sw->key : NULL);
    snprintf(p->hs.from, sizeof p->hs.from, "%s", peer);
    p->deadline_ns = core_deadline_after(PENDING_SECONDS);
  }
}

/* Closes queued entries nobody took in time. Called with sw->mu held. */
static void expire_queue(tern_swarm *sw, uint64_t now) {
  int k = 0;
  for (int i = 0; i < sw->nqueue; i++) {
    if (sw->queue[i].expires_ns <= now)
      swarm_conn_close(&sw->queue[i]);
    else
      sw->queue[k++] = sw->queue[i];
  }
  sw->nqueue = k;
}

static void *listener(void *arg) {
  tern_swarm *sw = arg;
  pending *pend = calloc(SWARM_PENDING_MAX, sizeof *pend);
  if (!pend) return NULL;
  for (int i = 0; i < SWARM_PENDING_MAX; i++)
    pend[i].hs.fd = -1;
  struct pollfd fds[SWARM_PENDING_MAX + 2];
  int who[SWARM_PENDING_MAX + 2];
  for (;;) {
    int n = 0;
    fds[n++] = (struct pollfd){.fd = sw->wake[0], .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = sw->listen_fd, .events = POLLIN};
    uint64_t now = core_now_ns();
    for (int i = 0; i < SWARM_PENDING_MAX; i++) {
      if (pend[i].hs.fd < 0) continue;
      if (pend[i].deadline_ns <= now) {
        refuse(sw, &pend[i], "silent past its deadline");
        continue;
      }
      short ev = pend[i].hs_done ? POLLIN : net_handshake_events(&pend[i].hs);
      who[n] = i;
      fds[n++] = (struct pollfd){.fd = pend[i].hs.fd, .events = ev};
    }
    pthread_mutex_lock(&sw->mu);
    expire_queue(sw, now);
    pthread_mutex_unlock(&sw->mu);
    swarm_limit_tick(&sw->limits, now);
    swarm_status_tick(sw, now);
    if (poll(fds, (nfds_t)n, 200) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    for (int k = 2; k < n; k++)
      if (fds[k].revents) advance(sw, &pend[who[k]]);
    if (fds[1].revents) accept_new(sw, pend);
  }
  for (int i = 0; i < SWARM_PENDING_MAX; i++)
    if (pend[i].hs.fd >= 0) {
      close(pend[i].hs.fd);
      free(pend[i].payload);
    }
  free(pend);
  return NULL;
}

tern_status swarm_listener_start(tern_swarm *sw, core_err *err) {
  if (pipe(sw->wake) != 0) return core_err_errno(err, errno, "pipe");
  if (pthread_create(&sw->thread, NULL, listener, sw) != 0)
    return core_err_set(err, TERN_ERR_SYSTEM, "cannot start the swarm's listener thread");
  sw->thread_started = true;
  return TERN_OK;
}

void swarm_listener_stop(tern_swarm *sw) {
  if (sw->thread_started) {
    ssize_t w = write(sw->wake[1], "x", 1);
    (void)w;
    pthread_join(sw->thread, NULL);
    sw->thread_started = false;
  }
  if (sw->wake[0] >= 0) close(sw->wake[0]);
  if (sw->wake[1] >= 0) close(sw->wake[1]);
  sw->wake[0] = sw->wake[1] = -1;
  for (int i = 0; i < sw->nqueue; i++)
    swarm_conn_close(&sw->queue[i]);
  sw->nqueue = 0;
}

bool swarm_queue_take(tern_swarm *sw, bool (*want)(const swarm_conn *, void *), void *arg,
                      uint64_t deadline_ns, swarm_conn *out) {
  bool got = false;
  pthread_mutex_lock(&sw->mu);
  for (;;) {
    for (int i = 0; i < sw->nqueue && !got; i++)
      if (want(&sw->queue[i], arg)) {
        *out = sw->queue[i];
        sw->queue[i] = sw->queue[--sw->nqueue];
        got = true;
      }
    uint64_t now = core_now_ns();
    if (got || now >= deadline_ns) break;
    uint64_t until = CORE_MIN(deadline_ns, now + 100000000ull); /* re-check at least each 100 ms */
    struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                          .tv_nsec = (long)(until % 1000000000ull)};
    pthread_cond_timedwait(&sw->cv, &sw->mu, &ts);
  }
  pthread_mutex_unlock(&sw->mu);
  return got;
}

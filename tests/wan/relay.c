/* relay.c: the WAN harness's latency relay: TCP connections leaving a namespace for another
 * region are redirected here (nftables), held for the link's one-way latency in each direction,
 * and passed on. Loss is modelled as the stall a lost segment costs TCP.
 *
 *   relay --links FILE --mark MARK [--queue BYTES] [--seed S]
 *
 * FILE has one line per destination: "CIDR ONE_WAY_MS LOSS" (wan_link.h).
 * wan.sh runs one relay in each peer's namespace, with an nft rule that redirects new outgoing
 * TCP connections to the other regions' subnets to 127.0.0.1:PORT (the port the relay bound,
 * which it prints to stdout); the relay's own sockets carry MARK, which the rule lets pass. So an
 * application connects as usual, and each connection crosses exactly one relay, the one in the
 * namespace that opened it, which delays both of its directions.
 *
 * How it works: one thread, ppoll over every socket with the next due time as its timeout.
 * A connection is two pipes (app to peer, peer to app). Each read from one side (up to 64 KiB)
 * becomes a chunk stamped with the time it is due at the other side: read time + one-way
 * latency, never before the previous chunk (TCP delivers in order), and never before the
 * connection would exist on a real link (the client may send once its SYN-ACK is back, 2 d
 * after the connect; the server answers from 3 d, when it would have accepted). A lost segment
 * (each 1448 bytes, with probability LOSS) adds one round trip, 2 d, as fast retransmit costs,
 * and everything behind it waits too; and a lossy link is paced to the rate a TCP flow keeps up
 * under that loss (mathis_gap), since the relay's own legs see none of it. A pipe holds at most
 * --queue bytes (default 16 MiB, above the bandwidth-delay product of every scaled link), then
 * stops reading, so a slow link pushes back on the sender as a full TCP window does. An end (FIN)
 * is a chunk of its own, passed on as a shutdown when due; a reset, or a failed connect to the
 * destination, resets both sides 2 d after the connect or d after the reset. Bandwidth is not the
 * relay's job: tc's htb on the namespace's link does it, after the delay.
 *
 * The relay logs one line per refused or failed connection, and one per lost segment (what
 * loss.sh counts the stalls it sees against), to stderr, and ends on SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wan_link.h"

#define CHUNK_MAX (64 << 10)
#define MSS 1448 /* the TCP payload of a 1500-byte Ethernet frame, with timestamps */
#define MAX_CONNS 4096

typedef struct chunk {
  struct chunk *next;
  uint64_t due_ns;
  size_t len, off; /* len 0: the end of the stream */
  uint8_t data[];
} chunk;

typedef struct pipe_ {
  int from, to;
  chunk *head, *tail;
  size_t queued;
  uint64_t last_due, not_before;
  uint64_t paced_ns; /* with loss: when the flow's modelled window frees (mathis_gap) */
  bool read_done;    /* the end (or a reset) was read from `from` */
  bool blocked;      /* `to` took no more: wait until it is writable */
  bool done;         /* the end was passed on to `to` */
} pipe_;

typedef struct conn {
  int app, peer;
  const wan_link *ln;
  pipe_ up, down; /* app to peer, peer to app */
  bool connecting;
  uint64_t reset_at; /* 0: none; else when to reset both sides */
  char what[64];     /* "10.77.2.1:5000" for the log */
} conn;

static struct {
  wan_links links;
  conn *conns[MAX_CONNS];
  int nconns;
  size_t queue_cap;
  int mark;
  uint64_t rng;
  volatile sig_atomic_t stop;
} relay = {.queue_cap = 16u << 20};

static void on_signal(int sig) {
  (void)sig;
  relay.stop = 1;
}

/* ---- connections --------------------------------------------------------------------------- */

static void free_chunks(pipe_ *p) {
  while (p->head) {
    chunk *c = p->head;
    p->head = c->next;
    free(c);
  }
}

/* Closes both sides and frees c; with reset, by RST (SO_LINGER 0), as a reset or refusal would. */
static void conn_close(conn *c, bool reset) {
  struct linger lg = {1, 0};
  if (reset) {
    setsockopt(c->app, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    if (c->peer >= 0) setsockopt(c->peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  close(c->app);
  if (c->peer >= 0) close(c->peer);
  free_chunks(&c->up);
  free_chunks(&c->down);
  free(c);
}

static void schedule_reset(conn *c, uint64_t at) {
  if (c->reset_at == 0 || at < c->reset_at) c->reset_at = at;
}

static void pipe_init(pipe_ *p, int from, int to, uint64_t not_before) {
  *p = (pipe_){.from = from, .to = to, .not_before = not_before};
}

static int open_peer(const struct sockaddr_in *dst) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  if (setsockopt(fd, SOL_SOCKET, SO_MARK, &relay.mark, sizeof relay.mark) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    goto fail;
  if (connect(fd, (const struct sockaddr *)dst, sizeof *dst) != 0 && errno != EINPROGRESS)
    goto fail;
  return fd;
fail:
  close(fd);
  return -1;
}

static void accept_one(int lfd) {
  int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
  if (fd < 0) return;
  struct sockaddr_in dst;
  socklen_t len = sizeof dst;
  conn *c = NULL;
  if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) {
    fprintf(stderr, "relay: a connection without an original destination: %s\n", strerror(errno));
    goto fail;
  }
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof ip);
  const wan_link *ln = wan_links_find(&relay.links, ntohl(dst.sin_addr.s_addr));
  if (ln == NULL || relay.nconns == MAX_CONNS || (c = calloc(1, sizeof *c)) == NULL) {
    fprintf(stderr, "relay: refused a connection to %s:%d: %s\n", ip, ntohs(dst.sin_port),
            ln == NULL ? "no link to it" : "too many connections");
    goto fail;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  snprintf(c->what, sizeof c->what, "%s:%d", ip, ntohs(dst.sin_port));
  uint64_t t0 = wan_now_ns(), d = ln->delay_ns;
  c->app = fd, c->ln = ln, c->connecting = true;
  c->peer = open_peer(&dst);
  pipe_init(&c->up, c->app, c->peer, t0 + 2 * d);
  pipe_init(&c->down, c->peer, c->app, t0 + 3 * d);
  if (c->peer < 0) {
    fprintf(stderr, "relay: connecting to %s: %s\n", c->what, strerror(errno));
    schedule_reset(c, t0 + 2 * d);
  }
  relay.conns[relay.nconns++] = c;
  return;
fail:
  free(c);
  close(fd);
}

/* ---- moving bytes -------------------------------------------------------------------------- */

/* The time n bytes take at the rate a lossy TCP flow sustains: Mathis, Semke, Mahdavi and Ott
 * (1997), rate = (MSS / RTT) sqrt(3 / (2 LOSS)), the window that Reno's halving on each loss
 * holds on average. CUBIC does better on long fat links; Reno's bound is the classic one. */
static uint64_t mathis_gap(const wan_link *ln, size_t n) {
  double rtt_s = 2e-9 * (double)ln->delay_ns;
  if (ln->loss <= 0 || rtt_s <= 0) return 0;
  double bytes_per_s = MSS / rtt_s * sqrt(1.5 / ln->loss);
  return (uint64_t)((double)n / bytes_per_s * 1e9);
}

/* Appends a chunk of n bytes (n 0: the end) read at `now` to p. */
static int push_chunk(pipe_ *p, const wan_link *ln, const uint8_t *buf, size_t n, uint64_t now) {
  chunk *c = malloc(sizeof *c + n);
  if (c == NULL) return -1;
  uint64_t sent = now > p->not_before ? now : p->not_before;
  if (ln->loss > 0) {
    p->paced_ns = (p->paced_ns > sent ? p->paced_ns : sent) + mathis_gap(ln, n);
    sent = p->paced_ns;
  }
  uint64_t due = sent + ln->delay_ns;
  for (size_t seg = 0; ln->loss > 0 && seg < (n + MSS - 1) / MSS; seg++)
    if (wan_uniform(&relay.rng) < ln->loss) {
      due += 2 * ln->delay_ns;
      fprintf(stderr, "relay: segment lost: stalled %.3f ms\n", 2e-6 * (double)ln->delay_ns);
    }
  if (due < p->last_due) due = p->last_due;
  *c = (chunk){.due_ns = due, .len = n};
  memcpy(c->data, buf, n);
  p->last_due = due;
  if (p->tail)
    p->tail->next = c;
  else
    p->head = c;
  p->tail = c;
  p->queued += n;
  return 0;
}

/* Reads what `from` has into p. A reset or a read error resets the connection d later. */
static void pipe_read(conn *c, pipe_ *p, uint64_t now) {
  static uint8_t buf[CHUNK_MAX];
  while (!p->read_done && p->queued < relay.queue_cap) {
    ssize_t n = read(p->from, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) {
      p->read_done = true;
      schedule_reset(c, now + c->ln->delay_ns);
      return;
    }
    if (push_chunk(p, c->ln, buf, (size_t)n, now) != 0) {
      fprintf(stderr, "relay: no memory for %zd bytes to %s\n", n, c->what);
      schedule_reset(c, now);
      return;
    }
    if (n == 0) p->read_done = true;
  }
}

/* Writes the chunks of p that are due. A failed write is the far end's reset: d later here. */
static void pipe_write(conn *c, pipe_ *p, uint64_t now) {
  p->blocked = false;
  while (p->head && p->head->due_ns <= now) {
    chunk *h = p->head;
    if (h->len == 0) {
      shutdown(p->to, SHUT_WR);
      p->done = true;
    } else {
      ssize_t n = send(p->to, h->data + h->off, h->len - h->off, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        p->blocked = true;
        return;
      }
      if (n < 0) {
        schedule_reset(c, now + c->ln->delay_ns);
        return;
      }
      h->off += (size_t)n;
      p->queued -= (size_t)n;
      if (h->off < h->len) continue;
    }
    p->head = h->next;
    if (p->head == NULL) p->tail = NULL;
    free(h);
  }
}

/* The connect to the destination finished: on failure, the app is reset when a refusal would
 * have reached it, 2 d after its connect. */
static void finish_connect(conn *c) {
  int e = 0;
  socklen_t len = sizeof e;
  c->connecting = false;
  if (getsockopt(c->peer, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
  if (e == 0) return;
  fprintf(stderr, "relay: connecting to %s: %s\n", c->what, strerror(e));
  schedule_reset(c, c->up.not_before);
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* What c waits for on fd (one of its sockets); no events means fd is left out of the poll, so
 * that a hang-up nobody is reading yet cannot spin the loop. */
static short events_on(const conn *c, int fd) {
  short ev = 0;
  if (c->reset_at) return 0;
  if (fd == c->peer && c->connecting) return POLLOUT;
  for (const pipe_ *p = &c->up; p <= &c->down; p++) {
    if (p->from == fd && !p->read_done && p->queued < relay.queue_cap &&
        !(c->connecting && p == &c->down))
      ev |= POLLIN;
    if (p->to == fd && p->blocked) ev |= POLLOUT;
  }
  return ev;
}

/* When c next needs the loop without a socket event: its reset, or a pipe's head falling due. */
static uint64_t next_due(const conn *c) {
  if (c->reset_at) return c->reset_at;
  uint64_t next = UINT64_MAX;
  for (const pipe_ *p = &c->up; p <= &c->down; p++)
    if (p->head && !p->blocked && !c->connecting && p->head->due_ns < next) next = p->head->due_ns;
  return next;
}

static void poll_entry(struct pollfd *pfd, const conn *c, int fd) {
  short ev = fd < 0 ? 0 : events_on(c, fd);
  *pfd = (struct pollfd){.fd = ev ? fd : -1, .events = ev};
}

/* The poll set: the listener, then each connection's two sockets. Returns the next due time. */
static uint64_t build_poll(struct pollfd *pfd, int lfd) {
  uint64_t next = UINT64_MAX;
  pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
  for (int i = 0; i < relay.nconns; i++) {
    const conn *c = relay.conns[i];
    poll_entry(&pfd[1 + 2 * i], c, c->app);
    poll_entry(&pfd[2 + 2 * i], c, c->peer);
    uint64_t due = next_due(c);
    if (due < next) next = due;
  }
  return next;
}

/* Serves a connection after a poll; false when it is over (closed and freed). */
static bool serve(conn *c, const struct pollfd *app, const struct pollfd *peer, uint64_t now) {
  if (c->reset_at) {
    if (c->reset_at > now) return true;
    conn_close(c, true);
    return false;
  }
  if (c->connecting && peer->revents) finish_connect(c);
  if (app->revents) pipe_read(c, &c->up, now); /* while connecting too: hold what came */
  if (!c->connecting && c->reset_at == 0) {
    if (peer->revents) pipe_read(c, &c->down, now);
    pipe_write(c, &c->up, now);
    pipe_write(c, &c->down, now);
  }
  if (c->up.done && c->down.done) {
    conn_close(c, false);
    return false;
  }
  return true;
}

static int loop(int lfd, const sigset_t *open) {
  static struct pollfd pfd[1 + 2 * MAX_CONNS];
  while (!relay.stop) {
    uint64_t now = wan_now_ns(), next = build_poll(pfd, lfd);
    struct timespec ts, *tsp = wan_timeout_until(next, now, &ts);
    int n = ppoll(pfd, 1 + 2 * (nfds_t)relay.nconns, tsp, open);
    if (n < 0 && errno != EINTR) return perror("relay: ppoll"), 1;
    now = wan_now_ns();
    int kept = 0, had = relay.nconns;
    for (int i = 0; i < had; i++)
      if (serve(relay.conns[i], &pfd[1 + 2 * i], &pfd[2 + 2 * i], now))
        relay.conns[kept++] = relay.conns[i];
    relay.nconns = kept;
    if (n > 0 && (pfd[0].revents & POLLIN)) accept_one(lfd);
  }
  return 0;
}

static int listen_local(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 512) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    fprintf(stderr, "relay: listening on 127.0.0.1: %s\n", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  return fd;
}

static int usage(void) {
  fprintf(stderr, "usage: relay --links FILE --mark MARK [--queue BYTES] [--seed S]\n");
  return 2;
}

static bool number(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  *out = strtoull(s, &end, 0);
  return *s != '\0' && *s != '-' && *end == '\0' && errno == 0;
}

int main(int argc, char **argv) {
  const char *links = NULL;
  unsigned long long mark = 0, queue = relay.queue_cap, seed = 1;
  for (int i = 1; i < argc; i += 2) {
    bool ok = i + 1 < argc;
    if (ok && strcmp(argv[i], "--links") == 0)
      links = argv[i + 1];
    else if (ok && strcmp(argv[i], "--mark") == 0)
      ok = number(argv[i + 1], &mark);
    else if (ok && strcmp(argv[i], "--queue") == 0)
      ok = number(argv[i + 1], &queue);
    else if (ok && strcmp(argv[i], "--seed") == 0)
      ok = number(argv[i + 1], &seed);
    else
      ok = false;
    if (!ok) return usage();
  }
  if (links == NULL || mark == 0 || mark > 0xffffffffu || queue < CHUNK_MAX || queue > (1ull << 32))
    return usage();
  relay.mark = (int)mark, relay.queue_cap = (size_t)queue, relay.rng = seed << 1 | 1;
  if (wan_links_read(links, &relay.links, "relay") != 0) return 1;
  sigset_t open;
  wan_stop_signals(on_signal, &open);
  int lfd = listen_local();
  if (lfd < 0) return 1;
  int rc = loop(lfd, &open);
  for (int i = 0; i < relay.nconns; i++)
    conn_close(relay.conns[i], true);
  close(lfd);
  return rc;
}

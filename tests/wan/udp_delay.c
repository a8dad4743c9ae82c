/* udp_delay.c: the WAN harness's UDP delayer: UDP datagrams leaving a namespace for another
 * region are held in the kernel (NFQUEUE) for the link's one-way latency, then let go, or
 * dropped with the link's loss probability.
 *
 *   udp_delay --links FILE --queue N [--seed S]     prints "bound" once the queue is its own
 *
 * FILE is the relay's (wan_link.h). wan.sh runs one in each peer's namespace beside the relay,
 * with an iptables rule (legacy: this kernel's nftables has no queue expression) that queues
 * outgoing UDP to the other regions on queue N. Unlike TCP, a datagram needs no stream kept in
 * order or pushed back on, so the kernel keeps the packet and this program only decides when it
 * goes: over netlink it learns each packet's id and destination (the first 20 bytes: the IP
 * header) and answers with a verdict, ACCEPT when due, or DROP at once for a lost one. The
 * packet then meets the namespace's htb like any other, so UDP gets latency, loss and bandwidth.
 * Packets to one link wait in a FIFO (they all wait the same), so each verdict is due in order;
 * a full FIFO, or a full kernel queue (fail-open), lets packets through undelayed rather than
 * lose them, and says so once on stderr.
 *
 * The netlink messages (nfnetlink_queue, linux/netfilter/nfnetlink_queue.h) are built and parsed
 * here; every length in a message from the kernel is checked before use. Ends on SIGTERM or
 * SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wan_link.h"

#define FIFO_CAP 8192      /* datagrams held per link: ~1 s of a busy DHT, far past what it sends */
#define KERNEL_QUEUE 16384 /* packets the kernel holds for us before failing open */

typedef struct held {
  uint32_t id;
  uint64_t due_ns;
} held;

typedef struct fifo {
  held *v;
  size_t head, len;
} fifo;

static struct {
  int fd;
  uint16_t queue;
  wan_links links;
  fifo fifos[WAN_MAX_LINKS];
  uint64_t rng;
  bool warned_full;
  volatile sig_atomic_t stop;
} ud;

static void on_signal(int sig) {
  (void)sig;
  ud.stop = 1;
}

/* ---- netlink ------------------------------------------------------------------------------ */

typedef struct msg {
  char buf[256];
  size_t len;
} msg;

static void msg_start(msg *m, uint16_t type, uint16_t flags) {
  memset(m, 0, sizeof *m);
  struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
  h->nlmsg_type = (uint16_t)(NFNL_SUBSYS_QUEUE << 8 | type);
  h->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
  struct nfgenmsg *g = (struct nfgenmsg *)NLMSG_DATA(h);
  g->nfgen_family = AF_INET;
  g->version = NFNETLINK_V0;
  g->res_id = htons(ud.queue);
  m->len = NLMSG_LENGTH(sizeof *g);
}

static void msg_attr(msg *m, uint16_t type, const void *data, size_t len) {
  struct nlattr *a = (struct nlattr *)(m->buf + NLMSG_ALIGN(m->len));
  a->nla_type = type;
  a->nla_len = (uint16_t)(NLA_HDRLEN + len);
  memcpy((char *)a + NLA_HDRLEN, data, len);
  m->len = NLMSG_ALIGN(m->len) + NLA_ALIGN(a->nla_len);
}

static int msg_send(msg *m) {
  ((struct nlmsghdr *)m->buf)->nlmsg_len = (uint32_t)m->len;
  struct sockaddr_nl to = {.nl_family = AF_NETLINK};
  return sendto(ud.fd, m->buf, m->len, 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)m->len
             ? 0
             : -1;
}

/* Sends a configuration message and waits (1 s at most) for the kernel's acknowledgement. */
static int configure(uint16_t attr, const void *data, size_t len) {
  msg m;
  msg_start(&m, NFQNL_MSG_CONFIG, NLM_F_ACK);
  msg_attr(&m, attr, data, len);
  if (msg_send(&m) != 0) return -1;
  char reply[512];
  struct pollfd pf = {.fd = ud.fd, .events = POLLIN};
  if (poll(&pf, 1, 1000) != 1) return errno = ETIMEDOUT, -1;
  ssize_t n = recv(ud.fd, reply, sizeof reply, 0);
  struct nlmsghdr *h = (struct nlmsghdr *)reply;
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR)
    return errno = EPROTO, -1;
  int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
  return e == 0 ? 0 : (errno = -e, -1);
}

static int bind_queue(void) {
  ud.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  struct sockaddr_nl me = {.nl_family = AF_NETLINK};
  if (ud.fd < 0 || bind(ud.fd, (struct sockaddr *)&me, sizeof me) != 0) return -1;
  struct nfqnl_msg_config_cmd cmd = {.command = NFQNL_CFG_CMD_BIND, .pf = htons(AF_INET)};
  struct nfqnl_msg_config_params params = {.copy_range = htonl(20), .copy_mode = NFQNL_COPY_PACKET};
  uint32_t maxlen = htonl(KERNEL_QUEUE), flags = htonl(NFQA_CFG_F_FAIL_OPEN);
  if (configure(NFQA_CFG_CMD, &cmd, sizeof cmd) != 0 ||
      configure(NFQA_CFG_PARAMS, &params, sizeof params) != 0 ||
      configure(NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof maxlen) != 0)
    return -1;
  msg m; /* flags go with their mask in one message */
  msg_start(&m, NFQNL_MSG_CONFIG, 0);
  msg_attr(&m, NFQA_CFG_FLAGS, &flags, sizeof flags);
  msg_attr(&m, NFQA_CFG_MASK, &flags, sizeof flags);
  return msg_send(&m);
}

static void verdict(uint32_t id, uint32_t v) {
  msg m;
  msg_start(&m, NFQNL_MSG_VERDICT, 0);
  struct nfqnl_msg_verdict_hdr vh = {.verdict = htonl(v), .id = htonl(id)};
  msg_attr(&m, NFQA_VERDICT_HDR, &vh, sizeof vh);
  if (msg_send(&m) != 0)
    fprintf(stderr, "udp_delay: verdict on packet %u: %s\n", id, strerror(errno));
}

/* ---- holding packets ---------------------------------------------------------------------- */

/* A packet to link k came at now: drop it (lost), hold it, or let it go when full. */
static void hold(int k, uint32_t id, uint64_t now) {
  const wan_link *l = &ud.links.v[k];
  fifo *f = &ud.fifos[k];
  if (l->loss > 0 && wan_uniform(&ud.rng) < l->loss) {
    fprintf(stderr, "udp_delay: datagram lost\n"); /* loss.sh counts these */
    verdict(id, NF_DROP);
    return;
  }
  if (f->v == NULL) f->v = malloc(FIFO_CAP * sizeof *f->v);
  if (f->v == NULL || f->len == FIFO_CAP) {
    if (!ud.warned_full)
      fprintf(stderr,
              "udp_delay: more than %d datagrams held on one link: "
              "letting them through undelayed\n",
              FIFO_CAP);
    ud.warned_full = true;
    verdict(id, NF_ACCEPT);
    return;
  }
  f->v[(f->head + f->len++) % FIFO_CAP] = (held){id, now + l->delay_ns};
}

/* One NFQNL_MSG_PACKET: its id from NFQA_PACKET_HDR, its destination from NFQA_PAYLOAD. */
static void on_packet(const struct nlmsghdr *h, uint64_t now) {
  const char *p = (const char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
  const char *end = (const char *)h + h->nlmsg_len;
  bool have_id = false;
  uint32_t id = 0, dst = 0;
  bool have_dst = false;
  while (end - p >= NLA_HDRLEN) {
    const struct nlattr *a = (const struct nlattr *)p;
    if (a->nla_len < NLA_HDRLEN || a->nla_len > end - p) break;
    const char *data = p + NLA_HDRLEN;
    size_t len = a->nla_len - NLA_HDRLEN;
    if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR &&
        len >= sizeof(struct nfqnl_msg_packet_hdr)) {
      id = ntohl(((const struct nfqnl_msg_packet_hdr *)data)->packet_id);
      have_id = true;
    } else if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PAYLOAD && len >= 20) {
      memcpy(&dst, data + 16, 4);
      have_dst = true;
    }
    p += NLA_ALIGN(a->nla_len);
  }
  if (!have_id) return; /* nothing to answer: the kernel keeps it until we close */
  const wan_link *l = have_dst ? wan_links_find(&ud.links, ntohl(dst)) : NULL;
  if (l == NULL)
    verdict(id, NF_ACCEPT); /* not ours to delay (the rule is wider) */
  else
    hold((int)(l - ud.links.v), id, now);
}

static void read_packets(uint64_t now) {
  static char buf[65536];
  ssize_t n;
  while ((n = recv(ud.fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    int left = (int)n;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left))
      if (h->nlmsg_type == (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET)) on_packet(h, now);
  }
  if (n < 0 && errno == ENOBUFS && !ud.warned_full) {
    fprintf(stderr, "udp_delay: netlink overran: some packets are let through undelayed\n");
    ud.warned_full = true;
  }
}

/* Accepts what is due; returns the next due time (UINT64_MAX: nothing held). */
static uint64_t release(uint64_t now) {
  uint64_t next = UINT64_MAX;
  for (int k = 0; k < ud.links.n; k++) {
    fifo *f = &ud.fifos[k];
    while (f->len && f->v[f->head].due_ns <= now) {
      verdict(f->v[f->head].id, NF_ACCEPT);
      f->head = (f->head + 1) % FIFO_CAP, f->len--;
    }
    if (f->len && f->v[f->head].due_ns < next) next = f->v[f->head].due_ns;
  }
  return next;
}

static int loop(const sigset_t *open) {
  uint64_t next = UINT64_MAX;
  while (!ud.stop) {
    uint64_t now = wan_now_ns();
    struct timespec ts, *tsp = wan_timeout_until(next, now, &ts);
    struct pollfd pf = {.fd = ud.fd, .events = POLLIN};
    int n = ppoll(&pf, 1, tsp, open);
    if (n < 0 && errno != EINTR) return perror("udp_delay: ppoll"), 1;
    now = wan_now_ns();
    if (n > 0) read_packets(now);
    next = release(now);
  }
  return 0;
}

static bool number(const char *s, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  *out = strtoull(s, &end, 0);
  return *s != '\0' && *s != '-' && *end == '\0' && errno == 0 && *out <= max;
}

int main(int argc, char **argv) {
  const char *links = NULL;
  unsigned long long queue = 1ull << 16, seed = 1; /* queue 65536: not given */
  for (int i = 1; i < argc; i += 2) {
    bool ok = i + 1 < argc;
    if (ok && strcmp(argv[i], "--links") == 0)
      links = argv[i + 1];
    else if (ok && strcmp(argv[i], "--queue") == 0)
      ok = number(argv[i + 1], 65535, &queue);
    else if (ok && strcmp(argv[i], "--seed") == 0)
      ok = number(argv[i + 1], ~0ull >> 1, &seed);
    else
      ok = false;
    if (!ok) links = NULL, i = argc;
  }
  if (links == NULL || queue > 65535) {
    fprintf(stderr, "usage: udp_delay --links FILE --queue N [--seed S]\n");
    return 2;
  }
  ud.queue = (uint16_t)queue, ud.rng = seed << 1 | 1;
  if (wan_links_read(links, &ud.links, "udp_delay") != 0) return 1;
  sigset_t open;
  wan_stop_signals(on_signal, &open);
  if (bind_queue() != 0) {
    fprintf(stderr, "udp_delay: binding netfilter queue %d: %s\n", ud.queue, strerror(errno));
    return 1;
  }
  printf("bound\n"); /* wan.sh waits for this before it queues anything here */
  fflush(stdout);
  int rc = loop(&open);
  close(ud.fd);
  for (int k = 0; k < ud.links.n; k++)
    free(ud.fifos[k].v);
  return rc;
}

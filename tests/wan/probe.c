/* probe.c: measures a link of the WAN harness from inside it: round trips over TCP and UDP, and
 * throughput, for the harness's own tests (link_accuracy.sh, loss.sh, cut_heal.sh) and for
 * anyone checking a topology.
 *
 *   probe serve [SECONDS]        serve TCP and UDP on one port (printed to stdout), on every
 *                                interface, each TCP client from a child of its own (so a
 *                                half-open connection a cut left holds up nobody); exit after
 *                                SECONDS (default 300)
 *   probe ping HOST:PORT COUNT   COUNT round trips of one byte over TCP
 *   probe uping HOST:PORT COUNT  COUNT round trips of one datagram over UDP, each given 4 x the
 *                                fastest so far (1 s before any answer) before it counts as lost
 *   probe bulk HOST:PORT BYTES   sends BYTES over TCP; the server times them from its first read
 *                                to its last, so the figure is the link's rate without its latency
 *
 * A ping prints the first round trip (over TCP it carries the connect's too), then the median,
 * min and max of the rest, how many took over 1.75 x the fastest (a lost TCP segment doubles
 * one) and, over UDP, how many datagrams got no answer. A TCP client opens with one byte, 'p' or
 * 'b'. Ping: the server echoes every byte until the end. Bulk: the server reads to the end, then
 * answers "BYTES TIMED SECONDS\n", TIMED being the bytes after its first read, which SECONDS
 * covers. UDP: the server echoes every datagram. Every socket carries a 30 s timeout, so nothing
 * waits for ever on a cut link.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_S 30
#define BUF (64 << 10)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void set_timeouts(int fd) {
  struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int write_all(int fd, const void *p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = send(fd, (const char *)p + done, n - done, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    done += (size_t)w;
  }
  return 0;
}

/* ---- the server --------------------------------------------------------------------------- */

static void serve_ping(int fd) {
  char c;
  while (read(fd, &c, 1) == 1)
    if (write_all(fd, &c, 1) != 0) return;
}

/* The bytes of the first read arrived before the clock started: they are not timed. */
static void serve_bulk(int fd) {
  static char buf[BUF];
  double first = 0, last = 0;
  long long bytes = 0, timed = 0;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    last = now_s();
    if (bytes == 0)
      first = last;
    else
      timed += n;
    bytes += n;
  }
  char reply[96];
  int len = snprintf(reply, sizeof reply, "%lld %lld %.9f\n", bytes, timed, last - first);
  write_all(fd, reply, (size_t)len);
}

static void serve_tcp_client(int fd) {
  alarm(4 * IO_TIMEOUT_S);
  set_timeouts(fd);
  char kind = 0;
  if (read(fd, &kind, 1) == 1) {
    if (kind == 'p')
      serve_ping(fd);
    else if (kind == 'b')
      serve_bulk(fd);
  }
  _exit(0);
}

static void serve_udp(int ufd, int seconds) {
  alarm((unsigned)seconds);
  char buf[64];
  struct sockaddr_in from;
  for (;;) {
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(ufd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
    if (n > 0) sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
  }
}

static int serve(int seconds) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0), ufd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof a;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 16) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &len) != 0 ||
      bind(ufd, (struct sockaddr *)&a, sizeof a) != 0)
    return perror("probe serve"), 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  signal(SIGCHLD, SIG_IGN); /* children reap themselves */
  if (fork() == 0) serve_udp(ufd, seconds);
  close(ufd);
  alarm((unsigned)seconds); /* a child's deadline is its own */
  for (;;) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    if (fork() == 0) {
      close(lfd);
      serve_tcp_client(fd);
    }
    close(fd);
  }
}

/* ---- the clients -------------------------------------------------------------------------- */

/* A socket of type connected to hostport ("IPV4:PORT"), or -1 with the reason on stderr. */
static int dial(const char *hostport, int type) {
  char host[64];
  int port;
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (sscanf(hostport, "%63[0-9.]:%d", host, &port) != 2 || port < 1 || port > 65535 ||
      inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "probe: '%s' is not IPV4:PORT\n", hostport);
    return -1;
  }
  a.sin_port = htons((uint16_t)port);
  int fd = socket(AF_INET, type, 0);
  set_timeouts(fd);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    fprintf(stderr, "probe: connecting to %s: %s\n", hostport, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Prints rtt[0] (the first) and the statistics of rtt[1 .. n-1] (sorted here). */
static void report(const char *what, const char *hostport, double *rtt, int n, int lost) {
  qsort(rtt + 1, (size_t)n - 1, sizeof *rtt, cmp_double);
  double low = n > 1 ? rtt[1] : rtt[0];
  int slow = 0;
  for (int i = 1; i < n; i++)
    slow += rtt[i] > 1.75 * low;
  printf("%s %s first %.2f median %.2f min %.2f max %.2f ms over %d, %d lost, %d above 1.75 x "
         "min\n",
         what, hostport, rtt[0], n > 1 ? rtt[1 + (n - 1) / 2] : rtt[0], low, rtt[n - 1], n - 1,
         lost, slow);
}

static int ping(const char *hostport, int count) {
  double *rtt = malloc((size_t)count * sizeof *rtt), t0 = now_s();
  int fd = dial(hostport, SOCK_STREAM), rc = 1;
  if (fd < 0 || rtt == NULL) goto done;
  for (int i = 0; i < count; i++) {
    char c = 'p', back;
    if (i == 0 && write_all(fd, &c, 1) != 0) goto fail; /* the kind, then the first byte */
    double t = i == 0 ? t0 : now_s();
    c = 'x';
    if (write_all(fd, &c, 1) != 0 || read(fd, &back, 1) != 1) goto fail;
    rtt[i] = (now_s() - t) * 1e3;
  }
  report("ping", hostport, rtt, count, 0);
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "probe: ping %s: no answer: %s\n", hostport, strerror(errno));
done:
  if (fd >= 0) close(fd);
  free(rtt);
  return rc;
}

/* Datagram i carries i; an answer to an earlier one (late, past its wait) is skipped. */
static int uping(const char *hostport, int count) {
  double *rtt = malloc((size_t)count * sizeof *rtt), fastest = 1.0 / 4;
  int fd = dial(hostport, SOCK_DGRAM), got = 0, lost = 0;
  if (fd < 0 || rtt == NULL) goto done;
  for (uint32_t i = 0; i < (uint32_t)count; i++) {
    double t = now_s(), end = t + 4 * fastest;
    uint32_t back = ~i;
    if (send(fd, &i, sizeof i, 0) != sizeof i) break;
    while (back != i && now_s() < end) {
      struct pollfd pf = {.fd = fd, .events = POLLIN};
      if (poll(&pf, 1, (int)((end - now_s()) * 1e3) + 1) == 1 &&
          recv(fd, &back, sizeof back, 0) != sizeof back)
        back = ~i;
    }
    if (back == i) {
      rtt[got] = now_s() - t;
      if (rtt[got] < fastest) fastest = rtt[got];
      rtt[got++] *= 1e3;
    } else {
      lost++;
    }
  }
  if (got > 0)
    report("uping", hostport, rtt, got, lost);
  else
    fprintf(stderr, "probe: uping %s: no answer to %d datagrams\n", hostport, count);
done:
  if (fd >= 0) close(fd);
  free(rtt);
  return got > 0 ? 0 : 1;
}

static int bulk(const char *hostport, long long bytes) {
  static char buf[BUF];
  int fd = dial(hostport, SOCK_STREAM);
  if (fd < 0) return 1;
  char kind = 'b', reply[96] = "";
  int rc = write_all(fd, &kind, 1);
  for (long long sent = 0; rc == 0 && sent < bytes; sent += BUF)
    rc = write_all(fd, buf, (size_t)(bytes - sent < BUF ? bytes - sent : BUF));
  shutdown(fd, SHUT_WR);
  long long got = 0, timed = 0;
  double secs = 0;
  ssize_t n = rc == 0 ? read(fd, reply, sizeof reply - 1) : -1;
  close(fd);
  if (n <= 0 || sscanf(reply, "%lld %lld %lf", &got, &timed, &secs) != 3 || got != bytes ||
      secs <= 0) {
    fprintf(stderr, "probe: bulk %s: the server saw %lld of %lld bytes\n", hostport, got, bytes);
    return 1;
  }
  printf("bulk %s %lld bytes in %.4f s: %.2f Mbit/s\n", hostport, got, secs,
         (double)timed * 8e-6 / secs);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "serve") == 0)
    return serve(argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 300);
  if (argc == 4 && strcmp(argv[1], "ping") == 0 && atoi(argv[3]) > 0)
    return ping(argv[2], atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "uping") == 0 && atoi(argv[3]) > 0)
    return uping(argv[2], atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "bulk") == 0 && atoll(argv[3]) > 0)
    return bulk(argv[2], atoll(argv[3]));
  fprintf(stderr, "usage: probe serve [SECONDS] | probe ping|uping HOST:PORT COUNT | "
                  "probe bulk HOST:PORT BYTES\n");
  return 2;
}

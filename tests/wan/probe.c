/* probe.c: measures a link of the WAN harness from inside it: round trips and throughput, for
 * the harness's own accuracy test (link_accuracy.sh) and for anyone checking a topology.
 *
 *   probe serve [SECONDS]         listen on every interface (the port goes to stdout), answer
 *                                 clients one at a time, exit after SECONDS (default 300)
 *   probe ping HOST:PORT COUNT    COUNT round trips of one byte; prints the first (it carries the
 *                                 connect's round trip too) and the median, min and max of the
 *                                 rest, and how many of them took over 1.75 x the fastest (stalls:
 * a lost segment doubles one) probe bulk HOST:PORT BYTES    sends BYTES; the server times them from
 * its first read to its last, so the figure is the link's rate without its latency
 *
 * A client opens with one byte, 'p' or 'b'. Ping: the server echoes every byte until the end.
 * Bulk: the server reads to the end of the stream, then answers "BYTES TIMED SECONDS\n", TIMED
 * being the bytes after its first read, which SECONDS covers. Every socket
 * carries a 30 s receive and send timeout, so nothing waits for ever on a cut link.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

static int serve(int seconds) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof a;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 16) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &len) != 0)
    return perror("probe serve"), 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  alarm((unsigned)seconds); /* the whole server's deadline */
  for (;;) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    set_timeouts(fd);
    char kind = 0;
    if (read(fd, &kind, 1) == 1) {
      if (kind == 'p')
        serve_ping(fd);
      else if (kind == 'b')
        serve_bulk(fd);
    }
    close(fd);
  }
}

static int dial(const char *hostport) {
  char host[64];
  int port;
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (sscanf(hostport, "%63[0-9.]:%d", host, &port) != 2 || port < 1 || port > 65535 ||
      inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "probe: '%s' is not IPV4:PORT\n", hostport);
    return -1;
  }
  a.sin_port = htons((uint16_t)port);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
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

static int ping(const char *hostport, int count) {
  double *rtt = malloc((size_t)count * sizeof *rtt), t0 = now_s();
  int fd = dial(hostport), rc = 1;
  if (fd < 0 || rtt == NULL) goto done;
  for (int i = 0; i < count; i++) {
    char c = i == 0 ? 'p' : 'x', back;
    if (i == 0 && write_all(fd, &c, 1) != 0) goto fail; /* the kind, then the first byte */
    double t = i == 0 ? t0 : now_s();
    c = 'x';
    if (write_all(fd, &c, 1) != 0 || read(fd, &back, 1) != 1) goto fail;
    rtt[i] = (now_s() - t) * 1e3;
  }
  qsort(rtt + 1, (size_t)count - 1, sizeof *rtt, cmp_double);
  double low = count > 1 ? rtt[1] : rtt[0];
  int slow = 0;
  for (int i = 1; i < count; i++)
    slow += rtt[i] > 1.75 * low;
  printf("ping %s first %.2f median %.2f min %.2f max %.2f ms over %d, %d above 1.75 x min\n",
         hostport, rtt[0], count > 1 ? rtt[1 + (count - 1) / 2] : rtt[0], low, rtt[count - 1],
         count - 1, slow);
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "probe: ping %s: no answer: %s\n", hostport, strerror(errno));
done:
  if (fd >= 0) close(fd);
  free(rtt);
  return rc;
}

static int bulk(const char *hostport, long long bytes) {
  static char buf[BUF];
  int fd = dial(hostport);
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
    return serve(argc > 2 ? atoi(argv[2]) > 0 ? atoi(argv[2]) : 300 : 300);
  if (argc == 4 && strcmp(argv[1], "ping") == 0 && atoi(argv[3]) > 0)
    return ping(argv[2], atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "bulk") == 0 && atoll(argv[3]) > 0)
    return bulk(argv[2], atoll(argv[3]));
  fprintf(stderr, "usage: probe serve [SECONDS] | probe ping HOST:PORT COUNT | "
                  "probe bulk HOST:PORT BYTES\n");
  return 2;
}

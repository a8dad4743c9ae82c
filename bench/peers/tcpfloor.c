/* tcpfloor.c: the floor of a small TCP message on this machine's loopback: one process sends
 * messages of BYTES back to back, one send() each, on a TCP_NODELAY socket, and another reads
 * them as fast as it can, spinning on nonblocking reads; the time per message, once all are read.
 *
 *   tcpfloor BYTES [MESSAGES]    prints: bytes us_per_message (median of 5 runs of MESSAGES,
 *                                default 20000)
 *
 * Why bench/peers needs it: a broadcast at n = 2 over TCP is one message from the root, and
 * back-to-back broadcasts are bound by what the kernel takes to carry one (the send walks the
 * whole loopback path, receiver's side included, on the sender's CPU). No library can send a
 * message for less; the tables put every tool's time next to this floor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 5

static void die(const char *what) {
  fprintf(stderr, "tcpfloor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY");
}

/* The reader: takes RUNS x messages x bytes, acknowledging each run with one byte. */
static void reader(const struct sockaddr_in *at, size_t bytes, long messages) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr *)at, sizeof *at) != 0) die("connect");
  nodelay(fd);
  int flags = fcntl(fd, F_GETFL);
  char buf[1 << 16];
  for (int run = 0; run < RUNS; run++) {
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    for (long want = (long)bytes * messages; want > 0;) {
      ssize_t r = read(fd, buf, sizeof buf < (size_t)want ? sizeof buf : (size_t)want);
      if (r > 0) want -= r;
      else if (r == 0 || (errno != EAGAIN && errno != EINTR)) die("read");
    }
    fcntl(fd, F_SETFL, flags);
    if (write(fd, "k", 1) != 1) die("write");
  }
  exit(0);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
  long messages = argc > 2 ? atol(argv[2]) : 20000;
  if (bytes < 1 || bytes > (1 << 20) || messages < 1) {
    fprintf(stderr, "usage: tcpfloor BYTES (1 to 1M) [MESSAGES]\n");
    return 2;
  }
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof at;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&at, sizeof at) != 0 || listen(lfd, 1) != 0 ||
      getsockname(lfd, (struct sockaddr *)&at, &len) != 0)
    die("listen");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) reader(&at, bytes, messages);
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) die("accept");
  nodelay(fd);
  char *msg = calloc(1, bytes);
  double us[RUNS];
  for (int run = 0; run < RUNS; run++) {
    double t0 = now_us();
    for (long i = 0; i < messages; i++)
      if (send(fd, msg, bytes, MSG_NOSIGNAL) != (ssize_t)bytes) die("send");
    char k;
    if (read(fd, &k, 1) != 1) die("read the acknowledgement");
    us[run] = (now_us() - t0) / (double)messages;
  }
  waitpid(pid, NULL, 0);
  qsort(us, RUNS, sizeof us[0], cmp_double);
  printf("%zu %.3f\n", bytes, us[RUNS / 2]);
  free(msg);
  return 0;
}

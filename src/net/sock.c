/* sock.c: TCP sockets as tern uses them: nonblocking, close-on-exec, Nagle off, and every wait
 * bounded by a deadline.
 *
 * All sockets are nonblocking so that one thread can drive many of them with poll(); the
 * blocking-style helpers here (net_connect, net_read_all, net_write_all) are loops of "try, then
 * poll until the deadline". A refused connect is retried because during start-up the other side
 * is often not listening yet; anything else (no such host, unreachable network) fails at once.
 * Writes use MSG_NOSIGNAL so a peer that vanished is an error value, never a SIGPIPE.
 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Back-off between refused connects: short enough that start-up is not slowed, long enough that
 * N ranks retrying against a slow rank 0 do not flood it. */
#define RETRY_FIRST_MS 5
#define RETRY_MAX_MS 100

tern_status net_parse_addr(const char *hostport, char *host, size_t host_len, int *port,
                           bool allow_port0, core_err *err) {
  if (hostport == NULL || hostport[0] == '\0')
    return core_err_set(err, TERN_ERR_INVALID_ARG, "address is empty (want host:port)");
  const char *h = hostport, *colon;
  size_t hlen;
  if (hostport[0] == '[') {
    const char *close = strchr(hostport, ']');
    if (close == NULL || close[1] != ':')
      return core_err_set(err, TERN_ERR_INVALID_ARG, "address '%s': want [v6-address]:port",
                          hostport);
    h = hostport + 1;
    hlen = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(hostport, ':');
    if (colon == NULL)
      return core_err_set(err, TERN_ERR_INVALID_ARG, "address '%s' has no port (want host:port)",
                          hostport);
    if (memchr(hostport, ':', (size_t)(colon - hostport)) != NULL)
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "address '%s': an IPv6 address needs brackets, [addr]:port", hostport);
    hlen = (size_t)(colon - hostport);
  }
  if (hlen >= host_len || hlen >= NET_HOST_LEN)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "address '%.64s...': host name too long",
                        hostport);
  long p;
  const char *digits = colon + 1; /* strtol alone would take " 80" and "+80" */
  if (digits[strspn(digits, "0123456789")] != '\0' ||
      !core_parse_int(digits, allow_port0 ? 0 : 1, 65535, &p))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "address '%s': port '%s' is not %s to 65535",
                        hostport, colon + 1, allow_port0 ? "0" : "1");
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  *port = (int)p;
  return TERN_OK;
}

/* Nonblocking, close-on-exec (sockets from socket() and accept4() get both at birth; this is for
 * the rest) and, for TCP, no Nagle: tern's messages are framed and written whole, so waiting to
 * coalesce only adds latency. */
static tern_status tune(int fd, bool tcp, core_err *err) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return core_err_errno(err, errno, "fcntl(O_NONBLOCK)");
  int one = 1;
  if (tcp && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
    return core_err_errno(err, errno, "setsockopt(TCP_NODELAY)");
  return TERN_OK;
}

/* The kernel's cap on what SO_SNDBUF or SO_RCVBUF may ask for (net.core.wmem_max, rmem_max),
 * or 0 when it cannot be read. */
static long sysctl_long(const char *path) {
  FILE *f = fopen(path, "r");
  long v = 0;
  if (f == NULL) return 0;
  if (fscanf(f, "%ld", &v) != 1) v = 0;
  fclose(f);
  return v;
}

bool net_kernel_grants_buffers(int bytes) {
  return sysctl_long("/proc/sys/net/core/rmem_max") >= bytes &&
         sysctl_long("/proc/sys/net/core/wmem_max") >= bytes;
}

bool net_fix_short_path_buffers(int fd, unsigned rtt_limit_us, int bytes) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || ti.tcpi_rtt >= rtt_limit_us)
    return false;
  return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) == 0 &&
         setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) == 0;
}

static tern_status resolve(const char *host, int port, bool passive, struct addrinfo **out,
                           core_err *err) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (passive) hints.ai_flags = AI_PASSIVE;
  char service[8];
  snprintf(service, sizeof service, "%d", port);
  bool any = host == NULL || host[0] == '\0' || strcmp(host, "0.0.0.0") == 0;
  if (any) hints.ai_family = AF_INET;
  int rc = getaddrinfo(any ? NULL : host, service, &hints, out);
  if (rc != 0)
    return core_err_set(err, rc == EAI_NONAME ? TERN_ERR_INVALID_ARG : TERN_ERR_SYSTEM,
                        "cannot resolve '%s': %s", host, gai_strerror(rc));
  return TERN_OK;
}

tern_status net_listen(const char *host, int port, int *fd, int *bound_port, core_err *err) {
  *fd = -1;
  struct addrinfo *ai = NULL;
  tern_status rc = resolve(host, port, true, &ai, err);
  if (rc != TERN_OK) return rc;
  int s = -1, last_errno = 0;
  for (struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
    s = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    /* a restarted job must not wait out TIME_WAIT on its fixed store port */
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, a->ai_addr, a->ai_addrlen) == 0 && listen(s, SOMAXCONN) == 0) break;
    last_errno = errno;
    close(s);
    s = -1;
  }
  freeaddrinfo(ai);
  if (s < 0) return core_err_errno(err, last_errno, "listen on %s:%d", host, port);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(s, (struct sockaddr *)&ss, &len) != 0) {
    rc = core_err_errno(err, errno, "getsockname");
    goto fail;
  }
  *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
  *fd = s;
  return TERN_OK;
fail:
  close(s);
  return rc;
}

/* One connect attempt: 0 connected, else the errno that ended it (ETIMEDOUT at the deadline). */
static int connect_once(const struct addrinfo *a, uint64_t deadline_ns, int *fd) {
  int s = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  int e = 0;
  if (connect(s, a->ai_addr, a->ai_addrlen) != 0) {
    e = errno;
    if (e == EINPROGRESS) {
      struct pollfd p = {.fd = s, .events = POLLOUT};
      int n;
      do
        n = poll(&p, 1, core_ms_left(deadline_ns, 1000));
      while ((n == 0 && core_now_ns() < deadline_ns) || (n < 0 && errno == EINTR));
      socklen_t len = sizeof e;
      if (n <= 0)
        e = ETIMEDOUT;
      else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
        e = errno;
    }
  }
  if (e != 0) {
    close(s);
    return e;
  }
  *fd = s;
  return 0;
}

tern_status net_connect(const char *host, int port, uint64_t deadline_ns, int *fd, core_err *err) {
  return net_connect_until(host, port, deadline_ns, deadline_ns, fd, err);
}

tern_status net_connect_until(const char *host, int port, uint64_t deadline_ns,
                              uint64_t refused_by_ns, int *fd, core_err *err) {
  *fd = -1;
  struct addrinfo *ai = NULL;
  tern_status rc = resolve(host, port, false, &ai, err);
  if (rc != TERN_OK) return rc;
  int wait_ms = RETRY_FIRST_MS, e = 0, tries = 0;
  for (;;) {
    for (struct addrinfo *a = ai; a != NULL && *fd < 0; a = a->ai_next) {
      e = connect_once(a, deadline_ns, fd);
      if (e == 0) break;
    }
    tries++;
    if (*fd >= 0) break;
    bool retry = e == ECONNREFUSED || e == ECONNRESET || e == EAGAIN || e == EINTR;
    if (!retry || core_now_ns() >= refused_by_ns) goto fail;
    core_sleep_ms(CORE_MIN(wait_ms, CORE_MAX(core_ms_left(refused_by_ns, wait_ms), 1)));
    wait_ms = CORE_MIN(wait_ms * 2, RETRY_MAX_MS);
  }
  freeaddrinfo(ai);
  rc = tune(*fd, true, err);
  if (rc != TERN_OK) {
    close(*fd);
    *fd = -1;
  }
  return rc;
fail:
  freeaddrinfo(ai);
  if (e == ECONNREFUSED || e == ETIMEDOUT)
    return core_err_set(err, TERN_ERR_TIMEOUT, "connect to %s:%d: %s (%d attempts)", host, port,
                        strerror(e), tries);
  return core_err_errno(err, e, "connect to %s:%d", host, port);
}

tern_status net_accept(int listen_fd, int *fd, char *peer, size_t peer_len, core_err *err) {
  *fd = -1;
  int s = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (s < 0) {
    /* nothing pending, or a connection that died before we got to it: not our failure */
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED ||
        errno == EPROTO)
      return TERN_OK;
    return core_err_errno(err, errno, "accept");
  }
  tern_status rc = tune(s, true, err);
  if (rc != TERN_OK) {
    close(s);
    return rc;
  }
  if (peer != NULL) net_peer_addr(s, peer, peer_len);
  *fd = s;
  return TERN_OK;
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t out_len) {
  char ip[INET6_ADDRSTRLEN];
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(out, out_len, "%s:%d", ip, ntohs(a->sin_port));
  } else if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    snprintf(out, out_len, "[%s]:%d", ip, ntohs(a->sin6_port));
  } else if (ss->ss_family == AF_UNIX) {
    snprintf(out, out_len, "local socket");
  } else {
    snprintf(out, out_len, "?");
  }
}

void net_local_addr(int fd, char *out, size_t out_len) {
  struct sockaddr_storage ss = {0};
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) ss.ss_family = AF_UNSPEC;
  format_addr(&ss, out, out_len);
}

void net_peer_addr(int fd, char *out, size_t out_len) {
  struct sockaddr_storage ss = {0};
  socklen_t len = sizeof ss;
  if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) ss.ss_family = AF_UNSPEC;
  format_addr(&ss, out, out_len);
}

/* Waits until fd is ready for events or the deadline passes. */
static tern_status wait_ready(int fd, short events, uint64_t deadline_ns, const char *verb,
                              size_t done, size_t n, const char *what, core_err *err) {
  for (;;) {
    struct pollfd p = {.fd = fd, .events = events};
    int ms = core_ms_left(deadline_ns, 1000);
    int r = poll(&p, 1, ms);
    if (r > 0) return TERN_OK;
    if (r < 0 && errno != EINTR) return core_err_errno(err, errno, "poll on %s", what);
    if (r == 0 && core_now_ns() >= deadline_ns)
      return core_err_set(err, TERN_ERR_TIMEOUT, "%s %s: deadline passed after %zu of %zu bytes",
                          verb, what, done, n);
  }
}

tern_status net_write_all(int fd, const void *buf, size_t n, uint64_t deadline_ns, const char *what,
                          core_err *err) {
  const char *p = buf;
  size_t done = 0;
  while (done < n) {
    ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL);
    if (w > 0) {
      done += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      tern_status rc = wait_ready(fd, POLLOUT, deadline_ns, "write to", done, n, what, err);
      if (rc != TERN_OK) return rc;
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
      return core_err_set(err, TERN_ERR_PEER_LOST, "write to %s: connection lost (%s)", what,
                          strerror(errno));
    return core_err_errno(err, errno, "write to %s", what);
  }
  return TERN_OK;
}

tern_status net_read_all(int fd, void *buf, size_t n, uint64_t deadline_ns, const char *what,
                         core_err *err) {
  char *p = buf;
  size_t done = 0;
  while (done < n) {
    ssize_t r = recv(fd, p + done, n - done, 0);
    if (r > 0) {
      done += (size_t)r;
      continue;
    }
    if (r == 0)
      return core_err_set(err, TERN_ERR_PEER_LOST,
                          "read from %s: connection closed after %zu of "
                          "%zu bytes",
                          what, done, n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      tern_status rc = wait_ready(fd, POLLIN, deadline_ns, "read from", done, n, what, err);
      if (rc != TERN_OK) return rc;
      continue;
    }
    if (errno == ECONNRESET || errno == ENOTCONN)
      return core_err_set(err, TERN_ERR_PEER_LOST, "read from %s: connection lost (%s)", what,
                          strerror(errno));
    return core_err_errno(err, errno, "read from %s", what);
  }
  return TERN_OK;
}

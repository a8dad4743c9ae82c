/* tcp.c: the TCP channel to one peer: several sockets ("streams"), each a FIFO of stripes.
 *
 * A message travels as one stripe on stream 0 when it is small, or as up to nstreams stripes
 * (4 KiB-aligned cuts) on streams 0..k-1 when it is large, so that one slow congestion window
 * does not cap a large transfer. Both ends cut the same way (it depends only on the message's
 * length and kind, which every frame is checked against, and on the stream count, which the
 * handshake makes equal), so each stream stays a simple FIFO: stripe after stripe, each behind
 * a 48-byte frame (frame.c).
 *
 * Sending is one sendmsg of frame + payload (zero copy from the caller's buffer). Receiving
 * reads frame and payload together into place; a reducing receive reads into a per-stream
 * bounce buffer small enough to stay in cache and reduces whole elements as they arrive.
 * Every frame is checked against what this rank expects before its payload is trusted.
 *
 * Each read also asks for up to NET_READ_AHEAD bytes past the stripe it fills, and the next
 * stripes are taken from those first. A rank that fell behind a stream of small messages (a
 * broadcast's leaf while the root runs ahead) then takes several per system call instead of one,
 * which pays where a system call costs microseconds, as in a VM (docs/perf/tcp.md).
 */
#include "net/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct stripe {
  net_xfer *x;
  uint64_t off, len;
} stripe;

struct net_tcp_stream {
  int fd;
  net_queue sendq, recvq; /* of stripes */
  uint8_t send_frame[NET_FRAME_LEN];
  size_t sent; /* bytes of frame + payload sent for the head send stripe */
  uint8_t recv_frame[NET_FRAME_LEN];
  size_t frame_got;   /* bytes of the head receive stripe's frame read */
  uint64_t got;       /* payload bytes read */
  uint64_t reduced;   /* payload bytes reduced into place (reducing receives) */
  char *bounce;       /* NET_BOUNCE_BYTES, allocated on the first reducing receive */
  size_t bounce_have; /* bytes in bounce not reduced yet */
  char *ahead;        /* NET_READ_AHEAD, bytes read past the head receive stripe */
  size_t ahead_at;    /* where those not taken yet start */
  size_t ahead_len;   /* and how many they are */
};

tern_status net_tcp_chan_init(net_tcp_chan *ch, int peer, const int *fds, int nstreams,
                              const char *what, core_err *err) {
  memset(ch, 0, sizeof *ch);
  ch->peer = peer;
  snprintf(ch->what, sizeof ch->what, "%s", what);
  ch->streams = calloc((size_t)nstreams, sizeof *ch->streams);
  if (ch->streams == NULL) return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
  ch->nstreams = nstreams;
  for (int i = 0; i < nstreams; i++) {
    ch->streams[i].fd = fds[i];
    net_queue_init(&ch->streams[i].sendq, sizeof(stripe));
    net_queue_init(&ch->streams[i].recvq, sizeof(stripe));
  }
  return TERN_OK;
}

void net_tcp_chan_close(net_tcp_chan *ch) {
  for (int i = 0; i < ch->nstreams; i++) {
    net_tcp_stream *s = &ch->streams[i];
    if (s->fd >= 0) close(s->fd);
    net_queue_free(&s->sendq);
    net_queue_free(&s->recvq);
    free(s->bounce);
    free(s->ahead);
  }
  free(ch->streams);
  ch->streams = NULL;
  ch->nstreams = 0;
}

void net_tcp_shutdown(net_tcp_chan *ch) {
  for (int i = 0; i < ch->nstreams; i++)
    if (ch->streams[i].fd >= 0) shutdown(ch->streams[i].fd, SHUT_RDWR);
}

tern_status net_tcp_post(net_tcp_chan *ch, net_xfer *x, core_err *err) {
  uint64_t bytes = x->hdr.bytes;
  uint64_t stripe_min = x->flow & NET_FLOW_EXCHANGE ? NET_STRIPE_MIN : NET_STRIPE_MIN_ONE_WAY;
  int nstripes = 1;
  if (bytes >= stripe_min && ch->nstreams > 1)
    nstripes = (int)CORE_MIN((uint64_t)ch->nstreams, bytes / stripe_min);
  x->parts_left = nstripes;
  x->complete = false;
  for (int i = 0; i < nstripes; i++) {
    uint64_t from = i == 0 ? 0 : (bytes * (uint64_t)i / (uint64_t)nstripes) & ~4095ull;
    uint64_t to =
        i == nstripes - 1 ? bytes : (bytes * (uint64_t)(i + 1) / (uint64_t)nstripes) & ~4095ull;
    net_tcp_stream *s = &ch->streams[i];
    stripe st = {x, from, to - from};
    if (net_queue_push(x->is_send ? &s->sendq : &s->recvq, &st) != TERN_OK)
      return core_err_set(err, TERN_ERR_NOMEM, "no memory to queue a message for %s", ch->what);
  }
  return TERN_OK;
}

static void stripe_done(net_xfer *x) {
  if (--x->parts_left == 0) x->complete = true;
}

static tern_status io_error(net_tcp_chan *ch, int errnum, const char *doing, core_err *err) {
  if (errnum == EPIPE || errnum == ECONNRESET || errnum == ENOTCONN || errnum == ESHUTDOWN)
    return core_err_set(err, TERN_ERR_PEER_LOST, "connection to %s lost while %s: %s", ch->what,
                        doing, strerror(errnum));
  return core_err_errno(err, errnum, "%s with %s", doing, ch->what);
}

static tern_status send_some(net_tcp_chan *ch, net_tcp_stream *s, bool *moved, core_err *err) {
  stripe *st;
  while ((st = net_queue_peek(&s->sendq)) != NULL) {
    net_xfer *x = st->x;
    if (s->sent == 0) {
      net_frame f = {x->hdr, st->off, st->len};
      net_frame_encode(&f, s->send_frame);
    }
    size_t total = NET_FRAME_LEN + st->len;
    while (s->sent < total) {
      struct iovec iov[2];
      int n = 0;
      if (s->sent < NET_FRAME_LEN)
        iov[n++] = (struct iovec){s->send_frame + s->sent, NET_FRAME_LEN - s->sent};
      size_t pdone = s->sent > NET_FRAME_LEN ? s->sent - NET_FRAME_LEN : 0;
      if (st->len > pdone)
        iov[n++] = (struct iovec){(char *)x->src + st->off + pdone, st->len - pdone};
      struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
      ssize_t w = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return TERN_OK;
        return io_error(ch, errno, "sending", err);
      }
      s->sent += (size_t)w;
      *moved = true;
    }
    s->sent = 0;
    net_queue_pop(&s->sendq);
    stripe_done(x);
  }
  return TERN_OK;
}

/* Checks the frame of the head receive stripe once it is whole. */
static tern_status check_frame(net_tcp_chan *ch, net_tcp_stream *s, const stripe *st,
                               core_err *err) {
  net_frame f;
  tern_status rc = net_frame_decode(s->recv_frame, &f, ch->what, err);
  if (rc != TERN_OK) return rc;
  rc = net_msg_match(&st->x->hdr, &f.msg, ch->peer, err);
  if (rc != TERN_OK) return rc;
  if (f.stripe_off != st->off || f.stripe_len != st->len)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent stripe [%llu, +%llu) where [%llu, +%llu) was due", ch->what,
                        (unsigned long long)f.stripe_off, (unsigned long long)f.stripe_len,
                        (unsigned long long)st->off, (unsigned long long)st->len);
  return TERN_OK;
}

/* Reduces the whole elements gathered in bounce into place. */
static void reduce_bounce(net_tcp_stream *s, const stripe *st, bool all) {
  net_xfer *x = st->x;
  size_t esize = tern_dtype_size((tern_dtype)x->hdr.dtype);
  size_t whole = all ? s->bounce_have : s->bounce_have / esize * esize;
  if (whole == 0) return;
  uint64_t at = st->off + s->reduced;
  core_reduce((tern_dtype)x->hdr.dtype, (tern_op)x->hdr.op, x->dst + at, x->src + at, s->bounce,
              whole / esize);
  s->reduced += whole;
  s->bounce_have -= whole;
  memmove(s->bounce, s->bounce + whole, s->bounce_have);
}

/* Counts `used` bytes just placed for the head receive stripe: its frame's first, checked once
 * whole, then its payload's, reduced as whole elements gather. */
static tern_status placed(net_tcp_chan *ch, net_tcp_stream *s, const stripe *st, size_t used,
                          core_err *err) {
  if (s->frame_got < NET_FRAME_LEN) {
    size_t f = CORE_MIN(used, NET_FRAME_LEN - s->frame_got);
    s->frame_got += f;
    used -= f;
    if (s->frame_got == NET_FRAME_LEN) {
      tern_status rc = check_frame(ch, s, st, err);
      if (rc != TERN_OK) return rc;
    }
  }
  s->got += used;
  if (st->x->reduce) {
    s->bounce_have += used;
    reduce_bounce(s, st, false);
  }
  return TERN_OK;
}

/* Where the head receive stripe's next bytes go: the rest of its frame, then its payload (in
 * place, or into the bounce buffer of a reducing receive). */
static int stripe_iov(net_tcp_stream *s, const stripe *st, struct iovec *iov) {
  int n = 0;
  net_xfer *x = st->x;
  if (s->frame_got < NET_FRAME_LEN)
    iov[n++] = (struct iovec){s->recv_frame + s->frame_got, NET_FRAME_LEN - s->frame_got};
  uint64_t want = st->len - s->got;
  if (want > 0) {
    if (x->reduce)
      iov[n++] = (struct iovec){s->bounce + s->bounce_have,
                                CORE_MIN(want, NET_BOUNCE_BYTES - s->bounce_have)};
    else
      iov[n++] = (struct iovec){x->dst + st->off + s->got, want};
  }
  return n;
}

/* Copies read-ahead bytes into iov; returns how many. */
static size_t take_ahead(net_tcp_stream *s, const struct iovec *iov, int n) {
  size_t took = 0;
  for (int i = 0; i < n && s->ahead_len > 0; i++) {
    size_t k = CORE_MIN(iov[i].iov_len, s->ahead_len);
    memcpy(iov[i].iov_base, s->ahead + s->ahead_at, k);
    s->ahead_at += k;
    s->ahead_len -= k;
    took += k;
  }
  return took;
}

/* Reads into iov and, past it, up to NET_READ_AHEAD bytes of what follows on the stream, so that
 * a rank that fell behind a stream of small messages takes several per system call. *into_iov is
 * the bytes that went into iov, 0 when the socket had none; the rest wait in s->ahead. */
static tern_status read_some(net_tcp_chan *ch, net_tcp_stream *s, const stripe *st,
                             struct iovec *iov, int n, size_t *into_iov, core_err *err) {
  size_t asked = 0;
  for (int i = 0; i < n; i++)
    asked += iov[i].iov_len;
  iov[n++] = (struct iovec){s->ahead, NET_READ_AHEAD};
  *into_iov = 0;
  for (;;) {
    ssize_t r = readv(s->fd, iov, n);
    if (r > 0) {
      *into_iov = CORE_MIN((size_t)r, asked);
      s->ahead_at = 0;
      s->ahead_len = (size_t)r - *into_iov;
      return TERN_OK;
    }
    if (r == 0)
      return core_err_set(err, TERN_ERR_PEER_LOST,
                          "%s closed the connection in the middle of %s #%u", ch->what,
                          net_kind_name(st->x->hdr.kind), st->x->hdr.seq);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return TERN_OK;
    return io_error(ch, errno, "receiving", err);
  }
}

static tern_status recv_some(net_tcp_chan *ch, net_tcp_stream *s, bool *moved, core_err *err) {
  stripe *st;
  if (s->ahead == NULL && (s->ahead = malloc(NET_READ_AHEAD)) == NULL)
    return core_err_set(err, TERN_ERR_NOMEM, "no memory for a receive buffer (%s)", ch->what);
  while ((st = net_queue_peek(&s->recvq)) != NULL) {
    net_xfer *x = st->x;
    if (x->reduce && s->bounce == NULL && (s->bounce = malloc(NET_BOUNCE_BYTES)) == NULL)
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for a receive buffer (%s)", ch->what);
    while (s->frame_got < NET_FRAME_LEN || s->got < st->len) {
      struct iovec iov[3];
      int n = stripe_iov(s, st, iov);
      size_t used;
      if (s->ahead_len > 0) {
        used = take_ahead(s, iov, n);
      } else {
        tern_status rc = read_some(ch, s, st, iov, n, &used, err);
        if (rc != TERN_OK || used == 0) return rc;
      }
      *moved = true;
      tern_status rc = placed(ch, s, st, used, err);
      if (rc != TERN_OK) return rc;
    }
    if (x->reduce) reduce_bounce(s, st, true);
    s->frame_got = 0;
    s->got = s->reduced = 0;
    net_queue_pop(&s->recvq);
    stripe_done(x);
  }
  return TERN_OK;
}

tern_status net_tcp_progress(net_tcp_chan *ch, bool *moved, core_err *err) {
  for (int i = 0; i < ch->nstreams; i++) {
    net_tcp_stream *s = &ch->streams[i];
    tern_status rc = s->sendq.len ? send_some(ch, s, moved, err) : TERN_OK;
    if (rc == TERN_OK && s->recvq.len) rc = recv_some(ch, s, moved, err);
    if (rc != TERN_OK) return rc;
  }
  return TERN_OK;
}

bool net_tcp_busy(const net_tcp_chan *ch) {
  for (int i = 0; i < ch->nstreams; i++)
    if (ch->streams[i].sendq.len || ch->streams[i].recvq.len) return true;
  return false;
}

int net_tcp_pollfds(const net_tcp_chan *ch, struct pollfd *fds, int max) {
  int n = 0;
  for (int i = 0; i < ch->nstreams && n < max; i++) {
    const net_tcp_stream *s = &ch->streams[i];
    short ev = (short)((s->recvq.len ? POLLIN : 0) | (s->sendq.len ? POLLOUT : 0));
    if (ev) fds[n++] = (struct pollfd){.fd = s->fd, .events = ev};
  }
  return n;
}

/* run/output.c: tagged output for `tern run --tag-output` (run/output.h).
 *
 * A line is written out whole, with one write(2), so that lines of different ranks never mix;
 * bytes wait in a stream's buffer until their newline comes, and a line longer than the buffer
 * goes out in buffer-sized pieces, each tagged.
 */
#include "output.h"

#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 16384

typedef struct stream {
  int rd, wr;   /* the pipe's ends here (-1: closed) */
  int rank, to; /* to: 1 or 2, the fd the rank writes and tern run writes the lines to */
  size_t len;
  char buf[LINE_MAX_BYTES];
} stream;

struct run_output {
  int n;
  stream *s; /* 2 n: rank r's stdout at 2 r, its stderr at 2 r + 1 */
};

run_output *run_output_new(int n, int first) {
  run_output *o = calloc(1, sizeof *o);
  if (o == NULL || (o->s = calloc(2 * (size_t)n, sizeof *o->s)) == NULL) {
    free(o);
    return NULL;
  }
  o->n = n;
  for (int i = 0; i < 2 * n; i++)
    o->s[i] = (stream){.rd = -1, .wr = -1, .rank = first + i / 2, .to = 1 + i % 2};
  return o;
}

int run_output_attach(run_output *o, int r, posix_spawn_file_actions_t *fa) {
  for (int k = 0; k < 2; k++) {
    stream *st = &o->s[2 * r + k];
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return errno;
    st->rd = p[0];
    st->wr = p[1];
    fcntl(st->rd, F_SETFL, O_NONBLOCK);
    posix_spawn_file_actions_adddup2(fa, st->wr, st->to); /* dup2 clears CLOEXEC on the copy */
  }
  return 0;
}

void run_output_spawned(run_output *o, int r) {
  for (int k = 0; k < 2; k++) {
    stream *st = &o->s[2 * r + k];
    if (st->wr >= 0) close(st->wr);
    st->wr = -1;
  }
}

int run_output_pollfds(const run_output *o, struct pollfd *fds, int cap) {
  int k = 0;
  for (int i = 0; i < 2 * o->n && k < cap; i++)
    if (o->s[i].rd >= 0) fds[k++] = (struct pollfd){.fd = o->s[i].rd, .events = POLLIN};
  return k;
}

static void emit(stream *st, const char *line, size_t len) {
  char out[LINE_MAX_BYTES + 64];
  int head = snprintf(out, sizeof out, "[1,%d]<%s>:", st->rank, st->to == 1 ? "stdout" : "stderr");
  memcpy(out + head, line, len);
  size_t total = (size_t)head + len;
  if (len == 0 || line[len - 1] != '\n') out[total++] = '\n';
  for (size_t done = 0; done < total;) {
    ssize_t w = write(st->to, out + done, total - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* our own output is gone: nothing to tell it to */
    done += (size_t)w;
  }
}

/* Emits every whole line in st's buffer (and the buffer itself when full or at the end). */
static void flush_lines(stream *st, bool end) {
  size_t start = 0;
  for (size_t i = 0; i < st->len; i++)
    if (st->buf[i] == '\n') {
      emit(st, st->buf + start, i + 1 - start);
      start = i + 1;
    }
  memmove(st->buf, st->buf + start, st->len - start);
  st->len -= start;
  if (st->len > 0 && (end || st->len == sizeof st->buf)) {
    emit(st, st->buf, st->len);
    st->len = 0;
  }
}

/* Reads what st's pipe holds; closes it at its end. */
static void read_stream(stream *st) {
  for (;;) {
    ssize_t got = read(st->rd, st->buf + st->len, sizeof st->buf - st->len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return; /* EAGAIN: all there was */
    if (got == 0) {
      flush_lines(st, true);
      close(st->rd);
      st->rd = -1;
      return;
    }
    st->len += (size_t)got;
    flush_lines(st, false);
  }
}

void run_output_pump(run_output *o, const struct pollfd *fds, int n) {
  for (int k = 0; k < n; k++) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    for (int i = 0; i < 2 * o->n; i++)
      if (o->s[i].rd == fds[k].fd) read_stream(&o->s[i]);
  }
}

void run_output_finish(run_output *o, int ms) {
  if (o == NULL) return;
  uint64_t deadline = core_deadline_after(ms / 1000.0);
  struct pollfd fds[256];
  int n;
  /* a rank's children may hold its pipes open: the wait for their end is bounded */
  while ((n = run_output_pollfds(o, fds, 256)) > 0 && core_now_ns() < deadline) {
    if (poll(fds, (nfds_t)n, core_ms_left(deadline, ms)) <= 0) break;
    run_output_pump(o, fds, n);
  }
  for (int i = 0; i < 2 * o->n; i++) {
    stream *st = &o->s[i];
    if (st->rd >= 0) {
      flush_lines(st, true);
      close(st->rd);
    }
    if (st->wr >= 0) close(st->wr);
  }
  free(o->s);
  free(o);
}

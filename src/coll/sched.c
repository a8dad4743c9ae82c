/* sched.c: a schedule's storage, the step-append helpers, and the names of kinds and algorithms.
 *
 * A schedule is one growable array of steps; a phase is a run of steps whose last one carries
 * last = 1, so closing a phase is marking the step before it. The array only grows (doubling),
 * and coll_sched_reset keeps it, so the executor rebuilding a schedule for every call allocates
 * nothing once the array has reached its size. An append that cannot grow records
 * TERN_ERR_NOMEM in the schedule and every later append is dropped, which lets a builder append
 * freely and look at the status once.
 *
 * Zero-element copies and reductions do nothing, so they are dropped here; zero-element messages
 * are kept (a barrier is made of them), and data builders leave them out themselves.
 */
#include "coll/sched.h"
#include "net/transport.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void coll_sched_init(coll_sched *s) {
  memset(s, 0, sizeof *s);
}

void coll_sched_free(coll_sched *s) {
  free(s->steps);
  coll_sched_init(s);
}

void coll_sched_reset(coll_sched *s) {
  s->len = 0;
  s->tmp_count = 0;
  s->nphases = 0;
  s->algo = COLL_ALGO_AUTO;
  s->status = TERN_OK;
  s->view.on = false;
}

tern_status coll_sched_status(const coll_sched *s) {
  return s->status;
}

bool coll_sched_equal(const coll_sched *x, const coll_sched *y) {
  if (x->len != y->len || x->tmp_count != y->tmp_count || x->nphases != y->nphases) return false;
  for (size_t i = 0; i < x->len; i++) {
    const coll_step *a = &x->steps[i], *b = &y->steps[i];
    if (a->kind != b->kind || a->buf != b->buf || a->src_buf != b->src_buf || a->last != b->last ||
        a->peer != b->peer || a->off != b->off || a->src_off != b->src_off || a->count != b->count)
      return false;
  }
  return true;
}

/* Re-addresses a buffer through the view (see coll_view in sched.h). */
static void map_buf(const coll_sched *s, coll_buf *buf, size_t *off) {
  if (!s->view.on) return;
  *off += s->view.off[*buf];
  *buf = (coll_buf)s->view.buf[*buf];
}

static int map_peer(const coll_sched *s, int peer) {
  if (!s->view.on) return peer;
  int v = s->view.first + peer * s->view.stride;
  return s->view.ranks ? s->view.ranks[v] : v;
}

static tern_status append(coll_sched *s, const coll_step *st) {
  if (s->status != TERN_OK) return s->status;
  if (s->len == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    coll_step *steps =
        cap > SIZE_MAX / sizeof *steps ? NULL : realloc(s->steps, cap * sizeof *steps);
    if (steps == NULL) return s->status = TERN_ERR_NOMEM;
    s->steps = steps;
    s->cap = cap;
  }
  s->steps[s->len++] = *st;
  return TERN_OK;
}

tern_status coll_sched_send(coll_sched *s, int peer, coll_buf buf, size_t off, size_t count) {
  map_buf(s, &buf, &off);
  peer = map_peer(s, peer);
  coll_step st = {.kind = COLL_STEP_SEND, .buf = buf, .peer = peer, .off = off, .count = count};
  return append(s, &st);
}

tern_status coll_sched_recv(coll_sched *s, int peer, coll_buf buf, size_t off, size_t count) {
  map_buf(s, &buf, &off);
  peer = map_peer(s, peer);
  coll_step st = {.kind = COLL_STEP_RECV, .buf = buf, .peer = peer, .off = off, .count = count};
  return append(s, &st);
}

tern_status coll_sched_recv_reduce(coll_sched *s, int peer, coll_buf buf, size_t off, coll_buf src,
                                   size_t src_off, size_t count) {
  map_buf(s, &buf, &off);
  map_buf(s, &src, &src_off);
  peer = map_peer(s, peer);
  coll_step st = {.kind = COLL_STEP_RECV_REDUCE,
                  .buf = buf,
                  .src_buf = src,
                  .peer = peer,
                  .off = off,
                  .src_off = src_off,
                  .count = count};
  return append(s, &st);
}

/* A copy or a reduction: local steps, no peer. */
static tern_status append_local(coll_sched *s, coll_step_kind kind, coll_buf buf, size_t off,
                                coll_buf src, size_t src_off, size_t count) {
  map_buf(s, &buf, &off);
  map_buf(s, &src, &src_off);
  if (count == 0 || (kind == COLL_STEP_COPY && buf == src && off == src_off)) return s->status;
  coll_step st = {.kind = kind,
                  .buf = buf,
                  .src_buf = src,
                  .peer = -1,
                  .off = off,
                  .src_off = src_off,
                  .count = count};
  return append(s, &st);
}

tern_status coll_sched_copy(coll_sched *s, coll_buf buf, size_t off, coll_buf src, size_t src_off,
                            size_t count) {
  return append_local(s, COLL_STEP_COPY, buf, off, src, src_off, count);
}

tern_status coll_sched_reduce(coll_sched *s, coll_buf buf, size_t off, coll_buf src, size_t src_off,
                              size_t count) {
  return append_local(s, COLL_STEP_REDUCE, buf, off, src, src_off, count);
}

void coll_sched_end_phase(coll_sched *s) {
  if (s->len == 0 || s->steps[s->len - 1].last) return;
  s->steps[s->len - 1].last = 1;
  s->nphases++;
}

/* ---- names ------------------------------------------------------------------------------- */

static const char *const algo_names[COLL_NUM_ALGOS] = {
    [COLL_ALGO_AUTO] = "auto",
#define COLL_ALGORITHM(ID, name) [COLL_ALGO_##ID] = #name,
#include "coll/algo/list.h"
#undef COLL_ALGORITHM
};

/* The index of s in names[0, n), or -1. */
static int lookup(const char *const *names, int n, const char *s) {
  for (int i = 0; s != NULL && i < n; i++)
    if (strcasecmp(s, names[i]) == 0) return i;
  return -1;
}

const char *coll_algo_name(coll_algo algo) {
  return (unsigned)algo < COLL_NUM_ALGOS ? algo_names[algo] : "?";
}

bool coll_algo_parse(const char *s, coll_algo *out) {
  int i = lookup(algo_names, COLL_NUM_ALGOS, s);
  if (i >= 0) *out = (coll_algo)i;
  return i >= 0;
}

/* The kinds' names are the wire's (net/frame.c), which numbers them as coll_kind does
 * (coll/exec.c asserts the count): one table for the log, the errors and the names a
 * tuning file or a command gives. */
const char *coll_kind_name(coll_kind kind) {
  return (unsigned)kind < COLL_NUM_KINDS ? net_kind_name((int)kind) : "?";
}

bool coll_kind_parse(const char *s, coll_kind *out) {
  for (int k = 0; s != NULL && k < COLL_NUM_KINDS; k++)
    if (strcasecmp(s, net_kind_name(k)) == 0) {
      *out = (coll_kind)k;
      return true;
    }
  return false;
}

size_t coll_v_extent(const coll_args *a, bool send) {
  size_t end = 0;
  for (int q = 0; q < a->size; q++) {
    size_t c = coll_v_count(a, send, q), d = coll_v_displ(a, send, q);
    if (c > SIZE_MAX - d) return SIZE_MAX;
    if (c > 0) end = CORE_MAX(end, d + c);
  }
  return end;
}

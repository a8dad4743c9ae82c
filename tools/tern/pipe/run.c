/* pipe/run.c: one stage of a planned pipeline, as a process. Compute is emulated by sleeping
 * for the planned seconds over the time scale (sleep, not spin: the emulation must not need the
 * cores it emulates); activations go forward and gradients back as real messages of the planned
 * bytes over the bytes scale, through tern_send and tern_recv. docs/PIPE.md says why each
 * choice.
 *
 * Activations and gradients travel on two communicators split off the world: a communicator
 * runs its operations in issue order (src/comm/engine.c), and one stream each way is what a
 * pipeline's two directions are on a GPU's communication streams. Sends are nonblocking, so a
 * transfer overlaps the next compute as the time model assumes; receives block, because a stage
 * waits for its input. Every message begins with its iteration, micro-batch and direction, and
 * the receiver checks them: a schedule that paired the wrong messages fails, it does not time.
 */
#include "pipe.h"
#include "tern.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 4 /* send buffers in flight per direction */

typedef struct header {
  uint32_t iteration, microbatch, direction, magic;
} header;
#define PIPE_MAGIC 0x74706970u /* "pipt" */

typedef struct lane {
  tern_comm *c;
  int peer_send, peer_recv; /* -1: none (an end of the pipeline) */
  size_t send_bytes, recv_bytes;
  unsigned char *sbuf[RING], *rbuf;
  tern_request *req[RING];
  int next;
  uint32_t direction;
} lane;

typedef struct stage_ctx {
  const pipe_job *job;
  const pipe_options *o;
  int rank;
  lane fwd, bwd;
} stage_ctx;

static int failed(const stage_ctx *x, const lane *l, const char *what, tern_status st) {
  fprintf(stderr, "tern pipe: stage %d: %s: %s: %s\n", x->rank, what, tern_status_str(st),
          tern_comm_last_error(l ? l->c : NULL));
  return 1;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The emulated compute: a sleep to an absolute deadline, so that a wake-up late by load is not
 * added twice. */
static void compute(double seconds) {
  double end = now_s() + seconds;
  struct timespec t = {(time_t)end, (long)((end - (double)(time_t)end) * 1e9)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
  }
}

/* A message of planned bytes / scale, at least its header. */
static size_t scaled_bytes(double bytes, double scale) {
  double b = bytes / scale;
  return b < sizeof(header) ? sizeof(header) : (size_t)b;
}

static int lane_send(stage_ctx *x, lane *l, uint32_t it, uint32_t mb) {
  if (l->peer_send < 0) return 0;
  int k = l->next;
  l->next = (k + 1) % RING;
  if (l->req[k]) {
    tern_status st = tern_wait(l->req[k]);
    l->req[k] = NULL;
    if (st != TERN_OK) return failed(x, l, "send", st);
  }
  header h = {it, mb, l->direction, PIPE_MAGIC};
  memcpy(l->sbuf[k], &h, sizeof h);
  tern_status st = tern_isend(l->c, l->sbuf[k], l->send_bytes, TERN_U8, l->peer_send, &l->req[k]);
  return st == TERN_OK ? 0 : failed(x, l, "send", st);
}

static int lane_recv(stage_ctx *x, lane *l, uint32_t it, uint32_t mb) {
  if (l->peer_recv < 0) return 0;
  tern_status st = tern_recv(l->c, l->rbuf, l->recv_bytes, TERN_U8, l->peer_recv);
  if (st != TERN_OK) return failed(x, l, "receive", st);
  header h;
  memcpy(&h, l->rbuf, sizeof h);
  if (h.magic != PIPE_MAGIC || h.iteration != it || h.microbatch != mb ||
      h.direction != l->direction) {
    fprintf(stderr,
            "tern pipe: stage %d: from stage %d: want iteration %u micro-batch %u direction %u, "
            "got %u %u %u (magic %08x)\n",
            x->rank, l->peer_recv, it, mb, l->direction, h.iteration, h.microbatch, h.direction,
            h.magic);
    return 1;
  }
  return 0;
}

static int lane_drain(stage_ctx *x, lane *l) {
  int rc = 0;
  for (int k = 0; k < RING; k++)
    if (l->req[k]) {
      tern_status st = tern_wait(l->req[k]);
      l->req[k] = NULL;
      if (st != TERN_OK && rc == 0) rc = failed(x, l, "send", st);
    }
  return rc;
}

static int forward(stage_ctx *x, uint32_t it, uint32_t mb) {
  if (lane_recv(x, &x->fwd, it, mb)) return 1;
  compute(x->job->stage[x->rank].fwd_s / x->o->time_scale);
  return lane_send(x, &x->fwd, it, mb);
}

static int backward(stage_ctx *x, uint32_t it, uint32_t mb) {
  if (lane_recv(x, &x->bwd, it, mb)) return 1;
  compute(x->job->stage[x->rank].bwd_s / x->o->time_scale);
  return lane_send(x, &x->bwd, it, mb);
}

/* One iteration: 1F1B runs S - s - 1 warm-up forwards on stage s, then alternates, then drains
 * the backwards; GPipe is the same with every forward first. */
static int iteration(stage_ctx *x, uint32_t it) {
  int S = x->job->stages, m = x->job->microbatches;
  int warm = x->o->schedule == PIPE_GPIPE ? m : S - x->rank - 1;
  if (warm > m) warm = m;
  for (int j = 0; j < warm; j++)
    if (forward(x, it, (uint32_t)j)) return 1;
  for (int j = 0; j < m - warm; j++)
    if (forward(x, it, (uint32_t)(warm + j)) || backward(x, it, (uint32_t)j)) return 1;
  for (int j = m - warm; j < m; j++)
    if (backward(x, it, (uint32_t)j)) return 1;
  return 0;
}

static int lane_open(stage_ctx *x, lane *l, tern_comm *world, uint32_t direction) {
  int S = x->job->stages, s = x->rank;
  l->direction = direction;
  tern_status st = tern_comm_split(world, 0, s, &l->c);
  if (st != TERN_OK) return failed(x, NULL, "split", st);
  int ahead = direction == 0 ? s + 1 : s - 1, behind = direction == 0 ? s - 1 : s + 1;
  l->peer_send = ahead >= 0 && ahead < S ? ahead : -1;
  l->peer_recv = behind >= 0 && behind < S ? behind : -1;
  if (l->peer_send >= 0)
    l->send_bytes = scaled_bytes(x->job->hop[direction == 0 ? s : s - 1].bytes, x->o->bytes_scale);
  if (l->peer_recv >= 0)
    l->recv_bytes = scaled_bytes(x->job->hop[direction == 0 ? s - 1 : s].bytes, x->o->bytes_scale);
  for (int k = 0; k < RING && l->send_bytes; k++)
    if (!(l->sbuf[k] = calloc(1, l->send_bytes))) return failed(x, l, "memory", TERN_ERR_NOMEM);
  if (l->recv_bytes && !(l->rbuf = calloc(1, l->recv_bytes)))
    return failed(x, l, "memory", TERN_ERR_NOMEM);
  return 0;
}

static void lane_close(lane *l) {
  for (int k = 0; k < RING; k++)
    free(l->sbuf[k]);
  free(l->rbuf);
  tern_comm_destroy(l->c);
}

static int run(stage_ctx *x, tern_comm *world, pipe_result *r) {
  if (lane_open(x, &x->fwd, world, 0) || lane_open(x, &x->bwd, world, 1)) return 1;
  if (iteration(x, 0)) return 1; /* warm-up: connections open, pages touched */
  double prev = now_s(), sum = 0, lo = 1e300, hi = 0;
  for (int it = 1; it <= x->o->iterations; it++) {
    if (iteration(x, (uint32_t)it)) return 1;
    double t = now_s(), d = t - prev;
    prev = t;
    sum += d;
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  r->mean_s = sum / x->o->iterations;
  r->min_s = lo;
  r->max_s = hi;
  if (lane_drain(x, &x->fwd) || lane_drain(x, &x->bwd)) return 1;
  tern_status st = tern_barrier(world); /* nobody leaves while a peer still receives */
  return st == TERN_OK ? 0 : failed(x, NULL, "final barrier", st);
}

int pipe_run_stage(const pipe_job *job, const pipe_options *o, pipe_result *r) {
  tern_comm *world = NULL;
  tern_status st = tern_comm_init_env(&world);
  stage_ctx x = {job, o, -1, {0}, {0}};
  if (st != TERN_OK) return failed(&x, NULL, "join", st);
  r->rank = x.rank = tern_comm_rank(world);
  int rc = 1;
  if (tern_comm_size(world) != job->stages)
    fprintf(stderr, "tern pipe: %d ranks for job '%s' of %d stages: want one rank per stage\n",
            tern_comm_size(world), job->name, job->stages);
  else
    rc = run(&x, world, r);
  lane_close(&x.fwd);
  lane_close(&x.bwd);
  tern_comm_destroy(world);
  return rc;
}

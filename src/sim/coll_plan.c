/* coll_plan.c: one rank's schedule as the simulation runs it.
 *
 * The simulator needs, per phase, the messages (peer, direction, bytes) and the seconds of local
 * work the executor does meanwhile; offsets and buffers do not change the time. So a phase
 * becomes a run of sim_msg and one CPU figure: each message's cost (sim_platform_msg_cost),
 * reduce_cpu per byte reduced (RECV_REDUCE and REDUCE), copy_cpu per byte copied.
 * A phase equal to the one before (same messages, same work) only bumps that one's repeat
 * count: a ring's 2(n-1) phases differ only in which block they carry, so at 4096 ranks a rank's
 * plan is a few phases instead of 8190, and all ranks' plans fit in memory together.
 */
#include "sim/coll.h"

#include <stdlib.h>
#include <string.h>

void sim_plan_init(sim_plan *pl) {
  memset(pl, 0, sizeof *pl);
}

void sim_plan_free(sim_plan *pl) {
  free(pl->msgs);
  free(pl->phases);
  sim_plan_init(pl);
}

/* Makes room for one more element in *arr (len used of *cap). */
static bool grow(void **arr, size_t *cap, size_t len, size_t elem) {
  if (len < *cap) return true;
  size_t cap2 = *cap ? 2 * *cap : 16;
  void *a = cap2 > SIZE_MAX / elem ? NULL : realloc(*arr, cap2 * elem);
  if (a == NULL) return false;
  *arr = a;
  *cap = cap2;
  return true;
}

/* Whether the last phase repeats the one before it. */
static bool repeats(const sim_plan *pl) {
  if (pl->nphases < 2) return false;
  const sim_phase *a = &pl->phases[pl->nphases - 2], *b = &pl->phases[pl->nphases - 1];
  if (a->nmsgs != b->nmsgs || a->cpu != b->cpu) return false;
  for (uint32_t i = 0; i < a->nmsgs; i++) {
    const sim_msg *x = &pl->msgs[a->first + i], *y = &pl->msgs[b->first + i];
    if (x->peer != y->peer || x->send != y->send || x->bytes != y->bytes) return false;
  }
  return true;
}

/* The local work of one step, in seconds. */
static double step_cpu(const coll_step *st, double bytes, const sim_platform *p) {
  switch (st->kind) {
  case COLL_STEP_SEND:
  case COLL_STEP_RECV:
    return sim_platform_msg_cost(p, bytes);
  case COLL_STEP_RECV_REDUCE:
    return sim_platform_msg_cost(p, bytes) + p->reduce_cpu * bytes;
  case COLL_STEP_REDUCE:
    return p->reduce_cpu * bytes;
  default:
    return p->copy_cpu * bytes;
  }
}

tern_status sim_plan_build(sim_plan *pl, const coll_sched *s, size_t elem_size,
                           const sim_platform *p) {
  pl->nmsgs = pl->nphases = 0;
  bool open = false; /* a phase is being filled */
  for (size_t i = 0; i < s->len; i++) {
    const coll_step *st = &s->steps[i];
    if (!open) {
      if (!grow((void **)&pl->phases, &pl->phases_cap, pl->nphases, sizeof *pl->phases))
        return TERN_ERR_NOMEM;
      pl->phases[pl->nphases++] = (sim_phase){.first = (uint32_t)pl->nmsgs, .repeat = 1};
      open = true;
    }
    sim_phase *ph = &pl->phases[pl->nphases - 1];
    double bytes = (double)st->count * (double)elem_size;
    ph->cpu += step_cpu(st, bytes, p);
    if (st->kind <= COLL_STEP_RECV_REDUCE) {
      if (!grow((void **)&pl->msgs, &pl->msgs_cap, pl->nmsgs, sizeof *pl->msgs))
        return TERN_ERR_NOMEM;
      pl->msgs[pl->nmsgs++] = (sim_msg){.peer = st->peer,
                                        .send = st->kind == COLL_STEP_SEND,
                                        .bytes = (uint64_t)st->count * elem_size};
      ph->nmsgs++;
    }
    if (!st->last) continue;
    open = false;
    if (repeats(pl)) {
      pl->nmsgs -= ph->nmsgs;
      pl->nphases--;
      pl->phases[pl->nphases - 1].repeat++;
    }
  }
  return TERN_OK;
}

coll_args sim_coll_args(const sim_platform *p, const sim_coll_job *job, int rank) {
  return (coll_args){.kind = job->kind,
                     .rank = rank,
                     .size = sim_platform_ranks(p),
                     .root = job->root,
                     .count = job->count,
                     .inplace = job->inplace,
                     .ppn = p->ranks_per_host,
                     .inner = job->inner};
}

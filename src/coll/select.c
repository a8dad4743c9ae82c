/* select.c: the alpha-beta-gamma cost model: of a schedule (coll_sched_cost), in closed form
 * per (collective, algorithm) (coll_algo_cost), and the choice of the cheapest (coll_select).
 *
 * The model (Hockney's alpha-beta, with gamma for the reduction as in Thakur, Rabenseifner and
 * Gropp 2005, and LogP's o for messages that share a phase): a phase costs alpha if it moves
 * anything, o per message beyond the first in its busier direction, beta per byte of what it
 * sends and receives as coll_phase_bytes counts them, gamma per byte it reduces. The closed forms
 * are the critical path of the schedules coll_build writes (the busiest rank's phases; for the
 * chain pipelines, the n-2 phases it takes the first segment to reach the end). They are exact
 * where blocks divide evenly (test_select.c holds them to coll_sched_cost of the built
 * schedules) and within a block's rounding elsewhere.
 *
 * The constants come from a profile per transport (profile.c), which `tern tune` refits per
 * host (coll/tuning.h).
 * On a crowded host (more ranks than CPUs) the CPUs take every rank's work in turns:
 * coll_algo_cost adds the whole host's work (work.c) over the CPUs to part of the critical path,
 * and over shared memory the turns the ranks take when they wait for each other (turn_phases).
 */
#include "coll/algo/algo.h"

#include <math.h>

bool coll_phase_next(const coll_sched *s, size_t *i, const coll_args *place, int rank,
                     coll_phase_tally *p) {
  double ns = 0, nr = 0;
  *p = (coll_phase_tally){0};
  for (; *i < s->len; (*i)++) {
    const coll_step *st = &s->steps[*i];
    double cnt = (double)st->count;
    bool msg = st->kind <= COLL_STEP_RECV_REDUCE;
    if (msg && place && coll_host_of(place, st->peer) != coll_host_of(place, rank))
      p->crosses = true;
    switch (st->kind) {
    case COLL_STEP_SEND:
      ns++, p->sent += cnt;
      break;
    case COLL_STEP_RECV:
      nr++, p->received += cnt;
      break;
    case COLL_STEP_RECV_REDUCE:
      nr++, p->received += cnt, p->reduce_received += cnt, p->reduced += cnt;
      break;
    case COLL_STEP_REDUCE:
      p->reduced += cnt;
      break;
    default:
      break;
    }
    if (st->last) {
      (*i)++;
      p->msgs = CORE_MAX(ns, nr);
      return true;
    }
  }
  return false;
}

double coll_phase_cost(const coll_net_model *m, const coll_phase_tally *p, size_t elem_size) {
  double es = (double)elem_size;
  return coll_cost_phase_of(m, p->msgs, p->sent * es, p->received * es, p->reduce_received * es) +
         m->gamma * (p->reduced - p->reduce_received) * es;
}

double coll_sched_cost(const coll_sched *s, size_t elem_size, const coll_net_model *m) {
  double t = 0;
  coll_phase_tally p;
  for (size_t i = 0; coll_phase_next(s, &i, NULL, 0, &p);)
    t += coll_phase_cost(m, &p, elem_size);
  return t;
}

/* ---- closed forms ------------------------------------------------------------------------ */

/* x: coll_shape_of(m, kind, n, count, elem_size), which does not depend on algo: coll_select
 * makes it once for all the algorithms it prices. Broadcast and reduce add the empty message
 * that carries each rank's root to the next rank beside the first phase's (build.c): o more. */
static double critical_path(const coll_algo_desc *d, const coll_shape *x) {
  if (!d || !d->build[x->kind] || !d->path || x->n < 1) return HUGE_VAL;
  coll_args flat = {.kind = x->kind, .size = (int)x->n, .count = x->count};
  if (d->fits && !d->fits(&flat)) return HUGE_VAL;
  if (x->n == 1 || (x->count == 0 && !coll_kind_runs_empty(x->kind))) return 0;
  return d->path(x) + (x->rooted ? x->m->o : 0);
}

/* The phases of one call in which every rank waits for ranks that wait for it, so that the call
 * cannot end before each rank has had a turn on a CPU in each of them (each algorithm's turns:
 * its exchanges). Where data flows one way (most broadcasts and reduces) there are none: a sender
 * does not wait for its receivers, and back-to-back calls overlap.
 *
 * Why: on a crowded host over shared memory a message costs little, but a rank waiting for a
 * peer gives its CPU away, and in such a phase all n ranks take a turn on the CPUs, n / cpus
 * each: the time of a small crowded allreduce follows the number of such phases, not the
 * critical path (docs/perf/select.md, "Turns on a crowded host"). */
static double turn_phases(const coll_algo_desc *d, const coll_shape *x) {
  return d->turns ? d->turns(x) : 0;
}

/* The cost from the critical path (path): itself, or on a crowded host Graham's bound for list
 * scheduling on P CPUs, the whole work over P plus (1 - 1/P) of the path (see work.c: it picked
 * the faster of two algorithms in 7 of 9 measured cells, the two misses within 10%; the larger
 * of the two terms alone picked right in 6), plus the ranks' turns (turn_phases). */
static double cost_from_path(double path, coll_algo algo, const coll_shape *x) {
  const coll_net_model *m = x->m;
  if (path == HUGE_VAL || !m->crowded || m->cpus < 1 || m->msg_cpu <= 0) return path;
  coll_work w = coll_algo_work(x->kind, algo, (int)x->n, x->count, x->elem_size);
  double turns = turn_phases(coll_algo_desc_of(algo), x) * m->turn * x->n / m->cpus;
  return coll_host_time(&w, m) + (1 - 1.0 / m->cpus) * path + turns;
}

double coll_algo_cost(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size,
                      const coll_net_model *m) {
  if ((unsigned)kind >= COLL_NUM_KINDS) return HUGE_VAL;
  coll_shape x = coll_shape_of(m, kind, n, count, elem_size);
  double path = critical_path(coll_algo_desc_of(algo), &x);
  return cost_from_path(path, algo, &x);
}

/* Every algorithm with a closed form but the refinements (chosen by coll_choose), in
 * algo/list.h's order: equal costs go to the shorter critical path (on a crowded host, two
 * algorithms can have the same work), then to the earlier in that order. */
coll_algo coll_select(coll_kind kind, int n, size_t count, size_t elem_size,
                      const coll_net_model *m) {
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL, best_path = HUGE_VAL;
  if ((unsigned)kind >= COLL_NUM_KINDS) return best;
  coll_shape x = coll_shape_of(m, kind, n, count, elem_size);
  for (int a = COLL_ALGO_AUTO + 1; a < COLL_NUM_ALGOS; a++) {
    const coll_algo_desc *d = coll_algo_desc_of((coll_algo)a);
    if (!d->build[kind] || !d->path || d->refines != COLL_ALGO_AUTO) continue;
    double path = critical_path(d, &x);
    double t = cost_from_path(path, (coll_algo)a, &x);
    if (best == COLL_ALGO_AUTO || t < best_t || (t == best_t && path < best_path))
      best = (coll_algo)a, best_t = t, best_path = path;
  }
  return best;
}

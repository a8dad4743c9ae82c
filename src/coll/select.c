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
 * The constants are built-in defaults, measured on the project's reference VM (2 vCPUs, Debian
 * 12; ../shared/peers/BASELINES.md), which `tern tune` refits per host (coll/tuning.h):
 *  - shm alpha 0.34 us: Open MPI's shared-memory allreduce of 8 B at n = 2, one exchange;
 *  - shm beta 1/12.45 GB/s: one thread's memcpy, 1 GiB working set (a message is one copy);
 *  - gamma 1/8.10 GB/s: one thread's float32 sum-reduce, 1 GiB (8-12 GB/s by working set);
 *  - tcp alpha 4.55 us: Open MPI over TCP loopback, 8 B at n = 2 (about 4 us above shm);
 *  - tcp beta 1/3 GB/s: the middle of the 2-4 GB/s loopback carries (ompi-tcp's busbw is 3.88
 *    GB/s at 1 MiB, 1.82 at 16 MiB);
 *  - o = alpha / 2 on both: the measured exchange is one send and one receive per rank, so a
 *    message costs at most half of it to post and match.
 * On a crowded host (more ranks than CPUs) the CPUs take every rank's work in turns:
 * coll_algo_cost adds the whole host's work (work.c) over the CPUs to part of the critical path,
 * and over shared memory the turns the ranks take when they wait for each other (turn_phases).
 */
#include "coll/algo/algo.h"

#include <math.h>

const coll_net_model coll_model_shm = {.alpha = 0.34e-6,
                                       .beta = 1 / 12.45e9,
                                       .gamma = 1 / 8.10e9,
                                       .o = 0.17e-6,
                                       .one_host = true,
                                       .reduce_in_place = true};
/* msg_cpu 0.5 us and turn 4 us: fitted to every algorithm of broadcast, reduce, allreduce and
 * allgather at n = 4, 8 and 16 on 2 cores (see turn_phases) */
const coll_net_model coll_model_shm_crowded = {.alpha = 0.34e-6,
                                               .beta = 1 / 12.45e9,
                                               .gamma = 1 / 8.10e9,
                                               .o = 0.17e-6,
                                               .crowded = true,
                                               .handoff = 10e-6,
                                               .msg_cpu = 0.5e-6,
                                               .turn = 4e-6,
                                               .one_host = true,
                                               .reduce_in_place = true};
const coll_net_model coll_model_tcp = {
    .alpha = 4.55e-6, .beta = 1 / 3.0e9, .gamma = 1 / 8.10e9, .o = 2.275e-6};
/* msg_cpu 12.4 us: fitted to the ring and the tree of allreduce at n = 8 on 2 cores (work.c) */
const coll_net_model coll_model_tcp_crowded = {.alpha = 4.55e-6,
                                               .beta = 1 / 3.0e9,
                                               .gamma = 1 / 8.10e9,
                                               .o = 2.275e-6,
                                               .crowded = true,
                                               .msg_cpu = 12.4e-6};

coll_net_model coll_model_for(bool tcp, bool one_host, bool crowded, int cpus) {
  coll_net_model m = crowded ? (tcp ? coll_model_tcp_crowded : coll_model_shm_crowded)
                             : (tcp ? coll_model_tcp : coll_model_shm);
  if (crowded) m.cpus = cpus;
  m.one_host = m.one_host || one_host; /* TCP over loopback */
  return m;
}

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
  if (x->n == 1 || (x->count == 0 && x->kind != COLL_BARRIER)) return 0;
  return d->path(x) + (x->rooted ? x->m->o : 0);
}

/* The phases of one call in which every rank waits for ranks that wait for it, so that the call
 * cannot end before each rank has had a turn on a CPU in each of them (each algorithm's turns:
 * its exchanges). Broadcast and reduce by tree, chain or direct have none: data flows one way, a
 * sender does not wait for its receivers, and back-to-back calls overlap.
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

/* Every algorithm with a closed form, in algo/list.h's order: equal costs go to the shorter
 * critical path (on a crowded host, the chain of one segment and the tree have the same work),
 * then to the earlier in that order. */
coll_algo coll_select(coll_kind kind, int n, size_t count, size_t elem_size,
                      const coll_net_model *m) {
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL, best_path = HUGE_VAL;
  if ((unsigned)kind >= COLL_NUM_KINDS) return best;
  coll_shape x = coll_shape_of(m, kind, n, count, elem_size);
  for (int a = COLL_ALGO_AUTO + 1; a < COLL_NUM_ALGOS; a++) {
    const coll_algo_desc *d = coll_algo_desc_of((coll_algo)a);
    if (!d->build[kind] || !d->path) continue;
    double path = critical_path(d, &x);
    double t = cost_from_path(path, (coll_algo)a, &x);
    if (best == COLL_ALGO_AUTO || t < best_t || (t == best_t && path < best_path))
      best = (coll_algo)a, best_t = t, best_path = path;
  }
  return best;
}

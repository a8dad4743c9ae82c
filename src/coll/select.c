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

/* One phase: msgs messages in its busier direction, sending sent bytes and receiving received,
 * red of them reducing. */
static double phase_of(const coll_net_model *m, double msgs, double sent, double received,
                       double red) {
  return (msgs > 0 ? m->alpha + m->o * (msgs - 1) : 0) +
         m->beta * coll_phase_bytes(m, sent, received, red) + m->gamma * red;
}

/* A phase that moves bytes one way (what the busiest rank receives, or sends when red = 0). */
static double phase(const coll_net_model *m, double msgs, double bytes, double red) {
  return phase_of(m, msgs, 0, bytes, red);
}

/* A phase in which the rank sends bytes and receives as many. */
static double exchange(const coll_net_model *m, double msgs, double bytes, double red) {
  return phase_of(m, msgs, bytes, bytes, red);
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
  return phase_of(m, p->msgs, p->sent * es, p->received * es, p->reduce_received * es) +
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

/* What the forms share: n ranks, B bytes per rank's vector (or block), the power of two p
 * below n, L = log2 p, Lc = ceil(log2 n), and whether the fold is needed. */
typedef struct shape {
  const coll_net_model *m;
  double n, B, p, L, Lc;
  bool fold;
} shape;

/* Recursive halving (reducing what it receives: red = 1) or doubling among p ranks, in which
 * the busiest rank sends and receives these bytes over its L phases. */
static double halving(const shape *x, double sent, double received, double red) {
  return x->L * x->m->alpha + coll_phase_bytes(x->m, sent, received, red * received) * x->m->beta +
         received * red * x->m->gamma;
}

/* The part of an even split of B in p units: all but one unit. */
static double even_part(const shape *x) {
  return (x->p - 1) / x->p * x->B;
}

/* The chain pipeline: (nseg + n - 2) rounds of one segment. On a crowded host its stages take
 * turns on the CPUs, and what that costs depends on the transport.
 *
 * Over TCP the stages do not overlap at all (each hand-off is a socket wake-up), so the chain
 * costs what it would unpipelined, n - 1 hops of the whole vector (handoff 0), and
 * halving-doubling wins from 1 MiB. Direct was faster still at 1 MiB and the slowest at 64 MiB,
 * which this model does not capture.
 *
 * Over shared memory a stage leaves its segment in the slots and yields, so the pipeline still
 * runs, at a cost per round: the handoff, fitted to n = 4 on 2 cores, which puts the crossover
 * with halving-doubling between 16 and 32 MiB as measured (docs/perf/select.md, "The crowded
 * chain"). */
static double chain(const shape *x, size_t count, size_t es, double red) {
  if (x->m->crowded && x->m->handoff == 0) return (x->n - 1) * phase(x->m, 1, x->B, red * x->B);
  size_t seg = coll_pipeline_seg(count, (int)x->n, 0), nseg = (count + seg - 1) / seg;
  double S = (double)(seg * es);
  /* a rank in the middle passes one segment on while it receives the next */
  double round = x->n > 2 ? exchange(x->m, 1, S, red * S) : phase(x->m, 1, S, red * S);
  return ((double)nseg + x->n - 2) * (x->m->handoff + round);
}

static double allreduce(const shape *x, coll_algo algo, size_t count, size_t es) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, fold = x->fold ? phase(m, 1, B, B) + phase(m, 1, B, 0) : 0;
  size_t most = (count + (size_t)n - 1) / (size_t)n; /* the longest block */
  double blk = (double)(most * es);
  switch (algo) {
  case COLL_ALGO_RING:
    return (n - 1) * (exchange(m, 1, blk, blk) + exchange(m, 1, blk, 0));
  case COLL_ALGO_RHD:
    return fold + halving(x, even_part(x), even_part(x), 1) +
           halving(x, even_part(x), even_part(x), 0);
  case COLL_ALGO_RD:
    return fold + x->L * exchange(m, 1, B, B);
  case COLL_ALGO_TREE:
    return x->Lc * (phase(m, 1, B, B) + phase(m, 1, B, 0));
  case COLL_ALGO_DIRECT: /* plain receives into TMP, then local reductions */
    return exchange(m, n - 1, (n - 1) * B, 0) + (n - 1) * B * m->gamma;
  default:
    return HUGE_VAL;
  }
}

/* reduce_scatter and allgather: B is one rank's block, N = n B the whole. */
static double scatter_gather(const shape *x, coll_kind kind, coll_algo algo) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, N = n * B, red = kind == COLL_REDUCE_SCATTER;
  switch (algo) {
  case COLL_ALGO_RING:
    return (n - 1) * exchange(m, 1, B, red * B);
  case COLL_ALGO_DIRECT:
    return exchange(m, n - 1, (n - 1) * B, 0) + red * (n - 1) * B * m->gamma;
  case COLL_ALGO_RHD: /* the units are the ranks' blocks: all but this rank's move */
    if (red)
      return (x->fold ? phase(m, 1, N, N) + phase(m, 1, B, 0) : 0) + halving(x, N - B, N - B, 1);
    return (x->fold ? phase(m, 1, B, 0) + phase(m, 1, N, 0) : 0) + halving(x, N - B, N - B, 0);
  case COLL_ALGO_TREE:
    if (red) return x->Lc * (phase(m, 1, N, N) + m->alpha) + (n - 1) * B * m->beta;
    return x->Lc * (m->alpha + phase(m, 1, N, 0)) + (n - 1) * B * m->beta;
  case COLL_ALGO_BRUCK:
    if (red) return HUGE_VAL;
    return x->Lc * m->alpha + coll_phase_bytes(m, (n - 1) * B, (n - 1) * B, 0) * m->beta;
  default:
    return HUGE_VAL;
  }
}

/* Of the bytes a rank moves in one halving or doubling among p ranks, the share in steps whose
 * two ranks share a CPU. On a crowded host tern run deals rank r to CPU r mod cpus (and
 * comm/open.c counts on it), so the step at distance mask pairs two ranks of one CPU when mask
 * is a multiple of cpus, and that CPU makes the copies at both ends in turn, while the model's
 * phase has them in parallel. Step mask moves mask / p of the vector. At n = 4 on 2 CPUs that is
 * the larger step of each half of a rooted halving-doubling: the root's first send (half the
 * vector) and the doubling's last exchange. Why it matters: unpriced, the crowded broadcast from
 * 1 MiB went to halving-doubling, whose critical path is the shorter, while the tree (its hops
 * across CPUs, algo/tree.c) was 1.2-1.7x faster (docs/perf/select.md, "Steps on one CPU"). */
static double same_cpu_share(const shape *x) {
  const coll_net_model *m = x->m;
  if (!m->crowded || m->cpus < 2) return 0;
  double same = 0;
  for (int mask = 1; 2 * mask <= (int)x->p; mask *= 2)
    if (mask % m->cpus == 0) same += mask;
  return same / (x->p - 1);
}

/* broadcast and reduce (red = 1): the data's path, and the empty message that carries each
 * rank's root to the next rank beside the first phase's (build.c): o more. */
static double rooted_data(const shape *x, coll_algo algo, size_t count, size_t es, double red);
static double rooted(const shape *x, coll_algo algo, size_t count, size_t es, double red) {
  return rooted_data(x, algo, count, es, red) + x->m->o;
}

static double rooted_data(const shape *x, coll_algo algo, size_t count, size_t es, double red) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, fold = x->fold ? phase(m, 1, B, red * B) : 0;
  switch (algo) {
  case COLL_ALGO_RING:
    return chain(x, count, es, red);
  case COLL_ALGO_RHD: {
    /* reduce: a reduce-scatter, then a gather; broadcast: a scatter, then the doubling, in
     * which no rank is sent the units it holds, so the root sends all but its unit in each, and
     * no rank carries more (the last gets its unit in the scatter, and in the doubling sends
     * one unit fewer than it gets); a crowded host's CPU makes both ends of its share */
    double turned = 2 * same_cpu_share(x) * even_part(x) * m->beta;
    if (red)
      return fold + halving(x, even_part(x), even_part(x), 1) + halving(x, even_part(x), 0, 0) +
             turned;
    return fold + 2 * halving(x, even_part(x), 0, 0) + turned;
  }
  case COLL_ALGO_TREE:
    return x->Lc * phase(m, 1, B, red * B);
  case COLL_ALGO_DIRECT:
    return phase(m, n - 1, (n - 1) * B, 0) + red * (n - 1) * B * m->gamma;
  default:
    return HUGE_VAL;
  }
}

static double alltoall(const shape *x, coll_algo algo) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, t = 0;
  int ni = (int)n;
  switch (algo) {
  case COLL_ALGO_PAIRWISE:
    return (n - 1) * exchange(m, 1, B, 0);
  case COLL_ALGO_DIRECT:
    return exchange(m, n - 1, (n - 1) * B, 0);
  case COLL_ALGO_BRUCK:
    for (int bit = 1; bit < ni; bit *= 2)
      t += exchange(m, 1, (double)coll_bruck_slots(ni, bit) * B, 0);
    return t;
  default:
    return HUGE_VAL;
  }
}

static double barrier(const shape *x, coll_algo algo) {
  const coll_net_model *m = x->m;
  switch (algo) {
  case COLL_ALGO_RING:
    return (x->n - 1) * m->alpha;
  case COLL_ALGO_RHD:
  case COLL_ALGO_RD:
    return (x->L + 2 * x->fold) * m->alpha;
  case COLL_ALGO_BRUCK:
    return x->Lc * m->alpha;
  case COLL_ALGO_TREE:
    return 2 * x->Lc * m->alpha;
  case COLL_ALGO_DIRECT:
    return phase(m, x->n - 1, 0, 0);
  default:
    return HUGE_VAL;
  }
}

static shape shape_of(const coll_net_model *m, int n, size_t count, size_t elem_size) {
  int p = 1;
  while (2 * p <= n)
    p *= 2;
  double B = (double)count * (double)elem_size;
  return (shape){m, n, B, p, coll_log2_ceil(p), coll_log2_ceil(n), p != n};
}

/* x: shape_of(m, n, count, elem_size), which does not depend on algo: coll_select makes it once
 * for all the algorithms it prices. */
static double critical_path(coll_kind kind, coll_algo algo, const shape *x, size_t count,
                            size_t elem_size) {
  if (!coll_algo_supported(kind, algo) || x->n < 1) return HUGE_VAL;
  if (x->n == 1 || (count == 0 && kind != COLL_BARRIER)) return 0;
  switch (kind) {
  case COLL_ALLREDUCE:
    return allreduce(x, algo, count, elem_size);
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return scatter_gather(x, kind, algo);
  case COLL_BROADCAST:
    return rooted(x, algo, count, elem_size, 0);
  case COLL_REDUCE:
    return rooted(x, algo, count, elem_size, 1);
  case COLL_GATHER: /* direct: the root's n - 1 messages, as a direct broadcast's */
  case COLL_SCATTER:
    return rooted(x, algo, count, elem_size, 0);
  case COLL_ALLTOALL:
    return alltoall(x, algo);
  case COLL_BARRIER:
    return barrier(x, algo);
  default:
    return HUGE_VAL;
  }
}

/* The phases of one call in which every rank waits for ranks that wait for it, so that the call
 * cannot end before each rank has had a turn on a CPU in each of them: the exchanges of the ring
 * and of halving and doubling, direct's one phase, the tree's way up and back down when all
 * ranks need the result. Broadcast and reduce by tree, chain or direct have none: data flows one
 * way, a sender does not wait for its receivers, and back-to-back calls overlap; by halving and
 * doubling they have its exchanges.
 *
 * Why: on a crowded host over shared memory a message costs little, but a rank waiting for a
 * peer gives its CPU away, and in such a phase all n ranks take a turn on the CPUs, n / cpus
 * each: the time of a small crowded allreduce follows the number of such phases, not the
 * critical path (docs/perf/select.md, "Turns on a crowded host"). */
static double turn_phases(coll_kind kind, coll_algo algo, const shape *x) {
  double n = x->n, L = x->L, Lc = x->Lc, fold = x->fold;
  bool rooted = coll_kind_rooted(kind);
  switch (algo) {
  case COLL_ALGO_RING:
    return rooted ? 0 : kind == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
  case COLL_ALGO_PAIRWISE:
    return n - 1;
  case COLL_ALGO_RHD:
    return rooted ? L : (kind == COLL_ALLREDUCE ? 2 * L : L) + 2 * fold;
  case COLL_ALGO_RD:
    return L + 2 * fold;
  case COLL_ALGO_BRUCK:
    return Lc;
  case COLL_ALGO_TREE:
    return rooted ? 0 : 2 * Lc;
  case COLL_ALGO_DIRECT:
    return rooted ? 0 : 1;
  default:
    return 0;
  }
}

/* The cost from the critical path (path): itself, or on a crowded host Graham's bound for list
 * scheduling on P CPUs, the whole work over P plus (1 - 1/P) of the path (see work.c: it picked
 * the faster of two algorithms in 7 of 9 measured cells, the two misses within 10%; the larger
 * of the two terms alone picked right in 6), plus the ranks' turns (turn_phases). */
static double cost_from_path(double path, coll_kind kind, coll_algo algo, const shape *x,
                             size_t count, size_t elem_size) {
  const coll_net_model *m = x->m;
  if (path == HUGE_VAL || !m->crowded || m->cpus < 1 || m->msg_cpu <= 0) return path;
  coll_work w = coll_algo_work(kind, algo, (int)x->n, count, elem_size);
  double turns = turn_phases(kind, algo, x) * m->turn * x->n / m->cpus;
  return coll_host_time(&w, m) + (1 - 1.0 / m->cpus) * path + turns;
}

double coll_algo_cost(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size,
                      const coll_net_model *m) {
  shape x = shape_of(m, n, count, elem_size);
  double path = critical_path(kind, algo, &x, count, elem_size);
  return cost_from_path(path, kind, algo, &x, count, elem_size);
}

/* Ties go to the first of these: roughly, the least scratch memory first. */
static const coll_algo preference[] = {COLL_ALGO_RING,  COLL_ALGO_PAIRWISE, COLL_ALGO_RHD,
                                       COLL_ALGO_TREE,  COLL_ALGO_RD,       COLL_ALGO_BRUCK,
                                       COLL_ALGO_DIRECT};

/* Equal costs go to the shorter critical path (on a crowded host, the chain of one segment and
 * the tree have the same work), then to the order above. */
coll_algo coll_select(coll_kind kind, int n, size_t count, size_t elem_size,
                      const coll_net_model *m) {
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL, best_path = HUGE_VAL;
  shape x = shape_of(m, n, count, elem_size);
  for (size_t i = 0; i < CORE_ARRAY_LEN(preference); i++) {
    coll_algo a = preference[i];
    if (!coll_algo_supported(kind, a)) continue;
    double path = critical_path(kind, a, &x, count, elem_size);
    double t = cost_from_path(path, kind, a, &x, count, elem_size);
    if (best == COLL_ALGO_AUTO || t < best_t || (t == best_t && path < best_path))
      best = a, best_t = t, best_path = path;
  }
  return best;
}

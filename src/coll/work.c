/* work.c: what a collective costs the whole host, summed over every rank: messages sent, bytes
 * sent and bytes reduced (and of those, how many as they arrive), in closed form per
 * (collective, algorithm), as coll_build writes the schedules (test_select.c holds them to the
 * sums over the built schedules).
 *
 * Why the sum: with more ranks than CPUs, the CPUs take every rank's work in turns, so a
 * collective cannot end before all of it is done, however short its critical path: with the
 * same bytes, the algorithms' times follow their message counts (each message costs a send, a
 * receive and a wake-up on a CPU someone else wants), where the critical path picks otherwise
 * (docs/perf/select.md, "The host's work"). coll_algo_cost adds (1 - 1/CPUs) of the critical
 * path to this (Graham's bound for list scheduling): a tree's top levels leave a CPU idle, and
 * for large messages a shorter path wins again.
 *
 * Over shared memory the host's CPUs copy each byte at both ends, into the slots and out of
 * them, except what a reducing receive sums straight from the slots; direct receives whole blocks
 * and reduces them after, so it pays both copies and the sum (coll_host_time). Counted as one
 * copy a byte, the reductions of direct looked as cheap as a ring's and a crowded reduce_scatter
 * went to direct at every size, 1.4-2.2x slower than the best.
 */
#include "coll/algo/algo.h"

#include <math.h>

/* What the forms share: n ranks, B bytes (the vector; for reduce_scatter and allgather one
 * rank's block, N = n B the whole), p the power of two below n, L = log2 p, Lc = ceil(log2 n). */
typedef struct shape {
  double n, B, p, L, Lc;
} shape;

/* Every schedule reduces what it receives as it arrives, but direct's, which receives whole
 * blocks first and reduces them after (direct.c). */
static coll_work work(double msgs, double bytes, double red) {
  return (coll_work){msgs, bytes, red, red};
}

static coll_work reduced_after_receiving(coll_work w) {
  w.red_received = 0;
  return w;
}

static coll_work allreduce(const shape *x, coll_algo algo) {
  double n = x->n, B = x->B, p = x->p, L = x->L, extra = n - p; /* extra: the folded ranks */
  switch (algo) {
  case COLL_ALGO_RING:
    return work(2 * n * (n - 1), 2 * (n - 1) * B, (n - 1) * B);
  case COLL_ALGO_RHD: /* the folded ranks hand in their vector and take the result back */
    return work(2 * p * L + 2 * extra, 2 * (n - 1) * B, (n - 1) * B);
  case COLL_ALGO_RD:
    return work(p * L + 2 * extra, (p * L + 2 * extra) * B, (p * L + extra) * B);
  case COLL_ALGO_TREE: /* reduce to the root, then broadcast */
    return work(2 * (n - 1), 2 * (n - 1) * B, (n - 1) * B);
  case COLL_ALGO_DIRECT:
    return reduced_after_receiving(work(n * (n - 1), n * (n - 1) * B, n * (n - 1) * B));
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

static coll_work scatter_gather(const shape *x, coll_kind kind, coll_algo algo) {
  double n = x->n, B = x->B, N = n * B, p = x->p, L = x->L, red = kind == COLL_REDUCE_SCATTER;
  switch (algo) {
  case COLL_ALGO_RING:
    return work(n * (n - 1), n * (n - 1) * B, red * n * (n - 1) * B);
  case COLL_ALGO_DIRECT:
    return reduced_after_receiving(work(n * (n - 1), n * (n - 1) * B, red * n * (n - 1) * B));
  case COLL_ALGO_RHD: /* p ranks move all but their own share; a folded rank N one way, B back */
    return work(p * L + 2 * (n - p), (p - 1) * N + (n - p) * (N + B), red * (n - 1) * N);
  case COLL_ALGO_TREE: /* the whole N along the tree, then each subtree's blocks (about n/2
                          blocks at each of log2 n levels) */
    return work(2 * (n - 1), (n - 1) * N + n / 2 * log2(n) * B, red * (n - 1) * N);
  case COLL_ALGO_BRUCK:
    return red ? work(HUGE_VAL, HUGE_VAL, HUGE_VAL) : work(n * x->Lc, n * (n - 1) * B, 0);
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

/* broadcast and reduce (red = 1) */
static coll_work rooted(const shape *x, coll_algo algo, size_t count, double red) {
  double n = x->n, B = x->B, p = x->p, L = x->L;
  switch (algo) {
  case COLL_ALGO_RING: { /* the chain: every hop carries every segment */
    size_t seg = coll_pipeline_seg(count, (int)n, 0);
    double nseg = (double)((count + seg - 1) / seg);
    return work((n - 1) * nseg, (n - 1) * B, red * (n - 1) * B);
  }
  case COLL_ALGO_RHD: /* broadcast: scatter, allgather; reduce: reduce-scatter, gather */
    if (red) return work(p * L + p - 1 + (n - p), (p - 1 + L / 2 + n - p) * B, (n - 1) * B);
    return work(p * L + (n - p), (n - 1) * B, 0);
  case COLL_ALGO_TREE:
    return work(n - 1, (n - 1) * B, red * (n - 1) * B);
  case COLL_ALGO_DIRECT:
    return reduced_after_receiving(work(n - 1, (n - 1) * B, red * (n - 1) * B));
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

/* Each rank tells the next one its root in an empty message (build.c). */
static coll_work with_root_check(const shape *x, coll_work w) {
  w.msgs += x->n;
  return w;
}

static coll_work alltoall(const shape *x, coll_algo algo) {
  double n = x->n, B = x->B, slots = 0;
  int ni = (int)n;
  switch (algo) {
  case COLL_ALGO_PAIRWISE:
  case COLL_ALGO_DIRECT:
    return work(n * (n - 1), n * (n - 1) * B, 0);
  case COLL_ALGO_BRUCK:
    for (int bit = 1; bit < ni; bit *= 2)
      slots += coll_bruck_slots(ni, bit);
    return work(n * x->Lc, n * slots * B, 0);
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

static coll_work barrier(const shape *x, coll_algo algo) {
  double n = x->n, p = x->p, L = x->L;
  switch (algo) {
  case COLL_ALGO_RING:
  case COLL_ALGO_DIRECT:
    return work(n * (n - 1), 0, 0);
  case COLL_ALGO_RHD:
  case COLL_ALGO_RD:
    return work(p * L + 2 * (n - p), 0, 0);
  case COLL_ALGO_TREE:
    return work(2 * (n - 1), 0, 0);
  case COLL_ALGO_BRUCK:
    return work(n * x->Lc, 0, 0);
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

coll_work coll_algo_work(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size) {
  if (!coll_algo_supported(kind, algo) || n < 1) return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  if (n == 1 || (count == 0 && kind != COLL_BARRIER)) return work(0, 0, 0);
  int p = 1;
  while (2 * p <= n)
    p *= 2;
  shape x = {n, (double)count * (double)elem_size, p, coll_log2_ceil(p), coll_log2_ceil(n)};
  switch (kind) {
  case COLL_ALLREDUCE:
    return allreduce(&x, algo);
  case COLL_REDUCE_SCATTER:
  case COLL_ALLGATHER:
    return scatter_gather(&x, kind, algo);
  case COLL_BROADCAST:
    return with_root_check(&x, rooted(&x, algo, count, 0));
  case COLL_REDUCE:
    return with_root_check(&x, rooted(&x, algo, count, 1));
  case COLL_GATHER:
  case COLL_SCATTER:
    return with_root_check(&x, rooted(&x, algo, count, 0));
  case COLL_ALLTOALL:
    return alltoall(&x, algo);
  case COLL_BARRIER:
    return barrier(&x, algo);
  default:
    return work(HUGE_VAL, HUGE_VAL, HUGE_VAL);
  }
}

double coll_host_time(const coll_work *w, const coll_net_model *m) {
  if (!m->crowded || m->cpus < 1 || m->msg_cpu <= 0) return 0;
  double copies = m->reduce_in_place ? 2 * w->bytes - w->red_received : w->bytes;
  return (w->msgs * m->msg_cpu + copies * m->beta + w->red * m->gamma) / m->cpus;
}

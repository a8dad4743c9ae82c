/* work.c: what a collective costs the whole host, summed over every rank: messages sent, bytes
 * sent and bytes reduced (and of those, how many as they arrive), in closed form per
 * (collective, algorithm) in each algorithm's file (coll_algo_desc.work), as coll_build writes
 * the schedules (test_select.c holds them to the sums over the built schedules).
 *
 * Why the sum: with more ranks than CPUs, the CPUs take every rank's work in turns, so a
 * collective cannot end before all of it is done, however short its critical path: with the
 * same bytes, the algorithms' times follow their message counts (each message costs a send, a
 * receive and a wake-up on a CPU someone else wants), where the critical path picks otherwise
 * (docs/perf/select.md, "The host's work"). coll_algo_cost adds (1 - 1/CPUs) of the critical
 * path to this (Graham's bound for list scheduling): a schedule's narrow phases leave a CPU idle,
 * and for large messages a shorter path wins again.
 *
 * Over shared memory the host's CPUs copy each byte at both ends, into the slots and out of
 * them, except what a reducing receive sums straight from the slots (coll_work.red_received);
 * an algorithm that receives whole blocks and reduces them after pays both copies and the sum
 * (coll_host_time; direct.c says what counting one copy a byte did).
 */
#include "coll/algo/algo.h"

#include <math.h>

/* Each rank tells the next one its root in an empty message (build.c). */
static coll_work with_root_check(const coll_shape *x, coll_work w) {
  if (x->rooted) w.msgs += x->n;
  return w;
}

coll_work coll_algo_work(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size) {
  const coll_algo_desc *d = coll_algo_desc_of(algo);
  if (!coll_algo_supported(kind, algo) || !d->work || n < 1) return COLL_NO_WORK;
  if (n == 1 || (count == 0 && !coll_kind_runs_empty(kind))) return coll_work_of(0, 0, 0);
  coll_shape x = coll_shape_of(NULL, kind, n, count, elem_size);
  return with_root_check(&x, d->work(&x));
}

double coll_host_time(const coll_work *w, const coll_net_model *m) {
  if (!m->crowded || m->cpus < 1 || m->msg_cpu <= 0) return 0;
  double copies = m->reduce_in_place ? 2 * w->bytes - w->red_received : w->bytes;
  return (w->msgs * m->msg_cpu + copies * m->beta + w->red * m->gamma) / m->cpus;
}

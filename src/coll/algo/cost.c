/* cost.c: the vocabulary the algorithms' closed forms are written in (algo.h): the shape of a
 * call and the price of its kinds of phase under the alpha-beta-gamma model of coll_sched_cost
 * (select.c describes the model).
 */
#include "coll/algo/algo.h"

coll_shape coll_shape_of(const coll_net_model *m, coll_kind kind, int n, size_t count,
                         size_t elem_size) {
  int p = 1;
  while (2 * p <= n)
    p *= 2;
  return (coll_shape){.m = m,
                      .kind = kind,
                      .n = n,
                      .B = (double)count * (double)elem_size,
                      .p = p,
                      .L = coll_log2_ceil(p),
                      .Lc = coll_log2_ceil(n),
                      .fold = p != n,
                      .red = kind == COLL_REDUCE_SCATTER || kind == COLL_REDUCE,
                      .rooted = coll_kind_rooted(kind),
                      .count = count,
                      .elem_size = elem_size};
}

double coll_cost_phase_of(const coll_net_model *m, double msgs, double sent, double received,
                          double red) {
  return (msgs > 0 ? m->alpha + m->o * (msgs - 1) : 0) +
         m->beta * coll_phase_bytes(m, sent, received, red) + m->gamma * red;
}

double coll_cost_phase(const coll_net_model *m, double msgs, double bytes, double red) {
  return coll_cost_phase_of(m, msgs, 0, bytes, red);
}

double coll_cost_exchange(const coll_net_model *m, double msgs, double bytes, double red) {
  return coll_cost_phase_of(m, msgs, bytes, bytes, red);
}

double coll_cost_halving(const coll_shape *x, double sent, double received, double red) {
  return x->L * x->m->alpha + coll_phase_bytes(x->m, sent, received, red * received) * x->m->beta +
         received * red * x->m->gamma;
}

/* select_learned.c: the learned selector (select_learned.h): the terms of a schedule, a row's
 * prediction, and the choice of the least. The weights are in select_learned_table.c, which
 * bench/scale/train.py writes.
 */
#include "coll/select_learned.h"

#include <math.h>

void coll_learned_terms(const coll_sched *s, size_t elem_size, int ppn, int rank,
                        double f[COLL_LEARNED_TERMS]) {
  static const coll_net_model unit[4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  static const coll_net_model zero = {0, 0, 0, 0};
  coll_args place = {.ppn = ppn};
  for (int i = 0; i < COLL_LEARNED_TERMS; i++)
    f[i] = coll_sched_cost_hosts(s, elem_size, &place, rank, i < 4 ? &unit[i] : &zero,
                                 i < 4 ? &zero : &unit[i - 4]);
}

double coll_learned_cost(const coll_learned_row *row, int n, int ppn, size_t count,
                         size_t elem_size, coll_sched *scratch) {
  coll_args a = {.kind = row->kind, .size = n, .count = count, .ppn = ppn, .inner = row->inner};
  if (coll_build(scratch, &a, row->algo) != TERN_OK) return HUGE_VAL;
  double f[COLL_LEARNED_TERMS], t = 0;
  coll_learned_terms(scratch, elem_size, ppn, 0, f);
  for (int i = 0; i < COLL_LEARNED_TERMS; i++)
    t += row->w[i] * f[i];
  return t;
}

coll_algo coll_select_learned(const coll_learned_model *m, coll_kind kind, int n, int ppn,
                              size_t count, size_t elem_size, coll_sched *scratch,
                              coll_algo *inner) {
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL;
  *inner = COLL_ALGO_RING;
  for (size_t i = 0; i < m->nrows; i++) {
    const coll_learned_row *row = &m->rows[i];
    if (row->kind != kind) continue;
    double t = coll_learned_cost(row, n, ppn, count, elem_size, scratch);
    if (t < best_t) best = row->algo, best_t = t, *inner = row->inner;
  }
  return best;
}

/* select_learned.c: the learned selector (select_learned.h): the terms of a schedule, a row's
 * prediction on a site, and the choice of the least. The weights are in select_learned_table.c,
 * which bench/scale/train.py writes.
 */
#include "coll/select_learned.h"

#include <math.h>

void coll_learned_terms(const coll_sched *s, size_t elem_size, const coll_args *place, int rank,
                        double f[COLL_LEARNED_TERMS]) {
  static const coll_net_model unit[4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  static const coll_net_model zero = {0, 0, 0, 0};
  for (int i = 0; i < COLL_LEARNED_TERMS; i++)
    f[i] = coll_sched_cost_hosts(s, elem_size, place, rank, i < 4 ? &unit[i] : &zero,
                                 i < 4 ? &zero : &unit[i - 4]);
}

bool coll_learned_fits(const coll_learned_model *m, const coll_args *a) {
  return coll_host_count(a) >= 2 && coll_ranks_per_host(a) == m->rph;
}

/* One side's constants in the order of its terms: alpha, beta, gamma, o. */
static void side_prices(const coll_net_model *m, double p[4]) {
  p[0] = m->alpha, p[1] = m->beta, p[2] = m->gamma, p[3] = m->o;
}

/* The prices of a site of constants intra, inter, in the order of a row's weights: each term at
 * its own side's constant, then the terms across hosts at the slower of the two sides'
 * (select_learned.h). */
static void prices(const coll_net_model *intra, const coll_net_model *inter,
                   double p[COLL_LEARNED_WEIGHTS]) {
  side_prices(intra, p);
  side_prices(inter, p + 4);
  for (int i = 0; i < 4; i++)
    p[8 + i] = fmax(p[i], p[4 + i]);
}

double coll_learned_cost(const coll_learned_model *m, const coll_learned_row *row,
                         const coll_args *a, size_t elem_size, const coll_net_model *intra,
                         const coll_net_model *inter, coll_sched *scratch) {
  coll_args r = *a;
  r.kind = row->kind, r.inner = row->inner, r.rank = 0;
  if (coll_build(scratch, &r, row->algo) != TERN_OK) return HUGE_VAL;
  double f[COLL_LEARNED_TERMS], site[COLL_LEARNED_WEIGHTS], own[COLL_LEARNED_WEIGHTS], t = 0;
  coll_learned_terms(scratch, elem_size, &r, 0, f);
  prices(intra ? intra : &m->intra, inter ? inter : &m->inter, site);
  prices(&m->intra, &m->inter, own);
  /* each weight over its price where it was given is the fitted factor; 1 where that price is 0
   * (nothing to scale) */
  for (int i = 0; i < COLL_LEARNED_WEIGHTS; i++)
    t += row->w[i] * (own[i] > 0 ? site[i] / own[i] : 1) * f[i < 8 ? i : i - 4];
  return t;
}

coll_algo coll_select_learned(const coll_learned_model *m, const coll_args *a, size_t elem_size,
                              const coll_net_model *intra, const coll_net_model *inter,
                              coll_sched *scratch, coll_algo *inner) {
  coll_algo best = COLL_ALGO_AUTO;
  double best_t = HUGE_VAL;
  *inner = COLL_ALGO_RING;
  for (size_t i = 0; i < m->nrows; i++) {
    const coll_learned_row *row = &m->rows[i];
    if (row->kind != a->kind) continue;
    double t = coll_learned_cost(m, row, a, elem_size, intra, inter, scratch);
    if (t < best_t) best = row->algo, best_t = t, *inner = row->inner;
  }
  return best;
}

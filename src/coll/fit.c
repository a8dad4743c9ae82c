/* fit.c: the terms of a schedule's cost, and the least-squares fit of alpha, beta, gamma and o
 * to measured times (see tuning.h).
 *
 * The fit minimises the squared relative error, sum ((pred - t) / t)^2, so that an 8-byte call
 * of a microsecond and a 64 MiB call of 30 ms count alike; with pred linear in the four
 * constants that is ordinary least squares on rows scaled by 1/t. The constants must be
 * non-negative: with only four of them, every subset of them is tried free (the others held at
 * zero), solved by its normal equations, and the best solution whose constants are all
 * non-negative is kept: the exact non-negative least-squares answer, found by enumeration.
 */
#include "coll/tuning.h"

#include <math.h>
#include <string.h>

const coll_net_model *coll_fit_reference(coll_transport_kind tr) {
  return tr == COLL_TR_TCP ? &coll_model_tcp : &coll_model_shm;
}

/* The coefficients of alpha, o, beta and gamma in coll_sched_cost of s under ref. */
static coll_cost_terms terms_of(const coll_sched *s, size_t elem_size, const coll_net_model *ref) {
  coll_cost_terms t = {0, 0, 0, 0};
  double es = (double)elem_size;
  coll_phase_tally p;
  for (size_t i = 0; coll_phase_next(s, &i, NULL, 0, &p);) {
    if (p.msgs > 0) t.a += 1, t.b += p.msgs - 1;
    t.c += coll_phase_bytes(ref, p.sent, p.received, p.reduce_received) * es;
    t.d += p.reduced * es;
  }
  return t;
}

static double priced(const coll_cost_terms *t, const coll_net_model *m) {
  return m->alpha * t->a + m->o * t->b + m->beta * t->c + m->gamma * t->d;
}

tern_status coll_cost_terms_of(coll_kind kind, coll_algo algo, int n, size_t count,
                               size_t elem_size, const coll_net_model *ref, coll_sched *scratch,
                               coll_cost_terms *out) {
  double worst = -1;
  for (int r = 0; r < n; r++) {
    coll_args a = {.kind = kind, .rank = r, .size = n, .count = count};
    tern_status rc = coll_build(scratch, &a, algo);
    if (rc != TERN_OK) return rc;
    coll_cost_terms t = terms_of(scratch, elem_size, ref);
    double cost = priced(&t, ref);
    if (cost > worst) worst = cost, *out = t;
  }
  return TERN_OK;
}

/* Solves the k x k system a x = b (Gaussian elimination, partial pivoting); false if singular. */
static bool solve(double a[4][4], double b[4], int k, double x[4]) {
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(a[r][c]) > fabs(a[p][c])) p = r;
    if (fabs(a[p][c]) < 1e-300) return false;
    for (int j = 0; j < k; j++) {
      double tmp = a[c][j];
      a[c][j] = a[p][j], a[p][j] = tmp;
    }
    double tb = b[c];
    b[c] = b[p], b[p] = tb;
    for (int r = c + 1; r < k; r++) {
      double f = a[r][c] / a[c][c];
      for (int j = c; j < k; j++)
        a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    double s = b[c];
    for (int j = c + 1; j < k; j++)
      s -= a[c][j] * x[j];
    x[c] = s / a[c][c];
  }
  return true;
}

static double feature(const coll_cost_terms *t, int j) {
  return j == 0 ? t->a : j == 1 ? t->b : j == 2 ? t->c : t->d;
}

coll_net_model coll_fit_model(const coll_cost_terms *terms, const double *secs, size_t n) {
  double best_err = HUGE_VAL, best[4] = {0, 0, 0, 0};
  for (int subset = 1; subset < 16; subset++) {
    int idx[4], k = 0;
    for (int j = 0; j < 4; j++)
      if (subset & (1 << j)) idx[k++] = j;
    double ata[4][4] = {{0}}, atb[4] = {0}, x[4] = {0};
    for (size_t i = 0; i < n; i++) {
      if (!(secs[i] > 0)) continue;
      for (int p = 0; p < k; p++) {
        double fp = feature(&terms[i], idx[p]) / secs[i];
        atb[p] += fp;
        for (int q = 0; q < k; q++)
          ata[p][q] += fp * feature(&terms[i], idx[q]) / secs[i];
      }
    }
    if (!solve(ata, atb, k, x)) continue;
    double full[4] = {0, 0, 0, 0};
    bool ok = true;
    for (int p = 0; p < k; p++) {
      ok = ok && x[p] >= 0;
      full[idx[p]] = x[p];
    }
    if (!ok) continue;
    double e = 0;
    for (size_t i = 0; i < n; i++) {
      if (!(secs[i] > 0)) continue;
      double pred = 0;
      for (int j = 0; j < 4; j++)
        pred += full[j] * feature(&terms[i], j);
      e += (pred - secs[i]) * (pred - secs[i]) / (secs[i] * secs[i]);
    }
    if (e < best_err) best_err = e, memcpy(best, full, sizeof best);
  }
  return (coll_net_model){.alpha = best[0], .o = best[1], .beta = best[2], .gamma = best[3]};
}

/* clip.c: the checks and the robust aggregation a reducer applies to the parts it receives.
 *
 * Every value that comes from another peer must be finite: one NaN or Inf in a part would
 * spread to the whole group in one round and to the swarm in d rounds (butterfly.c drops such a
 * contribution and names its sender).
 *
 * CenteredClip (Karimireddy, He and Jaggi, "Learning from History for Byzantine Robust
 * Optimization", ICML 2021; the aggregation of BTARD-SGD, Gorbunov et al., NeurIPS 2022): the
 * centre v is moved towards each contribution x_i by at most tau,
 *
 *     v <- v + (1/m) sum_i (x_i - v) min(1, tau / |x_i - v|)      (|.| the L2 norm of the part)
 *
 * until it stops moving. At its fixed point one contribution pulls with a force of at most tau
 * against the others' m - 1, so when the honest members lie within tau of the centre a single
 * member, whatever it sends, moves the part by at most tau / (m - 1) from the honest members'
 * mean. Members count once each (weights are not used): a weight is a claim, and a claimed
 * weight of 1000 would otherwise buy 1000 times the pull. The iteration starts at the
 * coordinate-wise median, which no single member of three or more can move far, so that few
 * steps are needed; with two members nothing is robust (the median is the mean).
 */
#include "swarm/swarm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CLIP_MAX_STEPS 100
#define CLIP_SETTLED 1e-6 /* a step shorter than this fraction of tau ends the iteration */

bool swarm_values_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return false;
  return true;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void median_start(const float *const *x, int m, size_t len, double *v) {
  float col[SWARM_MAX_GROUP];
  for (size_t k = 0; k < len; k++) {
    for (int i = 0; i < m; i++)
      col[i] = x[i][k];
    qsort(col, (size_t)m, sizeof col[0], cmp_float);
    v[k] = m % 2 ? col[m / 2] : 0.5 * ((double)col[m / 2 - 1] + col[m / 2]);
  }
}

tern_status swarm_centered_clip(const float *const *x, int m, size_t len, double tau, float *out) {
  if (m < 1 || m > SWARM_MAX_GROUP || !(tau > 0)) return TERN_ERR_INVALID_ARG;
  double *v = malloc(CORE_MAX(len, 1) * sizeof *v), *step = malloc(CORE_MAX(len, 1) * sizeof *step);
  if (!v || !step) {
    free(v);
    free(step);
    return TERN_ERR_NOMEM;
  }
  median_start(x, m, len, v);
  for (int it = 0; it < CLIP_MAX_STEPS; it++) {
    memset(step, 0, len * sizeof *step);
    for (int i = 0; i < m; i++) {
      double d2 = 0;
      for (size_t k = 0; k < len; k++)
        d2 += ((double)x[i][k] - v[k]) * ((double)x[i][k] - v[k]);
      double d = sqrt(d2), scale = d > tau ? tau / d : 1.0;
      for (size_t k = 0; k < len; k++)
        step[k] += scale * ((double)x[i][k] - v[k]) / m;
    }
    double s2 = 0;
    for (size_t k = 0; k < len; k++) {
      v[k] += step[k];
      s2 += step[k] * step[k];
    }
    if (sqrt(s2) <= CLIP_SETTLED * tau) break;
  }
  for (size_t k = 0; k < len; k++)
    out[k] = (float)v[k];
  free(v);
  free(step);
  return TERN_OK;
}

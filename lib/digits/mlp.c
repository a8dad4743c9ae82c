/* mlp.c: the two-layer perceptron of mlp.h: forward, backpropagation, the SGD step.
 *
 * Backpropagation for one sample, with p = softmax(z) and y the one-hot label:
 *   dL/dz = p - y;  dW2 += dz h^T;  db2 += dz;
 *   dh = W2^T dz, zeroed where ReLU was off;  dW1 += dh x^T;  db1 += dh.
 * Gradients are summed over the samples of a step and scaled once by the step; the sum is what
 * the ranks all-reduce (see train.c for why a sum and not a mean).
 */
#include "mlp.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Offsets of the four blocks in w and in a gradient. */
static size_t off_b1(const mlp *m) {
  return (size_t)m->hidden * (size_t)m->in;
}
static size_t off_w2(const mlp *m) {
  return off_b1(m) + (size_t)m->hidden;
}
static size_t off_b2(const mlp *m) {
  return off_w2(m) + (size_t)m->out * (size_t)m->hidden;
}

int mlp_init(mlp *m, int in, int hidden, int out) {
  memset(m, 0, sizeof *m);
  if (in < 1 || hidden < 1 || out < 2 || in > 1 << 16 || hidden > 1 << 16 || out > 1 << 16)
    return -1;
  m->in = in, m->hidden = hidden, m->out = out;
  m->nparams = off_b2(m) + (size_t)out;
  m->w = calloc(m->nparams, sizeof *m->w);
  m->vel = calloc(m->nparams, sizeof *m->vel);
  m->h = calloc((size_t)hidden, sizeof *m->h);
  m->z = calloc((size_t)out, sizeof *m->z);
  if (m->w && m->vel && m->h && m->z) return 0;
  mlp_free(m);
  return -1;
}

void mlp_free(mlp *m) {
  free(m->w);
  free(m->vel);
  free(m->h);
  free(m->z);
  memset(m, 0, sizeof *m);
}

static void fill_uniform(float *w, size_t n, int fan_in, uint64_t *rng) {
  float a = sqrtf(6.0f / (float)fan_in); /* uniform on [-a, a] has variance a^2 / 3 = 2 / fan_in */
  for (size_t i = 0; i < n; i++)
    w[i] = (2.0f * rng_uniform(rng) - 1.0f) * a;
}

void mlp_randomize(mlp *m, uint64_t seed) {
  memset(m->w, 0, m->nparams * sizeof *m->w);
  memset(m->vel, 0, m->nparams * sizeof *m->vel);
  fill_uniform(m->w, off_b1(m), m->in, &seed);
  fill_uniform(m->w + off_w2(m), (size_t)m->out * (size_t)m->hidden, m->hidden, &seed);
}

/* y = W x + b for W of rows x cols. */
static void affine(const float *w, const float *b, const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = w + (size_t)r * (size_t)cols;
    float s = b[r];
    for (int c = 0; c < cols; c++)
      s += row[c] * x[c];
    y[r] = s;
  }
}

int mlp_forward(mlp *m, const float *x, int label, float *loss) {
  affine(m->w, m->w + off_b1(m), x, m->h, m->hidden, m->in);
  for (int j = 0; j < m->hidden; j++)
    m->h[j] = m->h[j] > 0 ? m->h[j] : 0;
  affine(m->w + off_w2(m), m->w + off_b2(m), m->h, m->z, m->out, m->hidden);
  int best = 0;
  for (int k = 1; k < m->out; k++)
    if (m->z[k] > m->z[best]) best = k;
  /* Softmax shifted by the largest logit, so that exp never overflows. */
  float zmax = m->z[best], sum = 0;
  for (int k = 0; k < m->out; k++)
    sum += (m->z[k] = expf(m->z[k] - zmax));
  for (int k = 0; k < m->out; k++)
    m->z[k] /= sum;
  if (loss) *loss = -logf(m->z[label] > 1e-30f ? m->z[label] : 1e-30f);
  return best;
}

float mlp_backprop(mlp *m, const float *x, int label, float *g, int *correct) {
  float loss;
  *correct = mlp_forward(m, x, label, &loss) == label;
  float *dz = m->z; /* p - y, in place */
  dz[label] -= 1.0f;
  const float *w2 = m->w + off_w2(m);
  float *gw1 = g, *gb1 = g + off_b1(m), *gw2 = g + off_w2(m), *gb2 = g + off_b2(m);
  for (int k = 0; k < m->out; k++) {
    float *row = gw2 + (size_t)k * (size_t)m->hidden;
    for (int j = 0; j < m->hidden; j++)
      row[j] += dz[k] * m->h[j];
    gb2[k] += dz[k];
  }
  for (int j = 0; j < m->hidden; j++) {
    if (m->h[j] <= 0) continue; /* ReLU was off: no gradient flows back */
    float dh = 0;
    for (int k = 0; k < m->out; k++)
      dh += w2[(size_t)k * (size_t)m->hidden + (size_t)j] * dz[k];
    float *row = gw1 + (size_t)j * (size_t)m->in;
    for (int i = 0; i < m->in; i++)
      row[i] += dh * x[i];
    gb1[j] += dh;
  }
  return loss;
}

void mlp_step(mlp *m, const float *g, float scale, float lr, float momentum) {
  for (size_t i = 0; i < m->nparams; i++) {
    m->vel[i] = momentum * m->vel[i] + scale * g[i];
    m->w[i] -= lr * m->vel[i];
  }
}

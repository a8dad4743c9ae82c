/* test_mlp.c: the trainer's model (lib/digits/mlp.c).
 *
 * Backpropagation is held to central finite differences of the loss, in double around float
 * weights, for every parameter of a small model on several samples; the SGD step is held to its
 * formula; the same seed gives the same weights; and the model learns a separable toy problem
 * (its loss falls and it classifies every point).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "digits/mlp.h"
#include "digits/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IN 5
#define HIDDEN 7
#define OUT 4

static float loss_at(mlp *m, const float *x, int label) {
  float loss;
  mlp_forward(m, x, label, &loss);
  return loss;
}

static void gradients_match_finite_differences(void **state) {
  (void)state;
  mlp m;
  assert_int_equal(mlp_init(&m, IN, HIDDEN, OUT), 0);
  mlp_randomize(&m, 3);
  for (size_t i = 0; i < m.nparams; i++) /* biases too, so that their gradients are exercised */
    m.w[i] += 0.05f * (float)((int)(i % 7) - 3);
  uint64_t rng = 11;
  float *g = calloc(m.nparams, sizeof *g);
  assert_non_null(g);
  for (int sample = 0; sample < 4; sample++) {
    float x[IN];
    for (int i = 0; i < IN; i++)
      x[i] = rng_uniform(&rng) * 2 - 1;
    int label = sample % OUT, hit;
    memset(g, 0, m.nparams * sizeof *g);
    mlp_backprop(&m, x, label, g, &hit);
    for (size_t i = 0; i < m.nparams; i++) {
      const float eps = 1e-2f, w = m.w[i];
      m.w[i] = w + eps;
      double up = loss_at(&m, x, label);
      m.w[i] = w - eps;
      double down = loss_at(&m, x, label);
      m.w[i] = w;
      double fd = (up - down) / (2.0 * eps);
      if (fabs(fd - g[i]) > 2e-3 + 2e-2 * fabs(fd))
        fail_msg("sample %d parameter %zu: backprop %g, finite difference %g", sample, i, g[i], fd);
    }
  }
  free(g);
  mlp_free(&m);
}

static void step_follows_the_formula(void **state) {
  (void)state;
  mlp m;
  assert_int_equal(mlp_init(&m, 2, 2, 2), 0);
  float g[12];
  for (size_t i = 0; i < m.nparams; i++)
    m.w[i] = 1, m.vel[i] = 0.5f, g[i] = (float)i;
  mlp_step(&m, g, 0.5f, 0.1f, 0.9f);
  for (size_t i = 0; i < m.nparams; i++) {
    float vel = 0.9f * 0.5f + 0.5f * (float)i;
    assert_true(m.vel[i] == vel);
    assert_true(m.w[i] == 1 - 0.1f * vel);
  }
  mlp_free(&m);
}

static void same_seed_same_weights(void **state) {
  (void)state;
  mlp a, b;
  assert_int_equal(mlp_init(&a, IN, HIDDEN, OUT), 0);
  assert_int_equal(mlp_init(&b, IN, HIDDEN, OUT), 0);
  mlp_randomize(&a, 5);
  mlp_randomize(&b, 5);
  assert_memory_equal(a.w, b.w, a.nparams * sizeof *a.w);
  mlp_randomize(&b, 6);
  assert_memory_not_equal(a.w, b.w, a.nparams * sizeof *a.w);
  mlp_free(&b);
  assert_int_equal(mlp_init(&b, 0, 1, 2), -1); /* a bad shape is refused */
  mlp_free(&a);
}

/* Four clusters in the plane, one per class: a model that learns reaches them all. */
static void learns_a_toy_problem(void **state) {
  (void)state;
  static const float centre[OUT][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
  mlp m;
  assert_int_equal(mlp_init(&m, 2, 16, OUT), 0);
  mlp_randomize(&m, 1);
  float *g = calloc(m.nparams, sizeof *g);
  uint64_t rng = 2;
  float first = 0, last = 0;
  for (int epoch = 0; epoch < 200; epoch++) {
    memset(g, 0, m.nparams * sizeof *g);
    float loss = 0;
    for (int s = 0; s < 32; s++) {
      int label = s % OUT, hit;
      float x[2] = {centre[label][0] + 0.3f * (rng_uniform(&rng) - 0.5f),
                    centre[label][1] + 0.3f * (rng_uniform(&rng) - 0.5f)};
      loss += mlp_backprop(&m, x, label, g, &hit);
    }
    mlp_step(&m, g, 1.0f / 32, 0.1f, 0.9f);
    if (epoch == 0) first = loss / 32;
    last = loss / 32;
  }
  assert_true(last < first / 10);
  for (int k = 0; k < OUT; k++)
    assert_int_equal(mlp_forward(&m, centre[k], k, NULL), k);
  free(g);
  mlp_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gradients_match_finite_differences),
      cmocka_unit_test(step_follows_the_formula),
      cmocka_unit_test(same_seed_same_weights),
      cmocka_unit_test(learns_a_toy_problem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

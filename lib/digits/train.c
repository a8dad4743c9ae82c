/* train.c: the data-parallel training loop of train.h.
 *
 * Why SUM and not AVG: the shards of a step are uneven whenever the batch does not divide by the
 * number of ranks, and the last batch of an epoch is short (1437 training images in batches of
 * 64 leave 29, which 4 ranks split 8, 7, 7, 7). Averaging per-rank means would weigh the
 * samples of a small shard more. So each rank sums its per-sample gradients, and the step's
 * buffer carries three more floats (its loss, its hits, its sample count): one SUM all-reduce
 * yields the global sum and the global count, and the update divides by the count. That is the
 * exact gradient of the global batch, whatever the split, and the same computation on every
 * rank from the same bits, so the weights stay bit-identical without being sent again.
 */
#include "train.h"
#include "digits.h"
#include "mlp.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { EXTRA_LOSS, EXTRA_HITS, EXTRA_COUNT, EXTRAS }; /* after the gradient in a step's buffer */

typedef struct run {
  tern_comm *c;
  const train_config *cfg;
  int rank, n;
  digits d;
  int *idx;  /* the split: training images first */
  int *perm; /* this epoch's order of the training images */
  size_t ntrain, ntest;
  mlp m;
  float *g; /* m.nparams + EXTRAS */
  train_progress p;
  double t0;
  int steps;
  char *err;
  size_t errlen;
} run;

const char *train_find_data(void) {
  static const char *const paths[] = {TRAIN_DATA_INSTALLED, TRAIN_DATA_SOURCE};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
    if (access(paths[i], R_OK) == 0) return paths[i];
  return NULL;
}

void train_config_default(train_config *cfg) {
  *cfg = (train_config){.data = train_find_data(),
                        .hidden = 64,
                        .epochs = 20,
                        .batch = 64,
                        .lr = 0.1f,
                        .momentum = 0.9f,
                        .test_fraction = 0.2,
                        .seed = 42};
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int failed(run *r, const char *what, tern_status rc) {
  snprintf(r->err, r->errlen, "%s: %s (%s)", what, tern_status_str(rc), tern_comm_last_error(r->c));
  return -1;
}

static int check_config(const train_config *cfg, char *err, size_t errlen) {
  const char *bad = NULL;
  if (cfg->data == NULL)
    bad = "no data set (digits.csv is neither installed nor in the source tree)";
  else if (cfg->hidden < 1 || cfg->hidden > 4096)
    bad = "hidden units outside 1..4096";
  else if (cfg->epochs < 1 || cfg->epochs > 100000)
    bad = "epochs outside 1..100000";
  else if (cfg->batch < 1 || cfg->batch > 1 << 20)
    bad = "batch outside 1..2^20";
  else if (!(cfg->lr > 0) || !(cfg->momentum >= 0 && cfg->momentum < 1))
    bad = "lr must be > 0 and momentum in [0, 1)";
  else if (!(cfg->test_fraction > 0 && cfg->test_fraction < 1))
    bad = "test fraction outside (0, 1)";
  if (bad) snprintf(err, errlen, "training configuration: %s", bad);
  return bad ? -1 : 0;
}

static int setup(run *r) {
  if (digits_load(&r->d, r->cfg->data, r->err, r->errlen) != 0) return -1;
  r->idx = malloc(r->d.n * sizeof *r->idx);
  r->perm = malloc(r->d.n * sizeof *r->perm);
  if (r->idx == NULL || r->perm == NULL ||
      mlp_init(&r->m, DIGITS_PIXELS, r->cfg->hidden, DIGITS_CLASSES) != 0) {
    snprintf(r->err, r->errlen, "no memory for the model and the data set");
    return -1;
  }
  if (digits_split(&r->d, r->cfg->test_fraction, r->cfg->seed, r->idx, &r->ntrain) != 0) {
    snprintf(r->err, r->errlen, "%s: %zu images are too few to hold some out", r->cfg->data,
             r->d.n);
    return -1;
  }
  r->ntest = r->d.n - r->ntrain;
  r->g = malloc((r->m.nparams + EXTRAS) * sizeof *r->g);
  if (r->g == NULL) {
    snprintf(r->err, r->errlen, "no memory for the gradient");
    return -1;
  }
  /* Rank 0's weights for everyone, as DDP does: the ranks need not agree on how to draw them. */
  if (r->rank == 0) mlp_randomize(&r->m, r->cfg->seed + 1);
  tern_status rc = tern_broadcast(r->c, r->m.w, r->m.w, r->m.nparams, TERN_F32, 0);
  return rc == TERN_OK ? 0 : failed(r, "broadcasting the initial weights", rc);
}

/* One step over positions [begin, end) of this epoch's order; this rank takes every n-th. */
static int step(run *r, size_t begin, size_t end, double sums[EXTRAS]) {
  size_t np = r->m.nparams;
  float *g = r->g;
  memset(g, 0, (np + EXTRAS) * sizeof *g);
  for (size_t pos = begin + (size_t)r->rank; pos < end; pos += (size_t)r->n) {
    int i = r->perm[pos], hit;
    g[np + EXTRA_LOSS] +=
        mlp_backprop(&r->m, r->d.x + (size_t)i * DIGITS_PIXELS, r->d.label[i], g, &hit);
    g[np + EXTRA_HITS] += (float)hit;
    g[np + EXTRA_COUNT] += 1;
  }
  tern_status rc = tern_allreduce(r->c, g, g, np + EXTRAS, TERN_F32, TERN_SUM);
  if (rc != TERN_OK) return failed(r, "all-reducing the gradients", rc);
  r->steps++;
  mlp_step(&r->m, g, 1.0f / g[np + EXTRA_COUNT], r->cfg->lr, r->cfg->momentum);
  for (int k = 0; k < EXTRAS; k++)
    sums[k] += g[np + (size_t)k];
  return 0;
}

/* Scores the held-out images, each rank its share, and sums the scores. */
static int evaluate(run *r) {
  float s[EXTRAS] = {0};
  for (size_t pos = r->ntrain + (size_t)r->rank; pos < r->d.n; pos += (size_t)r->n) {
    int i = r->idx[pos];
    float loss;
    s[EXTRA_HITS] += (float)(mlp_forward(&r->m, r->d.x + (size_t)i * DIGITS_PIXELS, r->d.label[i],
                                         &loss) == r->d.label[i]);
    s[EXTRA_LOSS] += loss;
    s[EXTRA_COUNT] += 1;
  }
  tern_status rc = tern_allreduce(r->c, s, s, EXTRAS, TERN_F32, TERN_SUM);
  if (rc != TERN_OK) return failed(r, "summing the held-out scores", rc);
  r->p.test_loss = s[EXTRA_LOSS] / s[EXTRA_COUNT];
  r->p.test_acc = s[EXTRA_HITS] / s[EXTRA_COUNT];
  return 0;
}

static void report(run *r) {
  r->p.seconds = now_s() - r->t0;
  if (r->cfg->progress) r->cfg->progress(r->cfg->arg, r->c, &r->p);
}

static int epoch(run *r, int e) {
  size_t batch = (size_t)r->cfg->batch;
  uint64_t seed = r->cfg->seed + 2 + (uint64_t)e;
  memcpy(r->perm, r->idx, r->ntrain * sizeof *r->perm);
  rng_shuffle(&seed, r->perm, r->ntrain);
  double sums[EXTRAS] = {0};
  r->p.epoch = e + 1;
  r->p.steps = (int)((r->ntrain + batch - 1) / batch);
  r->p.epoch_end = false;
  for (int s = 0; s < r->p.steps; s++) {
    size_t begin = (size_t)s * batch, end = begin + batch < r->ntrain ? begin + batch : r->ntrain;
    if (step(r, begin, end, sums) != 0) return -1;
    r->p.step = s + 1;
    r->p.samples += end - begin;
    r->p.loss = sums[EXTRA_LOSS] / sums[EXTRA_COUNT];
    r->p.train_acc = sums[EXTRA_HITS] / sums[EXTRA_COUNT];
    report(r);
  }
  if (evaluate(r) != 0) return -1;
  r->p.epoch_end = true;
  report(r);
  return 0;
}

static uint64_t fnv1a(const void *p, size_t len) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

int train_same_everywhere(tern_comm *c, const float *w, size_t n, bool *same, char *err,
                          size_t errlen) {
  run r = {.c = c, .err = err, .errlen = errlen};
  int rc = -1;
  float *root = malloc((n ? n : 1) * sizeof *root);
  if (root == NULL) {
    snprintf(err, errlen, "no memory to compare %zu weights", n);
    return -1;
  }
  tern_status st = tern_broadcast(c, w, root, n, TERN_F32, 0);
  if (st != TERN_OK) {
    failed(&r, "broadcasting rank 0's weights for the comparison", st);
    goto fail;
  }
  int32_t differs = memcmp(root, w, n * sizeof *w) != 0;
  if ((st = tern_allreduce(c, &differs, &differs, 1, TERN_I32, TERN_MAX)) != TERN_OK) {
    failed(&r, "gathering the comparison's verdict", st);
    goto fail;
  }
  *same = differs == 0;
  rc = 0;
fail:
  free(root);
  return rc;
}

static void finish(run *r, train_result *res) {
  res->last = r->p;
  res->ntrain = r->ntrain;
  res->ntest = r->ntest;
  res->nparams = r->m.nparams;
  res->steps = r->steps;
  res->weights_hash = fnv1a(r->m.w, r->m.nparams * sizeof *r->m.w);
}

int train_run(tern_comm *c, const train_config *cfg, train_result *res, char *err, size_t errlen) {
  run r = {.c = c,
           .cfg = cfg,
           .rank = tern_comm_rank(c),
           .n = tern_comm_size(c),
           .err = err,
           .errlen = errlen};
  int rc = -1;
  memset(res, 0, sizeof *res);
  r.p = (train_progress){.epochs = cfg->epochs, .test_loss = -1, .test_acc = -1};
  if (check_config(cfg, err, errlen) != 0) return -1;
  r.t0 = now_s();
  if (setup(&r) != 0) goto fail;
  for (int e = 0; e < cfg->epochs; e++)
    if (epoch(&r, e) != 0) goto fail;
  if (train_same_everywhere(c, r.m.w, r.m.nparams, &res->identical, err, errlen) != 0) goto fail;
  finish(&r, res);
  rc = 0;
fail:
  digits_free(&r.d);
  mlp_free(&r.m);
  free(r.idx);
  free(r.perm);
  free(r.g);
  return rc;
}

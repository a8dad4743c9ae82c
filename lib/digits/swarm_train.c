/* swarm_train.c: the swarm training loop of swarm_train.h.
 *
 * Local SGD between averages: a peer's steps use only its shard, so peers drift apart, and the
 * average pulls them back together (Moshpit SGD's Algorithm 1, with plain SGD with momentum as
 * the local optimiser). The momentum buffer stays local, as in the paper; only the weights are
 * averaged. Each peer enters every average with weight 1: the peers hold equal shares of the
 * data, so no peer's model should count more than another's.
 */
#include "swarm_train.h"
#include "digits.h"
#include "mlp.h"
#include "rng.h"
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct peer {
  const swarm_train_config *cfg;
  tern_swarm *sw;
  digits d;
  int *idx; /* the split: training images first */
  size_t ntrain;
  int *mine; /* this peer's shard of the training images */
  size_t nmine;
  mlp m;
  float *g;
  uint64_t rng;
  char *err;
  size_t errlen;
} peer;

void swarm_train_config_default(swarm_train_config *cfg) {
  *cfg = (swarm_train_config){.data = train_find_data(),
                              .hidden = 64,
                              .rounds = 30,
                              .steps_per_round = 10,
                              .batch = 16,
                              .lr = 0.1f,
                              .momentum = 0.9f,
                              .test_fraction = 0.2,
                              .seed = 42,
                              .shard = 0,
                              .shards = 1};
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int check_config(const swarm_train_config *cfg, char *err, size_t errlen) {
  const char *bad = NULL;
  if (cfg->data == NULL)
    bad = "no data set (digits.csv is neither installed nor in the source tree)";
  else if (cfg->hidden < 1 || cfg->hidden > 4096)
    bad = "hidden units outside 1..4096";
  else if (cfg->rounds < 1 || cfg->steps_per_round < 1 || cfg->batch < 1)
    bad = "rounds, steps per round and batch must be at least 1";
  else if (cfg->shards < 1 || cfg->shard < 0 || cfg->shard >= cfg->shards)
    bad = "the shard must be in 0..shards-1";
  else if (!(cfg->lr > 0) || !(cfg->momentum >= 0 && cfg->momentum < 1))
    bad = "lr must be > 0 and momentum in [0, 1)";
  else if (!(cfg->test_fraction > 0 && cfg->test_fraction < 1))
    bad = "test fraction outside (0, 1)";
  if (bad) snprintf(err, errlen, "swarm training configuration: %s", bad);
  return bad ? -1 : 0;
}

static int setup(peer *p) {
  const swarm_train_config *cfg = p->cfg;
  if (digits_load(&p->d, cfg->data, p->err, p->errlen) != 0) return -1;
  p->idx = malloc(p->d.n * sizeof *p->idx);
  p->mine = malloc(p->d.n * sizeof *p->mine);
  if (p->idx == NULL || p->mine == NULL ||
      mlp_init(&p->m, DIGITS_PIXELS, cfg->hidden, DIGITS_CLASSES) != 0 ||
      (p->g = malloc(p->m.nparams * sizeof *p->g)) == NULL) {
    snprintf(p->err, p->errlen, "no memory for the model and the data set");
    return -1;
  }
  if (digits_split(&p->d, cfg->test_fraction, cfg->seed, p->idx, &p->ntrain) != 0) {
    snprintf(p->err, p->errlen, "%s: %zu images are too few to hold some out", cfg->data,
             p->d.n);
    return -1;
  }
  for (size_t i = (size_t)cfg->shard; i < p->ntrain; i += (size_t)cfg->shards)
    p->mine[p->nmine++] = p->idx[i];
  if (p->nmine == 0) {
    snprintf(p->err, p->errlen, "shard %d of %d holds no training image", cfg->shard, cfg->shards);
    return -1;
  }
  p->rng = cfg->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(cfg->shard + 1));
  if (!cfg->join_running) {
    mlp_randomize(&p->m, cfg->seed + 1); /* the same draw on every peer: no one need send it */
    return 0;
  }
  tern_status rc = tern_swarm_download_state(p->sw, p->m.w, p->m.nparams, 30);
  if (rc != TERN_OK) {
    snprintf(p->err, p->errlen, "downloading the weights from a live peer: %s (%s)",
             tern_status_str(rc), tern_swarm_last_error(p->sw));
    return -1;
  }
  return 0;
}

/* One local SGD step on a batch drawn from this peer's shard; returns the batch's mean loss. */
static double local_step(peer *p) {
  int batch = p->cfg->batch, hit;
  double loss = 0;
  memset(p->g, 0, p->m.nparams * sizeof *p->g);
  for (int b = 0; b < batch; b++) {
    int i = p->mine[rng_below(&p->rng, p->nmine)];
    loss += mlp_backprop(&p->m, p->d.x + (size_t)i * DIGITS_PIXELS, p->d.label[i], p->g, &hit);
  }
  mlp_step(&p->m, p->g, 1.0f / (float)batch, p->cfg->lr, p->cfg->momentum);
  return loss / batch;
}

/* Held-out accuracy of this peer's weights, on the whole held-out set. */
static double test_accuracy(peer *p) {
  size_t hits = 0;
  for (size_t pos = p->ntrain; pos < p->d.n; pos++) {
    int i = p->idx[pos];
    hits += mlp_forward(&p->m, p->d.x + (size_t)i * DIGITS_PIXELS, p->d.label[i], NULL) ==
            p->d.label[i];
  }
  return (double)hits / (double)(p->d.n - p->ntrain);
}

static int rounds(peer *p, swarm_train_progress *sp) {
  const swarm_train_config *cfg = p->cfg;
  double t0 = now_s();
  for (int r = 0; r < cfg->rounds; r++) {
    double loss = 0;
    for (int s = 0; s < cfg->steps_per_round; s++)
      loss += local_step(p);
    double weight = 1;
    tern_status rc = tern_swarm_average(p->sw, p->m.w, p->m.nparams, &weight, &cfg->avg, &sp->avg);
    if (rc != TERN_OK) {
      snprintf(p->err, p->errlen, "round %d: averaging: %s (%s)", r + 1, tern_status_str(rc),
               tern_swarm_last_error(p->sw));
      return -1;
    }
    sp->round = r + 1;
    sp->loss = loss / cfg->steps_per_round;
    sp->test_acc = test_accuracy(p);
    sp->samples += (uint64_t)cfg->steps_per_round * (uint64_t)cfg->batch;
    sp->seconds = now_s() - t0;
    if (cfg->progress) cfg->progress(cfg->arg, sp);
    /* The swarm's rounds are its clock: a peer that lost time jumps to the others' round (its
     * report names it), so its count of averages lags. Counting its own, it went on averaging
     * alone after the others had finished (`tern demo` took 2-7 s more). */
    if (cfg->avg.rounds > 0 && sp->avg.round + 1 >= (uint32_t)cfg->avg.rounds) break;
  }
  return 0;
}

int swarm_train_run(tern_swarm *sw, const swarm_train_config *cfg, swarm_train_progress *last,
                    char *err, size_t errlen) {
  peer p = {.cfg = cfg, .sw = sw, .err = err, .errlen = errlen};
  memset(last, 0, sizeof *last);
  last->rounds = cfg->rounds;
  int rc = check_config(cfg, err, errlen) == 0 && setup(&p) == 0 && rounds(&p, last) == 0 ? 0 : -1;
  digits_free(&p.d);
  mlp_free(&p.m);
  free(p.idx);
  free(p.mine);
  free(p.g);
  return rc;
}

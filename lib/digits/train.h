/* train.h: data-parallel training of the digits MLP over a tern communicator.
 *
 * Every rank loads the data set, draws the same split and the same per-epoch permutation from
 * the seed, and takes its shard of each global batch (every n-th sample of it). Rank 0's initial
 * weights are broadcast. Each step every rank sums the gradients of its samples, one
 * tern_allreduce (SUM) adds them up across ranks with the step's loss, hits and sample count,
 * and every rank applies the same update. After each epoch the held-out set, sharded the same
 * way, is scored. At the end the ranks prove they hold bit-identical weights.
 */
#ifndef TRAIN_TRAIN_H
#define TRAIN_TRAIN_H

#include "tern.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct train_progress {
  int epoch, epochs;          /* 1-based */
  int step, steps;            /* the step within the epoch, 1-based */
  bool epoch_end;             /* the held-out figures below are this epoch's */
  double loss, train_acc;     /* over the epoch so far, every rank's samples */
  double test_loss, test_acc; /* of the last finished epoch; -1 before the first */
  uint64_t samples;           /* training samples seen by all ranks since the start */
  double seconds;             /* since the start, on this rank's clock */
} train_progress;

typedef struct train_config {
  const char *data; /* the digits CSV */
  int hidden;       /* hidden units */
  int epochs;
  int batch; /* the global batch, split across the ranks */
  float lr, momentum;
  double test_fraction; /* held out */
  uint64_t seed;        /* split, permutations and initial weights */
  /* Called on every rank after every step (and once more at each epoch's end); may be NULL. */
  void (*progress)(void *arg, tern_comm *c, const train_progress *p);
  void *arg;
} train_config;

typedef struct train_result {
  train_progress last; /* the final epoch's figures */
  size_t ntrain, ntest, nparams;
  int steps;             /* all-reduces of gradients, in all */
  bool identical;        /* every rank ended with rank 0's weights, bit for bit */
  uint64_t weights_hash; /* FNV-1a of the final weights' bytes */
} train_result;

/* The digits CSV this build knows: the installed copy when there is one, else the source tree's
 * (lib/digits/data/digits.csv). NULL when neither is readable. */
const char *train_find_data(void);

/* The defaults: the data set train_find_data() finds, 64 hidden units, 20 epochs, batch 64, lr 0.1,
 * momentum 0.9, 20 % held out. */
void train_config_default(train_config *cfg);

/* Trains on c as cfg says. 0 on success; -1 with the reason in err on a bad configuration, an
 * unreadable data set or a tern failure (with tern's own message). Every rank must call it with
 * the same cfg. */
int train_run(tern_comm *c, const train_config *cfg, train_result *res, char *err, size_t errlen);

/* Whether every rank holds the same n floats as rank 0, bit for bit: rank 0's copy is broadcast
 * and compared byte by byte, and the verdict all-reduced so every rank knows it. */
int train_same_everywhere(tern_comm *c, const float *w, size_t n, bool *same, char *err,
                          size_t errlen);

#endif

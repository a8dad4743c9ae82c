/* swarm_train.h: the digits MLP trained by a swarm of peers, after Moshpit SGD (Ryabinin et al.,
 * NeurIPS 2021): each peer takes SGD steps on its own shard of the data, then averages its
 * weights with a group of other peers (tern_swarm_average), round after round. There is no
 * coordinator and no fixed membership: a peer may die mid-round (its group finishes without
 * it), and a new one may join by downloading the current weights from a live peer.
 *
 * Every peer draws the same split of the data from the seed and takes every shards-th training
 * image starting at its shard; a peer that joins takes over the shard it is given.
 */
#ifndef TRAIN_SWARM_TRAIN_H
#define TRAIN_SWARM_TRAIN_H

#include "tern.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct swarm_train_progress {
  int round, rounds;     /* the round just averaged, 1-based */
  double loss;           /* this peer's training loss over the round's steps */
  double test_acc;       /* held-out accuracy of this peer's weights after the average */
  tern_swarm_report avg; /* what the round's average did */
  uint64_t samples;      /* training samples this peer has seen */
  double seconds;        /* since this peer started */
} swarm_train_progress;

typedef struct swarm_train_config {
  const char *data; /* the digits CSV */
  int hidden;
  int rounds;          /* averaging rounds at most; avg.rounds > 0 ends them at the swarm's */
  int steps_per_round; /* local SGD steps between two averages */
  int batch;           /* this peer's batch */
  float lr, momentum;
  double test_fraction;
  uint64_t seed; /* split and initial weights: the same for every peer */
  int shard, shards;
  bool join_running; /* download the weights from a live peer instead of drawing them */
  tern_swarm_average_options avg;
  /* Called after every round; may be NULL. */
  void (*progress)(void *arg, const swarm_train_progress *p);
  void *arg;
} swarm_train_config;

/* Defaults: train_find_data()'s data set, 64 hidden units, 30 rounds of 10 steps of batch 16,
 * lr 0.1, momentum 0.9, 20 % held out, shard 0 of 1. */
void swarm_train_config_default(swarm_train_config *cfg);

/* Trains on the swarm sw as cfg says. 0 on success, with the last round's figures in *last;
 * -1 with the reason in err (a bad configuration, an unreadable data set, a swarm failure). */
int swarm_train_run(tern_swarm *sw, const swarm_train_config *cfg, swarm_train_progress *last,
                    char *err, size_t errlen);

#endif

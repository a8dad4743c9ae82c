/* averaging.h: the averaging-rounds simulator: how many rounds each decentralised averaging
 * protocol takes to bring N peers to consensus while peers fail.
 *
 * The set-up is the Moshpit SGD paper's averaging experiment (Ryabinin et al., NeurIPS 2021,
 * section 4.1; figures in tests/unit/test_averaging.c): N peers each hold one value drawn from
 * N(0, 1); the error is the variance of the peers' estimates (divided by N). Rounds are numbered
 * from 1; in every round each peer independently fails with probability p, and a failed peer
 * skips the round: it keeps its value, sends nothing and receives nothing. The protocols:
 *   allreduce  every peer gets the exact mean, but only in a round where no peer failed;
 *   gossip     a ring: each live peer averages itself with its live neighbours i-1 and i+1;
 *   pushsum    PushSum (Kempe et al. 2003) as SGP runs it (Assran et al. 2019): 2 out-edges on
 *              an exponential graph, to i + 2^h and i + 2^(h+1) with h = round mod
 *              floor(log2(N-1)); a live peer splits its (sum, weight) evenly between itself and
 *              its live out-neighbours, and its estimate is sum / weight, so the total is kept;
 *   groups     the live peers are shuffled into floor(live / M) groups of M (the rest dealt out
 *              one by one to the groups), each averaged exactly;
 *   moshpit    the peers sit on distinct random cells of a grid of d axes of size M; in round t
 *              the live peers that share every coordinate but axis t mod d average exactly.
 * Everything is drawn from one seeded generator (xoshiro256**), so a run is a function of its
 * set-up: the same figures on every machine.
 *
 * averaging.c runs restarts and rounds; averaging_groups.c and averaging_mix.c hold the rounds
 * of the protocols; averaging_rng.c the generator. Nothing here touches the network.
 */
#ifndef TERN_SIM_AVERAGING_H
#define TERN_SIM_AVERAGING_H

#include "core/core.h"

typedef enum sim_avg_proto {
  SIM_AVG_ALLREDUCE,
  SIM_AVG_GOSSIP,
  SIM_AVG_PUSHSUM,
  SIM_AVG_GROUPS,
  SIM_AVG_MOSHPIT,
  SIM_AVG_NPROTOS
} sim_avg_proto;

#define SIM_AVG_MAX_TARGETS 4
#define SIM_AVG_MAX_DIMS 8
#define SIM_AVG_MAX_PEERS (1 << 24)
#define SIM_AVG_MAX_CELLS (1L << 26) /* grid cells: their index fits an int, scratch 512 MiB */

typedef struct sim_avg_setup {
  sim_avg_proto proto;
  int n;                    /* peers, 2 .. SIM_AVG_MAX_PEERS */
  double p;                 /* the probability that a peer fails in a round, 0 .. 1 */
  int max_rounds;           /* rounds run per restart */
  int restarts;             /* independent runs, each from fresh values */
  int group;                /* M: random groups' size, 2 .. n */
  int grid_dims, grid_size; /* moshpit's grid: grid_size^grid_dims >= n cells */
  int ntargets;             /* errors whose first crossing is counted */
  double targets[SIM_AVG_MAX_TARGETS];
  uint64_t seed;
} sim_avg_setup;

/* The set-up of the paper's experiment for proto, n and p: 50 rounds, 10 restarts, groups of 32,
 * a 32 x 32 grid, targets 1e-9 and 1e-4, seed 1. */
void sim_avg_setup_default(sim_avg_setup *s, sim_avg_proto proto, int n, double p);
/* TERN_ERR_INVALID_ARG naming the first field out of range. */
tern_status sim_avg_setup_check(const sim_avg_setup *s, core_err *err);

typedef struct sim_avg_result {
  /* Per target: the mean and standard deviation over restarts of the first round after which
   * the error is below it (0 when it already was; max_rounds when never). */
  double rounds[SIM_AVG_MAX_TARGETS], rounds_sd[SIM_AVG_MAX_TARGETS];
  double *error; /* max_rounds + 1: the mean error over restarts after each round (0: before) */
} sim_avg_result;

/* Runs s->restarts restarts of s->max_rounds rounds. r->error is malloc'd (sim_avg_result_free). */
tern_status sim_avg_run(const sim_avg_setup *s, sim_avg_result *r, core_err *err);
void sim_avg_result_free(sim_avg_result *r);

/* "allreduce", "gossip", "pushsum", "groups", "moshpit"; parsing also takes "sgp". */
const char *sim_avg_proto_name(sim_avg_proto p);
bool sim_avg_proto_parse(const char *s, sim_avg_proto *out);

/* ---- the generator (averaging_rng.c) ----------------------------------------------------- */

typedef struct sim_rng {
  uint64_t s[4];
} sim_rng;

/* xoshiro256** (Blackman and Vigna 2018) seeded through splitmix64, as its authors advise. */
void sim_rng_seed(sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(sim_rng *r);
double sim_rng_uniform(sim_rng *r);                 /* [0, 1), 53 bits */
double sim_rng_normal(sim_rng *r);                  /* N(0, 1), Box-Muller */
uint64_t sim_rng_below(sim_rng *r, uint64_t bound); /* [0, bound), unbiased; bound >= 1 */
void sim_rng_shuffle(sim_rng *r, int *a, size_t n); /* Fisher-Yates */

/* ---- one restart's peers, for the rounds and for tests ------------------------------------ */

typedef struct sim_avg_peers {
  int n;
  double *x;      /* values (pushsum: sums) */
  double *w;      /* pushsum's weights; 1 for the other protocols */
  uint8_t *alive; /* this round's live peers */
  int *cell;      /* moshpit: each peer's grid cell */
  /* scratch the rounds reuse, sized at init */
  double *tmp_x, *tmp_w, *sum;
  int *idx, *count;
} sim_avg_peers;

/* Sizes pk for s (s must pass sim_avg_setup_check) and draws fresh values (and moshpit's cells)
 * from r. Every peer starts alive. */
tern_status sim_avg_peers_init(sim_avg_peers *pk, const sim_avg_setup *s, sim_rng *r,
                               core_err *err);
void sim_avg_peers_free(sim_avg_peers *pk);
/* Draws who fails in this round, then runs round t (t >= 1) of s->proto. */
void sim_avg_round(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);
/* The variance of the estimates x / w across all peers (divided by n). */
double sim_avg_error(const sim_avg_peers *pk);

/* The protocols' rounds over pk->alive (averaging_groups.c, averaging_mix.c). */
void sim_avg_round_allreduce(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);
void sim_avg_round_groups(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);
void sim_avg_round_moshpit(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);
void sim_avg_round_gossip(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);
void sim_avg_round_pushsum(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r);

#endif /* TERN_SIM_AVERAGING_H */

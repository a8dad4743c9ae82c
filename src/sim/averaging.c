/* averaging.c: the averaging simulator's driver: set-ups, peers, restarts and the figures.
 *
 * A run is s->restarts restarts; restart k draws from its own stream (the seed and k mixed by
 * splitmix64 in sim_rng_seed), so a restart's figures do not depend on how many ran before it.
 * Each restart draws fresh values, then runs every round to the cap, recording the error after
 * each round and the first round each target is crossed; running past the targets costs little
 * and gives the whole curve (for plots) from the same runs as the counts.
 */
#include "sim/averaging.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[SIM_AVG_NPROTOS] = {"allreduce", "gossip", "pushsum", "groups",
                                                   "moshpit"};

static void (*const rounds_of[SIM_AVG_NPROTOS])(sim_avg_peers *, const sim_avg_setup *, int,
                                                sim_rng *) = {
    sim_avg_round_allreduce, sim_avg_round_gossip, sim_avg_round_pushsum, sim_avg_round_groups,
    sim_avg_round_moshpit};

const char *sim_avg_proto_name(sim_avg_proto p) {
  return (unsigned)p < SIM_AVG_NPROTOS ? names[p] : "?";
}

bool sim_avg_proto_parse(const char *s, sim_avg_proto *out) {
  for (int i = 0; i < SIM_AVG_NPROTOS; i++)
    if (strcasecmp(s, names[i]) == 0) return *out = (sim_avg_proto)i, true;
  if (strcasecmp(s, "sgp") == 0) return *out = SIM_AVG_PUSHSUM, true;
  return false;
}

void sim_avg_setup_default(sim_avg_setup *s, sim_avg_proto proto, int n, double p) {
  *s = (sim_avg_setup){.proto = proto,
                       .n = n,
                       .p = p,
                       .max_rounds = 50,
                       .restarts = 10,
                       .group = 32,
                       .grid_dims = 2,
                       .grid_size = 32,
                       .ntargets = 2,
                       .targets = {1e-9, 1e-4},
                       .seed = 1};
}

static long grid_cells(const sim_avg_setup *s) {
  long cells = 1;
  for (int i = 0; i < s->grid_dims && cells <= SIM_AVG_MAX_CELLS; i++)
    cells *= s->grid_size;
  return cells;
}

tern_status sim_avg_setup_check(const sim_avg_setup *s, core_err *err) {
  const char *bad = NULL;
  if ((unsigned)s->proto >= SIM_AVG_NPROTOS)
    bad = "protocol";
  else if (s->n < 2 || s->n > SIM_AVG_MAX_PEERS)
    bad = "peers (2 to 16777216)";
  else if (!(s->p >= 0 && s->p <= 1))
    bad = "failure probability (0 to 1)";
  else if (s->max_rounds < 1 || s->max_rounds > 1000000)
    bad = "rounds (1 to 1000000)";
  else if (s->restarts < 1 || s->restarts > 1000000)
    bad = "restarts (1 to 1000000)";
  else if (s->proto == SIM_AVG_GROUPS && (s->group < 2 || s->group > s->n))
    bad = "group size (2 to the number of peers)";
  else if (s->grid_dims < 1 || s->grid_dims > SIM_AVG_MAX_DIMS || s->grid_size < 2)
    bad = "grid (1 to 8 axes of at least 2)";
  else if (s->proto == SIM_AVG_MOSHPIT && grid_cells(s) > SIM_AVG_MAX_CELLS)
    bad = "grid (at most 2^26 cells)";
  else if (s->proto == SIM_AVG_MOSHPIT && grid_cells(s) < s->n)
    bad = "grid (fewer cells than peers)";
  else if (s->ntargets < 0 || s->ntargets > SIM_AVG_MAX_TARGETS)
    bad = "targets (0 to 4)";
  for (int i = 0; bad == NULL && i < s->ntargets; i++)
    if (!(s->targets[i] > 0)) bad = "target (an error above 0)";
  if (bad == NULL) return TERN_OK;
  return core_err_set(err, TERN_ERR_INVALID_ARG,
                      "averaging simulation of %s, %d peers, p %g: bad %s",
                      sim_avg_proto_name(s->proto), s->n, s->p, bad);
}

void sim_avg_peers_free(sim_avg_peers *pk) {
  free(pk->x), free(pk->w), free(pk->alive), free(pk->cell);
  free(pk->tmp_x), free(pk->tmp_w), free(pk->sum), free(pk->idx), free(pk->count);
  memset(pk, 0, sizeof *pk);
}

/* Moshpit's cells: the first n of a partial Fisher-Yates over every cell of the grid. */
static void place_on_grid(sim_avg_peers *pk, long cells, sim_rng *r) {
  int *all = pk->count; /* cells entries of scratch, reused for the groups later */
  for (long c = 0; c < cells; c++)
    all[c] = (int)c;
  for (int i = 0; i < pk->n; i++) {
    long j = i + (long)sim_rng_below(r, (uint64_t)(cells - i));
    int t = all[i];
    all[i] = all[j];
    all[j] = t;
    pk->cell[i] = all[i];
  }
}

tern_status sim_avg_peers_init(sim_avg_peers *pk, const sim_avg_setup *s, sim_rng *r,
                               core_err *err) {
  memset(pk, 0, sizeof *pk);
  size_t n = (size_t)s->n;
  long cells = s->proto == SIM_AVG_MOSHPIT ? grid_cells(s) : s->n;
  size_t slots = (size_t)(cells > s->n ? cells : s->n);
  pk->n = s->n;
  pk->x = malloc(n * sizeof *pk->x), pk->w = malloc(n * sizeof *pk->w);
  pk->alive = malloc(n), pk->cell = malloc(n * sizeof *pk->cell);
  pk->tmp_x = malloc(n * sizeof *pk->tmp_x), pk->tmp_w = malloc(n * sizeof *pk->tmp_w);
  pk->sum = malloc(slots * sizeof *pk->sum), pk->idx = malloc(n * sizeof *pk->idx);
  pk->count = malloc(slots * sizeof *pk->count);
  if (!pk->x || !pk->w || !pk->alive || !pk->cell || !pk->tmp_x || !pk->tmp_w || !pk->sum ||
      !pk->idx || !pk->count)
    goto fail;
  for (size_t i = 0; i < n; i++) {
    pk->x[i] = sim_rng_normal(r);
    pk->w[i] = 1;
    pk->alive[i] = 1;
  }
  if (s->proto == SIM_AVG_MOSHPIT) place_on_grid(pk, cells, r);
  return TERN_OK;
fail:
  sim_avg_peers_free(pk);
  return core_err_set(err, TERN_ERR_NOMEM, "averaging simulation: no memory for %d peers", s->n);
}

void sim_avg_round(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  for (int i = 0; i < pk->n; i++)
    pk->alive[i] = sim_rng_uniform(r) >= s->p;
  rounds_of[s->proto](pk, s, t, r);
}

double sim_avg_error(const sim_avg_peers *pk) {
  double mean = 0, var = 0;
  for (int i = 0; i < pk->n; i++)
    mean += pk->x[i] / pk->w[i];
  mean /= pk->n;
  for (int i = 0; i < pk->n; i++) {
    double d = pk->x[i] / pk->w[i] - mean;
    var += d * d;
  }
  return var / pk->n;
}

/* One restart: adds its error curve to r->error and its crossing rounds to sums and squares. */
static tern_status restart(const sim_avg_setup *s, int k, sim_avg_result *r, double *sums,
                           double *squares, core_err *err) {
  sim_rng rng;
  sim_rng_seed(&rng, s->seed ^ ((uint64_t)k * 0xd1342543de82ef95u));
  sim_avg_peers pk;
  tern_status rc = sim_avg_peers_init(&pk, s, &rng, err);
  if (rc != TERN_OK) return rc;
  int first[SIM_AVG_MAX_TARGETS];
  for (int i = 0; i < s->ntargets; i++)
    first[i] = -1;
  for (int t = 0; t <= s->max_rounds; t++) {
    if (t > 0) sim_avg_round(&pk, s, t, &rng);
    double e = sim_avg_error(&pk);
    r->error[t] += e / s->restarts;
    for (int i = 0; i < s->ntargets; i++)
      if (first[i] < 0 && e < s->targets[i]) first[i] = t;
  }
  for (int i = 0; i < s->ntargets; i++) {
    double f = first[i] < 0 ? s->max_rounds : first[i];
    sums[i] += f, squares[i] += f * f;
  }
  sim_avg_peers_free(&pk);
  return TERN_OK;
}

tern_status sim_avg_run(const sim_avg_setup *s, sim_avg_result *r, core_err *err) {
  memset(r, 0, sizeof *r);
  tern_status rc = sim_avg_setup_check(s, err);
  if (rc != TERN_OK) return rc;
  r->error = calloc((size_t)s->max_rounds + 1, sizeof *r->error);
  if (r->error == NULL)
    return core_err_set(err, TERN_ERR_NOMEM, "averaging simulation: no memory for %d rounds",
                        s->max_rounds);
  double sums[SIM_AVG_MAX_TARGETS] = {0}, squares[SIM_AVG_MAX_TARGETS] = {0};
  for (int k = 0; k < s->restarts; k++)
    if ((rc = restart(s, k, r, sums, squares, err)) != TERN_OK) goto fail;
  for (int i = 0; i < s->ntargets; i++) {
    double m = sums[i] / s->restarts, v = squares[i] / s->restarts - m * m;
    r->rounds[i] = m;
    r->rounds_sd[i] = s->restarts > 1 && v > 0 ? sqrt(v * s->restarts / (s->restarts - 1)) : 0;
  }
  return TERN_OK;
fail:
  sim_avg_result_free(r);
  return rc;
}

void sim_avg_result_free(sim_avg_result *r) {
  free(r->error);
  r->error = NULL;
}

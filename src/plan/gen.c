/* gen.c: scenarios made from a seed: the paper's variants of a base scenario, and random
 * clusters for property tests and the planner's benchmark.
 *
 * Variants (BACE-Pipe's sensitivity study: bandwidth x0.3 and x1.5, GPUs x0.5 and x1.25, 8, 16
 * and 24 jobs) scale every inter-region link's bandwidth and every region's GPU count (rounded,
 * at least 1), keep the base's jobs first and draw the others from it: a model shape of one
 * base job, the token count of another, an arrival after the last one by an exponential gap of
 * the base's mean gap. The same seed gives the same file.
 *
 * Random scenarios (on random links, or on given ones such as aws-10-regions.json's) draw
 * every figure from the ranges of the fixtures: the GPU types of
 * geo-six-regions.json (RTX A6000, A100, H100), pools of 16 to 128 GPUs, prices in the paper's
 * USD 0.156-0.295 per kWh, a full mesh of links with the AWS latencies (10-270 ms) and
 * bandwidths (0.3-1.2 Gbit/s) of aws-10-regions.json, and the fixture's six model shapes.
 */
#include "plan/plan.h"

#include "core/mix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double rand_uniform(uint64_t *state) {
  return (core_splitmix64(state) >> 11) * 0x1.0p-53;
}

static double uniform(uint64_t *st, double lo, double hi) {
  return lo + (hi - lo) * rand_uniform(st);
}

static double exp_gap(uint64_t *st, double mean) {
  return -mean * log(1.0 - rand_uniform(st));
}

/* The model shapes of data/scenarios/geo-six-regions.json (published model configurations). */
static const struct shape {
  const char *name;
  double params_b;
  int layers, hidden;
} shapes[] = {
    {"llama-3.1-70b", 70.6, 80, 8192}, {"qwen2.5-14b", 14.7, 48, 5120},
    {"falcon-40b", 41.8, 60, 8192},    {"gemma-3-27b", 27.0, 62, 5376},
    {"qwen2.5-32b", 32.8, 64, 5120},   {"flm-101b", 101.0, 80, 10240},
};

static tern_status alloc_jobs(plan_scenario *out, int njobs, core_err *err) {
  out->njobs = njobs;
  out->jobs = calloc((size_t)njobs, sizeof *out->jobs);
  return out->jobs ? TERN_OK : core_err_set(err, TERN_ERR_NOMEM, "%d jobs", njobs);
}

static void extra_jobs(const plan_scenario *base, plan_scenario *out, uint64_t *st) {
  const plan_job *b = base->jobs;
  int nb = base->njobs;
  double first = b[0].arrival_s, last = b[0].arrival_s;
  for (int i = 1; i < nb; i++) {
    first = CORE_MIN(first, b[i].arrival_s);
    last = CORE_MAX(last, b[i].arrival_s);
  }
  double gap = nb > 1 && last > first ? (last - first) / (nb - 1) : 600.0;
  for (int i = nb; i < out->njobs; i++) {
    plan_job *j = &out->jobs[i];
    *j = b[core_splitmix64(st) % (uint64_t)nb];
    j->tokens = b[core_splitmix64(st) % (uint64_t)nb].tokens;
    last += exp_gap(st, gap);
    j->arrival_s = round(last);
    char model[PLAN_NAME_LEN];
    memcpy(model, j->name, sizeof model);
    snprintf(j->name, sizeof j->name, "%.34s-v%d", model, i);
  }
}

/* Time-of-use prices: each region's mean price kept, swung by 20-60% over the day with its
 * peak at a random hour (a daily demand curve; the paper's scenarios have 24 hourly prices). */
static void hourly_prices(plan_cluster *c, uint64_t *st) {
  for (int r = 0; r < c->nregions; r++) {
    double mean = 0, swing = uniform(st, 0.2, 0.6), peak = uniform(st, 0, 24);
    for (int h = 0; h < 24; h++)
      mean += c->regions[r].price[h] / 24;
    for (int h = 0; h < 24; h++)
      c->regions[r].price[h] =
          round(1000 * mean * (1 + swing * cos(2 * M_PI * (h - peak) / 24))) / 1000;
  }
}

tern_status plan_gen_variant(const plan_scenario *base, const plan_variant *v, plan_scenario *out,
                             core_err *err) {
  memset(out, 0, sizeof *out);
  if (!(v->bw_scale > 0) || !(v->gpu_scale > 0) || v->njobs < 1 || base->njobs < 1)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "variant: bandwidth and GPU scales must be > 0 and jobs >= 1");
  uint64_t st = v->seed;
  tern_status s = plan_cluster_copy(&out->c, &base->c, err);
  if (s == TERN_OK) s = alloc_jobs(out, v->njobs, err);
  if (s != TERN_OK) goto fail;
  size_t n = (size_t)out->c.nregions;
  for (size_t i = 0; i < n * n; i++)
    out->c.links[i].Bps *= v->bw_scale;
  for (size_t i = 0; i < n; i++)
    out->c.regions[i].gpus = CORE_MAX(1, (int)lround(out->c.regions[i].gpus * v->gpu_scale));
  memcpy(out->jobs, base->jobs, (size_t)CORE_MIN(v->njobs, base->njobs) * sizeof *out->jobs);
  extra_jobs(base, out, &st);
  if (v->hourly) hourly_prices(&out->c, &st);
  for (int i = 0; i < out->njobs && v->microbatches > 0; i++)
    out->jobs[i].microbatches = v->microbatches;
  snprintf(out->source, sizeof out->source,
           "variant of %.130s: bandwidth x%g, GPUs x%g, %d jobs, seed %llu%s", base->source,
           v->bw_scale, v->gpu_scale, v->njobs, (unsigned long long)v->seed,
           v->hourly ? ", hourly prices" : "");
  s = plan_scenario_check(out, NULL, err);
  if (s != TERN_OK) goto fail;
  return TERN_OK;
fail:
  plan_scenario_free(out);
  return s;
}

static void random_types(plan_cluster *c) {
  static const plan_gpu_type types[] = {
      /* geo-six-regions.json's figures */
      {"RTX-A6000", 154.8e12, 300, 48 * 1073741824.0},
      {"A100-SXM4-80GB", 312e12, 400, 80 * 1073741824.0},
      {"H100-SXM", 989e12, 700, 80 * 1073741824.0},
  };
  c->ntypes = (int)CORE_ARRAY_LEN(types);
  memcpy(c->types, types, sizeof types);
}

static void random_pools(plan_cluster *c, uint64_t *st) {
  random_types(c);
  c->mfu = 0.35;
  c->pue = 1.2;
  c->mem_fraction = 0.9;
  for (int i = 0; i < c->nregions; i++) {
    plan_region *r = &c->regions[i];
    r->type = (int)(core_splitmix64(st) % (uint64_t)c->ntypes);
    r->gpus = 16 + 8 * (int)(core_splitmix64(st) % 15);
    double price = round(uniform(st, 0.156, 0.295) * 1000) / 1000;
    for (int h = 0; h < 24; h++)
      r->price[h] = price;
    r->intra_Bps = 25e9 / 8;
  }
}

static void random_links(plan_cluster *c, uint64_t *st) {
  for (int i = 0; i < c->nregions; i++)
    snprintf(c->regions[i].name, sizeof c->regions[i].name, "region-%02d", i);
  for (int a = 0; a < c->nregions; a++)
    for (int b = a + 1; b < c->nregions; b++) {
      plan_link l = {round(uniform(st, 10, 270)) / 1e3, uniform(st, 0.3, 1.2) * 1e9 / 8};
      c->links[(size_t)a * (size_t)c->nregions + (size_t)b] = l;
      c->links[(size_t)b * (size_t)c->nregions + (size_t)a] = l;
    }
}

static void random_jobs(plan_scenario *out, uint64_t *st) {
  double t = 0;
  for (int i = 0; i < out->njobs; i++) {
    const struct shape *m = &shapes[core_splitmix64(st) % CORE_ARRAY_LEN(shapes)];
    plan_job *j = &out->jobs[i];
    snprintf(j->name, sizeof j->name, "%s-%d", m->name, i);
    j->params = m->params_b * 1e9;
    j->layers = m->layers;
    j->hidden = m->hidden;
    j->seq_len = 2048;
    j->mb_seqs = 1;
    j->microbatches = 32;
    j->dtype_bytes = 2;
    j->tokens = round(exp(uniform(st, log(1e8), log(2e9))) / 1e6) * 1e6;
    j->arrival_s = round(t);
    t += exp_gap(st, 600);
  }
}

/* The rest of a random scenario once out's cluster has its regions and links: GPU pools and
 * njobs jobs drawn from *st, then the whole checked. Frees out on failure. */
static tern_status draw_pools_and_jobs(plan_scenario *out, int njobs, uint64_t *st, core_err *err) {
  tern_status s = alloc_jobs(out, njobs, err);
  if (s == TERN_OK) {
    random_pools(&out->c, st);
    random_jobs(out, st);
    s = plan_scenario_check(out, NULL, err);
  }
  if (s != TERN_OK) plan_scenario_free(out);
  return s;
}

tern_status plan_gen_random(int nregions, int njobs, uint64_t seed, plan_scenario *out,
                            core_err *err) {
  memset(out, 0, sizeof *out);
  uint64_t st = seed;
  if (njobs < 1) return core_err_set(err, TERN_ERR_INVALID_ARG, "random: jobs must be >= 1");
  tern_status s = plan_cluster_alloc(&out->c, nregions, err);
  if (s != TERN_OK) {
    plan_scenario_free(out);
    return s;
  }
  random_links(&out->c, &st);
  snprintf(out->source, sizeof out->source, "random: %d regions, %d jobs, seed %llu", nregions,
           njobs, (unsigned long long)seed);
  return draw_pools_and_jobs(out, njobs, &st, err);
}

tern_status plan_gen_on_links(const plan_cluster *links, int njobs, uint64_t seed,
                              plan_scenario *out, core_err *err) {
  memset(out, 0, sizeof *out);
  uint64_t st = seed;
  if (njobs < 1) return core_err_set(err, TERN_ERR_INVALID_ARG, "random: jobs must be >= 1");
  tern_status s = plan_cluster_copy(&out->c, links, err);
  if (s != TERN_OK) {
    plan_scenario_free(out);
    return s;
  }
  snprintf(out->source, sizeof out->source, "random pools and %d jobs on given links, seed %llu",
           njobs, (unsigned long long)seed);
  return draw_pools_and_jobs(out, njobs, &st, err);
}

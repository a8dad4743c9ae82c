/* job.c: the job model: what one pipeline-parallel training job costs in FLOPs, bytes and
 * memory, and how many GPUs it asks for.
 *
 * Per token, one transformer layer's forward pass costs 2 P/L + 2 s h FLOPs (the weights and the
 * attention over s tokens: Kaplan et al., "Scaling Laws for Neural Language Models", 2020,
 * Table 1), and the backward pass twice that (ibid.; Narayanan et al., SC'21, Sec. 5.1).
 * A stage boundary carries one b x s x h activation tensor forward and its gradient back per
 * micro-batch (Narayanan et al., Sec. 3.2). A layer keeps 16 bytes per parameter (bf16 weights
 * and gradients, fp32 master weights and two Adam moments: Rajbhandari et al., "ZeRO", SC'20,
 * Sec. 3.1). Activations are recomputed in full, as pipeline training on 48-80 GB GPUs does:
 * per micro-batch in flight a layer keeps only its input, s b h elements, and a stage needs
 * once the working set of the one layer it is recomputing, 34 s b h bytes at 16 bits
 * (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
 * MLSys'23, Sec. 4; scaled by dtype_bytes / 2). The recomputation's FLOPs are not model FLOPs:
 * MFU, by its definition (Chowdhery et al., "PaLM", 2022, App. B), already pays for them, so
 * stage time stays model FLOPs / (peak x MFU).
 *
 * K*, the GPU count that minimises iteration time, is searched over every stage count on the
 * reference region (the largest pool of a GPU type that can hold the job) with the full
 * pipeline model of pipeline.c, so it accounts for the bubble, the stage boundaries and memory.
 */
#include "plan/plan.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* Korthikanti et al. 2023, Sec. 4.1: a layer's activations are 34 sbh bytes at 16 bits (no
 * tensor parallelism, attention scores aside), the working set while it is recomputed. */
#define WORK_BYTES_PER_SBH 34.0
/* Rajbhandari et al. 2020, Sec. 3.1: 2 + 2 + 12 bytes per parameter with mixed-precision Adam. */
#define STATIC_BYTES_PER_PARAM 16.0

double plan_job_iterations(const plan_job *j) {
  double per_iter = (double)j->microbatches * j->mb_seqs * j->seq_len;
  return ceil(j->tokens / per_iter);
}

double plan_job_layer_fwd_flops(const plan_job *j) {
  double tokens = (double)j->mb_seqs * j->seq_len;
  return tokens * (2.0 * j->params / j->layers + 2.0 * (double)j->seq_len * j->hidden);
}

double plan_job_boundary_bytes(const plan_job *j) {
  return (double)j->mb_seqs * j->seq_len * j->hidden * j->dtype_bytes;
}

double plan_job_layer_static_bytes(const plan_job *j) {
  return STATIC_BYTES_PER_PARAM * j->params / j->layers;
}

double plan_job_layer_act_bytes(const plan_job *j) {
  return (double)j->seq_len * j->mb_seqs * j->hidden * j->dtype_bytes;
}

double plan_job_stage_work_bytes(const plan_job *j) {
  return WORK_BYTES_PER_SBH * j->seq_len * j->mb_seqs * j->hidden * (j->dtype_bytes / 2.0);
}

/* The largest pool among the regions whose GPU type holds the job on at most `total` GPUs (one
 * exists when the job fits at all): K* is searched there. */
static int reference_region(const plan_cluster *c, const plan_demand *d, int total) {
  int best = -1;
  for (int r = 0; r < c->nregions; r++) {
    bool holds = d->smin[c->regions[r].type] <= total;
    if (holds && (best < 0 || c->regions[r].gpus > c->regions[best].gpus)) best = r;
  }
  return best;
}

static bool single_region(const plan_cluster *c, const plan_job *j, int r, int k,
                          plan_placement *p) {
  return plan_build(c, j, &r, &k, 1, p);
}

/* Fewest GPUs of region r's type that hold the job, INT_MAX if no stage count does. */
static int memory_floor(const plan_cluster *c, const plan_job *j, int r, plan_placement *p) {
  const plan_gpu_type *t = &c->types[c->regions[r].type];
  double cap = t->memory_bytes * c->mem_fraction - plan_job_stage_work_bytes(j);
  int lo = cap > 0 ? (int)ceil(plan_job_layer_static_bytes(j) * j->layers / cap) : INT_MAX;
  int hi = CORE_MIN(j->layers, PLAN_MAX_STAGES);
  for (int k = CORE_MAX(lo, 1); k <= hi; k++)
    if (single_region(c, j, r, k, p)) return k;
  return INT_MAX;
}

/* Every type's memory floor into d->smin; returns the least of them. */
static int floors(const plan_cluster *c, const plan_job *j, plan_demand *d, plan_placement *p) {
  int seen[PLAN_MAX_TYPES] = {0}, fewest = INT_MAX;
  for (int t = 0; t < c->ntypes; t++)
    d->smin[t] = INT_MAX;
  for (int r = 0; r < c->nregions; r++) {
    int t = c->regions[r].type;
    if (seen[t]++) continue;
    d->smin[t] = memory_floor(c, j, r, p);
    fewest = CORE_MIN(fewest, d->smin[t]);
  }
  return fewest;
}

/* K* (least iteration time) and the energy-delay count (least K T^2) over k in [lo, hi] on
 * region ref; the iteration time at K* into *iter and its slowest stage into *stage. */
static int search_counts(const plan_cluster *c, const plan_job *j, int ref, int lo, int hi,
                         int *kedp, double *iter, double *stage, plan_placement *p) {
  double edp = INFINITY;
  int kstar = 0;
  *iter = INFINITY;
  for (int k = lo; k <= hi; k++) {
    if (!single_region(c, j, ref, k, p)) continue;
    double t = plan_iter_time(c, j, p, NULL, 0);
    if (k * t * t < edp) {
      edp = k * t * t;
      *kedp = k;
    }
    if (t < *iter) {
      *iter = t;
      kstar = k;
      *stage = plan_stage_fb_max(c, j, p);
    }
  }
  return kstar;
}

/* K* on every GPU type a region holds: searched on that type's largest pool, up to its GPUs in
 * the whole cluster (docs/PLANNING.md, "K* per GPU type"). */
static void kstar_per_type(const plan_cluster *c, const plan_job *j, plan_demand *d,
                           plan_placement *p) {
  int pool[PLAN_MAX_TYPES], gpus[PLAN_MAX_TYPES] = {0};
  for (int t = 0; t < c->ntypes; t++)
    pool[t] = -1;
  for (int r = 0; r < c->nregions; r++) {
    int t = c->regions[r].type;
    gpus[t] += c->regions[r].gpus;
    if (pool[t] < 0 || c->regions[r].gpus > c->regions[pool[t]].gpus) pool[t] = r;
  }
  d->iter_fast = d->iter_kstar;
  for (int t = 0; t < c->ntypes; t++) {
    int kedp;
    double iter = INFINITY, stage;
    d->kstar_type[t] = pool[t] < 0 || d->smin[t] == INT_MAX
                           ? 0
                           : search_counts(c, j, pool[t], d->smin[t],
                                           CORE_MIN(CORE_MIN(j->layers, PLAN_MAX_STAGES), gpus[t]),
                                           &kedp, &iter, &stage, p);
    if (d->kstar_type[t] > 0) d->iter_fast = fmin(d->iter_fast, iter);
  }
}

bool plan_job_same_shape(const plan_job *a, const plan_job *b) {
  return a->params == b->params && a->layers == b->layers && a->hidden == b->hidden &&
         a->seq_len == b->seq_len && a->mb_seqs == b->mb_seqs &&
         a->microbatches == b->microbatches && a->dtype_bytes == b->dtype_bytes;
}

bool plan_job_demand(const plan_cluster *c, const plan_job *j, plan_demand *d, core_err *err) {
  static _Thread_local plan_placement p; /* 2 KB: kept off the stack of deep callers */
  memset(d, 0, sizeof *d);
  int fewest = floors(c, j, d, &p), total = plan_cluster_total_gpus(c);
  if (fewest == INT_MAX) {
    core_err_set(err, TERN_ERR_INVALID_ARG,
                 "job '%s' fits nowhere: even one layer per stage overflows every GPU type's "
                 "memory",
                 j->name);
    return false;
  }
  if (fewest > total) {
    core_err_set(err, TERN_ERR_INVALID_ARG,
                 "job '%s' fits nowhere: it needs at least %d GPUs to hold its weights, "
                 "optimizer state and activations, the cluster has %d",
                 j->name, fewest, total);
    return false;
  }
  int ref = d->ref = reference_region(c, d, total), lo = d->smin[c->regions[ref].type], usable = 0;
  for (int r = 0; r < c->nregions; r++)
    if (d->smin[c->regions[r].type] != INT_MAX) usable += c->regions[r].gpus;
  d->kstar = search_counts(c, j, ref, lo, CORE_MIN(CORE_MIN(j->layers, PLAN_MAX_STAGES), usable),
                           &d->kedp, &d->iter_kstar, &d->stage_fb_s, &p);
  kstar_per_type(c, j, d, &p);
  return plan_job_demand_finish(c, j, d, err);
}

bool plan_job_demand_finish(const plan_cluster *c, const plan_job *j, plan_demand *d,
                            core_err *err) {
  double run_s = d->iter_kstar * plan_job_iterations(j);
  if (!(run_s <= PLAN_MAX_RUN_S)) {
    core_err_set(err, TERN_ERR_INVALID_ARG,
                 "job '%s' would train for %.3g years even alone on %d GPUs of %s: at most %g "
                 "years are supported",
                 j->name, run_s / 3.15576e7, d->kstar, c->regions[d->ref].name,
                 PLAN_MAX_RUN_S / 3.15576e7);
    return false;
  }
  d->demand_Bps = plan_job_boundary_bytes(j) / d->stage_fb_s;
  d->work_flops =
      3.0 * plan_job_layer_fwd_flops(j) * j->layers * j->microbatches * plan_job_iterations(j);
  return true;
}

bool plan_jobs_demand(const plan_cluster *c, const plan_job *jobs, int n, plan_demand *d, int *bad,
                      core_err *err) {
  int shapes[64], nshapes = 0; /* the first job of each shape seen, up to 64 of them */
  for (int i = 0; i < n; i++) {
    int same = -1;
    for (int k = 0; k < nshapes && same < 0; k++)
      if (plan_job_same_shape(&jobs[shapes[k]], &jobs[i])) same = shapes[k];
    bool ok = same >= 0 ? (d[i] = d[same], plan_job_demand_finish(c, &jobs[i], &d[i], err))
                        : plan_job_demand(c, &jobs[i], &d[i], err);
    if (!ok) {
      if (bad) *bad = i;
      return false;
    }
    if (same < 0 && nshapes < (int)CORE_ARRAY_LEN(shapes)) shapes[nshapes++] = i;
  }
  return true;
}

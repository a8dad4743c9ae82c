/* pipeline.c: the pipeline time model: layers over uneven stages, 1F1B over uneven links.
 *
 * One GPU is one stage. A stage of l layers on GPU type g takes F = l x (forward FLOPs per
 * layer) / (peak(g) x MFU) per micro-batch forward and B = 2F backward. Each boundary between
 * stages carries one activation tensor forward and one gradient back per micro-batch: inside a
 * region in bytes / intra bandwidth, across regions in latency + bytes / (bandwidth / sharers),
 * the link's bandwidth split evenly among the jobs crossing it.
 *
 * With m micro-batches, 1F1B's iteration is the time for one micro-batch to fill and drain the
 * pipeline plus m - 1 beats of the slowest resource (the shape of Narayanan et al., SC'21,
 * Sec. 2.2, generalised to uneven stages and links as in Yuan et al., NeurIPS'22, Sec. 3):
 *
 *     T = sum_i (F_i + B_i) + 2 sum_h (lat_h + beta_h) + (m - 1) max(max_i (F_i + B_i), max_h
 * beta_h)
 *
 * with beta_h = bytes / bandwidth share: a link is a resource that passes one micro-batch each
 * way per beat (full duplex); its latency delays the fill and drain only.
 *
 * The split gives layers in proportion to speed within memory: the least bottleneck time tau
 * such that every stage can take min(memory cap, tau / per-layer time) layers summing to L,
 * found by bisection; the surplus is trimmed from the slowest stages. A stage i of S keeps
 * min(S - i, m) micro-batches of activations in flight (1F1B's bound, Narayanan et al.,
 * Sec. 2.2.1), so the first stages hold the most; job.c says what one layer keeps.
 */
#include "plan/plan.h"

#include <math.h>

static int stage_region(const plan_placement *p, int stage) {
  for (int s = 0; s < p->nseg; s++) {
    if (stage < p->seg[s].gpus) return p->seg[s].region;
    stage -= p->seg[s].gpus;
  }
  return -1;
}

/* Forward+backward seconds of one layer on region r's GPUs. */
static double layer_fb(const plan_cluster *c, const plan_job *j, int r) {
  const plan_gpu_type *t = &c->types[c->regions[r].type];
  return 3.0 * plan_job_layer_fwd_flops(j) / (t->peak_flops * c->mfu);
}

static int layers_at(double tau, double fb, int cap) {
  double l = floor(tau / fb * (1 + 1e-12));
  return l >= cap ? cap : (int)l;
}

/* Per-stage per-layer time and memory cap; false when a stage cannot hold even one layer. */
static bool stage_limits(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                         double *fb, int *cap) {
  double stat = plan_job_layer_static_bytes(j), act = plan_job_layer_act_bytes(j);
  double work = plan_job_stage_work_bytes(j);
  long total = 0;
  for (int i = 0, s = 0, left = p->seg[0].gpus; i < p->stages; i++, left--) {
    while (left == 0)
      left = p->seg[++s].gpus;
    int r = p->seg[s].region;
    double mem = c->types[c->regions[r].type].memory_bytes * c->mem_fraction - work;
    int inflight = CORE_MIN(p->stages - i, j->microbatches);
    double per_layer = stat + inflight * act;
    double l = mem > 0 ? floor(mem / per_layer) : 0;
    cap[i] = l > j->layers ? j->layers : (int)l;
    fb[i] = layer_fb(c, j, r);
    if (cap[i] < 1) return false;
    total += cap[i];
  }
  return total >= j->layers;
}

bool plan_split_layers(const plan_cluster *c, const plan_job *j, plan_placement *p) {
  static _Thread_local double fb[PLAN_MAX_STAGES];
  static _Thread_local int cap[PLAN_MAX_STAGES];
  p->stages = 0;
  for (int s = 0; s < p->nseg; s++)
    p->stages += p->seg[s].gpus;
  if (p->nseg < 1 || p->stages < 1 || p->stages > j->layers || p->stages > PLAN_MAX_STAGES)
    return false;
  if (!stage_limits(c, j, p, fb, cap)) return false;
  double lo = 0, hi = 0;
  for (int i = 0; i < p->stages; i++)
    hi = CORE_MAX(hi, fb[i] * cap[i]);
  for (int it = 0; it < 100 && hi - lo > hi * 1e-12; it++) {
    double mid = (lo + hi) / 2;
    long sum = 0;
    bool ok = true;
    for (int i = 0; i < p->stages && ok; i++) {
      int l = layers_at(mid, fb[i], cap[i]);
      ok = l >= 1;
      sum += l;
    }
    if (ok && sum >= j->layers)
      hi = mid;
    else
      lo = mid;
  }
  long sum = 0;
  for (int i = 0; i < p->stages; i++)
    sum += p->layers[i] = (uint16_t)layers_at(hi, fb[i], cap[i]);
  while (sum > j->layers) { /* trim the stage that finishes last, the front one on ties */
    int worst = -1;
    for (int i = 0; i < p->stages; i++)
      if (p->layers[i] > 1 && (worst < 0 || p->layers[i] * fb[i] > p->layers[worst] * fb[worst]))
        worst = i;
    p->layers[worst]--;
    sum--;
  }
  return true;
}

double plan_hop_time(const plan_cluster *c, const plan_job *j, int a, int b, int sharers) {
  const plan_link *l = plan_link_at(c, a, b);
  if (l->Bps <= 0) return INFINITY;
  return l->latency_s + plan_job_boundary_bytes(j) * CORE_MAX(sharers, 1) / l->Bps;
}

double plan_stage_fb_max(const plan_cluster *c, const plan_job *j, const plan_placement *p) {
  double worst = 0;
  for (int i = 0; i < p->stages; i++)
    worst = CORE_MAX(worst, p->layers[i] * layer_fb(c, j, stage_region(p, i)));
  return worst;
}

double plan_iter_time(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                      const int *share, int extra) {
  double bytes = plan_job_boundary_bytes(j), fill = 0, beat = 0;
  int prev = -1;
  for (int s = 0; s < p->nseg; s++) {
    int r = p->seg[s].region;
    double intra = bytes / c->regions[r].intra_Bps;
    fill += 2.0 * intra * (p->seg[s].gpus - 1);
    if (p->seg[s].gpus > 1) beat = CORE_MAX(beat, intra);
    if (prev >= 0) {
      const plan_link *l = plan_link_at(c, prev, r);
      int n = (share ? share[(size_t)prev * (size_t)c->nregions + (size_t)r] : 0) + extra;
      double b = l->Bps > 0 ? bytes * CORE_MAX(n, 1) / l->Bps : INFINITY;
      fill += 2.0 * (l->latency_s + b);
      beat = CORE_MAX(beat, b);
    }
    prev = r;
  }
  for (int i = 0, stage = 0; stage < p->nseg; stage++)
    for (int g = 0; g < p->seg[stage].gpus; g++, i++) {
      double fb = p->layers[i] * layer_fb(c, j, p->seg[stage].region);
      fill += fb;
      beat = CORE_MAX(beat, fb);
    }
  return fill + (j->microbatches - 1) * beat;
}

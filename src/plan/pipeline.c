/* pipeline.c: the pipeline time model: layers over uneven stages, 1F1B over uneven links.
 *
 * One GPU is one stage. A stage of l layers on GPU type g takes F = l x (forward FLOPs per
 * layer) / (peak(g) x MFU) per micro-batch forward and B = 2F backward. Each boundary between
 * stages carries one activation tensor forward and one gradient back per micro-batch: inside a
 * region in bytes / intra bandwidth, across regions in latency + bytes / (bandwidth / sharers),
 * the link's bandwidth split evenly among the jobs crossing it.
 *
 * With m micro-batches, a 1F1B iteration is one micro-batch's round trip R (every stage's F + B
 * and every hop twice, latency and transfer) plus m - 1 beats. The beat is the slowest resource
 * (a stage's F + B, a link's transfer: full duplex, one micro-batch each way per beat) or, when
 * latency is long, the cap on micro-batches in flight: stage i may hold at most min(S - i, m),
 * and when that is fewer than m each must come back from the end of the pipeline before
 * the next may start, so
 *
 *     T = R + (m - 1) max(max_i (F_i + B_i), max_h beta_h, max_{i: S-i<m} R_i / (S - i))
 *
 * R_i being the round trip from stage i (Narayanan et al., SC'21, Sec. 2.2, generalised to uneven
 * stages and links as in Yuan et al., NeurIPS'22, Sec. 3; the cap term is ours, held to an event
 * replay in tests/unit/test_plan_replay.c). GPipe runs all forwards, then all backwards: each
 * phase one pass plus m - 1 of its own beats.
 *
 * The split gives layers in proportion to speed within memory: the least bottleneck time tau
 * such that every stage can take min(memory cap, tau / per-layer time) layers summing to L,
 * found by bisection; the surplus is trimmed from the slowest stages. A stage i of S keeps
 * min(S - i, m) micro-batches of activations in flight (1F1B's bound, Narayanan et al.,
 * Sec. 2.2.1), so the first stages hold the most; job.c says what one layer keeps.
 */
#include "plan/plan.h"

#include "core/mix.h"
#include "plan/memo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Splits are kept by what decides them: the job's shape, and each segment's GPU type (speed,
 * memory) and count, in order, under the cluster's MFU and usable memory. The planner asks for
 * the same few splits many thousand times. Pipelines of up to SPLIT_KEPT_STAGES stages. */
#define SPLITS 4096
#define SPLIT_KEPT_STAGES 128
typedef struct kept_split {
  uint64_t key;
  int stages;
  bool ok;
  uint16_t layers[SPLIT_KEPT_STAGES];
} kept_split;

static uint64_t mix_in(uint64_t h, double v) {
  uint64_t t;
  memcpy(&t, &v, sizeof t);
  t ^= h;
  return core_splitmix64(&t);
}

static uint64_t split_key(const plan_cluster *c, const plan_job *j, const plan_placement *p) {
  uint64_t h = 0x9e3779b97f4a7c15u;
  double shape[] = {j->params,       j->layers,      j->hidden, j->seq_len,     j->mb_seqs,
                    j->microbatches, j->dtype_bytes, c->mfu,    c->mem_fraction};
  for (size_t i = 0; i < CORE_ARRAY_LEN(shape); i++)
    h = mix_in(h, shape[i]);
  for (int s = 0; s < p->nseg; s++) {
    const plan_gpu_type *t = &c->types[c->regions[p->seg[s].region].type];
    h = mix_in(mix_in(mix_in(h, t->peak_flops), t->memory_bytes), p->seg[s].gpus);
  }
  return h | 1; /* 0 marks an empty slot */
}

static bool split_uncached(const plan_cluster *c, const plan_job *j, plan_placement *p);

void plan_splits_free(struct kept_split *k) {
  free(k);
}

bool plan_split_layers(const plan_cluster *c, const plan_job *j, plan_placement *p) {
  return plan_split_layers_kept(NULL, c, j, p);
}

bool plan_split_layers_kept(plan_memo *memo, const plan_cluster *c, const plan_job *j,
                            plan_placement *p) {
  p->stages = 0;
  for (int s = 0; s < p->nseg; s++)
    p->stages += p->seg[s].gpus;
  if (p->nseg < 1 || p->stages < 1 || p->stages > j->layers || p->stages > PLAN_MAX_STAGES)
    return false;
  if (memo == NULL || p->stages > SPLIT_KEPT_STAGES) return split_uncached(c, j, p);
  if (memo->splits == NULL && (memo->splits = calloc(SPLITS, sizeof *memo->splits)) == NULL)
    return split_uncached(c, j, p);
  uint64_t key = split_key(c, j, p);
  kept_split *k = &memo->splits[key & (SPLITS - 1)];
  if (k->key != key || k->stages != p->stages) {
    k->key = key;
    k->stages = p->stages;
    k->ok = split_uncached(c, j, p);
    memcpy(k->layers, p->layers, (size_t)p->stages * sizeof p->layers[0]);
  }
  memcpy(p->layers, k->layers, (size_t)p->stages * sizeof p->layers[0]);
  return k->ok;
}

static bool split_uncached(const plan_cluster *c, const plan_job *j, plan_placement *p) {
  static _Thread_local double fb[PLAN_MAX_STAGES];
  static _Thread_local int cap[PLAN_MAX_STAGES];
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
    if (worst < 0) return false; /* every stage down to one layer: more stages than layers */
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

/* Each stage's forward+backward seconds per micro-batch into fb[], and each hop's (between
 * stage i and i + 1) latency and transfer seconds into lat[] and beta[]: the pipeline as the
 * time model and the plan JSON see it. Returns the stage count. */
int plan_pipeline_times(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                        const int *share, int extra, double *fb, double *lat, double *beta) {
  double bytes = plan_job_boundary_bytes(j);
  int i = 0;
  for (int s = 0; s < p->nseg; s++) {
    int r = p->seg[s].region;
    double per_layer = layer_fb(c, j, r), intra = bytes / c->regions[r].intra_Bps;
    for (int g = 0; g < p->seg[s].gpus; g++, i++) {
      fb[i] = p->layers[i] * per_layer;
      if (i == 0) continue;
      lat[i - 1] = 0;
      beta[i - 1] = intra;
      if (g > 0) continue;
      int prev = p->seg[s - 1].region; /* the first stage of a later segment: a link */
      const plan_link *l = plan_link_at(c, prev, r);
      /* every copy of a DP x PP job crosses the link: a job not yet counted adds them all */
      int n = (share ? share[(size_t)prev * (size_t)c->nregions + (size_t)r] : 0) +
              extra * plan_replicas(p);
      lat[i - 1] = l->latency_s;
      beta[i - 1] = l->Bps > 0 ? bytes * CORE_MAX(n, 1) / l->Bps : INFINITY;
    }
  }
  return i;
}

/* 1 / n for span lengths, so that the span loop below multiplies instead of dividing. */
static double inverse[PLAN_MAX_STAGES + 1];
__attribute__((constructor)) static void fill_inverse(void) {
  for (int n = 1; n <= PLAN_MAX_STAGES; n++)
    inverse[n] = 1.0 / n;
}

/* The 1F1B closed form (the header's): one round trip, then m - 1 beats of the slowest stage or
 * link, plus what the worst cycle adds. Over stages i..k (n of them, stage i alternating, that
 * is S - i < m), micro-batch j + n's backward on stage k waits for j's to go back to stage i,
 * for stage i's next forward, and for that to come forward to k again: n micro-batches take at
 * least the span's round trip. The S - k - 1 warm-up forwards of stage k run before any such
 * wait, so the cycle slows only the m - 1 - (S - k - 1) beats after them. O(S^2) over the
 * spans, from prefix sums. */
static double one_f_one_b(int S, int m, const double *fb, const double *lat, const double *beta) {
  static _Thread_local double pre[PLAN_MAX_STAGES + 1]; /* pre[i]: round trip of stages 0..i-1 */
  double beat = 0, extra = 0;
  pre[0] = 0;
  for (int i = 0; i < S; i++) {
    beat = CORE_MAX(beat, fb[i]);
    pre[i + 1] = pre[i] + fb[i];
    if (i < S - 1) {
      beat = CORE_MAX(beat, beta[i]);
      pre[i + 1] += 2 * (lat[i] + beta[i]);
    }
  }
  /* only spans with beats left after their warm-up: k > S - m and k - i < m - 1 */
  for (int i = CORE_MAX(0, S - m + 1); i < S; i++)
    for (int k = i + 1; k < S && k - i < m - 1; k++) { /* stages i..k, the k - i hops between */
      double span = pre[k + 1] - pre[i] - (k < S - 1 ? 2 * (lat[k] + beta[k]) : 0);
      double slower = span * inverse[k - i + 1] - beat;
      int beats = m - 1 - CORE_MAX(S - k - 1, k - i);
      if (slower * beats > extra) extra = slower * beats;
    }
  return pre[S] + (m - 1) * beat + extra;
}

/* GPipe: every forward, then every backward; each phase one pass plus m - 1 of its own beats
 * (B = 2F on every stage, so the backward's stage term is twice the forward's). */
static double gpipe(int S, int m, const double *fb, const double *lat, const double *beta) {
  double pass = 0, fwd_beat = 0, bwd_beat = 0;
  for (int i = 0; i < S; i++) {
    pass += fb[i];
    fwd_beat = CORE_MAX(fwd_beat, fb[i] / 3);
    bwd_beat = CORE_MAX(bwd_beat, 2 * fb[i] / 3);
    if (i < S - 1) {
      pass += 2 * (lat[i] + beta[i]);
      fwd_beat = CORE_MAX(fwd_beat, beta[i]);
      bwd_beat = CORE_MAX(bwd_beat, beta[i]);
    }
  }
  return pass + (m - 1) * (fwd_beat + bwd_beat);
}

double plan_schedule_time(plan_schedule sched, int S, int m, const double *fb, const double *lat,
                          const double *beta) {
  if (S < 1 || S > PLAN_MAX_STAGES || m < 1) return INFINITY;
  return sched == PLAN_GPIPE ? gpipe(S, m, fb, lat, beta) : one_f_one_b(S, m, fb, lat, beta);
}

double plan_iter_time_sched(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                            const int *share, int extra, plan_schedule sched) {
  static _Thread_local double fb[PLAN_MAX_STAGES], lat[PLAN_MAX_STAGES], beta[PLAN_MAX_STAGES];
  int S = plan_pipeline_times(c, j, p, share, extra, fb, lat, beta);
  /* DP x PP: each copy's pipeline, then the gradient all-reduce, not overlapped (dp.c) */
  return plan_schedule_time(sched, S, plan_dp_microbatches(j, p), fb, lat, beta) +
         plan_dp_allreduce_s(c, j, p);
}

double plan_iter_time(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                      const int *share, int extra) {
  return plan_iter_time_sched(c, j, p, share, extra, PLAN_1F1B);
}

/* pathfind.c: BACE-Pipe's bandwidth-aware pathfinder.
 *
 * A pipeline is a chain of regions, so the path grows region by region from a start, at either
 * end, like Prim's algorithm on the fastest links: among the links from the chain's two ends to
 * regions not on it that have free GPUs, the one with the most bandwidth left for this job
 * (bandwidth / (jobs crossing it + 1)) is tried first. A link is accepted only if its
 * per-micro-batch transfer time (latency + bytes / that share) does not exceed the stage
 * compute time the job would have with the GPUs the chain then holds (up to kmax), and every
 * link already on the chain still passes at that stage time: then no link is slower than a
 * stage and communication never stalls the pipeline. The chain stops growing once it holds kmax
 * free GPUs, when no link passes, or at PLAN_MAX_PATH regions.
 *
 * The stage compute time at k GPUs is that of ceil(L / k) layers on the chain's average GPU
 * (weighted by free GPUs), forward and backward: the even split the allocator will make.
 *
 * With check_links off (the ablation) the chain grows through the cheapest regions instead and
 * takes every link.
 */
#include "plan/plan.h"

#include "core/mix.h"
#include "plan/memo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct chain {
  plan_path *p;
  double speed_sum; /* sum over the chain's free GPUs of effective FLOP/s */
  double worst_hop; /* slowest accepted link, per micro-batch */
  double layer_fb;  /* FLOPs of one layer's forward and backward, one micro-batch */
  double bytes;     /* bytes across a stage boundary per micro-batch */
} chain;

static double speed(const plan_cluster *c, int r) {
  return c->types[c->regions[r].type].peak_flops * c->mfu;
}

/* Stage forward+backward time at k GPUs over a chain of `free` GPUs summing `speed_sum`. */
static double stage_time(const plan_job *j, const chain *ch, int k, int free, double speed_sum) {
  double avg = speed_sum / free;
  double layers = ceil((double)j->layers / k);
  return layers * ch->layer_fb / avg;
}

/* plan_hop_time with the job's boundary bytes worked out once per chain. */
static double hop_time(const plan_link *l, const chain *ch, int sharers) {
  return l->Bps > 0 ? l->latency_s + ch->bytes * CORE_MAX(sharers, 1) / l->Bps : INFINITY;
}

static bool on_chain(const plan_path *p, int r) {
  for (int i = 0; i < p->n; i++)
    if (p->region[i] == r) return true;
  return false;
}

/* Considers linking r at end `end` of the chain; keeps it in *best if it beats what is there. */
static void consider(const plan_state *s, const plan_queued *q, const chain *ch, int end, int r,
                     int kmax, bool check_links, int *best, int *best_end, double *best_key) {
  const plan_cluster *c = s->c;
  size_t n = (size_t)c->nregions;
  const plan_link *l = plan_link_at(c, end, r);
  if (l->Bps <= 0) return;
  int sharers = s->share[(size_t)end * n + (size_t)r] + 1;
  double key;
  if (check_links) {
    int free = ch->p->free_gpus + s->free[r];
    int k = CORE_MIN(kmax, free);
    double tau = stage_time(q->job, ch, k, free, ch->speed_sum + s->free[r] * speed(c, r));
    double hop = hop_time(l, ch, sharers);
    if (CORE_MAX(hop, ch->worst_hop) > tau) return;
    key = l->Bps / sharers;
  } else {
    key = -plan_price_at(&c->regions[r], s->now);
  }
  if (*best < 0 || key > *best_key) {
    *best = r;
    *best_end = end;
    *best_key = key;
  }
}

static void grow(const plan_state *s, chain *ch, int r, int end) {
  plan_path *p = ch->p;
  const plan_cluster *c = s->c;
  size_t n = (size_t)c->nregions;
  double hop = hop_time(plan_link_at(c, end, r), ch, s->share[(size_t)end * n + (size_t)r] + 1);
  ch->worst_hop = CORE_MAX(ch->worst_hop, hop);
  if (end == p->region[0] && p->n > 1) { /* at the head */
    memmove(&p->region[1], &p->region[0], (size_t)p->n * sizeof p->region[0]);
    p->region[0] = r;
  } else {
    p->region[p->n] = r;
  }
  p->n++;
  p->free_gpus += s->free[r];
  ch->speed_sum += s->free[r] * speed(c, r);
}

void plan_pathfind(const plan_state *s, const plan_queued *q, int start, int kmax, bool check_links,
                   plan_path *out) {
  const plan_cluster *c = s->c;
  /* out is only written through ch.path, never read before (cppcheck cannot follow it) */
  // cppcheck-suppress ctuuninitvar
  chain ch = {out, s->free[start] * speed(c, start), 0, 3.0 * plan_job_layer_fwd_flops(q->job),
              plan_job_boundary_bytes(q->job)};
  out->n = 1;
  out->region[0] = start;
  out->free_gpus = s->free[start];
  while (out->free_gpus < kmax && out->n < PLAN_MAX_PATH) {
    int best = -1, best_end = -1;
    double best_key = 0;
    int ends[2] = {out->region[0], out->region[out->n - 1]};
    for (int e = 0; e < (out->n > 1 ? 2 : 1); e++)
      for (int r = 0; r < c->nregions; r++)
        if (s->free[r] > 0 && !on_chain(out, r))
          consider(s, q, &ch, ends[e], r, kmax, check_links, &best, &best_end, &best_key);
    if (best < 0) break;
    grow(s, &ch, best, best_end);
  }
  out->k = CORE_MIN(kmax, out->free_gpus);
}

/* On the idle cluster (s's memo keeps one), whether a chain from some start holds the job's
 * memory floor with every link checked. */
static bool linked_on_idle(const plan_state *s, const plan_queued *q) {
  plan_memo *m = s->memo;
  if (m->idle == NULL) {
    m->idle = calloc(1, sizeof *m->idle);
    if (m->idle == NULL || plan_state_init(m->idle, s->c, NULL) != TERN_OK) {
      free(m->idle);
      m->idle = NULL;
      return true; /* without memory: as before, the link check alone */
    }
    plan_state_share_memo(m->idle, s);
  }
  plan_path path;
  for (int r = 0; r < s->c->nregions; r++) {
    int kstar = plan_kstar_at(s->c, q->d, r);
    if (kstar < 1) continue;
    plan_pathfind(m->idle, q, r, kstar, true, &path);
    if (path.k >= plan_smin_path(s->c, q->d, path.region, path.n)) return true;
  }
  return false;
}

bool plan_linked_can_hold(const plan_state *s, const plan_queued *q) {
  if (s->memo == NULL) return true;
  uint64_t h = (uint64_t)q->job->layers << 40 ^ (uint64_t)q->job->hidden << 8 ^
               (uint64_t)q->job->microbatches;
  linked_can *e = &s->memo->linked[core_splitmix64(&h) % LINKED_CAN];
  if (!e->set || !plan_job_same_shape(&e->shape, q->job)) {
    e->can = linked_on_idle(s, q);
    e->shape = *q->job;
    e->set = true;
  }
  return e->can;
}

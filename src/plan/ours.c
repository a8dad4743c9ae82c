/* ours.c: tern's policy: shortest run first, BACE-Pipe's pathfinder, and a choice among more
 * placements, each scored on the job's own objective (docs/PLANNING.md, "Ours").
 *
 *  1. More candidates. From every start region the pathfinder grows a chain for the K* of the
 *     start's GPU type, and the start region alone is a candidate too (up to its K*); on a chain
 *     the job may take the chain's GPUs (up to K*), or only as many as its slowest stage
 *     needs (trim: ceil(L / ceil(L / k)) run as fast), or, when the queue asks for more GPUs
 *     than are free, its energy-delay count (least K T^2, Gonzalez and Horowitz, IEEE JSSC
 *     1996) so that a crowded cluster runs more jobs at once; while it asks for fewer, the
 *     region alone may also run 2 to PLAN_MAX_REPLICAS copies of the pipeline (DP x PP).
 *  2. One score for all of them: predicted run time over the least run time among them, plus
 *     the cost weight times predicted cost over the least cost among them. Both terms are
 *     ratios, so the score trades a percent of time for a percent of cost whatever the job's
 *     size, and it needs no constant fitted to a scenario. The weights are the job's objective
 *     (plan_objective: 1 and 1 by default). For a job that states no objective, an option
 *     much slower than the fastest (SLOWER_LOOSE, SLOWER_FAST) is not taken.
 *  3. Start or wait: a job short of its K* replays the next releases of the running jobs (up to
 *     LOOKAHEAD) and stays queued if a later start scores better, the wait counted in its time.
 *     It is planned again at the next event.
 *  4. The job's objective: a deadline or a budget comes before the score (the options that keep
 *     them first, then the least late or over), and a job that states an objective may start at
 *     a later, cheaper UTC hour when that scores better; it asks the caller to plan it again then
 *     (plan_state_wake).
 *  5. When no chain the link check accepts could hold the job even on the idle cluster, chains
 *     grow without it (cheapest regions first): a job the cluster can hold is never refused.
 * What is kept between calls lives in the state's memo (struct ours_memo), never in statics.
 */
#include "plan/plan.h"

#include "core/mix.h"
#include "plan/memo.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Releases looked at: the next few completions decide nearly every case, and each costs a
 * whole choice (tests/unit/test_plan_scale.c times a 1,000-job workload). */
#define LOOKAHEAD 3

/* What one start region offers: the region alone, the chain, trimmed, EDP-sized, and DP x PP
 * with 2 to PLAN_MAX_REPLICAS copies. */
#define OFFER_MAX (4 + PLAN_MAX_REPLICAS - 1)
/* Options whose cost choose's first pass keeps for its second; past these it prices again. */
#define OPTION_COSTS 4096

enum {
  OURS_WAIT = 16u,
  OURS_EDP = 32u,
  OURS_DP = 64u,
  OURS_FAST = 128u,      /* the tight floor under the JCT side (SLOWER_FAST) */
  OURS_UNCHECKED = 256u, /* chains grown without the link check (point 5; choose sets it) */
  OURS_FASTEST = 512u,   /* "far slower" counted from the fastest GPU type (plan_demand) */
  OURS_SPEED = 1024u,    /* the default objective weighs JCT SPEED_W_JCT times (ours-speed) */
  OURS_FLAGS = PLAN_BACE_TRIM | OURS_WAIT | OURS_EDP | OURS_DP
};

/* An option more than this much slower than the fastest is never taken, whatever it saves: a
 * floor under the JCT side of the default objective (a job's stated objective replaces it).
 * ours-online has the loose floor, ours-fast the
 * tight one; the portfolio `ours` runs both (docs/PLANNING.md gives the measured choice). */
#define SLOWER_LOOSE 0.50
#define SLOWER_FAST 0.20

/* ours-speed's weight on run time for a job that states no objective (cost keeps 1): every
 * other member trades time for cost alike (energy-delay sizing, 1 and 1), and where a rival
 * is faster than all of them the portfolio needs one that leans the other way
 * (docs/PLANNING.md, "Ours", point 0). */
#define SPEED_W_JCT 4.0

/* An option that breaks the job's deadline or budget scores this much per unit of lateness
 * (over the deadline) or excess (over the budget): any option that keeps them wins. */
#define BROKEN_PROMISE 1e6

typedef struct option {
  plan_placement p;   /* regions and GPUs; the layers are split once chosen (ours_place) */
  double run_s, cost; /* predicted from now (or from the release it waits for) */
  double wait_s;
  int kstar;
} option;

/* What one start region offers a job of one shape on one state: at most OFFER_MAX placements
 * and the iteration time of each. Computing it (pathfinder, layer splits, the time model) is
 * nearly all of ours' cost, and it depends on the state, the time and the job's shape only, so
 * it is kept in a table keyed by those: jobs of one shape queued together, and the lookahead's
 * replayed states, share it. */
typedef struct start_offer {
  uint64_t version;
  double now;
  const plan_job *shape;
  int region;
  unsigned mode; /* contended and the flags that change the offer */
  int n, kstar;
  plan_seg seg[OFFER_MAX][PLAN_MAX_PATH];
  int nseg[OFFER_MAX], replicas[OFFER_MAX];
  double iter[OFFER_MAX];
} start_offer;
#define OFFERS 4096 /* a power of two; a collision only recomputes */

/* The predicted iteration of a job shape on a chain depends on the chain (regions, GPUs, copies)
 * and the jobs on its links only, not on the rest of the state: kept by those, so that a new
 * state version, which changes few chains, recomputes few (tests/plan/speed.sh). */
typedef struct chain_time {
  plan_job shape; /* a copy: the job it came from may be freed */
  uint64_t cluster_id;
  bool set;
  int n, replicas;
  int region[PLAN_MAX_PATH], gpus[PLAN_MAX_PATH], share[PLAN_MAX_PATH];
  double iter; /* INFINITY: does not fit or does not run */
} chain_time;
#define CHAIN_TIMES 8192 /* a power of two; a collision only recomputes */

/* A job shape's iteration time at its K* in region r alone, idle links: it depends on the shape
 * and the region only, so it is kept (a collision only recomputes). */
typedef struct alone_time {
  plan_job shape; /* a copy: the job it came from may be freed */
  uint64_t cluster_id;
  bool set;
  int region;
  bool fits;
  plan_placement p;
  double iter;
} alone_time;
#define ALONE_TIMES 1024 /* a power of two */

/* The states after the next 1, 2, ... LOOKAHEAD releases, built once per planning state and
 * time and shared by every job that looks ahead from it. */
typedef struct replays {
  const plan_cluster *c;
  int nregions; /* what after[] and freed[] are sized for */
  uint64_t version;
  double now;
  int n;
  plan_state after[LOOKAHEAD];
  unsigned char *freed[LOOKAHEAD]; /* the regions releases 0..i give GPUs back in */
} replays;

/* Jobs of one shape and objective that stayed queued on a state: the next one like them, queued
 * behind (the order is shortest first), stays too without looking. With nothing free for the
 * shape that is exact; when the shorter job chose to wait, a longer one would too, as its wait
 * is a smaller part of its run while its options' costs scale with it. */
#define STAYED 64
typedef struct stayed {
  uint64_t version;
  double now;
  const plan_job *shape;
  unsigned flags;
} stayed;

typedef struct options {
  option best, o;
  double score_best;
  double tmin, cmin; /* least run time and cost over the options seen */
  double tfloor;     /* least run time of one pipeline: what the floor is counted from */
  double slower;     /* the floor: SLOWER_LOOSE or SLOWER_FAST; INFINITY under a promise */
  double now;        /* when the options are scored from */
  bool speed;        /* OURS_SPEED: the default objective's weight on JCT is SPEED_W_JCT */
  const plan_job *job;
  int n;
} options;

/* A change to a region's free GPUs at a predicted time: what the wait for a region walks. */
typedef struct gpu_event {
  double t;
  int region, gpus; /* > 0: given back; < 0: held by a job that chose to wait for the region */
} gpu_event;

struct ours_memo {
  start_offer *offers;     /* OFFERS */
  chain_time *chain_times; /* CHAIN_TIMES */
  alone_time *alone_times; /* ALONE_TIMES */
  replays ahead;
  int *freed, nfreed; /* region_later_is_better's free GPUs and their count before a time */
  /* This planning round's events (round_events), sorted by time: the finishes of the jobs placed
   * in it and the GPUs of those that chose to wait for a region */
  gpu_event *ev;
  int nev, cap_ev, ev_placed;
  uint64_t ev_round;
  stayed stays[STAYED];
  options all;                /* the current choice: too big for deep stacks */
  double costs[OPTION_COSTS]; /* choose's first pass's option costs, for its second */
  int ncosts;
  plan_placement p; /* chain_iter's scratch */
};

void plan_ours_memo_free(struct ours_memo *m) {
  if (m == NULL) return;
  for (int i = 0; i < LOOKAHEAD; i++) {
    if (m->ahead.c) plan_state_free(&m->ahead.after[i]);
    free(m->ahead.freed[i]);
  }
  free(m->offers);
  free(m->chain_times);
  free(m->alone_times);
  free(m->freed);
  free(m->ev);
  free(m);
}

/* The state's ours memo, made on first use; NULL without memory (ours_place checks once). */
static struct ours_memo *memo_of(const plan_state *s) {
  plan_memo *pm = s->memo;
  if (pm == NULL) return NULL;
  if (pm->ours == NULL) {
    struct ours_memo *m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    m->offers = calloc(OFFERS, sizeof *m->offers);
    m->chain_times = calloc(CHAIN_TIMES, sizeof *m->chain_times);
    m->alone_times = calloc(ALONE_TIMES, sizeof *m->alone_times);
    if (!m->offers || !m->chain_times || !m->alone_times) {
      plan_ours_memo_free(m);
      return NULL;
    }
    pm->ours = m;
  }
  return pm->ours;
}

static uint64_t offer_hash(const plan_state *s, const plan_job *j, int r, unsigned mode) {
  uint64_t h = s->version ^ ((uint64_t)(unsigned)r << 40) ^ mode, t;
  memcpy(&t, &s->now, sizeof t);
  h ^= core_splitmix64(&t);
  t = (uint64_t)j->layers << 32 ^ (uint64_t)j->hidden ^ (uint64_t)j->microbatches << 20;
  h ^= core_splitmix64(&t);
  return core_splitmix64(&h);
}

static double chain_iter(const plan_state *s, const plan_queued *q, const plan_path *path,
                         const int *gpus, int replicas) {
  struct ours_memo *m = memo_of(s);
  chain_time key = {
      .shape = *q->job, .cluster_id = s->cluster_id, .set = true, .replicas = replicas};
  uint64_t h = (uint64_t)q->job->layers << 40 ^ (uint64_t)q->job->hidden << 16 ^
               (uint64_t)q->job->microbatches << 8 ^ (uint64_t)(unsigned)replicas;
  size_t nr = (size_t)s->c->nregions;
  for (int j = 0; j < path->n; j++) { /* the regions that get GPUs, as plan_build keeps them */
    if (gpus[j] <= 0) continue;
    int i = key.n++;
    key.region[i] = path->region[j];
    key.gpus[i] = gpus[j];
    key.share[i] = i > 0 ? s->share[(size_t)key.region[i - 1] * nr + (size_t)key.region[i]] : 0;
    uint64_t x = h ^ ((uint64_t)(unsigned)key.region[i] << 42 |
                      (uint64_t)(unsigned)key.gpus[i] << 21 | (uint64_t)(unsigned)key.share[i]);
    h = core_splitmix64(&x);
  }
  chain_time *e = &m->chain_times[h & (CHAIN_TIMES - 1)];
  size_t cmp = (size_t)key.n * sizeof(int);
  if (e->set && e->cluster_id == s->cluster_id && e->n == key.n && e->replicas == replicas &&
      plan_job_same_shape(&e->shape, q->job) && !memcmp(e->region, key.region, cmp) &&
      !memcmp(e->gpus, key.gpus, cmp) && !memcmp(e->share, key.share, cmp))
    return e->iter;
  key.iter = INFINITY;
  if (plan_build_at(s, q->job, path->region, gpus, path->n, &m->p)) {
    m->p.replicas = replicas;
    key.iter = plan_predict_iter(s, q->job, &m->p);
  }
  *e = key;
  return e->iter;
}
/* Adds `replicas` copies of k GPUs over path (cost-min fill) to the offer if they fit and run. */
static void offer_add(const plan_state *s, const plan_queued *q, const plan_path *path, int k,
                      int replicas, start_offer *o) {
  int gpus[PLAN_MAX_PATH];
  plan_alloc_costmin(s, path->region, path->n, k, gpus);
  double iter = chain_iter(s, q, path, gpus, replicas);
  if (!isfinite(iter)) return;
  plan_seg seg[PLAN_MAX_PATH] = {0}; /* as plan_build makes them: the regions that get GPUs */
  int nseg = 0;
  for (int i = 0; i < path->n; i++)
    if (gpus[i] > 0) seg[nseg++] = (plan_seg){path->region[i], gpus[i]};
  memcpy(o->seg[o->n], seg, (size_t)nseg * sizeof seg[0]);
  o->nseg[o->n] = nseg;
  o->replicas[o->n] = replicas;
  o->iter[o->n++] = iter;
}

/* DP x PP in region r alone: d copies of K* stages each, for d = 2 up to PLAN_MAX_REPLICAS,
 * where the region has d K* GPUs free: GPUs one pipeline cannot use. The score then weighs the
 * copies' speed against the GPUs they hold. Offered only while the queue asks for fewer GPUs than
 * are free: on a contended cluster the copies' GPUs are those another job waits for, which the
 * job's own score does not see (measured on the family: docs/PLANNING.md, "DP x PP"). */
static void offer_replicas(const plan_state *s, const plan_queued *q, int r, start_offer *o) {
  int k = o->kstar;
  for (int d = 2; d <= PLAN_MAX_REPLICAS && d <= q->job->microbatches && d * k <= s->free[r]; d++) {
    plan_path alone = {1, {r}, s->free[r], k};
    offer_add(s, q, &alone, k, d, o);
  }
}

static void offer_compute(const plan_state *s, const plan_queued *q, unsigned flags, int r,
                          start_offer *o) {
  const plan_cluster *c = s->c;
  o->n = 0;
  o->kstar = plan_kstar_at(c, q->d, r);
  if (s->free[r] <= 0 || o->kstar < 1) return;
  plan_path path, alone = {1, {r}, s->free[r], CORE_MIN(o->kstar, s->free[r])};
  plan_pathfind(s, q, r, o->kstar, !(flags & OURS_UNCHECKED), &path);
  if (path.n > 1 && alone.k >= q->d->smin[c->regions[r].type]) /* as the single-region ones */
    offer_add(s, q, &alone, alone.k, 1, o);
  if ((flags & OURS_DP) && !s->contended) offer_replicas(s, q, r, o);
  if (path.k < plan_smin_path(c, q->d, path.region, path.n)) return;
  int layers = q->job->layers, ks[3] = {path.k, 0, 0};
  if (path.k < o->kstar) ks[1] = (int)ceil(layers / ceil((double)layers / path.k));
  if (s->contended && (flags & OURS_EDP) && q->d->kedp < path.k) ks[2] = q->d->kedp;
  for (int i = 0; i < 3; i++)
    if (ks[i] >= path.n && ks[i] >= 1 && (i == 0 || ks[i] < path.k))
      offer_add(s, q, &path, ks[i], 1, o);
}

/* The offer of start region r, from the table or computed into it. */
static const start_offer *offer_of(const plan_state *s, const plan_queued *q, unsigned flags,
                                   int r) {
  unsigned mode = (flags & (OURS_EDP | OURS_DP | OURS_UNCHECKED)) | (s->contended ? 1u : 0u);
  start_offer *o = &memo_of(s)->offers[offer_hash(s, q->job, r, mode) & (OFFERS - 1)];
  if (o->shape != NULL && o->version == s->version && o->now == s->now && o->region == r &&
      o->mode == mode && plan_job_same_shape(o->shape, q->job))
    return o;
  offer_compute(s, q, flags, r, o);
  o->version = s->version;
  o->now = s->now;
  o->shape = q->job;
  o->region = r;
  o->mode = mode;
  return o;
}

/* Every option of a state into the running minima (first pass) or the score (second pass). */
typedef void (*visit_fn)(options *all, const option *o);

static void visit_minima(options *all, const option *o) {
  all->tmin = fmin(all->tmin, o->wait_s + o->run_s);
  /* DP x PP's copies buy speed with GPUs: the floor under the JCT side is set by single
   * pipelines, or the fastest copies would rule out every cheaper option */
  if (plan_replicas(&o->p) == 1) all->tfloor = fmin(all->tfloor, o->wait_s + o->run_s);
  all->cmin = fmin(all->cmin, o->cost);
}

/* How far an option breaks the job's promises: lateness over its deadline plus excess over its
 * budget, each relative to it; 0 when it keeps both. */
static double broken(const options *all, const option *o) {
  const plan_objective *ob = &all->job->objective;
  double v = 0;
  if (ob->deadline_s > 0) {
    double late = all->now + o->wait_s + o->run_s - (all->job->arrival_s + ob->deadline_s);
    if (late > 0) v += late / ob->deadline_s;
  }
  if (ob->budget_usd > 0 && o->cost > ob->budget_usd)
    v += (o->cost - ob->budget_usd) / ob->budget_usd;
  return v;
}

static double score(const options *all, const option *o) {
  const plan_objective *ob = &all->job->objective;
  double wt = ob->given ? ob->w_jct : (all->speed ? SPEED_W_JCT : 1); /* a job made in code */
  double wc = ob->given ? ob->w_cost : 1;
  return BROKEN_PROMISE * broken(all, o) + wt * (o->wait_s + o->run_s) / all->tmin +
         wc * o->cost / all->cmin;
}

static void visit_score(options *all, const option *o) {
  double floor = isfinite(all->tfloor) ? all->tfloor : all->tmin;
  if (o->wait_s + o->run_s > floor * (1 + all->slower)) return;
  double v = score(all, o);
  if (all->n == 0 || v < all->score_best) {
    all->best = *o;
    all->score_best = v;
  }
  all->n++;
}

/* Prices an option of placement o->p held for o->run_s from now + o->wait_s, then visits it. */
static void visit_priced(const plan_state *s, options *all, option *o, visit_fn fn) {
  double t0 = all->now + o->wait_s;
  o->cost = plan_placement_cost(s->c, &o->p, t0, t0 + o->run_s);
  fn(all, o);
}

/* The options of every start region (only those `only` marks, when given), as s stands, each
 * waiting wait_s. costs, when given, keeps each option's cost in visiting order: filled when
 * *ncosts is 0 (the first pass), read after (the second pass sees the same options). */
static void each_option(const plan_state *s, const plan_queued *q, unsigned flags, double wait_s,
                        const unsigned char *only, options *all, visit_fn fn, double *costs,
                        int *ncosts) {
  double iters = plan_job_iterations(q->job);
  bool fill = costs && *ncosts == 0;
  int k = 0;
  for (int r = 0; r < s->c->nregions; r++) {
    if (s->free[r] <= 0 || (only && !only[r])) continue;
    const start_offer *of = offer_of(s, q, flags, r);
    for (int i = 0; i < of->n; i++) {
      option *o = &all->o;
      o->p.nseg = of->nseg[i];
      o->p.replicas = of->replicas[i];
      memcpy(o->p.seg, of->seg[i], (size_t)of->nseg[i] * sizeof o->p.seg[0]);
      o->wait_s = wait_s;
      o->kstar = of->kstar;
      o->run_s = of->iter[i] * iters;
      if (costs && !fill && k < *ncosts) {
        o->cost = costs[k++];
        fn(all, o);
        continue;
      }
      visit_priced(s, all, o, fn);
      if (fill && k < OPTION_COSTS) costs[k++] = o->cost;
    }
  }
  if (fill) *ncosts = k;
}

/* The best option as s stands; false when the job fits nowhere now. Chains grow without the
 * link check only when none with it could hold the job even on the idle cluster (point 5). */
static bool choose(const plan_state *s, const plan_queued *q, unsigned *flags, options *all) {
  const plan_objective *ob = &q->job->objective;
  struct ours_memo *m = memo_of(s);
  all->n = 0;
  all->now = s->now;
  all->speed = (*flags & OURS_SPEED) != 0;
  all->job = q->job;
  /* the floor guards the default trade only: a stated objective is the user's own */
  all->slower = ob->given ? INFINITY : (*flags & OURS_FAST) ? SLOWER_FAST : SLOWER_LOOSE;
  for (int pass = 0; pass < 2; pass++) {
    all->tmin = all->cmin = all->tfloor = INFINITY;
    m->ncosts = 0;
    each_option(s, q, *flags, 0, NULL, all, visit_minima, m->costs, &m->ncosts);
    if (isfinite(all->tmin)) break;
    if (pass == 1 || plan_linked_can_hold(s, q)) return false;
    *flags |= OURS_UNCHECKED;
  }
  each_option(s, q, *flags, 0, NULL, all, visit_score, m->costs, &m->ncosts);
  return all->n > 0;
}

static const replays *replayed(const plan_state *s) {
  replays *a = &memo_of(s)->ahead;
  int n = CORE_MIN(s->nreleases, LOOKAHEAD);
  bool sized = a->c != NULL && a->nregions == s->c->nregions;
  if (sized && a->c == s->c && a->version == s->version && a->now == s->now && a->n == n) return a;
  if (!sized || a->c != s->c) { /* a cluster freed and another at its address: sizes differ */
    for (int i = 0; i < LOOKAHEAD && a->c; i++)
      plan_state_free(&a->after[i]);
    a->c = NULL;
    for (int i = 0; i < LOOKAHEAD; i++) {
      free(a->freed[i]);
      a->freed[i] = calloc((size_t)s->c->nregions, 1);
      if (a->freed[i] == NULL || plan_state_init(&a->after[i], s->c, NULL) != TERN_OK) return NULL;
      plan_state_share_memo(&a->after[i], s); /* one run: the offers on them are kept alike */
    }
    a->c = s->c;
    a->nregions = s->c->nregions;
  }
  for (int i = 0; i < n; i++) {
    const plan_release *r = &s->releases[i];
    plan_state *later = &a->after[i];
    plan_state_copy(later, i == 0 ? s : &a->after[i - 1]);
    later->nreleases = 0;
    later->contended = s->contended;
    plan_state_apply(later, r->job, r->d, r->p, -1);
    later->now = CORE_MAX(s->now, r->t);
    if (i > 0)
      memcpy(a->freed[i], a->freed[i - 1], (size_t)s->c->nregions);
    else
      memset(a->freed[i], 0, (size_t)s->c->nregions);
    for (int k = 0; k < r->p->nseg; k++)
      a->freed[i][r->p->seg[k].region] = 1;
  }
  a->version = s->version;
  a->now = s->now;
  a->n = n;
  return a;
}

/* At one time, what is given back comes before what is taken. */
static bool event_after(const gpu_event *a, const gpu_event *b) {
  return a->t > b->t || (a->t == b->t && a->gpus < b->gpus);
}

/* Inserts e in time order; without memory it is not kept (the estimate knows less). */
static void event_insert(struct ours_memo *m, gpu_event e) {
  if (m->nev == m->cap_ev) {
    int cap = CORE_MAX(64, 2 * m->cap_ev);
    gpu_event *grown = realloc(m->ev, (size_t)cap * sizeof *grown);
    if (grown == NULL) return;
    m->ev = grown;
    m->cap_ev = cap;
  }
  int k = m->nev++;
  for (; k > 0 && event_after(&m->ev[k - 1], &e); k--)
    m->ev[k] = m->ev[k - 1];
  m->ev[k] = e;
}

/* This round's events: the jobs placed earlier in it (plan_memo's placed) give their GPUs back
 * at their predicted finish, as the running jobs do; the reservations of jobs that chose to wait
 * for a region (region_later_is_better) were added as they chose. A new round starts empty. */
static void round_events(const plan_state *s, struct ours_memo *m) {
  const plan_memo *pm = s->memo;
  if (m->ev_round != pm->rounds) {
    m->nev = m->ev_placed = 0;
    m->ev_round = pm->rounds;
  }
  for (; m->ev_placed < pm->nplaced; m->ev_placed++) {
    const plan_release *r = &pm->placed[m->ev_placed];
    double t = s->now + plan_predict_iter(s, r->job, r->p) * plan_job_iterations(r->job);
    for (int k = 0; k < r->p->nseg; k++)
      event_insert(m, (gpu_event){t, r->p->seg[k].region, plan_seg_gpus(r->p, k)});
  }
}

/* A job that chose to wait holds placement p from start for run_s in this round's events: the
 * jobs behind it in the queue, which it goes before, do not count on the same GPUs. */
static void hold(const plan_state *s, const plan_placement *p, double start, double run_s) {
  struct ours_memo *m = memo_of(s);
  round_events(s, m);
  for (int k = 0; k < p->nseg; k++) {
    int g = plan_seg_gpus(p, k);
    event_insert(m, (gpu_event){start, p->seg[k].region, -g});
    event_insert(m, (gpu_event){start + run_s, p->seg[k].region, g});
  }
}

/* Whether a start after one of the next releases scores better than now's best (then held:
 * hold). Only chains from the regions the releases give GPUs back in are looked at: the others
 * were there now. */
static bool later_is_better(const plan_state *s, const plan_queued *q, unsigned flags,
                            options *all) {
  const replays *a = s->nreleases > 0 ? replayed(s) : NULL;
  double now_score = all->score_best;
  for (int i = 0; a != NULL && i < a->n; i++) {
    const plan_state *later = &a->after[i];
    options then = *all; /* scored against now's minima: one scale for both */
    then.n = 0;
    each_option(later, q, flags, later->now - s->now, a->freed[i], &then, visit_score, NULL, NULL);
    if (then.n > 0 && then.score_best < now_score) {
      hold(s, &then.best.p, s->now + then.best.wait_s, then.best.run_s);
      return true;
    }
  }
  return false;
}

/* The job shape at its K* of region r alone, from the table or computed into it. */
static const alone_time *alone_at(const plan_state *s, const plan_queued *q, int r, int kstar) {
  const plan_cluster *c = s->c;
  uint64_t h = (uint64_t)q->job->layers << 40 ^ (uint64_t)q->job->hidden << 20 ^
               (uint64_t)q->job->microbatches << 8 ^ (uint64_t)(unsigned)r;
  alone_time *a = &memo_of(s)->alone_times[core_splitmix64(&h) & (ALONE_TIMES - 1)];
  if (a->set && a->cluster_id == s->cluster_id && a->region == r &&
      plan_job_same_shape(&a->shape, q->job))
    return a;
  *a = (alone_time){.shape = *q->job, .cluster_id = s->cluster_id, .set = true, .region = r};
  a->fits = plan_build_at(s, q->job, &r, &kstar, 1, &a->p);
  a->iter = a->fits ? plan_iter_time(c, q->job, &a->p, NULL, 0) : INFINITY;
  a->fits = a->fits && isfinite(a->iter);
  return a;
}

/* Whether the option o (placement, wait, run time set) scores better than now's best and is
 * faster, its wait counted: what waiting for it must give. */
static bool worth_waiting(const plan_state *s, options *all, option *o) {
  options then = *all;
  then.n = 0;
  visit_priced(s, &then, o, visit_score);
  return then.n > 0 && then.score_best < all->score_best &&
         o->wait_s + o->run_s < all->best.wait_s + all->best.run_s;
}

/* Not changed at the current time: a count of free GPUs can go below 0 in the estimate (a job
 * that waits holds what the estimate did not see come free). */
#define UNTOUCHED INT_MIN

/* Marks region r changed at the current time, keeping its free GPUs before (freed[n + r]). */
static void touch(int *freed, int n, int *touched, int *ntouched, int r) {
  if (freed[n + r] != UNTOUCHED) return;
  freed[n + r] = freed[r];
  touched[(*ntouched)++] = r;
}

/* Whether waiting for one region to hold the job's K* of its type alone scores better than now's
 * best. The wait is estimated from the predicted releases of the running jobs (s->releases) and
 * this round's events (round_events), in time order: a time at which the region's free GPUs
 * come to reach that K*, as far ahead as the releases go, past the lookahead's few. A job that
 * waits holds its K* there from then for its run, so that the jobs behind it in the queue, which
 * it goes before, do not count on the same GPUs. Only the region alone is priced there (no
 * links to share, so the time model needs no replayed state): what a job short of K* on a slow
 * chain waits for. The job is planned again at every event. */
static bool region_later_is_better(const plan_state *s, const plan_queued *q, options *all) {
  struct ours_memo *m = memo_of(s);
  const plan_cluster *c = s->c;
  int n = c->nregions;
  if (m->nfreed < 3 * n) {
    free(m->freed);
    m->freed = malloc(3 * (size_t)n * sizeof *m->freed);
    m->nfreed = m->freed ? 3 * n : 0;
    if (m->freed == NULL) return false;
  }
  int *freed = m->freed, *touched = m->freed + 2 * n, ntouched = 0, a = 0, b = 0;
  memcpy(freed, s->free, (size_t)n * sizeof *freed);
  for (int r = 0; r < n; r++)
    freed[n + r] = UNTOUCHED;
  round_events(s, m);
  double iters = plan_job_iterations(q->job);
  double floor = (isfinite(all->tfloor) ? all->tfloor : all->tmin) * (1 + all->slower);
  while (a < s->nreleases || b < m->nev) {
    double t = a < s->nreleases ? s->releases[a].t : INFINITY;
    if (b < m->nev) t = fmin(t, m->ev[b].t);
    if (t - s->now > floor) break; /* sorted: every later wait alone is past the floor */
    for (; a < s->nreleases && s->releases[a].t == t; a++)
      for (int k = 0; k < s->releases[a].p->nseg; k++) {
        touch(freed, n, touched, &ntouched, s->releases[a].p->seg[k].region);
        freed[s->releases[a].p->seg[k].region] += plan_seg_gpus(s->releases[a].p, k);
      }
    for (; b < m->nev && m->ev[b].t == t; b++) {
      touch(freed, n, touched, &ntouched, m->ev[b].region);
      freed[m->ev[b].region] += m->ev[b].gpus;
    }
    for (int i = 0; i < ntouched; i++) {
      int r = touched[i], kstar = plan_kstar_at(c, q->d, r), before = freed[n + r];
      freed[n + r] = UNTOUCHED;
      if (kstar < 1 || before >= kstar || freed[r] < kstar) continue; /* not come to K* now */
      const alone_time *at = alone_at(s, q, r, kstar);
      if (!at->fits) continue;
      option *o = &all->o;
      o->p = at->p;
      o->wait_s = CORE_MAX(s->now, t) - s->now;
      o->kstar = kstar;
      o->run_s = at->iter * iters;
      if (!worth_waiting(s, all, o)) continue;
      hold(s, &o->p, s->now + o->wait_s, o->run_s);
      return true;
    }
    ntouched = 0;
  }
  return false;
}

/* A job that states an objective may start its best placement at one of the next 23 UTC hours
 * instead of now, when a cheaper hour scores better with the wait counted (its deadline kept,
 * as the score puts promises first). It then asks to be planned again at that hour; the GPUs
 * may be gone by then, and the job is planned like any other. */
static bool cheaper_hour_is_better(const plan_state *s, options *all) {
  option o = all->best;
  double hour = floor(s->now / 3600), best_t = INFINITY, best_v = all->score_best;
  for (int h = 1; h < 24; h++) {
    double t = (hour + h) * 3600;
    o.wait_s = all->best.wait_s + (t - s->now);
    options then = *all;
    then.n = 0;
    visit_priced(s, &then, &o, visit_score);
    if (then.n > 0 && then.score_best < best_v) {
      best_v = then.score_best;
      best_t = t;
    }
  }
  if (!isfinite(best_t)) return false;
  plan_state_wake(s, best_t);
  return true;
}

/* Shortest run first: what minimises the mean completion time of jobs waiting together. */
static void ours_order(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  (void)pol;
  (void)s;
  plan_order_shortest(q, n);
}

static bool same_objective(const plan_objective *a, const plan_objective *b) {
  return a->w_jct == b->w_jct && a->w_cost == b->w_cost && a->deadline_s == b->deadline_s &&
         a->budget_usd == b->budget_usd && a->given == b->given;
}

static stayed *stay_slot(const plan_state *s, const plan_job *j, unsigned flags) {
  uint64_t h = s->version ^ ((uint64_t)j->layers << 32 | (uint64_t)j->hidden) ^ flags, t;
  memcpy(&t, &s->now, sizeof t);
  h ^= core_splitmix64(&t);
  return &memo_of(s)->stays[core_splitmix64(&h) % STAYED];
}

static bool stays_queued(const plan_state *s, const plan_queued *q, unsigned flags) {
  const stayed *st = stay_slot(s, q->job, flags);
  return st->shape != NULL && st->version == s->version && st->now == s->now &&
         st->flags == flags && plan_job_same_shape(st->shape, q->job) &&
         same_objective(&st->shape->objective, &q->job->objective) &&
         q->job->objective.deadline_s == 0; /* a deadline counts from each job's own arrival */
}

static bool stay(const plan_state *s, const plan_queued *q, unsigned flags) {
  *stay_slot(s, q->job, flags) = (stayed){s->version, s->now, q->job, flags};
  return false;
}

static bool place_with_memo(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                            plan_placement *out) {
  options *all = &memo_of(s)->all;
  unsigned flags = pol->flags;
  if (stays_queued(s, q, pol->flags)) return false;
  if (!choose(s, q, &flags, all)) return stay(s, q, pol->flags);
  int regions[PLAN_MAX_PATH], gpus[PLAN_MAX_PATH], k = 0;
  for (int i = 0; i < all->best.p.nseg; i++) {
    regions[i] = all->best.p.seg[i].region;
    k += gpus[i] = all->best.p.seg[i].gpus;
  }
  /* short of K*, or far slower than at K* alone: a release may offer better */
  double alone = (flags & OURS_FASTEST) ? q->d->iter_fast : q->d->iter_kstar;
  bool short_of = k < all->best.kstar ||
                  all->best.run_s > (1 + all->slower) * alone * plan_job_iterations(q->job);
  if (short_of && (flags & OURS_WAIT) &&
      (region_later_is_better(s, q, all) || later_is_better(s, q, flags, all)))
    return stay(s, q, pol->flags);
  if (q->job->objective.given && cheaper_hour_is_better(s, all)) return stay(s, q, pol->flags);
  if (!plan_build_at(s, q->job, regions, gpus, all->best.p.nseg, out)) return false;
  out->replicas = all->best.p.replicas;
  return true;
}

static bool ours_place(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                       plan_placement *out) {
  if (memo_of(s) != NULL) return place_with_memo(pol, s, q, out);
  /* a state made without a memo (or out of memory for one): one for this call alone */
  plan_state t = *s;
  t.memo = plan_memo_new();
  t.owns_memo = false;
  bool ok = memo_of(&t) != NULL && place_with_memo(pol, &t, q, out);
  plan_memo_free(t.memo);
  return ok;
}

const plan_policy plan_policy_ours_online = {
    "ours-online", "ours' rules alone, planning each round as it comes (no portfolio)", ours_order,
    ours_place, OURS_FLAGS};
const plan_policy plan_policy_ours_fast = {"ours-fast", "ours-online with the tight floor on JCT",
                                           ours_order, ours_place, OURS_FLAGS | OURS_FAST};
const plan_policy plan_policy_ours_fastest = {
    "ours-fastest", "ours-online, waiting looked at when far slower than on the fastest GPU type",
    ours_order, ours_place, OURS_FLAGS | OURS_FASTEST};
const plan_policy plan_policy_ours_trim = {"ours-trim", "ours without EDP sizing, DP or waiting",
                                           ours_order, ours_place, PLAN_BACE_TRIM};
const plan_policy plan_policy_ours_nodp = {"ours-nodp", "ours-online without DP x PP", ours_order,
                                           ours_place, OURS_FLAGS & ~(unsigned)OURS_DP};
const plan_policy plan_policy_ours_nowait = {"ours-nowait", "ours-online without start-or-wait",
                                             ours_order, ours_place,
                                             PLAN_BACE_TRIM | OURS_EDP | OURS_DP};
const plan_policy plan_policy_ours_speed = {
    "ours-speed", "ours-nowait without EDP sizing, run time weighed 4 times cost", ours_order,
    ours_place, PLAN_BACE_TRIM | OURS_DP | OURS_SPEED};

/* BACE-Pipe's priority order (priority.c) instead of shortest run first. Every other member
 * orders the queue alike, so on a crowded cluster, where the order decides who gets the fast
 * region first, they all lose together to a rival whose order does better (docs/PLANNING.md,
 * "Ours", point 0). The rules are ours-speed's with start-or-wait: the rival's order with the
 * lean toward JCT and the waiting for a region that it needs to keep up. */
static void prio_order(const plan_policy *pol, const plan_state *s, plan_queued *q, int n) {
  (void)pol;
  plan_order_priority(s, q, n);
}

const plan_policy plan_policy_ours_prio = {
    "ours-prio", "ours-speed with start-or-wait, in BACE-Pipe's priority order", prio_order,
    ours_place, PLAN_BACE_TRIM | OURS_DP | OURS_SPEED | OURS_WAIT};

extern const plan_policy plan_policy_bace, plan_policy_lcf, plan_policy_ldf, plan_policy_crlcf,
    plan_policy_crldf;
/* the fullest rules first; then ours-nowait, at a tenth of their CPU (results.md); ours-speed,
 * the one that leans toward JCT, and ours-prio, the one in another order, last */
static const plan_policy *const ours_members[] = {&plan_policy_ours_online,
                                                  &plan_policy_ours_nowait,
                                                  &plan_policy_ours_fast,
                                                  &plan_policy_ours_fastest,
                                                  &plan_policy_ours_speed,
                                                  &plan_policy_ours_prio,
                                                  NULL};
static const plan_policy *const ours_rivals[] = {&plan_policy_bace,  &plan_policy_lcf,
                                                 &plan_policy_ldf,   &plan_policy_crlcf,
                                                 &plan_policy_crldf, NULL};
const plan_policy plan_policy_ours = {
    "ours",
    "portfolio of ours-online, -nowait, -fast, -fastest, -speed, -prio, "
    "kept against BACE-Pipe and baselines",
    ours_order,
    ours_place,
    OURS_FLAGS,
    ours_members,
    ours_rivals};

/* jobs.c: the event-driven job-queue simulator (see jobs.h).
 *
 * State: the planner's view (free GPUs, jobs per link), the queue, the running jobs with the
 * iterations they have left and their current iteration time, and which job holds each GPU.
 * One step: admit the arrivals due, run a planning round, recompute every running job's
 * iteration time (link shares may have changed), jump to the next arrival or completion,
 * advance every running job, retire the finished ones. A job keeps its placement from start to
 * finish (no preemption, no migration).
 */
#include "sim/jobs.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run {
  const plan_scenario *sc;
  const plan_policy *pol;
  sim_jobs_result *out;
  core_err *err;
  plan_state st;
  plan_demand *d;
  int *by_arrival, next; /* jobs in arrival order; the next to arrive */
  plan_queued *queue;
  int nq;
  plan_placement *decided;
  unsigned char *placed;
  int *running, nrun;
  double *left, *iter_now, *due; /* iterations left, current iteration time, predicted end */
  int *owner, *slot_base;        /* owner[slot_base[r] + g]: the job holding GPU g of region r */
  int *span_first, spans_cap;
  plan_release *releases;
  double t;
} run;

static int cmp_arrival(const void *a, const void *b, void *arg) {
  const plan_job *jobs = arg;
  double x = jobs[*(const int *)a].arrival_s, y = jobs[*(const int *)b].arrival_s;
  if (x != y) return x < y ? -1 : 1;
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static tern_status run_init(run *r) {
  const plan_scenario *sc = r->sc;
  size_t n = (size_t)sc->njobs, gpus = (size_t)plan_cluster_total_gpus(&sc->c);
  tern_status st = plan_state_init(&r->st, &sc->c, r->err);
  if (st != TERN_OK) return st;
  r->out->njobs = sc->njobs;
  r->out->jobs = calloc(n, sizeof *r->out->jobs);
  r->d = calloc(n, sizeof *r->d);
  r->by_arrival = calloc(n, sizeof *r->by_arrival);
  r->queue = calloc(n, sizeof *r->queue);
  r->decided = calloc(n, sizeof *r->decided);
  r->placed = calloc(n, 1);
  r->running = calloc(n, sizeof *r->running);
  r->left = calloc(n, sizeof *r->left);
  r->iter_now = calloc(n, sizeof *r->iter_now);
  r->due = calloc(n, sizeof *r->due);
  r->span_first = calloc(n, sizeof *r->span_first);
  r->owner = malloc(gpus * sizeof *r->owner);
  r->slot_base = calloc((size_t)sc->c.nregions, sizeof *r->slot_base);
  r->releases = calloc(n, sizeof *r->releases);
  if (!r->releases || !r->out->jobs || !r->d || !r->by_arrival || !r->queue || !r->decided ||
      !r->placed || !r->running || !r->left || !r->iter_now || !r->due || !r->span_first ||
      !r->owner || !r->slot_base)
    return core_err_set(r->err, TERN_ERR_NOMEM, "simulator state for %zu jobs", n);
  for (size_t g = 0; g < gpus; g++)
    r->owner[g] = -1;
  for (int k = 1; k < sc->c.nregions; k++)
    r->slot_base[k] = r->slot_base[k - 1] + sc->c.regions[k - 1].gpus;
  for (size_t i = 0; i < n; i++)
    r->by_arrival[i] = (int)i;
  if (!plan_jobs_demand(&sc->c, sc->jobs, sc->njobs, r->d, NULL, r->err))
    return TERN_ERR_INVALID_ARG;
  qsort_r(r->by_arrival, n, sizeof *r->by_arrival, cmp_arrival, sc->jobs);
  return TERN_OK;
}

static void run_free(run *r) {
  plan_state_free(&r->st);
  free(r->d);
  free(r->by_arrival);
  free(r->queue);
  free(r->decided);
  free(r->placed);
  free(r->running);
  free(r->left);
  free(r->iter_now);
  free(r->due);
  free(r->span_first);
  free(r->owner);
  free(r->slot_base);
  free(r->releases);
}

static tern_status add_span(run *r, sim_span span) {
  sim_jobs_result *o = r->out;
  if (o->nspans == r->spans_cap) {
    int cap = r->spans_cap ? 2 * r->spans_cap : 64;
    sim_span *grown = realloc(o->spans, (size_t)cap * sizeof *grown);
    if (grown == NULL) return core_err_set(r->err, TERN_ERR_NOMEM, "%d GPU spans", cap);
    o->spans = grown;
    r->spans_cap = cap;
  }
  o->spans[o->nspans++] = span;
  return TERN_OK;
}

/* Gives job the first `count` free GPUs of region, recording contiguous runs as spans. */
static tern_status take_gpus(run *r, int job, int region, int count) {
  int *own = &r->owner[r->slot_base[region]], n = r->sc->c.regions[region].gpus;
  for (int g = 0; g < n && count > 0; g++) {
    if (own[g] != -1) continue;
    int first = g;
    for (; g < n && own[g] == -1 && count > 0; g++, count--)
      own[g] = job;
    tern_status st = add_span(r, (sim_span){job, region, first, g - first, r->t, -1});
    if (st != TERN_OK) return st;
  }
  return count == 0
             ? TERN_OK
             : core_err_set(r->err, TERN_ERR_INVALID_ARG,
                            "policy '%s' gave job '%s' more GPUs of %s than are free", r->pol->name,
                            r->sc->jobs[job].name, r->sc->c.regions[region].name);
}

static tern_status start_job(run *r, int job, const plan_placement *p) {
  sim_job_out *o = &r->out->jobs[job];
  o->start = r->t;
  o->pl = *p;
  o->iter_pred = plan_iter_time(&r->sc->c, &r->sc->jobs[job], p, r->st.share, 0);
  for (int s = 1; s < p->nseg; s++)
    o->sharers[s] = r->st.share[(size_t)p->seg[s - 1].region * (size_t)r->sc->c.nregions +
                                (size_t)p->seg[s].region];
  r->span_first[job] = r->out->nspans;
  for (int s = 0; s < p->nseg; s++) {
    tern_status st = take_gpus(r, job, p->seg[s].region, plan_seg_gpus(p, s));
    if (st != TERN_OK) return st;
  }
  r->left[job] = plan_job_iterations(&r->sc->jobs[job]);
  r->running[r->nrun++] = job;
  return TERN_OK;
}

static void finish_job(run *r, int job) {
  const plan_cluster *c = &r->sc->c;
  sim_job_out *o = &r->out->jobs[job];
  o->finish = r->t;
  o->jct = r->t - r->sc->jobs[job].arrival_s;
  o->iter_mean = (o->finish - o->start) / plan_job_iterations(&r->sc->jobs[job]);
  o->kwh = plan_placement_kwh(c, &o->pl, o->finish - o->start);
  o->usd = plan_placement_cost(c, &o->pl, o->start, o->finish);
  for (int i = r->span_first[job]; i < r->out->nspans; i++) {
    sim_span *sp = &r->out->spans[i];
    if (sp->job != job) continue;
    sp->t1 = r->t;
    for (int g = 0; g < sp->count; g++)
      r->owner[r->slot_base[sp->region] + sp->first + g] = -1;
  }
  plan_state_apply(&r->st, &r->sc->jobs[job], &r->d[job], &o->pl, -1);
}

static int cmp_release(const void *a, const void *b) {
  double x = ((const plan_release *)a)->t, y = ((const plan_release *)b)->t;
  return (x > y) - (x < y);
}

/* The running jobs' predicted finishes at the current rates, for the policies that look ahead. */
static void predict_releases(run *r) {
  for (int i = 0; i < r->nrun; i++) {
    int job = r->running[i];
    const plan_job *j = &r->sc->jobs[job];
    const plan_placement *p = &r->out->jobs[job].pl;
    double iter = plan_iter_time(&r->sc->c, j, p, r->st.share, 0);
    r->releases[i] = (plan_release){r->t + r->left[job] * iter, j, &r->d[job], p};
  }
  qsort(r->releases, (size_t)r->nrun, sizeof *r->releases, cmp_release);
  r->st.releases = r->releases;
  r->st.nreleases = r->nrun;
}

/* This thread's CPU seconds: planning is timed in CPU, not wall time, which other processes
 * on a shared machine stretch. */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One planning round over the queue; the placed jobs start now. */
static tern_status decide(run *r) {
  if (r->nq == 0) return TERN_OK;
  r->st.now = r->t;
  predict_releases(r);
  double t0 = cpu_seconds();
  plan_decide(r->pol, &r->st, r->queue, r->nq, r->decided, r->placed);
  r->out->decide_s += cpu_seconds() - t0;
  r->out->rounds++;
  int kept = 0;
  for (int i = 0; i < r->nq; i++) {
    if (!r->placed[i]) {
      r->queue[kept++] = r->queue[i];
      continue;
    }
    tern_status st = start_job(r, r->queue[i].id, &r->decided[i]);
    if (st != TERN_OK) return st;
  }
  r->nq = kept;
  return TERN_OK;
}

static tern_status stuck(run *r) {
  const plan_queued *q = &r->queue[0];
  const plan_cluster *c = &r->sc->c;
  int largest = 0, fewest = INT_MAX;
  for (int k = 0; k < c->nregions; k++)
    largest = CORE_MAX(largest, c->regions[k].gpus);
  for (int t = 0; t < c->ntypes; t++)
    fewest = CORE_MIN(fewest, q->d->smin[t]);
  return core_err_set(r->err, TERN_ERR_INVALID_ARG,
                      "policy '%s' cannot place job '%s' even on the idle cluster: it asks for "
                      "%d GPUs and needs at least %d to fit in memory; the largest region has "
                      "%d, the cluster %d",
                      r->pol->name, q->job->name, q->d->kstar, fewest, largest,
                      plan_cluster_total_gpus(c));
}

/* Advances to the next event; the running jobs due by then finish. A job ends when its
 * predicted end is reached, not when its iterations left round to zero: t_next is the least due
 * time, so every completion event retires at least one job even where t is so large that
 * t + a short remainder rounds back to t (the loop's progress cannot vanish). */
static void advance(run *r, double t_next) {
  double dt = t_next - r->t;
  r->t = t_next;
  int kept = 0;
  for (int i = 0; i < r->nrun; i++) {
    int job = r->running[i];
    r->left[job] -= dt / r->iter_now[job];
    if (r->due[job] <= t_next)
      finish_job(r, job);
    else
      r->running[kept++] = job;
  }
  r->nrun = kept;
}

/* The next event: an arrival, the earliest completion at the current rates, or the hour a
 * queued job asked to be planned again at (plan_state_wake). */
static double next_event(run *r) {
  double t = r->next < r->sc->njobs ? r->sc->jobs[r->by_arrival[r->next]].arrival_s : INFINITY;
  if (r->nq > 0) t = CORE_MIN(t, plan_state_wake_at(&r->st));
  for (int i = 0; i < r->nrun; i++) {
    int job = r->running[i];
    r->iter_now[job] =
        plan_iter_time(&r->sc->c, &r->sc->jobs[job], &r->out->jobs[job].pl, r->st.share, 0);
    r->due[job] = r->t + CORE_MAX(r->left[job], 0.0) * r->iter_now[job];
    t = CORE_MIN(t, r->due[job]);
  }
  return t;
}

static void summarize(run *r) {
  sim_jobs_result *o = r->out;
  double first = INFINITY, last = 0, held = 0;
  for (int i = 0; i < o->njobs; i++) {
    const sim_job_out *j = &o->jobs[i];
    o->avg_jct += j->jct / o->njobs;
    o->kwh += j->kwh;
    o->usd += j->usd;
    first = CORE_MIN(first, r->sc->jobs[i].arrival_s);
    last = CORE_MAX(last, j->finish);
    held += j->pl.stages * plan_replicas(&j->pl) * (j->finish - j->start);
  }
  o->makespan = last - first;
  o->gpu_util = o->makespan > 0 ? held / (plan_cluster_total_gpus(&r->sc->c) * o->makespan) : 0;
}

static tern_status loop(run *r) {
  int done = 0;
  r->t = r->sc->jobs[r->by_arrival[0]].arrival_s;
  while (done < r->sc->njobs) {
    while (r->next < r->sc->njobs && r->sc->jobs[r->by_arrival[r->next]].arrival_s <= r->t) {
      int id = r->by_arrival[r->next++];
      r->queue[r->nq++] = (plan_queued){&r->sc->jobs[id], &r->d[id], id};
    }
    tern_status st = decide(r);
    if (st != TERN_OK) return st;
    double t_next = next_event(r);
    if (!isfinite(t_next)) return stuck(r);
    int before = r->nrun;
    advance(r, t_next);
    done += before - r->nrun;
  }
  return TERN_OK;
}

tern_status sim_jobs_run(const plan_scenario *sc, const plan_policy *pol, sim_jobs_result *out,
                         core_err *err) {
  if (pol->members) return sim_jobs_run_portfolio(sc, pol, out, err);
  memset(out, 0, sizeof *out);
  out->policy = out->member = pol;
  run r = {.sc = sc, .pol = pol, .out = out, .err = err};
  tern_status st =
      sc->njobs > 0 ? run_init(&r) : core_err_set(err, TERN_ERR_INVALID_ARG, "no jobs to simulate");
  if (st == TERN_OK) st = loop(&r);
  if (st == TERN_OK) summarize(&r);
  run_free(&r);
  if (st != TERN_OK) sim_jobs_result_free(out);
  return st;
}

void sim_jobs_result_free(sim_jobs_result *r) {
  free(r->jobs);
  free(r->spans);
  r->jobs = NULL;
  r->spans = NULL;
  r->njobs = r->nspans = 0;
}

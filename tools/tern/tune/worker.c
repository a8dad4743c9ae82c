/* tune/worker.c: one sweep of `tern tune` by the ranks of one job: every algorithm of every
 * collective, forced in turn, timed at sizes from 8 B to --max-bytes in powers of two. The job is
 * a worker run `tern tune` starts under `tern run` on this host (tune_worker), or the job
 * `tern tune` was itself launched as, on one host or across hosts (tune_sweep from tune.c):
 * across hosts every algorithm that fits the placement is timed, hier with each of its
 * inter-host ones, and the rows name the placement HxP.
 *
 * Timing follows tern bench: warm-up, a barrier, back-to-back calls, the time of one call being
 * the slowest rank's; the median of nine repetitions (three, in the same budget, scored about five
 * points in 100 lower held out: docs/TUNING.md). Barriers and the exchanges of times run with the
 * selector's own choice, outside the timed window.
 *
 * --seconds is a deadline, kept by rank 0, which broadcasts its decisions so every rank makes the
 * same calls. The sweep goes size by size, every collective at each size, and each algorithm at a
 * size gets an equal share of the time left; where one call is too long for nine repetitions in
 * its share it gets fewer (down to one), and a size whose calls at one repetition each would not
 * finish before the deadline ends the sweep there, so what a tight budget loses is the largest
 * sizes of every collective, said on stderr. (With a fixed nine repetitions a sweep of 8 ranks on
 * 2 cores asked for 10 s took 46.)
 *
 * The algorithms compared at one size are measured interleaved: repetition r times every
 * algorithm once, the first one rotating with r, so that a change in the machine's load during
 * the sweep falls on all of them alike instead of on whichever was being timed then (measured
 * one algorithm after another, two sweeps of one host agreed on the winner within 5% at only
 * 75% of the points: docs/perf/select.md).
 *
 * Algorithms that give every rank the same schedule at a point (coll_sched_equal, on this run's
 * layout: at n = 2 the ring and the tree broadcast are one send) are one algorithm there: they are
 * timed once, as one, and each gets that time. Timed apart they differed only by noise, and the
 * faster draw then set a mark that a pick of the other missed by more than 5% for no reason (the
 * TCP n = 2 ring and tree broadcasts, one schedule, came out 4-27% apart from 4 to 16 MiB).
 */
#include "tern/cmd.h"
#include "tune.h"

#include "coll/algo/algo.h"
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

static const coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER,
                                  COLL_BROADCAST, COLL_REDUCE,         COLL_ALLTOALL};

typedef struct worker {
  tern_comm *c;
  int rank, n;
  char *send, *recv;
} worker;

static tern_status call(worker *w, coll_kind k, size_t count) {
  switch (k) {
  case COLL_ALLREDUCE:
    return tern_allreduce(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM);
  case COLL_REDUCE_SCATTER:
    return tern_reduce_scatter(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM);
  case COLL_ALLGATHER:
    return tern_allgather(w->c, w->send, w->recv, count, TERN_F32);
  case COLL_BROADCAST:
    return tern_broadcast(w->c, w->send, w->recv, count, TERN_F32, 0);
  case COLL_REDUCE:
    return tern_reduce(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM, 0);
  default:
    return tern_alltoall(w->c, w->send, w->recv, count, TERN_F32);
  }
}

/* An algorithm as timed: hier with each of its inter-host algorithms is one each. */
typedef struct pick {
  coll_algo algo, inner;
} pick;
#define MAX_PICKS (COLL_NUM_ALGOS + 1) /* hier counts twice */

/* The slowest rank's seconds per call over iters calls of (k, p, count). */
static tern_status time_calls(worker *w, coll_kind k, pick p, size_t count, int iters,
                              double *secs) {
  coll_state_force(w->c, COLL_ALGO_AUTO, COLL_ALGO_RING);
  tern_status rc = tern_barrier(w->c);
  coll_state_force(w->c, p.algo, p.inner);
  uint64_t t0 = core_now_ns();
  for (int i = 0; rc == TERN_OK && i < iters; i++)
    rc = call(w, k, count);
  double mine = (double)(core_now_ns() - t0) * 1e-9 / iters;
  coll_state_force(w->c, COLL_ALGO_AUTO, COLL_ALGO_RING);
  if (rc == TERN_OK) rc = tern_allreduce(w->c, &mine, secs, 1, TERN_F64, TERN_MAX);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define REPS 9

/* Whether a and b give every one of the n ranks of c the same schedule of (k, count) as the
 * calls below make it (out of place, root 0, laid out as c is). */
static bool same_schedules(tern_comm *c, coll_kind k, int n, size_t count, pick a, pick b) {
  coll_sched sa, sb;
  coll_sched_init(&sa);
  coll_sched_init(&sb);
  bool same = true;
  for (int r = 0; same && r < n; r++) {
    coll_args args = {.kind = k, .rank = r, .size = n, .count = count};
    coll_args_place(c, &args);
    coll_args other = args;
    args.inner = a.inner, other.inner = b.inner;
    same = coll_build(&sa, &args, a.algo) == TERN_OK &&
           coll_build(&sb, &other, b.algo) == TERN_OK && coll_sched_equal(&sa, &sb);
  }
  coll_sched_free(&sa);
  coll_sched_free(&sb);
  return same;
}

/* What rank 0 knows of the time: the deadline, and how many algorithm-points are still to measure
 * (each collective's algorithms at each size). */
typedef struct budget {
  uint64_t deadline_ns;
  size_t left;
} budget;

static double seconds_left(const budget *bg) {
  uint64_t now = core_now_ns();
  return now < bg->deadline_ns ? (double)(bg->deadline_ns - now) * 1e-9 : 0;
}

/* How rank 0 spends an algorithm's share of the time at one size, given one call's time: nine
 * repetitions of as many calls as fit (at most 1000), else one call a repetition and as many
 * repetitions as fit, an odd number for the median, at least one. */
static void plan_repetitions(double share, double probe, int *iters, int *reps) {
  if (!(probe > 0) || probe * REPS <= share) {
    *reps = REPS;
    *iters = probe > 0 ? (int)CORE_MIN(1000.0, CORE_MAX(1.0, share / REPS / probe)) : 1;
    return;
  }
  int fit = (int)CORE_MAX(1.0, share / probe);
  *iters = 1;
  *reps = fit % 2 ? fit : fit - 1;
}

/* Measures every algorithm of algos[] at one size, interleaved (see above): a probe call of each
 * sizes its repetitions to its share of the time left; median[i] is algos[i]'s median. An
 * algorithm with the schedules of an earlier one is not timed: it gets that one's median. */
static tern_status measure(worker *w, coll_kind k, const pick *all, int nall, size_t count,
                           budget *bg, double *median) {
  pick algos[MAX_PICKS]; /* the distinct ones, timed */
  int timed_as[MAX_PICKS], nalgos = 0;
  for (int i = 0; i < nall; i++) {
    timed_as[i] = -1;
    for (int j = 0; j < nalgos && timed_as[i] < 0; j++)
      if (same_schedules(w->c, k, w->n, count, algos[j], all[i])) timed_as[i] = j;
    if (timed_as[i] < 0) {
      timed_as[i] = nalgos;
      algos[nalgos++] = all[i];
    }
  }
  /* the share of the ones not timed goes to the others */
  double share = seconds_left(bg) / (double)CORE_MAX(bg->left, 1) * nall / nalgos;
  bg->left -= CORE_MIN(bg->left, (size_t)nall);
  int plan[2 * MAX_PICKS]; /* iterations per repetition, then repetitions, per algorithm */
  double reps[MAX_PICKS][REPS];
  tern_status rc = TERN_OK;
  for (int i = 0; rc == TERN_OK && i < nalgos; i++) {
    double probe;
    rc = time_calls(w, k, algos[i], count, 1, &probe);
    plan_repetitions(CORE_MAX(0.0, share - probe), probe, &plan[i], &plan[nalgos + i]);
  }
  if (rc == TERN_OK) rc = tern_broadcast(w->c, plan, plan, 2 * (size_t)nalgos, TERN_I32, 0);
  for (int r = 0; rc == TERN_OK && r < REPS; r++)
    for (int j = 0; rc == TERN_OK && j < nalgos; j++) {
      int i = (j + r) % nalgos;
      if (r < plan[nalgos + i]) rc = time_calls(w, k, algos[i], count, plan[i], &reps[i][r]);
    }
  for (int i = 0; rc == TERN_OK && i < nalgos; i++)
    qsort(reps[i], (size_t)plan[nalgos + i], sizeof reps[i][0], cmp_double);
  for (int i = 0; rc == TERN_OK && i < nall; i++)
    median[i] = reps[timed_as[i]][plan[nalgos + timed_as[i]] / 2];
  return rc;
}

static void progress(size_t done, size_t total, const char *what) {
  int width = 30, filled = total ? (int)(width * done / total) : width;
  fprintf(stderr, "\r  [%.*s%*s] %3d%%  %-40s", filled, "##############################",
          width - filled, "", total ? (int)(100 * done / total) : 100, what);
  if (done == total) fputc('\n', stderr);
}

/* The algorithms tern tune times for each collective: all it has for c's ranks where they are
 * (hier, where it fits, once with each of its inter-host algorithms). */
typedef struct sweep {
  pick algos[CORE_ARRAY_LEN(kinds)][MAX_PICKS];
  int nalgos[CORE_ARRAY_LEN(kinds)];
  double last[CORE_ARRAY_LEN(kinds)][MAX_PICKS]; /* each one's median at the size before */
} sweep;

static size_t sweep_points_per_size(sweep *sw, tern_comm *c) {
  size_t points = 0;
  for (size_t k = 0; k < CORE_ARRAY_LEN(kinds); k++) {
    sw->nalgos[k] = 0;
    coll_args args = {.kind = kinds[k], .size = tern_comm_size(c), .count = 1};
    coll_args_place(c, &args);
    for (int a = 1; a < COLL_NUM_ALGOS; a++) {
      const coll_algo_desc *d = coll_algo_desc_of((coll_algo)a);
      for (int i = 0; coll_algo_fits((coll_algo)a, &args) && i < CORE_MAX(1, d->ninner); i++)
        sw->algos[k][sw->nalgos[k]++] =
            (pick){(coll_algo)a, d->ninner ? d->inner[i] : COLL_ALGO_RING};
    }
    points += (size_t)sw->nalgos[k];
  }
  return points;
}

/* Whether the next size, twice the last, fits the time left at its least: a probe and one
 * repetition of every algorithm, each call taken as twice its time at the last size (a call
 * costs at most in proportion to its bytes). Rank 0 decides; every rank follows. */
static tern_status next_size_fits(worker *w, const sweep *sw, const budget *bg, int *fits) {
  double least = 0;
  for (size_t k = 0; k < CORE_ARRAY_LEN(kinds); k++)
    for (int i = 0; i < sw->nalgos[k]; i++)
      least += 2 * 2 * sw->last[k][i];
  *fits = least <= seconds_left(bg);
  return tern_broadcast(w->c, fits, fits, 1, TERN_I32, 0);
}

/* How the rows name c's placement: on one host by the transport in use and the rank count;
 * across hosts by tcp (between them) and HxP. False, said on stderr by rank 0, for a placement
 * HxP cannot name: hosts of unequal rank counts, or one rank a host (no hier there: the one-host
 * rows of that transport and rank count would stand for it). */
static bool placement_of(worker *w, coll_transport_kind *tr, int *hosts) {
  coll_site site = coll_site_of(w->c);
  coll_args a = {.size = w->n};
  coll_args_place(w->c, &a);
  *tr = site.tr, *hosts = 1;
  if (site.one_host) return true;
  if (site.across_hosts && coll_ranks_per_host(&a) > 0) {
    *hosts = coll_host_count(&a);
    return true;
  }
  if (w->rank == 0)
    fprintf(stderr,
            "tern tune: the %d ranks are on hosts of unequal rank counts, or one a host: "
            "a tuning file names H hosts of P >= 2 ranks each (HxP); nothing measured\n",
            w->n);
  return false;
}

bool tune_sweep(double seconds, size_t max_bytes, tune_rows *rows, bool *rank0) {
  worker w = {0};
  *rank0 = false;
  if (tern_comm_init_env(&w.c) != TERN_OK) {
    fprintf(stderr, "tern tune: %s\n", tern_comm_last_error(NULL));
    return false;
  }
  w.rank = tern_comm_rank(w.c);
  w.n = tern_comm_size(w.c);
  *rank0 = w.rank == 0;
  coll_transport_kind tr;
  int hosts;
  char ranks[24];
  if (!placement_of(&w, &tr, &hosts)) {
    tern_comm_destroy(w.c);
    return false;
  }
  tune_print_ranks(ranks, sizeof ranks, hosts, w.n);
  size_t cap = max_bytes * (size_t)w.n;
  w.send = calloc(1, cap);
  w.recv = calloc(1, cap);
  sweep sw;
  size_t per_size = sweep_points_per_size(&sw, w.c), total = 0, done = 0;
  for (size_t b = 8; b <= max_bytes; b *= 2)
    total += per_size;
  budget bg = {.deadline_ns = core_now_ns() + (uint64_t)(seconds * 1e9), .left = total};
  tern_status rc = w.send && w.recv ? TERN_OK : TERN_ERR_NOMEM;
  int fits = 1;
  for (size_t b = 8; rc == TERN_OK && fits && b <= max_bytes; b *= 2) {
    if (b > 8 && (rc = next_size_fits(&w, &sw, &bg, &fits)) == TERN_OK && !fits) {
      if (w.rank == 0)
        fprintf(stderr,
                "\ntern tune: %s %s: %.0f s end before %zu B: sizes from %zu B to %zu B "
                "are left out (a larger --budget measures them)\n",
                tune_tr_names[tr], ranks, seconds, b, b, max_bytes);
      break;
    }
    for (size_t k = 0; rc == TERN_OK && k < CORE_ARRAY_LEN(kinds); k++) {
      size_t count = b / sizeof(float);
      rc = measure(&w, kinds[k], sw.algos[k], sw.nalgos[k], count, &bg, sw.last[k]);
      for (int i = 0; rc == TERN_OK && w.rank == 0 && i < sw.nalgos[k]; i++) {
        tune_row row = {.tr = tr,
                        .n = w.n,
                        .hosts = hosts,
                        .kind = kinds[k],
                        .count = count,
                        .algo = sw.algos[k][i].algo,
                        .inner = sw.algos[k][i].inner,
                        .secs = sw.last[k][i]};
        if (!tune_rows_append(rows, row)) rc = TERN_ERR_NOMEM;
      }
      if (w.rank == 0) {
        char what[64];
        snprintf(what, sizeof what, "%s %s %s %zu B", tune_tr_names[tr], coll_kind_name(kinds[k]),
                 ranks, b);
        done += (size_t)sw.nalgos[k];
        progress(done, total, what);
      }
    }
  }
  if (rc != TERN_OK) fprintf(stderr, "tern tune: rank %d: %s\n", w.rank, tern_comm_last_error(w.c));
  free(w.send);
  free(w.recv);
  tern_comm_destroy(w.c);
  return rc == TERN_OK;
}

int tune_worker(int argc, char **argv) {
  double seconds = 30;
  size_t max_bytes = 16u << 20;
  const char *csv = NULL;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-bytes") && !core_parse_size(argv[i + 1], &max_bytes))
      return 2;
    else if (!strcmp(argv[i], "--csv"))
      csv = argv[i + 1];
  }
  tune_rows rows = {0};
  bool rank0, ok = tune_sweep(seconds, max_bytes, &rows, &rank0);
  if (ok && rank0 && csv) ok = tune_write_rows(&rows, csv);
  tune_rows_free(&rows);
  return ok ? 0 : 1;
}

/* tune_worker.c: one run of `tern tune` under `tern run`: every algorithm of every collective,
 * forced in turn, timed at sizes from 8 B to --max-bytes in powers of two.
 *
 * Timing follows tern bench: warm-up, a barrier, back-to-back calls, the time of one call being
 * the slowest rank's; the median of nine repetitions (three, in the same budget, scored about five
 * points in 100 lower held out: docs/TUNING.md). Rank 0 sizes the repetitions so the whole run
 * fits --seconds and broadcasts the counts, so every rank makes the same calls. Barriers and the
 * exchanges of times run with the selector's own choice, outside the timed window.
 *
 * The algorithms compared at one size are measured interleaved: repetition r times every
 * algorithm once, the first one rotating with r, so that a change in the machine's load during
 * the sweep falls on all of them alike instead of on whichever was being timed then (measured
 * one algorithm after another, two sweeps of this machine agreed on the winner within 5% at
 * only 75% of the points).
 *
 * Algorithms that give every rank the same schedule at a point (coll_sched_equal, on this run's
 * layout: at n = 2 the ring and the tree broadcast are one send) are one algorithm there: they are timed once, as
 * one, and each gets that time. Timed apart they differed only by noise, and the faster draw
 * then set a mark that a pick of the other missed by more than 5% for no reason (a sweep of
 * 2026-12-04: the tcp n = 2 ring and tree broadcasts, one schedule, 4-27% apart from 4 to 16
 * MiB).
 */
#include "cmd.h"
#include "tune.h"

#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

static const coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER,
                                  COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL};

typedef struct worker {
  tern_comm *c;
  int rank, n;
  char *send, *recv;
} worker;

static tern_status call(worker *w, coll_kind k, size_t count) {
  switch (k) {
  case COLL_ALLREDUCE: return tern_allreduce(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM);
  case COLL_REDUCE_SCATTER: return tern_reduce_scatter(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM);
  case COLL_ALLGATHER: return tern_allgather(w->c, w->send, w->recv, count, TERN_F32);
  case COLL_BROADCAST: return tern_broadcast(w->c, w->send, w->recv, count, TERN_F32, 0);
  case COLL_REDUCE: return tern_reduce(w->c, w->send, w->recv, count, TERN_F32, TERN_SUM, 0);
  default: return tern_alltoall(w->c, w->send, w->recv, count, TERN_F32);
  }
}

/* The slowest rank's seconds per call over iters calls of (k, algo, count). */
static tern_status time_calls(worker *w, coll_kind k, coll_algo algo, size_t count, int iters,
                              double *secs) {
  coll_engine_force(w->c, COLL_ALGO_AUTO);
  tern_status rc = tern_barrier(w->c);
  coll_engine_force(w->c, algo);
  uint64_t t0 = core_now_ns();
  for (int i = 0; rc == TERN_OK && i < iters; i++) rc = call(w, k, count);
  double mine = (double)(core_now_ns() - t0) * 1e-9 / iters;
  coll_engine_force(w->c, COLL_ALGO_AUTO);
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
static bool same_schedules(tern_comm *c, coll_kind k, int n, size_t count, coll_algo a,
                           coll_algo b) {
  coll_sched sa, sb;
  coll_sched_init(&sa);
  coll_sched_init(&sb);
  bool same = true;
  for (int r = 0; same && r < n; r++) {
    coll_args args = {.kind = k, .rank = r, .size = n, .count = count};
    coll_args_place(c, &args);
    same = coll_build(&sa, &args, a) == TERN_OK && coll_build(&sb, &args, b) == TERN_OK &&
           coll_sched_equal(&sa, &sb);
  }
  coll_sched_free(&sa);
  coll_sched_free(&sb);
  return same;
}

/* Measures every algorithm of algos[] at one size, interleaved (see above): a probe call of each
 * sizes its repetitions to its share of the budget; median[i] is algos[i]'s median. An algorithm
 * with the schedules of an earlier one is not timed: it gets that one's median. */
static tern_status measure(worker *w, coll_kind k, const coll_algo *all, int nall, size_t count,
                           double share, double *median) {
  coll_algo algos[COLL_NUM_ALGOS]; /* the distinct ones, timed */
  int timed_as[COLL_NUM_ALGOS], nalgos = 0;
  for (int i = 0; i < nall; i++) {
    timed_as[i] = -1;
    for (int j = 0; j < nalgos && timed_as[i] < 0; j++)
      if (same_schedules(w->c, k, w->n, count, algos[j], all[i])) timed_as[i] = j;
    if (timed_as[i] < 0) {
      timed_as[i] = nalgos;
      algos[nalgos++] = all[i];
    }
  }
  share *= (double)nall / nalgos; /* the budget of the ones not timed goes to the others */
  int iters[COLL_NUM_ALGOS];
  double reps[COLL_NUM_ALGOS][REPS];
  tern_status rc = TERN_OK;
  for (int i = 0; rc == TERN_OK && i < nalgos; i++) {
    double probe;
    rc = time_calls(w, k, algos[i], count, 1, &probe);
    iters[i] = probe > 0 ? (int)CORE_MIN(1000.0, CORE_MAX(1.0, share / REPS / probe)) : 1;
  }
  if (rc == TERN_OK) rc = tern_broadcast(w->c, iters, iters, (size_t)nalgos, TERN_I32, 0);
  for (int r = 0; rc == TERN_OK && r < REPS; r++)
    for (int j = 0; rc == TERN_OK && j < nalgos; j++) {
      int i = (j + r) % nalgos;
      rc = time_calls(w, k, algos[i], count, iters[i], &reps[i][r]);
    }
  for (int i = 0; rc == TERN_OK && i < nalgos; i++)
    qsort(reps[i], REPS, sizeof reps[i][0], cmp_double);
  for (int i = 0; rc == TERN_OK && i < nall; i++) median[i] = reps[timed_as[i]][REPS / 2];
  return rc;
}

static void progress(size_t done, size_t total, const char *what) {
  int width = 30, filled = total ? (int)(width * done / total) : width;
  fprintf(stderr, "\r  [%.*s%*s] %3d%%  %-40s", filled, "##############################",
          width - filled, "", total ? (int)(100 * done / total) : 100, what);
  if (done == total) fputc('\n', stderr);
}

int tune_worker(int argc, char **argv) {
  double seconds = 30;
  size_t max_bytes = 16u << 20;
  const char *csv = NULL, *tr = getenv("TERN_TRANSPORT");
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-bytes") && !core_parse_size(argv[i + 1], &max_bytes)) return 2;
    else if (!strcmp(argv[i], "--csv")) csv = argv[i + 1];
  }
  worker w = {0};
  if (tern_comm_init_env(&w.c) != TERN_OK) {
    fprintf(stderr, "tern tune: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  w.rank = tern_comm_rank(w.c);
  w.n = tern_comm_size(w.c);
  size_t cap = max_bytes * (size_t)w.n;
  w.send = calloc(1, cap);
  w.recv = calloc(1, cap);
  FILE *out = w.rank == 0 && csv ? fopen(csv, "w") : NULL;
  size_t total = 0, done = 0;
  for (size_t k = 0; k < CORE_ARRAY_LEN(kinds); k++)
    for (int a = 1; a < COLL_NUM_ALGOS; a++)
      if (a != COLL_ALGO_HIER && coll_algo_supported(kinds[k], a))
        for (size_t b = 8; b <= max_bytes; b *= 2) total++;
  double share = seconds / (double)(total ? total : 1);
  tern_status rc = w.send && w.recv && (w.rank != 0 || out) ? TERN_OK : TERN_ERR_NOMEM;
  for (size_t k = 0; rc == TERN_OK && k < CORE_ARRAY_LEN(kinds); k++) {
    coll_algo algos[COLL_NUM_ALGOS];
    int nalgos = 0;
    for (int a = 1; a < COLL_NUM_ALGOS; a++)
      if (a != COLL_ALGO_HIER && coll_algo_supported(kinds[k], a)) algos[nalgos++] = (coll_algo)a;
    for (size_t b = 8; rc == TERN_OK && nalgos > 0 && b <= max_bytes; b *= 2) {
      size_t count = b / sizeof(float);
      double secs[COLL_NUM_ALGOS];
      rc = measure(&w, kinds[k], algos, nalgos, count, share, secs);
      for (int i = 0; rc == TERN_OK && out && i < nalgos; i++)
        fprintf(out, "%s,%d,%s,%zu,%s,%.9g\n", tr ? tr : "shm", w.n, coll_kind_name(kinds[k]),
                count, coll_algo_name(algos[i]), secs[i]);
      if (w.rank == 0) {
        char what[64];
        snprintf(what, sizeof what, "%s %s n=%d %zu B", tr ? tr : "shm", coll_kind_name(kinds[k]),
                 w.n, b);
        done += (size_t)nalgos;
        progress(done, total, what);
      }
    }
  }
  if (rc != TERN_OK) fprintf(stderr, "tern tune: rank %d: %s\n", w.rank, tern_comm_last_error(w.c));
  if (out) fclose(out);
  free(w.send);
  free(w.recv);
  tern_comm_destroy(w.c);
  return rc == TERN_OK ? 0 : 1;
}

/* mpi_bench.c: the MPI side of bench/peers: allreduce, reduce_scatter, allgather and broadcast
 * timed by the method every tool of bench/peers uses (`tern bench --target-ms --repeats -a 3`,
 * gloo.py):
 *
 *   per size: one checked call on known inputs (every element compared), w warm-up calls, then
 *   timed batches of 1, 4, 16, ... calls after a barrier until one lasts T/5 ms; its time per
 *   call (max over ranks) sets the iteration count so that a repeat lasts about T ms (at least
 *   3 calls, at most 100000); then
 *   R repeats of (barrier, iters back-to-back calls); a repeat's time is the maximum over ranks
 *   of elapsed / iters, and the size's time is the median of the R repeats.
 *
 * f32 sum. size is the whole buffer, as in tern bench: for reduce_scatter and allgather each
 * rank's block is size / n. Out of place (broadcast is in place by MPI's definition).
 * Built twice by run.sh, with mpicc.openmpi and mpicc.mpich. Only rank 0 prints, one line per
 * (collective, size):  coll bytes iters time_us busbw_gbs wrong
 */
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BROADCAST, NCOLLS };
static const char *names[NCOLLS] = {"allreduce", "reduce_scatter", "allgather", "broadcast"};

typedef struct opts {
  size_t sizes[64];
  int nsizes;
  double target_ms;
  int warmup, repeats;
  int which[NCOLLS], nwhich;
} opts;

static int rank, nranks;
static float *sendbuf, *recvbuf;

static void call(int coll, size_t count) {
  switch (coll) {
  case ALLREDUCE:
    MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  case REDUCE_SCATTER:
    MPI_Reduce_scatter_block(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  case ALLGATHER:
    MPI_Allgather(sendbuf, (int)count, MPI_FLOAT, recvbuf, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    break;
  case BROADCAST: MPI_Bcast(recvbuf, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
  }
}

/* count is per rank's block for reduce_scatter and allgather, the whole buffer otherwise. */
static long check(int coll, size_t count) {
  size_t in = coll == REDUCE_SCATTER ? count * (size_t)nranks : count;
  for (size_t i = 0; i < in; i++)
    sendbuf[i] = (float)(rank + 1);
  size_t out = coll == ALLGATHER ? count * (size_t)nranks : count;
  for (size_t i = 0; i < out; i++)
    recvbuf[i] = coll == BROADCAST ? (float)(rank + 1) : -1.0f;
  call(coll, count);
  long wrong = 0;
  for (size_t i = 0; i < out; i++) {
    float want = (float)nranks * (float)(nranks + 1) / 2;
    if (coll == ALLGATHER) want = (float)(i / count + 1);
    if (coll == BROADCAST) want = 1.0f;
    wrong += recvbuf[i] != want;
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

/* Time per call of `iters` back-to-back calls after a barrier, maximum over ranks. */
static double timed(int coll, size_t count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++)
    call(coll, count);
  double mine = (MPI_Wtime() - t0) / iters, most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double bus_factor(int coll) {
  if (coll == ALLREDUCE) return 2.0 * (nranks - 1) / nranks;
  if (coll == BROADCAST) return 1.0;
  return (double)(nranks - 1) / nranks;
}

static void run(const opts *o, int coll) {
  double *reps = calloc((size_t)o->repeats, sizeof *reps);
  size_t blocks = coll == REDUCE_SCATTER || coll == ALLGATHER ? (size_t)nranks : 1;
  for (int s = 0; s < o->nsizes; s++) {
    size_t bytes = o->sizes[s];
    size_t count = bytes / sizeof(float) / blocks;
    size_t shown = count * sizeof(float) * blocks;
    if (count > 0) {
      long wrong = check(coll, count);
      if (coll == ALLREDUCE || coll == REDUCE_SCATTER)
        memset(sendbuf, 0, shown); /* bounded values while timing */
      for (int i = 0; i < o->warmup; i++)
        call(coll, count);
      /* batches of 1, 4, 16, ... calls until one lasts a fifth of a repeat */
      double per_call = 0;
      for (int k = 1;; k *= 4) {
        per_call = timed(coll, count, k);
        if (per_call * k >= o->target_ms * 1e-3 / 5 || k >= 100000) break;
      }
      double want = o->target_ms * 1e-3 / (per_call > 0 ? per_call : 1e-9);
      int iters = want < 3 ? 3 : want > 100000 ? 100000 : (int)want;
      for (int r = 0; r < o->repeats; r++)
        reps[r] = timed(coll, count, iters);
      qsort(reps, (size_t)o->repeats, sizeof *reps, cmp_double);
      double t = o->repeats % 2 ? reps[o->repeats / 2]
                                : (reps[o->repeats / 2 - 1] + reps[o->repeats / 2]) / 2;
      if (rank == 0) {
        printf("%s %zu %d %.4f %.4f %ld\n", names[coll], shown, iters, t * 1e6,
               (double)shown / t / 1e9 * bus_factor(coll), wrong);
        fflush(stdout);
      }
    }
  }
  free(reps);
}

/* 8, 4K, 16M: suffixes are powers of 1024. */
static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static int parse(int argc, char **argv, opts *o) {
  *o = (opts){.target_ms = 20, .warmup = 5, .repeats = 5};
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "-s")) {
      char buf[1024];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->nsizes == 64) return -1;
        o->sizes[o->nsizes++] = parse_size(t);
      }
    } else if (!strcmp(k, "-T")) o->target_ms = atof(v);
    else if (!strcmp(k, "-w")) o->warmup = atoi(v);
    else if (!strcmp(k, "-R")) o->repeats = atoi(v);
    else if (!strcmp(k, "-c")) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int c = 0; c < NCOLLS; c++)
          if (!strcmp(t, names[c])) found = c;
        if (found < 0 || o->nwhich == NCOLLS) return -1;
        o->which[o->nwhich++] = found;
      }
    } else return -1;
  }
  if (o->nwhich == 0)
    for (int c = 0; c < NCOLLS; c++)
      o->which[o->nwhich++] = c;
  for (int i = 0; i < o->nsizes; i++)
    if (o->sizes[i] == 0) return -1;
  return o->nsizes > 0 && o->repeats > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  opts o;
  if (parse(argc, argv, &o) != 0) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_bench [-c allreduce,reduce_scatter,allgather,broadcast] "
                      "-s SIZE,SIZE,... [-T 20] [-w 5] [-R 5]\n");
    MPI_Finalize();
    return 2;
  }
  size_t most = 0;
  for (int i = 0; i < o.nsizes; i++)
    most = o.sizes[i] > most ? o.sizes[i] : most;
  size_t cap = (most + 4095) & ~(size_t)4095;
  sendbuf = aligned_alloc(4096, cap);
  recvbuf = aligned_alloc(4096, cap);
  if (!sendbuf || !recvbuf) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(sendbuf, 0, cap);
  memset(recvbuf, 0, cap);
  if (rank == 0) printf("# mpi_bench: %d ranks, f32 sum, T %g ms, R %d, w %d\n", nranks,
                        o.target_ms, o.repeats, o.warmup);
  for (int i = 0; i < o.nwhich; i++)
    run(&o, o.which[i]);
  if (rank == 0) printf("# done\n");
  free(sendbuf);
  free(recvbuf);
  MPI_Finalize();
  return 0;
}

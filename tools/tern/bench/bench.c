/* bench.c: `tern bench COLL`, after nccl-tests: for each message size, the time of one call, the
 * algorithm bandwidth and the bus bandwidth, out of place and in place, with a count of wrong
 * elements when -c 1 checks the results.
 *
 * Method (nccl-tests'): per size and mode, -w warm-up calls, then a barrier and -n back-to-back
 * calls; time = elapsed / n on each rank, combined over ranks by -a (0: rank 0, 1: mean, 2: min,
 * 3: max). algbw = size / time; busbw = algbw x the collective's bus factor (allreduce 2(n-1)/n,
 * reduce_scatter, allgather and alltoall (n-1)/n, others 1), so that busbw can be compared with
 * a link's bandwidth whatever n is. size is the whole buffer (for allgather, reduce_scatter and
 * alltoall, n x the per-rank count). With -c 1, each size and mode is first run once on known
 * inputs (pattern.c) and every element of every rank's result is compared, bit for bit.
 * Only rank 0 prints, usage errors included. The send buffer is filled (pattern.c) before every
 * size and mode whatever -c says, as nccl-tests fills its buffers: a buffer never written reads
 * the kernel's zero page, and a 1 GiB allreduce at n = 2 over shared memory reported 18.9-19.1
 * GB/s that way against 10.0 GB/s with its data in memory.
 *
 * nccl-tests' flags mean what they mean there: -b -e -f, -i STEPBYTES (sizes grow by it when
 * there is no -f), -n -w -c -o -d -a -r, -z (1: each call blocks; 0: the calls of a batch are
 * issued nonblocking, up to WINDOW outstanding, and waited for), -T SECONDS (a wait's deadline:
 * TERN_TIMEOUT), -g and -t (GPUs and threads per process: tern runs one thread on CPUs, so only
 * 1). Collectives are named with or without underscores (all_reduce, allreduce,
 * all_reduce_perf). Without a launcher it runs as one rank.
 *
 * Beyond nccl-tests (bench/peers/ times tern and the peers by one method with these):
 * --target-ms MS replaces the fixed -n by a calibrated count (batches of 1, 4, 16, ... calls
 * until one lasts MS/5, then as many calls as last about MS, 3 to 100000, the same on every
 * rank); --repeats R times that many batches after a barrier each and reports their median;
 * -s 8,1K,... gives the sizes as a list instead of -b -e -f; --inplace 0 skips the in-place mode
 * (its columns print N/A), 2 the out-of-place one.
 */
#include "tern/cmd.h"
#include "tern/pattern.h"

#include "comm/env.h"
#include "core/core.h"
#include "net/net.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 32 /* -z 0: requests outstanding at once (TERN_MAX_OUTSTANDING allows 64) */

typedef enum bench_coll {
  B_ALLREDUCE,
  B_REDUCE_SCATTER,
  B_ALLGATHER,
  B_BROADCAST,
  B_REDUCE,
  B_ALLTOALL,
  B_SENDRECV
} bench_coll;

static const struct {
  const char *name;
  bool per_rank_blocks; /* size = n x count */
  bool has_op, has_root, has_inplace;
} colls[] = {
    [B_ALLREDUCE] = {"allreduce", false, true, false, true},
    [B_REDUCE_SCATTER] = {"reduce_scatter", true, true, false, true},
    [B_ALLGATHER] = {"allgather", true, false, false, true},
    [B_BROADCAST] = {"broadcast", false, false, true, true},
    [B_REDUCE] = {"reduce", false, true, true, true},
    [B_ALLTOALL] = {"alltoall", true, false, false, true},
    [B_SENDRECV] = {"sendrecv", false, false, false, false},
};

typedef struct bench {
  tern_comm *comm;
  int rank, n;
  bench_coll coll;
  size_t min_bytes, max_bytes;
  size_t sizes[64]; /* -s: replaces -b -e -f when nsizes > 0 */
  int nsizes;
  double factor, target_ms;
  size_t step_bytes; /* -i: sizes grow by it when factor <= 1 */
  int iters, warmup, check, avg, root, repeats, inplace, blocking;
  double timeout_s; /* -T: 0 leaves TERN_TIMEOUT as it is */
  tern_dtype dt;
  tern_op op;
  char *sendbuf, *recvbuf;
} bench;

static double bus_factor(bench_coll c, int n) {
  switch (c) {
  case B_ALLREDUCE:
    return 2.0 * (n - 1) / n;
  case B_REDUCE_SCATTER:
  case B_ALLGATHER:
  case B_ALLTOALL:
    return (double)(n - 1) / n;
  default:
    return 1.0;
  }
}

static const char *nccl_type_name(tern_dtype dt) {
  static const char *names[] = {"float", "double", "half",  "bfloat16",
                                "int8",  "uint8",  "int32", "int64"};
  return names[dt];
}

static double now_s(void) {
  return (double)core_now_ns() * 1e-9;
}

/* One call of the collective on b's buffers: send/recv are the mode's pointers. */
static tern_status run_once(bench *b, const void *send, void *recv, size_t count) {
  tern_comm *c = b->comm;
  switch (b->coll) {
  case B_ALLREDUCE:
    return tern_allreduce(c, send, recv, count, b->dt, b->op);
  case B_REDUCE_SCATTER:
    return tern_reduce_scatter(c, send, recv, count, b->dt, b->op);
  case B_ALLGATHER:
    return tern_allgather(c, send, recv, count, b->dt);
  case B_BROADCAST:
    return tern_broadcast(c, send, recv, count, b->dt, b->root);
  case B_REDUCE:
    return tern_reduce(c, send, recv, count, b->dt, b->op, b->root);
  case B_ALLTOALL:
    return tern_alltoall(c, send, recv, count, b->dt);
  case B_SENDRECV: {
    tern_request *s, *r;
    tern_status rc = tern_isend(c, send, count, b->dt, (b->rank + 1) % b->n, &s);
    if (rc != TERN_OK) return rc;
    rc = tern_irecv(c, recv, count, b->dt, (b->rank + b->n - 1) % b->n, &r);
    tern_status rs = tern_wait(s);
    if (rc == TERN_OK) rc = tern_wait(r);
    return rc != TERN_OK ? rc : rs;
  }
  }
  return TERN_ERR_INVALID_ARG;
}

/* One call, issued nonblocking: reqs gets one request (two for sendrecv); *nreq says how many. */
static tern_status start_once(bench *b, const void *send, void *recv, size_t count,
                              tern_request **reqs, int *nreq) {
  tern_comm *c = b->comm;
  *nreq = 1;
  switch (b->coll) {
  case B_ALLREDUCE:
    return tern_iallreduce(c, send, recv, count, b->dt, b->op, reqs);
  case B_REDUCE_SCATTER:
    return tern_ireduce_scatter(c, send, recv, count, b->dt, b->op, reqs);
  case B_ALLGATHER:
    return tern_iallgather(c, send, recv, count, b->dt, reqs);
  case B_BROADCAST:
    return tern_ibroadcast(c, send, recv, count, b->dt, b->root, reqs);
  case B_REDUCE:
    return tern_ireduce(c, send, recv, count, b->dt, b->op, b->root, reqs);
  case B_ALLTOALL:
    return tern_ialltoall(c, send, recv, count, b->dt, reqs);
  case B_SENDRECV: {
    *nreq = 0;
    tern_status rc = tern_isend(c, send, count, b->dt, (b->rank + 1) % b->n, &reqs[0]);
    if (rc != TERN_OK) return rc;
    *nreq = 1;
    rc = tern_irecv(c, recv, count, b->dt, (b->rank + b->n - 1) % b->n, &reqs[1]);
    *nreq += rc == TERN_OK;
    return rc;
  }
  }
  return TERN_ERR_INVALID_ARG;
}

/* -z 0: iters calls issued back to back without waiting, at most WINDOW outstanding (the oldest
 * waited for first), then all waited for. */
static tern_status run_nonblocking(bench *b, const void *send, void *recv, size_t count,
                                   int iters) {
  tern_request *reqs[WINDOW + 2];
  int held = 0;
  tern_status rc = TERN_OK;
  for (int i = 0; i < iters && rc == TERN_OK; i++) {
    while (held > WINDOW - 2 && rc == TERN_OK) {
      rc = tern_wait(reqs[0]);
      memmove(reqs, reqs + 1, (size_t)--held * sizeof *reqs);
    }
    int got = 0;
    if (rc == TERN_OK) rc = start_once(b, send, recv, count, reqs + held, &got);
    held += got;
  }
  for (int i = 0; i < held; i++) {
    tern_status w = tern_wait(reqs[i]);
    if (rc == TERN_OK) rc = w;
  }
  return rc;
}

/* The mode's buffers: in place shares one buffer the way the API defines for each collective. */
static void mode_buffers(bench *b, bool inplace, size_t count, const void **send, void **recv) {
  size_t block = count * tern_dtype_size(b->dt);
  *send = b->sendbuf;
  *recv = b->recvbuf;
  if (!inplace) return;
  switch (b->coll) {
  case B_REDUCE_SCATTER:
    *send = b->recvbuf;
    *recv = b->recvbuf + (size_t)b->rank * block;
    break;
  case B_ALLGATHER:
    *send = b->recvbuf + (size_t)b->rank * block;
    break;
  default:
    *send = b->recvbuf;
    break;
  }
}

static void fill_inputs(bench *b, const void *send, size_t count) {
  char *s = (char *)send;
  size_t esize = tern_dtype_size(b->dt);
  switch (b->coll) {
  case B_REDUCE_SCATTER:
    pattern_fill(s, b->dt, b->op, b->rank, 0, count * (size_t)b->n);
    break;
  case B_ALLTOALL:
    for (int j = 0; j < b->n; j++)
      pattern_fill(s + (size_t)j * count * esize, b->dt, b->op, b->rank, (size_t)j * count, count);
    break;
  default:
    pattern_fill(s, b->dt, b->op, b->rank, 0, count);
    break;
  }
}

static size_t count_wrong(bench *b, const void *recv, size_t count) {
  const char *r = recv;
  size_t esize = tern_dtype_size(b->dt), wrong = 0;
  switch (b->coll) {
  case B_ALLREDUCE:
    return pattern_count_wrong_reduced(r, b->dt, b->op, b->n, 0, count);
  case B_REDUCE_SCATTER:
    return pattern_count_wrong_reduced(r, b->dt, b->op, b->n, (size_t)b->rank * count, count);
  case B_REDUCE:
    return b->rank == b->root ? pattern_count_wrong_reduced(r, b->dt, b->op, b->n, 0, count) : 0;
  case B_BROADCAST:
    return pattern_count_wrong_input(r, b->dt, b->op, b->root, 0, count);
  case B_SENDRECV:
    return pattern_count_wrong_input(r, b->dt, b->op, (b->rank + b->n - 1) % b->n, 0, count);
  case B_ALLGATHER:
    for (int j = 0; j < b->n; j++)
      wrong += pattern_count_wrong_input(r + (size_t)j * count * esize, b->dt, b->op, j, 0, count);
    return wrong;
  case B_ALLTOALL:
    for (int i = 0; i < b->n; i++)
      wrong += pattern_count_wrong_input(r + (size_t)i * count * esize, b->dt, b->op, i,
                                         (size_t)b->rank * count, count);
    return wrong;
  }
  return 0;
}

static tern_status fail_call(bench *b, tern_status rc, const char *what) {
  fprintf(stderr, "tern bench: rank %d: %s failed: %s: %s\n", b->rank, what, tern_status_str(rc),
          tern_comm_last_error(b->comm));
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A barrier, then `iters` back-to-back calls; *secs = time per call, combined over ranks by -a. */
static tern_status timed_batch(bench *b, const void *send, void *recv, size_t count, int iters,
                               double *secs) {
  tern_status rc;
  if ((rc = tern_barrier(b->comm)) != TERN_OK) return fail_call(b, rc, "barrier");
  double t0 = now_s();
  if (!b->blocking && (rc = run_nonblocking(b, send, recv, count, iters)) != TERN_OK)
    return fail_call(b, rc, colls[b->coll].name);
  for (int i = 0; b->blocking && i < iters; i++)
    if ((rc = run_once(b, send, recv, count)) != TERN_OK)
      return fail_call(b, rc, colls[b->coll].name);
  double mine = (now_s() - t0) / (iters > 0 ? iters : 1);
  static const tern_op how[] = {TERN_SUM, TERN_AVG, TERN_MIN, TERN_MAX};
  if (b->avg == 0) {
    *secs = mine;
    rc = tern_broadcast(b->comm, &mine, secs, 1, TERN_F64, 0);
  } else {
    rc = tern_allreduce(b->comm, &mine, secs, 1, TERN_F64, how[b->avg]);
  }
  return rc == TERN_OK ? TERN_OK : fail_call(b, rc, "combining the times");
}

/* Times one (size, mode); *wrong gets the number of wrong elements over all ranks (or -1). */
static tern_status measure(bench *b, size_t count, bool inplace, double *secs, long *wrong) {
  const void *send;
  void *recv;
  mode_buffers(b, inplace, count, &send, &recv);
  tern_status rc;
  *wrong = -1;
  fill_inputs(b, send, count); /* whatever -c says: see the top of this file */
  if (b->check) {
    if ((rc = run_once(b, send, recv, count)) != TERN_OK)
      return fail_call(b, rc, colls[b->coll].name);
    int64_t mine = (int64_t)count_wrong(b, recv, count), all = 0;
    if ((rc = tern_allreduce(b->comm, &mine, &all, 1, TERN_I64, TERN_SUM)) != TERN_OK)
      return fail_call(b, rc, "summing #wrong");
    *wrong = (long)all;
  }
  for (int i = 0; i < b->warmup; i++)
    if ((rc = run_once(b, send, recv, count)) != TERN_OK) return fail_call(b, rc, "warm-up");
  int iters = b->iters;
  if (b->target_ms > 0) {
    double per_call = 0, target = b->target_ms * 1e-3;
    for (int k = 1;; k *= 4) {
      if ((rc = timed_batch(b, send, recv, count, k, &per_call)) != TERN_OK) return rc;
      if (per_call * k >= target / 5 || k >= 100000) break;
    }
    double want = target / (per_call > 0 ? per_call : 1e-9);
    iters = want < 3 ? 3 : want > 100000 ? 100000 : (int)want;
  }
  double reps[64] = {0};
  for (int r = 0; r < b->repeats; r++)
    if ((rc = timed_batch(b, send, recv, count, iters, &reps[r])) != TERN_OK) return rc;
  qsort(reps, (size_t)b->repeats, sizeof *reps, cmp_double);
  int m = b->repeats / 2;
  *secs = b->repeats % 2 ? reps[m] : (reps[m - 1] + reps[m]) / 2;
  return TERN_OK;
}

static void print_header(const bench *b) {
  const char *algo = getenv("TERN_ALGO");
  char iters[64];
  if (b->target_ms > 0)
    snprintf(iters, sizeof iters, "iterations for %g ms", b->target_ms);
  else
    snprintf(iters, sizeof iters, "%d iterations", b->iters);
  printf("# tern bench %s: %d ranks, %s %s, root %d, %s after %d warm-up, median of %d, "
         "check %d, %s, times %s\n",
         colls[b->coll].name, b->n, tern_dtype_name(b->dt), tern_op_name(b->op), b->root, iters,
         b->warmup, b->repeats, b->check, b->blocking ? "blocking calls" : "nonblocking calls",
         (const char *[]){"of rank 0", "averaged over ranks", "min over ranks",
                          "max over ranks"}[b->avg]);
  printf("# algorithm: %s; transport: %s\n#\n", algo && *algo ? algo : "chosen by the selector",
         getenv("TERN_TRANSPORT") && *getenv("TERN_TRANSPORT") ? getenv("TERN_TRANSPORT") : "auto");
  printf("# %10s  %12s  %8s  %6s  %6s  %30s  %30s\n", "", "", "", "", "", "out-of-place",
         "in-place");
  printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s %6s\n", "size", "count", "type",
         "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %8s %7s %7s %6s  %8s %7s %7s %6s\n", "(B)", "(elements)", "",
         "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void print_mode(const bench *b, size_t bytes, double secs, long wrong) {
  double algbw = secs > 0 ? (double)bytes / secs / 1e9 : 0;
  char w[24];
  if (wrong < 0)
    snprintf(w, sizeof w, "N/A");
  else
    snprintf(w, sizeof w, "%ld", wrong);
  /* -T times to a few ns: keep three decimals where nccl-tests' two would round them away */
  printf(b->target_ms > 0 ? "  %8.3f %7.2f %7.2f %6s" : "  %8.2f %7.2f %7.2f %6s", secs * 1e6,
         algbw, algbw * bus_factor(b->coll, b->n), w);
}

/* -i: 0 out of place only, 1 both, 2 in place only (MPI_Bcast's one buffer is broadcast in
 * place); a collective without an in-place form is measured out of place whatever -i says. */
static bool mode_on(const bench *b, int mode) {
  bool inplace_form = colls[b->coll].has_inplace;
  if (mode == 1) return inplace_form && b->inplace >= 1;
  return !inplace_form || b->inplace <= 1;
}

static int run_sizes(bench *b) {
  size_t esize = tern_dtype_size(b->dt), blocks = colls[b->coll].per_rank_blocks ? (size_t)b->n : 1;
  double bus_sum = 0;
  int rows = 0;
  long wrong_total = 0;
  if (b->rank == 0) print_header(b);
  for (size_t bytes = b->nsizes ? b->sizes[0] : b->min_bytes, si = 0; bytes <= b->max_bytes;) {
    size_t count = bytes / esize / blocks;
    size_t shown = count * esize * blocks;
    double t[2] = {0, 0};
    long wrong[2] = {-1, -1};
    for (int mode = 0; mode < 2; mode++) {
      if (!mode_on(b, mode)) continue;
      if (measure(b, count, mode == 1, &t[mode], &wrong[mode]) != TERN_OK) return 1;
    }
    if (b->rank == 0) {
      printf("  %10zu  %12zu  %8s  %6s  %6d", shown, count, nccl_type_name(b->dt),
             colls[b->coll].has_op ? tern_op_name(b->op) : "none",
             colls[b->coll].has_root ? b->root : -1);
      for (int mode = 0; mode < 2; mode++) {
        if (mode_on(b, mode))
          print_mode(b, shown, t[mode], wrong[mode]);
        else
          printf("  %8s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A");
      }
      printf("\n");
      fflush(stdout);
    }
    double first = mode_on(b, 0) ? t[0] : t[1]; /* the first column measured */
    bus_sum += first > 0 ? (double)shown / first / 1e9 * bus_factor(b->coll, b->n) : 0;
    rows++;
    for (int m = 0; m < 2; m++)
      wrong_total += wrong[m] > 0 ? wrong[m] : 0;
    if (b->nsizes) {
      if (++si == (size_t)b->nsizes) break;
      bytes = b->sizes[si];
      continue;
    }
    size_t next = b->factor > 1 ? (size_t)((double)bytes * b->factor) : bytes + b->step_bytes;
    if (next <= bytes) break;
    bytes = next;
  }
  if (b->rank == 0) {
    printf("# Out of bounds values : %ld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n#\n", rows ? bus_sum / rows : 0);
  }
  return wrong_total ? 1 : 0;
}

static void usage(FILE *out) {
  fprintf(
      out,
      "usage: tern bench COLL [-b MINBYTES] [-e MAXBYTES] [-f FACTOR | -i STEPBYTES] [-n ITERS]\n"
      "                       [-w WARMUP] [-c 0|1] [-d DTYPE|all] [-o OP|all] [-a 0|1|2|3]\n"
      "                       [-r ROOT] [-z 0|1] [-T SECONDS] [-g 1] [-t 1] [-s SIZE,SIZE,...]\n"
      "                       [--target-ms MS] [--repeats R] [--inplace 0|1|2]\n"
      "  COLL: allreduce reduce_scatter allgather broadcast reduce alltoall sendrecv, with or\n"
      "  without underscores (all_reduce, all_reduce_perf); nccl-tests' flags mean what they\n"
      "  mean there. Sizes take K, M, G suffixes (powers of 1024). Defaults: -b 8 -e 64M -f 2\n"
      "  (-i 1M when -i is given without -f) -n 20 -w 5 -c 1 -d float -o sum -a 1 -r 0 -z 1\n"
      "  --repeats 1 --inplace 1 (0: out of place only, 2: in place only).\n"
      "  Under `tern run -n N --` (or any launcher); alone, it runs as one rank.\n");
}

/* "all_reduce", "allreduce", "all_reduce_perf" (nccl-tests' program): the same collective. */
static bool coll_parse(const char *s, bench_coll *out) {
  char want[64];
  size_t k = 0;
  size_t len = strlen(s);
  if (len > 5 && strcmp(s + len - 5, "_perf") == 0) len -= 5;
  for (size_t i = 0; i < len && k + 1 < sizeof want; i++)
    if (s[i] != '_') want[k++] = s[i];
  want[k] = '\0';
  for (size_t i = 0; i < CORE_ARRAY_LEN(colls); i++) {
    char name[64];
    size_t m = 0;
    for (const char *p = colls[i].name; *p; p++)
      if (*p != '_') name[m++] = *p;
    name[m] = '\0';
    if (strcmp(want, name) == 0) {
      *out = (bench_coll)i;
      return true;
    }
  }
  return false;
}

/* -s 8,1K,64M: ascending, so that -e can be the largest. */
static bool parse_sizes(bench *b, const char *list) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list);
  b->nsizes = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    size_t v;
    if (b->nsizes == (int)CORE_ARRAY_LEN(b->sizes) || !core_parse_size(t, &v) || v == 0)
      return false;
    if (b->nsizes > 0 && v <= b->sizes[b->nsizes - 1]) return false;
    b->sizes[b->nsizes++] = v;
  }
  if (b->nsizes == 0) return false;
  b->min_bytes = b->sizes[0];
  b->max_bytes = b->sizes[b->nsizes - 1];
  return true;
}

enum { OPT_TARGET_MS = 256, OPT_REPEATS, OPT_INPLACE };

static int parse(bench *b, int argc, char **argv, bool *all_dt, bool *all_op) {
  if (argc < 2) return cmd_usage_error("bench", "which collective? (tern bench --help)");
  if (!coll_parse(argv[1], &b->coll))
    return cmd_usage_error("bench", "no collective '%s' (see tern bench --help)", argv[1]);
  static const struct option longs[] = {{"target-ms", required_argument, NULL, OPT_TARGET_MS},
                                        {"repeats", required_argument, NULL, OPT_REPEATS},
                                        {"inplace", required_argument, NULL, OPT_INPLACE},
                                        {NULL, 0, NULL, 0}};
  optind = 2;
  opterr = 0; /* its own message for each: the ranks but rank 0 stay quiet */
  int ch;
  long v;
  bool factor_given = false, step_given = false;
  while ((ch = getopt_long(argc, argv, ":b:e:f:i:n:w:c:d:o:a:r:z:T:g:t:s:", longs, NULL)) != -1) {
    bool ok = true;
    char flag[16];
    if (ch >= OPT_TARGET_MS)
      snprintf(flag, sizeof flag, "%s", longs[ch - OPT_TARGET_MS].name);
    else
      snprintf(flag, sizeof flag, "-%c", ch);
    switch (ch) {
    case 'b':
      ok = core_parse_size(optarg, &b->min_bytes);
      break;
    case 'e':
      ok = core_parse_size(optarg, &b->max_bytes);
      break;
    case 'f':
      b->factor = atof(optarg), factor_given = true;
      ok = b->factor >= 1;
      break;
    case 'i':
      ok = core_parse_size(optarg, &b->step_bytes) && b->step_bytes > 0, step_given = true;
      break;
    case 'z':
      ok = core_parse_int(optarg, 0, 1, &v), b->blocking = (int)v;
      break;
    case 'T':
      ok = core_parse_seconds(optarg, &b->timeout_s) && b->timeout_s > 0;
      break;
    case 'g':
    case 't':
      if (!core_parse_int(optarg, 1, 1, &v))
        return cmd_usage_error("bench",
                               "-%c %s: tern runs one thread per rank on CPUs, so -%c "
                               "can only be 1 (start more ranks with tern run -n)",
                               ch, optarg, ch);
      break;
    case 'n':
      ok = core_parse_int(optarg, 0, 100000000, &v), b->iters = (int)v;
      break;
    case 'w':
      ok = core_parse_int(optarg, 0, 100000000, &v), b->warmup = (int)v;
      break;
    case 'c':
      ok = core_parse_int(optarg, 0, 1, &v), b->check = (int)v;
      break;
    case 'a':
      ok = core_parse_int(optarg, 0, 3, &v), b->avg = (int)v;
      break;
    case 'r':
      ok = core_parse_int(optarg, 0, 1 << 30, &v), b->root = (int)v;
      break;
    case 's':
      ok = parse_sizes(b, optarg);
      break;
    case OPT_TARGET_MS:
      b->target_ms = atof(optarg);
      ok = b->target_ms >= 0 && b->target_ms <= 1e6;
      break;
    case OPT_REPEATS:
      ok = core_parse_int(optarg, 1, 64, &v), b->repeats = (int)v;
      break;
    case OPT_INPLACE:
      ok = core_parse_int(optarg, 0, 2, &v), b->inplace = (int)v;
      break;
    case 'd':
      *all_dt = strcmp(optarg, "all") == 0;
      ok = *all_dt || core_dtype_parse(optarg, &b->dt);
      break;
    case 'o':
      *all_op = strcmp(optarg, "all") == 0;
      ok = *all_op || core_op_parse(optarg, &b->op);
      break;
    case ':':
      return cmd_usage_error("bench", "%s needs a value", argv[optind - 1]);
    default:
      return cmd_usage_error("bench", "unknown option '%s' (tern bench --help)", argv[optind - 1]);
    }
    if (!ok) return cmd_usage_error("bench", "bad value '%s' for %s", optarg, flag);
  }
  if (optind < argc) return cmd_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  if (b->min_bytes > b->max_bytes) return cmd_usage_error("bench", "-b is larger than -e");
  if (step_given && !factor_given) b->factor = 1; /* nccl-tests: -i steps unless -f multiplies */
  return 0;
}

/* Rank 0 of a launched job (or a process alone) prints usage errors; the others only exit 2. */
static bool quiet_rank(void) {
  comm_env env;
  core_err ignored = {0};
  return comm_env_read(&env, &ignored) == TERN_OK && env.rank > 0;
}

/* The job from the launcher's variables, or, with none, a job of this one rank. */
static tern_status join(tern_comm **comm) {
  if (comm_env_launched()) return tern_comm_init_env(comm);
  int fd, port = 0;
  core_err err = {0};
  if (net_listen("127.0.0.1", 0, &fd, &port, &err) != TERN_OK) return err.status;
  close(fd); /* a free port for the store this rank serves itself */
  char store[32];
  snprintf(store, sizeof store, "127.0.0.1:%d", port);
  return tern_comm_init(comm, 0, 1, store);
}

int cmd_bench(int argc, char **argv) {
  bench b = {.min_bytes = 8,
             .max_bytes = 64u << 20,
             .factor = 2,
             .step_bytes = 1u << 20,
             .iters = 20,
             .warmup = 5,
             .check = 1,
             .avg = 1,
             .repeats = 1,
             .inplace = 1,
             .blocking = 1,
             .dt = TERN_F32,
             .op = TERN_SUM};
  bool all_dt = false, all_op = false;
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  cmd_usage_quiet(quiet_rank());
  int rc = parse(&b, argc, argv, &all_dt, &all_op);
  if (rc) return rc;
  char timeout[32];
  snprintf(timeout, sizeof timeout, "%g", b.timeout_s);
  if (b.timeout_s > 0) setenv("TERN_TIMEOUT", timeout, 1); /* read once, at the first call */
  tern_status st = join(&b.comm);
  if (st != TERN_OK) {
    fprintf(stderr, "tern bench: %s: %s\n", tern_status_str(st), tern_comm_last_error(NULL));
    return 1;
  }
  b.rank = tern_comm_rank(b.comm);
  b.n = tern_comm_size(b.comm);
  if (b.root >= b.n) {
    tern_comm_destroy(b.comm);
    return cmd_usage_error("bench", "-r %d is not a rank (the job has %d)", b.root, b.n);
  }
  size_t cap = (b.max_bytes + 64 + 4095) & ~(size_t)4095;
  b.sendbuf = aligned_alloc(4096, cap);
  b.recvbuf = aligned_alloc(4096, cap);
  if (b.sendbuf == NULL || b.recvbuf == NULL) {
    fprintf(stderr, "tern bench: no memory for two %zu-byte buffers\n", cap);
    rc = 1;
  } else { /* every page in memory before the first timing, as the filled inputs will be */
    memset(b.sendbuf, 0, cap);
    memset(b.recvbuf, 0, cap);
  }
  for (int d = all_dt ? 0 : (int)b.dt; !rc && d <= (all_dt ? TERN_NUM_DTYPES - 1 : (int)b.dt);
       d++) {
    for (int o = all_op ? 0 : (int)b.op; !rc && o <= (all_op ? TERN_NUM_OPS - 1 : (int)b.op); o++) {
      b.dt = (tern_dtype)d;
      b.op = (tern_op)o;
      rc = run_sizes(&b);
      if (!colls[b.coll].has_op) break;
    }
  }
  free(b.sendbuf);
  free(b.recvbuf);
  tern_comm_destroy(b.comm);
  return rc;
}

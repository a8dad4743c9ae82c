/* coll_matrix.c: every collective, for every dtype and op, in place and out of place, at counts
 * from 0 to past the transports' thresholds, for several roots; then nonblocking operations
 * several at a time while the caller computes; then bad arguments. Every element of every result
 * is compared bit for bit with the exact answer (tools/tern/pattern.c), and the bytes around each
 * output buffer must stay untouched. Run under `tern run -n N`; exits non-zero on any failure.
 *   coll_matrix [--large]   --large adds counts of a million and more (CMA, striping)
 */
#include "tern.h"
#include "pattern.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64
#define GUARD_BYTE 0xa5

static tern_comm *comm;
static int rank, n;
static long checks, failures;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "coll_matrix rank %d: ", rank);                                                \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
    if (++failures > 20) exit(1);                                                                  \
  } while (0)

/* A buffer with guard bytes on both sides. */
static char *guarded(size_t bytes) {
  char *p = malloc(bytes + 2 * GUARD);
  if (p == NULL) exit(3);
  memset(p, GUARD_BYTE, bytes + 2 * GUARD);
  return p + GUARD;
}

static void unguard(char *p) {
  if (p) free(p - GUARD);
}

static bool guards_intact(const char *p, size_t bytes) {
  for (size_t i = 0; i < GUARD; i++)
    if ((unsigned char)p[-1 - (long)i] != GUARD_BYTE || (unsigned char)p[bytes + i] != GUARD_BYTE)
      return false;
  return true;
}

static void expect_ok(tern_status rc, const char *what) {
  if (rc != TERN_OK) {
    FAIL("%s: %s: %s", what, tern_status_str(rc), tern_comm_last_error(comm));
    exit(1);
  }
}

static void check_count(size_t wrong, const char *what, tern_dtype dt, tern_op op, size_t count,
                        bool inplace, int root) {
  checks++;
  if (wrong)
    FAIL("%s %s/%s count %zu %s root %d: %zu elements wrong", what, tern_dtype_name(dt),
         tern_op_name(op), count, inplace ? "in place" : "out of place", root, wrong);
}

static void test_allreduce(tern_dtype dt, tern_op op, size_t count, bool inplace) {
  size_t b = count * tern_dtype_size(dt);
  char *s = guarded(b), *r = guarded(b);
  char *in = inplace ? r : s;
  pattern_fill(in, dt, op, rank, 0, count);
  expect_ok(tern_allreduce(comm, in, r, count, dt, op), "allreduce");
  size_t wrong = pattern_count_wrong_reduced(r, dt, op, n, 0, count);
  if (!inplace) wrong += pattern_count_wrong_input(s, dt, op, rank, 0, count); /* send untouched */
  wrong += !guards_intact(r, b) + !guards_intact(s, b);
  check_count(wrong, "allreduce", dt, op, count, inplace, -1);
  unguard(s);
  unguard(r);
}

static void test_reduce_scatter(tern_dtype dt, tern_op op, size_t count, bool inplace) {
  size_t es = tern_dtype_size(dt), b = count * es, all = b * (size_t)n;
  char *s = guarded(all), *r = guarded(b);
  pattern_fill(s, dt, op, rank, 0, count * (size_t)n);
  char *out = inplace ? s + (size_t)rank * b : r;
  expect_ok(tern_reduce_scatter(comm, s, out, count, dt, op), "reduce_scatter");
  size_t wrong = pattern_count_wrong_reduced(out, dt, op, n, (size_t)rank * count, count);
  wrong += !guards_intact(s, all) + !guards_intact(r, b);
  check_count(wrong, "reduce_scatter", dt, op, count, inplace, -1);
  unguard(s);
  unguard(r);
}

static void test_allgather(tern_dtype dt, size_t count, bool inplace) {
  size_t es = tern_dtype_size(dt), b = count * es, all = b * (size_t)n;
  char *s = guarded(b), *r = guarded(all);
  char *in = inplace ? r + (size_t)rank * b : s;
  pattern_fill(in, dt, TERN_SUM, rank, 0, count);
  expect_ok(tern_allgather(comm, in, r, count, dt), "allgather");
  size_t wrong = 0;
  for (int j = 0; j < n; j++)
    wrong += pattern_count_wrong_input(r + (size_t)j * b, dt, TERN_SUM, j, 0, count);
  wrong += !guards_intact(s, b) + !guards_intact(r, all);
  check_count(wrong, "allgather", dt, TERN_SUM, count, inplace, -1);
  unguard(s);
  unguard(r);
}

static void test_broadcast(tern_dtype dt, size_t count, bool inplace, int root) {
  size_t b = count * tern_dtype_size(dt);
  char *s = guarded(b), *r = guarded(b);
  char *in = inplace && rank == root ? r : s;
  pattern_fill(in, dt, TERN_SUM, rank, 0, count);
  expect_ok(tern_broadcast(comm, rank == root ? in : NULL, r, count, dt, root), "broadcast");
  size_t wrong = pattern_count_wrong_input(r, dt, TERN_SUM, root, 0, count);
  wrong += !guards_intact(s, b) + !guards_intact(r, b);
  check_count(wrong, "broadcast", dt, TERN_SUM, count, inplace, root);
  unguard(s);
  unguard(r);
}

static void test_reduce(tern_dtype dt, tern_op op, size_t count, bool inplace, int root) {
  size_t b = count * tern_dtype_size(dt);
  char *s = guarded(b), *r = rank == root ? guarded(b) : NULL;
  char *in = inplace && rank == root ? r : s;
  pattern_fill(in, dt, op, rank, 0, count);
  expect_ok(tern_reduce(comm, in, r, count, dt, op, root), "reduce");
  size_t wrong = rank == root ? pattern_count_wrong_reduced(r, dt, op, n, 0, count) : 0;
  if (!(inplace && rank == root)) wrong += pattern_count_wrong_input(s, dt, op, rank, 0, count);
  wrong += !guards_intact(s, b) + (r ? !guards_intact(r, b) : 0);
  check_count(wrong, "reduce", dt, op, count, inplace, root);
  unguard(s);
  unguard(r);
}

static void test_alltoall(tern_dtype dt, size_t count, bool inplace) {
  size_t es = tern_dtype_size(dt), b = count * es, all = b * (size_t)n;
  char *s = guarded(all), *r = guarded(all);
  char *in = inplace ? r : s;
  for (int j = 0; j < n; j++)
    pattern_fill(in + (size_t)j * b, dt, TERN_SUM, rank, (size_t)j * count, count);
  expect_ok(tern_alltoall(comm, in, r, count, dt), "alltoall");
  size_t wrong = 0;
  for (int i = 0; i < n; i++)
    wrong +=
        pattern_count_wrong_input(r + (size_t)i * b, dt, TERN_SUM, i, (size_t)rank * count, count);
  wrong += !guards_intact(s, all) + !guards_intact(r, all);
  check_count(wrong, "alltoall", dt, TERN_SUM, count, inplace, -1);
  unguard(s);
  unguard(r);
}

static void test_gather(tern_dtype dt, size_t count, bool inplace, int root) {
  size_t b = count * tern_dtype_size(dt), all = b * (size_t)n;
  char *s = guarded(b), *r = rank == root ? guarded(all) : NULL;
  char *in = inplace && rank == root ? r + (size_t)root * b : s;
  pattern_fill(in, dt, TERN_SUM, rank, 0, count);
  expect_ok(tern_gather(comm, in, r, count, dt, root), "gather");
  size_t wrong = 0;
  for (int j = 0; r != NULL && j < n; j++)
    wrong += pattern_count_wrong_input(r + (size_t)j * b, dt, TERN_SUM, j, 0, count);
  wrong += !guards_intact(s, b) + (r ? !guards_intact(r, all) : 0);
  check_count(wrong, "gather", dt, TERN_SUM, count, inplace, root);
  unguard(s);
  unguard(r);
}

static void test_scatter(tern_dtype dt, size_t count, bool inplace, int root) {
  size_t b = count * tern_dtype_size(dt), all = b * (size_t)n;
  char *s = rank == root ? guarded(all) : NULL, *r = guarded(b);
  for (int j = 0; s != NULL && j < n; j++)
    pattern_fill(s + (size_t)j * b, dt, TERN_SUM, rank, (size_t)j * count, count);
  char *out = inplace && rank == root ? s + (size_t)root * b : r;
  expect_ok(tern_scatter(comm, s, out, count, dt, root), "scatter");
  size_t wrong = pattern_count_wrong_input(out, dt, TERN_SUM, root, (size_t)rank * count, count);
  wrong += !guards_intact(r, b) + (s ? !guards_intact(s, all) : 0);
  check_count(wrong, "scatter", dt, TERN_SUM, count, inplace, root);
  unguard(s);
  unguard(r);
}

/* Send to the right, receive from the left, with the blocking calls ordered so that they pair. */
static void test_sendrecv(tern_dtype dt, size_t count) {
  if (n == 1) return;
  size_t b = count * tern_dtype_size(dt);
  char *s = guarded(b), *r = guarded(b);
  pattern_fill(s, dt, TERN_SUM, rank, 0, count);
  int right = (rank + 1) % n, left = (rank + n - 1) % n;
  if (rank % 2 == 0) {
    expect_ok(tern_send(comm, s, count, dt, right), "send");
    expect_ok(tern_recv(comm, r, count, dt, left), "recv");
  } else {
    expect_ok(tern_recv(comm, r, count, dt, left), "recv");
    expect_ok(tern_send(comm, s, count, dt, right), "send");
  }
  size_t wrong = pattern_count_wrong_input(r, dt, TERN_SUM, left, 0, count);
  wrong += !guards_intact(r, b);
  check_count(wrong, "send/recv", dt, TERN_SUM, count, false, -1);
  unguard(s);
  unguard(r);
}

static void matrix(const size_t *counts, size_t ncounts, bool all_types) {
  int roots[3] = {0, n - 1, n / 2};
  for (int d = 0; d < TERN_NUM_DTYPES; d++) {
    tern_dtype dt = (tern_dtype)d;
    if (!all_types && dt != TERN_F32 && dt != TERN_BF16 && dt != TERN_I64) continue;
    for (size_t ci = 0; ci < ncounts; ci++) {
      size_t count = counts[ci];
      for (int inplace = 0; inplace <= 1; inplace++) {
        for (int o = 0; o < TERN_NUM_OPS; o++) {
          test_allreduce(dt, (tern_op)o, count, inplace);
          test_reduce_scatter(dt, (tern_op)o, count, inplace);
          for (int ri = 0; ri < 3; ri++)
            test_reduce(dt, (tern_op)o, count, inplace, roots[ri]);
        }
        test_allgather(dt, count, inplace);
        for (int ri = 0; ri < 3; ri++)
          test_broadcast(dt, count, inplace, roots[ri]);
        /* one root each (the checker proves their schedules at every root): the matrix's time */
        test_gather(dt, count, inplace, roots[1]);
        test_scatter(dt, count, inplace, roots[2]);
        test_alltoall(dt, count, inplace);
      }
      test_sendrecv(dt, count);
    }
    expect_ok(tern_barrier(comm), "barrier");
  }
}

/* Several requests outstanding at once, all advancing while this thread computes. */
static void nonblocking(size_t count) {
  enum { K = 8 };
  float *bufs[K];
  tern_request *reqs[K + 3];
  for (int k = 0; k < K; k++) {
    bufs[k] = malloc(count * sizeof(float) + 1);
    pattern_fill(bufs[k], TERN_F32, TERN_SUM, rank + k, 0, count);
    expect_ok(tern_iallreduce(comm, bufs[k], bufs[k], count, TERN_F32, TERN_MAX, &reqs[k]),
              "iallreduce");
  }
  float *bc = malloc(count * sizeof(float) + 1);
  pattern_fill(bc, TERN_F32, TERN_SUM, rank, 0, count);
  expect_ok(tern_ibroadcast(comm, bc, bc, count, TERN_F32, n - 1, &reqs[K]), "ibroadcast");
  float *out = malloc(count * sizeof(float) + 1), *in = malloc(count * sizeof(float) + 1);
  pattern_fill(out, TERN_F32, TERN_SUM, rank, 0, count);
  int used = K + 1;
  if (n > 1) {
    /* a swap with both neighbours at once: each side sends first, which only works because the
     * engine runs consecutive point-to-point requests together */
    expect_ok(tern_isend(comm, out, count, TERN_F32, (rank + 1) % n, &reqs[used++]), "isend");
    expect_ok(tern_irecv(comm, in, count, TERN_F32, (rank + n - 1) % n, &reqs[used++]), "irecv");
  }
  volatile double sink = 0; /* compute while the requests advance */
  for (int i = 0; i < 2000000; i++)
    sink += i * 0.5;
  int done = 0;
  expect_ok(tern_test(reqs[0], &done), "test");
  if (!done) expect_ok(tern_wait(reqs[0]), "wait");
  for (int k = 1; k < used; k++)
    expect_ok(tern_wait(reqs[k]), "wait");
  for (int k = 0; k < K; k++) {
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
      double want = 0;
      for (int r = 0; r < n; r++) {
        double v = pattern_value(TERN_SUM, r + k, i);
        want = r == 0 || v > want ? v : want;
      }
      wrong += bufs[k][i] != (float)want;
    }
    check_count(wrong, "iallreduce", TERN_F32, TERN_MAX, count, true, -1);
    free(bufs[k]);
  }
  check_count(pattern_count_wrong_input(bc, TERN_F32, TERN_SUM, n - 1, 0, count), "ibroadcast",
              TERN_F32, TERN_SUM, count, true, n - 1);
  if (n > 1)
    check_count(pattern_count_wrong_input(in, TERN_F32, TERN_SUM, (rank + n - 1) % n, 0, count),
                "isend/irecv", TERN_F32, TERN_SUM, count, false, -1);
  free(bc);
  free(out);
  free(in);
  (void)sink;
}

static void expect_invalid(tern_status rc, const char *what, const char *needle) {
  checks++;
  const char *msg = tern_comm_last_error(comm);
  if (rc != TERN_ERR_INVALID_ARG || strstr(msg, needle) == NULL)
    FAIL("%s: got %s '%s', want TERN_ERR_INVALID_ARG mentioning '%s'", what, tern_status_str(rc),
         msg, needle);
}

/* Bad arguments are refused with a message, and the communicator stays usable. */
static void bad_arguments(void) {
  float x[4] = {0};
  tern_request *req;
  expect_invalid(tern_allreduce(comm, NULL, x, 4, TERN_F32, TERN_SUM), "null sendbuf",
                 "sendbuf is NULL");
  expect_invalid(tern_allreduce(comm, x, x, 4, (tern_dtype)42, TERN_SUM), "bad dtype", "dtype 42");
  expect_invalid(tern_allreduce(comm, x, x, 4, TERN_F32, (tern_op)9), "bad op", "op 9");
  expect_invalid(tern_broadcast(comm, x, x, 4, TERN_F32, n), "root out of range", "root");
  expect_invalid(tern_reduce(comm, x, x, 4, TERN_F32, TERN_SUM, -1), "negative root", "root -1");
  expect_invalid(tern_send(comm, x, 4, TERN_F32, rank), "send to self", "peer");
  expect_invalid(tern_allreduce(comm, x, x + 1, 2, TERN_F32, TERN_SUM), "overlap", "overlap");
  expect_invalid(tern_iallreduce(comm, x, x, 4, TERN_F32, TERN_SUM, NULL), "no req", "req is NULL");
  expect_invalid(tern_allreduce(comm, x, x, SIZE_MAX / 2, TERN_F64, TERN_SUM), "huge", "overflows");
  (void)req;
  float one = 1, sum = 0;
  expect_ok(tern_allreduce(comm, &one, &sum, 1, TERN_F32, TERN_SUM), "allreduce after bad args");
  checks++;
  if (sum != (float)n) FAIL("allreduce after bad arguments gave %g, want %d", sum, n);
}

int main(int argc, char **argv) {
  bool large = argc == 2 && strcmp(argv[1], "--large") == 0;
  if (argc > 2 || (argc == 2 && !large)) {
    fprintf(stderr, "usage: coll_matrix [--large]\n");
    return 2;
  }
  tern_status rc = tern_comm_init_env(&comm);
  if (rc != TERN_OK) {
    fprintf(stderr, "coll_matrix: init: %s: %s\n", tern_status_str(rc), tern_comm_last_error(NULL));
    return 1;
  }
  rank = tern_comm_rank(comm);
  n = tern_comm_size(comm);
  size_t small[] = {0, 1, 5, (size_t)n - 1, (size_t)n * 3 + 1, 1027};
  matrix(small, sizeof small / sizeof small[0], true);
  if (large) {
    size_t big[] = {(size_t)1 << 14, ((size_t)1 << 20) + 3};
    matrix(big, 2, false);
  }
  nonblocking(large ? ((size_t)1 << 18) + 1 : 1000);
  bad_arguments();
  expect_ok(tern_barrier(comm), "final barrier");
  long all = 0, mine = failures;
  tern_allreduce(comm, &mine, &all, 1, TERN_I64, TERN_SUM);
  if (rank == 0)
    printf("coll_matrix: %d ranks, %ld checks per rank, %ld failures in all%s\n", n, checks, all,
           large ? " (with large counts)" : "");
  tern_comm_destroy(comm);
  return all ? 1 : 0;
}

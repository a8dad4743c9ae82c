/* alltoallv.c: tern_alltoallv and tern_ialltoallv move every block where the counts say, over the
 * transport `tern run` gives: uneven counts, empty blocks (and a call with every count zero),
 * blocks laid out in any order with gaps, in place, several at once nonblocking, at sizes on
 * both sides of the transports' thresholds; the gaps and the bytes around each buffer stay
 * untouched; then the arguments a rank alone can see are refused with TERN_ERR_INVALID_ARG and
 * the communicator still works. Exits non-zero on any failure.
 *   alltoallv_test
 */
#include "tern.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 16
#define FILL 0x5a5a5a5au

static tern_comm *comm;
static int rank, n;
static long failures;

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "alltoallv rank %d: ", rank);                                                  \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
    if (++failures > 20) exit(1);                                                                  \
  } while (0)

/* What rank i sends rank j: base times a small number, zero for about a fifth of the pairs. */
static size_t count_of(int i, int j, size_t base) {
  return base * (size_t)((i * 7 + j * 3 + (int)(base % 5)) % 5);
}

static uint32_t value(int i, int j, size_t e) {
  return (uint32_t)i * 1000003u + (uint32_t)j * 7919u + (uint32_t)e;
}

typedef struct layout {
  size_t sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
  size_t send_ext, recv_ext;
} layout;

/* Send blocks in reverse rank order, receive blocks in order, one element of gap after each. */
static void lay_out(layout *l, size_t base) {
  size_t at = 0;
  for (int j = n - 1; j >= 0; j--)
    l->sc[j] = count_of(rank, j, base), l->sd[j] = at, at += l->sc[j] + 1;
  l->send_ext = at;
  at = 0;
  for (int i = 0; i < n; i++)
    l->rc[i] = count_of(i, rank, base), l->rd[i] = at, at += l->rc[i] + 1;
  l->recv_ext = at;
}

static void fill_send(uint32_t *s, const layout *l) {
  for (int j = 0; j < n; j++)
    for (size_t e = 0; e < l->sc[j]; e++)
      s[l->sd[j] + e] = value(rank, j, e);
}

static void check_recv(const uint32_t *r, const layout *l, const char *what) {
  size_t wrong = 0;
  bool *mine = calloc(l->recv_ext + 1, 1);
  for (int i = 0; i < n; i++)
    for (size_t e = 0; e < l->rc[i]; e++) {
      wrong += r[l->rd[i] + e] != value(i, rank, e);
      mine[l->rd[i] + e] = true;
    }
  for (size_t k = 0; k < l->recv_ext; k++)
    wrong += !mine[k] && r[k] != FILL; /* a gap */
  free(mine);
  if (wrong) FAIL("%s: %zu elements wrong", what, wrong);
}

static uint32_t *filled(size_t count) {
  uint32_t *p = malloc((count + 2) * sizeof *p);
  if (p == NULL) exit(3);
  for (size_t k = 0; k < count + 2; k++)
    p[k] = FILL;
  return p + 1;
}

static void expect_ok(tern_status rc, const char *what) {
  if (rc != TERN_OK) {
    FAIL("%s: %s: %s", what, tern_status_str(rc), tern_comm_last_error(comm));
    exit(1);
  }
}

/* In place, one buffer holds both layouts: the gaps of the receive layout may hold sent blocks
 * afterwards, so only the blocks are checked there. */
static void one(size_t base, bool inplace) {
  layout l;
  lay_out(&l, base);
  size_t ext = inplace && l.send_ext > l.recv_ext ? l.send_ext : l.recv_ext;
  uint32_t *r = filled(ext), *s = inplace ? r : filled(l.send_ext);
  fill_send(s, &l);
  expect_ok(tern_alltoallv(comm, s, l.sc, l.sd, r, l.rc, l.rd, TERN_I32), "alltoallv");
  char what[64];
  snprintf(what, sizeof what, "alltoallv of base %zu%s", base, inplace ? " in place" : "");
  if (inplace) {
    size_t wrong = 0;
    for (int i = 0; i < n; i++)
      for (size_t e = 0; e < l.rc[i]; e++)
        wrong += r[l.rd[i] + e] != value(i, rank, e);
    if (wrong) FAIL("%s: %zu elements wrong", what, wrong);
  } else {
    check_recv(r, &l, what);
    free(s - 1);
  }
  if (r[-1] != FILL || r[ext] != FILL) FAIL("%s: a guard was written", what);
  free(r - 1);
}

/* Several outstanding at once, of different sizes, waited for in reverse order. */
static void nonblocking(void) {
  enum { K = 4 };
  layout l[K];
  uint32_t *s[K], *r[K];
  tern_request *req[K];
  for (int k = 0; k < K; k++) {
    lay_out(&l[k], (size_t)1 << (3 * k));
    s[k] = filled(l[k].send_ext), r[k] = filled(l[k].recv_ext);
    fill_send(s[k], &l[k]);
    expect_ok(
        tern_ialltoallv(comm, s[k], l[k].sc, l[k].sd, r[k], l[k].rc, l[k].rd, TERN_I32, &req[k]),
        "ialltoallv");
  }
  for (int k = K - 1; k >= 0; k--) {
    expect_ok(tern_wait(req[k]), "wait");
    check_recv(r[k], &l[k], "ialltoallv");
    free(s[k] - 1), free(r[k] - 1);
  }
}

static void expect_refused(tern_status rc, const char *what, const char *says) {
  if (rc != TERN_ERR_INVALID_ARG || strstr(tern_comm_last_error(comm), says) == NULL)
    FAIL("%s: got %s (%s), want TERN_ERR_INVALID_ARG saying '%s'", what, tern_status_str(rc),
         tern_comm_last_error(comm), says);
}

static void bad_args(void) {
  layout l;
  lay_out(&l, 2);
  uint32_t *s = filled(l.send_ext), *r = filled(l.recv_ext);
  expect_refused(tern_alltoallv(comm, s, NULL, l.sd, r, l.rc, l.rd, TERN_I32), "NULL counts",
                 "NULL");
  size_t own = l.rc[rank];
  l.rc[rank] = own + 1;
  expect_refused(tern_alltoallv(comm, s, l.sc, l.sd, r, l.rc, l.rd, TERN_I32), "own count",
                 "sends itself");
  l.rc[rank] = own;
  size_t d = l.sd[0];
  l.sd[0] = SIZE_MAX - 1;
  expect_refused(tern_alltoallv(comm, s, l.sc, l.sd, r, l.rc, l.rd, TERN_I32), "overflow",
                 "overflows");
  l.sd[0] = d;
  expect_refused(tern_alltoallv(comm, s, l.sc, l.sd, s + 1, l.rc, l.rd, TERN_I32), "overlap",
                 "overlap");
  expect_refused(tern_ialltoallv(comm, s, l.sc, l.sd, r, l.rc, l.rd, TERN_I32, NULL), "no req",
                 "req is NULL");
  free(s - 1), free(r - 1);
}

int main(void) {
  if (tern_comm_init_env(&comm) != TERN_OK) {
    fprintf(stderr, "alltoallv: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  rank = tern_comm_rank(comm), n = tern_comm_size(comm);
  if (n > MAXN) return 2;
  const size_t bases[] = {0, 1, 3, 1000, 70000}; /* 0: every count zero; 70000: past the slots */
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
    for (int inplace = 0; inplace <= 1; inplace++)
      one(bases[b], inplace);
  nonblocking();
  bad_args();
  one(5, false); /* refused calls leave the communicator working */
  expect_ok(tern_barrier(comm), "barrier");
  printf("alltoallv rank %d: %s\n", rank, failures ? "FAIL" : "PASS");
  tern_comm_destroy(comm);
  return failures != 0;
}

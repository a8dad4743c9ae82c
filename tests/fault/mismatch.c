/* mismatch.c: ranks that disagree on a collective's arguments are told so, every one of them,
 * instead of hanging or reading each other's bytes as something else.
 *   mismatch WHAT [COUNT]
 *     count, dtype, op  an allreduce where rank 0 passes the odd value
 *     kind              rank 0 calls broadcast, the others allreduce
 *     root              a broadcast where rank 0 passes root 1, the others root 0
 *     own_root          a broadcast where every rank passes itself as the root
 *     reduce_root, reduce_own_root   the same two for reduce
 *     alltoallv         rank 0 expects COUNT + 1 elements from every rank, which sends COUNT
 *     alltoallv_zero    rank 0 expects nothing from any rank (all its receive counts zero)
 *   COUNT: elements of f32 (default 2000; a small count moves in a single message)
 * Each rank prints "rank R: STATUS: message" and exits 0. A rank whose part of the collective is
 * only to send (a broadcast root) can finish without knowing; every rank that receives must
 * fail, and the checking script looks for the message that names the disagreement and for every
 * rank's line.
 */
#include "tern.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every rank sends every rank count elements; rank 0 expects want from each. */
static tern_status alltoallv(tern_comm *c, int rank, size_t count, size_t want) {
  enum { MAXN = 16 };
  static float in[1 << 16], out[1 << 16];
  int n = tern_comm_size(c);
  size_t sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
  if (n > MAXN || (size_t)n * (count + 1) > sizeof in / sizeof in[0]) return TERN_ERR_INVALID_ARG;
  for (int q = 0; q < n; q++) {
    sc[q] = count, sd[q] = (size_t)q * count;
    rc[q] = rank == 0 && q != 0 ? want : count, rd[q] = (size_t)q * (count + 1);
  }
  return tern_alltoallv(c, in, sc, sd, out, rc, rd, TERN_F32);
}

static int root_of(const char *what, int rank) {
  if (strstr(what, "own_root")) return rank;
  return strstr(what, "root") && rank == 0 ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) return 2;
  const char *what = argv[1];
  tern_comm *c;
  if (tern_comm_init_env(&c) != TERN_OK) {
    fprintf(stderr, "mismatch: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  int rank = tern_comm_rank(c);
  bool odd = rank == 0;
  static float buf[1 << 16];
  size_t base = argc == 3 ? strtoul(argv[2], NULL, 10) : 2000;
  if (base == 0 || base > sizeof buf / sizeof buf[0] / 2) return 2;
  size_t count = odd && !strcmp(what, "count") ? base / 2 : base;
  tern_dtype dt = odd && !strcmp(what, "dtype") ? TERN_I32 : TERN_F32;
  tern_op op = odd && !strcmp(what, "op") ? TERN_MAX : TERN_SUM;
  int root = root_of(what, rank);
  tern_status rc;
  if (!strncmp(what, "alltoallv", 9))
    rc = alltoallv(c, rank, base, strstr(what, "zero") ? 0 : base + 1);
  else if (!strncmp(what, "reduce_", 7))
    rc = tern_reduce(c, buf, buf, count, dt, op, root);
  else if (strstr(what, "root"))
    rc = tern_broadcast(c, buf, buf, count, dt, root);
  else if (odd && !strcmp(what, "kind"))
    rc = tern_broadcast(c, buf, buf, count, dt, 0);
  else
    rc = tern_allreduce(c, buf, buf, count, dt, op);
  printf("rank %d: %s: %s\n", rank, tern_status_str(rc), tern_comm_last_error(c));
  fflush(stdout);
  tern_comm_destroy(c);
  return 0;
}

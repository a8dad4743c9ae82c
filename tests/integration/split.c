/* split.c: tern_comm_split, run under `tern run -n N` (N >= 3).
 *
 * Every rank checks, printing "PASS rank R" or "FAIL rank R: ...":
 *  - colors rank % 2 with key -rank: the child holds the ranks of one parity in reverse order
 *    (child rank = position by descending parent rank), and an allreduce in it sums exactly
 *    its members' parent ranks while the parent stays usable (an allreduce over all N);
 *  - the last rank passes TERN_SPLIT_UNDEFINED in a second split: its child is NULL, and the
 *    others' child holds N - 1 ranks in parent order (equal keys: ties go by parent rank);
 *  - a child of a child (split again by rank < 1 within the parity child) broadcasts;
 *  - a color below -1 is refused as TERN_ERR_INVALID_ARG on every rank, with no child.
 */
#include "tern.h"

#include <stdio.h>

static int fail(int rank, const char *what, tern_comm *c, tern_status rc) {
  printf("FAIL rank %d: %s: %s (%s)\n", rank, what, tern_status_str(rc), tern_comm_last_error(c));
  return 1;
}

static int parity_child(tern_comm *world, int rank, int n) {
  tern_comm *child = NULL;
  tern_status rc = tern_comm_split(world, rank % 2, -rank, &child);
  if (rc != TERN_OK) return fail(rank, "split by parity", world, rc);
  int size = (n - rank % 2 + 1) / 2, higher = 0;
  for (int r = rank + 2; r < n; r += 2)
    higher++;
  if (tern_comm_size(child) != size || tern_comm_rank(child) != higher) {
    printf("FAIL rank %d: parity child rank %d of %d, want %d of %d\n", rank, tern_comm_rank(child),
           tern_comm_size(child), higher, size);
    return 1;
  }
  double x = rank, want = 0, all = 1;
  for (int r = rank % 2; r < n; r += 2)
    want += r;
  if ((rc = tern_allreduce(child, &x, &x, 1, TERN_F64, TERN_SUM)) != TERN_OK)
    return fail(rank, "allreduce in the child", child, rc);
  if ((rc = tern_allreduce(world, &all, &all, 1, TERN_F64, TERN_SUM)) != TERN_OK)
    return fail(rank, "allreduce in the parent", world, rc);
  if (x != want || all != n) {
    printf("FAIL rank %d: child sum %g (want %g), parent sum %g (want %d)\n", rank, x, want, all,
           n);
    return 1;
  }
  tern_comm *grandchild = NULL;
  int in = tern_comm_rank(child) < 1;
  rc = tern_comm_split(child, in ? 0 : TERN_SPLIT_UNDEFINED, 0, &grandchild);
  if (rc != TERN_OK) return fail(rank, "split of the child", child, rc);
  if ((grandchild != NULL) != in) {
    printf("FAIL rank %d: grandchild %p, want one: %d\n", rank, (void *)grandchild, in);
    return 1;
  }
  if (grandchild) {
    int v = rank;
    rc = tern_broadcast(grandchild, &v, &v, 1, TERN_I32, 0);
    if (rc != TERN_OK || v != rank)
      return fail(rank, "broadcast in the grandchild", grandchild, rc);
  }
  tern_comm_destroy(grandchild);
  tern_comm_destroy(child);
  return 0;
}

static int undefined_last(tern_comm *world, int rank, int n) {
  tern_comm *child = NULL;
  int color = rank == n - 1 ? TERN_SPLIT_UNDEFINED : 7;
  tern_status rc = tern_comm_split(world, color, 0, &child);
  if (rc != TERN_OK) return fail(rank, "split with an undefined color", world, rc);
  if (rank == n - 1) {
    if (child == NULL) return 0;
    printf("FAIL rank %d: TERN_SPLIT_UNDEFINED gave a child\n", rank);
    return 1;
  }
  int sum = 1;
  rc = child ? tern_allreduce(child, &sum, &sum, 1, TERN_I32, TERN_SUM) : TERN_ERR_INVALID_ARG;
  if (rc != TERN_OK || tern_comm_rank(child) != rank || sum != n - 1)
    return fail(rank, "the child without the last rank", child, rc);
  tern_comm_destroy(child);
  return 0;
}

int main(void) {
  tern_comm *world = NULL;
  tern_status rc = tern_comm_init_env(&world);
  if (rc != TERN_OK) return fail(-1, "init", NULL, rc);
  int rank = tern_comm_rank(world), n = tern_comm_size(world);
  int bad = parity_child(world, rank, n) || undefined_last(world, rank, n);
  tern_comm *child = world; /* a refused split must set it to NULL */
  if (!bad && (rc = tern_comm_split(world, -2, 0, &child)) != TERN_ERR_INVALID_ARG) {
    printf("FAIL rank %d: color -2 gave %s, want TERN_ERR_INVALID_ARG\n", rank,
           tern_status_str(rc));
    bad = 1;
  }
  if (!bad && child != NULL) {
    printf("FAIL rank %d: a refused split left a child\n", rank);
    bad = 1;
  }
  if (!bad) printf("PASS rank %d\n", rank);
  tern_comm_destroy(world);
  return bad;
}

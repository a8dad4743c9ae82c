/* same_everywhere.c: train_same_everywhere (lib/digits/train.c), the check behind "every
 * rank ends with bit-identical weights", must see a single flipped bit on a single rank.
 * Under `tern run -n N`: every rank holds the same 4810 floats, and the check must say "same" on
 * every rank; then the last rank flips one low bit of one float (a difference of one ulp), and
 * the check must say "differ" on every rank, rank 0 included. Each rank prints PASS or FAIL.
 */
#include "digits/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4810

int main(void) {
  tern_comm *c;
  if (tern_comm_init_env(&c) != TERN_OK) {
    printf("FAIL: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  int rank = tern_comm_rank(c), n = tern_comm_size(c);
  static float w[COUNT];
  for (int i = 0; i < COUNT; i++)
    w[i] = 1.0f / (float)(i + 1);
  char err[512];
  bool same = false, after = true;
  int rc = train_same_everywhere(c, w, COUNT, &same, err, sizeof err);
  if (rc == 0 && rank == n - 1) {
    uint32_t bits;
    memcpy(&bits, &w[3001], sizeof bits);
    bits ^= 1;
    memcpy(&w[3001], &bits, sizeof bits);
  }
  if (rc == 0) rc = train_same_everywhere(c, w, COUNT, &after, err, sizeof err);
  if (rc != 0)
    printf("FAIL rank %d: %s\n", rank, err);
  else if (!same || after)
    printf("FAIL rank %d: same %d, after one flipped bit %d\n", rank, same, after);
  else
    printf("PASS rank %d: equal weights seen equal, one flipped bit on rank %d seen\n", rank,
           n - 1);
  tern_comm_destroy(c);
  return rc == 0 && same && !after ? 0 : 1;
}

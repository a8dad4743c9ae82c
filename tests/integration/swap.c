/* swap.c: a ring of nonblocking exchanges completes, whatever the size and the timing.
 *
 *   swap    (under `tern run -n N`, N >= 2)
 * Each round every rank issues tern_isend to the next rank, then tern_irecv from the previous
 * one and tern_iallreduce of a checksum, then waits for all three; at n = 2 that is both ranks
 * sending to each other at once. Sizes lie around the transports' thresholds: the line lane, the
 * single-copy floor (16 KiB), the shared copy (32 KiB), one ring slot (64 KiB), the reducing
 * floor (96 KiB), more than the ring holds (2 MiB). In half the rounds the caller computes (a
 * short pause) between the isend and the irecv, so that the progress thread starts the send
 * alone: a send that completes only once its receiver has taken it must not keep the irecv behind
 * it from being posted (comm/engine.c, run_p2p). Every byte received and every checksum is
 * checked. Prints "PASS" on rank 0, or "FAIL ..." on the rank that saw it and exits 1.
 */
#include "itest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 4
#define COMPUTE_US 2000 /* the progress thread, woken by the isend, takes it well within this */

static const size_t sizes[] = {8,         100,       (16u << 10) - 4, 16u << 10,      32u << 10,
                               64u << 10, 96u << 10, 256u << 10,      (1u << 20) + 4, 2u << 20};

/* One round of size bytes: returns 0 or 1 (and says why). */
static int exchange(tern_comm *c, uint8_t *send, uint8_t *recv, size_t size, int round) {
  int rank = tern_comm_rank(c), n = tern_comm_size(c);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  double sum = itest_fill(send, size, rank, round, 0), total = 0;
  memset(recv, 0, size);
  tern_request *s, *r, *a;
  tern_status rc = tern_isend(c, send, size, TERN_U8, next, &s);
  if (rc != TERN_OK) return itest_fail(c, "isend", rc);
  if (round % 2) usleep(COMPUTE_US);
  if ((rc = tern_irecv(c, recv, size, TERN_U8, prev, &r)) != TERN_OK)
    return itest_fail(c, "irecv", rc);
  if ((rc = tern_iallreduce(c, &sum, &total, 1, TERN_F64, TERN_SUM, &a)) != TERN_OK)
    return itest_fail(c, "iallreduce", rc);
  char what[96];
  snprintf(what, sizeof what, "waiting for the send of %zu bytes, round %d", size, round);
  if ((rc = tern_wait(s)) != TERN_OK) return itest_fail(c, what, rc);
  snprintf(what, sizeof what, "waiting for the receive of %zu bytes, round %d", size, round);
  if ((rc = tern_wait(r)) != TERN_OK) return itest_fail(c, what, rc);
  if ((rc = tern_wait(a)) != TERN_OK) return itest_fail(c, "waiting for the checksum", rc);
  if (itest_check(c, recv, size, prev, round, 0)) return 1;
  double want = 0;
  for (int from = 0; from < n; from++)
    for (size_t i = 0; i < size; i++)
      want += itest_pattern(from, round, 0, i);
  if (total != want) {
    printf("FAIL rank %d: checksum of %zu bytes, round %d: %.0f, want %.0f\n", rank, size, round,
           total, want);
    return 1;
  }
  return 0;
}

int main(void) {
  tern_comm *c = itest_init();
  if (c == NULL) return 1;
  size_t most = sizes[sizeof sizes / sizeof sizes[0] - 1];
  uint8_t *send = malloc(most), *recv = malloc(most);
  int bad = send == NULL || recv == NULL;
  if (bad) printf("FAIL: no memory for two buffers of %zu bytes\n", most);
  for (size_t k = 0; !bad && k < sizeof sizes / sizeof sizes[0]; k++)
    for (int round = 0; !bad && round < ROUNDS; round++)
      bad = exchange(c, send, recv, sizes[k], round);
  if (!bad && tern_comm_rank(c) == 0) printf("PASS\n");
  free(send);
  free(recv);
  tern_comm_destroy(c);
  return bad;
}

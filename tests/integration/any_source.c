/* any_source.c: receives from any source take every message once, each sender's in order.
 *
 *   any_source    (under `tern run -n N`, N >= 2)
 * Each round, every rank but 0 sends rank 0 two messages of the round's size (sizes around the
 * transports' thresholds: the line lane, one ring slot, single copy, more than the ring holds,
 * TCP stripes), the first after a pause in odd rounds, so that rank 0 waits asleep for it. Rank 0
 * takes all 2 (N - 1) with tern_recv_any and tern_irecv_any in turn, and checks each message's
 * bytes against its claimed sender and its place in that sender's order; a barrier closes the
 * round. Prints "PASS" on rank 0, or "FAIL ..." on the rank that saw it and exits 1.
 */
#include "itest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAUSE_US 50000
#define PER_SENDER 2
#define MAX_RANKS 64

static const size_t sizes[] = {8, 100, 64u << 10, 200u << 10, (2u << 20) + 4};

static int send_round(tern_comm *c, uint8_t *buf, size_t size, int round) {
  int rank = tern_comm_rank(c);
  if (round % 2) usleep(PAUSE_US);
  for (int k = 0; k < PER_SENDER; k++) {
    itest_fill(buf, size, rank, round, k);
    tern_status rc = tern_send(c, buf, size, TERN_U8, 0);
    if (rc != TERN_OK) return itest_fail(c, "send", rc);
  }
  return 0;
}

static int receive_round(tern_comm *c, uint8_t *buf, size_t size, int round) {
  int n = tern_comm_size(c), taken[MAX_RANKS] = {0};
  for (int m = 0; m < PER_SENDER * (n - 1); m++) {
    int from = -1;
    tern_status rc;
    memset(buf, 0, size);
    if (m % 2) {
      rc = tern_recv_any(c, buf, size, TERN_U8, &from);
    } else {
      tern_request *req;
      rc = tern_irecv_any(c, buf, size, TERN_U8, &from, &req);
      if (rc == TERN_OK) rc = tern_wait(req);
    }
    if (rc != TERN_OK) return itest_fail(c, m % 2 ? "recv_any" : "irecv_any", rc);
    if (from < 1 || from >= n || taken[from] >= PER_SENDER) {
      printf("FAIL rank 0: round %d, message %d: source %d\n", round, m, from);
      return 1;
    }
    if (itest_check(c, buf, size, from, round, taken[from]++)) return 1;
  }
  return 0;
}

int main(void) {
  tern_comm *c = itest_init();
  if (c == NULL) return 1;
  if (tern_comm_size(c) > MAX_RANKS) {
    printf("FAIL: at most %d ranks\n", MAX_RANKS);
    return 1;
  }
  uint8_t *buf = malloc(sizes[sizeof sizes / sizeof sizes[0] - 1]);
  int bad = buf == NULL;
  for (int round = 0; !bad && round < (int)(sizeof sizes / sizeof sizes[0]); round++) {
    bad = tern_comm_rank(c) == 0 ? receive_round(c, buf, sizes[round], round)
                                 : send_round(c, buf, sizes[round], round);
    if (!bad) {
      tern_status rc = tern_barrier(c);
      if (rc != TERN_OK) bad = itest_fail(c, "barrier", rc);
    }
  }
  if (!bad && tern_comm_rank(c) == 0) printf("PASS\n");
  free(buf);
  tern_comm_destroy(c);
  return bad;
}

/* closed_peer.c: a rank that closes the communicator (tern_comm_destroy) and goes on living is
 * noticed by a peer waiting for it within NOTICE_S, over shared memory as over TCP, with an
 * error that names it; not after TERN_TIMEOUT, nor when the process ends.
 *   closed_peer COLL   COLL: allreduce or recv (rank 0 waits in it for rank 1)
 * Two ranks. They swap pids, then rank 1 closes and sleeps until rank 0, done, ends it with
 * SIGUSR1 (or LINGER_S passes). Rank 0 prints "PASS ..." or "FAIL ...".
 */
#include "tern.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOTICE_S 2.0 /* TCP notices in about 0.6 s (the store's word on the cause) */
#define LINGER_S 30

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void leave(int sig) {
  (void)sig;
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  tern_comm *c;
  if (tern_comm_init_env(&c) != TERN_OK) {
    fprintf(stderr, "closed_peer: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  if (tern_comm_size(c) != 2) return 2;
  int rank = tern_comm_rank(c);
  int64_t pid = getpid(), pids[2];
  if (tern_allgather(c, &pid, pids, 1, TERN_I64) != TERN_OK) {
    printf("FAIL rank %d: allgather: %s\n", rank, tern_comm_last_error(c));
    return 1;
  }
  if (rank == 1) {
    signal(SIGUSR1, leave);
    tern_comm_destroy(c);
    sleep(LINGER_S);
    return 0;
  }
  usleep(100000); /* let rank 1 close first, as often as not */
  float buf[16] = {0};
  double t0 = now_s();
  tern_status rc = !strcmp(argv[1], "recv") ? tern_recv(c, buf, 16, TERN_F32, 1)
                                            : tern_allreduce(c, buf, buf, 16, TERN_F32, TERN_SUM);
  double took = now_s() - t0;
  const char *err = tern_comm_last_error(c);
  int ok = rc == TERN_ERR_PEER_LOST && took < NOTICE_S && strstr(err, "rank 1") != NULL;
  printf("%s rank 0: %s after %.2f s: %s: %s\n", ok ? "PASS" : "FAIL", argv[1], took,
         tern_status_str(rc), err);
  fflush(stdout);
  kill((pid_t)pids[1], SIGUSR1);
  tern_comm_destroy(c);
  return ok ? 0 : 1;
}

/* kill_rank.c: a rank is SIGKILLed in the middle of a collective; every other rank must get
 * TERN_ERR_PEER_LOST or TERN_ERR_TIMEOUT within TERN_TIMEOUT + 2 s of the kill, with a message
 * that names the lost rank and the operation, and must neither hang nor crash.
 *   kill_rank COLL VICTIM DIR
 * Every rank runs COLL in a loop on a buffer large enough that a call takes a while. The victim
 * starts a thread that, after a random pause, writes the time to DIR/killed and kills its own
 * process with SIGKILL, so the kill lands wherever the victim happens to be. Each survivor
 * prints one line, "PASS rank R ..." or "FAIL rank R ...", and exits 0 on PASS.
 */
#include "tern.h"

#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char killed_path[4096];

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *killer(void *arg) {
  (void)arg;
  srand((unsigned)getpid());
  usleep(100000 + (unsigned)(rand() % 200000));
  FILE *f = fopen(killed_path, "w");
  if (f) {
    fprintf(f, "%.6f\n", wall());
    fclose(f);
  }
  kill(getpid(), SIGKILL);
  return NULL;
}

static tern_status run(tern_comm *c, const char *coll, float *s, float *r, size_t count, int n,
                       int rank) {
  if (!strcmp(coll, "allreduce")) return tern_allreduce(c, s, r, count, TERN_F32, TERN_SUM);
  if (!strcmp(coll, "reduce_scatter"))
    return tern_reduce_scatter(c, s, r, count / n, TERN_F32, TERN_SUM);
  if (!strcmp(coll, "allgather")) return tern_allgather(c, s, r, count / n, TERN_F32);
  if (!strcmp(coll, "broadcast")) return tern_broadcast(c, s, r, count, TERN_F32, 0);
  if (!strcmp(coll, "reduce")) return tern_reduce(c, s, r, count, TERN_F32, TERN_SUM, 0);
  if (!strcmp(coll, "alltoall")) return tern_alltoall(c, s, r, count / n, TERN_F32);
  if (!strcmp(coll, "barrier")) return tern_barrier(c);
  if (!strcmp(coll, "sendrecv")) {
    tern_request *a, *b;
    tern_status rc = tern_isend(c, s, count, TERN_F32, (rank + 1) % n, &a);
    tern_status rr = tern_irecv(c, r, count, TERN_F32, (rank + n - 1) % n, &b);
    if (rc == TERN_OK) rc = tern_wait(a);
    if (rr == TERN_OK) rr = tern_wait(b);
    return rc != TERN_OK ? rc : rr;
  }
  fprintf(stderr, "kill_rank: no collective '%s'\n", coll);
  exit(2);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: kill_rank COLL VICTIM DIR\n");
    return 2;
  }
  const char *coll = argv[1];
  int victim = atoi(argv[2]);
  snprintf(killed_path, sizeof killed_path, "%s/killed", argv[3]);
  double timeout = getenv("TERN_TIMEOUT") ? atof(getenv("TERN_TIMEOUT")) : 300;
  tern_comm *c;
  if (tern_comm_init_env(&c) != TERN_OK) {
    fprintf(stderr, "kill_rank: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  int rank = tern_comm_rank(c), n = tern_comm_size(c);
  size_t count = (size_t)1 << 20;
  float *s = calloc(count, sizeof *s), *r = calloc(count, sizeof *r);
  pthread_t t;
  if (rank == victim) pthread_create(&t, NULL, killer, NULL);
  tern_status rc = TERN_OK;
  long iters = 0;
  double start = wall();
  while (rc == TERN_OK && wall() - start < timeout + 30) {
    rc = run(c, coll, s, r, count, n, rank);
    iters++;
  }
  double at = wall();
  const char *msg = tern_comm_last_error(c);
  double killed = 0;
  FILE *f = fopen(killed_path, "r");
  if (f) {
    if (fscanf(f, "%lf", &killed) != 1) killed = 0;
    fclose(f);
  }
  char want_rank[32];
  snprintf(want_rank, sizeof want_rank, "rank %d", victim);
  const char *op = !strcmp(coll, "sendrecv") ? "send/recv" : coll;
  double delay = killed > 0 ? at - killed : -1;
  bool ok = (rc == TERN_ERR_PEER_LOST || rc == TERN_ERR_TIMEOUT) && killed > 0 &&
            delay <= timeout + 2 && strstr(msg, want_rank) != NULL && strstr(msg, op) != NULL;
  printf("%s rank %d %s after %ld calls: %s %.3f s after the kill: %s\n", ok ? "PASS" : "FAIL",
         rank, coll, iters, tern_status_str(rc), delay, msg);
  fflush(stdout);
  tern_comm_destroy(c);
  free(s);
  free(r);
  return ok ? 0 : 1;
}

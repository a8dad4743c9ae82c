/* wan_allreduce.c: one rank of tern's allreduce across the WAN harness, timed and checked.
 *
 *   wan_allreduce COUNT:ITERS ...    for each pair: one warm-up call, a barrier, then ITERS
 *                                    back-to-back allreduces of COUNT floats, each result
 *                                    checked against the exact sum (tools/tern/pattern.c)
 *   wan_allreduce --until-error COUNT SECONDS
 *                                    allreduces of COUNT floats until one fails or SECONDS pass
 *
 * Rank, size and store come from the environment (TERN_RANK, TERN_WORLD_SIZE, TERN_STORE).
 * Each rank prints one line per pair, "rank R size N count C iters I seconds_per_iter S wrong W",
 * or in the second form "rank R failed after K calls at T: STATUS: MESSAGE" (T: CLOCK_REALTIME
 * seconds, for comparing with the moment the harness killed a peer), or "rank R no failure".
 * The exit code is 0 when every result was right (first form) or a call failed (second form).
 */
#include "pattern.h"
#include "tern.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int timed(tern_comm *c, size_t count, long iters) {
  int rank = tern_comm_rank(c), n = tern_comm_size(c);
  float *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
  int rc = 1;
  if (in == NULL || out == NULL) goto done;
  pattern_fill(in, TERN_F32, TERN_SUM, rank, 0, count);
  tern_status st = tern_allreduce(c, in, out, count, TERN_F32, TERN_SUM);
  if (st == TERN_OK) st = tern_barrier(c);
  size_t wrong = 0;
  double t0 = clock_s(CLOCK_MONOTONIC);
  for (long i = 0; i < iters && st == TERN_OK; i++) {
    st = tern_allreduce(c, in, out, count, TERN_F32, TERN_SUM);
    wrong += pattern_count_wrong_reduced(out, TERN_F32, TERN_SUM, n, 0, count);
    memset(out, 0, count * sizeof *out); /* the next call must write every element again */
  }
  double per = (clock_s(CLOCK_MONOTONIC) - t0) / (double)iters;
  if (st != TERN_OK) {
    fprintf(stderr, "rank %d: %s: %s\n", rank, tern_status_str(st), tern_comm_last_error(c));
    goto done;
  }
  printf("rank %d size %d count %zu iters %ld seconds_per_iter %.6f wrong %zu\n", rank, n, count,
         iters, per, wrong);
  rc = wrong != 0;
done:
  free(in);
  free(out);
  return rc;
}

static int until_error(tern_comm *c, size_t count, double seconds) {
  float *buf = calloc(count, sizeof *buf);
  if (buf == NULL) return 1;
  tern_status st = TERN_OK;
  long calls = 0;
  double end = clock_s(CLOCK_MONOTONIC) + seconds;
  while (st == TERN_OK && clock_s(CLOCK_MONOTONIC) < end) {
    st = tern_allreduce(c, buf, buf, count, TERN_F32, TERN_SUM);
    calls++;
  }
  if (st == TERN_OK)
    printf("rank %d no failure after %ld calls\n", tern_comm_rank(c), calls);
  else
    printf("rank %d failed after %ld calls at %.6f: %s: %s\n", tern_comm_rank(c), calls,
           clock_s(CLOCK_REALTIME), tern_status_str(st), tern_comm_last_error(c));
  free(buf);
  return st == TERN_OK;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  bool until = argc == 4 && strcmp(argv[1], "--until-error") == 0;
  if (argc < 2 || (strcmp(argv[1], "--until-error") == 0 && !until)) {
    fprintf(stderr, "usage: wan_allreduce COUNT:ITERS ... | --until-error COUNT SECONDS\n");
    return 2;
  }
  tern_comm *c;
  if (tern_comm_init_env(&c) != TERN_OK) {
    fprintf(stderr, "wan_allreduce: init: %s\n", tern_comm_last_error(NULL));
    return 1;
  }
  int rc = 0;
  if (until) {
    rc = until_error(c, strtoul(argv[2], NULL, 10), atof(argv[3]));
  } else {
    for (int i = 1; i < argc && rc == 0; i++) {
      size_t count;
      long iters;
      if (sscanf(argv[i], "%zu:%ld", &count, &iters) != 2 || count == 0 || iters < 1) {
        fprintf(stderr, "wan_allreduce: '%s' is not COUNT:ITERS\n", argv[i]);
        rc = 2;
      } else {
        rc = timed(c, count, iters);
      }
    }
  }
  tern_comm_destroy(c);
  return rc;
}

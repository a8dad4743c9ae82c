/* membw.c: the memory rates behind bench/peers' large-message bound and copy floor: memcpy,
 * f32 sum-reduce (dst[i] += src[i]) and the kernel's single copy between processes
 * (process_vm_readv, "cma-read", here from this process into itself: the same page pinning and
 * copy as from a peer) on THREADS threads at once (1 or 2, default 2), pinned to cpus 0 and 1,
 * each on its own buffers of BYTES (the output of one thread; a reduce reads 2 x BYTES and
 * writes BYTES, a copy reads and writes BYTES each).
 *
 *   membw BYTES [PASSES [THREADS]]    prints: op threads bytes gbs_median gbs_best
 *
 * GB/s counts the output of all threads together (1e9 B/s). A pass is every thread doing its
 * whole buffer once, started together at a barrier; its time is the slowest thread's. The
 * buffers are touched before the first pass, so no page fault is timed. Built -O3 -march=native
 * so that the reduce is vectorised as tern's kernels are.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef struct job {
  int cpu, passes;
  size_t bytes;
  float *dst, *src;
  pthread_barrier_t *bar;
  double *secs; /* per pass */
} job;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void reduce(float *restrict dst, const float *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] += src[i];
}

/* One process_vm_readv of the whole buffer, as a single-copy receiver reads a message. */
static void cma_read(void *dst, const void *src, size_t bytes) {
  struct iovec local = {dst, bytes}, remote = {(void *)src, bytes};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)bytes) {
    perror("membw: process_vm_readv");
    exit(1);
  }
}

static int op; /* 0 memcpy, 1 reduce, 2 cma-read: the same for every thread, set before they start */

static void *run(void *arg) {
  job *j = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(j->cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  memset(j->dst, 0, j->bytes);
  memset(j->src, 1, j->bytes);
  for (int p = -1; p < j->passes; p++) { /* pass -1 warms the caches */
    pthread_barrier_wait(j->bar);
    double t0 = now();
    if (op == 0) memcpy(j->dst, j->src, j->bytes);
    else if (op == 1) reduce(j->dst, j->src, j->bytes / sizeof(float));
    else cma_read(j->dst, j->src, j->bytes);
    if (p >= 0) j->secs[p] = now() - t0;
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: membw BYTES [PASSES [THREADS]]\n");
    return 2;
  }
  size_t bytes = strtoull(argv[1], NULL, 10) & ~(size_t)63;
  int passes = argc > 2 ? atoi(argv[2]) : 10, nth = argc > 3 ? atoi(argv[3]) : 2;
  if (bytes == 0 || passes < 1 || passes > 1000 || nth < 1 || nth > 2) return 2;
  static const char *names[] = {"memcpy", "sum-reduce", "cma-read"};
  for (op = 0; op < 3; op++) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nth);
    job jobs[2];
    pthread_t th[2];
    for (int t = 0; t < nth; t++) {
      jobs[t] = (job){.cpu = t, .passes = passes, .bytes = bytes, .bar = &bar,
                      .dst = aligned_alloc(4096, bytes), .src = aligned_alloc(4096, bytes),
                      .secs = calloc((size_t)passes, sizeof(double))};
      if (!jobs[t].dst || !jobs[t].src || !jobs[t].secs) return 1;
      pthread_create(&th[t], NULL, run, &jobs[t]);
    }
    for (int t = 0; t < nth; t++)
      pthread_join(th[t], NULL);
    double *pass = calloc((size_t)passes, sizeof(double));
    for (int p = 0; p < passes; p++)
      for (int t = 0; t < nth; t++)
        pass[p] = jobs[t].secs[p] > pass[p] ? jobs[t].secs[p] : pass[p];
    qsort(pass, (size_t)passes, sizeof *pass, cmp_double);
    double med = passes % 2 ? pass[passes / 2] : (pass[passes / 2 - 1] + pass[passes / 2]) / 2;
    printf("%s %d %zu %.3f %.3f\n", names[op], nth, bytes, nth * (double)bytes / med / 1e9,
           nth * (double)bytes / pass[0] / 1e9);
    for (int t = 0; t < nth; t++) {
      free(jobs[t].dst);
      free(jobs[t].src);
      free(jobs[t].secs);
    }
    free(pass);
    pthread_barrier_destroy(&bar);
  }
  return 0;
}

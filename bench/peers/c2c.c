/* c2c.c: the host's core-to-core latency now: the round trip of one cache line between two
 * threads pinned to cpus 0 and 1, each waiting for the other's write.
 *
 *   c2c [ROUNDTRIPS]    prints the median round trip of 5 batches of ROUNDTRIPS (20000), in ns
 *
 * Why bench/peers needs it: the virtual machine's two vCPUs are sometimes placed close together
 * on the host (a round trip of about 100 ns) and sometimes far apart (about 350 ns), and the
 * placement changes while a run goes on, for seconds to minutes. Every small shared-memory call
 * is a few such round trips, so a tool timed in the far placement looks 2-3x slower than one
 * timed in the near one, whatever the tools do. run.sh probes before and after every launch, and
 * aggregate.py compares the tools of a cell within one placement.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 5

static _Alignas(64) _Atomic long turn;
static long roundtrips = 20000;

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("c2c: sched_setaffinity");
    exit(1);
  }
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The echo: answers each odd value with the next even one, for every batch. */
static void *echo(void *arg) {
  (void)arg;
  pin(1);
  for (long v = 1; v < 2 * roundtrips * BATCHES; v += 2) {
    while (atomic_load_explicit(&turn, memory_order_acquire) != v) {
    }
    atomic_store_explicit(&turn, v + 1, memory_order_release);
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc > 1 && (roundtrips = atol(argv[1])) < 1) {
    fprintf(stderr, "usage: c2c [ROUNDTRIPS >= 1]\n");
    return 2;
  }
  pin(0);
  pthread_t t;
  if (pthread_create(&t, NULL, echo, NULL) != 0) return 1;
  double ns[BATCHES];
  long v = 0;
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_ns();
    for (long i = 0; i < roundtrips; i++, v += 2) {
      atomic_store_explicit(&turn, v + 1, memory_order_release);
      while (atomic_load_explicit(&turn, memory_order_acquire) != v + 2) {
      }
    }
    ns[b] = (now_ns() - t0) / (double)roundtrips;
  }
  pthread_join(t, NULL);
  qsort(ns, BATCHES, sizeof ns[0], cmp_double);
  printf("%.1f\n", ns[BATCHES / 2]);
  return 0;
}

/* test_plan_replay.c: the pipeline time model's closed forms (1F1B and GPipe, pipeline.c) held
 * to an independent event-level replay of the same schedule: every stage runs its own sequence
 * of forward and backward passes (1F1B: S - i - 1 warm-up forwards, then one forward one
 * backward, then the rest of the backwards; GPipe: every forward, then every backward), each
 * starting when its stage is free and its input has arrived; every hop is two FIFO links (one
 * each way) that pass one tensor at a time in its transfer time, then delay it by the latency.
 * The replay knows nothing of beats or caps: the in-flight limit and the latency in the steady
 * state come out of the dependencies. Target: within 10% at 0-200 ms of link latency (met on
 * every placement here; 1 of 800 random pipelines is at 11.6%). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"
#include "core/mix.h"

#include <math.h>
#include <stdlib.h>

enum { MAXS = 64, MAXM = 64 };

typedef struct replay {
  int S, m;
  double fb[MAXS], lat[MAXS], beta[MAXS];
  double act[MAXS][MAXM], grad[MAXS][MAXM]; /* when micro-batch j's input reaches stage i */
  double fwd_link[MAXS], bwd_link[MAXS];    /* when each hop's link is next free, each way */
} replay;

/* Stage i's k-th operation: +1 + j for micro-batch j's forward, -1 - j for its backward. */
static int op_at(const replay *r, bool gpipe, int i, int k) {
  if (gpipe) return k < r->m ? 1 + k : -1 - (k - r->m);
  int warm = CORE_MIN(r->S - i - 1, r->m);
  if (k < warm) return 1 + k;
  int steady = k - warm;
  if (steady < 2 * (r->m - warm)) return steady % 2 == 0 ? 1 + warm + steady / 2 : -1 - steady / 2;
  return -1 - (steady - (r->m - warm)); /* the cool-down backwards */
}

/* The iteration time of the replayed schedule. */
static double run_replay(replay *r, bool gpipe) {
  int next[MAXS] = {0};
  double free_at[MAXS] = {0}, end = 0;
  for (int i = 0; i < r->S; i++)
    for (int j = 0; j < r->m; j++)
      r->act[i][j] = r->grad[i][j] = i == 0 ? 0 : NAN;
  for (int j = 0; j < r->m; j++)
    r->act[0][j] = 0;
  for (int i = 0; i < r->S; i++)
    for (int j = 0; j < r->m; j++)
      r->grad[i][j] = NAN;
  for (int i = 0; i < r->S; i++)
    r->fwd_link[i] = r->bwd_link[i] = 0;
  int left = 2 * r->S * r->m;
  while (left > 0) {
    bool progress = false;
    for (int i = 0; i < r->S; i++)
      while (next[i] < 2 * r->m) {
        int op = op_at(r, gpipe, i, next[i]);
        bool fwd = op > 0;
        int j = fwd ? op - 1 : -op - 1;
        double ready = fwd ? r->act[i][j] : r->grad[i][j];
        if (isnan(ready)) break; /* its input is not computed yet */
        double start = CORE_MAX(ready, free_at[i]);
        double done = start + (fwd ? r->fb[i] / 3 : 2 * r->fb[i] / 3);
        free_at[i] = done;
        end = CORE_MAX(end, done);
        if (fwd && i + 1 < r->S) {
          double send = CORE_MAX(done, r->fwd_link[i]);
          r->fwd_link[i] = send + r->beta[i];
          r->act[i + 1][j] = send + r->beta[i] + r->lat[i];
        } else if (fwd) {
          r->grad[i][j] = done; /* the last stage turns around */
        } else if (i > 0) {
          double send = CORE_MAX(done, r->bwd_link[i - 1]);
          r->bwd_link[i - 1] = send + r->beta[i - 1];
          r->grad[i - 1][j] = send + r->beta[i - 1] + r->lat[i - 1];
        }
        next[i]++;
        left--;
        progress = true;
      }
    assert_true(progress); /* the schedule cannot deadlock */
  }
  return end;
}

static plan_scenario sc;

/* Loads the cluster the placement cases run on (main frees it). */
static void load_cluster(void) {
  char text[8192];
  /* three regions of one type, 25 Gbit/s inside; links of 10 and 2 Gbit/s whose latency the
   * cases set. The job: 24 layers of 2.4 B parameters. */
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": ["
           "{\"name\": \"A\", \"gpu\": \"fast\", \"gpus\": 16, \"price_usd_per_kwh\": 0.1, "
           "\"intra_bandwidth_gbps\": 25},"
           "{\"name\": \"B\", \"gpu\": \"fast\", \"gpus\": 16, \"price_usd_per_kwh\": 0.2, "
           "\"intra_bandwidth_gbps\": 25},"
           "{\"name\": \"C\", \"gpu\": \"slow\", \"gpus\": 16, \"price_usd_per_kwh\": 0.2, "
           "\"intra_bandwidth_gbps\": 25}],"
           "\"links\": [{\"a\": \"A\", \"b\": \"B\", \"latency_ms\": 0, \"bandwidth_gbps\": 10},"
           "{\"a\": \"B\", \"b\": \"C\", \"latency_ms\": 0, \"bandwidth_gbps\": 2}],"
           "\"jobs\": [{\"name\": \"j\", \"params_b\": 2.4, \"layers\": 24, \"hidden\": 2048, "
           "\"seq_len\": 1024, \"microbatch_sequences\": 2, \"microbatches\": 8, \"tokens\": 1e9, "
           "\"arrival_s\": 0, \"dtype_bytes\": 2}], " PT_ASSUME "}");
  pt_load(text, &sc);
}

static double worst_gap;

/* The closed form against the replay for a placement over `n` regions, m micro-batches. */
static void compare(const int *regions, const int *gpus, int n, int m, double lat_ms,
                    plan_schedule sched) {
  plan_placement p;
  sc.jobs[0].microbatches = m;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      if (a != b) sc.c.links[a * 3 + b].latency_s = lat_ms / 1e3;
  assert_true(plan_build(&sc.c, &sc.jobs[0], regions, gpus, n, &p));
  static replay r;
  r.m = m;
  r.S = plan_pipeline_times(&sc.c, &sc.jobs[0], &p, NULL, 0, r.fb, r.lat, r.beta);
  assert_true(r.S <= MAXS && m <= MAXM);
  double model = plan_iter_time_sched(&sc.c, &sc.jobs[0], &p, NULL, 0, sched);
  double events = run_replay(&r, sched == PLAN_GPIPE);
  double gap = fabs(model - events) / events;
  if (gap > 0.10 || getenv("REPLAY_ALL"))
    fprintf(stderr, "%s S=%d m=%d lat=%g ms: model %.4f s, replay %.4f s (%.1f%%)\n",
            sched == PLAN_GPIPE ? "gpipe" : "1f1b", r.S, m, lat_ms, model, events, 100 * gap);
  worst_gap = CORE_MAX(worst_gap, gap);
  if (getenv("REPLAY_ALL") == NULL) assert_true(gap <= 0.10);
}

static const double latencies[] = {0, 10, 50, 100, 200};
static const int mbs[] = {4, 8, 16, 32};

static void eight_stages_two_regions(void **state) {
  (void)state;
  worst_gap = 0;
  for (size_t l = 0; l < CORE_ARRAY_LEN(latencies); l++)
    for (size_t k = 0; k < CORE_ARRAY_LEN(mbs); k++)
      compare((int[]){0, 1}, (int[]){4, 4}, 2, mbs[k], latencies[l], PLAN_1F1B);
  fprintf(stderr, "1F1B, 8 stages over 2 regions: worst gap %.1f%%\n", 100 * worst_gap);
}

static void uneven_three_regions(void **state) {
  (void)state;
  worst_gap = 0;
  static const int shapes[][3] = {{2, 2, 2}, {6, 4, 2}, {1, 1, 8}, {12, 2, 1}};
  for (size_t s = 0; s < CORE_ARRAY_LEN(shapes); s++)
    for (size_t l = 0; l < CORE_ARRAY_LEN(latencies); l++)
      for (size_t k = 0; k < CORE_ARRAY_LEN(mbs); k++)
        compare((int[]){0, 1, 2}, shapes[s], 3, mbs[k], latencies[l], PLAN_1F1B);
  fprintf(stderr, "1F1B, uneven over 3 regions: worst gap %.1f%%\n", 100 * worst_gap);
}

static void gpipe_schedule(void **state) {
  (void)state;
  worst_gap = 0;
  for (size_t l = 0; l < CORE_ARRAY_LEN(latencies); l++)
    for (size_t k = 0; k < CORE_ARRAY_LEN(mbs); k++) {
      compare((int[]){0, 1}, (int[]){4, 4}, 2, mbs[k], latencies[l], PLAN_GPIPE);
      compare((int[]){0, 1, 2}, (int[]){6, 4, 2}, 3, mbs[k], latencies[l], PLAN_GPIPE);
    }
  fprintf(stderr, "GPipe: worst gap %.1f%%\n", 100 * worst_gap);
}

/* Pipelines drawn at random: 2 to 40 stages, each 10-100 ms, 1 to 48 micro-batches, hops of
 * 0.1-30 ms transfer, a third of them with 0-200 ms of latency. */
static void random_pipelines(void **state) {
  (void)state;
  static replay r;
  uint64_t st = 7;
  int over = 0;
  worst_gap = 0;
  for (int n = 0; n < 400; n++) {
    r.S = 2 + (int)(core_splitmix64(&st) % 39);
    r.m = 1 + (int)(core_splitmix64(&st) % 48);
    for (int i = 0; i < r.S; i++) {
      r.fb[i] = 0.01 + 0.09 * (double)(core_splitmix64(&st) % 1000) / 1000;
      r.beta[i] = 1e-4 + 0.03 * (double)(core_splitmix64(&st) % 1000) / 1000;
      r.lat[i] =
          core_splitmix64(&st) % 3 == 0 ? 0.2 * (double)(core_splitmix64(&st) % 1000) / 1000 : 0;
    }
    for (int g = 0; g < 2; g++) {
      plan_schedule sched = g ? PLAN_GPIPE : PLAN_1F1B;
      double model = plan_schedule_time(sched, r.S, r.m, r.fb, r.lat, r.beta);
      double events = run_replay(&r, g == 1);
      double gap = fabs(model - events) / events;
      if (gap > 0.10 || getenv("REPLAY_ALL"))
        fprintf(stderr, "random %s S=%d m=%d: model %.4f replay %.4f (%.1f%%)\n",
                g ? "gpipe" : "1f1b", r.S, r.m, model, events, 100 * gap);
      worst_gap = CORE_MAX(worst_gap, gap);
      over += gap > 0.10;
      if (getenv("REPLAY_ALL") == NULL) assert_true(gap <= 0.15);
    }
  }
  /* measured: 1 of 800 over 10% (11.6%, 1F1B, 7 stages, 7 micro-batches), worst GPipe 0.0% */
  fprintf(stderr, "random pipelines: worst gap %.1f%%, %d of 800 over 10%%\n", 100 * worst_gap,
          over);
  assert_true(over <= 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(eight_stages_two_regions),
      cmocka_unit_test(uneven_three_regions),
      cmocka_unit_test(gpipe_schedule),
      cmocka_unit_test(random_pipelines),
  };
  load_cluster();
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  plan_scenario_free(&sc);
  return failed;
}

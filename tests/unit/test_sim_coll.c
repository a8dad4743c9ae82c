/* test_sim_coll.c: the collective simulator (src/sim/coll*.c): that it runs tern's schedules
 * (message counts equal to the built schedules'), that its times are the platform's own
 * arithmetic where that is exact (one message across a NIC, over shared memory, across geo
 * links; sixteen flows on one NIC; four ranks on one core), that plans compress without loss,
 * that the lower bounds hold (and match without simulating), that bad platforms and fixtures are
 * refused with a message, that a job without a schedule
 * does not stop the others, that a deadline kills a long simulation and a dying simulator is
 * reported, and that 4096 ranks simulate in seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sim/coll.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define FIXTURE TERN_SOURCE_DIR "/data/scenarios/aws-10-regions.json"

/* A platform whose only costs are the network's. */
static void bare(sim_platform *p, int hosts, int rph) {
  sim_platform_cluster(p, hosts, rph);
  p->msg_cpu = p->reduce_cpu = 0;
}

static sim_coll_job run_job1(const sim_platform *p, coll_kind kind, coll_algo algo, size_t count) {
  sim_coll_job job = {.kind = kind, .algo = algo, .count = count, .elem_size = 4};
  core_err err = {0};
  tern_status rc = sim_coll_run(p, &job, 1, 120, &err);
  if (rc != TERN_OK) fprintf(stderr, "sim_coll_run: %s\n", err.msg);
  assert_int_equal(rc, TERN_OK);
  assert_int_equal(job.status, TERN_OK);
  return job;
}

static double run1(const sim_platform *p, coll_kind kind, coll_algo algo, size_t count) {
  return run_job1(p, kind, algo, count).time;
}

static void assert_near(double got, double want, double rel) {
  if (fabs(got - want) > rel * want) fprintf(stderr, "got %.9g, want %.9g\n", got, want);
  assert_true(fabs(got - want) <= rel * want);
}

/* One message each way between two hosts: the route's latency plus the bytes at NIC speed. */
static void test_two_hosts_exact(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 2, 1);
  double t = run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, 1 << 20);
  assert_near(t, p.nic_lat + 4.0 * (1 << 20) / p.nic_bw, 1e-6);
}

static void test_shared_memory_exact(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 1, 2);
  double t = run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, 1 << 20);
  assert_near(t, p.shm_lat + 4.0 * (1 << 20) / p.shm_bw, 1e-6);
}

/* 2 hosts x 4 ranks, alltoall in one phase: each host's up link carries 4 x 4 flows of B. */
static void test_nic_is_shared(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 2, 4);
  size_t count = 1 << 18;
  double t = run1(&p, COLL_ALLTOALL, COLL_ALGO_DIRECT, count);
  assert_near(t, p.nic_lat + 16.0 * 4 * (double)count / p.nic_bw, 1e-3);
}

/* The same with four NICs a host: the host's link carries four times the bytes. */
static void test_nics_add_up(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 2, 4);
  p.nics = 4;
  size_t count = 1 << 18;
  double t = run1(&p, COLL_ALLTOALL, COLL_ALGO_DIRECT, count);
  assert_near(t, p.nic_lat + 16.0 * 4 * (double)count / (4 * p.nic_bw), 1e-3);
  sim_platform f;
  sim_platform_frontier(&f, 2);
  assert_int_equal(f.nics, 4);
  assert_int_equal(f.ranks_per_host, 8);
  core_err err = {0};
  assert_int_equal(sim_platform_check(&f, &err), TERN_OK);
  f.nics = 0;
  assert_int_equal(sim_platform_check(&f, &err), TERN_ERR_INVALID_ARG);
}

/* One flow between hosts goes through one NIC: four NICs do not make it faster. */
static void test_one_flow_one_nic(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 2, 1);
  p.nics = 4;
  double t = run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, 1 << 20);
  assert_near(t, p.nic_lat + 4.0 * (1 << 20) / p.nic_bw, 1e-6);
}

/* The adaptive dragonfly: 2 groups of 4 hosts with 1 global link each. Host h sends to host
 * h + 4 (allgather by direct over 8 hosts: every host to every other at once): the 16 flows
 * between the groups each way share the one global link, as they share all of a group's
 * global links however many; within a group the fabric does not block. */
static void test_dragonfly_pools_global_links(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 8, 1);
  p.topo = SIM_TOPO_DRAGONFLY;
  snprintf(p.topo_params, sizeof p.topo_params, "4,1");
  size_t count = 1 << 18;
  double one = run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, count);
  assert_near(one, p.nic_lat + 16.0 * 4 * (double)count / p.nic_bw, 1e-2);
  snprintf(p.topo_params, sizeof p.topo_params, "4,4");
  double four = run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, count);
  assert_near(four, p.nic_lat + 7.0 * 4 * (double)count / p.nic_bw, 1e-2); /* the NIC's 7 */
  sim_platform_cluster(&p, 256, 8);
  p.topo = SIM_TOPO_DRAGONFLY;
  sim_platform_fill_topo(&p);
  assert_string_equal(p.topo_params, "128,73"); /* Frontier's groups (coll_platform.c) */
}

/* Steady phases: a ring's repeats taken from the 4th on give the exact simulation's time, on a
 * flat cluster and on a fat tree of Frontier's nodes (routes of unequal latency, so ranks drift
 * apart), flat and with hier's levels; fewer than 4 repeats are refused. */
static void test_steady_matches_exact(void **state) {
  (void)state;
  sim_platform plats[2];
  sim_platform_cluster(&plats[0], 16, 4);
  sim_platform_frontier(&plats[1], 16);
  plats[1].topo = SIM_TOPO_FAT_TREE;
  snprintf(plats[1].topo_params, sizeof plats[1].topo_params, "2;4,4;1,4;1,1");
  const coll_algo algos[] = {COLL_ALGO_RING, COLL_ALGO_HIER};
  for (size_t i = 0; i < CORE_ARRAY_LEN(plats); i++)
    for (size_t a = 0; a < CORE_ARRAY_LEN(algos); a++) {
      sim_platform p = plats[i];
      sim_coll_job exact = run_job1(&p, COLL_ALLREDUCE, algos[a], 1 << 16);
      assert_int_equal(exact.steady, 0);
      p.steady = 4;
      sim_coll_job steady = run_job1(&p, COLL_ALLREDUCE, algos[a], 1 << 16);
      assert_true(steady.steady > 0);
      assert_int_equal(steady.messages, exact.messages);
      assert_near(steady.time, exact.time, 1e-6);
    }
  core_err err = {0};
  plats[0].steady = 3;
  assert_int_equal(sim_platform_check(&plats[0], &err), TERN_ERR_INVALID_ARG);
}

/* Four ranks reducing on one core take four times as long as on four. */
static void test_cores_are_shared(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 1, 4);
  p.shm_bw = 1e15;
  p.reduce_cpu = 1e-9;
  double four = run1(&p, COLL_ALLREDUCE, COLL_ALGO_DIRECT, 1 << 20);
  p.cores = 1;
  double one = run1(&p, COLL_ALLREDUCE, COLL_ALGO_DIRECT, 1 << 20);
  assert_near(one / four, 4.0, 0.01);
}

/* Three regions of the fixture (Frankfurt, Ireland, London), a host each: a direct allgather
 * ends with the slowest pair's message. */
static void test_geo_links(void **state) {
  (void)state;
  sim_geo *g = malloc(sizeof *g);
  core_err err = {0};
  assert_int_equal(sim_geo_load(FIXTURE, g, &err), TERN_OK);
  assert_int_equal(g->nregions, 10);
  sim_platform p;
  bare(&p, 3, 1);
  p.topo = SIM_TOPO_GEO;
  p.regions = 3;
  p.nic_bw = 1e15;
  snprintf(p.geo_file, sizeof p.geo_file, "%s", FIXTURE);
  double bytes = 4.0 * (1 << 20), want = 0;
  for (int a = 0; a < 3; a++)
    for (int b = a + 1; b < 3; b++)
      want = CORE_MAX(want, p.nic_lat + g->lat[a][b] + bytes / g->bw[a][b]);
  assert_near(run1(&p, COLL_ALLGATHER, COLL_ALGO_DIRECT, 1 << 20), want, 1e-6);
  free(g);
}

/* The messages simulated are the SEND steps of every rank's built schedule. */
static uint64_t sends_of(coll_kind kind, coll_algo algo, int n, size_t count) {
  coll_sched s;
  coll_sched_init(&s);
  uint64_t sends = 0;
  for (int r = 0; r < n; r++) {
    coll_args a = {.kind = kind, .rank = r, .size = n, .count = count};
    assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
    for (size_t i = 0; i < s.len; i++)
      sends += s.steps[i].kind == COLL_STEP_SEND;
  }
  coll_sched_free(&s);
  return sends;
}

static void test_runs_the_built_schedules(void **state) {
  (void)state;
  static const struct {
    coll_kind kind;
    coll_algo algo;
    int n;
  } cases[] = {{COLL_ALLREDUCE, COLL_ALGO_RING, 6},     {COLL_ALLREDUCE, COLL_ALGO_RHD, 12},
               {COLL_REDUCE_SCATTER, COLL_ALGO_RHD, 7}, {COLL_ALLGATHER, COLL_ALGO_BRUCK, 9},
               {COLL_BROADCAST, COLL_ALGO_RING, 5},     {COLL_ALLTOALL, COLL_ALGO_PAIRWISE, 6},
               {COLL_BARRIER, COLL_ALGO_TREE, 11}};
  for (size_t i = 0; i < CORE_ARRAY_LEN(cases); i++) {
    sim_platform p;
    sim_platform_cluster(&p, cases[i].n, 1);
    size_t count = cases[i].kind == COLL_BARRIER ? 0 : 100003;
    sim_coll_job job = {
        .kind = cases[i].kind, .algo = cases[i].algo, .count = count, .elem_size = 4};
    core_err err = {0};
    assert_int_equal(sim_coll_run(&p, &job, 1, 120, &err), TERN_OK);
    assert_int_equal(job.status, TERN_OK);
    assert_true(job.time > 0);
    assert_int_equal(job.messages, sends_of(cases[i].kind, cases[i].algo, cases[i].n, count));
  }
}

/* A ring of 4096 ranks compresses to a few phases that expand to all of its 8190. */
static void test_plan_compresses_without_loss(void **state) {
  (void)state;
  sim_platform p;
  sim_platform_cluster(&p, 512, 8);
  coll_sched s;
  sim_plan pl;
  coll_sched_init(&s);
  sim_plan_init(&pl);
  coll_args a = {.kind = COLL_ALLREDUCE, .rank = 77, .size = 4096, .count = 1000003};
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  assert_int_equal(sim_plan_build(&pl, &s, 4, &p), TERN_OK);
  fprintf(stderr, "%zu phases in the plan of %d\n", pl.nphases, s.nphases);
  assert_true(pl.nphases <= 16);
  uint64_t phases = 0, bytes = 0, sched_bytes = 0;
  for (size_t i = 0; i < pl.nphases; i++) {
    phases += pl.phases[i].repeat;
    for (uint32_t k = 0; k < pl.phases[i].nmsgs; k++)
      bytes += pl.phases[i].repeat * pl.msgs[pl.phases[i].first + k].bytes;
  }
  for (size_t i = 0; i < s.len; i++)
    if (s.steps[i].kind <= COLL_STEP_RECV_REDUCE) sched_bytes += 4 * s.steps[i].count;
  assert_int_equal(phases, (uint64_t)s.nphases);
  assert_int_equal(bytes, sched_bytes);
  sim_plan_free(&pl);
  coll_sched_free(&s);
}

/* The bounds never exceed the simulated time, are the same without simulating, and the NIC's is
 * tight where the NIC is the bottleneck. */
static void test_bounds_hold(void **state) {
  (void)state;
  sim_platform p;
  sim_platform_cluster(&p, 16, 4);
  sim_coll_job jobs[] = {
      {.kind = COLL_ALLREDUCE, .algo = COLL_ALGO_RING, .count = 1 << 18, .elem_size = 4},
      {.kind = COLL_ALLREDUCE,
       .algo = COLL_ALGO_HIER,
       .inner = COLL_ALGO_RHD,
       .count = 1 << 18,
       .elem_size = 4},
      {.kind = COLL_REDUCE_SCATTER, .algo = COLL_ALGO_DIRECT, .count = 1 << 12, .elem_size = 4},
      {.kind = COLL_ALLGATHER, .algo = COLL_ALGO_BRUCK, .count = 100, .elem_size = 4},
      {.kind = COLL_ALLTOALL, .algo = COLL_ALGO_DIRECT, .count = 1 << 14, .elem_size = 4}};
  enum { N = CORE_ARRAY_LEN(jobs) };
  sim_coll_job bounded[N];
  memcpy(bounded, jobs, sizeof jobs);
  core_err err = {0};
  assert_int_equal(sim_coll_run(&p, jobs, N, 120, &err), TERN_OK);
  assert_int_equal(sim_coll_bound(&p, bounded, N, &err), TERN_OK);
  for (int j = 0; j < N; j++) {
    assert_int_equal(jobs[j].status, TERN_OK);
    assert_true(jobs[j].bound > 0 && jobs[j].bound <= jobs[j].time);
    assert_near(bounded[j].bound, jobs[j].bound, 1e-12);
  }
  /* alltoall: each host sends 4 ranks x 60 peers' blocks across its NIC */
  double nic = 4.0 * 60 * 4 * (1 << 14) / p.nic_bw;
  assert_near(jobs[N - 1].bound, nic, 1e-9);
  assert_near(jobs[N - 1].time, nic, 0.05);
}

static void test_unsupported_job_does_not_stop_others(void **state) {
  (void)state;
  sim_platform p;
  sim_platform_cluster(&p, 4, 2);
  sim_coll_job jobs[] = {
      {.kind = COLL_ALLREDUCE, .algo = COLL_ALGO_BRUCK, .count = 1024, .elem_size = 4},
      {.kind = COLL_ALLREDUCE, .algo = COLL_ALGO_RHD, .count = 1024, .elem_size = 4}};
  core_err err = {0};
  assert_int_equal(sim_coll_run(&p, jobs, 2, 120, &err), TERN_OK);
  assert_int_equal(jobs[0].status, TERN_ERR_UNSUPPORTED);
  assert_int_equal(jobs[1].status, TERN_OK);
  assert_true(jobs[1].time > 0);
}

static void expect_refused(const sim_platform *p, const char *words) {
  core_err err = {0};
  sim_coll_job job = {.kind = COLL_ALLREDUCE, .algo = COLL_ALGO_RING, .count = 8, .elem_size = 4};
  assert_int_equal(sim_coll_run(p, &job, 1, 60, &err), TERN_ERR_INVALID_ARG);
  if (strstr(err.msg, words) == NULL) fprintf(stderr, "message: %s\n", err.msg);
  assert_non_null(strstr(err.msg, words));
}

static void test_bad_platforms_refused(void **state) {
  (void)state;
  sim_platform p;
  sim_platform_cluster(&p, 64, 1);
  p.topo = SIM_TOPO_FAT_TREE;
  snprintf(p.topo_params, sizeof p.topo_params, "2;4,4;1,4;1,1");
  expect_refused(&p, "16 leaves");
  snprintf(p.topo_params, sizeof p.topo_params, "2;4,x");
  expect_refused(&p, "not 'L;");
  p.topo = SIM_TOPO_DRAGONFLY;
  snprintf(p.topo_params, sizeof p.topo_params, "24,4");
  expect_refused(&p, "do not divide");
  snprintf(p.topo_params, sizeof p.topo_params, "2,1;2,1;2,1;2");
  expect_refused(&p, "not 'hosts a group");
  p.topo = SIM_TOPO_DRAGONFLY_MINIMAL;
  expect_refused(&p, "16 hosts");
  snprintf(p.topo_params, sizeof p.topo_params, "8,2;2,2;2,1;2"); /* SimGrid crashed on these */
  expect_refused(&p, "8 groups but 2 routers a chassis");
  sim_platform_cluster(&p, 4, 2);
  p.nic_bw = -1;
  expect_refused(&p, "bandwidths");
  sim_platform_cluster(&p, 4, 2);
  p.ncost = 2, p.cost_bytes[0] = 100, p.cost_bytes[1] = 10;
  expect_refused(&p, "ascend");
  sim_platform_cluster(&p, 4, 2);
  p.topo = SIM_TOPO_GEO;
  snprintf(p.geo_file, sizeof p.geo_file, "%s", FIXTURE);
  p.regions = 11;
  expect_refused(&p, "11 regions");
}

/* Writes text to a temporary fixture and expects sim_geo_load to refuse it with words. */
static void expect_bad_fixture(const char *text, const char *words) {
  char path[] = "/tmp/tern-geo-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  sim_geo *g = malloc(sizeof *g);
  core_err err = {0};
  assert_int_equal(sim_geo_load(path, g, &err), TERN_ERR_INVALID_ARG);
  if (strstr(err.msg, words) == NULL) fprintf(stderr, "message: %s\n", err.msg);
  assert_non_null(strstr(err.msg, words));
  assert_non_null(strstr(err.msg, path));
  unlink(path);
  free(g);
}

static void test_bad_fixtures_refused(void **state) {
  (void)state;
  expect_bad_fixture("{\"regions\": [\"a\", \"b\"],\n \"links\": [}", ":2:");
  expect_bad_fixture(
      "{\"regions\": [\"a\", \"b\", \"c\"], \"links\": [{\"a\": \"a\", \"b\": \"b\", "
      "\"latency_ms\": 5, \"bandwidth_gbps\": 1}]}",
      "no link between a and c");
  expect_bad_fixture("{\"regions\": [\"a\", \"b\"], \"links\": [{\"a\": \"a\", \"b\": \"b\", "
                     "\"latency_ms\": 5, \"bandwidth_gbps\": 1}, {\"a\": \"b\", \"b\": \"a\", "
                     "\"latency_ms\": 5, \"bandwidth_gbps\": 1}]}",
                     "given twice");
  expect_bad_fixture("{\"regions\": [\"a\", \"b\"], \"links\": [{\"a\": \"a\", \"b\": \"b\", "
                     "\"latency_ms\": -5, \"bandwidth_gbps\": 1}]}",
                     "link 0 (a-b)");
  expect_bad_fixture("{\"regions\": [\"a\", \"a\"], \"links\": []}", "region 1");
  expect_bad_fixture("{\"regions\": [\"a\", \"b\"], \"links\": [{\"a\": \"a\", \"b\": \"z\"}]}",
                     "two different regions");
}

/* The cluster topologies build and run; their longest route is within the NIC latency. */
static void test_topologies_run(void **state) {
  (void)state;
  sim_platform p;
  bare(&p, 64, 2);
  double flat = run1(&p, COLL_ALLGATHER, COLL_ALGO_RING, 4);
  const sim_topo topos[] = {SIM_TOPO_FAT_TREE, SIM_TOPO_DRAGONFLY, SIM_TOPO_DRAGONFLY_MINIMAL};
  for (size_t i = 0; i < CORE_ARRAY_LEN(topos); i++) {
    bare(&p, 64, 2);
    p.topo = topos[i];
    sim_platform_fill_topo(&p);
    double ring = run1(&p, COLL_ALLGATHER, COLL_ALGO_RING, 4);
    assert_true(ring > 0 && ring <= flat * 1.0001);
    assert_true(run1(&p, COLL_ALLREDUCE, COLL_ALGO_RHD, 1 << 16) > 0);
  }
}

/* SimGrid's dragonfly routes group g through router g of a chassis: the default shape keeps
 * the groups within the routers at 2048 to 8192 ranks (5 to 16 groups, where SimGrid crashed
 * with 4 routers a chassis), and a dissemination barrier, whose partners reach every distance,
 * crosses all of them. */
static void test_dragonfly_of_many_groups(void **state) {
  (void)state;
#ifdef TERN_SANITIZED
  const int hosts[] = {256}; /* threads for actors under sanitizers: keep it small */
#else
  const int hosts[] = {256, 512, 1024};
#endif
  for (size_t i = 0; i < CORE_ARRAY_LEN(hosts); i++) {
    sim_platform p;
    sim_platform_cluster(&p, hosts[i], 8);
    p.topo = SIM_TOPO_DRAGONFLY_MINIMAL;
    sim_platform_fill_topo(&p);
    int groups = atoi(p.topo_params);
    assert_true(groups >= 5);
    sim_coll_job job = {.kind = COLL_BARRIER, .algo = COLL_ALGO_BRUCK, .elem_size = 4};
    core_err err = {0};
    uint64_t t0 = core_now_ns();
    tern_status rc = sim_coll_run(&p, &job, 1, 120, &err);
    if (rc != TERN_OK) fail_msg("%d ranks, dragonfly %s: %s", hosts[i] * 8, p.topo_params, err.msg);
    assert_int_equal(job.status, TERN_OK);
    assert_true(job.time > 0);
    fprintf(stderr, "%d ranks, dragonfly %s: barrier %.1f us, %.2f s of wall time\n", hosts[i] * 8,
            p.topo_params, job.time * 1e6, (double)(core_now_ns() - t0) * 1e-9);
  }
}

static void test_deadline_kills_the_simulation(void **state) {
  (void)state;
  sim_platform p;
  sim_platform_cluster(&p, 256, 4);
  sim_coll_job job = {
      .kind = COLL_ALLREDUCE, .algo = COLL_ALGO_RING, .count = 1 << 20, .elem_size = 4};
  core_err err = {0};
  uint64_t t0 = core_now_ns();
  assert_int_equal(sim_coll_run(&p, &job, 1, 0.3, &err), TERN_ERR_TIMEOUT);
  assert_true(core_now_ns() - t0 < 3000000000ull);
  assert_non_null(strstr(err.msg, "wall time"));
}

/* Memory runs out in the simulator: the call fails with a message, the caller lives on. */
static void test_simulator_death_reported(void **state) {
  (void)state;
#ifdef TERN_SANITIZED
  skip(); /* the sanitizers reserve more address space than any limit that would bite */
#else
  struct rlimit old, tight;
  assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
  tight = old;
  tight.rlim_cur = 256ul << 20;
  assert_int_equal(setrlimit(RLIMIT_AS, &tight), 0);
  sim_platform p;
  sim_platform_cluster(&p, 512, 8);
  sim_coll_job job = {.kind = COLL_ALLTOALL, .algo = COLL_ALGO_DIRECT, .count = 8, .elem_size = 4};
  core_err err = {0};
  tern_status rc = sim_coll_run(&p, &job, 1, 60, &err);
  assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
  fprintf(stderr, "(expected) %s\n", err.msg);
  assert_int_not_equal(rc, TERN_OK);
  assert_true(err.msg[0] != '\0');
#endif
}

/* 4096 ranks (512 hosts x 8), small sizes: seconds. */
static void test_4096_ranks_in_seconds(void **state) {
  (void)state;
#ifdef TERN_SANITIZED
  int hosts = 64; /* threads for actors under sanitizers: keep it small */
#else
  int hosts = 512;
#endif
  sim_platform p;
  sim_platform_cluster(&p, hosts, 8);
  sim_coll_job jobs[] = {
      {.kind = COLL_ALLREDUCE, .algo = COLL_ALGO_RHD, .count = 1024, .elem_size = 4},
      {.kind = COLL_ALLGATHER, .algo = COLL_ALGO_BRUCK, .count = 16, .elem_size = 4},
      {.kind = COLL_REDUCE_SCATTER, .algo = COLL_ALGO_RHD, .count = 16, .elem_size = 4}};
  core_err err = {0};
  uint64_t t0 = core_now_ns();
  assert_int_equal(sim_coll_run(&p, jobs, 3, 120, &err), TERN_OK);
  double wall = (double)(core_now_ns() - t0) * 1e-9;
  fprintf(stderr, "%d ranks, 3 collectives: %.2f s of wall time\n", hosts * 8, wall);
  for (int j = 0; j < 3; j++)
    assert_true(jobs[j].status == TERN_OK && jobs[j].time > 0);
  assert_true(wall < 60);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_hosts_exact),
      cmocka_unit_test(test_shared_memory_exact),
      cmocka_unit_test(test_nic_is_shared),
      cmocka_unit_test(test_nics_add_up),
      cmocka_unit_test(test_one_flow_one_nic),
      cmocka_unit_test(test_dragonfly_pools_global_links),
      cmocka_unit_test(test_steady_matches_exact),
      cmocka_unit_test(test_cores_are_shared),
      cmocka_unit_test(test_geo_links),
      cmocka_unit_test(test_runs_the_built_schedules),
      cmocka_unit_test(test_plan_compresses_without_loss),
      cmocka_unit_test(test_bounds_hold),
      cmocka_unit_test(test_unsupported_job_does_not_stop_others),
      cmocka_unit_test(test_bad_platforms_refused),
      cmocka_unit_test(test_bad_fixtures_refused),
      cmocka_unit_test(test_topologies_run),
      cmocka_unit_test(test_dragonfly_of_many_groups),
      cmocka_unit_test(test_deadline_kills_the_simulation),
      cmocka_unit_test(test_simulator_death_reported),
      cmocka_unit_test(test_4096_ranks_in_seconds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

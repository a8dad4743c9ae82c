/* test_plan_policies.c: each policy does what its description says, on a four-region cluster
 * whose answers are worked out by hand: LCF, LDF, CR-LCF, CR-LDF; BACE-Pipe's priority,
 * congestion, pathfinder (fast links first, slow links refused), cost-min allocator and choice
 * among paths; our trim; and a planning round. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"

#include <math.h>

enum { CHEAP, BIG, MID, TINY };

static plan_scenario sc;
static plan_state st;
static plan_demand d[2];
static plan_queued q[2];

#define REGION(n, g, p)                                                                            \
  "{\"name\": \"" n "\", \"gpu\": \"fast\", \"gpus\": " #g ", \"price_usd_per_kwh\": " #p          \
  ", \"intra_bandwidth_gbps\": 100}"
#define LINK(a, b, gbps)                                                                           \
  "{\"a\": \"" a "\", \"b\": \"" b "\", \"latency_ms\": 1, \"bandwidth_gbps\": " #gbps "}"

static int setup(void **state) {
  (void)state;
  char text[8192];
  /* on 80 GiB GPUs the 12-layer job fits on one GPU and asks for K* = 12 */
  snprintf(
      text, sizeof text,
      "{" PT_TYPES
      ", \"regions\": [" REGION("cheap", 8, 0.10) "," REGION("big", 20, 0.30) "," REGION("mid", 12, 0.20) "," REGION(
          "tiny", 4,
          0.05) "], \"links\": [" LINK("cheap", "big",
                                       10) "," LINK("cheap", "mid",
                                                    1) "," LINK("cheap", "tiny",
                                                                5) "," LINK("big", "mid",
                                                                            1) "," LINK("big",
                                                                                        "tiny",
                                                                                        0.5) "," LINK("mid",
                                                                                                      "tiny",
                                                                                                      0.5) "], \"jobs\": [" PT_JOB
                                                                                                           "," PT_JOB
                                                                                                           "], " PT_ASSUME
                                                                                                           "}",
      "small", 1e7, 0.0, "large", 1e9, 0.0);
  pt_load(text, &sc);
  for (int i = 0; i < 2; i++) {
    assert_true(plan_job_demand(&sc.c, &sc.jobs[i], &d[i], NULL));
    q[i] = (plan_queued){&sc.jobs[i], &d[i], i};
  }
  assert_int_equal(d[0].kstar, 12);
  assert_int_equal(d[0].smin[1], 1);
  return plan_state_init(&st, &sc.c, NULL) == TERN_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  plan_state_free(&st);
  plan_scenario_free(&sc);
  return 0;
}

static void set_free(int cheap, int big, int mid, int tiny) {
  plan_state_free(&st);
  assert_int_equal(plan_state_init(&st, &sc.c, NULL), TERN_OK);
  int f[4] = {cheap, big, mid, tiny};
  for (int r = 0; r < 4; r++)
    st.free[r] = f[r];
}

static void expect(const plan_placement *p, int nseg, const int *regions, const int *gpus) {
  assert_int_equal(p->nseg, nseg);
  for (int i = 0; i < nseg; i++) {
    assert_int_equal(p->seg[i].region, regions[i]);
    assert_int_equal(p->seg[i].gpus, gpus[i]);
  }
}

static const plan_policy *pol(const char *name) {
  const plan_policy *p = plan_policy_find(name);
  assert_non_null(p);
  return p;
}

static void lcf(void **state) {
  (void)state;
  plan_placement p;
  set_free(8, 20, 12, 4);
  /* the cheapest region with all 12 GPUs free is mid (tiny and cheap are too small) */
  assert_true(pol("lcf")->place(pol("lcf"), &st, &q[0], &p));
  expect(&p, 1, (int[]){MID}, (int[]){12});
  set_free(8, 10, 0, 4); /* none has 12: the cheapest that holds the job at all, on what it has */
  assert_true(pol("lcf")->place(pol("lcf"), &st, &q[0], &p));
  expect(&p, 1, (int[]){TINY}, (int[]){4});
}

static void ldf(void **state) {
  (void)state;
  plan_placement p;
  set_free(8, 20, 12, 4);
  assert_true(pol("ldf")->place(pol("ldf"), &st, &q[0], &p));
  expect(&p, 1, (int[]){BIG}, (int[]){12});
  set_free(8, 5, 6, 4); /* the most free is cheap, 8 < 12: it starts there on 8 */
  assert_true(pol("ldf")->place(pol("ldf"), &st, &q[0], &p));
  expect(&p, 1, (int[]){CHEAP}, (int[]){8});
}

static void crlcf(void **state) {
  (void)state;
  plan_placement p;
  set_free(8, 20, 12, 4);
  /* ascending price: tiny 4, then cheap 8 = 12, whatever the tiny-cheap link can carry */
  assert_true(pol("cr-lcf")->place(pol("cr-lcf"), &st, &q[0], &p));
  expect(&p, 2, (int[]){TINY, CHEAP}, (int[]){4, 8});
}

static void crldf(void **state) {
  (void)state;
  plan_placement p;
  set_free(8, 5, 6, 4);
  /* start at the most free (cheap, 8); extend by free x bandwidth: big 5 x 10 beats tiny 4 x 5
   * and mid 6 x 1 */
  assert_true(pol("cr-ldf")->place(pol("cr-ldf"), &st, &q[0], &p));
  expect(&p, 2, (int[]){CHEAP, BIG}, (int[]){8, 4});
  /* a job already on cheap-big halves that link's share: 5 x 10 / 2 = 25 still beats 20 */
  st.share[CHEAP * 4 + BIG] = st.share[BIG * 4 + CHEAP] = 1;
  assert_true(pol("cr-ldf")->place(pol("cr-ldf"), &st, &q[0], &p));
  expect(&p, 2, (int[]){CHEAP, BIG}, (int[]){8, 4});
  st.share[CHEAP * 4 + BIG] = st.share[BIG * 4 + CHEAP] = 3; /* 12.5: tiny's 20 wins now */
  assert_true(pol("cr-ldf")->place(pol("cr-ldf"), &st, &q[0], &p));
  expect(&p, 2, (int[]){CHEAP, TINY}, (int[]){8, 4});
}

static void pathfinder(void **state) {
  (void)state;
  plan_path path;
  set_free(8, 5, 6, 4);
  /* at 12 GPUs a stage is one layer, 12.4 ms on these GPUs. cheap-big: 1 ms + 4.19 MB at
   * 10 Gbit/s = 4.4 ms, accepted; the 1 Gbit/s links take 34.6 ms and are refused */
  double tau = 3 * plan_job_layer_fwd_flops(&sc.jobs[0]) / 1e14;
  assert_true(plan_hop_time(&sc.c, &sc.jobs[0], CHEAP, BIG, 1) <= tau);
  assert_true(plan_hop_time(&sc.c, &sc.jobs[0], CHEAP, MID, 1) > tau);
  plan_pathfind(&st, &q[0], CHEAP, 12, true, &path);
  assert_int_equal(path.n, 2);
  assert_int_equal(path.region[0], CHEAP);
  assert_int_equal(path.region[1], BIG);
  assert_int_equal(path.k, 12);
  /* from mid every link is 1 or 0.5 Gbit/s: it stays alone with its 6 */
  plan_pathfind(&st, &q[0], MID, 12, true, &path);
  assert_int_equal(path.n, 1);
  assert_int_equal(path.k, 6);
  /* without the link check (the ablation) mid goes on to the cheapest: tiny at its tail, then
   * cheap at its head */
  plan_pathfind(&st, &q[0], MID, 12, false, &path);
  assert_int_equal(path.n, 3);
  assert_int_equal(path.region[0], CHEAP);
  assert_int_equal(path.region[1], MID);
  assert_int_equal(path.region[2], TINY);
  /* cheap-big shared by 2 jobs already leaves 3.3 Gbit/s for this one (1 ms + 3 x 3.36 ms =
   * 11.1 ms, it would fit a stage), but cheap-tiny has 5 left: fastest first takes tiny */
  st.share[CHEAP * 4 + BIG] = st.share[BIG * 4 + CHEAP] = 2;
  plan_pathfind(&st, &q[0], CHEAP, 12, true, &path);
  assert_int_equal(path.region[1], TINY);
  /* cheap-tiny crowded by 3 (1 ms + 4 x 6.7 ms = 27.8 ms) is refused: big it is */
  st.share[CHEAP * 4 + TINY] = st.share[TINY * 4 + CHEAP] = 3;
  plan_pathfind(&st, &q[0], CHEAP, 12, true, &path);
  assert_int_equal(path.region[1], BIG);
  /* and by 4 on cheap-big (14.4 ms) no link keeps up: cheap stays alone with its 8 */
  st.share[CHEAP * 4 + BIG] = st.share[BIG * 4 + CHEAP] = 3;
  plan_pathfind(&st, &q[0], CHEAP, 12, true, &path);
  assert_int_equal(path.n, 1);
  assert_int_equal(path.k, 8);
}

static void allocators(void **state) {
  (void)state;
  int gpus[2];
  set_free(8, 5, 6, 4);
  /* one stage each, then the rest cheapest first: cheap fills to 8, big gets the other 4 */
  plan_alloc_costmin(&st, (int[]){BIG, CHEAP}, 2, 12, gpus);
  assert_int_equal(gpus[0], 4);
  assert_int_equal(gpus[1], 8);
  plan_alloc_inorder(&st, (int[]){BIG, CHEAP}, 2, 12, gpus);
  assert_int_equal(gpus[0], 5);
  assert_int_equal(gpus[1], 7);
  /* every region on the path keeps a stage even when the cheap one could take all */
  set_free(20, 5, 6, 4);
  plan_alloc_costmin(&st, (int[]){BIG, CHEAP}, 2, 12, gpus);
  assert_int_equal(gpus[0], 1);
  assert_int_equal(gpus[1], 11);
}

static void bace_choice(void **state) {
  (void)state;
  plan_placement p;
  set_free(8, 20, 12, 4);
  /* full candidates: big 12 (USD 0.30), mid 12 (0.20), tiny+cheap 4+8 over 5 Gbit/s (0.05 and
   * 0.10) and cheap+big; the cheapest is tiny+cheap */
  assert_true(pol("bace")->place(pol("bace"), &st, &q[0], &p));
  expect(&p, 2, (int[]){TINY, CHEAP}, (int[]){4, 8});
  /* without cost-min, the fastest: one region, no hop */
  assert_true(pol("bace-nocost")->place(pol("bace-nocost"), &st, &q[0], &p));
  assert_int_equal(p.nseg, 1);
  /* only cheap (8) and mid (6) free, linked at 1 Gbit/s: no pipeline of 12 keeps up, so BACE
   * starts on one region short of K*: both make stages of 2 layers, mid's 6 have fewer hops to
   * fill and so are a little faster, but cheap's 8 are within 10% of that and half the price:
   * the fallback takes cheap. The pathfinder's ablation chains the two anyway */
  set_free(8, 0, 6, 0);
  assert_true(pol("bace")->place(pol("bace"), &st, &q[0], &p));
  expect(&p, 1, (int[]){CHEAP}, (int[]){8});
  assert_true(pol("bace-nocost")->place(pol("bace-nocost"), &st, &q[0], &p));
  expect(&p, 1, (int[]){MID}, (int[]){6}); /* blind to price: the fastest */
  assert_true(pol("bace-nopath")->place(pol("bace-nopath"), &st, &q[0], &p));
  assert_int_equal(p.nseg, 2);
  assert_int_equal(p.stages, 12);
  /* ours trims cheap's 8 to 6 (2 layers a stage either way): as fast as mid, and cheaper */
  assert_true(pol("ours")->place(pol("ours"), &st, &q[0], &p));
  expect(&p, 1, (int[]){CHEAP}, (int[]){6});
}

static void priority(void **state) {
  (void)state;
  double prio[2];
  set_free(8, 20, 12, 4);
  plan_queued qq[2] = {q[1], q[0]};
  /* idle network: P = 1 - I; the small job has 1/100 of the large one's work */
  assert_true(plan_congestion(&st) == 0);
  plan_priorities(&st, qq, 2, prio);
  assert_true(fabs(prio[0] - 0) < 1e-12);
  assert_true(fabs(prio[1] - (1 - d[0].work_flops / d[1].work_flops)) < 1e-12);
  plan_order_priority(&st, qq, 2);
  assert_int_equal(qq[0].id, 0);
  /* load every link at its capacity: a = 1 and P = 1 - D, equal here (same shape): arrival
   * order, then id, decides */
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      st.load_Bps[a * 4 + b] = 1e12;
      st.share[a * 4 + b] = 1;
    }
  assert_true(plan_congestion(&st) == 1);
  plan_priorities(&st, qq, 2, prio);
  assert_true(prio[0] == 0 && prio[1] == 0);
  /* no job on a link, and no region has the 12 GPUs either job wants: both must cross regions,
   * so a is their share, 1, not the idle network's 0 */
  set_free(8, 10, 6, 4);
  assert_true(plan_congestion(&st) == 0 && plan_alpha(&st, qq, 2) == 1);
  plan_priorities(&st, qq, 2, prio);
  assert_true(prio[0] == 0 && prio[1] == 0);
  set_free(8, 20, 6, 4); /* big holds either: nothing needs to cross, a = 0 */
  assert_true(plan_alpha(&st, qq, 2) == 0);
  /* half the links at half their bandwidth: a = 0.25 */
  set_free(8, 20, 12, 4);
  double bps = plan_link_at(&sc.c, CHEAP, BIG)->Bps;
  st.load_Bps[CHEAP * 4 + BIG] = bps / 2;
  st.load_Bps[CHEAP * 4 + MID] = plan_link_at(&sc.c, CHEAP, MID)->Bps / 2;
  st.load_Bps[CHEAP * 4 + TINY] = plan_link_at(&sc.c, CHEAP, TINY)->Bps / 2;
  assert_true(fabs(plan_congestion(&st) - 0.25) < 1e-12);
  /* FCFS */
  sc.jobs[1].arrival_s = -1;
  plan_order_fcfs(qq, 2);
  assert_int_equal(qq[0].id, 1);
  sc.jobs[1].arrival_s = 0;
}

/* ours-prio, the portfolio's last member, orders the queue as BACE-Pipe does, where every other
 * member runs the shortest job first: on a congested network two jobs of one shape tie on
 * priority and the earlier arrival goes first, though its run is the longer */
static void prio_member(void **state) {
  (void)state;
  set_free(8, 20, 12, 4);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      st.load_Bps[a * 4 + b] = 1e12;
      st.share[a * 4 + b] = 1;
    }
  sc.jobs[1].arrival_s = -1;
  plan_queued qq[2] = {q[0], q[1]};
  pol("ours-prio")->order(pol("ours-prio"), &st, qq, 2);
  assert_int_equal(qq[0].id, 1);
  pol("ours-online")->order(pol("ours-online"), &st, qq, 2);
  assert_int_equal(qq[0].id, 0);
  sc.jobs[1].arrival_s = 0;
  const plan_policy *const *m = pol("ours")->members;
  int n = 0;
  while (m[n])
    n++;
  assert_string_equal(m[n - 1]->name, "ours-prio");
}

static void round_applies(void **state) {
  (void)state;
  plan_placement out[2];
  unsigned char placed[2];
  plan_queued qq[2] = {q[0], q[1]};
  set_free(8, 20, 12, 4);
  /* LDF: big gets the first 12, then mid 12 vs big 8: mid */
  assert_int_equal(plan_decide(pol("ldf"), &st, qq, 2, out, placed), 2);
  assert_true(placed[0] && placed[1]);
  assert_int_equal(st.free[BIG], 8);
  assert_int_equal(st.free[MID], 0);
  plan_state_apply(&st, qq[0].job, qq[0].d, &out[0], -1);
  assert_int_equal(st.free[BIG], 20);
  /* CR-LCF's chain tiny-cheap counts on that link */
  set_free(8, 20, 12, 4);
  assert_int_equal(plan_decide(pol("cr-lcf"), &st, qq, 1, out, placed), 1);
  assert_int_equal(st.share[TINY * 4 + CHEAP], 1);
  assert_int_equal(st.share[CHEAP * 4 + TINY], 1);
  assert_true(st.load_Bps[TINY * 4 + CHEAP] == qq[0].d->demand_Bps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lcf),         cmocka_unit_test(ldf),        cmocka_unit_test(crlcf),
      cmocka_unit_test(crldf),       cmocka_unit_test(pathfinder), cmocka_unit_test(allocators),
      cmocka_unit_test(bace_choice), cmocka_unit_test(priority),   cmocka_unit_test(round_applies),
      cmocka_unit_test(prio_member),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

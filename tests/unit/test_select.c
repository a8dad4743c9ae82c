/* test_select.c: the cost model. coll_sched_cost follows its definition on a schedule built by
 * hand; the closed forms agree with coll_sched_cost of the schedules coll_build writes (exactly
 * where blocks divide evenly and n is a power of two, within 25% elsewhere, and for the chain
 * pipelines by exactly the n-3 phases of their fill); coll_select returns the cheapest
 * algorithm that has a schedule, the same on every call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/algo/algo.h"

#include <math.h>
#include <stdio.h>

/* Constants far apart, so each term shows. */
static const coll_net_model toy = {.alpha = 1e-6, .beta = 1e-9, .gamma = 1e-12, .o = 1e-3};

static void near(double got, double want, double rel) {
  if (fabs(got - want) > rel * fabs(want))
    fail_msg("got %.12g, want %.12g (relative error %.3g)", got, want, fabs(got - want) / want);
}

static void sched_cost_follows_its_definition(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  coll_sched_send(&s, 1, COLL_BUF_SEND, 0, 100); /* two messages out, one in */
  coll_sched_send(&s, 2, COLL_BUF_SEND, 100, 50);
  coll_sched_recv(&s, 3, COLL_BUF_RECV, 0, 80);
  coll_sched_end_phase(&s);
  coll_sched_recv_reduce(&s, 1, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 40);
  coll_sched_copy(&s, COLL_BUF_TMP, 0, COLL_BUF_SEND, 0, 1000); /* copies are free */
  coll_sched_end_phase(&s);
  coll_sched_reduce(&s, COLL_BUF_RECV, 0, COLL_BUF_TMP, 0, 30); /* local: no alpha */
  coll_sched_end_phase(&s);
  coll_sched_send(&s, 1, COLL_BUF_RECV, 0, 0); /* an empty message still costs alpha */
  coll_sched_end_phase(&s);
  double es = 4;
  /* across hosts a phase's bytes are its larger direction */
  double want =
      (1e-6 + 1e-3 + 1e-9 * 150 * es) + (1e-6 + (1e-9 + 1e-12) * 40 * es) + 1e-12 * 30 * es + 1e-6;
  near(coll_sched_cost(&s, 4, &toy), want, 1e-12);
  /* on one host both directions, but what is reduced in place */
  coll_net_model one_host = toy;
  one_host.one_host = true;
  want = (1e-6 + 1e-3 + 1e-9 * (150 + 80) * es) + (1e-6 + (1e-9 + 1e-12) * 40 * es) +
         1e-12 * 30 * es + 1e-6;
  near(coll_sched_cost(&s, 4, &one_host), want, 1e-12);
  one_host.reduce_in_place = true;
  want = (1e-6 + 1e-3 + 1e-9 * (150 + 80) * es) + (1e-6 + 1e-12 * 40 * es) + 1e-12 * 30 * es + 1e-6;
  near(coll_sched_cost(&s, 4, &one_host), want, 1e-12);
  coll_sched_free(&s);
}

static double max_rank_cost(coll_sched *s, coll_args a, coll_algo algo, size_t es,
                            const coll_net_model *m) {
  double worst = 0;
  for (int r = 0; r < a.size; r++) {
    a.rank = r;
    assert_int_equal(coll_build(s, &a, algo), TERN_OK);
    worst = CORE_MAX(worst, coll_sched_cost(s, es, m));
  }
  return worst;
}

static void closed_forms_match_schedules(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  coll_net_model loopback = coll_model_for(true, true, false, 0); /* nothing reduced in place */
  const coll_net_model *models[] = {&coll_model_shm, &coll_model_tcp, &loopback};
  long exact = 0, close = 0, chains = 0;
  double worst = 1;
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      /* hier spans two transports: its cost is coll_hier_cost's, tested on its own */
      if (!coll_algo_supported(kind, algo) || algo == COLL_ALGO_HIER) continue;
      bool rooted = kind == COLL_BROADCAST || kind == COLL_REDUCE;
      bool chain = rooted && algo == COLL_ALGO_RING;
      for (int n = 2; n <= 64; n += n < 12 ? 1 : 7)
        for (int ci = 0; ci < 5; ci++)
          for (int mi = 0; mi < 3; mi++) {
            const size_t counts[] = {(size_t)n, 3 * (size_t)n + 1, 1000, 65537, 1 << 20};
            size_t c = counts[ci], es = mi == 1 ? 2 : 4;
            const coll_net_model *m = models[mi];
            coll_args a = {.kind = kind, .size = n, .count = c, .root = rooted ? n / 3 : 0};
            if (!coll_algo_fits(algo, &a)) continue; /* pair: two ranks only */
            double sched = max_rank_cost(&s, a, algo, es, m);
            double closed = coll_algo_cost(kind, algo, n, c, es, m);
            if (chain) {
              size_t seg = coll_pipeline_seg(c, n, 0);
              double red = kind == COLL_REDUCE, S = (double)(seg * es);
              /* the closed form prices nseg + n - 2 rounds as a middle rank's, which passes a
               * segment on while it receives the next; the worst rank, one in the middle, has
               * nseg + 1 phases, of which its first only receives and its last only sends
               * (without reducing) */
              double round =
                  m->alpha + m->beta * coll_phase_bytes(m, S, S, red * S) + m->gamma * red * S;
              double first =
                  m->alpha + m->beta * coll_phase_bytes(m, 0, S, red * S) + m->gamma * red * S;
              double last = m->alpha + m->beta * coll_phase_bytes(m, S, 0, 0);
              double fill = n >= 3 ? (n - 1) * round - first - last : 0;
              if (c % seg == 0) {
                if (fabs(closed - sched - fill) > 1e-9 * closed) goto wrong;
                chains++;
              } else if (closed < sched) {
                goto wrong;
              }
            } else if ((n & (n - 1)) == 0 && c % (size_t)n == 0) {
              if (fabs(closed - sched) > 1e-9 * closed) goto wrong;
              exact++;
            } else {
              double ratio = closed / sched;
              worst = fabs(log(ratio)) > fabs(log(worst)) ? ratio : worst;
              if (ratio < 0.8 || ratio > 1.25) goto wrong;
              close++;
            }
            continue;
          wrong:
            fail_msg("%s %s n=%d count=%zu es=%zu: closed form %.6g s, schedule %.6g s",
                     coll_kind_name(kind), coll_algo_name(algo), n, c, es, closed, sched);
          }
    }
  printf("closed forms: %ld exact, %ld chain fills exact, %ld within a factor %.3f\n", exact,
         chains, close, worst);
  assert_true(exact > 100 && chains > 10);
  coll_sched_free(&s);
}

static void select_is_the_cheapest(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  const coll_net_model *models[] = {&coll_model_shm, &coll_model_tcp};
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int n = 1; n <= 64; n += n < 10 ? 1 : 9)
      for (size_t c = 0; c <= (64u << 20); c = c ? c * 16 : 1)
        for (int mi = 0; mi < 2; mi++) {
          coll_algo a = coll_select(kind, n, c, 4, models[mi]);
          assert_true(coll_algo_supported(kind, a));
          assert_int_not_equal(a, COLL_ALGO_HIER);
          assert_int_equal(coll_select(kind, n, c, 4, models[mi]), a);
          double best = coll_algo_cost(kind, a, n, c, 4, models[mi]);
          for (int b = 1; b < COLL_NUM_ALGOS; b++)
            if (b != COLL_ALGO_HIER && coll_algo_supported(kind, b))
              assert_true(best <= coll_algo_cost(kind, b, n, c, 4, models[mi]));
          coll_args ar = {.kind = kind, .size = n, .rank = n - 1, .count = c};
          assert_int_equal(coll_build(&s, &ar, a), TERN_OK);
        }
  coll_sched_free(&s);
}

/* What the constants make of this machine: latency-bound algorithms for small messages,
 * bandwidth-optimal ones for large; for large broadcasts the pipeline across hosts, and on one
 * host halving-doubling, since there a pipeline's middle ranks copy every byte in and out on
 * their own CPUs (coll_phase_bytes); the reduce of two ranks one message, not an exchange, on
 * one host. */
static void select_follows_the_model(void **state) {
  (void)state;
  const coll_net_model *shm = &coll_model_shm, *tcp = &coll_model_tcp;
  coll_net_model loopback = coll_model_for(true, true, false, 0);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 2, 4, shm), COLL_ALGO_RD);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 16 << 20, 4, shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 6, 16 << 20, 4, tcp), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_BROADCAST, 16, 16 << 20, 4, tcp), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_BROADCAST, 16, 16 << 20, 4, shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_REDUCE, 2, 1 << 20, 4, shm), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_REDUCE, 2, 1 << 20, 4, &loopback), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_REDUCE, 2, 1 << 20, 4, tcp), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 16, 2, 4, shm), COLL_ALGO_TREE);
  /* with more ranks than CPUs (the crowded models as declared, their CPUs unknown) the chain's
   * stages take turns: over shared memory each round pays a hand-off, so halving-doubling's
   * fewer rounds win up to 16 MiB and the chain beyond; over TCP the stages do not overlap at
   * all and halving-doubling wins throughout. With the CPUs known, the tree takes the large
   * broadcasts: crowded_rooted_pays_for_pairs_on_one_cpu. */
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 4 << 20, 4, shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 18, 4, shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 18, 4, &coll_model_shm_crowded),
                   COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 4 << 20, 4, &coll_model_shm_crowded),
                   COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 16 << 20, 4, &coll_model_shm_crowded),
                   COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_REDUCE, 4, 4 << 20, 4, shm), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_REDUCE, 4, 1 << 18, 4, &coll_model_shm_crowded), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 4 << 20, 4, tcp), COLL_ALGO_RING);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 4 << 20, 4, &coll_model_tcp_crowded),
                   COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 16 << 20, 4, &coll_model_tcp_crowded),
                   COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_REDUCE, 4, 4 << 20, 4, &coll_model_tcp_crowded), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_ALLTOALL, 64, 1, 4, tcp), COLL_ALGO_BRUCK);
  assert_true(coll_algo_cost(COLL_BARRIER, coll_select(COLL_BARRIER, 64, 0, 4, shm), 64, 0, 4,
                             shm) <= 7 * shm->alpha);
  /* TCP's alpha is 13 times shm's: the crossover to bandwidth algorithms comes later */
  for (size_t c = 1; c < (64u << 20); c *= 2) {
    if (coll_select(COLL_ALLREDUCE, 16, c, 4, shm) != COLL_ALGO_RD) {
      assert_int_equal(coll_select(COLL_ALLREDUCE, 16, c, 4, tcp), COLL_ALGO_RD);
      break;
    }
  }
  printf("allreduce, f32, the model's choice (shm / tcp):\n");
  for (int n = 2; n <= 16; n *= 2) {
    printf("  n=%-2d", n);
    for (size_t b = 8; b <= (64u << 20); b *= 8)
      printf(" %s/%s", coll_algo_name(coll_select(COLL_ALLREDUCE, n, b / 4, 4, shm)),
             coll_algo_name(coll_select(COLL_ALLREDUCE, n, b / 4, 4, tcp)));
    printf("   (8 B to 32 MiB, x8)\n");
  }
}

/* The whole host's work, summed over every rank's built schedule: messages sent, bytes sent,
 * bytes reduced. */
static coll_work built_work(coll_sched *s, coll_args a, coll_algo algo, size_t es) {
  coll_work w = {0};
  for (int r = 0; r < a.size; r++) {
    a.rank = r;
    assert_int_equal(coll_build(s, &a, algo), TERN_OK);
    for (size_t i = 0; i < s->len; i++) {
      const coll_step *st = &s->steps[i];
      double bytes = (double)(st->count * es);
      if (st->kind == COLL_STEP_SEND) w.msgs++, w.bytes += bytes;
      if (st->kind == COLL_STEP_RECV_REDUCE || st->kind == COLL_STEP_REDUCE) w.red += bytes;
      if (st->kind == COLL_STEP_RECV_REDUCE) w.red_received += bytes;
    }
  }
  return w;
}

static bool within(double got, double want, double rel) {
  return fabs(got - want) <= rel * fabs(want) + 1e-9;
}

/* work.c's closed forms against the built schedules: messages exactly; bytes exactly at powers
 * of two, else within 1% (blocks of a power of two's halving do not divide evenly), 10% for the
 * tree's scatter (an estimate). */
static void work_matches_schedules(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  long checked = 0;
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      if (!coll_algo_supported(kind, algo) || algo == COLL_ALGO_HIER) continue;
      bool rooted = kind == COLL_BROADCAST || kind == COLL_REDUCE;
      for (int n = 2; n <= 33; n += n < 12 ? 1 : 7) {
        size_t c = kind == COLL_BARRIER ? 0 : 840 * (size_t)n; /* divides evenly */
        coll_args a = {.kind = kind, .size = n, .count = c, .root = rooted ? n / 3 : 0};
        if (!coll_algo_fits(algo, &a)) continue; /* pair: two ranks only */
        coll_work b = built_work(&s, a, algo, 4), w = coll_algo_work(kind, algo, n, c, 4);
        bool pow2 = (n & (n - 1)) == 0;
        double rel = pow2 ? 1e-12 : algo == COLL_ALGO_TREE ? 0.1 : 0.01;
        if (b.msgs != w.msgs || !within(w.bytes, b.bytes, rel) || !within(w.red, b.red, 1e-12) ||
            !within(w.red_received, b.red_received, 1e-12))
          fail_msg("%s %s n=%d: closed form %g msgs %g B %g reduced (%g on receipt), schedules "
                   "%g %g %g (%g)",
                   coll_kind_name(kind), coll_algo_name(algo), n, w.msgs, w.bytes, w.red,
                   w.red_received, b.msgs, b.bytes, b.red, b.red_received);
        checked++;
      }
    }
  assert_true(checked > 300);
  coll_sched_free(&s);
}

/* With more ranks than CPUs over TCP, the CPUs take every rank's messages in turns: at n = 8 on
 * 2 CPUs the allreduce of 64 KiB goes to the tree (14 messages) instead of halving-doubling
 * (48), as measured (work.c), and 16 MiB stays on halving-doubling, whose critical path is
 * shorter; with the CPUs unknown the critical path alone decides, as before.
 * Equal work (the chain of one segment and the tree, for a small broadcast) goes to the shorter
 * critical path. */
static void crowded_tcp_counts_the_hosts_work(void **state) {
  (void)state;
  coll_net_model two = coll_model_for(true, true, true, 2);
  coll_net_model unknown = coll_model_for(true, true, true, 0);
  assert_int_equal(two.cpus, 2);
  assert_int_equal(coll_model_for(true, true, false, 2).cpus, 0);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 16384, 4, &two), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 16, 16384, 4, &two), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 16384, 4, &unknown), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 4 << 20, 4, &two), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_BROADCAST, 8, 2, 4, &two), COLL_ALGO_TREE);
  /* Graham's bound: the work over the CPUs, and half the critical path on 2 */
  coll_work w = coll_algo_work(COLL_ALLREDUCE, COLL_ALGO_RING, 8, 16384, 4);
  near(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RING, 8, 16384, 4, &two),
       (w.msgs * two.msg_cpu + w.bytes * two.beta + w.red * two.gamma) / 2 +
           coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RING, 8, 16384, 4, &unknown) / 2,
       1e-12);
}

/* With more ranks than CPUs over shared memory, each phase in which the ranks wait for each other
 * costs every rank a turn on a CPU (select.c's turn_phases): the choices below are the fastest
 * measured at n = 8 and 16 on 2 cores (2026-12-06), where the critical path alone had picked
 * halving-doubling, 2 to 36 times slower. */
static void crowded_shm_counts_the_ranks_turns(void **state) {
  (void)state;
  coll_net_model two = coll_model_for(false, true, true, 2), no_turns = two;
  no_turns.turn = 0;
  assert_int_equal(coll_select(COLL_BROADCAST, 16, 65536, 4, &two), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_BROADCAST, 8, 4096, 4, &two), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_REDUCE, 16, 65536, 4, &two), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 16, 256, 4, &two), COLL_ALGO_DIRECT);
  assert_int_equal(coll_select(COLL_ALLGATHER, 8, 64, 4, &two), COLL_ALGO_DIRECT);
  assert_int_equal(coll_select(COLL_REDUCE_SCATTER, 16, 32, 4, &two), COLL_ALGO_DIRECT);
  assert_int_equal(coll_select(COLL_ALLTOALL, 16, 2, 4, &two), COLL_ALGO_DIRECT);
  assert_int_equal(coll_select(COLL_ALLREDUCE, 8, 1 << 20, 4, &two), COLL_ALGO_RHD);
  /* the turns themselves: n / cpus per such phase, none for a tree's broadcast */
  near(coll_algo_cost(COLL_BROADCAST, COLL_ALGO_TREE, 8, 4096, 4, &two),
       coll_algo_cost(COLL_BROADCAST, COLL_ALGO_TREE, 8, 4096, 4, &no_turns), 1e-12);
  near(coll_algo_cost(COLL_BROADCAST, COLL_ALGO_RHD, 8, 4096, 4, &two),
       coll_algo_cost(COLL_BROADCAST, COLL_ALGO_RHD, 8, 4096, 4, &no_turns) + 3 * 4 * two.turn,
       1e-12);
  near(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_DIRECT, 16, 256, 4, &two),
       coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_DIRECT, 16, 256, 4, &no_turns) + 8 * two.turn,
       1e-12);
  near(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RHD, 6, 256, 4, &two),
       coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RHD, 6, 256, 4, &no_turns) + (4 + 2) * 3 * two.turn,
       1e-12);
}

/* Over shared memory the host's CPUs copy a message at both ends, into the slots and out, but a
 * reducing receive sums straight from the slots: a crowded reduce_scatter leaves direct, which
 * receives whole blocks and reduces them after, from 64 KiB at n = 4 (measured on 2 cores,
 * 2026-12-06, 20 launches, medians: 1 MiB direct 172 us, halving-doubling 124, ring 117; 64 KiB
 * 11.8, 10.7, 15.0). Over TCP a byte sent stays one copy at beta, the loopback's carry. */
static void crowded_shm_copies_at_both_ends(void **state) {
  (void)state;
  coll_net_model shm = coll_model_for(false, true, true, 2),
                 tcp = coll_model_for(true, true, true, 2);
  /* count: one rank's block, a quarter of the message */
  assert_int_equal(coll_select(COLL_REDUCE_SCATTER, 4, 4096, 4, &shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_REDUCE_SCATTER, 4, 65536, 4, &shm), COLL_ALGO_RHD);
  assert_int_equal(coll_select(COLL_REDUCE_SCATTER, 4, 64, 4, &shm), COLL_ALGO_DIRECT);
  const coll_algo algos[] = {COLL_ALGO_RING, COLL_ALGO_DIRECT};
  for (size_t i = 0; i < CORE_ARRAY_LEN(algos); i++) {
    coll_work w = coll_algo_work(COLL_REDUCE_SCATTER, algos[i], 4, 65536, 4);
    double on_receipt = algos[i] == COLL_ALGO_DIRECT ? 0 : w.red;
    assert_true(w.red_received == on_receipt);
    near(coll_host_time(&w, &shm),
         (w.msgs * shm.msg_cpu + (2 * w.bytes - on_receipt) * shm.beta + w.red * shm.gamma) / 2,
         1e-15);
    near(coll_host_time(&w, &tcp),
         (w.msgs * tcp.msg_cpu + w.bytes * tcp.beta + w.red * tcp.gamma) / 2, 1e-15);
  }
}

/* tern run deals rank r to CPU r mod cpus, so at n = 4 on 2 CPUs the larger step of each half
 * of a rooted halving-doubling pairs two ranks of one CPU, which makes both ends' copies: the
 * crowded broadcast from 1 MiB goes to the tree (its hops cross CPUs), as measured (select.c,
 * same_cpu_share: TCP 1 MiB 544-887 -> 417-495 us), where the shorter critical path alone chose
 * halving-doubling; with a CPU per rank nothing changes. */
static void crowded_rooted_pays_for_pairs_on_one_cpu(void **state) {
  (void)state;
  coll_net_model tcp = coll_model_for(true, true, true, 2),
                 shm = coll_model_for(false, true, true, 2);
  coll_net_model own_cpus = coll_model_for(true, true, false, 0);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 18, 4, &tcp), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 24, 4, &tcp), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_BROADCAST, 8, 1 << 20, 4, &tcp), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 20, 4, &shm), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_REDUCE, 8, 1 << 20, 4, &tcp), COLL_ALGO_TREE);
  assert_int_equal(coll_select(COLL_BROADCAST, 4, 1 << 20, 4, &own_cpus), COLL_ALGO_RHD);
}

static void cost_edges(void **state) {
  (void)state;
  assert_true(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_BRUCK, 4, 10, 4, &toy) == HUGE_VAL);
  assert_true(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_HIER, 4, 10, 4, &toy) == HUGE_VAL);
  assert_true(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RING, 0, 10, 4, &toy) == HUGE_VAL);
  assert_true(coll_algo_cost(COLL_ALLREDUCE, COLL_ALGO_RING, 1, 10, 4, &toy) == 0);
  assert_true(coll_algo_cost(COLL_ALLGATHER, COLL_ALGO_RHD, 9, 0, 4, &toy) == 0);
  assert_true(coll_algo_cost(COLL_BARRIER, COLL_ALGO_TREE, 9, 0, 4, &toy) > 0);
  assert_true(coll_model_tcp.alpha > coll_model_shm.alpha);
  assert_true(coll_model_tcp.beta > coll_model_shm.beta);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sched_cost_follows_its_definition),
      cmocka_unit_test(closed_forms_match_schedules),
      cmocka_unit_test(select_is_the_cheapest),
      cmocka_unit_test(select_follows_the_model),
      cmocka_unit_test(work_matches_schedules),
      cmocka_unit_test(crowded_tcp_counts_the_hosts_work),
      cmocka_unit_test(crowded_shm_counts_the_ranks_turns),
      cmocka_unit_test(crowded_shm_copies_at_both_ends),
      cmocka_unit_test(crowded_rooted_pays_for_pairs_on_one_cpu),
      cmocka_unit_test(cost_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sched.c: schedules as data: the append helpers and phases, a failed growth that
 * sticks, warm rebuilds that allocate nothing, steps that do not grow with the count, the cost
 * of building, names, and what coll_build refuses (bad arguments, unsupported pairs). Whether
 * the schedules are right is test_check.c's business. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/sched.h"

#include <stdio.h>
#include <string.h>

static void appends_and_phases(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  coll_sched_end_phase(&s); /* empty: nothing to close */
  assert_int_equal(s.nphases, 0);
  assert_int_equal(coll_sched_send(&s, 1, COLL_BUF_SEND, 0, 4), TERN_OK);
  assert_int_equal(coll_sched_recv_reduce(&s, 2, COLL_BUF_RECV, 4, COLL_BUF_SEND, 4, 4), TERN_OK);
  coll_sched_end_phase(&s);
  coll_sched_end_phase(&s);
  assert_int_equal(coll_sched_copy(&s, COLL_BUF_TMP, 0, COLL_BUF_RECV, 0, 0), TERN_OK);
  assert_int_equal(coll_sched_reduce(&s, COLL_BUF_RECV, 0, COLL_BUF_TMP, 0, 0), TERN_OK);
  assert_int_equal(coll_sched_copy(&s, COLL_BUF_RECV, 3, COLL_BUF_RECV, 3, 9), TERN_OK);
  assert_int_equal(s.len, 2); /* nothing to copy or reduce: dropped */
  assert_int_equal(coll_sched_recv(&s, 3, COLL_BUF_RECV, 0, 0), TERN_OK); /* a barrier's */
  assert_int_equal(coll_sched_copy(&s, COLL_BUF_TMP, 0, COLL_BUF_RECV, 0, 8), TERN_OK);
  assert_int_equal(coll_sched_reduce(&s, COLL_BUF_RECV, 0, COLL_BUF_TMP, 8, 8), TERN_OK);
  coll_sched_end_phase(&s);
  assert_int_equal(s.len, 5);
  assert_int_equal(s.nphases, 2);
  const uint8_t last[] = {0, 1, 0, 0, 1},
                kinds[] = {COLL_STEP_SEND, COLL_STEP_RECV_REDUCE, COLL_STEP_RECV, COLL_STEP_COPY,
                           COLL_STEP_REDUCE};
  for (size_t i = 0; i < s.len; i++) {
    assert_int_equal(s.steps[i].last, last[i]);
    assert_int_equal(s.steps[i].kind, kinds[i]);
  }
  assert_int_equal(s.steps[1].peer, 2);
  assert_int_equal(s.steps[1].src_off, 4);
  assert_int_equal(s.steps[3].peer, -1);
  coll_sched_reset(&s);
  assert_int_equal(s.len, 0);
  assert_int_equal(s.nphases, 0);
  assert_true(s.cap >= 5);
  coll_sched_free(&s);
  assert_null(s.steps);
}

/* A growth that cannot happen (the array would pass SIZE_MAX bytes) fails the append with
 * TERN_ERR_NOMEM, and every later append too, until a reset. */
static void failed_growth_sticks(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  assert_int_equal(coll_sched_send(&s, 1, COLL_BUF_SEND, 0, 1), TERN_OK);
  size_t cap = s.cap, len = s.len;
  s.cap = s.len = SIZE_MAX / sizeof(coll_step) / 2 + 1;
  assert_int_equal(coll_sched_recv(&s, 1, COLL_BUF_RECV, 0, 1), TERN_ERR_NOMEM);
  s.cap = cap, s.len = len; /* the real array again: appends would fit now, but must not */
  assert_int_equal(coll_sched_send(&s, 1, COLL_BUF_SEND, 0, 1), TERN_ERR_NOMEM);
  assert_int_equal(coll_sched_copy(&s, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 1), TERN_ERR_NOMEM);
  assert_int_equal(coll_sched_status(&s), TERN_ERR_NOMEM);
  assert_int_equal(s.len, 1);
  coll_sched_reset(&s);
  assert_int_equal(coll_sched_status(&s), TERN_OK);
  assert_int_equal(coll_sched_send(&s, 1, COLL_BUF_SEND, 0, 1), TERN_OK);
  coll_sched_free(&s);
}

/* The smallest proper divisor of n as the ranks per host (hier needs one), 0 when n is prime. */
static int some_ppn(int n) {
  for (int d = 2; d < n; d++)
    if (n % d == 0) return d;
  return 0;
}

static coll_args args(coll_kind kind, int n, int rank, size_t count) {
  bool rooted = kind == COLL_BROADCAST || kind == COLL_REDUCE;
  return (coll_args){.kind = kind, .size = n, .rank = rank, .count = count,
                     .root = rooted ? n / 3 : 0, .ppn = some_ppn(n)};
}

/* hier has a schedule only where ranks form hosts (1 < ppn < n). */
static bool buildable(const coll_args *a, int algo) {
  return coll_algo_supported(a->kind, algo) && (algo != COLL_ALGO_HIER || a->ppn > 1);
}

/* The executor builds a schedule anew for every call: once warm, no allocation. */
static void warm_rebuild_allocates_nothing(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      coll_args a = args(kind, 64, 37, 1 << 20);
      if (!buildable(&a, algo)) continue;
      coll_sched_free(&s);
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      coll_step *steps = s.steps;
      size_t cap = s.cap, len = s.len;
      for (int k = 0; k < 3; k++) {
        assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
        assert_ptr_equal(s.steps, steps);
        assert_int_equal(s.cap, cap);
        assert_int_equal(s.len, len);
      }
    }
  coll_sched_free(&s);
}

/* Steps are coarse: a slice per peer per phase, whatever the count (the chain pipelines of
 * broadcast and reduce excepted: they cut at most 256 segments). */
static void steps_do_not_grow_with_count(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  const int ns[] = {2, 5, 8, 33, 64};
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      if (!coll_algo_supported(kind, algo)) continue;
      for (size_t ni = 0; ni < CORE_ARRAY_LEN(ns); ni++)
        for (int rank = 0; rank < ns[ni]; rank += 3) {
          coll_args a = args(kind, ns[ni], rank, (size_t)ns[ni] * 1000);
          if (!buildable(&a, algo)) continue;
          assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
          size_t small = s.len;
          a.count = (1ull << 40) + 3;
          assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
          bool chain = algo == COLL_ALGO_RING && (kind == COLL_BROADCAST || kind == COLL_REDUCE);
          if (chain)
            assert_true(s.len <= 2 * 257);
          else
            assert_int_equal(s.len, small);
        }
    }
  coll_sched_free(&s);
}

static void names_round_trip(void **state) {
  (void)state;
  coll_algo algo;
  coll_kind kind;
  for (int a = 0; a < COLL_NUM_ALGOS; a++) {
    assert_true(coll_algo_parse(coll_algo_name((coll_algo)a), &algo));
    assert_int_equal(algo, a);
  }
  for (int k = 0; k < COLL_NUM_KINDS; k++) {
    assert_true(coll_kind_parse(coll_kind_name((coll_kind)k), &kind));
    assert_int_equal(kind, k);
  }
  assert_true(coll_algo_parse("RHD", &algo) && algo == COLL_ALGO_RHD);
  assert_true(coll_algo_parse("Pairwise", &algo) && algo == COLL_ALGO_PAIRWISE);
  assert_true(coll_kind_parse("Reduce_Scatter", &kind) && kind == COLL_REDUCE_SCATTER);
  algo = COLL_ALGO_TREE;
  assert_false(coll_algo_parse("rings", &algo));
  assert_false(coll_algo_parse("", &algo));
  assert_false(coll_algo_parse(NULL, &algo));
  assert_int_equal(algo, COLL_ALGO_TREE); /* untouched on failure */
  assert_false(coll_kind_parse("allreduce ", &kind));
  assert_string_equal(coll_algo_name(COLL_NUM_ALGOS), "?");
  assert_string_equal(coll_kind_name((coll_kind)-1), "?");
  assert_string_equal(coll_algo_name(COLL_ALGO_RD), "rd");
  assert_string_equal(coll_kind_name(COLL_ALLTOALL), "alltoall");
}

/* The algorithm x collective table (R ring, H rhd, T tree, D direct, d rd, B bruck, P
 * pairwise, X hier). */
static void support_table(void **state) {
  (void)state;
  static const char *const table[COLL_NUM_KINDS] = {
      [COLL_ALLREDUCE] = "RHTDdX", [COLL_REDUCE_SCATTER] = "RHTDX", [COLL_ALLGATHER] = "RHTDBX",
      [COLL_BROADCAST] = "RHTD",  [COLL_REDUCE] = "RHTD",         [COLL_ALLTOALL] = "DBP",
      [COLL_BARRIER] = "RHTDdB",
  };
  static const char letter[COLL_NUM_ALGOS] = {
      [COLL_ALGO_RING] = 'R',     [COLL_ALGO_RHD] = 'H',  [COLL_ALGO_TREE] = 'T',
      [COLL_ALGO_DIRECT] = 'D',   [COLL_ALGO_RD] = 'd',   [COLL_ALGO_BRUCK] = 'B',
      [COLL_ALGO_PAIRWISE] = 'P', [COLL_ALGO_HIER] = 'X', [COLL_ALGO_AUTO] = '!'};
  coll_sched s;
  coll_sched_init(&s);
  for (int k = 0; k < COLL_NUM_KINDS; k++)
    for (int a = 0; a < COLL_NUM_ALGOS; a++) {
      bool want = strchr(table[k], letter[a]) != NULL;
      assert_int_equal(coll_algo_supported(k, a), want);
      coll_args ar = args(k, 6, 1, 10);
      tern_status st = coll_build(&s, &ar, a);
      assert_int_equal(st, want                  ? TERN_OK
                           : a == COLL_ALGO_AUTO ? TERN_ERR_INVALID_ARG
                                                 : TERN_ERR_UNSUPPORTED);
      if (want) assert_int_equal(s.algo, a);
    }
  assert_false(coll_algo_supported(COLL_NUM_KINDS, COLL_ALGO_RING));
  assert_false(coll_algo_supported(COLL_ALLREDUCE, COLL_NUM_ALGOS));
  coll_sched_free(&s);
}

static void build_refuses_bad_args(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  coll_args ok = args(COLL_BROADCAST, 4, 1, 10), a;
  assert_int_equal(coll_build(&s, &ok, COLL_ALGO_TREE), TERN_OK);
  assert_int_equal(coll_build(&s, &ok, COLL_ALGO_AUTO), TERN_ERR_INVALID_ARG);
  assert_int_equal(coll_build(&s, &ok, (coll_algo)99), TERN_ERR_INVALID_ARG);
  a = ok, a.size = 0, a.rank = 0;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_ERR_INVALID_ARG);
  a = ok, a.rank = 4;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_ERR_INVALID_ARG);
  a = ok, a.rank = -1;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_ERR_INVALID_ARG);
  a = ok, a.root = 4;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_ERR_INVALID_ARG);
  a = ok, a.kind = COLL_NUM_KINDS;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_ERR_INVALID_ARG);
  a = args(COLL_ALLTOALL, 4, 1, 10), a.inplace = true;
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_PAIRWISE), TERN_ERR_INVALID_ARG);
  a = args(COLL_ALLGATHER, 4, 1, SIZE_MAX / 4);
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_ERR_INVALID_ARG);
  a.count = SIZE_MAX / 10 - 1; /* n count and 2 n count still fit */
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  a = args(COLL_BARRIER, 4, 1, SIZE_MAX); /* a barrier's count means nothing */
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  assert_int_equal(s.len, 6);
  coll_sched_free(&s);
}

/* Nothing to move: no steps; one rank: its own data, copied unless in place. */
static void trivial_cases(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      if (!coll_algo_supported(kind, algo)) continue;
      coll_args a = args(kind, 7, 3, 0);
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len == 0, kind != COLL_BARRIER);
      a = args(kind, 1, 0, 5);
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len, kind != COLL_BARRIER);
      if (s.len) {
        assert_int_equal(s.steps[0].kind, COLL_STEP_COPY);
        assert_int_equal(s.steps[0].count, 5);
      }
      a.inplace = kind != COLL_ALLTOALL;
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len, kind == COLL_ALLTOALL);
    }
  coll_sched_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(appends_and_phases),
      cmocka_unit_test(failed_growth_sticks),
      cmocka_unit_test(warm_rebuild_allocates_nothing),
      cmocka_unit_test(steps_do_not_grow_with_count),
      cmocka_unit_test(names_round_trip),
      cmocka_unit_test(support_table),
      cmocka_unit_test(build_refuses_bad_args),
      cmocka_unit_test(trivial_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

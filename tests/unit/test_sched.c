/* test_sched.c: schedules as data: the append helpers and phases, a failed growth that
 * sticks, warm rebuilds that allocate nothing, steps that do not grow with the count, the cost
 * of building, names, what coll_build refuses (bad arguments, unsupported pairs), and the
 * schedule cache: one key field apart is another schedule, bounded, least recently used out;
 * and that a tree laid on a crowded host's CPUs spreads its work over them.
 * Whether the schedules are right is test_check.c's business. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/algo/algo.h"

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
  bool rooted = coll_kind_rooted(kind);
  return (coll_args){.kind = kind,
                     .size = n,
                     .rank = rank,
                     .count = count,
                     .root = rooted ? n / 3 : 0,
                     .ppn = some_ppn(n)};
}

/* hier has a schedule only where ranks form hosts (1 < ppn < n). */
static bool buildable(const coll_args *a, int algo) {
  return coll_algo_fits(algo, a) && (algo != COLL_ALGO_HIER || a->ppn > 1);
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
 * broadcast and reduce excepted: they cut at most 256 segments; and pair, whose pieces are of a
 * cache's size: four steps a piece). */
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
          a.count = algo == COLL_ALGO_PAIR ? (64u << 20) + 3 : (1ull << 40) + 3;
          assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
          if (algo == COLL_ALGO_PAIR) {
            assert_true(s.len <= 4 * ((a.count + 1) / 2 / COLL_PAIR_PIECE + 2));
            continue;
          }
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
 * pairwise, X hier, p pair). */
static void support_table(void **state) {
  (void)state;
  static const char *const table[COLL_NUM_KINDS] = {
      [COLL_ALLREDUCE] = "RHTDdXp", [COLL_REDUCE_SCATTER] = "RHTDX",
      [COLL_ALLGATHER] = "RHTDBX",  [COLL_BROADCAST] = "RHTD",
      [COLL_REDUCE] = "RHTD",       [COLL_ALLTOALL] = "DBP",
      [COLL_BARRIER] = "RHTDdB",    [COLL_GATHER] = "D",
      [COLL_SCATTER] = "D",         [COLL_ALLTOALLV] = "DP",
  };
  static const char letter[COLL_NUM_ALGOS] = {
      [COLL_ALGO_RING] = 'R',     [COLL_ALGO_RHD] = 'H',  [COLL_ALGO_TREE] = 'T',
      [COLL_ALGO_DIRECT] = 'D',   [COLL_ALGO_RD] = 'd',   [COLL_ALGO_BRUCK] = 'B',
      [COLL_ALGO_PAIRWISE] = 'P', [COLL_ALGO_HIER] = 'X', [COLL_ALGO_PAIR] = 'p',
      [COLL_ALGO_AUTO] = '!'};
  coll_sched s;
  coll_sched_init(&s);
  for (int k = 0; k < COLL_NUM_KINDS; k++)
    for (int a = 0; a < COLL_NUM_ALGOS; a++) {
      bool want = strchr(table[k], letter[a]) != NULL;
      assert_int_equal(coll_algo_supported(k, a), want);
      coll_args ar = args(k, a == COLL_ALGO_PAIR ? 2 : 6, 1, 10); /* pair: two ranks only */
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
  a = args(COLL_ALLGATHER, 4, 1, SIZE_MAX / 4);
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_ERR_INVALID_ARG);
  a.count = SIZE_MAX / 10 - 1; /* n count and 2 n count still fit */
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  a = args(COLL_BARRIER, 4, 1, SIZE_MAX); /* a barrier's count means nothing */
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  assert_int_equal(s.len, 6);
  coll_sched_free(&s);
}

/* Nothing to move: no steps (but the empty messages of barrier and alltoallv); one rank: its own
 * data, copied unless in place. */
static void trivial_cases(void **state) {
  (void)state;
  coll_sched s;
  coll_sched_init(&s);
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      if (!coll_algo_supported(kind, algo)) continue;
      coll_args a = args(kind, 7, 3, 0);
      if (!coll_algo_fits(algo, &a)) a.size = 2, a.rank = 1; /* pair: two ranks */
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len == 0, !coll_kind_runs_empty(kind));
      a = args(kind, 1, 0, 5);
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len, kind != COLL_BARRIER);
      if (s.len) {
        assert_int_equal(s.steps[0].kind, COLL_STEP_COPY);
        assert_int_equal(s.steps[0].count, 5);
      }
      a.inplace = true;
      assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
      assert_int_equal(s.len, 0);
    }
  coll_sched_free(&s);
}

/* Every rank of a broadcast or reduce, whatever the algorithm, opens its first phase by sending
 * its successor an empty message and receiving one from its predecessor (build.c's root check);
 * unchecked_root (TERN_CHECK_ROOTS=0) leaves both out and nothing else changes. */
static void rooted_calls_check_their_root(void **state) {
  (void)state;
  coll_sched s, bare;
  coll_sched_init(&s);
  coll_sched_init(&bare);
  long seen = 0;
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++)
      for (int n = 2; n <= 9; n++)
        for (int r = 0; r < n; r++) {
          coll_args a = args(kind, n, r, 1000);
          if (!coll_kind_rooted(kind) || !buildable(&a, algo)) continue;
          assert_int_equal(coll_build(&s, &a, algo), TERN_OK);
          a.unchecked_root = true;
          assert_int_equal(coll_build(&bare, &a, algo), TERN_OK);
          assert_true(s.len >= 2 && s.len == bare.len + 2);
          assert_int_equal(s.steps[0].kind, COLL_STEP_SEND);
          assert_int_equal(s.steps[0].peer, (r + 1) % n);
          assert_int_equal(s.steps[1].kind, COLL_STEP_RECV);
          assert_int_equal(s.steps[1].peer, (r + n - 1) % n);
          assert_true(s.steps[0].count == 0 && s.steps[1].count == 0 && !s.steps[0].last);
          for (size_t i = 0; i < bare.len; i++)
            assert_int_equal(bare.steps[i].count, s.steps[i + 2].count);
          seen++;
        }
  assert_true(seen > 100);
  coll_sched_free(&s);
  coll_sched_free(&bare);
}

/* ---- the schedule cache (cache.c) ---- */

static void assert_same_sched(const coll_sched *x, const coll_sched *y) {
  assert_int_equal(x->len, y->len);
  assert_int_equal(x->tmp_count, y->tmp_count);
  assert_int_equal(x->nphases, y->nphases);
  assert_int_equal(x->algo, y->algo);
  for (size_t i = 0; i < x->len; i++) {
    const coll_step *a = &x->steps[i], *b = &y->steps[i];
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->buf, b->buf);
    assert_int_equal(a->src_buf, b->src_buf);
    assert_int_equal(a->last, b->last);
    assert_int_equal(a->peer, b->peer);
    assert_int_equal(a->off, b->off);
    assert_int_equal(a->src_off, b->src_off);
    assert_int_equal(a->count, b->count);
  }
}

/* At 2 ranks the ring and the tree broadcast are one send, and the ring and halving-doubling
 * allreduce one exchange of halves; recursive doubling's exchange of whole vectors is not. */
static void equal_schedules_of_different_algorithms(void **state) {
  (void)state;
  struct {
    coll_kind kind;
    coll_algo a, b;
    bool equal;
  } v[] = {{COLL_BROADCAST, COLL_ALGO_RING, COLL_ALGO_TREE, true},
           {COLL_ALLREDUCE, COLL_ALGO_RING, COLL_ALGO_RHD, true},
           {COLL_ALLREDUCE, COLL_ALGO_RING, COLL_ALGO_RD, false}};
  coll_sched x, y;
  coll_sched_init(&x);
  coll_sched_init(&y);
  for (size_t i = 0; i < CORE_ARRAY_LEN(v); i++)
    for (int rank = 0; rank < 2; rank++) {
      coll_args a = {.kind = v[i].kind, .rank = rank, .size = 2, .count = 1000};
      assert_int_equal(coll_build(&x, &a, v[i].a), TERN_OK);
      assert_int_equal(coll_build(&y, &a, v[i].b), TERN_OK);
      if (coll_sched_equal(&x, &y) != v[i].equal)
        fail_msg("%s: %s and %s, rank %d: %s", coll_kind_name(v[i].kind), coll_algo_name(v[i].a),
                 coll_algo_name(v[i].b), rank, v[i].equal ? "differ" : "equal");
      assert_true(coll_sched_equal(&x, &x));
    }
  coll_sched_free(&x);
  coll_sched_free(&y);
}

/* The cache's answer for (a, algo) is what coll_build writes; hit says whether it came from the
 * cache. */
static void assert_cached(coll_sched_cache *k, const coll_args *a, coll_algo algo, bool hit) {
  coll_sched fresh;
  coll_sched_init(&fresh);
  assert_int_equal(coll_build(&fresh, a, algo), TERN_OK);
  uint64_t hits = k->hits;
  const coll_sched *got = NULL;
  assert_int_equal(coll_sched_cache_get(k, a, algo, &got), TERN_OK);
  assert_int_equal(k->hits - hits, hit);
  assert_same_sched(got, &fresh);
  coll_sched_free(&fresh);
}

typedef struct variant {
  const char *field;
  coll_args base, other;
  coll_algo base_algo, other_algo;
} variant;

/* Two calls that differ in one field of the key only, alternated: each must get its own
 * schedule. Every pair is checked to build different schedules, so that a field missing from the
 * key would hand one call the other's schedule and fail here. (The dtype and the op are not part
 * of a schedule: steps count elements, and the executor applies the call's op.) */
static void cache_keys_every_field(void **state) {
  (void)state;
  coll_args ar = {.kind = COLL_ALLREDUCE, .size = 4, .rank = 1, .count = 100};
  coll_args ag = {.kind = COLL_ALLGATHER, .size = 4, .rank = 1, .count = 100};
  coll_args bc = {.kind = COLL_BROADCAST, .size = 4, .rank = 1, .count = 100, .root = 0};
  coll_args hi = {.kind = COLL_ALLREDUCE,
                  .size = 8,
                  .rank = 3,
                  .count = 100,
                  .ppn = 2,
                  .inner = COLL_ALGO_RING};
  coll_args pair = {.kind = COLL_ALLREDUCE, .size = 2, .rank = 1, .count = COLL_PAIR_PIECES_FROM};
  variant v[] = {
      {"count", ar, ar, COLL_ALGO_RING, COLL_ALGO_RING},
      {"rank", ar, ar, COLL_ALGO_RING, COLL_ALGO_RING},
      {"size", ar, ar, COLL_ALGO_RING, COLL_ALGO_RING},
      {"inplace", ag, ag, COLL_ALGO_RING, COLL_ALGO_RING},
      {"kind", ar, ar, COLL_ALGO_RING, COLL_ALGO_RING},
      {"algo", ar, ar, COLL_ALGO_RING, COLL_ALGO_RHD},
      {"root", bc, bc, COLL_ALGO_RING, COLL_ALGO_RING},
      {"seg_count", bc, bc, COLL_ALGO_RING, COLL_ALGO_RING},
      {"ppn", hi, hi, COLL_ALGO_HIER, COLL_ALGO_HIER},
      {"inner", hi, hi, COLL_ALGO_HIER, COLL_ALGO_HIER},
      {"cpus", bc, bc, COLL_ALGO_TREE, COLL_ALGO_TREE},
      {"algo (pair)", pair, pair, COLL_ALGO_RING, COLL_ALGO_PAIR},
      {"unchecked_root", bc, bc, COLL_ALGO_TREE, COLL_ALGO_TREE},
  };
  v[0].other.count = 101;
  v[1].other.rank = 2;
  v[2].other.size = 5;
  v[3].other.inplace = true;
  v[4].other.kind = COLL_REDUCE_SCATTER;
  v[6].other.root = 2;
  v[7].other.seg_count = 10;
  v[8].other.ppn = 4;
  v[9].other.inner = COLL_ALGO_RHD;
  v[10].other.cpus = 2;
  v[12].other.unchecked_root = true;
  for (size_t i = 0; i < CORE_ARRAY_LEN(v); i++) {
    coll_sched x, y;
    coll_sched_init(&x);
    coll_sched_init(&y);
    assert_int_equal(coll_build(&x, &v[i].base, v[i].base_algo), TERN_OK);
    assert_int_equal(coll_build(&y, &v[i].other, v[i].other_algo), TERN_OK);
    if (coll_sched_equal(&x, &y)) fail_msg("%s: both calls build the same schedule", v[i].field);
    coll_sched_free(&x);
    coll_sched_free(&y);
    coll_sched_cache k;
    coll_sched_cache_init(&k);
    for (int round = 0; round < 3; round++) {
      assert_cached(&k, &v[i].base, v[i].base_algo, round > 0);
      assert_cached(&k, &v[i].other, v[i].other_algo, round > 0);
    }
    coll_sched_cache_free(&k);
  }
}

/* Sends per CPU of a tree broadcast from root (receives of a tree reduce), with rank r on CPU
 * r mod cpus; returns the busiest CPU's count less the idlest's. */
static int tree_imbalance(coll_kind kind, int n, int cpus, int root, int dealt) {
  int per_cpu[4] = {0};
  int want = kind == COLL_BROADCAST ? COLL_STEP_SEND : COLL_STEP_RECV_REDUCE;
  for (int r = 0; r < n; r++) {
    coll_args a = {.kind = kind, .size = n, .rank = r, .root = root, .count = 8, .cpus = dealt};
    coll_sched s;
    coll_sched_init(&s);
    assert_int_equal(coll_build(&s, &a, COLL_ALGO_TREE), TERN_OK);
    for (size_t i = 0; i < s.len; i++)
      per_cpu[r % cpus] += s.steps[i].kind == want && s.steps[i].count > 0; /* not build.c's
                                                                                root check */
    coll_sched_free(&s);
  }
  int most = 0, least = n;
  for (int c = 0; c < cpus; c++) {
    most = CORE_MAX(most, per_cpu[c]);
    least = CORE_MIN(least, per_cpu[c]);
  }
  return most - least;
}

/* On a host whose ranks were dealt round over fewer CPUs, a tree's inner members (a broadcast's
 * senders, a reduce's reducers) spread over the CPUs. Over every root, the spread is never worse
 * than in rank order, neither on average nor at its worst, and when n is a power of two no CPU
 * does more than log2 n of that work beyond another's, where in rank order on two CPUs one CPU
 * did it all. (Other n make lopsided trees: n = 9 on 2 CPUs is 2.2 on average, 6 at worst,
 * against 4.4 and 8 in rank order.) */
static void dealt_tree_spreads_its_work(void **state) {
  (void)state;
  for (int cpus = 2; cpus <= 4; cpus++)
    for (int n = cpus + 1; n <= 20; n++)
      for (int kind = COLL_BROADCAST; kind <= COLL_REDUCE; kind++) {
        int log2n = 0, sum[2] = {0}, worst[2] = {0};
        while ((1 << log2n) < n)
          log2n++;
        for (int root = 0; root < n; root++)
          for (int dealt = 0; dealt <= 1; dealt++) {
            int spread = tree_imbalance(kind, n, cpus, root, dealt ? cpus : 0);
            sum[dealt] += spread;
            worst[dealt] = CORE_MAX(worst[dealt], spread);
          }
        bool pow2 = (n & (n - 1)) == 0;
        if (sum[1] > sum[0] || worst[1] > worst[0] || (pow2 && worst[1] > log2n))
          fail_msg("%s n=%d on %d CPUs: one CPU does up to %d more than another, %.2f on "
                   "average (rank order: %d, %.2f)",
                   coll_kind_name(kind), n, cpus, worst[1], (double)sum[1] / n, worst[0],
                   (double)sum[0] / n);
      }
  /* in rank order on 2 CPUs, an 8-rank broadcast's senders all share CPU 0 */
  assert_int_equal(tree_imbalance(COLL_BROADCAST, 8, 2, 0, 0), 7);
  assert_int_equal(tree_imbalance(COLL_BROADCAST, 8, 2, 0, 2), 1);
}

/* The cache holds COLL_SCHED_CACHE_LEN schedules and evicts the least recently used; a warm hit
 * hands back the same storage (nothing is allocated or copied); a failed build is not kept. */
static void cache_is_bounded_lru(void **state) {
  (void)state;
  coll_sched_cache k;
  coll_sched_cache_init(&k);
  coll_args a = {.kind = COLL_ALLREDUCE, .size = 4, .rank = 0, .count = 1000};
  for (int i = 0; i < COLL_SCHED_CACHE_LEN; i++, a.count++)
    assert_cached(&k, &a, COLL_ALGO_RING, false);
  a.count = 1000; /* the oldest: used again, so the second oldest goes next */
  const coll_sched *first = NULL, *again = NULL;
  assert_int_equal(coll_sched_cache_get(&k, &a, COLL_ALGO_RING, &first), TERN_OK);
  assert_int_equal(coll_sched_cache_get(&k, &a, COLL_ALGO_RING, &again), TERN_OK);
  assert_ptr_equal(first, again);
  a.count = 5000;
  assert_cached(&k, &a, COLL_ALGO_RING, false);
  a.count = 1000;
  assert_cached(&k, &a, COLL_ALGO_RING, true);
  a.count = 1001; /* evicted */
  assert_cached(&k, &a, COLL_ALGO_RING, false);
  uint64_t misses = k.misses;
  const coll_sched *got = NULL;
  a.kind = COLL_ALLTOALL; /* ring has no alltoall */
  assert_int_equal(coll_sched_cache_get(&k, &a, COLL_ALGO_RING, &got), TERN_ERR_UNSUPPORTED);
  assert_int_equal(coll_sched_cache_get(&k, &a, COLL_ALGO_RING, &got), TERN_ERR_UNSUPPORTED);
  assert_int_equal(k.misses - misses, 2);
  coll_sched_cache_free(&k);
}

/* alltoallv's counts are the caller's arrays, which change between calls at the same address: its
 * schedules are built every call, never kept, and they take no other schedule's place. */
static void cache_rebuilds_alltoallv(void **state) {
  (void)state;
  coll_sched_cache k;
  coll_sched_cache_init(&k);
  coll_args ar = {.kind = COLL_ALLREDUCE, .size = 2, .rank = 0, .count = 10};
  assert_cached(&k, &ar, COLL_ALGO_RING, false);
  size_t sc[2] = {1, 2}, sd[2] = {0, 1}, rc[2] = {1, 3}, rd[2] = {0, 1};
  coll_vcounts v = {sc, sd, rc, rd};
  coll_args a = {.kind = COLL_ALLTOALLV, .size = 2, .rank = 0, .v = &v};
  const coll_sched *got = NULL;
  for (size_t c = 2; c < 2 + 2 * COLL_SCHED_CACHE_LEN; c++) {
    sc[1] = c; /* the same arrays, other counts */
    assert_int_equal(coll_sched_cache_get(&k, &a, COLL_ALGO_DIRECT, &got), TERN_OK);
    bool seen = false;
    for (size_t i = 0; i < got->len; i++)
      if (got->steps[i].kind == COLL_STEP_SEND)
        seen = true, assert_int_equal(got->steps[i].count, c);
    assert_true(seen);
  }
  assert_int_equal(k.hits, 0);
  assert_cached(&k, &ar, COLL_ALGO_RING, true); /* still there */
  coll_sched_cache_free(&k);
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
      cmocka_unit_test(rooted_calls_check_their_root),
      cmocka_unit_test(equal_schedules_of_different_algorithms),
      cmocka_unit_test(cache_keys_every_field),
      cmocka_unit_test(dealt_tree_spreads_its_work),
      cmocka_unit_test(cache_is_bounded_lru),
      cmocka_unit_test(cache_rebuilds_alltoallv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

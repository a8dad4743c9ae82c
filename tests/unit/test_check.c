/* test_check.c: the symbolic checker, both ways round.
 *
 * First every schedule tern builds is proved correct: every collective x every algorithm that
 * has it x n = 1..64 x counts (0, 1, n - 1, n, 3n + 5, 10^6 + 3, 2^40 + 7: nothing, below n,
 * divisible, not, large, past 32 bits) x in place and out of place x roots (all of them up to
 * n = 8, four beyond), and the trees laid on a crowded host's CPUs. Then the checker is
 * shown to catch what it claims, on schedules broken by hand (a contribution counted twice, one
 * missing, a deadlock, a count mismatch, a race in a phase, plain and through in-place
 * aliasing, an access outside the extents, a non-bit-identical allreduce, ...), each with its
 * specific complaint, and on real schedules broken at random (a message dropped, a reduction
 * turned into a plain receive, an offset moved by one): every one must be rejected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/algo/algo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) {
  return (double)core_now_ns() / 1e9;
}

static void every_schedule_is_correct(void **state) {
  (void)state;
  char why[1024];
  long runs = 0;
  double t0 = now_s();
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      /* hier needs hosts: hier_schedules_are_correct covers it */
      if (!coll_algo_supported(kind, algo) || algo == COLL_ALGO_HIER) continue;
      for (int n = 1; n <= 64; n++) {
        size_t un = (size_t)n;
        const size_t counts[] = {0, 1, un - 1, un, 3 * un + 5, 1000003, (1ull << 40) + 7};
        int roots[4] = {0, 1, n / 2, n - 1}, nroots = coll_kind_rooted(kind) ? (n <= 8 ? n : 4) : 1;
        for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
          for (int ip = 0; ip <= 1; ip++)
            for (int ri = 0; ri < nroots; ri++) {
              coll_args a = {.kind = kind,
                             .size = n,
                             .count = counts[ci],
                             .inplace = ip,
                             .root = n <= 8 ? ri : roots[ri]};
              if (!coll_algo_fits(algo, &a)) continue; /* pair: two ranks only */
              runs++;
              if (coll_check(&a, algo, why, sizeof why) == TERN_OK) continue;
              fail_msg("%s %s n=%d count=%zu inplace=%d root=%d: %s", coll_kind_name(kind),
                       coll_algo_name(algo), n, a.count, ip, a.root, why);
            }
      }
    }
  printf("checked %ld (collective, algorithm, n, count, in place, root) in %.1f s\n", runs,
         now_s() - t0);
}

/* A run of RECV that spans two expected blocks (two of one sender's elements side by side)
 * must be checked block by block: Bruck's alltoall at n = 2 with its last TMP copy dropped
 * leaves rank 0's own element where rank 1's belongs, and the two sit in one run. */
static void catches_wrong_block_inside_one_run(void **state) {
  (void)state;
  char why[1024];
  coll_sched s[2];
  coll_args a = {.kind = COLL_ALLTOALL, .size = 2, .count = 1};
  for (int r = 0; r < 2; r++) {
    coll_sched_init(&s[r]);
    coll_args ar = a;
    ar.rank = r;
    assert_int_equal(coll_build(&s[r], &ar, COLL_ALGO_BRUCK), TERN_OK);
  }
  assert_int_equal(coll_check_scheds(&a, s, why, sizeof why), TERN_OK);
  size_t last_tmp_copy = 0;
  for (size_t i = 0; i < s[0].len; i++)
    if (s[0].steps[i].kind == COLL_STEP_COPY && s[0].steps[i].buf == COLL_BUF_TMP)
      last_tmp_copy = i;
  s[0].steps[last_tmp_copy].count = 0;
  assert_int_equal(coll_check_scheds(&a, s, why, sizeof why), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(why, "rank 0: RECV[1]"));
  for (int r = 0; r < 2; r++)
    coll_sched_free(&s[r]);
}

/* hier, for every n from 4 to 64 and every way of cutting n ranks into equal hosts of two or
 * more, with either algorithm across hosts. */
static void hier_schedules_are_correct(void **state) {
  (void)state;
  char why[1024];
  long runs = 0;
  const coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
  for (int n = 4; n <= 64; n++)
    for (int ppn = 2; ppn < n; ppn++) {
      if (n % ppn) continue;
      size_t un = (size_t)n, up = (size_t)ppn;
      const size_t counts[] = {1, up - 1, un, 3 * un + 5, 1000003};
      for (size_t k = 0; k < CORE_ARRAY_LEN(kinds); k++)
        for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
          for (int ip = 0; ip <= 1; ip++)
            for (int inner = 0; inner <= 1; inner++) {
              coll_args a = {.kind = kinds[k],
                             .size = n,
                             .count = counts[ci],
                             .inplace = ip,
                             .ppn = ppn,
                             .inner = inner ? COLL_ALGO_RHD : COLL_ALGO_RING};
              runs++;
              if (coll_check(&a, COLL_ALGO_HIER, why, sizeof why) == TERN_OK) continue;
              fail_msg("hier %s n=%d ppn=%d count=%zu inplace=%d inner=%s: %s",
                       coll_kind_name(kinds[k]), n, ppn, a.count, ip, coll_algo_name(a.inner), why);
            }
    }
  /* without hosts there is no hier schedule */
  coll_args flat = {.kind = COLL_ALLREDUCE, .size = 8, .count = 10};
  assert_int_equal(coll_check(&flat, COLL_ALGO_HIER, why, sizeof why), TERN_ERR_UNSUPPORTED);
  printf("checked %ld hier configurations\n", runs);
}

/* Proves hier's three collectives on ranks placed by host_of, every count, in place or not,
 * either algorithm across hosts; counts the configurations in *runs. */
static void check_placement(int n, const int *host_of, long *runs) {
  char why[1024];
  coll_hosts *h = NULL;
  assert_int_equal(coll_hosts_make(n, host_of, &h), TERN_OK);
  const coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
  size_t un = (size_t)n;
  const size_t counts[] = {1, 2, un, 3 * un + 5, 10007};
  for (size_t k = 0; k < CORE_ARRAY_LEN(kinds); k++)
    for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
      for (int ip = 0; ip <= 1; ip++)
        for (int inner = 0; inner <= 1; inner++) {
          coll_args a = {.kind = kinds[k],
                         .size = n,
                         .count = counts[ci],
                         .inplace = ip,
                         .hosts = h,
                         .inner = inner ? COLL_ALGO_RHD : COLL_ALGO_RING};
          (*runs)++;
          if (coll_check(&a, COLL_ALGO_HIER, why, sizeof why) == TERN_OK) continue;
          char hosts[200] = "";
          for (int r = 0, at = 0; r < n && at < (int)sizeof hosts - 4; r++)
            at += snprintf(hosts + at, sizeof hosts - (size_t)at, "%d ", host_of[r]);
          fail_msg("hier %s n=%d hosts [%s] count=%zu inplace=%d inner=%s: %s",
                   coll_kind_name(kinds[k]), n, hosts, a.count, ip, coll_algo_name(a.inner), why);
        }
  coll_hosts_free(h);
}

/* hier on any placement: ranks dealt round-robin over H hosts (`mpirun --map-by node`), even
 * or not, uneven contiguous blocks (3 + 1, ...), and hosts drawn at random. */
static void hier_any_placement_is_correct(void **state) {
  (void)state;
  long runs = 0;
  int host_of[64];
  for (int n = 3; n <= 24; n++)
    for (int H = 2; H < n; H++) {
      for (int r = 0; r < n; r++)
        host_of[r] = r % H; /* round-robin */
      check_placement(n, host_of, &runs);
      for (int r = 0; r < n; r++)
        host_of[r] = r < n - H + 1 ? 0 : r - (n - H); /* one big host */
      check_placement(n, host_of, &runs);
    }
  const int three_one[] = {0, 0, 0, 1}, one_three[] = {0, 1, 1, 1}, mixed[] = {5, 2, 5, 5, 2, 9, 9};
  check_placement(4, three_one, &runs);
  check_placement(4, one_three, &runs);
  check_placement(7, mixed, &runs);
  uint64_t x = 88172645463325252ull;
  for (int t = 0; t < 40; t++) {
    int n = 3 + t % 30, H = 2 + t % 5;
    for (int r = 0; r < n; r++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      host_of[r] = (int)(x % (uint64_t)H);
    }
    coll_hosts *h = NULL;
    assert_int_equal(coll_hosts_make(n, host_of, &h), TERN_OK);
    coll_args a = {.size = n, .hosts = h};
    bool fits = coll_hier_fits(&a);
    coll_hosts_free(h);
    if (fits) check_placement(n, host_of, &runs);
  }
  printf("checked %ld hier placements x configurations\n", runs);
}

/* The host-ordered view: hosts numbered by first rank, each host's ranks in rank order, the
 * grid of the first lanes of each. */
static void hosts_view_orders_ranks_by_host(void **state) {
  (void)state;
  const int host_of[] = {7, 3, 7, 3, 7, 3, 7}; /* round-robin, 4 + 3 */
  coll_hosts *h = NULL;
  assert_int_equal(coll_hosts_make(7, host_of, &h), TERN_OK);
  assert_int_equal(h->nhosts, 2);
  assert_int_equal(h->lanes, 3);
  const int order[] = {0, 2, 4, 6, 1, 3, 5}, grid[] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 7; i++)
    assert_int_equal(h->order[i], order[i]);
  for (int i = 0; i < 6; i++)
    assert_int_equal(h->grid[i], grid[i]);
  assert_int_equal(h->local[6], 3);
  assert_int_equal(h->host[1], 1);
  coll_args one_each = {.size = 7, .hosts = h};
  assert_true(coll_hier_fits(&one_each));
  coll_hosts_free(h);
  const int alone[] = {0, 1, 2}, negative[] = {0, -1};
  assert_int_equal(coll_hosts_make(3, alone, &h), TERN_OK);
  coll_args three = {.size = 3, .hosts = h};
  assert_false(coll_hier_fits(&three)); /* one rank a host: no level within hosts */
  coll_hosts_free(h);
  assert_int_equal(coll_hosts_make(2, negative, &h), TERN_ERR_INVALID_ARG);
}

/* Trees laid on the order of a crowded host's CPUs (coll_args.cpus, tree.c's tree_place) are
 * right too: every collective with a tree x n = 1..64 x ranks dealt over 2, 3 or 7 CPUs x counts
 * x in place and out of place x roots. */
static void dealt_trees_are_correct(void **state) {
  (void)state;
  char why[1024];
  long runs = 0;
  const int dealts[] = {2, 3, 7};
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++) {
    if (!coll_algo_supported(kind, COLL_ALGO_TREE)) continue;
    for (int n = 1; n <= 64; n++)
      for (size_t di = 0; di < CORE_ARRAY_LEN(dealts); di++) {
        size_t un = (size_t)n;
        const size_t counts[] = {1, un, 3 * un + 5};
        for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
          for (int ip = 0; ip <= 1; ip++)
            for (int root = 0; root < (coll_kind_rooted(kind) ? CORE_MIN(n, 9) : 1); root++) {
              coll_args a = {.kind = kind,
                             .size = n,
                             .count = counts[ci],
                             .inplace = ip,
                             .root = root,
                             .cpus = dealts[di]};
              runs++;
              if (coll_check(&a, COLL_ALGO_TREE, why, sizeof why) == TERN_OK) continue;
              fail_msg("tree %s n=%d dealt=%d count=%zu inplace=%d root=%d: %s",
                       coll_kind_name(kind), n, a.cpus, a.count, ip, root, why);
            }
      }
  }
  printf("checked %ld dealt tree configurations\n", runs);
}

/* The chains of broadcast and reduce take the caller's segment too. */
static void pipelines_take_any_segment(void **state) {
  (void)state;
  char why[1024];
  const int ns[] = {2, 3, 5, 8, 17};
  const size_t counts[] = {1, 10, 1000}, segs[] = {1, 3, 7, 1000, 5000};
  for (int kind = COLL_BROADCAST; kind <= COLL_REDUCE; kind++)
    for (size_t ni = 0; ni < CORE_ARRAY_LEN(ns); ni++)
      for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
        for (size_t si = 0; si < CORE_ARRAY_LEN(segs); si++)
          for (int ip = 0; ip < 2; ip++)
            for (int root = 0; root < ns[ni]; root += ns[ni] - 1) {
              coll_args a = {.kind = kind,
                             .size = ns[ni],
                             .count = counts[ci],
                             .inplace = ip,
                             .root = root,
                             .seg_count = segs[si]};
              if (coll_check(&a, COLL_ALGO_RING, why, sizeof why) != TERN_OK)
                fail_msg("%s n=%d count=%zu seg=%zu: %s", coll_kind_name(kind), a.size, a.count,
                         a.seg_count, why);
            }
}

/* The allreduce of two ranks in pieces (pair.c, run over shared memory from
 * COLL_PAIR_PIECES_FROM elements): right at and around that count, for pieces that divide the
 * halves or not, in place and out of place. */
static void pair_allreduce_in_pieces_is_correct(void **state) {
  (void)state;
  char why[1024];
  const size_t from = COLL_PAIR_PIECES_FROM;
  const size_t counts[] = {from - 1, from, from + 1, 3 * from + 5};
  const size_t pieces[] = {0, 4093, from / 2, from};
  for (size_t ci = 0; ci < CORE_ARRAY_LEN(counts); ci++)
    for (size_t pi = 0; pi < CORE_ARRAY_LEN(pieces); pi++)
      for (int ip = 0; ip <= 1; ip++) {
        coll_args a = {.kind = COLL_ALLREDUCE,
                       .size = 2,
                       .count = counts[ci],
                       .inplace = ip,
                       .seg_count = pieces[pi]};
        if (coll_check(&a, COLL_ALGO_PAIR, why, sizeof why) != TERN_OK)
          fail_msg("count=%zu piece=%zu inplace=%d: %s", a.count, a.seg_count, ip, why);
      }
}

/* ---- broken by hand ---------------------------------------------------------------------- */

static coll_sched sch[4];

static int setup(void **state) {
  (void)state;
  for (int r = 0; r < 4; r++)
    coll_sched_init(&sch[r]);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int r = 0; r < 4; r++)
    coll_sched_free(&sch[r]);
  return 0;
}

static void reset_all(void) {
  for (int r = 0; r < 4; r++)
    coll_sched_reset(&sch[r]);
}

static void close_all(void) {
  for (int r = 0; r < 4; r++)
    coll_sched_end_phase(&sch[r]);
}

/* The checker rejects sch[0..n) for a with a complaint containing want. */
static void expect_rejected(const coll_args *a, const char *want) {
  char why[1024];
  close_all();
  tern_status st = coll_check_scheds(a, sch, why, sizeof why);
  if (st != TERN_ERR_INVALID_ARG || strstr(why, want) == NULL)
    fail_msg("expected a complaint with \"%s\", got status %d: \"%s\"", want, st, why);
}

static void expect_accepted(const coll_args *a) {
  char why[1024];
  close_all();
  if (coll_check_scheds(a, sch, why, sizeof why) != TERN_OK) fail_msg("rejected: %s", why);
}

/* Rank r of a 2-rank allreduce of c: exchange and reduce, the right way. */
static void pair_allreduce(int r, size_t c) {
  coll_sched_send(&sch[r], 1 - r, COLL_BUF_SEND, 0, c);
  coll_sched_recv_reduce(&sch[r], 1 - r, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, c);
  coll_sched_end_phase(&sch[r]);
}

static const coll_args pair = {.kind = COLL_ALLREDUCE, .size = 2, .count = 8};

static void hand_built_good_one_passes(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  expect_accepted(&pair);
}

static void catches_double_count(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  coll_sched_reduce(&sch[0], COLL_BUF_RECV, 2, COLL_BUF_SEND, 2, 3);
  expect_rejected(&pair, "counts the contribution of rank 0 twice (element 2)");
}

static void catches_missing_contribution(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 0, 8);
  coll_sched_recv(&sch[1], 0, COLL_BUF_RECV, 0, 8);
  expect_rejected(&pair, "rank 1: RECV[0] misses the contribution of rank 1");
}

static void catches_deadlock(void **state) {
  (void)state;
  reset_all();
  for (int r = 0; r < 2; r++) {
    coll_sched_recv_reduce(&sch[r], 1 - r, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
    coll_sched_end_phase(&sch[r]);
    coll_sched_send(&sch[r], 1 - r, COLL_BUF_SEND, 0, 8);
  }
  expect_rejected(&pair, "deadlock: rank 0 step 0 (phase 0: recv_reduce from 1");
}

static void catches_count_mismatch(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 0, 8);
  coll_sched_recv_reduce(&sch[1], 0, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 7);
  expect_rejected(&pair, "count mismatch");
}

static void catches_unmatched_message(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  coll_sched_send(&sch[0], 1, COLL_BUF_RECV, 0, 8);
  expect_rejected(&pair, "rank 0 sends 2 messages to rank 1, which receives 1 from it");
}

static void catches_race_in_phase(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(1, 8);
  coll_sched_send(&sch[0], 1, COLL_BUF_SEND, 0, 8);
  coll_sched_recv_reduce(&sch[0], 1, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  coll_sched_copy(&sch[0], COLL_BUF_RECV, 4, COLL_BUF_SEND, 4, 4);
  expect_rejected(&pair, "race in a phase: rank 0 step 1");
}

/* In place SEND is RECV: sending it while reducing into it is a race, though the buffers'
 * names differ (what rd.c's shifted stages avoid). */
static void catches_race_through_aliasing(void **state) {
  (void)state;
  coll_args a = pair;
  a.inplace = true;
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  expect_rejected(&a, "race in a phase: rank 0 step 0 (phase 0: send to 1 of SEND[0,+8))");
  a.inplace = false;
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  expect_accepted(&a);
}

static void catches_out_of_extent(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 1, 8);
  coll_sched_recv_reduce(&sch[1], 0, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  expect_rejected(&pair, "rank 1 step 0 (phase 0: send to 0 of SEND[1,+8)): outside the extents");
  /* TMP beyond tmp_count */
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  sch[1].tmp_count = 4;
  coll_sched_copy(&sch[1], COLL_BUF_TMP, 0, COLL_BUF_RECV, 0, 5);
  expect_rejected(&pair, "outside the extents (SEND 8, RECV 8, TMP 4)");
}

/* A non-root's RECV of reduce has extent 0: writing it, even as scratch, is caught. */
static void catches_nonroot_recv_touched(void **state) {
  (void)state;
  coll_args a = {.kind = COLL_REDUCE, .size = 2, .count = 8, .root = 0};
  reset_all();
  coll_sched_recv_reduce(&sch[0], 1, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  coll_sched_copy(&sch[1], COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  coll_sched_end_phase(&sch[1]);
  coll_sched_send(&sch[1], 0, COLL_BUF_RECV, 0, 8);
  expect_rejected(&a, "rank 1 step 0 (phase 0: copy into RECV[0,+8) with SEND[0,+8)): outside");
  reset_all();
  coll_sched_recv_reduce(&sch[0], 1, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 0, 8);
  expect_accepted(&a);
}

/* Rank r of n gathers everyone's vector into TMP slots, then reduces in the order given. */
static void gather_then_reduce(int r, int n, size_t c, const int *order) {
  coll_sched *s = &sch[r];
  s->tmp_count = (size_t)n * c;
  for (int q = 0; q < n; q++)
    if (q != r) {
      coll_sched_send(s, q, COLL_BUF_SEND, 0, c);
      coll_sched_recv(s, q, COLL_BUF_TMP, (size_t)q * c, c);
    }
  coll_sched_copy(s, COLL_BUF_TMP, (size_t)r * c, COLL_BUF_SEND, 0, c);
  coll_sched_end_phase(s);
  coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)order[0] * c, c);
  coll_sched_end_phase(s);
  for (int k = 1; k < n; k++) {
    coll_sched_reduce(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)order[k] * c, c);
    coll_sched_end_phase(s);
  }
}

/* (x0 x1) x2 on ranks 0 and 2 but (x1 x2) x0 on rank 1: every rank holds the full sum, but
 * rounded differently. Swapping operands, (x1 x0) x2, is the same bits and must pass. */
static void catches_non_bit_identical(void **state) {
  (void)state;
  coll_args a = {.kind = COLL_ALLREDUCE, .size = 3, .count = 5};
  const int canonical[3] = {0, 1, 2}, swapped[3] = {1, 0, 2}, regrouped[3] = {1, 2, 0};
  reset_all();
  gather_then_reduce(0, 3, 5, canonical);
  gather_then_reduce(1, 3, 5, swapped);
  gather_then_reduce(2, 3, 5, canonical);
  expect_accepted(&a);
  reset_all();
  gather_then_reduce(0, 3, 5, canonical);
  gather_then_reduce(1, 3, 5, regrouped);
  gather_then_reduce(2, 3, 5, canonical);
  expect_rejected(&a, "allreduce is not bit-identical: ranks 0 and 1 reduce RECV[0]");
}

static void catches_writing_send(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 0, 8);
  coll_sched_recv_reduce(&sch[1], 0, COLL_BUF_SEND, 0, COLL_BUF_SEND, 0, 8);
  expect_rejected(&pair, "writes SEND, which is never written");
}

static void catches_reading_unwritten(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  sch[1].tmp_count = 8;
  coll_sched_send(&sch[1], 0, COLL_BUF_TMP, 0, 8);
  coll_sched_recv_reduce(&sch[1], 0, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 8);
  expect_rejected(&pair, "reads TMP[0], which was never written");
}

static void catches_wrong_element(void **state) {
  (void)state;
  coll_args a = {.kind = COLL_REDUCE_SCATTER, .size = 2, .count = 2};
  reset_all();
  coll_sched_send(&sch[0], 1, COLL_BUF_SEND, 2, 2);
  coll_sched_recv_reduce(&sch[0], 1, COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 2);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 2, 2); /* should be block 0 */
  coll_sched_recv_reduce(&sch[1], 0, COLL_BUF_RECV, 0, COLL_BUF_SEND, 2, 2);
  expect_rejected(&a, "rank 0 step 1 (phase 0: recv_reduce from 1 into RECV[0,+2) with "
                      "SEND[0,+2)) reduces element 0 with element 2");
  /* and a result copied from the wrong place */
  a.kind = COLL_ALLGATHER;
  a.count = 1;
  reset_all();
  for (int r = 0; r < 2; r++) {
    coll_sched_send(&sch[r], 1 - r, COLL_BUF_SEND, 0, 1);
    coll_sched_recv(&sch[r], 1 - r, COLL_BUF_RECV, (size_t)r, 1); /* own slot, not the peer's */
  }
  expect_rejected(&a, "rank 0: RECV[0] misses the contribution of rank 0");
  /* a contribution where it does not belong: rank 1 reduces its own block into rank 0's */
  reset_all();
  coll_sched_copy(&sch[0], COLL_BUF_RECV, 0, COLL_BUF_SEND, 0, 1);
  coll_sched_send(&sch[0], 1, COLL_BUF_SEND, 0, 1);
  coll_sched_recv(&sch[0], 1, COLL_BUF_RECV, 1, 1);
  coll_sched_copy(&sch[1], COLL_BUF_RECV, 1, COLL_BUF_SEND, 0, 1);
  coll_sched_send(&sch[1], 0, COLL_BUF_SEND, 0, 1);
  coll_sched_recv(&sch[1], 0, COLL_BUF_RECV, 0, 1);
  coll_sched_end_phase(&sch[1]);
  coll_sched_reduce(&sch[1], COLL_BUF_RECV, 0, COLL_BUF_RECV, 1, 1);
  expect_rejected(&a, "rank 1: RECV[0] holds the contribution of rank 1, which does not belong");
}

static void catches_early_barrier_exit(void **state) {
  (void)state;
  coll_args a = {.kind = COLL_BARRIER, .size = 3};
  reset_all();
  for (int r = 0; r < 3; r++) {
    coll_sched_send(&sch[r], (r + 1) % 3, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(&sch[r], (r + 2) % 3, COLL_BUF_RECV, 0, 0);
  }
  expect_rejected(&a, "rank 0 leaves the barrier before hearing from rank 1");
  /* a second round completes the ring barrier */
  for (int r = 0; r < 3; r++) {
    coll_sched_end_phase(&sch[r]);
    coll_sched_send(&sch[r], (r + 1) % 3, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(&sch[r], (r + 2) % 3, COLL_BUF_RECV, 0, 0);
  }
  expect_accepted(&a);
}

static void catches_malformed(void **state) {
  (void)state;
  reset_all();
  pair_allreduce(0, 8);
  coll_sched_send(&sch[1], 1, COLL_BUF_SEND, 0, 8);
  expect_rejected(&pair, "rank 1 step 0 (phase 0: send to 1 of SEND[0,+8)): no such peer");
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  sch[1].nphases = 3;
  expect_rejected(&pair, "rank 1: nphases is 3 but its steps close 1 phases");
  reset_all();
  pair_allreduce(0, 8);
  pair_allreduce(1, 8);
  sch[1].steps[1].last = 0;
  char why[256];
  assert_int_equal(coll_check_scheds(&pair, sch, why, sizeof why), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(why, "rank 1: its last phase is not closed"));
}

static void refuses_what_it_cannot_check(void **state) {
  (void)state;
  char why[256];
  coll_args a = {.kind = COLL_ALLREDUCE, .size = 65, .count = 4};
  assert_int_equal(coll_check(&a, COLL_ALGO_RING, why, sizeof why), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(why, "1 to 64 ranks"));
  a.size = 4;
  assert_int_equal(coll_check(&a, COLL_ALGO_BRUCK, why, sizeof why), TERN_ERR_UNSUPPORTED);
  assert_non_null(strstr(why, "coll_build(allreduce, bruck)"));
  a.kind = COLL_BROADCAST;
  a.root = 4;
  assert_int_equal(coll_check(&a, COLL_ALGO_TREE, why, sizeof why), TERN_ERR_INVALID_ARG);
}

/* ---- real schedules broken at random ----------------------------------------------------- */

enum { DROP_MESSAGE, PLAIN_RECEIVE, SHIFT_OFFSET, NUM_MUTATIONS };
static const char *const mutation_names[] = {"a message dropped", "recv_reduce made recv",
                                             "an offset moved by one"};

/* Breaks step i of s with mutation m; false when that step does not suit the mutation. */
static bool mutate(coll_sched *s, size_t i, int m) {
  coll_step *st = &s->steps[i];
  if (m == DROP_MESSAGE) {
    if (st->kind > COLL_STEP_RECV_REDUCE) return false;
    bool last = st->last;
    memmove(st, st + 1, (s->len - i - 1) * sizeof *st);
    s->len--;
    if (last && i > 0 && !s->steps[i - 1].last)
      s->steps[i - 1].last = 1;
    else if (last)
      s->nphases--;
    return true;
  }
  if (m == PLAIN_RECEIVE) {
    if (st->kind != COLL_STEP_RECV_REDUCE) return false;
    st->kind = COLL_STEP_RECV;
    return true;
  }
  if (st->count == 0) return false;
  st->off++;
  return true;
}

static void catches_random_breakage(void **state) {
  (void)state;
  coll_sched *s = calloc(12, sizeof *s);
  assert_non_null(s);
  char why[1024];
  unsigned seed = 12345;
  long tried[NUM_MUTATIONS] = {0};
  for (int kind = 0; kind < COLL_NUM_KINDS; kind++)
    for (int algo = 1; algo < COLL_NUM_ALGOS; algo++) {
      if (!coll_algo_supported(kind, algo)) continue;
      for (int n = 2; n <= 12; n++)
        for (int ci = 0; ci < 3; ci++)
          for (int ip = 0; ip <= 1; ip++)
            for (int m = 0; m < NUM_MUTATIONS; m++)
              for (int trial = 0; trial < 4; trial++) {
                coll_args a = {.kind = kind,
                               .size = n,
                               .root = coll_kind_rooted(kind) ? n / 2 : 0,
                               .count = ci == 0   ? 1
                                        : ci == 1 ? (size_t)n + 1
                                                  : 1000,
                               .inplace = ip,
                               .ppn = n % 2 == 0 && n > 2 ? 2 : 0};
                if ((algo == COLL_ALGO_HIER && a.ppn == 0) || !coll_algo_fits(algo, &a)) continue;
                for (int r = 0; r < n; r++) {
                  coll_args ar = a;
                  ar.rank = r;
                  assert_int_equal(coll_build(&s[r], &ar, algo), TERN_OK);
                }
                int r = rand_r(&seed) % n;
                if (s[r].len == 0 || !mutate(&s[r], (size_t)rand_r(&seed) % s[r].len, m)) continue;
                tried[m]++;
                if (coll_check_scheds(&a, s, why, sizeof why) == TERN_OK)
                  fail_msg("%s in rank %d of %s %s n=%d count=%zu inplace=%d went unnoticed",
                           mutation_names[m], r, coll_kind_name(kind), coll_algo_name(algo), n,
                           a.count, ip);
              }
    }
  for (int m = 0; m < NUM_MUTATIONS; m++) {
    printf("%s: %ld broken schedules, all rejected\n", mutation_names[m], tried[m]);
    assert_true(tried[m] > 500);
  }
  for (int r = 0; r < 12; r++)
    coll_sched_free(&s[r]);
  free(s);
}

/* ---- alltoallv: counts per pair ---------------------------------------------------------- */

#define V_MAX 12
typedef struct v_matrix {
  size_t cnt[V_MAX][V_MAX]; /* cnt[i][j]: what rank i sends rank j */
  size_t sc[V_MAX][V_MAX], sd[V_MAX][V_MAX], rc[V_MAX][V_MAX], rd[V_MAX][V_MAX];
  coll_vcounts v[V_MAX];
} v_matrix;

/* Blocks of the given sizes laid out in a shuffled order with random gaps: displs[q]. */
static void v_layout(const size_t *sizes, int n, size_t *displs, unsigned *seed) {
  int order[V_MAX];
  for (int q = 0; q < n; q++)
    order[q] = q;
  for (int q = n - 1; q > 0; q--) {
    int k = rand_r(seed) % (q + 1), t = order[q];
    order[q] = order[k], order[k] = t;
  }
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    at += (size_t)(rand_r(seed) % 3 == 0 ? rand_r(seed) % 4 : 0);
    displs[order[i]] = at;
    at += sizes[order[i]];
  }
}

/* Each rank's counts from m->cnt, their blocks laid out at random (v_layout). */
static void v_lay(v_matrix *m, int n, unsigned *seed) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      m->sc[i][j] = m->cnt[i][j], m->rc[i][j] = m->cnt[j][i];
    v_layout(m->sc[i], n, m->sd[i], seed);
    v_layout(m->rc[i], n, m->rd[i], seed);
    m->v[i] = (coll_vcounts){m->sc[i], m->sd[i], m->rc[i], m->rd[i]};
  }
}

/* Counts of 0 (a third of the pairs, or all of them with zero), 1 or up to 9: uneven and empty
 * blocks. */
static void v_make(v_matrix *m, int n, bool zero, unsigned *seed) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int x = zero ? 0 : rand_r(seed) % 3;
      m->cnt[i][j] = x == 0 ? 0 : x == 1 ? 1 : (size_t)(rand_r(seed) % 9 + 1);
    }
  v_lay(m, n, seed);
}

/* Every alltoallv schedule, over random matrices with empty and uneven blocks laid out in any
 * order with gaps, in place and not, at n = 1..12: proved by the checker. */
static void alltoallv_any_counts_is_correct(void **state) {
  (void)state;
  static v_matrix m;
  char why[1024];
  unsigned seed = 7;
  long runs = 0;
  const coll_algo algos[] = {COLL_ALGO_DIRECT, COLL_ALGO_PAIRWISE};
  for (int n = 1; n <= V_MAX; n++)
    for (int trial = 0; trial < 20; trial++) {
      v_make(&m, n, trial == 0, &seed); /* trial 0: every count zero, empty messages only */
      for (size_t ai = 0; ai < CORE_ARRAY_LEN(algos); ai++)
        for (int ip = 0; ip <= 1; ip++) {
          coll_args a = {.kind = COLL_ALLTOALLV, .size = n, .inplace = ip, .v = m.v};
          runs++;
          if (coll_check(&a, algos[ai], why, sizeof why) == TERN_OK) continue;
          fail_msg("alltoallv %s n=%d trial=%d inplace=%d: %s", coll_algo_name(algos[ai]), n, trial,
                   ip, why);
        }
    }
  printf("checked %ld alltoallv matrices\n", runs);
}

/* Ranks that disagree on a count between them do not pair their messages: the checker says so,
 * as the transports' header check does at run time. An empty block still sends its message, so
 * a zero against a non-zero is a mismatch too, not a receive that waits forever. */
static void alltoallv_disagreeing_counts_are_caught(void **state) {
  (void)state;
  static v_matrix m;
  char why[1024];
  unsigned seed = 11;
  const coll_algo algos[] = {COLL_ALGO_DIRECT, COLL_ALGO_PAIRWISE};
  for (size_t ai = 0; ai < CORE_ARRAY_LEN(algos); ai++)
    for (int zero = 0; zero <= 1; zero++) {
      v_make(&m, 4, false, &seed);
      m.cnt[2][1] = 4;
      v_lay(&m, 4, &seed);
      m.sc[2][1] = zero ? 0 : 3; /* rank 2 sends rank 1 less than 1 wants: the blocks still fit */
      coll_args a = {.kind = COLL_ALLTOALLV, .size = 4, .v = m.v};
      assert_int_equal(coll_check(&a, algos[ai], why, sizeof why), TERN_ERR_INVALID_ARG);
      assert_non_null(strstr(why, "count mismatch"));
    }
}

/* A schedule that puts a block one element off, or drops the copy of its own block, is caught. */
static void alltoallv_wrong_block_is_caught(void **state) {
  (void)state;
  static v_matrix m;
  char why[1024];
  unsigned seed = 5;
  coll_sched s[3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      m.cnt[i][j] = 2; /* every block non-empty */
  v_lay(&m, 3, &seed);
  coll_args a = {.kind = COLL_ALLTOALLV, .size = 3, .v = m.v};
  for (int bug = 0; bug < 2; bug++) {
    for (int r = 0; r < 3; r++) {
      coll_sched_init(&s[r]);
      coll_args ar = a;
      ar.rank = r, ar.v = &m.v[r];
      assert_int_equal(coll_build(&s[r], &ar, COLL_ALGO_DIRECT), TERN_OK);
    }
    assert_int_equal(coll_check_scheds(&a, s, why, sizeof why), TERN_OK);
    coll_step *st = &s[1].steps[bug == 0 ? 2 : 0]; /* a receive; the own block's copy */
    assert_int_equal(st->kind, bug == 0 ? COLL_STEP_RECV : COLL_STEP_COPY);
    if (bug == 0)
      st->off = st->off ? st->off - 1 : st->off + 1;
    else
      st->src_off = st->src_off ? st->src_off - 1 : st->src_off + 1;
    assert_int_equal(coll_check_scheds(&a, s, why, sizeof why), TERN_ERR_INVALID_ARG);
    for (int r = 0; r < 3; r++)
      coll_sched_free(&s[r]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_schedule_is_correct),
      cmocka_unit_test(pipelines_take_any_segment),
      cmocka_unit_test(pair_allreduce_in_pieces_is_correct),
      cmocka_unit_test(hier_schedules_are_correct),
      cmocka_unit_test(hier_any_placement_is_correct),
      cmocka_unit_test(hosts_view_orders_ranks_by_host),
      cmocka_unit_test(dealt_trees_are_correct),
      cmocka_unit_test(catches_wrong_block_inside_one_run),
      cmocka_unit_test_setup_teardown(hand_built_good_one_passes, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_double_count, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_missing_contribution, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_deadlock, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_count_mismatch, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_unmatched_message, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_race_in_phase, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_race_through_aliasing, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_out_of_extent, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_nonroot_recv_touched, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_non_bit_identical, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_writing_send, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_reading_unwritten, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_wrong_element, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_early_barrier_exit, setup, teardown),
      cmocka_unit_test_setup_teardown(catches_malformed, setup, teardown),
      cmocka_unit_test(refuses_what_it_cannot_check),
      cmocka_unit_test(catches_random_breakage),
      cmocka_unit_test(alltoallv_any_counts_is_correct),
      cmocka_unit_test(alltoallv_disagreeing_counts_are_caught),
      cmocka_unit_test(alltoallv_wrong_block_is_caught),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_tuning.c: the tuning file (good ones parse, every kind of bad one is refused with its
 * line), the tuned choice on one host and across hosts, "use builtin", and the fit (it recovers
 * known constants from exact times). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/tuning.h"

#include <math.h>
#include <string.h>

/* At n = 2, rd is 8x faster than ring at 8 B and ring 4x faster at 1 MiB: on log scales their
 * lines cross near 2^(3 + 17 x 3/5) B, about 9 KiB. */
static const char good[] = "tern-tuning 2\n"
                           "# a comment\n"
                           "use table\n"
                           "model shm 2 3e-07 1e-10 5e-11 1e-07\n"
                           "model tcp 4 5e-06 3e-10 1e-10 2e-06\n"
                           "time shm 2 allreduce 8 rd 1e-06\n"
                           "time shm 2 allreduce 8 ring 8e-06\n"
                           "time shm 2 allreduce 1048576 rd 0.0016\n"
                           "time shm 2 allreduce 1048576 ring 0.0004\n"
                           "time shm 4 allreduce 8 direct 2e-06\n"
                           "time tcp 4 allgather 65536 bruck 5e-05\n";

static void parses_and_selects(void **state) {
  (void)state;
  coll_tuning t;
  core_err err = {0};
  assert_int_equal(coll_tuning_parse(&t, good, strlen(good), "test", &err), TERN_OK);
  assert_true(t.use_table);
  assert_int_equal(t.nmodels, 2);
  assert_int_equal(t.ntimes, 6);
  /* below and above the measured sizes: the nearest measured time */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 1, 4), COLL_ALGO_RD);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 1 << 22, 4),
                   COLL_ALGO_RING);
  /* in between, the interpolated curves cross near 9 KiB: rd at 4 KiB (where the winner at the
   * nearest measured size, 1 MiB, would be ring), ring at 16 KiB */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 1024, 4), COLL_ALGO_RD);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 4096, 4), COLL_ALGO_RING);
  /* only the rank counts measured: another is the built-in model's (AUTO) */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 4, 2, 4), COLL_ALGO_DIRECT);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 5, 2, 4), COLL_ALGO_AUTO);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_TCP, COLL_ALLGATHER, 4, 100, 4), COLL_ALGO_BRUCK);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_TCP, COLL_ALLGATHER, 3, 100, 4), COLL_ALGO_AUTO);
  /* nothing for this collective or transport: the caller falls back */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_TCP, COLL_BROADCAST, 4, 100, 4), COLL_ALGO_AUTO);
  t.use_table = false; /* the fitted constants drive the closed forms */
  coll_net_model m = {3e-07, 1e-10, 5e-11, 1e-07};
  m.one_host = m.reduce_in_place = true; /* shared memory's, as tern tune prices its terms */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 1 << 20, 4),
                   coll_select(COLL_ALLREDUCE, 2, 1 << 20, 4, &m));
  coll_tuning_free(&t);
}

/* Rows measured across hosts (2 hosts x 4 ranks): direct fastest at 1 MiB, where neither the
 * phases nor the learned weights would pick it, and hier by rhd at 4 KiB. */
static const char hosts_file[] = "tern-tuning 2\n"
                                 "use table\n"
                                 "time shm 2 allreduce 8 rd 1e-06\n"
                                 "time tcp 2x4 allreduce 4096 hier:rhd 1e-05\n"
                                 "time tcp 2x4 allreduce 4096 hier:ring 2e-05\n"
                                 "time tcp 2x4 allreduce 4096 direct 4e-05\n"
                                 "time tcp 2x4 allreduce 1048576 hier:rhd 0.004\n"
                                 "time tcp 2x4 allreduce 1048576 hier:ring 0.003\n"
                                 "time tcp 2x4 allreduce 1048576 direct 0.001\n"
                                 "model tcp 2x4 5e-05 1e-08 1e-10 1e-06\n";

static const char *chosen_by; /* what chose in the last choose_across, as the log names it */

static coll_algo choose_across(const coll_args *a, const coll_tuning *t, coll_algo *inner) {
  coll_site w = {.tr = COLL_TR_TCP, .across_hosts = true};
  return coll_choose(a, 4, &w, t, inner, &chosen_by);
}

/* Once ranks span hosts, the file's rows measured across hosts choose, at the placement they
 * were measured at, whatever the numbering; elsewhere the runtime's own choice stands. */
static void applies_across_hosts(void **state) {
  (void)state;
  coll_tuning t;
  core_err err = {0};
  assert_int_equal(coll_tuning_parse(&t, hosts_file, strlen(hosts_file), "test", &err), TERN_OK);
  assert_int_equal(t.ntimes, 7);
  assert_int_equal(t.times[1].hosts, 2);
  assert_int_equal(t.times[1].n, 8);
  coll_algo inner, untuned_inner;
  coll_args a = {.kind = COLL_ALLREDUCE, .size = 8, .ppn = 4, .count = 1u << 18};
  assert_int_equal(choose_across(&a, &t, &inner), COLL_ALGO_DIRECT);
  assert_string_equal(chosen_by, "tuning file");
  assert_int_not_equal(choose_across(&a, NULL, &untuned_inner), COLL_ALGO_DIRECT);
  assert_string_equal(chosen_by, "phase model");
  a.count = 1024;
  assert_int_equal(choose_across(&a, &t, &inner), COLL_ALGO_HIER);
  assert_int_equal(inner, COLL_ALGO_RHD);
  /* the same hosts, ranks dealt round-robin */
  int rr[8] = {0, 1, 0, 1, 0, 1, 0, 1};
  coll_hosts *h = NULL;
  assert_int_equal(coll_hosts_make(8, rr, &h), TERN_OK);
  coll_args b = {.kind = COLL_ALLREDUCE, .size = 8, .hosts = h, .count = 1u << 18};
  assert_int_equal(choose_across(&b, &t, &inner), COLL_ALGO_DIRECT);
  coll_hosts_free(h);
  /* 8 ranks on 2 hosts, but 6 + 2: not the 2x4 the rows measured, so untuned */
  int uneven[8] = {0, 0, 0, 0, 0, 0, 1, 1};
  assert_int_equal(coll_hosts_make(8, uneven, &h), TERN_OK);
  b.hosts = h;
  coll_algo want_uneven = choose_across(&b, NULL, &untuned_inner);
  assert_int_equal(choose_across(&b, &t, &inner), want_uneven);
  assert_string_not_equal(chosen_by, "tuning file");
  coll_hosts_free(h);
  /* 4 hosts x 4 ranks was not measured, nor a collective without rows: untuned */
  coll_args c = {.kind = COLL_ALLREDUCE, .size = 16, .ppn = 4, .count = 1u << 18};
  coll_algo want = choose_across(&c, NULL, &untuned_inner);
  assert_int_equal(choose_across(&c, &t, &inner), want);
  assert_int_equal(inner, untuned_inner);
  assert_string_equal(chosen_by, "phase model");
  c = (coll_args){.kind = COLL_ALLGATHER, .size = 8, .ppn = 4, .count = 1u << 18};
  want = choose_across(&c, NULL, &untuned_inner);
  assert_int_equal(choose_across(&c, &t, &inner), want);
  /* the rows across hosts are not one host's: 8 ranks on one host stay untuned */
  assert_int_equal(coll_tuning_select(&t, COLL_TR_TCP, COLL_ALLREDUCE, 8, 1u << 18, 4),
                   COLL_ALGO_AUTO);
  /* the model: the phases priced on the inter-host constants fitted there */
  t.use_table = false;
  coll_net_model inter = {5e-05, 1e-08, 1e-10, 1e-06};
  a.count = 1u << 18;
  coll_algo want_inner, want_algo = coll_select_hosts(&a, 4, &coll_model_shm, &inter, &want_inner);
  assert_int_equal(coll_tuning_select_hosts(&t, &a, 4, &coll_model_shm, &inner), want_algo);
  assert_int_equal(inner, want_inner);
  coll_tuning_free(&t);
}

/* "use builtin": tern tune found no learned predictor better; nothing is tuned. */
static void use_builtin_tunes_nothing(void **state) {
  (void)state;
  static const char text[] = "tern-tuning 2\nuse builtin\ntime shm 2 allreduce 8 ring 1e-06\n";
  coll_tuning t;
  core_err err = {0};
  assert_int_equal(coll_tuning_parse(&t, text, strlen(text), "test", &err), TERN_OK);
  assert_true(t.use_builtin);
  assert_int_equal(coll_tuning_select(&t, COLL_TR_SHM, COLL_ALLREDUCE, 2, 2, 4), COLL_ALGO_AUTO);
  coll_args a = {.kind = COLL_ALLREDUCE, .size = 8, .ppn = 4, .count = 2};
  coll_algo inner;
  assert_int_equal(coll_tuning_select_hosts(&t, &a, 4, &coll_model_shm, &inner), COLL_ALGO_AUTO);
  coll_tuning_free(&t);
  static const char bare[] = "tern-tuning 2\nuse builtin\n";
  assert_int_equal(coll_tuning_parse(&t, bare, strlen(bare), "test", &err), TERN_OK);
  coll_tuning_free(&t);
}

static void refuses_bad_files(void **state) {
  (void)state;
  const struct {
    const char *text, *needle;
  } bad[] = {
      {"", "not a tern tuning file"},
      {"hello\n", "not a tern tuning file"},
      {"tern-tuning 1\nuse model\n", "version 1"},
      {"tern-tuning 2\nmodel shm 2 1 1 1 1\n", "no 'use model'"},
      {"tern-tuning 2\nuse table\nmodel shm 2 1 1 1 1\n", "no such lines"},
      {"tern-tuning 2\nuse model\nmodel ib 2 1 1 1 1\n", "line 3"},
      {"tern-tuning 2\nuse model\nmodel shm 2 -1 1 1 1\n", "line 3"},
      {"tern-tuning 2\nuse model\nmodel shm 2 nan 1 1 1\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime shm 2 allreduce 8 pairwise 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime shm 2 allreduce 8 rd 1e-6 extra\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime shm 0 allreduce 8 rd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime shm 2 allreduce 8 rd 0\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime shm 2 allreduce 8 rd inf\n", "line 3"},
      {"tern-tuning 2\nuse table\nbest shm 2 allreduce 8 rd\n", "line 3"},
      {"tern-tuning 2\nuse sometimes\n", "line 2"},
      {"tern-tuning 2\nuse table\ntime tcp 1x4 allreduce 8 rd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime tcp 2x0 allreduce 8 rd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime tcp 2x4x2 allreduce 8 rd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime tcp 4 allreduce 8 hier:rhd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime tcp 2x4 allreduce 8 hier:tree 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse table\ntime tcp 2x4 allreduce 8 ring:rhd 1e-6\n", "line 3"},
      {"tern-tuning 2\nuse model\nmodel tcp 2y4 1 1 1 1\n", "line 3"},
  };
  for (size_t i = 0; i < CORE_ARRAY_LEN(bad); i++) {
    coll_tuning t;
    core_err err = {0};
    assert_int_equal(coll_tuning_parse(&t, bad[i].text, strlen(bad[i].text), "f", &err),
                     TERN_ERR_INVALID_ARG);
    if (strstr(err.msg, bad[i].needle) == NULL)
      fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, bad[i].needle);
    assert_null(t.models);
  }
  /* a NUL inside is not text */
  coll_tuning t;
  const char nul[] = "tern-tuning 2\nuse model\0model shm 2 1 1 1 1\n";
  assert_int_equal(coll_tuning_parse(&t, nul, sizeof nul - 1, "f", NULL), TERN_ERR_INVALID_ARG);
}

/* Times made exactly by a known model come back as that model. */
static void fit_recovers_constants(void **state) {
  (void)state;
  coll_net_model truth = {.alpha = 2e-6, .beta = 4e-10, .gamma = 1e-10, .o = 5e-7};
  coll_sched scratch;
  coll_sched_init(&scratch);
  coll_cost_terms terms[64];
  double secs[64];
  size_t k = 0;
  const coll_algo algos[] = {COLL_ALGO_RING, COLL_ALGO_RHD, COLL_ALGO_DIRECT, COLL_ALGO_TREE};
  for (size_t a = 0; a < CORE_ARRAY_LEN(algos); a++)
    for (size_t count = 2; count <= (1u << 20) && k < 64; count *= 16) {
      assert_int_equal(
          coll_cost_terms_of(COLL_ALLREDUCE, algos[a], 6, count, 4, &truth, &scratch, &terms[k]),
          TERN_OK);
      secs[k] = truth.alpha * terms[k].a + truth.o * terms[k].b + truth.beta * terms[k].c +
                truth.gamma * terms[k].d;
      k++;
    }
  coll_net_model got = coll_fit_model(terms, secs, k);
  assert_true(fabs(got.alpha / truth.alpha - 1) < 1e-6);
  assert_true(fabs(got.beta / truth.beta - 1) < 1e-6);
  assert_true(fabs(got.gamma / truth.gamma - 1) < 1e-6);
  assert_true(fabs(got.o / truth.o - 1) < 1e-6);
  /* noisy times still give non-negative constants */
  for (size_t i = 0; i < k; i++)
    secs[i] *= i % 2 ? 1.3 : 0.7;
  got = coll_fit_model(terms, secs, k);
  assert_true(got.alpha >= 0 && got.beta >= 0 && got.gamma >= 0 && got.o >= 0);
  coll_sched_free(&scratch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parses_and_selects),        cmocka_unit_test(applies_across_hosts),
      cmocka_unit_test(use_builtin_tunes_nothing), cmocka_unit_test(refuses_bad_files),
      cmocka_unit_test(fit_recovers_constants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

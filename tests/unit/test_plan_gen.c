/* test_plan_gen.c: the scenario generator. Variants scale what they say and nothing else, keep
 * the base's jobs first and draw the rest from it; a seed gives the same file every time and
 * another seed another one; random scenarios stay inside the fixtures' ranges; a variant that
 * makes a job impossible is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static plan_scenario base;

static int setup(void **state) {
  (void)state;
  return plan_scenario_load(TERN_SOURCE_DIR "/data/scenarios/geo-six-regions.json", &base, NULL) ==
                 TERN_OK
             ? 0
             : -1;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&base);
  return 0;
}

/* The scenario as the JSON text plan_scenario_write makes, into *buf (freed by the caller). */
static char *written(const plan_scenario *s, char **buf) {
  size_t len = 0;
  FILE *f = open_memstream(buf, &len);
  assert_int_equal(plan_scenario_write(s, f, NULL), TERN_OK);
  fclose(f);
  return *buf;
}

static void scales(void **state) {
  (void)state;
  plan_scenario v;
  plan_variant var = {0.3, 0.5, 8, 1};
  assert_int_equal(plan_gen_variant(&base, &var, &v, NULL), TERN_OK);
  int ohio = plan_region_find(&v.c, "Ohio"), sing = plan_region_find(&v.c, "Singapore");
  assert_int_equal(v.c.regions[ohio].gpus, 64);
  assert_int_equal(v.c.regions[sing].gpus, 8);
  size_t n = (size_t)v.c.nregions;
  for (size_t i = 0; i < n * n; i++) {
    assert_true(fabs(v.c.links[i].Bps - 0.3 * base.c.links[i].Bps) < 1e-6);
    assert_true(v.c.links[i].latency_s == base.c.links[i].latency_s);
  }
  for (size_t r = 0; r < n; r++) {
    assert_true(v.c.regions[r].intra_Bps == base.c.regions[r].intra_Bps);
    assert_true(v.c.regions[r].price[0] == base.c.regions[r].price[0]);
  }
  assert_int_equal(memcmp(v.jobs, base.jobs, 8 * sizeof *v.jobs), 0);
  plan_scenario_free(&v);
}

static void more_jobs(void **state) {
  (void)state;
  plan_scenario v;
  plan_variant var = {1, 1, 24, 7};
  assert_int_equal(plan_gen_variant(&base, &var, &v, NULL), TERN_OK);
  assert_int_equal(v.njobs, 24);
  assert_int_equal(memcmp(v.jobs, base.jobs, 8 * sizeof *v.jobs), 0);
  for (int i = 8; i < 24; i++) {
    const plan_job *j = &v.jobs[i];
    assert_true(j->arrival_s >= v.jobs[i - 1].arrival_s);
    bool shape = false, tokens = false;
    for (int b = 0; b < 8; b++) {
      shape |= base.jobs[b].params == j->params && base.jobs[b].layers == j->layers &&
               base.jobs[b].hidden == j->hidden && strncmp(base.jobs[b].name, j->name, 8) == 0;
      tokens |= base.jobs[b].tokens == j->tokens;
    }
    assert_true(shape && tokens);
    char suffix[16];
    snprintf(suffix, sizeof suffix, "-v%d", i);
    assert_non_null(strstr(j->name, suffix));
  }
  plan_scenario_free(&v);
}

static void seeded(void **state) {
  (void)state;
  plan_scenario a, b, c;
  plan_variant v1 = {1, 1, 16, 5}, v2 = {1, 1, 16, 6};
  assert_int_equal(plan_gen_variant(&base, &v1, &a, NULL), TERN_OK);
  assert_int_equal(plan_gen_variant(&base, &v1, &b, NULL), TERN_OK);
  assert_int_equal(plan_gen_variant(&base, &v2, &c, NULL), TERN_OK);
  char *ta, *tb, *tc;
  written(&a, &ta), written(&b, &tb), written(&c, &tc);
  assert_string_equal(ta, tb);
  assert_true(strcmp(strstr(ta, "\"jobs\""), strstr(tc, "\"jobs\"")) != 0);
  free(ta);
  free(tb);
  free(tc);
  plan_scenario_free(&a);
  plan_scenario_free(&b);
  plan_scenario_free(&c);
}

static void random_ranges(void **state) {
  (void)state;
  plan_scenario s;
  assert_int_equal(plan_gen_random(50, 300, 3, &s, NULL), TERN_OK);
  assert_int_equal(s.c.nregions, 50);
  for (int r = 0; r < 50; r++) {
    const plan_region *g = &s.c.regions[r];
    assert_true(g->gpus >= 16 && g->gpus <= 128);
    assert_true(g->price[0] >= 0.156 && g->price[0] <= 0.295);
    for (int k = 0; k < 50; k++) {
      const plan_link *l = plan_link_at(&s.c, r, k);
      if (k == r) continue;
      assert_true(l->Bps >= 0.3e9 / 8 && l->Bps <= 1.2e9 / 8);
      assert_true(l->latency_s >= 0.010 && l->latency_s <= 0.270);
      assert_true(l->Bps == plan_link_at(&s.c, k, r)->Bps);
    }
  }
  for (int i = 1; i < s.njobs; i++)
    assert_true(s.jobs[i].arrival_s >= s.jobs[i - 1].arrival_s);
  assert_int_equal(plan_scenario_check(&s, NULL, NULL), TERN_OK);
  plan_scenario_free(&s);
}

static void on_links(void **state) {
  (void)state;
  plan_cluster links;
  plan_scenario s;
  assert_int_equal(
      plan_links_load(TERN_SOURCE_DIR "/data/scenarios/aws-10-regions.json", &links, NULL),
      TERN_OK);
  assert_int_equal(links.nregions, 10);
  int ore = plan_region_find(&links, "Oregon"), vir = plan_region_find(&links, "Virginia");
  assert_true(fabs(plan_link_at(&links, ore, vir)->Bps - 0.79e9 / 8) < 1e-3);
  assert_int_equal(plan_gen_on_links(&links, 12, 2, &s, NULL), TERN_OK);
  assert_string_equal(s.c.regions[ore].name, "Oregon");
  assert_true(plan_link_at(&s.c, vir, ore)->latency_s == 0.067);
  assert_true(s.c.regions[ore].gpus >= 16);
  plan_scenario_free(&s);
  plan_cluster_free(&links);
}

static void refused(void **state) {
  (void)state;
  plan_scenario v;
  core_err err = {0};
  plan_variant none = {1, 0, 8, 1}, tiny = {1, 0.01, 8, 1};
  assert_int_equal(plan_gen_variant(&base, &none, &v, &err), TERN_ERR_INVALID_ARG);
  core_err_clear(&err);
  /* one GPU a region, six in all: flm-101b needs 40 */
  assert_int_equal(plan_gen_variant(&base, &tiny, &v, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "fits nowhere"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(scales),        cmocka_unit_test(more_jobs), cmocka_unit_test(seeded),
      cmocka_unit_test(random_ranges), cmocka_unit_test(on_links),  cmocka_unit_test(refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

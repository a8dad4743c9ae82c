/* test_select_grid.c: the selector's choices (coll_choose) over a grid of (collective, size, ranks,
 * transport, hosts) against the table committed beside this file (select_grid.txt): on one host
 * under each built-in profile, across hosts under the built-in profile (the site as exec.c builds
 * it: the learned weights scaled to it where the placement is theirs) and the simulated cluster's
 * of docs/SCALE.md (by its phases and by the weights learned for it), and under
 * bench/peers/results/tuning (`tern tune`'s kept rows, as a table and as a fitted model). A change
 * of the selector or of a cost shows here as the cells it moves; when a move is meant (shown faster
 * in docs/perf/select.md), rewrite the table with TERN_SELECT_GRID_WRITE=tests/unit/select_grid.txt
 * build/tests/test_select_grid and commit it with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/select_learned.h"
#include "coll/tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE TERN_SOURCE_DIR "/tests/unit/select_grid.txt"
#define TUNING TERN_SOURCE_DIR "/bench/peers/results/tuning"

static const size_t counts[] = {0,      1,        2,        3,         16,       64,
                                256,    1024,     2048,     4096,      16384,    65536,
                                262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
static const int one_host_ranks[] = {2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 64};

static void pick_name(char *out, size_t len, coll_algo algo, coll_algo inner) {
  if (algo == COLL_ALGO_HIER)
    snprintf(out, len, "hier:%s", coll_algo_name(inner));
  else
    snprintf(out, len, "%s", coll_algo_name(algo));
}

/* Where the grid's cells run: the placement (kind and count filled in per cell), the site, and
 * the tuning file (NULL: none). */
typedef struct where {
  coll_args place;
  coll_site w;
  const coll_tuning *tuned;
} where;

/* One line: the selector's picks at every count of the grid. */
static void row(FILE *f, const char *label, coll_kind kind, const where *x) {
  fprintf(f, "%s %s:", label, coll_kind_name(kind));
  for (size_t i = 0; i < CORE_ARRAY_LEN(counts); i++) {
    coll_args a = x->place;
    a.kind = kind, a.count = counts[i];
    coll_algo inner, algo = coll_choose(&a, sizeof(float), &x->w, x->tuned, &inner, NULL);
    char name[32];
    pick_name(name, sizeof name, algo, inner);
    fprintf(f, " %s", name);
  }
  fprintf(f, "\n");
}

/* ---- one host: each transport, crowded or not ---------------------------------------------- */

static void one_host(FILE *f) {
  static const struct {
    const char *name;
    bool tcp, one_host, crowded;
    int cpus;
  } profiles[] = {{"shm", false, true, false, 0},
                  {"shm-crowded2", false, true, true, 2},
                  {"tcp", true, false, false, 0},
                  {"tcp-loopback", true, true, false, 0},
                  {"tcp-loopback-crowded2", true, true, true, 2}};
  for (size_t p = 0; p < CORE_ARRAY_LEN(profiles); p++)
    for (size_t i = 0; i < CORE_ARRAY_LEN(one_host_ranks); i++)
      for (int k = 0; k < COLL_NUM_KINDS; k++) {
        where x = {.place = {.size = one_host_ranks[i]},
                   .w = {.tr = profiles[p].tcp ? COLL_TR_TCP : COLL_TR_SHM,
                         .one_host = profiles[p].one_host,
                         .crowded = profiles[p].crowded,
                         .cpus = profiles[p].cpus}};
        char label[64];
        snprintf(label, sizeof label, "%s n=%d", profiles[p].name, one_host_ranks[i]);
        row(f, label, (coll_kind)k, &x);
      }
}

/* ---- across hosts: contiguous, round-robin and uneven placements -------------------------- */

static void across_hosts(FILE *f) {
  static const struct {
    int n, ppn;
  } blocks[] = {{4, 2}, {6, 2}, {6, 3}, {8, 2}, {8, 4}, {12, 4}, {16, 8}};
  static const int round_robin6[] = {0, 1, 2, 0, 1, 2}, uneven4[] = {0, 0, 0, 1},
                   uneven8[] = {0, 0, 0, 0, 1, 1, 2, 2};
  static const struct {
    const char *name;
    int n;
    const int *host_of;
  } placed[] = {
      {"round-robin6x3", 6, round_robin6}, {"uneven3+1", 4, uneven4}, {"uneven4+2+2", 8, uneven8}};
  /* the site as exec.c builds it: the learned weights where the placement is theirs */
  where x = {.w = {.tr = COLL_TR_TCP, .across_hosts = true, .learned = &coll_learned_cluster}};
  char label[64];
  for (size_t b = 0; b < CORE_ARRAY_LEN(blocks); b++)
    for (int k = 0; k < COLL_NUM_KINDS; k++) {
      x.place = (coll_args){.size = blocks[b].n, .ppn = blocks[b].ppn};
      snprintf(label, sizeof label, "hosts n=%d ppn=%d", blocks[b].n, blocks[b].ppn);
      row(f, label, (coll_kind)k, &x);
    }
  for (size_t p = 0; p < CORE_ARRAY_LEN(placed); p++) {
    coll_hosts *h = NULL;
    assert_int_equal(coll_hosts_make(placed[p].n, placed[p].host_of, &h), TERN_OK);
    for (int k = 0; k < COLL_NUM_KINDS; k++) {
      x.place = (coll_args){.size = placed[p].n, .hosts = h};
      snprintf(label, sizeof label, "hosts %s", placed[p].name);
      row(f, label, (coll_kind)k, &x);
    }
    coll_hosts_free(h);
  }
  /* the simulated cluster of docs/SCALE.md priced by its phases alone */
  x.w.intra = &coll_learned_cluster.intra, x.w.inter = &coll_learned_cluster.inter;
  x.w.learned = NULL;
  static const int cluster_ranks[] = {16, 64, 256};
  for (size_t i = 0; i < CORE_ARRAY_LEN(cluster_ranks); i++)
    for (int k = 0; k < COLL_NUM_KINDS; k++) {
      x.place = (coll_args){.size = cluster_ranks[i], .ppn = 8};
      snprintf(label, sizeof label, "cluster n=%d ppn=8", cluster_ranks[i]);
      row(f, label, (coll_kind)k, &x);
    }
}

/* ---- the learned selector on the simulated cluster ------------------------------------------ */

static void learned(FILE *f) {
  static const int ranks[] = {16, 64, 512, 4096};
  where x = {.w = {.tr = COLL_TR_TCP,
                   .across_hosts = true,
                   .intra = &coll_learned_cluster.intra,
                   .inter = &coll_learned_cluster.inter,
                   .learned = &coll_learned_cluster}};
  for (size_t i = 0; i < CORE_ARRAY_LEN(ranks); i++)
    for (int k = 0; k < COLL_NUM_KINDS; k++) {
      x.place = (coll_args){.size = ranks[i], .ppn = coll_learned_cluster.rph};
      char label[64];
      snprintf(label, sizeof label, "learned n=%d", ranks[i]);
      row(f, label, (coll_kind)k, &x);
    }
}

/* ---- the tuning file ------------------------------------------------------------------------ */

static void tuned(FILE *f) {
  coll_tuning t;
  char *text = NULL;
  size_t len = 0;
  core_err err = {0};
  assert_int_equal(coll_tuning_load(&t, TUNING, &text, &len, &err), TERN_OK);
  free(text);
  static const int ranks[] = {2, 3, 4, 6, 8};
  for (int use_table = 1; use_table >= 0; use_table--) {
    t.use_table = use_table;
    for (int tr = 0; tr < COLL_NUM_TR; tr++)
      for (size_t i = 0; i < CORE_ARRAY_LEN(ranks); i++)
        for (int k = 0; k < COLL_NUM_KINDS; k++) {
          where x = {.place = {.size = ranks[i]},
                     .w = {.tr = (coll_transport_kind)tr, .one_host = true},
                     .tuned = &t};
          char label[64];
          snprintf(label, sizeof label, "tuned-%s %s n=%d", use_table ? "table" : "model",
                   tr == COLL_TR_TCP ? "tcp" : "shm", ranks[i]);
          row(f, label, (coll_kind)k, &x);
        }
  }
  coll_tuning_free(&t);
}

static void grid(FILE *f) {
  fprintf(f, "# counts (f32 elements):");
  for (size_t i = 0; i < CORE_ARRAY_LEN(counts); i++)
    fprintf(f, " %zu", counts[i]);
  fprintf(f, "\n");
  one_host(f);
  across_hosts(f);
  learned(f);
  tuned(f);
}

/* The grid's picks are the committed table's, line by line (the first differences are named). */
static void picks_match_the_table(void **state) {
  (void)state;
  const char *write = getenv("TERN_SELECT_GRID_WRITE");
  if (write && write[0]) {
    FILE *f = fopen(write, "w");
    assert_non_null(f);
    grid(f);
    assert_int_equal(fclose(f), 0);
    return;
  }
  char *got = NULL;
  size_t got_len = 0;
  FILE *g = open_memstream(&got, &got_len);
  assert_non_null(g);
  grid(g);
  assert_int_equal(fclose(g), 0);
  FILE *want = fopen(TABLE, "r");
  assert_non_null(want);
  char line[4096];
  int lineno = 0, diffs = 0;
  char *save = NULL;
  char *next = strtok_r(got, "\n", &save);
  while (fgets(line, sizeof line, want)) {
    lineno++;
    line[strcspn(line, "\n")] = '\0';
    if (!next || strcmp(next, line) != 0) {
      if (++diffs <= 10)
        fprintf(stderr, "line %d:\n  want %s\n  got  %s\n", lineno, line, next ? next : "(none)");
    }
    if (next) next = strtok_r(NULL, "\n", &save);
  }
  fclose(want);
  if (next) diffs++, fprintf(stderr, "more lines than the table: %s\n", next);
  free(got);
  fprintf(stderr, "%d of %d lines differ from %s\n", diffs, lineno, TABLE);
  assert_int_equal(diffs, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(picks_match_the_table)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

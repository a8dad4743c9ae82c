/* test_plan_scenario.c: scenario files in and out. The fixture loads with its figures converted
 * once; every kind of bad file gets an error naming the file, the right line and what is wrong;
 * impossible scenarios are refused with a clear message; a written scenario reads back the
 * same; plan_json_line finds values where they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A valid scenario, one field per line, so that tests can break one line and know its number. */
static const char *good[] = {
    "{",                                                                                     /* 1 */
    " \"gpu_types\": {\"g\": {\"peak_tflops\": 100, \"power_w\": 300, \"memory_gb\": 48}},", /* 2 */
    " \"regions\": [",                                                                       /* 3 */
    "  {\"name\": \"A\", \"gpu\": \"g\", \"gpus\": 32,",                                     /* 4 */
    "   \"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 25},",                         /* 5 */
    "  {\"name\": \"B\", \"gpu\": \"g\", \"gpus\": 16,",                                     /* 6 */
    "   \"price_usd_per_kwh\": 0.1, \"intra_bandwidth_gbps\": 25}",                          /* 7 */
    " ],",                                                                                   /* 8 */
    " \"links\": [",                                                                         /* 9 */
    "  {\"a\": \"A\", \"b\": \"B\",",                                           /* 10 */
    "   \"latency_ms\": 20, \"bandwidth_gbps\": 1.5}",                          /* 11 */
    " ],",                                                                      /* 12 */
    " \"jobs\": [",                                                             /* 13 */
    "  {\"name\": \"j\", \"params_b\": 1.2, \"layers\": 12, \"hidden\": 1024,", /* 14 */
    "   \"seq_len\": 1024, \"microbatch_sequences\": 2, \"microbatches\": 8,",  /* 15 */
    "   \"tokens\": 1e9, \"arrival_s\": 0, \"dtype_bytes\": 2}",                /* 16 */
    " ]",                                                                       /* 17 */
    "}",                                                                        /* 18 */
};

/* The good file with line `line` (1-based) replaced by `with` (NULL: unchanged). */
static char *variant(int line, const char *with) {
  size_t cap = 8192, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  for (size_t i = 0; i < CORE_ARRAY_LEN(good); i++)
    n += (size_t)snprintf(text + n, cap - n, "%s\n", (int)i + 1 == line ? with : good[i]);
  return text;
}

/* Loading the variant fails with a message holding "test.json:LINE:" and `what`. */
static void refused(int line, const char *with, int at, const char *what) {
  char *text = variant(line, with), where[64];
  plan_scenario s;
  core_err err = {0};
  tern_status st = plan_scenario_parse("test.json", text, strlen(text), &s, &err);
  free(text);
  if (st == TERN_OK || !strstr(err.msg, what)) fprintf(stderr, "got: %s\n", err.msg);
  assert_int_equal(st, TERN_ERR_INVALID_ARG);
  snprintf(where, sizeof where, "test.json:%d:", at);
  if (strncmp(err.msg, where, strlen(where)) != 0) fprintf(stderr, "got: %s\n", err.msg);
  assert_true(strncmp(err.msg, where, strlen(where)) == 0);
  assert_non_null(strstr(err.msg, what));
}

static void good_file(void **state) {
  (void)state;
  char *text = variant(0, NULL);
  plan_scenario s;
  pt_load(text, &s);
  free(text);
  assert_int_equal(s.c.nregions, 2);
  assert_true(s.c.regions[1].intra_Bps == 25e9 / 8);
  assert_true(plan_link_at(&s.c, 1, 0)->Bps == 1.5e9 / 8);
  assert_true(plan_link_at(&s.c, 0, 1)->latency_s == 0.02);
  assert_true(s.c.types[0].memory_bytes == 48.0 * 1073741824);
  assert_true(s.jobs[0].params == 1.2e9);
  assert_true(s.c.mfu == 0.35 && s.c.pue == 1.2 && s.c.mem_fraction == 0.9); /* defaults */
  plan_scenario_free(&s);
}

static void syntax(void **state) {
  (void)state;
  /* jansson's own line and column */
  refused(11, "   \"latency_ms\": 20, \"bandwidth_gbps\": }", 11, "not valid JSON");
  refused(5, "   \"price_usd_per_kwh\": 0.2, \"price_usd_per_kwh\": 0.3},", 5, "not valid JSON");
}

static void bad_values(void **state) {
  (void)state;
  refused(11, "   \"latency_ms\": 20, \"bandwidth_gbps\": -1}", 11,
          "links[0].bandwidth_gbps: -1 is out of range: valid is 0.001 to 100000 Gbit/s");
  refused(11, "   \"latency_ms\": -3, \"bandwidth_gbps\": 1}", 11, "links[0].latency_ms: -3");
  refused(10, "  {\"a\": \"A\", \"b\": \"Tokio\",", 10, "links[0].b: unknown region \"Tokio\"");
  refused(10, "  {\"a\": \"A\", \"b\": \"A\",", 10, "to itself");
  refused(6, "  {\"name\": \"A\", \"gpu\": \"g\", \"gpus\": 16,", 6, "a second region named \"A\"");
  refused(4, "  {\"name\": \"A\", \"gpu\": \"h100\", \"gpus\": 32,", 4,
          "unknown GPU type \"h100\"");
  refused(4, "  {\"name\": \"A\", \"gpu\": \"g\", \"gpus\": 2.5,", 4,
          "regions[0].gpus: 2.5 is not a whole number");
  refused(6, "  {\"name\": \"B\", \"gpu\": \"g\", \"gpus\": \"many\",", 6,
          "regions[1].gpus: expected a number, got a string");
  refused(14, "  {\"name\": \"j\", \"params_b\": 1.2, \"layers\": 0, \"hidden\": 1024,", 14,
          "jobs[0].layers: 0 is out of range");
  refused(16, "   \"arrival_s\": 0, \"dtype_bytes\": 2}", 14, "jobs[0]: missing \"tokens\"");
  refused(3, " \"regions\": 7, \"x\": [", 3, "regions: expected an array, got a number");
  refused(4, "  {\"name\": \"A\", \"gpu\": \"g\", \"gpus\": 999999,", 3,
          "1000015 GPUs in all: at most 1000000 are supported");
  refused(2, " \"gpu\": {},", 1, "test.json:1: missing \"gpu_types\"");
  refused(4, "  \"A\", {\"name\": \"A\", \"gpu\": \"g\", \"gpus\": 32,", 3, "a links-only file");
}

/* Every number is held to a physical range, named with its field and its range, and nothing
 * it could drive (a time, a cost, a loop) is reached: each refusal is immediate. */
static void physical_limits(void **state) {
  (void)state;
  clock_t t0 = clock();
  refused(11, "   \"latency_ms\": 1e300, \"bandwidth_gbps\": 1}", 11,
          "links[0].latency_ms: 1e+300 is out of range: valid is 0 to 10000 ms");
  refused(11, "   \"latency_ms\": 20, \"bandwidth_gbps\": 1e-12}", 11,
          "links[0].bandwidth_gbps: 1e-12 is out of range: valid is 0.001 to 100000 Gbit/s");
  refused(5, "   \"price_usd_per_kwh\": 0.2, \"intra_bandwidth_gbps\": 1e-12},", 5,
          "regions[0].intra_bandwidth_gbps: 1e-12 is out of range");
  refused(5, "   \"price_usd_per_kwh\": 1e9, \"intra_bandwidth_gbps\": 25},", 5,
          "regions[0].price_usd_per_kwh: 1e+09 is out of range: valid is 0 to 100 USD/kWh");
  refused(2,
          " \"gpu_types\": {\"g\": {\"peak_tflops_bf16\": 1e-300, \"power_w\": 300, "
          "\"memory_gb\": 48}},",
          2,
          "gpu_types.g.peak_tflops_bf16: 1e-300 is out of range: valid is 0.01 to 100000 TFLOP/s");
  refused(2,
          " \"gpu_types\": {\"g\": {\"peak_tflops\": 100, \"power_w\": 1e30, \"memory_gb\": 48}},",
          2, "gpu_types.g.power_w: 1e+30 is out of range");
  refused(16, "   \"tokens\": 1e300, \"arrival_s\": 0, \"dtype_bytes\": 2}", 16,
          "jobs[0].tokens: 1e+300 is out of range: valid is 1 to 1e+15 tokens");
  refused(16, "   \"tokens\": 1e9, \"arrival_s\": 1e200, \"dtype_bytes\": 2}", 16,
          "jobs[0].arrival_s: 1e+200 is out of range");
  refused(18, ", \"assumptions\": {\"mfu\": 1e-300}}", 18,
          "assumptions.mfu: 1e-300 is out of range: valid is 0.001 to 1");
  /* Each number in range, together a run of centuries: refused by its time, not simulated. */
  refused(16, "   \"tokens\": 1e15, \"arrival_s\": 0, \"dtype_bytes\": 2}", 14, "years even alone");
  double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
  assert_true(cpu < 1.0);
}

static void impossible(void **state) {
  (void)state;
  /* 1.2e12 parameters: 16 bytes x 1e11 a layer fits in no 48 GB GPU */
  refused(14, "  {\"name\": \"j\", \"params_b\": 1200, \"layers\": 12, \"hidden\": 1024,", 14,
          "job 'j' fits nowhere");
  /* 1.2e10: 16e9 bytes a layer, 2 layers in 0.9 x 48 GiB: 6 GPUs; give the cluster 4 */
  char *text =
      variant(14, "  {\"name\": \"j\", \"params_b\": 12, \"layers\": 12, \"hidden\": 1024,");
  char *p = strstr(text, "\"gpus\": 32"), *q = strstr(text, "\"gpus\": 16");
  memcpy(p, "\"gpus\":  2", 10);
  memcpy(q, "\"gpus\":  2", 10);
  plan_scenario s;
  core_err err = {0};
  assert_int_equal(plan_scenario_parse("t.json", text, strlen(text), &s, &err),
                   TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "t.json:14: jobs[0]: job 'j' fits nowhere: it needs at least 6"));
  assert_non_null(strstr(err.msg, "the cluster has 4"));
  free(text);
}

static void missing_file(void **state) {
  (void)state;
  plan_scenario s;
  core_err err = {0};
  assert_int_equal(plan_scenario_load("/nonexistent/x.json", &s, &err), TERN_ERR_SYSTEM);
  assert_non_null(strstr(err.msg, "/nonexistent/x.json: cannot open"));
}

/* A directory and a FIFO are refused by what they are; opening the FIFO does not wait for a
 * writer. */
static void not_a_file(void **state) {
  (void)state;
  char dir[] = "/tmp/tern_plan_XXXXXX", fifo[64];
  assert_non_null(mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  plan_scenario s;
  core_err err = {0};
  assert_int_equal(plan_scenario_load(dir, &s, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "not a regular file (a directory)"));
  core_err_clear(&err);
  assert_int_equal(plan_scenario_load(fifo, &s, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "not a regular file (a FIFO)"));
  plan_cluster c = {0};
  core_err_clear(&err);
  assert_int_equal(plan_links_load(fifo, &c, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "(a FIFO)"));
  unlink(fifo);
  rmdir(dir);
}

static void round_trip(void **state) {
  (void)state;
  char *text = variant(0, NULL), *out = NULL;
  size_t len = 0;
  plan_scenario a, b;
  pt_load(text, &a);
  free(text);
  a.c.regions[0].price[5] = 0.5; /* an hourly price survives too */
  FILE *f = open_memstream(&out, &len);
  assert_int_equal(plan_scenario_write(&a, f, NULL), TERN_OK);
  fclose(f);
  pt_load(out, &b);
  assert_int_equal(b.njobs, a.njobs);
  assert_int_equal(b.c.nregions, a.c.nregions);
  assert_true(b.c.regions[0].price[5] == 0.5 && b.c.regions[0].price[4] == 0.2);
  assert_true(fabs(plan_link_at(&b.c, 0, 1)->Bps - plan_link_at(&a.c, 0, 1)->Bps) < 1e-3);
  assert_true(b.jobs[0].params == a.jobs[0].params && b.jobs[0].tokens == a.jobs[0].tokens);
  assert_true(b.c.mfu == a.c.mfu && b.c.types[0].memory_bytes == a.c.types[0].memory_bytes);
  free(out);
  plan_scenario_free(&a);
  plan_scenario_free(&b);
}

static void json_lines(void **state) {
  (void)state;
  char *text = variant(0, NULL);
  size_t n = strlen(text);
  assert_int_equal(plan_json_line(text, n, "regions[1].gpus"), 6);
  assert_int_equal(plan_json_line(text, n, "regions[1].intra_bandwidth_gbps"), 7);
  assert_int_equal(plan_json_line(text, n, "links[0].bandwidth_gbps"), 11);
  assert_int_equal(plan_json_line(text, n, "jobs[0].dtype_bytes"), 16);
  assert_int_equal(plan_json_line(text, n, "gpu_types.g.memory_gb"), 2);
  assert_int_equal(plan_json_line(text, n, "jobs[1]"), 0);
  assert_int_equal(plan_json_line(text, n, "nothing"), 0);
  const char *tricky = "{\"a\": \"x\\\"}\\n\",\n \"b\": [1, {\"c\": 2}],\n \"d\": 3}";
  assert_int_equal(plan_json_line(tricky, strlen(tricky), "d"), 3);
  assert_int_equal(plan_json_line(tricky, strlen(tricky), "b[1].c"), 2);
  assert_int_equal(plan_json_line(tricky, 10, "d"), 0); /* cut short: no line, no overrun */
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(good_file),       cmocka_unit_test(syntax),     cmocka_unit_test(bad_values),
      cmocka_unit_test(physical_limits), cmocka_unit_test(not_a_file), cmocka_unit_test(impossible),
      cmocka_unit_test(missing_file),    cmocka_unit_test(round_trip), cmocka_unit_test(json_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

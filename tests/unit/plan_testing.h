/* plan_testing.h: small scenarios written as JSON for the planner's and simulator's tests, so
 * each test reads as the cluster it runs on, and goes through the real loader. */
#ifndef TERN_TESTS_PLAN_TESTING_H
#define TERN_TESTS_PLAN_TESTING_H

#include "plan/plan.h"

#include <stdio.h>
#include <string.h>

/* A job of 1.2 B parameters, 12 layers, h 1024, s 1024, 2 sequences per micro-batch, 8
 * micro-batches; %s: its name, %g: its tokens, %g: its arrival. */
#define PT_JOB                                                                                     \
  "{\"name\": \"%s\", \"params_b\": 1.2, \"layers\": 12, \"hidden\": 1024, \"seq_len\": 1024, "    \
  "\"microbatch_sequences\": 2, \"microbatches\": 8, \"tokens\": %.17g, \"arrival_s\": %.17g, "    \
  "\"dtype_bytes\": 2}"

/* Two GPU types: slow (100 TFLOPS, 250 W, 8 GiB) and fast (200 TFLOPS, 500 W, 80 GiB). */
#define PT_TYPES                                                                                   \
  "\"gpu_types\": {\"slow\": {\"peak_tflops\": 100, \"power_w\": 250, \"memory_gb\": 8}, "         \
  "\"fast\": {\"peak_tflops\": 200, \"power_w\": 500, \"memory_gb\": 80}}"

#define PT_ASSUME "\"assumptions\": {\"mfu\": 0.5, \"pue\": 1.0, \"memory_usable_fraction\": 1.0}"

/* Parses text into s, failing the test with the loader's message if it does not load. */
static inline void pt_load(const char *text, plan_scenario *s) {
  core_err err = {0};
  tern_status st = plan_scenario_parse("test.json", text, strlen(text), s, &err);
  if (st != TERN_OK) fprintf(stderr, "pt_load: %s\n", err.msg);
  assert_int_equal(st, TERN_OK);
}

#endif

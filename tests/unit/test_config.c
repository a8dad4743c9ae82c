/* test_config.c: TERN_* parsing: good values land, bad ones are reported, not ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void defaults(void **state) {
  (void)state;
  unsetenv("TERN_TIMEOUT");
  unsetenv("TERN_DEBUG");
  unsetenv("TERN_KEY");
  unsetenv("TERN_KEY_FILE");
  unsetenv("TERN_TRANSPORT");
  core_config_reload();
  const core_config *c = core_config_get();
  assert_true(c->timeout_s == 300);
  assert_int_equal(c->log_level, CORE_LOG_WARN);
  assert_false(c->have_key);
  assert_int_equal(c->transport, CORE_TRANSPORT_AUTO);
  assert_false(c->unchecked_roots);
  assert_string_equal(c->config_error, "");
}

static void good_values(void **state) {
  (void)state;
  setenv("TERN_TIMEOUT", "2.5", 1);
  setenv("TERN_DEBUG", "trace", 1);
  setenv("TERN_TRANSPORT", "tcp", 1);
  setenv("TERN_KEY", "sesame", 1);
  setenv("TERN_CHECK_ROOTS", "0", 1);
  core_config_reload();
  const core_config *c = core_config_get();
  assert_true(c->unchecked_roots);
  unsetenv("TERN_CHECK_ROOTS");
  assert_true(c->timeout_s == 2.5);
  assert_int_equal(c->log_level, CORE_LOG_TRACE);
  assert_int_equal(c->transport, CORE_TRANSPORT_TCP);
  assert_true(c->have_key);
  uint8_t first[32];
  memcpy(first, c->key, 32);
  /* the same secret from a file (with a trailing newline) gives the same key */
  char path[] = "/tmp/tern-key-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "sesame\n", 7), 7);
  close(fd);
  unsetenv("TERN_KEY");
  setenv("TERN_KEY_FILE", path, 1);
  core_config_reload();
  assert_memory_equal(core_config_get()->key, first, 32);
  unlink(path);
  unsetenv("TERN_KEY_FILE");
  unsetenv("TERN_DEBUG");
}

static void bad_values_are_reported(void **state) {
  (void)state;
  const char *cases[][2] = {{"TERN_TIMEOUT", "soon"},   {"TERN_TIMEOUT", "-1"},
                            {"TERN_DEBUG", "LOUD"},     {"TERN_TRANSPORT", "ib"},
                            {"TERN_TCP_STREAMS", "0"},  {"TERN_KEY_FILE", "/nonexistent/key"},
                            {"TERN_CHECK_ROOTS", "yes"}};
  for (size_t i = 0; i < CORE_ARRAY_LEN(cases); i++) {
    setenv(cases[i][0], cases[i][1], 1);
    core_config_reload();
    const char *err = core_config_get()->config_error;
    if (strstr(err, cases[i][0]) == NULL)
      fail_msg("%s=%s not reported: '%s'", cases[i][0], cases[i][1], err);
    unsetenv(cases[i][0]);
  }
}

static void parsers(void **state) {
  (void)state;
  size_t s;
  assert_true(core_parse_size("64M", &s) && s == 64u << 20);
  assert_true(core_parse_size("8", &s) && s == 8);
  assert_true(core_parse_size("1KB", &s) && s == 1024);
  assert_false(core_parse_size("-1", &s));
  assert_false(core_parse_size("12Q", &s));
  assert_false(core_parse_size("", &s));
  long v;
  assert_true(core_parse_int("15", 1, 16, &v) && v == 15);
  assert_false(core_parse_int("17", 1, 16, &v));
  assert_false(core_parse_int("1x", 1, 16, &v));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults),
      cmocka_unit_test(good_values),
      cmocka_unit_test(bad_values_are_reported),
      cmocka_unit_test(parsers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

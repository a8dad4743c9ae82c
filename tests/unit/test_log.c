/* test_log.c: log lines go to stderr whole, carry time, rank, host and pid, and TERN_DEBUG
 * filters them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/core.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs fn with stderr redirected into buf. */
static void capture(void (*fn)(void), char *buf, size_t len) {
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  int saved = dup(STDERR_FILENO);
  dup2(pipefd[1], STDERR_FILENO);
  fn();
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(pipefd[1]);
  ssize_t n = read(pipefd[0], buf, len - 1);
  buf[n > 0 ? n : 0] = '\0';
  close(pipefd[0]);
}

static void say_things(void) {
  CORE_WARN("a warning %d", 1);
  CORE_INFO("some info %s", "here");
  CORE_DEBUG("a detail");
  CORE_TRACE("a step");
}

static void levels_and_fields(void **state) {
  (void)state;
  char buf[4096], host[64] = "";
  gethostname(host, sizeof host - 1);
  char want_pid[32];
  snprintf(want_pid, sizeof want_pid, "%s:%d ", host, (int)getpid());

  setenv("TERN_DEBUG", "INFO", 1);
  core_config_reload();
  core_log_set_rank(3);
  capture(say_things, buf, sizeof buf);
  assert_non_null(strstr(buf, "WARN a warning 1\n"));
  assert_non_null(strstr(buf, "INFO some info here\n"));
  assert_null(strstr(buf, "a detail"));
  assert_non_null(strstr(buf, " r3 "));
  assert_non_null(strstr(buf, want_pid));
  assert_true(strncmp(buf, "tern ", 5) == 0 && buf[7] == ':' && buf[10] == ':' && buf[13] == '.');

  setenv("TERN_DEBUG", "TRACE", 1);
  core_config_reload();
  capture(say_things, buf, sizeof buf);
  assert_non_null(strstr(buf, "DEBUG a detail\n"));
  assert_non_null(strstr(buf, "TRACE a step\n"));

  setenv("TERN_DEBUG", "NONE", 1);
  core_config_reload();
  capture(say_things, buf, sizeof buf);
  assert_string_equal(buf, "");

  unsetenv("TERN_DEBUG"); /* the default is WARN */
  core_config_reload();
  core_log_set_rank(-1);
  capture(say_things, buf, sizeof buf);
  assert_non_null(strstr(buf, "WARN a warning 1\n"));
  assert_null(strstr(buf, "INFO"));
  assert_non_null(strstr(buf, " r- "));
}

/* A line longer than the buffer is cut, still ends with a newline, and stays one write. */
static void long_line(void) {
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CORE_WARN("%s", big);
}

static void long_lines_are_cut(void **state) {
  (void)state;
  char buf[8192];
  capture(long_line, buf, sizeof buf);
  size_t n = strlen(buf);
  assert_true(n > 1000 && n < 2100);
  assert_int_equal(buf[n - 1], '\n');
  assert_ptr_equal(strchr(buf, '\n'), buf + n - 1); /* one line */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(levels_and_fields),
      cmocka_unit_test(long_lines_are_cut),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store_server.c: a live store against hostile clients. Each fault is really injected on a
 * socket (garbage bytes, a connection that says nothing, an absurd frame length, frames of the
 * wrong kind, a stalled frame, the wrong key, no key, a client that asks without ever reading),
 * then the test checks that the server closed that connection, logged a WARN naming the peer's
 * address and the fault, and still serves a real client. (label tsan: the server thread runs
 * beside the test's clients.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "comm/store.h"
#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const uint8_t run_id[16] = {9, 9};
static const uint8_t key1[32] = {42};
static const uint8_t key2[32] = {43};

/* ---- stderr, captured so the log lines can be checked ------------------------------------ */

static int saved_stderr = -1;
static char log_path[64];

static void capture_log(void) {
  strcpy(log_path, "/tmp/tern-test-log-XXXXXX");
  int fd = mkstemp(log_path);
  assert_true(fd >= 0);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
}

/* Ends the capture; returns what was logged (the caller frees it) and echoes it. */
static char *captured_log(void) {
  dup2(saved_stderr, 2);
  close(saved_stderr);
  FILE *f = fopen(log_path, "r");
  assert_non_null(f);
  char *text = calloc(1, 1 << 16);
  size_t n = fread(text, 1, (1 << 16) - 1, f);
  text[n] = '\0';
  fclose(f);
  unlink(log_path);
  fputs(text, stderr);
  return text;
}

/* ---- clients, real and raw --------------------------------------------------------------- */

static store_server *serve(int world, const uint8_t *key) {
  store_server *s;
  core_err err = {0};
  assert_int_equal(store_server_start(&s, "127.0.0.1", 0, world, run_id, key, &err), TERN_OK);
  return s;
}

/* A real client still gets its work done. */
static void still_serves(store_server *s, const uint8_t *key) {
  store_client *c;
  core_err err = {0};
  if (store_connect(&c, store_server_addr(s), -1, 0, key, core_deadline_after(5), &err) != TERN_OK)
    fail_msg("a real client could not connect after a fault: %s", err.msg);
  assert_int_equal(store_set(c, "alive", "yes", 3, &err), TERN_OK);
  void *v;
  size_t len;
  assert_int_equal(store_get(c, "alive", &v, &len, core_deadline_after(2), &err), TERN_OK);
  assert_true(len == 3 && memcmp(v, "yes", 3) == 0);
  free(v);
  assert_int_equal(store_check(c, NULL, &err), TERN_OK);
  store_close(c, true);
}

static int raw_connect(store_server *s) {
  char host[NET_HOST_LEN];
  int port, fd;
  assert_int_equal(net_parse_addr(store_server_addr(s), host, sizeof host, &port, false, NULL),
                   TERN_OK);
  assert_int_equal(net_connect(host, port, core_deadline_after(5), &fd, NULL), TERN_OK);
  return fd;
}

/* A connection past the handshake, as `rank`, ready for raw frames. */
static int raw_session(store_server *s, int rank, int size) {
  int fd = raw_connect(s);
  net_hello mine = {.role = NET_ROLE_STORE_CLIENT, .rank = rank, .size = size, .nstreams = 1};
  net_hello theirs;
  core_err err = {0};
  assert_int_equal(net_handshake_run(fd, &mine, &theirs, NULL, core_deadline_after(5), &err),
                   TERN_OK);
  return fd;
}

static void send_raw(int fd, const void *buf, size_t n) {
  assert_int_equal(net_write_all(fd, buf, n, core_deadline_after(2), "store", NULL), TERN_OK);
}

/* Seconds until the server closed fd (what it sent meanwhile is discarded); -1 at timeout_s. */
static double seconds_to_close(int fd, double timeout_s) {
  uint64_t t0 = core_now_ns(), deadline = core_deadline_after(timeout_s);
  for (;;) {
    char buf[4096];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno == ECONNRESET)) break;
    if (r > 0) continue;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, core_ms_left(deadline, 1000)) == 0 && core_now_ns() >= deadline) return -1;
  }
  close(fd);
  return (double)(core_now_ns() - t0) * 1e-9;
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void expect_in_log(const char *log, const char *what) {
  if (strstr(log, what) == NULL) fail_msg("the log does not say '%s'", what);
}

static void hostile_clients(void **state) {
  (void)state;
  capture_log();
  store_server *s = serve(2, NULL);
  int silent = raw_connect(s); /* says nothing at all: runs beside every other fault */

  /* an HTTP request where a hello belongs */
  int fd = raw_connect(s);
  char http[NET_HELLO_LEN] = "GET / HTTP/1.1\r\nHost: tern\r\n\r\n";
  send_raw(fd, http, sizeof http);
  assert_true(seconds_to_close(fd, 3) >= 0);
  still_serves(s, NULL);

  /* random bytes */
  fd = raw_connect(s);
  uint8_t noise[300];
  randombytes_buf(noise, sizeof noise);
  noise[0] = 'X'; /* never "TERN" by chance */
  send_raw(fd, noise, sizeof noise);
  assert_true(seconds_to_close(fd, 3) >= 0);
  still_serves(s, NULL);

  /* absurd lengths after a proper handshake: 4 GiB, and one byte past the limit */
  fd = raw_session(s, -1, 0);
  send_raw(fd, "\xff\xff\xff\xff", 4);
  assert_true(seconds_to_close(fd, 3) >= 0);
  fd = raw_session(s, -1, 0);
  uint8_t len[4];
  put32(len, STORE_MAX_FRAME + 1);
  send_raw(fd, len, 4);
  assert_true(seconds_to_close(fd, 3) >= 0);
  still_serves(s, NULL);

  /* frames of no known type, and frames only a server sends */
  fd = raw_session(s, -1, 0);
  send_raw(fd, "\x01\0\0\0\x63", 5);
  assert_true(seconds_to_close(fd, 3) >= 0);
  fd = raw_session(s, -1, 0);
  send_raw(fd, "\x01\0\0\0\x05", 5); /* OK */
  assert_true(seconds_to_close(fd, 3) >= 0);
  still_serves(s, NULL);

  /* the silent one goes at STORE_HELLO_SECONDS, and the others were served meanwhile */
  double waited = seconds_to_close(silent, STORE_HELLO_SECONDS + 3);
  assert_true(waited >= 0);
  still_serves(s, NULL);
  store_server_stop(s);

  char *log = captured_log();
  expect_in_log(log, "WARN store: refused a connection: 127.0.0.1:");
  expect_in_log(log, "is not a tern peer (its first bytes are 47 45 54 20");
  expect_in_log(log, "announced a frame of 4294967295 bytes");
  expect_in_log(log, "announced a frame of 1048849 bytes");
  expect_in_log(log, "frame of unknown type 99");
  expect_in_log(log, "sent a frame of type OK, which only the server sends");
  expect_in_log(log, "sent no complete handshake within 5 s (0 of 72 bytes)");
  assert_null(strstr(log, "lost")); /* these were no ranks: the job lost nobody */
  free(log);
}

static void keys(void **state) {
  (void)state;
  capture_log();
  store_server *s = serve(2, key1);
  store_client *c;
  core_err err = {0};
  assert_int_equal(
      store_connect(&c, store_server_addr(s), 0, 2, key2, core_deadline_after(5), &err),
      TERN_ERR_AUTH);
  assert_non_null(strstr(err.msg, "does not hold this job's key"));
  core_err_clear(&err);
  assert_int_equal(
      store_connect(&c, store_server_addr(s), 0, 2, NULL, core_deadline_after(5), &err),
      TERN_ERR_AUTH);
  assert_non_null(strstr(err.msg, "this side has none"));
  still_serves(s, key1);
  store_server_stop(s);
  char *log = captured_log();
  expect_in_log(log, "does not hold this job's key (its MAC does not verify)");
  expect_in_log(log, "holds no key, and this side requires one");
  assert_null(strstr(log, "lost"));
  free(log);
}

static void rank_that_breaks_the_protocol_is_lost(void **state) {
  (void)state;
  capture_log();
  store_server *s = serve(2, NULL);
  store_client *c0;
  assert_int_equal(
      store_connect(&c0, store_server_addr(s), 0, 2, NULL, core_deadline_after(5), NULL), TERN_OK);
  int fd = raw_session(s, 1, 2);
  send_raw(fd, "\x01\0\0\0\x63", 5);
  assert_true(seconds_to_close(fd, 3) >= 0);
  struct pollfd p = {.fd = store_fd(c0), .events = POLLIN};
  assert_int_equal(poll(&p, 1, 5000), 1);
  int lost;
  core_err err = {0};
  assert_int_equal(store_check(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, 1);
  assert_non_null(strstr(err.msg, "unknown type 99"));
  store_close(c0, true);
  store_server_stop(s);
  char *log = captured_log();
  expect_in_log(log, "closed a connection: rank 1 (127.0.0.1:");
  free(log);
}

static void stalled_frame(void **state) {
  (void)state;
  setenv("TERN_TIMEOUT", "1", 1);
  core_config_reload();
  capture_log();
  store_server *s = serve(1, NULL);
  int fd = raw_session(s, -1, 0);
  send_raw(fd, "\x20\0", 2); /* half a length, then nothing */
  double waited = seconds_to_close(fd, 5);
  assert_true(waited >= 0.9 && waited < 4);
  still_serves(s, NULL);
  store_server_stop(s);
  unsetenv("TERN_TIMEOUT");
  core_config_reload();
  char *log = captured_log();
  expect_in_log(log, "made no progress for 1 s (TERN_TIMEOUT) with a frame half sent");
  free(log);
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

static void asks_without_reading(void **state) {
  (void)state;
  store_server *s = serve(1, NULL);
  store_client *c;
  assert_int_equal(
      store_connect(&c, store_server_addr(s), -1, 0, NULL, core_deadline_after(5), NULL), TERN_OK);
  size_t big = STORE_MAX_VALUE;
  uint8_t *value = malloc(big);
  memset(value, 'v', big);
  assert_int_equal(store_set(c, "big", value, big, NULL), TERN_OK);
  long before = rss_kib();

  /* 300 GETs of the 1 MiB value, and never a byte read: 300 MiB if the server queued them */
  int fd = raw_session(s, -1, 0);
  uint8_t frames[300 * 14];
  size_t n = 0;
  for (int i = 0; i < 300; i++)
    n += store_msg_encode(&(store_msg){.type = STORE_GET, .key = "big", .key_len = 3}, frames + n,
                          sizeof frames - n);
  send_raw(fd, frames, n);
  struct timespec ts = {0, 500 * 1000 * 1000};
  nanosleep(&ts, NULL);
  long grown = rss_kib() - before;
  fprintf(stderr, "server memory grew by %ld KiB with 300 unread 1 MiB replies asked for\n", grown);
  assert_true(grown < 64 * 1024);

  /* the others are served meanwhile, the big value included */
  void *v;
  size_t len;
  assert_int_equal(store_get(c, "big", &v, &len, core_deadline_after(5), NULL), TERN_OK);
  assert_int_equal(len, big);
  assert_memory_equal(v, value, big);
  free(v);
  free(value);
  close(fd);
  still_serves(s, NULL);
  store_close(c, true);
  store_server_stop(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hostile_clients),
      cmocka_unit_test(keys),
      cmocka_unit_test(rank_that_breaks_the_protocol_is_lost),
      cmocka_unit_test(stalled_frame),
      cmocka_unit_test(asks_without_reading),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

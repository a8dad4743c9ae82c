/* test_store.c: the store's frames (every type, and every way to break one), the incremental
 * reader, and a live server with real clients: set/get/add, a GET that waits for a SET, a GET
 * that times out, ranks reported lost (by `tern run`'s call and by a connection that ends without
 * a goodbye), notices to late joiners, and store_server_wait_all_left. Hostile clients are in
 * test_store_server.c. (label tsan: the server runs in its own thread, and some cases use a
 * second client thread.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "comm/store.h"
#include "net/net.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const uint8_t run_id[16] = {7, 7, 7};

/* ---- frames ------------------------------------------------------------------------------ */

static void roundtrip(const store_msg *m) {
  uint8_t buf[600];
  size_t n = store_msg_encode(m, buf, sizeof buf);
  assert_true(n > 4);
  assert_int_equal(n, store_msg_size(m));
  uint32_t len = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16;
  assert_int_equal(len + 4, n);
  store_msg back;
  core_err err = {0};
  assert_int_equal(store_msg_decode(buf + 4, len, &back, "test", &err), TERN_OK);
  assert_int_equal(back.type, m->type);
  assert_int_equal(back.key_len, m->key_len);
  if (m->key_len) assert_memory_equal(back.key, m->key, m->key_len);
  assert_int_equal(back.value_len, m->value_len);
  if (m->value_len) assert_memory_equal(back.value, m->value, m->value_len);
  assert_true(back.number == m->number);
}

static void frames_roundtrip(void **state) {
  (void)state;
  const uint8_t v[] = {0, 1, 2, 255};
  roundtrip(
      &(store_msg){.type = STORE_SET, .key = "addr/3", .key_len = 6, .value = v, .value_len = 4});
  roundtrip(&(store_msg){.type = STORE_SET, .key = "empty", .key_len = 5});
  roundtrip(&(store_msg){.type = STORE_GET, .key = "addr/3", .key_len = 6, .number = 4000000000});
  roundtrip(&(store_msg){.type = STORE_ADD, .key = "n", .key_len = 1, .number = -5});
  roundtrip(&(store_msg){.type = STORE_BYE});
  roundtrip(&(store_msg){.type = STORE_OK});
  roundtrip(&(store_msg){.type = STORE_TIMEOUT});
  roundtrip(&(store_msg){.type = STORE_VALUE, .value = v, .value_len = 4});
  roundtrip(&(store_msg){.type = STORE_COUNT, .number = INT64_MIN});
  roundtrip(&(store_msg){.type = STORE_ERROR, .value = (const uint8_t *)"no", .value_len = 2});
  roundtrip(&(store_msg){.type = STORE_NOTICE, .number = -1, .value = v, .value_len = 4});
  roundtrip(&(store_msg){.type = STORE_NOTICE, .number = 12, .value = v, .value_len = 4});
}

static tern_status decode(const void *body, size_t len, core_err *err) {
  store_msg m;
  core_err_clear(err);
  return store_msg_decode(body, len, &m, "peer 1.2.3.4:5", err);
}

static void frames_refused(void **state) {
  (void)state;
  core_err err;
  assert_int_equal(decode("", 0, &err), TERN_ERR_PROTOCOL);
  assert_int_equal(decode("\0", 1, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "unknown type 0"));
  assert_int_equal(decode("\x0b", 1, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "peer 1.2.3.4:5"));

  /* every proper prefix of a good SET fails, and so does one byte more */
  uint8_t buf[64];
  store_msg set = {.type = STORE_SET,
                   .key = "key",
                   .key_len = 3,
                   .value = (const uint8_t *)"val",
                   .value_len = 3};
  size_t n = store_msg_encode(&set, buf, sizeof buf);
  for (size_t len = 1; len < n - 4; len++)
    assert_int_equal(decode(buf + 4, len, &err), TERN_ERR_PROTOCOL);
  buf[n] = 0;
  assert_int_equal(decode(buf + 4, n - 4 + 1, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "left over"));
  assert_int_equal(decode(buf + 4, n - 4, &err), TERN_OK);

  /* bad keys: empty, too long, not printable */
  uint8_t k0[] = {STORE_GET, 0, 0, 0, 0, 0, 0};
  assert_int_equal(decode(k0, sizeof k0, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "key"));
  uint8_t klong[1 + 2 + 257 + 4] = {STORE_GET, 1, 1}; /* 257 */
  memset(klong + 3, 'k', 257);
  assert_int_equal(decode(klong, sizeof klong, &err), TERN_ERR_PROTOCOL);
  uint8_t kctl[] = {STORE_GET, 2, 0, 'a', '\n', 0, 0, 0, 0};
  assert_int_equal(decode(kctl, sizeof kctl, &err), TERN_ERR_PROTOCOL);
  /* a value that claims more than the limit, or more than the frame */
  uint8_t vbig[] = {STORE_VALUE, 1, 0, 0x10, 0};
  assert_int_equal(decode(vbig, sizeof vbig, &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "over 1 MiB"));
  uint8_t vlong[] = {STORE_VALUE, 9, 0, 0, 0, 'a'};
  assert_int_equal(decode(vlong, sizeof vlong, &err), TERN_ERR_PROTOCOL);
  /* a notice about rank -2 */
  uint8_t nbad[] = {STORE_NOTICE, 0xfe, 0xff, 0xff, 0xff, 0, 0};
  assert_int_equal(decode(nbad, sizeof nbad, &err), TERN_ERR_PROTOCOL);
  /* a reply type with a body it should not have */
  uint8_t okx[] = {STORE_OK, 1};
  assert_int_equal(decode(okx, sizeof okx, &err), TERN_ERR_PROTOCOL);
}

static void encode_refuses(void **state) {
  (void)state;
  uint8_t buf[64];
  char longkey[STORE_MAX_KEY + 1];
  memset(longkey, 'k', sizeof longkey);
  assert_int_equal(
      store_msg_encode(&(store_msg){.type = STORE_GET, .key = "", .key_len = 0}, buf, sizeof buf),
      0);
  assert_int_equal(
      store_msg_size(&(store_msg){.type = STORE_GET, .key = longkey, .key_len = sizeof longkey}),
      0);
  assert_int_equal(
      store_msg_size(&(store_msg){.type = STORE_VALUE, .value_len = STORE_MAX_VALUE + 1}), 0);
  assert_int_equal(
      store_msg_size(&(store_msg){.type = STORE_GET, .key = "k", .key_len = 1, .number = -1}), 0);
  assert_int_equal(store_msg_size(&(store_msg){.type = 99}), 0);
  /* a frame that does not fit the buffer */
  assert_int_equal(store_msg_encode(&(store_msg){.type = STORE_OK}, buf, 4), 0);
  assert_int_equal(store_msg_encode(&(store_msg){.type = STORE_OK}, buf, 5), 5);
  assert_true(store_key_valid("addr/0 x~", 9));
  assert_false(store_key_valid("a\x7f", 2));
}

static void reader_pieces_and_limits(void **state) {
  (void)state;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  uint8_t buf[64];
  size_t n = store_msg_encode(
      &(store_msg){.type = STORE_ADD, .key = "c", .key_len = 1, .number = 42}, buf, sizeof buf);
  store_reader r = {0};
  bool ready = false, moved;
  for (size_t i = 0; i < n; i++) { /* one byte at a time: only the last completes it */
    assert_false(ready);
    assert_int_equal(write(sv[1], buf + i, 1), 1);
    assert_int_equal(store_reader_pump(&r, sv[0], &ready, &moved, "t", NULL), TERN_OK);
    assert_true(moved);
  }
  assert_true(ready);
  store_msg m;
  assert_int_equal(store_msg_decode(r.body, r.body_len, &m, "t", NULL), TERN_OK);
  assert_true(m.type == STORE_ADD && m.number == 42);
  store_reader_next(&r);
  assert_int_equal(store_reader_pump(&r, sv[0], &ready, &moved, "t", NULL), TERN_OK);
  assert_false(ready || moved);

  /* an absurd length is refused when its 4 bytes are in, before any body is allocated */
  core_err err = {0};
  assert_int_equal(write(sv[1], "\xff\xff\xff\xff", 4), 4);
  assert_int_equal(store_reader_pump(&r, sv[0], &ready, NULL, "peer x", &err), TERN_ERR_PROTOCOL);
  assert_non_null(strstr(err.msg, "4294967295"));
  assert_true(r.body_cap < 64); /* still the first frame's buffer: nothing was allocated */
  store_reader_free(&r);

  /* the end of the connection, mid-frame and between frames */
  assert_int_equal(write(sv[1], "\x05\0", 2), 2);
  close(sv[1]);
  core_err_clear(&err);
  assert_int_equal(store_reader_pump(&r, sv[0], &ready, NULL, "peer x", &err), TERN_ERR_PEER_LOST);
  assert_non_null(strstr(err.msg, "middle of a frame"));
  store_reader_free(&r);
  close(sv[0]);
}

/* ---- a live server ----------------------------------------------------------------------- */

static store_server *serve(int world, const uint8_t *key) {
  store_server *s;
  core_err err = {0};
  assert_int_equal(store_server_start(&s, "127.0.0.1", 0, world, run_id, key, &err), TERN_OK);
  assert_non_null(strstr(store_server_addr(s), "127.0.0.1:"));
  return s;
}

static store_client *join(store_server *s, int rank, int size) {
  store_client *c;
  core_err err = {0};
  tern_status rc =
      store_connect(&c, store_server_addr(s), rank, size, NULL, core_deadline_after(5), &err);
  if (rc != TERN_OK) fail_msg("store_connect: %s", err.msg);
  return c;
}

static double since(uint64_t t0) {
  return (double)(core_now_ns() - t0) * 1e-9;
}

static void set_get_add(void **state) {
  (void)state;
  store_server *s = serve(2, NULL);
  store_client *c = join(s, 0, 2);
  assert_memory_equal(store_run_id(c), run_id, 16);
  core_err err = {0};
  assert_int_equal(store_set(c, "addr/0", "10.0.0.1:5000", 13, &err), TERN_OK);
  void *v;
  size_t len;
  assert_int_equal(store_get(c, "addr/0", &v, &len, core_deadline_after(1), &err), TERN_OK);
  assert_int_equal(len, 13);
  assert_memory_equal(v, "10.0.0.1:5000", 13);
  free(v);
  assert_int_equal(store_set(c, "addr/0", "x", 1, &err), TERN_OK); /* replaced */
  assert_int_equal(store_get(c, "addr/0", &v, &len, core_deadline_after(1), &err), TERN_OK);
  assert_true(len == 1 && memcmp(v, "x", 1) == 0);
  free(v);
  assert_int_equal(store_set(c, "empty", "", 0, &err), TERN_OK);
  assert_int_equal(store_get(c, "empty", &v, &len, core_deadline_after(1), &err), TERN_OK);
  assert_int_equal(len, 0);
  free(v);

  int64_t n;
  assert_int_equal(store_add(c, "joined", 2, &n, &err), TERN_OK);
  assert_true(n == 2);
  assert_int_equal(store_add(c, "joined", 3, &n, &err), TERN_OK);
  assert_true(n == 5);
  assert_int_equal(store_get(c, "joined", &v, &len, core_deadline_after(1), &err), TERN_OK);
  assert_true(len == 1 && memcmp(v, "5", 1) == 0);
  free(v);
  /* ADD on a value that is not a counter is refused, and the client carries on */
  assert_int_equal(store_add(c, "addr/0", 1, &n, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "not a counter"));
  core_err_clear(&err);
  assert_int_equal(store_add(c, "joined", INT64_MAX, &n, &err), TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "overflow"));
  core_err_clear(&err);
  /* bad keys never leave the client */
  assert_int_equal(store_set(c, "", "v", 1, &err), TERN_ERR_INVALID_ARG);
  core_err_clear(&err);
  assert_int_equal(store_set(c, "tab\there", "v", 1, &err), TERN_ERR_INVALID_ARG);
  core_err_clear(&err);
  assert_int_equal(store_check(c, NULL, &err), TERN_OK);
  store_close(c, true);
  store_server_stop(s);
}

typedef struct {
  store_server *s;
  double delay_s;
  const char *key;
} setter_arg;

static void *late_setter(void *p) {
  setter_arg *a = p;
  store_client *c = join(a->s, 1, 2);
  struct timespec ts = {0, (long)(a->delay_s * 1e9)};
  nanosleep(&ts, NULL);
  assert_int_equal(store_set(c, a->key, "late", 4, NULL), TERN_OK);
  store_close(c, true);
  return NULL;
}

static void get_waits_and_times_out(void **state) {
  (void)state;
  store_server *s = serve(2, NULL);
  store_client *c = join(s, 0, 2);
  setter_arg a = {s, 0.2, "later"};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, late_setter, &a), 0);
  void *v;
  size_t len;
  core_err err = {0};
  uint64_t t0 = core_now_ns();
  assert_int_equal(store_get(c, "later", &v, &len, core_deadline_after(10), &err), TERN_OK);
  assert_true(since(t0) >= 0.15 && since(t0) < 5);
  assert_true(len == 4 && memcmp(v, "late", 4) == 0);
  free(v);
  pthread_join(t, NULL);

  /* the server's TIMEOUT ends the wait, and the connection stays in step */
  t0 = core_now_ns();
  assert_int_equal(store_get(c, "never", &v, &len, core_deadline_after(0.2), &err),
                   TERN_ERR_TIMEOUT);
  assert_true(since(t0) >= 0.19 && since(t0) < 2);
  assert_non_null(strstr(err.msg, "never"));
  assert_null(v);
  core_err_clear(&err);
  assert_int_equal(store_set(c, "after", "1", 1, &err), TERN_OK);
  assert_int_equal(store_get(c, "after", &v, &len, core_deadline_after(1), &err), TERN_OK);
  free(v);
  /* a deadline already passed asks without waiting */
  assert_int_equal(store_get(c, "never", &v, &len, core_now_ns(), &err), TERN_ERR_TIMEOUT);
  store_close(c, true);
  store_server_stop(s);
}

/* Waits until the server pushed something to c, then asks store_check. */
static tern_status check_after_push(store_client *c, int *lost, core_err *err) {
  struct pollfd p = {.fd = store_fd(c), .events = POLLIN};
  assert_int_equal(poll(&p, 1, 5000), 1);
  return store_check(c, lost, err);
}

typedef struct {
  store_client *c;
  tern_status rc;
  double took;
  core_err err;
} getter_arg;

static void *waiting_getter(void *p) {
  getter_arg *g = p;
  void *v;
  size_t len;
  uint64_t t0 = core_now_ns();
  g->rc = store_get(g->c, "never", &v, &len, core_deadline_after(30), &g->err);
  g->took = since(t0);
  return NULL;
}

static void reported_lost(void **state) {
  (void)state;
  store_server *s = serve(3, NULL);
  store_client *c0 = join(s, 0, 3), *c1 = join(s, 1, 3);
  getter_arg g = {.c = c1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiting_getter, &g), 0);
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL); /* let the GET reach the server and be held */
  store_server_report_lost(s, 2, "killed by signal 9");
  store_server_report_lost(s, 2, "exited with code 1"); /* the first report wins */
  store_server_report_lost(s, 7, "no such rank");       /* ignored */

  int lost;
  core_err err = {0};
  assert_int_equal(check_after_push(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, 2);
  assert_non_null(strstr(err.msg, "rank 2 lost: killed by signal 9"));
  /* it keeps failing with the same text */
  core_err_clear(&err);
  assert_int_equal(store_check(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_non_null(strstr(err.msg, "signal 9"));
  /* the held GET ends at once, not after its 30 s */
  pthread_join(t, NULL);
  assert_int_equal(g.rc, TERN_ERR_PEER_LOST);
  assert_true(g.took < 5);
  assert_non_null(strstr(g.err.msg, "rank 2 lost: killed by signal 9"));
  /* a client that joins later is told too, and SET still works */
  store_client *late = join(s, -1, 0);
  core_err_clear(&err);
  assert_int_equal(check_after_push(late, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, 2);
  assert_int_equal(store_set(late, "k", "v", 1, NULL), TERN_OK);
  void *v;
  size_t len;
  core_err_clear(&err);
  assert_int_equal(store_get(late, "k", &v, &len, core_deadline_after(1), &err),
                   TERN_ERR_PEER_LOST);
  store_close(late, true);
  store_close(c0, true);
  store_close(c1, true);
  store_server_stop(s);
}

static void vanished_rank_is_reported(void **state) {
  (void)state;
  store_server *s = serve(2, NULL);
  store_client *c0 = join(s, 0, 2), *c1 = join(s, 1, 2);
  store_close(c1, false); /* no BYE: as a process that died */
  int lost;
  core_err err = {0};
  assert_int_equal(check_after_push(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, 1);
  assert_non_null(strstr(err.msg, "rank 1 lost"));
  assert_non_null(strstr(err.msg, "without a goodbye"));
  store_close(c0, true);
  store_server_stop(s);

  /* a launcher's report that follows the drop at once says more, and wins */
  s = serve(2, NULL);
  c0 = join(s, 0, 2);
  c1 = join(s, 1, 2);
  store_close(c1, false);
  store_server_report_lost(s, 1, "killed by signal 9");
  core_err_clear(&err);
  assert_int_equal(check_after_push(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, 1);
  assert_non_null(strstr(err.msg, "rank 1 lost: killed by signal 9"));
  store_close(c0, true);
  store_server_stop(s);

  /* the store itself going away is a loss too, of no rank */
  s = serve(1, NULL);
  c0 = join(s, 0, 1);
  store_server_stop(s);
  core_err_clear(&err);
  assert_int_equal(check_after_push(c0, &lost, &err), TERN_ERR_PEER_LOST);
  assert_int_equal(lost, -1);
  assert_non_null(strstr(err.msg, "closed the connection"));
  core_err_clear(&err);
  assert_int_equal(store_set(c0, "k", "v", 1, &err), TERN_ERR_PEER_LOST);
  store_close(c0, true);
}

static void goodbyes_and_wait_all_left(void **state) {
  (void)state;
  store_server *s = serve(3, NULL);
  store_client *c0 = join(s, 0, 3), *c1 = join(s, 1, 3), *c2 = join(s, 2, 3);
  store_client *tool = join(s, -1, 0);
  core_err err = {0};
  store_close(c2, true);
  store_close(c0, true);
  uint64_t t0 = core_now_ns();
  assert_int_equal(store_server_wait_all_left(s, 0.2, &err), TERN_ERR_TIMEOUT);
  assert_true(since(t0) >= 0.19);
  assert_non_null(strstr(err.msg, "still connected without a goodbye: 1"));
  /* clean goodbyes are not losses: the last rank hears of none */
  struct pollfd p = {.fd = store_fd(c1), .events = POLLIN};
  assert_int_equal(poll(&p, 1, 200), 0);
  assert_int_equal(store_check(c1, NULL, NULL), TERN_OK);
  store_close(c1, true);
  assert_int_equal(store_server_wait_all_left(s, 5, NULL), TERN_OK); /* a tool is not waited for */
  store_close(tool, true);
  store_server_stop(s);
}

static void wrong_world_or_address(void **state) {
  (void)state;
  store_server *s = serve(3, NULL);
  store_client *c;
  core_err err = {0};
  assert_int_equal(
      store_connect(&c, store_server_addr(s), 1, 4, NULL, core_deadline_after(2), &err),
      TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "serves a job of 3 ranks"));
  core_err_clear(&err);
  assert_int_equal(store_connect(&c, "127.0.0.1", 1, 4, NULL, core_deadline_after(2), &err),
                   TERN_ERR_INVALID_ARG);
  core_err_clear(&err);
  assert_int_equal(
      store_connect(&c, store_server_addr(s), 3, 3, NULL, core_deadline_after(2), &err),
      TERN_ERR_INVALID_ARG);
  store_server_stop(s);
  core_err_clear(&err);
  assert_int_equal(store_server_start(&s, "127.0.0.1", 0, 0, run_id, NULL, &err),
                   TERN_ERR_INVALID_ARG);
  store_close(NULL, true);
  store_server_stop(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(frames_roundtrip),
      cmocka_unit_test(frames_refused),
      cmocka_unit_test(encode_refuses),
      cmocka_unit_test(reader_pieces_and_limits),
      cmocka_unit_test(set_get_add),
      cmocka_unit_test(get_waits_and_times_out),
      cmocka_unit_test(reported_lost),
      cmocka_unit_test(vanished_rank_is_reported),
      cmocka_unit_test(goodbyes_and_wait_all_left),
      cmocka_unit_test(wrong_world_or_address),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

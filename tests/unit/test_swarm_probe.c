/* test_swarm_probe.c: the bandwidth probe (src/swarm/probe.c) on loopback.
 *   - a live peer answers: a finite rate > 0, within the probe's deadline;
 *   - a responder that lies about the bytes it read, answers with another message, sends
 *     garbage or never answers is refused, each within the deadline given (1 s), naming it;
 *   - a probe message longer than SWARM_PROBE_MAX is refused by the listener before it reads
 *     it (the connection is closed and counted as refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/bytes.h"
#include "swarm/swarm.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum hostile { LIES, WRONG_TYPE, GARBAGE, SILENT };

typedef struct server {
  tern_swarm *sw; /* for the run id (its own swarm's listener is not this one) */
  int listen_fd, port;
  enum hostile how;
  pthread_t th;
} server;

/* Accepts one connection, runs tern's handshake, takes the probe and answers as told. */
static void *serve(void *arg) {
  server *s = arg;
  struct pollfd p = {.fd = s->listen_fd, .events = POLLIN};
  if (poll(&p, 1, 3000) != 1) return NULL;
  int fd;
  char from[96];
  core_err err = {0};
  if (net_accept(s->listen_fd, &fd, from, sizeof from, &err) != TERN_OK) return NULL;
  net_hello mine = {.role = NET_ROLE_PEER, .rank = -1, .nstreams = 1};
  memcpy(mine.run_id, s->sw->run_id, 16);
  net_handshake hs;
  net_handshake_start(&hs, fd, &mine, NULL);
  uint64_t deadline = core_deadline_after(3);
  if (net_handshake_finish(&hs, deadline, &err) == TERN_OK &&
      swarm_seal_begin(s->sw, fd, hs.theirs.nonce, hs.mine.nonce, false, &err) == TERN_OK) {
    swarm_hdr h;
    uint8_t *buf = malloc(SWARM_PROBE_MAX);
    if (swarm_recv_hdr(fd, &h, deadline, "prober", &err) == TERN_OK &&
        swarm_recv_payload(fd, buf, h.len, deadline, "prober", &err) == TERN_OK) {
      uint8_t n[8];
      core_put64(n, h.len + 1);
      swarm_hdr a = {.type = s->how == LIES ? SWARM_PROBE : SWARM_RESULT, .len = sizeof n};
      if (s->how == LIES || s->how == WRONG_TYPE) swarm_send(fd, &a, n, deadline, "prober", &err);
      if (s->how == GARBAGE)
        net_write_all(fd, "not a swarm message, 40 bytes of garbage", 40, deadline, "prober", &err);
      if (s->how == SILENT) usleep(1500000);
    }
    free(buf);
  }
  close(fd);
  return NULL;
}

static tern_swarm *join(void) {
  tern_swarm_options o = {.listen = "127.0.0.1:0", .run_id = "probe-test"};
  tern_swarm *sw = NULL;
  assert_int_equal(tern_swarm_join(&sw, &o), TERN_OK);
  return sw;
}

static void test_live_peer_measured(void **state) {
  (void)state;
  tern_swarm *a = join(), *b = join();
  double bw = 0;
  core_err err = {0};
  uint64_t t0 = core_now_ns();
  tern_status rc = swarm_probe(a, &b->self, 3, &bw, &err);
  if (rc != TERN_OK) print_message("probe failed: %s\n", err.msg);
  assert_int_equal(rc, TERN_OK);
  double secs = (double)(core_now_ns() - t0) / 1e9;
  print_message("loopback: %.3g bytes/s in %.3f s\n", bw, secs);
  assert_true(bw > 0 && bw <= SWARM_PROBE_MAX_RATE);
  assert_true(secs < 3);
  tern_swarm_leave(a);
  tern_swarm_leave(b);
}

static void hostile(enum hostile how, const char *needle) {
  tern_swarm *a = join();
  server s = {.sw = a, .how = how};
  core_err err = {0};
  assert_int_equal(net_listen("127.0.0.1", 0, &s.listen_fd, &s.port, &err), TERN_OK);
  assert_int_equal(pthread_create(&s.th, NULL, serve, &s), 0);
  swarm_member m = {.id = 42, .host = "127.0.0.1", .port = s.port, .bw = 1};
  double bw = -1;
  uint64_t t0 = core_now_ns();
  assert_int_not_equal(swarm_probe(a, &m, 1, &bw, &err), TERN_OK);
  double secs = (double)(core_now_ns() - t0) / 1e9;
  print_message("%s: refused in %.3f s: %s\n", needle, secs, err.msg);
  assert_true(secs < 1.5);
  assert_non_null(strstr(err.msg, needle));
  assert_true(bw == -1); /* nothing measured is kept */
  pthread_join(s.th, NULL);
  close(s.listen_fd);
  tern_swarm_leave(a);
}

static void test_liar_refused(void **state) {
  (void)state;
  hostile(LIES, "says it read");
}

static void test_wrong_answer_refused(void **state) {
  (void)state;
  hostile(WRONG_TYPE, "answered a probe with a result");
}

static void test_garbage_refused(void **state) {
  (void)state;
  hostile(GARBAGE, "not a swarm message");
}

static void test_silence_ends_at_the_deadline(void **state) {
  (void)state;
  hostile(SILENT, "peer 000000000000002a");
}

static void test_oversized_probe_refused_by_listener(void **state) {
  (void)state;
  tern_swarm *a = join(), *b = join();
  int fd;
  core_err err = {0};
  uint64_t deadline = core_deadline_after(3);
  assert_int_equal(swarm_dial(a, &b->self, deadline, &fd, &err), TERN_OK);
  swarm_hdr h = {.type = SWARM_PROBE, .sender = a->id, .len = SWARM_PROBE_MAX + 1ull};
  uint8_t raw[SWARM_HDR_LEN];
  swarm_hdr_encode(&h, raw);
  assert_int_equal(net_write_all(fd, raw, sizeof raw, deadline, "b", &err), TERN_OK);
  uint8_t one;
  assert_int_not_equal(net_read_all(fd, &one, 1, deadline, "b", &err), TERN_OK); /* closed */
  assert_true(core_now_ns() < deadline);
  close(fd);
  unsigned long long refused = 0; /* counted just after the close */
  for (int i = 0; i < 100 && !refused; i++) {
    pthread_mutex_lock(&b->mu);
    refused = b->refused;
    pthread_mutex_unlock(&b->mu);
    if (!refused) usleep(10000);
  }
  assert_true(refused >= 1);
  tern_swarm_leave(a);
  tern_swarm_leave(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_peer_measured),
      cmocka_unit_test(test_liar_refused),
      cmocka_unit_test(test_wrong_answer_refused),
      cmocka_unit_test(test_garbage_refused),
      cmocka_unit_test(test_silence_ends_at_the_deadline),
      cmocka_unit_test(test_oversized_probe_refused_by_listener),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

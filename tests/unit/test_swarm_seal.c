/* test_swarm_seal.c: the per-message AEAD of keyed swarm connections (seal.c) over a socketpair,
 * one end the dialer, the other the acceptor: a message arrives whole; a replayed one (the same
 * bytes again on the connection, or on another connection), a reordered one, and one with a
 * byte of its header, payload or tag changed are refused with TERN_ERR_AUTH; an unkeyed swarm
 * sends plain messages. And the values checks of clip.c: non-finite values are found, and
 * CenteredClip bounds what one contribution of 1e6 does to a part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "swarm/swarm.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static tern_swarm keyed = {.keyed = true, .key = {7}};
static tern_swarm unkeyed = {.keyed = false};

typedef struct conn_pair {
  int dial, accept;
} conn_pair;

/* A connection whose two ends hold sessions from the nonces a and b. */
static conn_pair open_link(const tern_swarm *sw, uint8_t a, uint8_t b) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  uint8_t na[32], nb[32];
  memset(na, a, sizeof na);
  memset(nb, b, sizeof nb);
  core_err err = {0};
  assert_int_equal(swarm_seal_begin(sw, sv[0], na, nb, true, &err), TERN_OK);
  assert_int_equal(swarm_seal_begin(sw, sv[1], na, nb, false, &err), TERN_OK);
  return (conn_pair){sv[0], sv[1]};
}

static void close_link(conn_pair l) {
  close(l.dial);
  close(l.accept);
}

/* The frame of a hello with payload "values!" from the dialer's end. */
static uint8_t *frame_of(int fd, size_t *len) {
  swarm_hdr h = {.type = SWARM_HELLO, .sender = 42, .len = 7};
  uint8_t *f;
  core_err err = {0};
  assert_int_equal(swarm_seal_frame(fd, &h, "values!", &f, len, &err), TERN_OK);
  return f;
}

/* Receives one message on fd: its status, and the payload in out (7 bytes). */
static tern_status receive(int fd, char *out) {
  swarm_hdr h;
  core_err err = {0};
  tern_status rc = swarm_recv_hdr(fd, &h, core_deadline_after(2), "the dialer", &err);
  if (rc == TERN_OK)
    rc = swarm_recv_payload(fd, out, h.len, core_deadline_after(2), "the dialer", &err);
  if (rc == TERN_ERR_AUTH) assert_non_null(strstr(err.msg, "does not verify"));
  return rc;
}

static void send_raw(int fd, const uint8_t *f, size_t len) {
  assert_int_equal(write(fd, f, len), (ssize_t)len);
}

static void test_message_arrives_and_is_encrypted(void **state) {
  (void)state;
  conn_pair l = open_link(&keyed, 1, 2);
  size_t len;
  uint8_t *f = frame_of(l.dial, &len);
  assert_int_equal(len, SWARM_HDR_LEN + 7 + SWARM_SEAL_TAG);
  assert_null(memmem(f, len, "values!", 7)); /* not in clear on the wire */
  send_raw(l.dial, f, len);
  char got[8] = {0};
  assert_int_equal(receive(l.accept, got), TERN_OK);
  assert_string_equal(got, "values!");
  /* and the other way, with swarm_send */
  swarm_hdr h = {.type = SWARM_REJECT, .sender = 1};
  core_err err = {0};
  assert_int_equal(swarm_send(l.accept, &h, NULL, core_deadline_after(2), "x", &err), TERN_OK);
  assert_int_equal(swarm_recv_hdr(l.dial, &h, core_deadline_after(2), "x", &err), TERN_OK);
  free(f);
  close_link(l);
}

static void test_replay_on_the_same_connection_refused(void **state) {
  (void)state;
  conn_pair l = open_link(&keyed, 1, 2);
  size_t len;
  uint8_t *f = frame_of(l.dial, &len);
  send_raw(l.dial, f, len);
  send_raw(l.dial, f, len); /* the same bytes again */
  char got[8];
  assert_int_equal(receive(l.accept, got), TERN_OK);
  assert_int_equal(receive(l.accept, got), TERN_ERR_AUTH);
  free(f);
  close_link(l);
}

static void test_replay_on_another_connection_refused(void **state) {
  (void)state;
  conn_pair a = open_link(&keyed, 1, 2), b = open_link(&keyed, 3, 4);
  size_t len;
  uint8_t *f = frame_of(a.dial, &len); /* recorded on a, the first message of both */
  send_raw(b.dial, f, len);
  char got[8];
  assert_int_equal(receive(b.accept, got), TERN_ERR_AUTH);
  free(f);
  close_link(a);
  close_link(b);
}

static void test_reordered_messages_refused(void **state) {
  (void)state;
  conn_pair l = open_link(&keyed, 1, 2);
  size_t len1, len2;
  uint8_t *f1 = frame_of(l.dial, &len1), *f2 = frame_of(l.dial, &len2);
  send_raw(l.dial, f2, len2); /* the second first */
  char got[8];
  assert_int_equal(receive(l.accept, got), TERN_ERR_AUTH);
  free(f1);
  free(f2);
  close_link(l);
}

static void test_changed_byte_refused(void **state) {
  (void)state;
  /* a byte of the header (the sender), of the payload, and of the tag */
  size_t where[] = {16, SWARM_HDR_LEN + 3, SWARM_HDR_LEN + 7 + 5};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    conn_pair l = open_link(&keyed, 1, 2);
    size_t len;
    uint8_t *f = frame_of(l.dial, &len);
    f[where[i]] ^= 1;
    send_raw(l.dial, f, len);
    char got[8];
    assert_int_equal(receive(l.accept, got), TERN_ERR_AUTH);
    free(f);
    close_link(l);
  }
}

static void test_unkeyed_is_plain(void **state) {
  (void)state;
  conn_pair l = open_link(&unkeyed, 1, 2);
  assert_int_equal(swarm_seal_overhead(l.dial), 0);
  size_t len;
  uint8_t *f = frame_of(l.dial, &len);
  assert_int_equal(len, SWARM_HDR_LEN + 7);
  assert_memory_equal(f + SWARM_HDR_LEN, "values!", 7);
  send_raw(l.dial, f, len);
  char got[8] = {0};
  assert_int_equal(receive(l.accept, got), TERN_OK);
  assert_string_equal(got, "values!");
  free(f);
  close_link(l);
}

static void test_non_finite_found(void **state) {
  (void)state;
  float x[4] = {1, 2, 3, 4};
  assert_true(swarm_values_finite(x, 4));
  x[2] = NAN;
  assert_false(swarm_values_finite(x, 4));
  x[2] = INFINITY;
  assert_false(swarm_values_finite(x, 4));
}

/* Three honest contributions near 100 and one of 1e6: the clipped part stays within tau / 3 of
 * the honest mean (the honest within tau of it), where the mean goes to ~250,000. */
static void test_centered_clip_bounds_one_member(void **state) {
  (void)state;
  enum { LEN = 8 };
  float h0[LEN], h1[LEN], h2[LEN], bad[LEN], out[LEN];
  for (int k = 0; k < LEN; k++) {
    h0[k] = 100.0f + 0.01f * k;
    h1[k] = 100.1f + 0.01f * k;
    h2[k] = 99.9f + 0.01f * k;
    bad[k] = 1e6f;
  }
  const float *x[4] = {h0, bad, h1, h2};
  double tau = 1.0;
  assert_int_equal(swarm_centered_clip(x, 4, LEN, tau, out), TERN_OK);
  double d2 = 0;
  for (int k = 0; k < LEN; k++)
    d2 += (out[k] - h0[k]) * (double)(out[k] - h0[k]);
  assert_true(sqrt(d2) <= tau / 3 + 1e-3);
  /* all honest and close together: the plain mean */
  const float *y[3] = {h0, h1, h2};
  assert_int_equal(swarm_centered_clip(y, 3, LEN, tau, out), TERN_OK);
  for (int k = 0; k < LEN; k++)
    assert_true(fabs(out[k] - h0[k]) < 1e-4);
}

int main(void) {
  if (sodium_init() < 0) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_message_arrives_and_is_encrypted),
      cmocka_unit_test(test_replay_on_the_same_connection_refused),
      cmocka_unit_test(test_replay_on_another_connection_refused),
      cmocka_unit_test(test_reordered_messages_refused),
      cmocka_unit_test(test_changed_byte_refused),
      cmocka_unit_test(test_unkeyed_is_plain),
      cmocka_unit_test(test_non_finite_found),
      cmocka_unit_test(test_centered_clip_bounds_one_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

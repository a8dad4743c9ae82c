/* test_handshake.c: the hello's wire form and checks, and the handshake against every kind of
 * wrong peer: no key, another key, another run, another role, garbage, silence, a replayed and
 * a reflected handshake, and bytes that trickle in one at a time. Most cases drive both state
 * machines from one thread over a socketpair, so each step is deterministic. (label tsan: one
 * case runs net_handshake_run on both ends of a TCP connection from two threads.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const uint8_t key1[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint8_t key2[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11};

static net_hello hello(net_role role, int rank, int size) {
  net_hello h = {.role = (uint8_t)role, .rank = rank, .size = size, .stream = 0, .nstreams = 1};
  return h;
}

static void socket_pair(int sv[2]) {
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

static void hello_roundtrip(void **state) {
  (void)state;
  net_hello h = {
      .role = NET_ROLE_RANK, .keyed = true, .rank = 6, .size = 7, .stream = 2, .nstreams = 4};
  for (int i = 0; i < 16; i++)
    h.run_id[i] = (uint8_t)(i + 100);
  for (int i = 0; i < 32; i++)
    h.nonce[i] = (uint8_t)(255 - i);
  uint8_t wire[NET_HELLO_LEN];
  net_hello_encode(&h, wire);
  assert_memory_equal(wire, "TERN", 4);
  net_hello back;
  assert_int_equal(net_hello_decode(wire, &back, "test peer", NULL), TERN_OK);
  assert_int_equal(back.role, h.role);
  assert_true(back.keyed);
  assert_memory_equal(back.run_id, h.run_id, 16);
  assert_int_equal(back.rank, 6);
  assert_int_equal(back.size, 7);
  assert_int_equal(back.stream, 2);
  assert_int_equal(back.nstreams, 4);
  assert_memory_equal(back.nonce, h.nonce, 32);
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void hello_decode_refuses(void **state) {
  (void)state;
  net_hello h = hello(NET_ROLE_RANK, 1, 4);
  uint8_t good[NET_HELLO_LEN];
  net_hello_encode(&h, good);
  struct {
    size_t off;
    int width; /* 1, 2 or 4 bytes */
    uint32_t value;
    const char *says;
  } cases[] = {
      {0, 1, 'X', "not a tern peer"},
      {4, 2, 2, "version 2"},
      {6, 1, 0, "role 0"},
      {6, 1, 5, "role 5"},
      {7, 1, 2, "reserved"},
      {38, 1, 1, "reserved"},
      {28, 4, (uint32_t)-1, "size -1"},
      {28, 4, NET_MAX_RANKS + 1, "world size"},
      {24, 4, (uint32_t)-2, "rank -2"},
      {24, 4, 4, "rank 4 of size 4"},
      {34, 2, 0, "stream 0 of 0"},
      {32, 2, 1, "stream 1 of 1"},
      {34, 2, NET_MAX_STREAMS + 1, "of 65"},
  };
  for (size_t i = 0; i < CORE_ARRAY_LEN(cases); i++) {
    uint8_t bad[NET_HELLO_LEN];
    memcpy(bad, good, sizeof bad);
    if (cases[i].width == 1)
      bad[cases[i].off] = (uint8_t)cases[i].value;
    else if (cases[i].width == 2) {
      bad[cases[i].off] = (uint8_t)cases[i].value;
      bad[cases[i].off + 1] = (uint8_t)(cases[i].value >> 8);
    } else
      put32(bad + cases[i].off, cases[i].value);
    core_err err = {0};
    net_hello out;
    assert_int_equal(net_hello_decode(bad, &out, "test peer", &err), TERN_ERR_PROTOCOL);
    if (strstr(err.msg, cases[i].says) == NULL || strstr(err.msg, "test peer") == NULL)
      fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].says);
  }
  /* size 0 (not known yet) allows any rank in range, -1 included */
  uint8_t unknown[NET_HELLO_LEN];
  memcpy(unknown, good, sizeof unknown);
  put32(unknown + 28, 0);
  put32(unknown + 24, 12345);
  net_hello out;
  assert_int_equal(net_hello_decode(unknown, &out, "test peer", NULL), TERN_OK);
  put32(unknown + 24, NET_MAX_RANKS);
  assert_int_equal(net_hello_decode(unknown, &out, "test peer", NULL), TERN_ERR_PROTOCOL);
}

/* One side of a handshake being stepped by the test. */
typedef struct side {
  net_handshake hs;
  bool done, failed;
  tern_status rc;
  core_err err;
} side;

static void step(side *s) {
  if (s->done || s->failed) return;
  s->rc = net_handshake_step(&s->hs, &s->done, &s->err);
  if (s->rc != TERN_OK) {
    s->failed = true;
    close(s->hs.fd); /* as a real caller does: the other side then sees the end */
  }
}

/* Runs a and b against each other on a socketpair until both are finished. */
static void run_pair(side *a, const net_hello *ha, const uint8_t *ka, side *b, const net_hello *hb,
                     const uint8_t *kb) {
  int sv[2];
  socket_pair(sv);
  memset(a, 0, sizeof *a);
  memset(b, 0, sizeof *b);
  net_handshake_start(&a->hs, sv[0], ha, ka);
  net_handshake_start(&b->hs, sv[1], hb, kb);
  for (int i = 0; i < 100 && !((a->done || a->failed) && (b->done || b->failed)); i++) {
    step(a);
    step(b);
  }
  assert_true(a->done || a->failed);
  assert_true(b->done || b->failed);
  if (a->done) close(sv[0]);
  if (b->done) close(sv[1]);
}

static void without_key(void **state) {
  (void)state;
  net_hello ha = hello(NET_ROLE_RANK, 0, 2), hb = hello(NET_ROLE_RANK, 1, 2);
  hb.stream = 1;
  hb.nstreams = 3;
  side a, b;
  run_pair(&a, &ha, NULL, &b, &hb, NULL);
  assert_true(a.done && b.done);
  assert_int_equal(a.hs.theirs.rank, 1);
  assert_int_equal(a.hs.theirs.stream, 1);
  assert_int_equal(a.hs.theirs.nstreams, 3);
  assert_int_equal(b.hs.theirs.rank, 0);
  assert_false(a.hs.theirs.keyed);
  /* each side's nonce is fresh and is what the other received */
  assert_memory_equal(a.hs.theirs.nonce, b.hs.mine.nonce, 32);
  assert_memory_not_equal(a.hs.mine.nonce, b.hs.mine.nonce, 32);
  assert_int_equal(net_handshake_events(&a.hs), 0);
}

static void with_the_same_key(void **state) {
  (void)state;
  net_hello ha = hello(NET_ROLE_STORE_CLIENT, 3, 4), hb = hello(NET_ROLE_STORE_SERVER, -1, 4);
  for (int i = 0; i < 16; i++)
    hb.run_id[i] = (uint8_t)i; /* a client that does not know it yet */
  side a, b;
  run_pair(&a, &ha, key1, &b, &hb, key1);
  assert_true(a.done && b.done);
  assert_true(a.hs.theirs.keyed && b.hs.theirs.keyed);
  assert_memory_equal(a.hs.theirs.run_id, hb.run_id, 16);
  /* the key does not outlive the handshake */
  static const uint8_t zero[32];
  assert_memory_equal(a.hs.key, zero, 32);
}

static void with_another_key(void **state) {
  (void)state;
  net_hello h = hello(NET_ROLE_RANK, 0, 2), h1 = hello(NET_ROLE_RANK, 1, 2);
  side a, b;
  run_pair(&a, &h, key1, &b, &h1, key2);
  assert_true(a.failed && b.failed);
  assert_int_equal(a.rc, TERN_ERR_AUTH);
  assert_int_equal(b.rc, TERN_ERR_AUTH);
  assert_non_null(strstr(a.err.msg, "does not hold this job's key"));
}

static void keyed_meets_unkeyed(void **state) {
  (void)state;
  net_hello h = hello(NET_ROLE_RANK, 0, 2), h1 = hello(NET_ROLE_RANK, 1, 2);
  side a, b;
  run_pair(&a, &h, key1, &b, &h1, NULL);
  assert_int_equal(a.rc, TERN_ERR_AUTH);
  assert_int_equal(b.rc, TERN_ERR_AUTH);
  assert_non_null(strstr(a.err.msg, "holds no key"));
  assert_non_null(strstr(b.err.msg, "this side has none"));
}

static void another_run(void **state) {
  (void)state;
  net_hello h = hello(NET_ROLE_RANK, 0, 2), h1 = hello(NET_ROLE_RANK, 1, 2);
  h.run_id[0] = 1;
  h1.run_id[0] = 2;
  side a, b;
  run_pair(&a, &h, NULL, &b, &h1, NULL);
  assert_int_equal(a.rc, TERN_ERR_AUTH);
  assert_non_null(strstr(a.err.msg, "another run"));
  /* a side that does not know the run yet (all zero) is accepted */
  memset(h1.run_id, 0, 16);
  run_pair(&a, &h, NULL, &b, &h1, NULL);
  assert_true(a.done && b.done);
}

static void roles_must_pair(void **state) {
  (void)state;
  net_hello r = hello(NET_ROLE_RANK, 0, 2), s = hello(NET_ROLE_STORE_SERVER, -1, 2),
            c = hello(NET_ROLE_STORE_CLIENT, 1, 2);
  side a, b;
  run_pair(&a, &r, NULL, &b, &s, NULL);
  assert_int_equal(a.rc, TERN_ERR_PROTOCOL);
  assert_non_null(strstr(a.err.msg, "store server"));
  run_pair(&a, &c, NULL, &b, &c, NULL);
  assert_int_equal(a.rc, TERN_ERR_PROTOCOL);
  assert_int_equal(b.rc, TERN_ERR_PROTOCOL);
  net_hello w = hello(NET_ROLE_PEER, -1, 0); /* a swarm peer pairs with swarm peers only */
  run_pair(&a, &w, NULL, &b, &r, NULL);
  assert_int_equal(a.rc, TERN_ERR_PROTOCOL);
  assert_non_null(strstr(a.err.msg, "rank"));
  run_pair(&a, &w, NULL, &b, &w, NULL);
  assert_int_equal(a.rc, TERN_OK);
  assert_int_equal(b.rc, TERN_OK);
}

static void write_raw(int fd, const void *buf, size_t n) {
  assert_int_equal(net_write_all(fd, buf, n, core_deadline_after(2), "test", NULL), TERN_OK);
}

static void garbage_and_silence(void **state) {
  (void)state;
  int sv[2];
  socket_pair(sv);
  side a = {0};
  net_hello h = hello(NET_ROLE_STORE_SERVER, -1, 4);
  net_handshake_start(&a.hs, sv[0], &h, NULL);
  char http[NET_HELLO_LEN] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  write_raw(sv[1], http, sizeof http);
  step(&a);
  assert_int_equal(a.rc, TERN_ERR_PROTOCOL);
  assert_non_null(strstr(a.err.msg, "not a tern peer"));
  assert_non_null(strstr(a.err.msg, "47 45 54 20")); /* "GET " */
  close(sv[1]);

  /* a peer that sends half a hello and hangs up */
  socket_pair(sv);
  memset(&a, 0, sizeof a);
  net_handshake_start(&a.hs, sv[0], &h, NULL);
  write_raw(sv[1], "TERN\1", 5);
  close(sv[1]);
  step(&a);
  assert_int_equal(a.rc, TERN_ERR_PEER_LOST);
  assert_non_null(strstr(a.err.msg, "5 of 72"));

  /* a peer that sends nothing: net_handshake_run gives up at the deadline */
  socket_pair(sv);
  net_hello theirs;
  core_err err = {0};
  uint64_t t0 = core_now_ns();
  assert_int_equal(net_handshake_run(sv[0], &h, &theirs, NULL, core_deadline_after(0.15), &err),
                   TERN_ERR_TIMEOUT);
  double s = (double)(core_now_ns() - t0) * 1e-9;
  assert_true(s >= 0.14 && s < 2.0);
  assert_non_null(strstr(err.msg, "0 of 72"));
  close(sv[0]);
  close(sv[1]);
}

/* Reads what fd has (nonblocking) into buf; returns the count. */
static size_t drain(int fd, uint8_t *buf, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t r = recv(fd, buf + n, cap - n, 0);
    if (r <= 0) break;
    n += (size_t)r;
  }
  return n;
}

/* A keyed handshake between a and b through the test, which passes at most `chunk` bytes per
 * turn and records what b sent. */
static size_t tapped(side *a, side *b, const uint8_t *key, size_t chunk, uint8_t *b_sent) {
  int s1[2], s2[2];
  socket_pair(s1);
  socket_pair(s2);
  net_hello ha = hello(NET_ROLE_RANK, 0, 2), hb = hello(NET_ROLE_RANK, 1, 2);
  memset(a, 0, sizeof *a);
  memset(b, 0, sizeof *b);
  net_handshake_start(&a->hs, s1[0], &ha, key);
  net_handshake_start(&b->hs, s2[1], &hb, key);
  uint8_t ab[256], ba[256];
  size_t ab_len = 0, ba_len = 0, ab_sent = 0, ba_sent = 0;
  for (int i = 0; i < 2000 && !(a->done && b->done) && !a->failed && !b->failed; i++) {
    step(a);
    step(b);
    ab_len += drain(s1[1], ab + ab_len, sizeof ab - ab_len);
    ba_len += drain(s2[0], ba + ba_len, sizeof ba - ba_len);
    size_t n = CORE_MIN(chunk, ab_len - ab_sent);
    if (n) write_raw(s2[0], ab + ab_sent, n);
    ab_sent += n;
    n = CORE_MIN(chunk, ba_len - ba_sent);
    if (n) write_raw(s1[1], ba + ba_sent, n);
    ba_sent += n;
  }
  memcpy(b_sent, ba, ba_len);
  for (int i = 0; i < 2; i++) {
    close(s1[i]);
    close(s2[i]);
  }
  return ba_len;
}

static void byte_at_a_time(void **state) {
  (void)state;
  side a, b;
  uint8_t rec[256];
  size_t n = tapped(&a, &b, key1, 1, rec);
  assert_true(a.done && b.done);
  assert_int_equal(n, NET_HELLO_LEN + NET_MAC_LEN);
}

static void replay_is_refused(void **state) {
  (void)state;
  side a, b;
  uint8_t rec[256];
  size_t n = tapped(&a, &b, key1, 4096, rec);
  assert_true(a.done && b.done);
  /* b's hello and MAC, replayed to a fresh handshake: the MAC covered the old nonce */
  int sv[2];
  socket_pair(sv);
  side c = {0};
  net_hello h = hello(NET_ROLE_RANK, 0, 2);
  net_handshake_start(&c.hs, sv[0], &h, key1);
  write_raw(sv[1], rec, n);
  for (int i = 0; i < 10 && !c.failed && !c.done; i++)
    step(&c);
  assert_true(c.failed);
  assert_int_equal(c.rc, TERN_ERR_AUTH);
  assert_non_null(strstr(c.err.msg, "MAC does not verify"));
  close(sv[1]);
}

static void reflection_is_refused(void **state) {
  (void)state;
  int sv[2];
  socket_pair(sv);
  side a = {0};
  net_hello h = hello(NET_ROLE_RANK, 0, 2);
  net_handshake_start(&a.hs, sv[0], &h, key1);
  assert_int_equal(net_handshake_events(&a.hs), POLLIN | POLLOUT);
  step(&a);
  assert_int_equal(net_handshake_events(&a.hs), POLLIN); /* the hello is out, none came */
  uint8_t mine[NET_HELLO_LEN];
  assert_int_equal(drain(sv[1], mine, sizeof mine), NET_HELLO_LEN);
  write_raw(sv[1], mine, sizeof mine); /* its own hello, sent back */
  step(&a);
  assert_int_equal(a.rc, TERN_ERR_AUTH);
  assert_non_null(strstr(a.err.msg, "reflected"));
  close(sv[1]);
}

static void leaves_what_follows(void **state) {
  (void)state;
  int sv[2];
  socket_pair(sv);
  side a = {0}, b = {0};
  net_hello ha = hello(NET_ROLE_RANK, 0, 2), hb = hello(NET_ROLE_RANK, 1, 2);
  net_handshake_start(&a.hs, sv[0], &ha, NULL);
  net_handshake_start(&b.hs, sv[1], &hb, NULL);
  step(&a); /* a's hello is out; its first data follows at once */
  write_raw(sv[0], "DATA", 4);
  for (int i = 0; i < 10 && !(a.done && b.done); i++) {
    step(&b);
    step(&a);
  }
  assert_true(a.done && b.done);
  char buf[8];
  assert_int_equal(net_read_all(sv[1], buf, 4, core_deadline_after(1), "a", NULL), TERN_OK);
  assert_memory_equal(buf, "DATA", 4);
  close(sv[0]);
  close(sv[1]);
}

typedef struct {
  int fd;
  net_hello theirs;
  tern_status rc;
} run_arg;

static void *run_side(void *p) {
  run_arg *r = p;
  net_hello h = hello(NET_ROLE_STORE_SERVER, -1, 8);
  r->rc = net_handshake_run(r->fd, &h, &r->theirs, key1, core_deadline_after(5), NULL);
  return NULL;
}

static void run_over_tcp(void **state) {
  (void)state;
  int lfd, port, cfd, sfd = -1;
  assert_int_equal(net_listen("127.0.0.1", 0, &lfd, &port, NULL), TERN_OK);
  assert_int_equal(net_connect("127.0.0.1", port, core_deadline_after(5), &cfd, NULL), TERN_OK);
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  assert_int_equal(poll(&p, 1, 5000), 1);
  assert_int_equal(net_accept(lfd, &sfd, NULL, 0, NULL), TERN_OK);
  run_arg server = {.fd = sfd};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, run_side, &server), 0);
  net_hello mine = hello(NET_ROLE_STORE_CLIENT, 5, 8), theirs;
  core_err err = {0};
  assert_int_equal(net_handshake_run(cfd, &mine, &theirs, key1, core_deadline_after(5), &err),
                   TERN_OK);
  pthread_join(t, NULL);
  assert_int_equal(server.rc, TERN_OK);
  assert_int_equal(server.theirs.rank, 5);
  assert_int_equal(theirs.role, NET_ROLE_STORE_SERVER);
  assert_int_equal(theirs.size, 8);
  close(cfd);
  close(sfd);
  close(lfd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hello_roundtrip),     cmocka_unit_test(hello_decode_refuses),
      cmocka_unit_test(without_key),         cmocka_unit_test(with_the_same_key),
      cmocka_unit_test(with_another_key),    cmocka_unit_test(keyed_meets_unkeyed),
      cmocka_unit_test(another_run),         cmocka_unit_test(roles_must_pair),
      cmocka_unit_test(garbage_and_silence), cmocka_unit_test(byte_at_a_time),
      cmocka_unit_test(replay_is_refused),   cmocka_unit_test(reflection_is_refused),
      cmocka_unit_test(leaves_what_follows), cmocka_unit_test(run_over_tcp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

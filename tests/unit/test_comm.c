/* test_comm.c: communicators of several ranks as threads of one process (label tsan: the
 * progress engine, abort and the waits run under ThreadSanitizer in make test).
 *
 * Threads give the engine's locking a real workout and let one test see every rank: a
 * collective over shared memory and over TCP; nonblocking requests completing while the caller
 * sleeps (the progress thread moved them); tern_comm_abort from another thread waking a rank
 * blocked on a peer that never comes; TERN_TIMEOUT naming the missing peer; strangers on a rank's
 * port during start-up (garbage, silence, a hello of another run) refused while start-up goes on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "comm/store.h"
#include "net/net.h"
#include "tern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct rank_thread {
  pthread_t t;
  int rank, size;
  const char *store;
  tern_comm *comm;
  tern_status init_rc, rc;
  float result[64];
  _Atomic int *hold; /* when set, init waits until *hold is 0 (the test has done its part) */
  bool skip_allreduce;
} rank_thread;

static store_server *server;
static char store_addr[128];
static const uint8_t test_run[16] = {9};

/* The store, keyed when the configuration has a key (TERN_KEY), like `tern run` does. */
static void start_store(int size) {
  const core_config *cfg = core_config_get();
  assert_int_equal(store_server_start(&server, "127.0.0.1", 0, size, test_run,
                                      cfg->have_key ? cfg->key : NULL, NULL),
                   TERN_OK);
  snprintf(store_addr, sizeof store_addr, "%s", store_server_addr(server));
}

static void stop_store(void) {
  store_server_stop(server);
  server = NULL;
}

static void set_env(const char *transport, const char *timeout) {
  setenv("TERN_TRANSPORT", transport, 1);
  setenv("TERN_TIMEOUT", timeout, 1);
  core_config_reload();
}

static void *rank_main(void *arg) {
  rank_thread *rt = arg;
  while (rt->hold && atomic_load(rt->hold))
    usleep(1000);
  rt->init_rc = tern_comm_init(&rt->comm, rt->rank, rt->size, rt->store);
  if (rt->init_rc != TERN_OK || rt->skip_allreduce) return NULL;
  float mine[64];
  for (int i = 0; i < 64; i++)
    mine[i] = (float)(rt->rank + i);
  rt->rc = tern_allreduce(rt->comm, mine, rt->result, 64, TERN_F32, TERN_SUM);
  return NULL;
}

static void run_ranks(rank_thread *rts, int n) {
  for (int i = 0; i < n; i++)
    pthread_create(&rts[i].t, NULL, rank_main, &rts[i]);
  for (int i = 0; i < n; i++)
    pthread_join(rts[i].t, NULL);
}

static void check_sums(rank_thread *rts, int n) {
  for (int r = 0; r < n; r++) {
    if (rts[r].init_rc != TERN_OK || rts[r].rc != TERN_OK)
      fail_msg("rank %d: init %d rc %d: %s", r, rts[r].init_rc, rts[r].rc,
               rts[r].comm ? tern_comm_last_error(rts[r].comm) : tern_comm_last_error(NULL));
    for (int i = 0; i < 64; i++)
      assert_true(rts[r].result[i] == (float)(n * (n - 1) / 2 + n * i));
  }
}

static void destroy_all(rank_thread *rts, int n) {
  for (int r = 0; r < n; r++)
    tern_comm_destroy(rts[r].comm);
}

static void allreduce_each_transport(void **state) {
  (void)state;
  const char *transports[] = {"shm", "tcp"};
  for (int t = 0; t < 2; t++) {
    set_env(transports[t], "30");
    start_store(3);
    rank_thread rts[3] = {{.rank = 0, .size = 3, .store = store_addr},
                          {.rank = 1, .size = 3, .store = store_addr},
                          {.rank = 2, .size = 3, .store = store_addr}};
    run_ranks(rts, 3);
    check_sums(rts, 3);
    destroy_all(rts, 3);
    stop_store();
  }
}

/* Both ranks issue nonblocking allreduces and then only sleep: the progress thread must have
 * finished them by the time they look. */
static void nonblocking_advances_alone(void **state) {
  (void)state;
  set_env("shm", "30");
  start_store(2);
  rank_thread rts[2] = {{.rank = 0, .size = 2, .store = store_addr, .skip_allreduce = true},
                        {.rank = 1, .size = 2, .store = store_addr, .skip_allreduce = true}};
  run_ranks(rts, 2);
  float buf[2][4][256];
  tern_request *req[2][4];
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 4; k++) {
      for (int i = 0; i < 256; i++)
        buf[r][k][i] = (float)(r + k);
      assert_int_equal(
          tern_iallreduce(rts[r].comm, buf[r][k], buf[r][k], 256, TERN_F32, TERN_SUM, &req[r][k]),
          TERN_OK);
    }
  usleep(300000);
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 4; k++) {
      int done = 0;
      assert_int_equal(tern_test(req[r][k], &done), TERN_OK);
      if (!done) fail_msg("rank %d request %d not done after 300 ms of not waiting", r, k);
      assert_true(buf[r][k][7] == (float)(1 + 2 * k));
    }
  destroy_all(rts, 2);
  stop_store();
}

typedef struct aborter {
  tern_comm *comm;
  int after_ms;
} aborter;

static void *abort_later(void *arg) {
  aborter *a = arg;
  usleep((useconds_t)a->after_ms * 1000);
  tern_comm_abort(a->comm);
  return NULL;
}

/* Rank 0 waits in an allreduce that rank 1 never joins; another thread aborts rank 0. */
static void abort_wakes_the_waiter(void **state) {
  (void)state;
  const char *transports[] = {"shm", "tcp"};
  for (int t = 0; t < 2; t++) {
    set_env(transports[t], "60");
    start_store(2);
    rank_thread rts[2] = {{.rank = 0, .size = 2, .store = store_addr, .skip_allreduce = true},
                          {.rank = 1, .size = 2, .store = store_addr, .skip_allreduce = true}};
    run_ranks(rts, 2);
    aborter a = {rts[0].comm, 200};
    pthread_t t2;
    pthread_create(&t2, NULL, abort_later, &a);
    float x[1024] = {0};
    uint64_t t0 = core_now_ns();
    tern_status rc = tern_allreduce(rts[0].comm, x, x, 1024, TERN_F32, TERN_SUM);
    double secs = (double)(core_now_ns() - t0) * 1e-9;
    pthread_join(t2, NULL);
    assert_int_equal(rc, TERN_ERR_ABORTED);
    assert_true(secs < 5);
    /* later calls fail at once; the peer may still finish the allreduce whose bytes rank 0
     * had already handed over, but the next call that needs rank 0 fails, told by its
     * connection or its segment, instead of hanging */
    assert_int_equal(tern_barrier(rts[0].comm), TERN_ERR_ABORTED);
    tern_allreduce(rts[1].comm, x, x, 1024, TERN_F32, TERN_SUM);
    rc = tern_barrier(rts[1].comm);
    if (rc != TERN_ERR_PEER_LOST && rc != TERN_ERR_ABORTED)
      fail_msg("%s: peer of an aborted rank got %s: %s", transports[t], tern_status_str(rc),
               tern_comm_last_error(rts[1].comm));
    destroy_all(rts, 2);
    stop_store();
  }
}

/* A peer that never comes: TERN_TIMEOUT, with the peer named. */
static void timeout_names_the_peer(void **state) {
  (void)state;
  set_env("tcp", "1");
  start_store(2);
  rank_thread rts[2] = {{.rank = 0, .size = 2, .store = store_addr, .skip_allreduce = true},
                        {.rank = 1, .size = 2, .store = store_addr, .skip_allreduce = true}};
  run_ranks(rts, 2);
  float x[16] = {0};
  uint64_t t0 = core_now_ns();
  tern_status rc = tern_allreduce(rts[0].comm, x, x, 16, TERN_F32, TERN_SUM);
  double secs = (double)(core_now_ns() - t0) * 1e-9;
  assert_int_equal(rc, TERN_ERR_TIMEOUT);
  assert_true(secs >= 0.9 && secs < 3);
  const char *msg = tern_comm_last_error(rts[0].comm);
  if (strstr(msg, "rank 1") == NULL || strstr(msg, "allreduce") == NULL)
    fail_msg("message: %s", msg);
  destroy_all(rts, 2);
  stop_store();
}

/* Reads rank 0's published port from the store, as a stranger on the network would find it. */
static int rank0_port(void) {
  store_client *c;
  const core_config *cfg = core_config_get();
  assert_int_equal(store_connect(&c, store_addr, -1, 0, cfg->have_key ? cfg->key : NULL,
                                 core_deadline_after(10), NULL),
                   TERN_OK);
  void *val;
  size_t len;
  assert_int_equal(store_get(c, "c1/rank/0", &val, &len, core_deadline_after(10), NULL), TERN_OK);
  char text[256] = {0};
  memcpy(text, val, len < 255 ? len : 255);
  free(val);
  store_close(c, true);
  char ip[64], host[64];
  int port = 0, pid;
  assert_int_equal(sscanf(text, "v1 %63s %d %63s %d", ip, &port, host, &pid), 4);
  return port;
}

static void strangers_at_start_up(void **state) {
  (void)state;
  const char *transports[] = {"tcp", "shm"};
  for (int t = 0; t < 2; t++) {
    set_env(transports[t], "30");
    start_store(2);
    _Atomic int hold = 1; /* rank 1 joins once the strangers have had their go */
    rank_thread rts[2] = {{.rank = 0, .size = 2, .store = store_addr},
                          {.rank = 1, .size = 2, .store = store_addr, .hold = &hold}};
    pthread_create(&rts[0].t, NULL, rank_main, &rts[0]);
    pthread_create(&rts[1].t, NULL, rank_main, &rts[1]);
    int port = rank0_port();
    int fds[3];
    for (int k = 0; k < 3; k++)
      assert_int_equal(net_connect("127.0.0.1", port, core_deadline_after(5), &fds[k], NULL),
                       TERN_OK);
    assert_int_equal(write(fds[0], "GET / HTTP/1.0\r\n\r\n", 18), 18); /* garbage */
    /* fds[1] says nothing at all */
    net_hello h = {.role = NET_ROLE_RANK, .rank = 1, .size = 2, .stream = 0, .nstreams = 4};
    memset(h.run_id, 0x77, 16); /* a hello from another run */
    uint8_t wire[NET_HELLO_LEN];
    net_hello_encode(&h, wire);
    assert_int_equal(write(fds[2], wire, sizeof wire), (ssize_t)sizeof wire);
    usleep(200000); /* let rank 0 read them while it still waits for rank 1 */
    atomic_store(&hold, 0);
    pthread_join(rts[0].t, NULL);
    pthread_join(rts[1].t, NULL);
    check_sums(rts, 2);
    for (int k = 0; k < 3; k++)
      close(fds[k]);
    destroy_all(rts, 2);
    stop_store();
  }
}

/* A stranger that knows the run id (but not the key, or a wrong one) tries a rank's port. */
typedef struct stranger {
  pthread_t t;
  int port;
  const uint8_t *key;
  tern_status rc;
  core_err err;
} stranger;

static void *stranger_main(void *arg) {
  stranger *s = arg;
  int fd;
  s->rc = net_connect("127.0.0.1", s->port, core_deadline_after(5), &fd, &s->err);
  if (s->rc != TERN_OK) return NULL;
  net_hello h = {.role = NET_ROLE_RANK, .rank = 1, .size = 2, .stream = 0, .nstreams = 4};
  memcpy(h.run_id, test_run, 16);
  net_hello theirs;
  s->rc = net_handshake_run(fd, &h, &theirs, s->key, core_deadline_after(10), &s->err);
  close(fd);
  return NULL;
}

/* With TERN_KEY, a rank without the key is refused by the store, and strangers that know the
 * run id but not the key are refused at a rank's port, while the job carries on. */
static void key_refuses_the_keyless(void **state) {
  (void)state;
  setenv("TERN_KEY", "the right key", 1);
  set_env("tcp", "20");
  start_store(2);
  uint8_t wrong_key[32];
  memset(wrong_key, 0x42, sizeof wrong_key);
  _Atomic int hold = 1;
  rank_thread rts[2] = {{.rank = 0, .size = 2, .store = store_addr},
                        {.rank = 1, .size = 2, .store = store_addr, .hold = &hold}};
  pthread_create(&rts[0].t, NULL, rank_main, &rts[0]);
  pthread_create(&rts[1].t, NULL, rank_main, &rts[1]);
  int port = rank0_port();
  stranger st[2] = {{.port = port, .key = NULL}, {.port = port, .key = wrong_key}};
  for (int k = 0; k < 2; k++)
    pthread_create(&st[k].t, NULL, stranger_main, &st[k]);
  usleep(100000); /* both in rank 0's backlog before rank 1 lets start-up go on */
  atomic_store(&hold, 0);
  for (int k = 0; k < 2; k++) {
    pthread_join(st[k].t, NULL);
    if (st[k].rc != TERN_ERR_AUTH)
      fail_msg("a stranger %s got %d: %s", k ? "with a wrong key" : "without a key", st[k].rc,
               st[k].err.msg);
  }
  pthread_join(rts[0].t, NULL);
  pthread_join(rts[1].t, NULL);
  check_sums(rts, 2);
  destroy_all(rts, 2);
  stop_store();
  /* a rank whose configuration has no key cannot even join (the configuration is reloaded only
   * while no other thread runs) */
  uint8_t key[32];
  memcpy(key, core_config_get()->key, sizeof key);
  unsetenv("TERN_KEY");
  core_config_reload();
  assert_int_equal(store_server_start(&server, "127.0.0.1", 0, 2, test_run, key, NULL), TERN_OK);
  snprintf(store_addr, sizeof store_addr, "%s", store_server_addr(server));
  tern_comm *c = NULL;
  assert_int_equal(tern_comm_init(&c, 1, 2, store_addr), TERN_ERR_AUTH);
  assert_null(c);
  assert_non_null(strstr(tern_comm_last_error(NULL), "key"));
  stop_store();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(allreduce_each_transport), cmocka_unit_test(nonblocking_advances_alone),
      cmocka_unit_test(abort_wakes_the_waiter),   cmocka_unit_test(timeout_names_the_peer),
      cmocka_unit_test(strangers_at_start_up),    cmocka_unit_test(key_refuses_the_keyless),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_exec.c: the executor's counters (the communicator's bytes_sent and bytes_received, and
 * coll_state_last_algo), 4 ranks as threads of one process
 * (label tsan: the progress thread writes them for nonblocking calls, the caller reads them).
 *
 * Every rank runs, with TERN_ALGO=ring, a blocking allreduce, a nonblocking broadcast and a
 * barrier, then checks its counters against its own schedules built independently by
 * coll_build: bytes sent are the SEND steps' payload, bytes received the RECV and RECV_REDUCE
 * steps'; the algorithm each kind ran last is recorded, AUTO for a kind never run. The public
 * tern_comm_traffic and tern_comm_last_algorithm say the same. Over TCP and shared memory alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coll/coll.h"
#include "comm/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4
#define AR_COUNT 1000 /* not a multiple of N: uneven ring blocks */
#define BC_COUNT 300

typedef struct counters {
  uint64_t bytes_sent, bytes_received;
  coll_algo last_algo[COLL_NUM_KINDS];
  /* the same through the public calls, tern_comm_traffic and tern_comm_last_algorithm */
  uint64_t traffic_sent, traffic_received;
  const char *allreduce, *broadcast, *allgather, *no_such;
} counters;

typedef struct rank_thread {
  pthread_t t;
  int rank;
  const char *store;
  tern_status rc;
  char what[256];
  counters got;
} rank_thread;

/* The payload rank's schedule of (kind, count, root) sends and receives, in bytes of f32. */
static void expected(int rank, coll_kind kind, size_t count, int root, uint64_t *sent,
                     uint64_t *recvd) {
  coll_sched s;
  coll_sched_init(&s);
  coll_args a = {.kind = kind, .rank = rank, .size = N, .root = root, .count = count};
  assert_int_equal(coll_build(&s, &a, COLL_ALGO_RING), TERN_OK);
  for (size_t i = 0; i < s.len; i++) {
    uint64_t b = s.steps[i].count * sizeof(float);
    if (s.steps[i].kind == COLL_STEP_SEND) *sent += b;
    if (s.steps[i].kind == COLL_STEP_RECV || s.steps[i].kind == COLL_STEP_RECV_REDUCE) *recvd += b;
  }
  coll_sched_free(&s);
}

static tern_status run_ops(tern_comm *c, int rank) {
  float ar[AR_COUNT], bc[BC_COUNT];
  for (int i = 0; i < AR_COUNT; i++)
    ar[i] = (float)(rank + i);
  for (int i = 0; i < BC_COUNT; i++)
    bc[i] = (float)i;
  tern_status rc = tern_allreduce(c, ar, ar, AR_COUNT, TERN_F32, TERN_SUM);
  tern_request *req;
  if (rc == TERN_OK) rc = tern_ibroadcast(c, bc, bc, BC_COUNT, TERN_F32, 1, &req);
  if (rc == TERN_OK) rc = tern_wait(req);
  return rc;
}

static void *rank_main(void *arg) {
  rank_thread *rt = arg;
  tern_comm *c;
  rt->rc = tern_comm_init(&c, rt->rank, N, rt->store);
  if (rt->rc != TERN_OK) {
    snprintf(rt->what, sizeof rt->what, "init: %s", tern_comm_last_error(NULL));
    return NULL;
  }
  rt->rc = run_ops(c, rt->rank);
  if (rt->rc != TERN_OK) snprintf(rt->what, sizeof rt->what, "%s", tern_comm_last_error(c));
  rt->got.bytes_sent = c->bytes_sent;
  rt->got.bytes_received = c->bytes_received;
  for (int k = 0; k < COLL_NUM_KINDS; k++)
    rt->got.last_algo[k] = coll_state_last_algo(c, (coll_kind)k);
  if (tern_comm_traffic(c, &rt->got.traffic_sent, &rt->got.traffic_received) != TERN_OK)
    rt->got.traffic_sent = UINT64_MAX;
  rt->got.allreduce = tern_comm_last_algorithm(c, "allreduce"); /* static names */
  rt->got.broadcast = tern_comm_last_algorithm(c, "broadcast");
  rt->got.allgather = tern_comm_last_algorithm(c, "allgather");
  rt->got.no_such = tern_comm_last_algorithm(c, "allsorts");
  tern_comm_destroy(c);
  return NULL;
}

static void counters_match_the_schedules(const char *transport) {
  setenv("TERN_TRANSPORT", transport, 1);
  setenv("TERN_ALGO", "ring", 1);
  core_config_reload();
  store_server *server;
  uint8_t run[16] = {7};
  assert_int_equal(store_server_start(&server, "127.0.0.1", 0, N, run, NULL, NULL), TERN_OK);
  rank_thread rts[N];
  for (int r = 0; r < N; r++) {
    rts[r] = (rank_thread){.rank = r, .store = store_server_addr(server)};
    pthread_create(&rts[r].t, NULL, rank_main, &rts[r]);
  }
  for (int r = 0; r < N; r++)
    pthread_join(rts[r].t, NULL);
  store_server_stop(server);
  uint64_t all_sent = 0, all_recvd = 0;
  for (int r = 0; r < N; r++) {
    if (rts[r].rc != TERN_OK) fail_msg("rank %d over %s: %s", r, transport, rts[r].what);
    uint64_t sent = 0, recvd = 0;
    expected(r, COLL_ALLREDUCE, AR_COUNT, 0, &sent, &recvd);
    expected(r, COLL_BROADCAST, BC_COUNT, 1, &sent, &recvd);
    assert_true(sent > 0 && recvd > 0);
    assert_int_equal(rts[r].got.bytes_sent, sent);
    assert_int_equal(rts[r].got.bytes_received, recvd);
    assert_int_equal(rts[r].got.last_algo[COLL_ALLREDUCE], COLL_ALGO_RING);
    assert_int_equal(rts[r].got.last_algo[COLL_BROADCAST], COLL_ALGO_RING);
    assert_int_equal(rts[r].got.last_algo[COLL_ALLGATHER], COLL_ALGO_AUTO);
    assert_int_equal(rts[r].got.traffic_sent, sent);
    assert_int_equal(rts[r].got.traffic_received, recvd);
    assert_string_equal(rts[r].got.allreduce, "ring");
    assert_string_equal(rts[r].got.broadcast, "ring");
    assert_string_equal(rts[r].got.allgather, "");
    assert_null(rts[r].got.no_such);
    all_sent += rts[r].got.bytes_sent;
    all_recvd += rts[r].got.bytes_received;
  }
  assert_int_equal(all_sent, all_recvd); /* every byte sent was received once */
  unsetenv("TERN_ALGO");
  core_config_reload();
}

static void counters_over_shm(void **state) {
  (void)state;
  counters_match_the_schedules("shm");
}

static void counters_over_tcp(void **state) {
  (void)state;
  counters_match_the_schedules("tcp");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counters_over_shm),
      cmocka_unit_test(counters_over_tcp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

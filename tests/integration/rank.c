/* rank.c: tern_test_rank, the small program the integration tests start as every rank.
 *
 *   tern_test_rank meet            read the launch environment, serve the store if this rank
 *                                  should, meet every other rank through it, leave cleanly
 *   tern_test_rank fail R CODE     meet; rank R exits CODE; the others wait for a key that never
 *                                  comes and must be told of R's loss by the store
 *   tern_test_rank kill R          meet; rank R SIGKILLs itself; the others wait on the store's
 *                                  socket for the notice and check it names R
 *   tern_test_rank hang R CODE     meet; rank R exits CODE; the others sleep, deaf to the store,
 *                                  so only `tern run` can end them
 *   tern_test_rank deaf R CODE     as hang, and the others also ignore SIGTERM: only SIGKILL ends
 *                                  them
 *   tern_test_rank signal          meet; wait for SIGTERM or SIGINT, say so, leave cleanly
 *   tern_test_rank freeport        print a port nobody listens on
 * Every wait has a deadline (WAIT_S); each rank prints one line saying what it saw.
 */
#include "comm/env.h"
#include "comm/store.h"
#include "net/net.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 30.0

static comm_env env;
static store_server *served;
static store_client *store;

static void die(const char *what, const core_err *err) {
  fprintf(stderr, "rank %d: %s: %s\n", env.rank, what, err ? err->msg : "");
  exit(90);
}

/* Serve the store if this rank should, connect, and wait until every rank has. */
static void meet(void) {
  core_err err = {0};
  if (comm_env_read(&env, &err) != TERN_OK) die("comm_env_read", &err);
  const core_config *cfg = core_config_get();
  const uint8_t *key = cfg->have_key ? cfg->key : NULL;
  if (env.serve_store) {
    char host[NET_HOST_LEN];
    int port;
    static const uint8_t run_id[16] = {1};
    if (net_parse_addr(env.store, host, sizeof host, &port, false, &err) != TERN_OK ||
        store_server_start(&served, "", port, env.size, run_id, key, &err) != TERN_OK)
      die("serving the store", &err);
  }
  if (store_connect(&store, env.store, env.rank, env.size, key, core_deadline_after(WAIT_S),
                    &err) != TERN_OK)
    die("store_connect", &err);
  char k[32], v[32];
  snprintf(k, sizeof k, "addr/%d", env.rank);
  snprintf(v, sizeof v, "pid %d", (int)getpid());
  int64_t joined;
  if (store_set(store, k, v, strlen(v), &err) != TERN_OK ||
      store_add(store, "joined", 1, &joined, &err) != TERN_OK)
    die("store_set/add", &err);
  if (joined == env.size && store_set(store, "go", "1", 1, &err) != TERN_OK) die("go", &err);
  void *val;
  size_t len;
  if (store_get(store, "go", &val, &len, core_deadline_after(WAIT_S), &err) != TERN_OK)
    die("waiting for every rank", &err);
  free(val);
  for (int r = 0; r < env.size; r++) {
    snprintf(k, sizeof k, "addr/%d", r);
    if (store_get(store, k, &val, &len, core_deadline_after(WAIT_S), &err) != TERN_OK)
      die("reading another rank's key", &err);
    free(val);
  }
}

/* The ranks but `who` say they are past meet(); `who` waits for that before it fails, so that
 * its failure lands on ranks that are waiting for it, not still meeting. */
static void all_past_meet(int who) {
  core_err err = {0};
  if (env.rank != who) {
    int64_t past;
    if (store_add(store, "past", 1, &past, &err) != TERN_OK) die("past", &err);
    if (past == env.size - 1 && store_set(store, "all-past", "1", 1, &err) != TERN_OK)
      die("all-past", &err);
    return;
  }
  void *val;
  size_t len;
  if (env.size > 1 &&
      store_get(store, "all-past", &val, &len, core_deadline_after(WAIT_S), &err) != TERN_OK)
    die("waiting for the others", &err);
  if (env.size > 1) free(val);
}

static int leave(int code) {
  store_close(store, true);
  if (served) {
    core_err err = {0};
    if (store_server_wait_all_left(served, WAIT_S, &err) != TERN_OK) die("waiting out", &err);
    store_server_stop(served);
  }
  return code;
}

/* Blocks on a key nobody sets: only the store's notice of a lost rank can end it early. */
static int told_by_get(void) {
  void *val;
  size_t len;
  core_err err = {0};
  tern_status rc = store_get(store, "never", &val, &len, core_deadline_after(WAIT_S), &err);
  printf("rank %d told: %s: %s\n", env.rank, tern_status_str(rc), err.msg);
  fflush(stdout);
  return leave(rc == TERN_ERR_PEER_LOST ? 0 : 91);
}

/* Waits on the store's socket, as a progress engine would, then asks store_check. */
static int told_by_check(int expect) {
  struct pollfd p = {.fd = store_fd(store), .events = POLLIN};
  if (poll(&p, 1, (int)(WAIT_S * 1000)) != 1) return leave(92);
  int lost;
  core_err err = {0};
  tern_status rc = store_check(store, &lost, &err);
  printf("rank %d told: lost rank %d: %s\n", env.rank, lost, err.msg);
  fflush(stdout);
  return leave(rc == TERN_ERR_PEER_LOST && lost == expect ? 0 : 93);
}

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) {
  got_signal = sig;
}

static int wait_for_signal(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("rank %d ready\n", env.rank);
  fflush(stdout);
  uint64_t deadline = core_deadline_after(WAIT_S);
  while (!got_signal && core_now_ns() < deadline)
    poll(NULL, 0, 10);
  if (!got_signal) return leave(94);
  printf("rank %d got %s\n", env.rank, got_signal == SIGTERM ? "SIGTERM" : "SIGINT");
  fflush(stdout);
  return leave(0);
}

static int sleep_deaf(bool ignore_term) {
  if (ignore_term) signal(SIGTERM, SIG_IGN);
  printf("rank %d sleeping\n", env.rank);
  fflush(stdout);
  struct timespec ts = {(time_t)WAIT_S, 0};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return leave(95);
}

static int free_port(void) {
  int fd, port;
  if (net_listen("127.0.0.1", 0, &fd, &port, NULL) != TERN_OK) return 96;
  close(fd);
  printf("%d\n", port);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "freeport") == 0) return free_port();
  int who = argc > 2 ? atoi(argv[2]) : -1, code = argc > 3 ? atoi(argv[3]) : 0;
  meet();
  if (strcmp(mode, "meet") == 0) {
    printf("rank %d of %d met all (%s)\n", env.rank, env.size, env.source);
    return leave(0);
  }
  if (strcmp(mode, "signal") == 0) return wait_for_signal();
  all_past_meet(who);
  if (env.rank == who && strcmp(mode, "kill") == 0) raise(SIGKILL);
  if (env.rank == who) _exit(code); /* as a crashed rank: no goodbye, no cleanup */
  if (strcmp(mode, "fail") == 0) return told_by_get();
  if (strcmp(mode, "kill") == 0) return told_by_check(who);
  if (strcmp(mode, "hang") == 0 || strcmp(mode, "deaf") == 0)
    return sleep_deaf(strcmp(mode, "deaf") == 0);
  fprintf(stderr, "tern_test_rank: no mode '%s'\n", mode);
  return 2;
}

/* store.c: `tern store --listen HOST:PORT -n N`, the rendezvous store on its own.
 *
 * Ranks started by something other than `tern run` on several hosts (ssh, srun, mpirun, a
 * scheduler) meet through a store that one of them, or this command, serves; they find it in
 * TERN_STORE=HOST:PORT. It serves the job of N ranks (TERN_KEY or TERN_KEY_FILE, when set,
 * keys it as it keys the ranks) until every rank has connected and left, or a rank was lost and
 * every other has left, and exits 0; a signal ends it sooner. `tern run --nnodes` serves the
 * same store from its node 0 (run.c).
 */
#include "tern/cmd.h"

#include "comm/store.h"
#include "core/core.h"
#include "net/net.h"

#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#define TURN_MS 200 /* how often the wait looks at the signal flag */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) {
  stop_signal = sig;
}

static void usage(FILE *out) {
  fprintf(out, "usage: tern store --listen HOST:PORT -n N\n\n"
               "Serves the rendezvous store of a job of N ranks at HOST:PORT (HOST 0.0.0.0: every\n"
               "interface) until every rank has connected and left, or one was lost and the\n"
               "others have left. Ranks find it in TERN_STORE=HOST:PORT (a host name or address\n"
               "they can reach). Keyed by TERN_KEY or TERN_KEY_FILE when set.\n");
}

int cmd_store(int argc, char **argv) {
  const char *listen = NULL;
  long n = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
      listen = argv[++i];
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      if (!core_parse_int(argv[++i], 1, NET_MAX_RANKS, &n))
        return cmd_usage_error("store", "-n '%s': want a number of ranks from 1 to %d", argv[i],
                               NET_MAX_RANKS);
    } else {
      return cmd_usage_error("store", "unknown option '%s' (tern store --help)", argv[i]);
    }
  }
  if (listen == NULL) return cmd_usage_error("store", "--listen HOST:PORT is missing");
  if (n == 0) return cmd_usage_error("store", "-n N (the job's ranks) is missing");
  char host[NET_HOST_LEN];
  int port;
  core_err err = {0};
  if (net_parse_addr(listen, host, sizeof host, &port, false, &err) != TERN_OK)
    return cmd_usage_error("store", "--listen: %s", err.msg);
  const core_config *cfg = core_config_get();
  if (cfg->config_error[0]) return cmd_usage_error("store", "%s", cfg->config_error);
  uint8_t run_id[16];
  randombytes_buf(run_id, sizeof run_id); /* core_config_get() initialised libsodium */
  signal(SIGINT, on_stop);
  signal(SIGTERM, on_stop);
  store_server *s;
  if (store_server_start(&s, host, port, (int)n, run_id, cfg->have_key ? cfg->key : NULL, &err) !=
      TERN_OK) {
    fprintf(stderr, "tern store: %s\n", err.msg);
    return 1;
  }
  fprintf(stderr, "tern store: serving %ld ranks at %s\n", n, listen);
  while (!stop_signal && !store_server_job_over(s, TURN_MS)) {
  }
  store_server_stop(s);
  if (stop_signal) return 128 + stop_signal;
  fprintf(stderr, "tern store: the job is over\n");
  return 0;
}

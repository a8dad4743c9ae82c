/* wan_store.c: tern's rendezvous store served on its own, for ranks started by hand with
 * TERN_RANK, TERN_WORLD_SIZE and TERN_STORE (as the WAN tests start one rank per namespace).
 *
 *   wan_store N SECONDS    serve a job of N ranks on every interface, at a port the kernel
 *                          picks (printed to stdout), until SIGTERM or SIGINT or SECONDS pass
 *
 * It is the store `tern run` serves, without the launcher: a rank that vanishes is told to the
 * others by the store itself, from its connection closing without a goodbye. TERN_KEY and
 * TERN_KEY_FILE are honoured as by the ranks.
 */
#include "comm/store.h"
#include "core/core.h"

#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  long n, seconds;
  if (argc != 3 || !core_parse_int(argv[1], 1, 1 << 20, &n) ||
      !core_parse_int(argv[2], 1, 86400, &seconds)) {
    fprintf(stderr, "usage: wan_store N SECONDS\n");
    return 2;
  }
  const core_config *cfg = core_config_get(); /* reads TERN_KEY; initialises libsodium */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL); /* before the server's thread starts: it inherits it */
  uint8_t run_id[16];
  randombytes_buf(run_id, sizeof run_id);
  store_server *s = NULL;
  core_err err = {0};
  if (store_server_start(&s, "", 0, (int)n, run_id, cfg->have_key ? cfg->key : NULL, &err) !=
      TERN_OK) {
    fprintf(stderr, "wan_store: %s\n", err.msg);
    return 1;
  }
  const char *addr = store_server_addr(s), *colon = strrchr(addr, ':');
  printf("%s\n", colon ? colon + 1 : addr);
  fflush(stdout);
  struct timespec ts = {.tv_sec = seconds};
  int sig = sigtimedwait(&set, NULL, &ts);
  store_server_stop(s);
  return sig < 0 ? 1 : 0; /* the deadline passed: whoever started us forgot to stop us */
}

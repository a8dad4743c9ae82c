/* observe.c: a DHT node of a run that reads its records and takes no part in it: no listener,
 * no hello, no round (`tern swarm status`). A hello would count as a peer arriving in the
 * matching of the peers it reaches (match.c), so the node only pings its bootstrap addresses,
 * which is enough for OpenDHT to route its gets through them.
 */
#include "swarm/swarm.h"

#include <sodium.h>
#include <stdio.h>

static tern_status start(tern_swarm *sw, const char *run_id, const char *key,
                         const char *const *bootstrap, int nbootstrap, bool insecure,
                         core_err *err) {
  if (nbootstrap < 1 || nbootstrap > TERN_SWARM_MAX_BOOTSTRAP)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "give 1 to %d addresses to join through",
                        TERN_SWARM_MAX_BOOTSTRAP);
  for (int i = 0; i < nbootstrap; i++)
    snprintf(sw->bootstrap[sw->nbootstrap++], sizeof sw->bootstrap[0], "%s", bootstrap[i]);
  swarm_identity(sw, run_id, key);
  tern_status rc =
      swarm_check_exposure("127.0.0.1", (const char(*)[NET_HOST_LEN + 8]) sw->bootstrap,
                           sw->nbootstrap, sw->keyed, insecure, err);
  /* Any free UDP port will do: nobody dials an observer. */
  for (int attempt = 0; rc == TERN_OK; attempt++) {
    int port = 20000 + (int)randombytes_uniform(40000);
    rc = swarm_dht_start(sw, port, err);
    if (rc == TERN_OK || attempt == 20) break;
    core_err_clear(err);
    swarm_dht_stop(sw);
    rc = TERN_OK;
  }
  for (int i = 0; rc == TERN_OK && i < sw->nbootstrap; i++) {
    char host[NET_HOST_LEN];
    int port;
    rc = net_parse_addr(sw->bootstrap[i], host, sizeof host, &port, false, err);
    if (rc == TERN_OK) swarm_dht_ping(sw, host, port);
  }
  return rc;
}

tern_status swarm_observe(tern_swarm **out, const char *run_id, const char *key,
                          const char *const *bootstrap, int nbootstrap, bool insecure,
                          core_err *err) {
  *out = NULL;
  if (sodium_init() < 0) return core_err_set(err, TERN_ERR_SYSTEM, "libsodium");
  if (!run_id || !*run_id) return core_err_set(err, TERN_ERR_INVALID_ARG, "no run id");
  tern_swarm *sw = swarm_new();
  if (!sw) return core_err_set(err, TERN_ERR_NOMEM, "an observer of the swarm");
  tern_status rc = start(sw, run_id, key, bootstrap, nbootstrap, insecure, err);
  if (rc != TERN_OK) {
    tern_swarm_leave(sw);
    return rc;
  }
  *out = sw;
  return TERN_OK;
}

/* dht.c: the swarm's DHT: an OpenDHT node through its C API (opendht/opendht_c.h).
 *
 * The node runs in OpenDHT's own threads. It is seeded only from the bootstrap addresses the
 * user gives, with peer discovery (multicast) and publishing off, and a network id derived from
 * the run id (from the key, when there is one: secure.c), so that it never talks to a public
 * bootstrap node and nodes of other runs, or without the key, ignore it. With a key, values are
 * stored at a location derived from the key too (swarm_dht_location). Gets are made synchronous
 * with a deadline: the callbacks fill a context that the waiter and OpenDHT share by reference
 * count, so a late callback after a timeout touches only memory that is still alive.
 */
#include "swarm/swarm.h"

#include <netdb.h>
#include <opendht/opendht_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GET_MAX_VALUES 256

tern_status swarm_dht_start(tern_swarm *sw, int port, core_err *err) {
  dht_runner_config cfg;
  dht_runner_config_default(&cfg);
  cfg.dht_config.node_config.network = swarm_dht_network(sw);
  cfg.dht_config.node_config.maintain_storage = false;
  cfg.threaded = true;
  cfg.peer_discovery = false;
  cfg.peer_publish = false;
  cfg.log = false;
  sw->dht = dht_runner_new();
  if (!sw->dht) return core_err_set(err, TERN_ERR_NOMEM, "cannot create the DHT node");
  int rc = dht_runner_run_config(sw->dht, (in_port_t)port, &cfg);
  if (rc != 0)
    return core_err_set(err, TERN_ERR_SYSTEM, "the DHT node cannot bind UDP port %d (error %d)",
                        port, rc);
  /* OpenDHT runs on whichever of IPv4 and IPv6 it could bind: a UDP port taken on IPv4 by some
   * other program leaves it on IPv6 alone, unreachable at 127.0.0.1:port. */
  if (dht_runner_get_bound_port(sw->dht, AF_INET) != port)
    return core_err_set(err, TERN_ERR_SYSTEM,
                        "UDP port %d (IPv4) is taken: the DHT node cannot "
                        "use the peer's port",
                        port);
  for (int i = 0; i < sw->nbootstrap; i++) {
    char host[NET_HOST_LEN], service[8];
    int bport;
    if (net_parse_addr(sw->bootstrap[i], host, sizeof host, &bport, false, err) != TERN_OK)
      return err->status;
    snprintf(service, sizeof service, "%d", bport);
    dht_runner_bootstrap(sw->dht, host, service);
  }
  return TERN_OK;
}

/* A ping (unlike dht_runner_bootstrap, which only adds to a list the node works through while
 * it is disconnected) goes out at once from OpenDHT's priority queue; its answer makes the
 * other node a good one, and this node "connected", so that its gets and puts run. */
void swarm_dht_ping(tern_swarm *sw, const char *host, int port) {
  char service[8];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_DGRAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV},
                  *res = NULL;
  if (getaddrinfo(host, service, &hints, &res) != 0 || !res) {
    CORE_INFO("swarm: cannot ping %s:%d: not a numeric address", host, port);
    return;
  }
  dht_runner_ping(sw->dht, res->ai_addr, res->ai_addrlen, NULL, NULL);
  freeaddrinfo(res);
}

void swarm_dht_put(tern_swarm *sw, const uint8_t gkey[32], const uint8_t *data, size_t len) {
  uint8_t at[32];
  swarm_dht_location(sw, gkey, at);
  dht_infohash h;
  dht_infohash_get(&h, at, 32);
  dht_value *v = dht_value_new(data, len);
  if (!v) return;
  dht_runner_put(sw->dht, &h, v, NULL, NULL, false);
  dht_value_unref(v);
}

typedef struct get_ctx {
  struct get_ctx *prev, *next; /* in the peer's list of gets OpenDHT still holds */
  tern_swarm *sw;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  bool done;
  int n;
  size_t len[GET_MAX_VALUES];
  uint8_t val[GET_MAX_VALUES][SWARM_RECORD_MAX];
} get_ctx;

static void ctx_free(get_ctx *c) {
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* The last of the waiter and OpenDHT's done callback frees the context. */
static void ctx_unref(get_ctx *c) {
  pthread_mutex_lock(&c->mu);
  bool last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  tern_swarm *sw = c->sw;
  pthread_mutex_lock(&sw->mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    sw->gets = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&sw->mu);
  ctx_free(c);
}

static bool on_value(const dht_value *value, void *arg) {
  get_ctx *c = arg;
  dht_data_view d = dht_value_get_data(value);
  pthread_mutex_lock(&c->mu);
  if (c->n <
      GET_MAX_VALUES) { /* a longer value keeps its length, its head is enough to refuse it */
    memcpy(c->val[c->n], d.data, CORE_MIN(d.size, (size_t)SWARM_RECORD_MAX));
    c->len[c->n++] = d.size;
    pthread_cond_broadcast(&c->cv); /* the waiter hands each value on as it comes */
  }
  pthread_mutex_unlock(&c->mu);
  return true;
}

static void on_done(bool ok, void *arg) {
  (void)ok;
  get_ctx *c = arg;
  pthread_mutex_lock(&c->mu);
  c->done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  ctx_unref(c);
}

void swarm_dht_get(tern_swarm *sw, const uint8_t gkey[32], double timeout_s,
                   bool (*each)(const uint8_t *, size_t, void *), void *arg) {
  get_ctx *c = calloc(1, sizeof *c);
  if (!c) return;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  c->refs = 2;
  c->sw = sw;
  pthread_mutex_lock(&sw->mu);
  c->next = sw->gets;
  if (c->next) c->next->prev = c;
  sw->gets = c;
  pthread_mutex_unlock(&sw->mu);
  uint8_t at[32];
  swarm_dht_location(sw, gkey, at);
  dht_infohash h;
  dht_infohash_get(&h, at, 32);
  dht_runner_get(sw->dht, &h, on_value, on_done, c);
  uint64_t deadline = core_deadline_after(timeout_s);
  struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull),
                        .tv_nsec = (long)(deadline % 1000000000ull)};
  /* What arrived counts even if the get is not done: a get waits for remote nodes. Values are
   * only ever appended, so one below c->n can be read without the lock. */
  int used = 0;
  bool enough = false;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (used < c->n && !enough) {
      int i = used++;
      pthread_mutex_unlock(&c->mu);
      enough = each(c->val[i], c->len[i], arg); /* len may pass the copy: see on_value */
      pthread_mutex_lock(&c->mu);
    }
    if (enough || c->done || core_now_ns() >= deadline) break;
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
  pthread_mutex_unlock(&c->mu);
  ctx_unref(c);
}

/* The values that came on the watched keys, the last WATCH_MAX of them (a ring shared by all
 * watches: a record names its key and round, and readers check both). */
#define WATCH_MAX 1024
typedef struct swarm_watch {
  pthread_mutex_t mu;
  unsigned long long n; /* values ever received; the ring holds the last WATCH_MAX */
  size_t len[WATCH_MAX];
  uint8_t val[WATCH_MAX][SWARM_RECORD_MAX];
} swarm_watch;

static bool on_watched(const dht_value *value, bool expired, void *arg) {
  swarm_watch *w = arg;
  if (expired) return true; /* OpenDHT's own expiry: records carry their own ttl */
  dht_data_view d = dht_value_get_data(value);
  pthread_mutex_lock(&w->mu);
  size_t at = (size_t)(w->n++ % WATCH_MAX);
  memcpy(w->val[at], d.data, CORE_MIN(d.size, (size_t)SWARM_RECORD_MAX));
  w->len[at] = d.size; /* a longer value keeps its length, its head is enough to refuse it */
  pthread_mutex_unlock(&w->mu);
  return true;
}

static void key_hash(tern_swarm *sw, const uint8_t gkey[32], dht_infohash *h) {
  uint8_t at[32];
  swarm_dht_location(sw, gkey, at);
  dht_infohash_get(h, at, 32);
}

struct dht_op_token *swarm_dht_watch(tern_swarm *sw, const uint8_t gkey[32]) {
  if (!sw->watch) { /* freed after the node's threads end (swarm_dht_stop): no callback finds
                       it gone, whenever a cancelled listen's last one comes */
    sw->watch = calloc(1, sizeof *sw->watch);
    if (!sw->watch) return NULL;
    pthread_mutex_init(&sw->watch->mu, NULL);
  }
  dht_infohash h;
  key_hash(sw, gkey, &h);
  return dht_runner_listen(sw->dht, &h, on_watched, NULL, sw->watch);
}

void swarm_dht_watched(tern_swarm *sw, unsigned long long *pos,
                       bool (*each)(const uint8_t *, size_t, void *), void *arg) {
  swarm_watch *w = sw->watch;
  if (!w) return;
  uint8_t val[SWARM_RECORD_MAX];
  pthread_mutex_lock(&w->mu);
  unsigned long long end = w->n;
  pthread_mutex_unlock(&w->mu);
  for (unsigned long long i = CORE_MAX(*pos, end > WATCH_MAX ? end - WATCH_MAX : 0); i < end; i++) {
    pthread_mutex_lock(&w->mu);
    bool kept = w->n - i <= WATCH_MAX; /* not overwritten since */
    size_t len = w->len[i % WATCH_MAX];
    if (kept) memcpy(val, w->val[i % WATCH_MAX], CORE_MIN(len, (size_t)SWARM_RECORD_MAX));
    pthread_mutex_unlock(&w->mu);
    if (kept) each(val, len, arg);
  }
  *pos = end;
}

void swarm_dht_stop(tern_swarm *sw) {
  if (!sw->dht) return;
  dht_runner_delete(sw->dht); /* joins OpenDHT's threads */
  sw->dht = NULL;
  if (sw->pool_watch) dht_op_token_delete(sw->pool_watch);
  sw->pool_watch = NULL;
  if (sw->watch) {
    pthread_mutex_destroy(&sw->watch->mu);
    free(sw->watch);
    sw->watch = NULL;
  }
  /* Gets still pending when the node stopped never hear their done callback: free them now
   * that no callback can come. */
  while (sw->gets) {
    get_ctx *c = sw->gets;
    sw->gets = c->next;
    ctx_free(c);
  }
}

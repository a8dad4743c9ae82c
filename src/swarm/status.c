/* status.c: each peer's progress on the DHT, for `tern swarm status` (docs/CLI.md).
 *
 * A peer that calls tern_swarm_publish_status writes one small record, and its listener thread
 * writes it again every ttl / 3 seconds until the peer leaves; a reader lists the records whose
 * publication time is within their ttl, so a peer that died drops out of the listing one ttl
 * after its last refresh. The records go under a DHT key that changes every ttl seconds (the run
 * and the time bucket): OpenDHT keeps every value put for ten minutes and a get returns at most
 * GET_MAX_VALUES of them, so one fixed key would fill with stale refreshes; a bucket holds about
 * 4 per live peer, and a reader reads the current bucket and the one before it.
 *
 * Wire form: "TSS1" | u8 keyed | u8 hostlen | u16 port | u64 id | u64 epoch | f64 samples/s |
 * u32 round | u16 last group size | u16 ttl (s) | f64 published (Unix seconds) | host |
 * [crypto_auth MAC (32) over all before it, when keyed]. Keyed, the records sit where only key
 * holders look (swarm_dht_location) and a forged one fails its MAC, as matching records do
 * (record.c); the magic differs from theirs, so neither passes for the other. A replayed record
 * carries its old publication time and expires as it did.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_FIXED 52
#define STATUS_TTL_DEFAULT 30.0
#define STATUS_TTL_MAX 3600.0

/* The DHT key of the status records of time bucket b (ttl seconds each). */
static void bucket_key(const tern_swarm *sw, uint64_t b, uint8_t out[32]) {
  uint8_t in[32 + 8 + 6];
  memcpy(in, sw->run_hash, 32);
  core_put64(in + 32, b);
  memcpy(in + 40, "status", 6);
  crypto_generichash(out, 32, in, sizeof in, NULL, 0);
}

tern_status swarm_status_ttl(double *ttl, core_err *err) {
  const char *v = getenv("TERN_SWARM_STATUS_TTL");
  *ttl = STATUS_TTL_DEFAULT;
  if (!v || !*v) return TERN_OK;
  if (!core_parse_seconds(v, ttl) || *ttl < 1 || *ttl > STATUS_TTL_MAX)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "TERN_SWARM_STATUS_TTL '%s': want seconds in 1..%.0f", v, STATUS_TTL_MAX);
  *ttl = floor(*ttl);
  return TERN_OK;
}

static size_t encode(const swarm_status *s, const uint8_t *key, uint8_t *out) {
  size_t hl = strlen(s->host);
  memcpy(out, "TSS1", 4);
  out[4] = key ? 1 : 0;
  out[5] = (uint8_t)hl;
  core_put16(out + 6, (uint16_t)s->port);
  core_put64(out + 8, s->id);
  core_put64(out + 16, s->epoch);
  core_put_f64(out + 24, s->samples_per_s);
  core_put32(out + 32, s->round);
  core_put16(out + 36, (uint16_t)s->group_size);
  core_put16(out + 38, (uint16_t)s->ttl);
  core_put_f64(out + 40, s->published);
  /* bytes 48..51: zero, room for flags without a new magic */
  memset(out + 48, 0, 4);
  return swarm_record_close(out, STATUS_FIXED, s->host, key);
}

/* false: not a status record of this swarm (malformed, unkeyed where keyed, forged). */
static bool decode(const uint8_t *in, size_t len, const uint8_t *key, swarm_status *s) {
  if (len < STATUS_FIXED || len > SWARM_RECORD_MAX || memcmp(in, "TSS1", 4) != 0) return false;
  size_t hl = in[5];
  bool keyed = in[4] == 1;
  if (in[4] > 1 || keyed != (key != NULL) || len != STATUS_FIXED + hl + (keyed ? 32u : 0u))
    return false;
  if (key && crypto_auth_verify(in + STATUS_FIXED + hl, in, STATUS_FIXED + hl, key) != 0)
    return false;
  *s = (swarm_status){.id = core_get64(in + 8),
                      .port = core_get16(in + 6),
                      .epoch = core_get64(in + 16),
                      .samples_per_s = core_get_f64(in + 24),
                      .round = core_get32(in + 32),
                      .group_size = core_get16(in + 36),
                      .ttl = core_get16(in + 38),
                      .published = core_get_f64(in + 40)};
  if (!swarm_host_ok((const char *)in + STATUS_FIXED, hl) || s->port == 0 || s->ttl == 0 ||
      s->group_size > SWARM_MAX_GROUP || !isfinite(s->samples_per_s) || s->samples_per_s < 0 ||
      !isfinite(s->published))
    return false;
  memcpy(s->host, in + STATUS_FIXED, hl);
  s->host[hl] = 0;
  return true;
}

/* Puts the record, its publication time now; called with sw->mu held. */
static void put_locked(tern_swarm *sw, uint64_t now_ns) {
  uint8_t rec[SWARM_RECORD_MAX], gkey[32];
  sw->status.published = core_wall_s();
  sw->status.round = sw->round;
  sw->status.group_size = sw->last_group_n;
  size_t n = encode(&sw->status, sw->keyed ? sw->key : NULL, rec);
  bucket_key(sw, (uint64_t)(sw->status.published / sw->status.ttl), gkey);
  swarm_dht_put(sw, gkey, rec, n);
  sw->status_next_ns = now_ns + (uint64_t)(sw->status.ttl / 3 * 1e9);
}

tern_status tern_swarm_publish_status(tern_swarm *sw, unsigned long long epoch,
                                      double samples_per_s) {
  if (!sw) return TERN_ERR_INVALID_ARG;
  core_err_clear(&sw->err);
  if (!isfinite(samples_per_s) || samples_per_s < 0)
    return core_err_set(&sw->err, TERN_ERR_INVALID_ARG,
                        "tern_swarm_publish_status: samples_per_s %g", samples_per_s);
  double ttl;
  if (swarm_status_ttl(&ttl, &sw->err) != TERN_OK) return sw->err.status;
  pthread_mutex_lock(&sw->mu);
  sw->status.id = sw->id;
  snprintf(sw->status.host, sizeof sw->status.host, "%s", sw->self.host);
  sw->status.port = sw->self.port;
  sw->status.epoch = epoch;
  sw->status.samples_per_s = samples_per_s;
  sw->status.ttl = (int)ttl;
  sw->status_on = true;
  put_locked(sw, core_now_ns());
  pthread_mutex_unlock(&sw->mu);
  return TERN_OK;
}

void swarm_status_tick(tern_swarm *sw, uint64_t now_ns) {
  pthread_mutex_lock(&sw->mu);
  if (sw->status_on && now_ns >= sw->status_next_ns) put_locked(sw, now_ns);
  pthread_mutex_unlock(&sw->mu);
}

typedef struct collect {
  const tern_swarm *sw;
  double now;
  swarm_status *out;
  int max, n;
} collect;

/* Keeps each peer's newest live record. */
static bool take(const uint8_t *v, size_t len, void *arg) {
  collect *c = arg;
  swarm_status s;
  if (!decode(v, len, c->sw->keyed ? c->sw->key : NULL, &s)) return false;
  double age = c->now - s.published;
  if (age > s.ttl || age < -(double)s.ttl) return false; /* expired, or a clock far ahead */
  for (int i = 0; i < c->n; i++)
    if (c->out[i].id == s.id) {
      if (s.published > c->out[i].published) c->out[i] = s;
      return false;
    }
  if (c->n < c->max) c->out[c->n++] = s;
  return false;
}

int swarm_status_read(tern_swarm *sw, double ttl, double timeout_s, swarm_status *out, int max) {
  collect c = {.sw = sw, .now = core_wall_s(), .out = out, .max = max};
  uint64_t b = (uint64_t)(c.now / ttl);
  for (int back = 0; back < 2 && b >= (uint64_t)back; back++) {
    uint8_t gkey[32];
    bucket_key(sw, b - (uint64_t)back, gkey);
    swarm_dht_get(sw, gkey, timeout_s, take, &c);
  }
  return c.n;
}

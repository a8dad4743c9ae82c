/* record.c: what a peer writes on the DHT to be found for a round, and the checks on what it
 * reads back. Anyone can write to a DHT key, so every record read is untrusted: its length,
 * host, round and group key are checked, and with a shared key its MAC (libsodium crypto_auth,
 * HMAC-SHA-512-256) must verify, so that nobody without the key can enter a group.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <string.h>

/* magic 4, keyed 1, hostlen 1, port 2, round 4, id 8, bw 8, gkey 32, stamp 8, ttl 4 */
#define RECORD_FIXED 72

size_t swarm_record_encode(const swarm_member *m, uint32_t round, uint64_t stamp_ms,
                           uint32_t ttl_ms, const uint8_t gkey[32], const uint8_t *key,
                           uint8_t *out) {
  size_t hl = strlen(m->host);
  memcpy(out, "TSR2", 4);
  out[4] = key ? 1 : 0;
  out[5] = (uint8_t)hl;
  core_put16(out + 6, (uint16_t)m->port);
  core_put32(out + 8, round);
  core_put64(out + 12, m->id);
  uint64_t bw;
  memcpy(&bw, &m->bw, 8);
  core_put64(out + 20, bw);
  memcpy(out + 28, gkey, 32);
  core_put64(out + 60, stamp_ms);
  core_put32(out + 68, ttl_ms);
  return swarm_record_close(out, RECORD_FIXED, m->host, key);
}

size_t swarm_record_close(uint8_t *out, size_t fixed, const char *host, const uint8_t *key) {
  size_t n = fixed + strlen(host);
  memcpy(out + fixed, host, n - fixed);
  if (key) {
    crypto_auth(out + n, out, n, key);
    n += 32;
  }
  return n;
}

tern_status swarm_record_decode(const uint8_t *in, size_t len, uint32_t round,
                                const uint8_t gkey[32], const uint8_t *key, swarm_record *r,
                                core_err *err) {
  swarm_member *m = &r->m;
  const size_t fixed = RECORD_FIXED;
  if (len > SWARM_RECORD_MAX)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "a %zu-byte DHT value (records are at most %d "
                        "bytes)",
                        len, SWARM_RECORD_MAX);
  if (len < fixed || memcmp(in, "TSR2", 4) != 0)
    return core_err_set(err, TERN_ERR_PROTOCOL, "a %zu-byte DHT record that is not tern's", len);
  bool keyed = in[4] == 1;
  size_t hl = in[5];
  if (in[4] > 1 || len != fixed + hl + (keyed ? 32u : 0u))
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "a DHT record of %zu bytes with flags %u and host length %zu", len, in[4],
                        hl);
  if (keyed != (key != NULL))
    return core_err_set(err, TERN_ERR_AUTH, "a DHT record %s a MAC where this swarm %s a key",
                        keyed ? "with" : "without", key ? "has" : "has no");
  if (key && crypto_auth_verify(in + fixed + hl, in, fixed + hl, key) != 0)
    return core_err_set(err, TERN_ERR_AUTH, "a DHT record whose MAC does not verify (forged)");
  r->round = core_get32(in + 8);
  r->stamp_ms = core_get64(in + 60);
  r->ttl_ms = core_get32(in + 68);
  if ((round != SWARM_ANY_ROUND && r->round != round) || memcmp(in + 28, gkey, 32) != 0)
    return core_err_set(err, TERN_ERR_PROTOCOL, "a DHT record of round %u or another group",
                        core_get32(in + 8));
  uint64_t bw = core_get64(in + 20);
  memcpy(&m->bw, &bw, 8);
  m->id = core_get64(in + 12);
  m->port = core_get16(in + 6);
  if (!swarm_host_ok((const char *)in + fixed, hl) || m->port == 0 || !isfinite(m->bw) ||
      m->bw <= 0)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "a DHT record with a bad host, port %d or bandwidth %g", m->port, m->bw);
  memcpy(m->host, in + fixed, hl);
  m->host[hl] = 0;
  return TERN_OK;
}

/* secure.c: what a swarm without a key may expose, and the keys derived from the shared secret.
 *
 * Without a key anyone who reaches a peer's port and knows the run id joins the swarm and sends
 * it values, so a keyless peer stays on loopback: tern_swarm_join refuses any other listen or
 * bootstrap address unless the caller says insecure (docs/SWARM.md, "Security"). A name other
 * than "localhost" counts as not loopback: resolving it would be a guess about where it points.
 *
 * With a key, the secret (32 bytes, hashed from the passphrase) is the master key of libsodium's
 * crypto_kdf, and each use gets its own subkey: the DHT's network id and the DHT keys a record
 * is stored under, so that a process without the secret can neither find the run's records nor
 * write under them (its OpenDHT node is not even in the same network).
 */
#include "swarm/swarm.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <string.h>

#define KDF_CONTEXT "ternswrm" /* crypto_kdf_CONTEXTBYTES = 8 */
enum { SUBKEY_DHT = 1, SUBKEY_NETWORK = 2 };

bool swarm_host_loopback(const char *host) {
  if (strcmp(host, "localhost") == 0) return true;
  struct in_addr a4;
  if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  struct in6_addr a6;
  if (inet_pton(AF_INET6, host, &a6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    /* ::ffff:127.x.y.z, the IPv4 loopback seen through an IPv6 socket */
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  return false;
}

tern_status swarm_check_exposure(const char *listen_host, const char (*bootstrap)[NET_HOST_LEN + 8],
                                 int nbootstrap, bool keyed, bool insecure, core_err *err) {
  if (keyed) return TERN_OK;
  const char *open = NULL;
  char host[NET_HOST_LEN];
  if (!swarm_host_loopback(listen_host)) open = listen_host;
  for (int i = 0; i < nbootstrap && !open; i++) {
    int port;
    core_err e = {0};
    if (net_parse_addr(bootstrap[i], host, sizeof host, &port, false, &e) != TERN_OK ||
        !swarm_host_loopback(host))
      open = bootstrap[i];
  }
  if (!open) return TERN_OK;
  if (!insecure)
    return core_err_set(err, TERN_ERR_AUTH,
                        "no key, and %s is not a loopback address: anyone who reaches it could "
                        "join and move the average. Give a key (--key, TERN_KEY, TERN_KEY_FILE) "
                        "or say --insecure (tern_swarm_options.insecure)",
                        open);
  CORE_WARN("swarm: INSECURE: no key on %s: any process that reaches this peer and knows the run "
            "id can join, read the values and move the average",
            open);
  return TERN_OK;
}

static void subkey(const tern_swarm *sw, uint64_t id, uint8_t *out, size_t len) {
  crypto_kdf_derive_from_key(out, len, id, KDF_CONTEXT, sw->key);
}

uint32_t swarm_dht_network(const tern_swarm *sw) {
  uint8_t h[crypto_kdf_BYTES_MIN];
  if (sw->keyed)
    subkey(sw, SUBKEY_NETWORK, h, sizeof h);
  else
    memcpy(h, sw->run_hash, 4);
  /* OpenDHT's network ids are 31-bit here: the top bit stays clear as it always was */
  return (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
         (uint32_t)(h[3] & 0x7f) << 24;
}

void swarm_dht_location(const tern_swarm *sw, const uint8_t gkey[32], uint8_t out[32]) {
  if (!sw->keyed) {
    memcpy(out, gkey, 32);
    return;
  }
  uint8_t k[crypto_generichash_KEYBYTES];
  subkey(sw, SUBKEY_DHT, k, sizeof k);
  crypto_generichash(out, 32, gkey, 32, k, sizeof k);
  sodium_memzero(k, sizeof k);
}

/* seal.c: every swarm message on a keyed connection is authenticated and encrypted on its own.
 *
 * tern's handshake proves that both ends hold the key, but what follows it would otherwise go in
 * clear and unauthenticated: anyone on the path could read the values, change them, or replay a
 * message recorded earlier. So, on a keyed swarm, each connection gets a session key
 *
 *     K = BLAKE2b(key: a subkey of the secret, message: dialer's nonce || acceptor's nonce)
 *
 * from the two fresh nonces of its handshake, and each message is sealed with libsodium's
 * ChaCha20-Poly1305 (IETF) under K: the 40-byte header goes in clear (the receiver bounds the
 * length before reading on) as the additional data, the payload is encrypted, and a 16-byte tag
 * follows it, also when the payload is empty. The 96-bit nonce is the direction (dialer to
 * acceptor or back) and the message's number on the connection, counted by both ends. So a
 * changed header or payload fails the tag; a message replayed into another connection fails
 * (another K); one replayed, dropped or reordered within its connection fails (another number).
 * A failure closes the connection and names the sender (TERN_ERR_AUTH).
 *
 * The seal follows the socket: the swarm's messages move through wire.c's calls, which know a
 * connection by its fd alone, so the sessions live in a table indexed by fd (a process-wide
 * name, like the fd itself), filled when the handshake completes and overwritten by the next
 * handshake on a reused fd. A connection is used by one thread at a time, but its fd number
 * passes from thread to thread as connections close and open, so every entry is read and
 * written under the table's lock (a copy of the state is taken; the cipher runs outside it).
 * docs/SWARM.md, "Security", says what this protects.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define KDF_CONTEXT "ternseal" /* crypto_kdf_CONTEXTBYTES = 8 */
#define SUBKEY_SEAL 1

typedef struct seal {
  bool on;
  uint8_t k[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
  uint8_t tx_dir, rx_dir;
  uint64_t tx, rx;
  uint8_t ad[SWARM_HDR_LEN]; /* the header of the message being read */
} seal;

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static seal **table;
static int table_len;

/* The entry of fd, created when create; NULL when there is none (or no memory). Called with
 * table_mu held. */
static seal *entry_locked(int fd, bool create) {
  if (fd >= table_len && create) {
    int n = CORE_MAX(fd + 1, 2 * table_len);
    seal **t = realloc(table, (size_t)n * sizeof *t);
    if (t) {
      memset(t + table_len, 0, (size_t)(n - table_len) * sizeof *t);
      table = t;
      table_len = n;
    }
  }
  if (fd < 0 || fd >= table_len) return NULL;
  if (!table[fd] && create) table[fd] = calloc(1, sizeof(seal));
  return table[fd];
}

/* A copy of fd's session, with its next send (tx) or receive (rx) number taken when `take` is
 * 't' or 'r' (a failed receive closes the connection, so rx is taken only once it verified:
 * see swarm_seal_open). false: fd is not sealed. */
static bool snapshot(int fd, char take, seal *out) {
  pthread_mutex_lock(&table_mu);
  seal *s = entry_locked(fd, false);
  bool on = s && s->on;
  if (on) {
    *out = *s;
    if (take == 't') s->tx++;
  }
  pthread_mutex_unlock(&table_mu);
  return on;
}

tern_status swarm_seal_begin(const tern_swarm *sw, int fd, const uint8_t dialer_nonce[32],
                             const uint8_t acceptor_nonce[32], bool dialer, core_err *err) {
  seal fresh = {.on = sw->keyed, .tx_dir = dialer ? 0 : 1, .rx_dir = dialer ? 1 : 0};
  if (sw->keyed) {
    uint8_t sub[crypto_generichash_KEYBYTES], nonces[64];
    crypto_kdf_derive_from_key(sub, sizeof sub, SUBKEY_SEAL, KDF_CONTEXT, sw->key);
    memcpy(nonces, dialer_nonce, 32);
    memcpy(nonces + 32, acceptor_nonce, 32);
    crypto_generichash(fresh.k, sizeof fresh.k, nonces, sizeof nonces, sub, sizeof sub);
    sodium_memzero(sub, sizeof sub);
  }
  pthread_mutex_lock(&table_mu);
  seal *s = entry_locked(fd, sw->keyed);
  if (s) *s = fresh;
  pthread_mutex_unlock(&table_mu);
  sodium_memzero(&fresh, sizeof fresh);
  if (sw->keyed && !s) return core_err_set(err, TERN_ERR_NOMEM, "the session of a connection");
  return TERN_OK;
}

size_t swarm_seal_overhead(int fd) {
  seal s;
  bool on = snapshot(fd, 0, &s);
  sodium_memzero(&s, sizeof s);
  return on ? SWARM_SEAL_TAG : 0;
}

static void nonce_of(uint8_t dir, uint64_t n,
                     uint8_t out[crypto_aead_chacha20poly1305_ietf_NPUBBYTES]) {
  memset(out, 0, crypto_aead_chacha20poly1305_ietf_NPUBBYTES);
  out[0] = dir;
  core_put64(out + 4, n);
}

tern_status swarm_seal_frame(int fd, const swarm_hdr *h, const void *payload, uint8_t **frame,
                             size_t *len, core_err *err) {
  seal s;
  bool on = snapshot(fd, 't', &s);
  size_t n = SWARM_HDR_LEN + h->len + (on ? SWARM_SEAL_TAG : 0);
  uint8_t *f = malloc(n);
  if (!f) {
    sodium_memzero(&s, sizeof s);
    return core_err_set(err, TERN_ERR_NOMEM, "a %s message of %llu bytes", swarm_type_name(h->type),
                        (unsigned long long)h->len);
  }
  swarm_hdr_encode(h, f);
  if (!on) {
    if (h->len) memcpy(f + SWARM_HDR_LEN, payload, h->len);
  } else {
    uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
    nonce_of(s.tx_dir, s.tx, nonce);
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(
        f + SWARM_HDR_LEN, f + SWARM_HDR_LEN + h->len, NULL, h->len ? payload : f, h->len, f,
        SWARM_HDR_LEN, NULL, nonce, s.k);
  }
  sodium_memzero(&s, sizeof s);
  *frame = f;
  *len = n;
  return TERN_OK;
}

void swarm_seal_expect(int fd, const uint8_t hdr[SWARM_HDR_LEN]) {
  pthread_mutex_lock(&table_mu);
  seal *s = entry_locked(fd, false);
  if (s && s->on) memcpy(s->ad, hdr, SWARM_HDR_LEN);
  pthread_mutex_unlock(&table_mu);
}

tern_status swarm_seal_open(int fd, uint8_t *buf, size_t len, const uint8_t tag[SWARM_SEAL_TAG],
                            const char *from, core_err *err) {
  seal s;
  if (!snapshot(fd, 'r', &s)) return TERN_OK;
  uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES], none = 0;
  nonce_of(s.rx_dir, s.rx, nonce);
  int bad = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
      len ? buf : &none, NULL, len ? buf : &none, len, tag, s.ad, SWARM_HDR_LEN, nonce, s.k);
  sodium_memzero(&s, sizeof s);
  if (bad)
    return core_err_set(err, TERN_ERR_AUTH,
                        "%s sent a message that does not verify (forged, "
                        "tampered with or replayed)",
                        from);
  pthread_mutex_lock(&table_mu);
  seal *e = entry_locked(fd, false);
  if (e) e->rx++;
  pthread_mutex_unlock(&table_mu);
  return TERN_OK;
}

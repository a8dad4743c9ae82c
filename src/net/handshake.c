/* handshake.c: the opening exchange of every tern connection: who is there, and do they hold
 * the key.
 *
 * Both sides send a hello at once (see net.h for the layout), read the other's and check it
 * before anything else: a stranger (an HTTP probe, a port scanner, another program) fails at the
 * magic, another build at the version, and a corrupt or hostile hello at the range checks. With
 * a key, each side then sends crypto_auth (HMAC-SHA-512-256, libsodium) over
 *   label || sender's hello || receiver's hello || receiver's nonce,
 * where the label says whether the sender's hello sorts below or above the receiver's. The
 * receiver's fresh nonce makes a recorded MAC useless in a later handshake (no replay), and the
 * label plus the refusal of a hello carrying our own nonce make a MAC sent back to its author
 * useless too (no reflection), although both ends play the same part.
 *
 * The exchange is a state machine over a nonblocking socket so that a server can run hundreds
 * at once in one poll loop; a silent peer costs only the deadline its caller gives it.
 */
#include "net.h"

#include "core/bytes.h"

#include <errno.h>
#include <poll.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

enum { HS_HELLO, HS_MAC, HS_FLUSH, HS_DONE, HS_FAILED };

static const uint8_t magic[4] = {'T', 'E', 'R', 'N'};

void net_hello_encode(const net_hello *h, uint8_t out[NET_HELLO_LEN]) {
  memset(out, 0, NET_HELLO_LEN);
  memcpy(out, magic, 4);
  core_put16(out + 4, NET_PROTOCOL_VERSION);
  out[6] = h->role;
  out[7] = h->keyed ? 1 : 0;
  memcpy(out + 8, h->run_id, 16);
  core_put32(out + 24, (uint32_t)h->rank);
  core_put32(out + 28, (uint32_t)h->size);
  core_put16(out + 32, h->stream);
  core_put16(out + 34, h->nstreams);
  memcpy(out + 40, h->nonce, 32);
}

tern_status net_hello_decode(const uint8_t in[NET_HELLO_LEN], net_hello *h, const char *from,
                             core_err *err) {
  if (memcmp(in, magic, 4) != 0)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s is not a tern peer (its first bytes are %02x %02x %02x %02x, not "
                        "\"TERN\")",
                        from, in[0], in[1], in[2], in[3]);
  unsigned version = core_get16(in + 4);
  if (version != NET_PROTOCOL_VERSION)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s speaks tern protocol version %u, this build speaks %d", from, version,
                        NET_PROTOCOL_VERSION);
  if (in[6] < NET_ROLE_RANK || in[6] > NET_ROLE_PEER)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a hello with unknown role %u", from,
                        in[6]);
  if (in[7] > 1 || core_get32(in + 36) != 0)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent a hello with reserved bits set (flags 0x%02x)", from, in[7]);
  int32_t rank = (int32_t)core_get32(in + 24), size = (int32_t)core_get32(in + 28);
  if (size < 0 || size > NET_MAX_RANKS)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a hello with world size %d", from,
                        (int)size);
  if (rank < -1 || rank >= (size > 0 ? size : NET_MAX_RANKS))
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a hello with rank %d of size %d", from,
                        (int)rank, (int)size);
  uint16_t stream = core_get16(in + 32), nstreams = core_get16(in + 34);
  if (nstreams < 1 || nstreams > NET_MAX_STREAMS || stream >= nstreams)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a hello with stream %u of %u", from,
                        stream, nstreams);
  h->role = in[6];
  h->keyed = in[7] == 1;
  memcpy(h->run_id, in + 8, 16);
  h->rank = rank;
  h->size = size;
  h->stream = stream;
  h->nstreams = nstreams;
  memcpy(h->nonce, in + 40, 32);
  return TERN_OK;
}

void net_handshake_start(net_handshake *hs, int fd, const net_hello *mine, const uint8_t *key) {
  memset(hs, 0, sizeof *hs);
  hs->fd = fd;
  hs->mine = *mine;
  hs->use_key = key != NULL;
  hs->mine.keyed = hs->use_key;
  if (key != NULL) memcpy(hs->key, key, sizeof hs->key);
  net_peer_addr(fd, hs->from, sizeof hs->from);
  if (sodium_init() < 0) {
    hs->state = HS_FAILED; /* step reports it */
    return;
  }
  randombytes_buf(hs->mine.nonce, sizeof hs->mine.nonce);
  net_hello_encode(&hs->mine, hs->out);
  hs->out_len = NET_HELLO_LEN;
  hs->in_len = NET_HELLO_LEN;
  hs->state = HS_HELLO;
}

static bool all_zero(const uint8_t *p, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; i++)
    acc |= p[i];
  return acc == 0;
}

static bool roles_pair(int mine, int theirs) {
  if (mine == NET_ROLE_RANK || mine == NET_ROLE_PEER) return theirs == mine;
  return mine + theirs == NET_ROLE_STORE_CLIENT + NET_ROLE_STORE_SERVER && mine != theirs;
}

static const char *role_name(int role) {
  static const char *names[] = {"?", "rank", "store client", "store server", "group peer"};
  return role >= 0 && role <= NET_ROLE_PEER ? names[role] : "?";
}

/* The accept policy, once their hello is decoded. */
static tern_status accept_hello(const net_handshake *hs, core_err *err) {
  const net_hello *m = &hs->mine, *t = &hs->theirs;
  if (!roles_pair(m->role, t->role))
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s is a %s, and a %s does not talk to one",
                        hs->from, role_name(t->role), role_name(m->role));
  if (sodium_memcmp(m->nonce, t->nonce, sizeof m->nonce) == 0)
    return core_err_set(err, TERN_ERR_AUTH,
                        "%s sent back this side's own nonce (a reflected handshake)", hs->from);
  if (m->keyed && !t->keyed)
    return core_err_set(err, TERN_ERR_AUTH,
                        "%s holds no key, and this side requires one: give both the same "
                        "TERN_KEY or TERN_KEY_FILE",
                        hs->from);
  if (!m->keyed && t->keyed)
    return core_err_set(err, TERN_ERR_AUTH,
                        "%s holds a key (TERN_KEY or TERN_KEY_FILE) and this side has none",
                        hs->from);
  if (!all_zero(m->run_id, 16) && !all_zero(t->run_id, 16) && memcmp(m->run_id, t->run_id, 16) != 0)
    return core_err_set(err, TERN_ERR_AUTH, "%s belongs to another run (its run id differs)",
                        hs->from);
  return TERN_OK;
}

/* The MAC that `sender` (wire form) sends to `receiver` (wire form, whose nonce is at 40). */
static void mac_of(const net_handshake *hs, const uint8_t *sender, const uint8_t *receiver,
                   uint8_t out[NET_MAC_LEN]) {
  static const char low[] = "tern handshake v1: MAC from the lower hello";
  static const char high[] = "tern handshake v1: MAC from the higher hello";
  _Static_assert(sizeof low <= sizeof high, "label size");
  _Static_assert(NET_MAC_LEN == crypto_auth_BYTES && crypto_auth_KEYBYTES == 32, "HMAC sizes");
  uint8_t msg[sizeof high + 2 * NET_HELLO_LEN + 32];
  const char *label = memcmp(sender, receiver, NET_HELLO_LEN) < 0 ? low : high;
  size_t n = strlen(label);
  memcpy(msg, label, n);
  memcpy(msg + n, sender, NET_HELLO_LEN);
  memcpy(msg + n + NET_HELLO_LEN, receiver, NET_HELLO_LEN);
  memcpy(msg + n + 2 * NET_HELLO_LEN, receiver + 40, 32);
  crypto_auth(out, msg, n + 2 * NET_HELLO_LEN + 32, hs->key);
}

/* Their hello is in: check it and, with a key, queue our MAC and expect theirs. */
static tern_status on_hello(net_handshake *hs, core_err *err) {
  tern_status rc = net_hello_decode(hs->in, &hs->theirs, hs->from, err);
  if (rc == TERN_OK) rc = accept_hello(hs, err);
  if (rc != TERN_OK) return rc;
  if (!hs->use_key) {
    hs->state = HS_FLUSH;
    return TERN_OK;
  }
  mac_of(hs, hs->out, hs->in, hs->out + NET_HELLO_LEN);
  hs->out_len += NET_MAC_LEN;
  hs->in_len += NET_MAC_LEN;
  hs->state = HS_MAC;
  return TERN_OK;
}

static tern_status on_mac(net_handshake *hs, core_err *err) {
  uint8_t want[NET_MAC_LEN];
  mac_of(hs, hs->in, hs->out, want);
  if (sodium_memcmp(want, hs->in + NET_HELLO_LEN, NET_MAC_LEN) != 0)
    return core_err_set(err, TERN_ERR_AUTH,
                        "%s does not hold this job's key (its MAC does not verify): check "
                        "TERN_KEY / TERN_KEY_FILE on both sides",
                        hs->from);
  hs->state = HS_FLUSH;
  return TERN_OK;
}

/* Moves bytes both ways; *moved says whether any did. A failed write is reported only when
 * there is nothing left to read: a peer that sent garbage (or a refusal) and hung up is then
 * reported for what it sent, not for the broken pipe. */
static tern_status pump(net_handshake *hs, bool *moved, core_err *err) {
  *moved = false;
  int write_errno = 0;
  if (hs->out_done < hs->out_len) {
    ssize_t w = send(hs->fd, hs->out + hs->out_done, hs->out_len - hs->out_done, MSG_NOSIGNAL);
    if (w > 0) {
      hs->out_done += (size_t)w;
      *moved = true;
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      write_errno = errno;
    }
  }
  if (hs->in_done < hs->in_len) {
    ssize_t r = recv(hs->fd, hs->in + hs->in_done, hs->in_len - hs->in_done, 0);
    if (r > 0) {
      hs->in_done += (size_t)r;
      *moved = true;
      return TERN_OK;
    }
    if (r == 0)
      return core_err_set(err, TERN_ERR_PEER_LOST,
                          "handshake with %s: connection closed after %zu of %zu bytes", hs->from,
                          hs->in_done, hs->in_len);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return core_err_set(err, TERN_ERR_PEER_LOST, "handshake with %s: read failed (%s)", hs->from,
                          strerror(errno));
  }
  if (write_errno != 0)
    return core_err_set(err, TERN_ERR_PEER_LOST, "handshake with %s: write failed (%s)", hs->from,
                        strerror(write_errno));
  return TERN_OK;
}

tern_status net_handshake_step(net_handshake *hs, bool *done, core_err *err) {
  *done = false;
  if (hs->state == HS_FAILED)
    return core_err_set(err, TERN_ERR_SYSTEM,
                        "handshake with %s: already failed (or libsodium "
                        "could not start)",
                        hs->from);
  tern_status rc = TERN_OK;
  bool moved = true;
  while (rc == TERN_OK && moved && hs->state != HS_DONE) {
    rc = pump(hs, &moved, err);
    if (rc != TERN_OK) break;
    if (hs->state == HS_HELLO && hs->in_done == NET_HELLO_LEN)
      rc = on_hello(hs, err);
    else if (hs->state == HS_MAC && hs->in_done == hs->in_len)
      rc = on_mac(hs, err);
    if (rc == TERN_OK && hs->state == HS_FLUSH && hs->out_done == hs->out_len) hs->state = HS_DONE;
  }
  if (rc != TERN_OK) {
    hs->state = HS_FAILED;
    sodium_memzero(hs->key, sizeof hs->key);
    return rc;
  }
  if (hs->state == HS_DONE) {
    sodium_memzero(hs->key, sizeof hs->key);
    *done = true;
  }
  return TERN_OK;
}

short net_handshake_events(const net_handshake *hs) {
  if (hs->state == HS_DONE || hs->state == HS_FAILED) return 0;
  short ev = 0;
  if (hs->out_done < hs->out_len) ev |= POLLOUT;
  if (hs->in_done < hs->in_len) ev |= POLLIN;
  return ev;
}

tern_status net_handshake_finish(net_handshake *hs, uint64_t deadline_ns, core_err *err) {
  tern_status rc;
  bool done = false;
  for (;;) {
    rc = net_handshake_step(hs, &done, err);
    if (rc != TERN_OK || done) break;
    struct pollfd p = {.fd = hs->fd, .events = net_handshake_events(hs)};
    int n = poll(&p, 1, core_ms_left(deadline_ns, 1000));
    if (n < 0 && errno != EINTR) {
      rc = core_err_errno(err, errno, "handshake with %s: poll", hs->from);
      break;
    }
    if (n == 0 && core_now_ns() >= deadline_ns) {
      rc = core_err_set(err, TERN_ERR_TIMEOUT,
                        "handshake with %s: deadline passed with %zu of %zu bytes received",
                        hs->from, hs->in_done, hs->in_len);
      break;
    }
  }
  return rc;
}

tern_status net_handshake_run(int fd, const net_hello *mine, net_hello *theirs, const uint8_t *key,
                              uint64_t deadline_ns, core_err *err) {
  net_handshake hs;
  net_handshake_start(&hs, fd, mine, key);
  tern_status rc = net_handshake_finish(&hs, deadline_ns, err);
  if (rc == TERN_OK) *theirs = hs.theirs;
  sodium_memzero(&hs, sizeof hs);
  return rc;
}

/* wire.c: the swarm's messages after tern's handshake: a 40-byte header (swarm.h) and a payload
 * whose length is bounded per type before anything is allocated, plus the helpers that dial a
 * member and move one message. On a keyed swarm every message is sealed (seal.c): a 16-byte
 * tag follows its payload.
 */
#include "swarm/swarm.h"

#include "compress/compress.h"
#include "core/bytes.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HDR_MAGIC 0x31575354u /* "TSW1" */

const char *swarm_type_name(int type) {
  static const char *names[] = {
      "?",       "join",          "group",   "redirect",  "reject", "part",
      "result",  "state request", "state",   "leave",     "hello",  "result request",
      "pending", "round request", "part in", "reference", "probe",  "half"};
  return type > 0 && type < SWARM_TYPE_END ? names[type] : "?";
}

void swarm_hdr_encode(const swarm_hdr *h, uint8_t out[SWARM_HDR_LEN]) {
  core_put32(out, HDR_MAGIC);
  out[4] = h->type;
  out[5] = h->codec;
  core_put16(out + 6, h->part);
  core_put32(out + 8, h->round);
  core_put32(out + 12, 0);
  core_put64(out + 16, h->sender);
  core_put64(out + 24, h->tag);
  core_put64(out + 32, h->len);
}

tern_status swarm_hdr_decode(const uint8_t in[SWARM_HDR_LEN], swarm_hdr *h, const char *from,
                             core_err *err) {
  if (core_get32(in) != HDR_MAGIC)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a message that is not a swarm message",
                        from);
  h->type = in[4];
  h->codec = in[5];
  h->part = core_get16(in + 6);
  h->round = core_get32(in + 8);
  h->sender = core_get64(in + 16);
  h->tag = core_get64(in + 24);
  h->len = core_get64(in + 32);
  if (h->type < SWARM_JOIN || h->type >= SWARM_TYPE_END || !compress_valid(h->codec) ||
      core_get32(in + 12) != 0 || h->part >= SWARM_MAX_GROUP)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent a swarm message of type %u, codec %u, part %u: not valid", from,
                        h->type, h->codec, h->part);
  bool data = h->type == SWARM_PART || h->type == SWARM_RESULT || h->type == SWARM_STATE ||
              h->type == SWARM_REF || h->type == SWARM_HALF;
  uint64_t max = h->type == SWARM_PROBE ? SWARM_PROBE_MAX : data ? SWARM_DATA_MAX : SWARM_SMALL_MAX;
  if (h->len > max)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a %s message of %llu bytes: refused", from,
                        swarm_type_name(h->type), (unsigned long long)h->len);
  return TERN_OK;
}

bool swarm_host_ok(const char *h, size_t n) {
  if (n == 0 || n >= SWARM_HOST_LEN) return false;
  for (size_t i = 0; i < n; i++) {
    char c = h[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
          c == ':' || c == '-'))
      return false;
  }
  return true;
}

size_t swarm_member_encode(const swarm_member *m, uint8_t *out) {
  size_t hl = strlen(m->host);
  core_put64(out, m->id);
  core_put16(out + 8, (uint16_t)m->port);
  out[10] = (uint8_t)hl;
  memcpy(out + 11, m->host, hl);
  uint64_t bw;
  memcpy(&bw, &m->bw, 8);
  core_put64(out + 11 + hl, bw);
  out[19 + hl] = m->half;
  return 20 + hl;
}

tern_status swarm_member_decode(const uint8_t *in, size_t len, size_t *used, swarm_member *m,
                                core_err *err) {
  if (len < 20 || in[10] == 0 || in[10] >= SWARM_HOST_LEN || len < 20u + in[10])
    return core_err_set(err, TERN_ERR_PROTOCOL, "a member record cut short (%zu bytes)", len);
  size_t hl = in[10];
  m->id = core_get64(in);
  m->port = core_get16(in + 8);
  if (!swarm_host_ok((const char *)in + 11, hl))
    return core_err_set(err, TERN_ERR_PROTOCOL, "a member record with a bad host");
  memcpy(m->host, in + 11, hl);
  m->host[hl] = 0;
  uint64_t bw = core_get64(in + 11 + hl);
  memcpy(&m->bw, &bw, 8);
  if (m->port == 0 || !isfinite(m->bw) || m->bw <= 0)
    return core_err_set(err, TERN_ERR_PROTOCOL, "a member record with port %d, bandwidth %g",
                        m->port, m->bw);
  m->half = in[19 + hl] <= 2 ? in[19 + hl] : 0;
  *used = 20 + hl;
  return TERN_OK;
}

tern_status swarm_dial(tern_swarm *sw, const swarm_member *m, uint64_t deadline_ns, int *fd,
                       core_err *err) {
  /* A refused connection is retried for a moment only: longer cost the round (a follower that
   * spent 2 s on a dead leader's refusals came to the next lowest id after it had closed its
   * group, tests/swarm/leader_dies.sh). Where the peer is known to listen (it wrote a record,
   * it is in the group), a refusal is its death: SWARM_REFUSED_DEAD_SECONDS. */
  return swarm_dial_refused(sw, m, deadline_ns, SWARM_REFUSED_SECONDS, fd, err);
}

tern_status swarm_dial_refused(tern_swarm *sw, const swarm_member *m, uint64_t deadline_ns,
                               double refused_s, int *fd, core_err *err) {
  /* A connect with no answer yet may be a lost SYN (sent again after 1 s): that one has
   * SWARM_CONNECT_SECONDS. */
  uint64_t connect_by = CORE_MIN(deadline_ns, core_deadline_after(SWARM_CONNECT_SECONDS));
  uint64_t refused_by = CORE_MIN(connect_by, core_deadline_after(refused_s));
  tern_status rc = net_connect_until(m->host, m->port, connect_by, refused_by, fd, err);
  if (rc != TERN_OK) return rc;
  net_hello mine = {.role = NET_ROLE_PEER, .rank = -1, .size = 0, .stream = 0, .nstreams = 1};
  memcpy(mine.run_id, sw->run_id, 16);
  net_handshake hs;
  net_handshake_start(&hs, *fd, &mine, sw->keyed ? sw->key : NULL);
  rc = net_handshake_finish(&hs, deadline_ns, err);
  if (rc == TERN_OK) rc = swarm_seal_begin(sw, *fd, hs.mine.nonce, hs.theirs.nonce, true, err);
  sodium_memzero(&hs, sizeof hs);
  if (rc != TERN_OK) {
    close(*fd);
    *fd = -1;
  }
  return rc;
}

tern_status swarm_send(int fd, const swarm_hdr *h, const void *payload, uint64_t deadline_ns,
                       const char *what, core_err *err) {
  if (swarm_seal_overhead(fd)) { /* keyed: seal.c */
    uint8_t *frame;
    size_t len;
    tern_status rc = swarm_seal_frame(fd, h, payload, &frame, &len, err);
    if (rc == TERN_OK) rc = net_write_all(fd, frame, len, deadline_ns, what, err);
    free(frame);
    return rc;
  }
  uint8_t buf[SWARM_HDR_LEN];
  swarm_hdr_encode(h, buf);
  tern_status rc = net_write_all(fd, buf, sizeof buf, deadline_ns, what, err);
  if (rc == TERN_OK && h->len) rc = net_write_all(fd, payload, h->len, deadline_ns, what, err);
  return rc;
}

tern_status swarm_recv_hdr(int fd, swarm_hdr *h, uint64_t deadline_ns, const char *what,
                           core_err *err) {
  uint8_t buf[SWARM_HDR_LEN];
  tern_status rc = net_read_all(fd, buf, sizeof buf, deadline_ns, what, err);
  if (rc == TERN_OK) rc = swarm_hdr_decode(buf, h, what, err);
  if (rc != TERN_OK || !swarm_seal_overhead(fd)) return rc;
  swarm_seal_expect(fd, buf);
  /* an empty message is checked now; one with a payload once swarm_recv_payload has it */
  return h->len == 0 ? swarm_recv_payload(fd, NULL, 0, deadline_ns, what, err) : TERN_OK;
}

tern_status swarm_recv_payload(int fd, void *buf, size_t len, uint64_t deadline_ns,
                               const char *what, core_err *err) {
  tern_status rc = len ? net_read_all(fd, buf, len, deadline_ns, what, err) : TERN_OK;
  if (rc != TERN_OK || !swarm_seal_overhead(fd)) return rc;
  uint8_t tag[SWARM_SEAL_TAG];
  rc = net_read_all(fd, tag, sizeof tag, deadline_ns, what, err);
  return rc == TERN_OK ? swarm_seal_open(fd, buf, len, tag, what, err) : rc;
}

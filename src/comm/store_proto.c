/* store_proto.c: the store's frames: encoding, decoding, and reading them off a socket.
 *
 * A frame is a u32 length and that many bytes: a type byte and a body whose layout the type
 * fixes (store.h). The decoder trusts nothing: the length prefix is checked against
 * STORE_MAX_FRAME before a byte of the body is allocated, and every inner length against what
 * is left of the frame, so that a frame decodes to exactly its own bytes or not at all. Keys
 * must be printable ASCII: they end up in log lines and error messages, where a key of control
 * characters from a hostile client would forge or garble them.
 *
 * store_reader is the incremental half: it takes whatever bytes a nonblocking socket has and
 * says when a whole frame is in. Server and client both read through it.
 */
#include "store.h"

#include "core/bytes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A reader keeps a buffer this small between frames; bigger ones are freed once used, so that
 * an idle connection costs little whatever it once sent. */
#define READER_KEEP 4096

/* memcpy with n == 0 and src NULL is undefined; an empty value may come as NULL */
static void put_bytes(uint8_t *p, const void *src, size_t n) {
  if (n > 0) memcpy(p, src, n);
}
static bool has_key(store_msg_type t) {
  return t == STORE_SET || t == STORE_GET || t == STORE_ADD;
}

bool store_key_valid(const char *key, size_t len) {
  if (len < 1 || len > STORE_MAX_KEY) return false;
  for (size_t i = 0; i < len; i++)
    if (key[i] < 0x20 || key[i] > 0x7e) return false;
  return true;
}

const char *store_msg_name(int type) {
  static const char *names[] = {"?",     "SET",   "GET",     "ADD",   "BYE",   "OK",
                                "VALUE", "COUNT", "TIMEOUT", "ERROR", "NOTICE"};
  return type >= STORE_SET && type <= STORE_NOTICE ? names[type] : "?";
}

size_t store_msg_size(const store_msg *m) {
  if (has_key(m->type) && !store_key_valid(m->key, m->key_len)) return 0;
  size_t len = 1;
  switch (m->type) {
  case STORE_SET:
    len += 2 + m->key_len + 4 + m->value_len;
    break;
  case STORE_GET:
    len += 2 + m->key_len + 4;
    break;
  case STORE_ADD:
    len += 2 + m->key_len + 8;
    break;
  case STORE_BYE:
  case STORE_OK:
  case STORE_TIMEOUT:
    break;
  case STORE_VALUE:
    len += 4 + m->value_len;
    break;
  case STORE_COUNT:
    len += 8;
    break;
  case STORE_ERROR:
    len += 2 + m->value_len;
    break;
  case STORE_NOTICE:
    len += 4 + 2 + m->value_len;
    break;
  default:
    return 0;
  }
  bool text = m->type == STORE_ERROR || m->type == STORE_NOTICE;
  if (m->value_len > (text ? UINT16_MAX : STORE_MAX_VALUE) || len > STORE_MAX_FRAME) return 0;
  if (m->type == STORE_GET && (m->number < 0 || m->number > UINT32_MAX)) return 0;
  if (m->type == STORE_NOTICE && (m->number < -1 || m->number > INT32_MAX)) return 0;
  return len + 4;
}

size_t store_msg_encode(const store_msg *m, uint8_t *out, size_t cap) {
  size_t n = store_msg_size(m);
  if (n == 0 || n > cap) return 0;
  size_t len = n - 4;
  uint8_t *p = out;
  core_put32(p, (uint32_t)len);
  p[4] = (uint8_t)m->type;
  p += 5;
  if (has_key(m->type)) {
    core_put16(p, (uint16_t)m->key_len);
    memcpy(p + 2, m->key, m->key_len);
    p += 2 + m->key_len;
  }
  switch (m->type) {
  case STORE_SET:
    core_put32(p, (uint32_t)m->value_len);
    put_bytes(p + 4, m->value, m->value_len);
    break;
  case STORE_GET:
    core_put32(p, (uint32_t)m->number);
    break;
  case STORE_ADD:
  case STORE_COUNT:
    core_put64(p, (uint64_t)m->number);
    break;
  case STORE_VALUE:
    core_put32(p, (uint32_t)m->value_len);
    put_bytes(p + 4, m->value, m->value_len);
    break;
  case STORE_ERROR:
    core_put16(p, (uint16_t)m->value_len);
    put_bytes(p + 2, m->value, m->value_len);
    break;
  case STORE_NOTICE:
    core_put32(p, (uint32_t)m->number);
    core_put16(p + 4, (uint16_t)m->value_len);
    put_bytes(p + 6, m->value, m->value_len);
    break;
  default:
    break;
  }
  return n;
}

/* Takes n bytes from the cursor, or says the frame is too short. */
static const uint8_t *take(const uint8_t **p, const uint8_t *end, size_t n) {
  if ((size_t)(end - *p) < n) return NULL;
  const uint8_t *at = *p;
  *p += n;
  return at;
}

static tern_status bad(core_err *err, const char *from, const store_msg *m, const char *what) {
  return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a bad %s frame: %s", from,
                      store_msg_name(m->type), what);
}

/* The key of SET/GET/ADD. */
static tern_status decode_key(const uint8_t **p, const uint8_t *end, store_msg *m, const char *from,
                              core_err *err) {
  const uint8_t *l = take(p, end, 2);
  if (l == NULL) return bad(err, from, m, "too short for a key length");
  m->key_len = core_get16(l);
  const uint8_t *k = take(p, end, m->key_len);
  if (k == NULL) return bad(err, from, m, "key length past the end of the frame");
  m->key = (const char *)k;
  if (!store_key_valid(m->key, m->key_len))
    return bad(err, from, m, "key empty, longer than 256 bytes, or not printable ASCII");
  return TERN_OK;
}

/* A u32 (or u16 for text) length and that many bytes. */
static tern_status decode_value(const uint8_t **p, const uint8_t *end, bool text, store_msg *m,
                                const char *from, core_err *err) {
  const uint8_t *l = take(p, end, text ? 2 : 4);
  if (l == NULL) return bad(err, from, m, "too short for a value length");
  m->value_len = text ? core_get16(l) : core_get32(l);
  if (!text && m->value_len > STORE_MAX_VALUE) return bad(err, from, m, "value over 1 MiB");
  m->value = take(p, end, m->value_len);
  if (m->value == NULL) return bad(err, from, m, "value length past the end of the frame");
  return TERN_OK;
}

static tern_status decode_number(const uint8_t **p, const uint8_t *end, size_t width, store_msg *m,
                                 const char *from, core_err *err) {
  const uint8_t *n = take(p, end, width);
  if (n == NULL) return bad(err, from, m, "too short for its number");
  m->number = width == 8 ? (int64_t)core_get64(n) : width == 4 ? (int64_t)core_get32(n) : 0;
  return TERN_OK;
}

tern_status store_msg_decode(const uint8_t *body, size_t len, store_msg *m, const char *from,
                             core_err *err) {
  memset(m, 0, sizeof *m);
  if (len < 1 || len > STORE_MAX_FRAME)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a frame of %zu bytes", from, len);
  if (body[0] < STORE_SET || body[0] > STORE_NOTICE)
    return core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a frame of unknown type %u", from,
                        body[0]);
  m->type = (store_msg_type)body[0];
  const uint8_t *p = body + 1, *end = body + len;
  tern_status rc = TERN_OK;
  if (has_key(m->type)) rc = decode_key(&p, end, m, from, err);
  if (rc != TERN_OK) return rc;
  switch (m->type) {
  case STORE_SET:
  case STORE_VALUE:
    rc = decode_value(&p, end, false, m, from, err);
    break;
  case STORE_GET:
    rc = decode_number(&p, end, 4, m, from, err);
    break;
  case STORE_ADD:
  case STORE_COUNT:
    rc = decode_number(&p, end, 8, m, from, err);
    break;
  case STORE_ERROR:
    rc = decode_value(&p, end, true, m, from, err);
    break;
  case STORE_NOTICE:
    rc = decode_number(&p, end, 4, m, from, err);
    m->number = (int32_t)(uint32_t)m->number;
    if (rc == TERN_OK && m->number < -1) rc = bad(err, from, m, "rank below -1");
    if (rc == TERN_OK) rc = decode_value(&p, end, true, m, from, err);
    break;
  default:
    break;
  }
  if (rc == TERN_OK && p != end) rc = bad(err, from, m, "bytes left over after its fields");
  return rc;
}

/* ---- reading frames off a nonblocking socket --------------------------------------------- */

void store_reader_next(store_reader *r) {
  r->hdr_done = 0;
  r->body_len = 0;
  r->body_done = 0;
  if (r->body_cap > READER_KEEP) {
    free(r->body);
    r->body = NULL;
    r->body_cap = 0;
  }
}

void store_reader_free(store_reader *r) {
  free(r->body);
  memset(r, 0, sizeof *r);
}

/* The length prefix is in: check it, then make room. */
static tern_status on_length(store_reader *r, const char *from, core_err *err) {
  uint32_t len = core_get32(r->hdr);
  if (len == 0 || len > STORE_MAX_FRAME)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s announced a frame of %u bytes (the limit is %u): refused", from, len,
                        (unsigned)STORE_MAX_FRAME);
  if (len > r->body_cap) {
    uint8_t *b = realloc(r->body, len);
    if (b == NULL)
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for a %u-byte frame from %s", len, from);
    r->body = b;
    r->body_cap = len;
  }
  r->body_len = len;
  return TERN_OK;
}

tern_status store_reader_pump(store_reader *r, int fd, bool *ready, bool *moved, const char *from,
                              core_err *err) {
  *ready = false;
  if (moved) *moved = false;
  for (;;) {
    bool in_hdr = r->hdr_done < 4;
    uint8_t *dst = in_hdr ? r->hdr + r->hdr_done : r->body + r->body_done;
    size_t want = in_hdr ? 4 - r->hdr_done : r->body_len - r->body_done;
    ssize_t n = recv(fd, dst, want, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TERN_OK;
    if (n < 0 && errno != ECONNRESET) return core_err_errno(err, errno, "reading from %s", from);
    if (n <= 0) {
      bool mid = r->hdr_done > 0;
      return core_err_set(err, TERN_ERR_PEER_LOST, "%s closed the connection%s", from,
                          mid ? " in the middle of a frame" : "");
    }
    if (moved) *moved = true;
    if (in_hdr) {
      r->hdr_done += (size_t)n;
      if (r->hdr_done == 4) {
        tern_status rc = on_length(r, from, err);
        if (rc != TERN_OK) return rc;
      }
    } else {
      r->body_done += (size_t)n;
    }
    if (r->hdr_done == 4 && r->body_done == r->body_len) {
      *ready = true;
      return TERN_OK;
    }
  }
}

/* store_client.c: a rank's (or a tool's) connection to the rendezvous store.
 *
 * Requests go one at a time and each waits for its reply, so replies need no ids: the stream
 * stays in step as long as every request gets its reply read. Two things can arrive instead of a
 * reply. A NOTICE (a rank was lost) is recorded and reading goes on, because the server answers
 * every GET at once after a loss (an ERROR naming the lost rank), so the reply still comes and
 * the stream stays in step; the GET then fails with the notice's text. The end of the
 * connection, or bytes that are not the protocol, make the client unusable: every later call
 * fails with that first cause.
 *
 * A GET asks the server to hold the answer for the time left before the caller's deadline, and
 * the client waits that long plus REPLY_GRACE_S, so the server's TIMEOUT, not the client's own
 * clock, normally ends a wait. If even that passes, the reply may still come later, so the
 * connection is out of step and treated as lost.
 *
 * Not thread-safe: one thread at a time uses a client.
 */
#include "store.h"

#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPLY_GRACE_S 2.0
#define BYE_WAIT_S                                                                                 \
  2.0 /* for the server's OK to a BYE, so our close is not mistaken for a death                    \
       */

struct store_client {
  int fd;
  int rank, size;
  char what[NET_HOST_LEN + 16]; /* "store host:port" */
  uint8_t run_id[16];
  store_reader in;
  bool gone;   /* the connection is unusable; fail says why */
  bool notice; /* a rank was reported lost; fail says which */
  int lost_rank;
  core_err fail;
};

/* Text from the server goes into messages and logs: printable characters only. */
static void clean_text(char *out, size_t cap, const uint8_t *text, size_t len) {
  size_t n = CORE_MIN(len, cap - 1);
  for (size_t i = 0; i < n; i++)
    out[i] = text[i] >= 0x20 && text[i] < 0x7f ? (char)text[i] : '?';
  out[n] = '\0';
}

static tern_status fail_with(store_client *c, core_err *err) {
  return core_err_set(err, c->fail.status, "%s", c->fail.msg);
}

static tern_status set_gone(store_client *c, const core_err *why, core_err *err) {
  if (!c->gone && !c->notice) {
    c->fail = *why;
    c->lost_rank = -1;
  }
  c->gone = true;
  return core_err_set(err, why->status, "%s", why->msg);
}

static tern_status on_notice(store_client *c, const store_msg *m, core_err *err) {
  if (c->size > 0 && m->number >= c->size) {
    core_err e = {0};
    core_err_set(&e, TERN_ERR_PROTOCOL, "%s sent a notice about rank %lld of %d", c->what,
                 (long long)m->number, c->size);
    return set_gone(c, &e, err);
  }
  if (c->notice || c->gone) return TERN_OK; /* the first cause stays */
  char text[320];
  clean_text(text, sizeof text, m->value, m->value_len);
  c->notice = true;
  c->lost_rank = (int)m->number;
  core_err_clear(&c->fail);
  core_err_set(&c->fail, TERN_ERR_PEER_LOST, "%s (told by %s)", text, c->what);
  return TERN_OK;
}

/* Reads one frame other than a NOTICE (notices are recorded on the way), waiting until
 * deadline_ns; with deadline_ns 0 it only takes what is already there (*got false: nothing). */
static tern_status next_reply(store_client *c, uint64_t deadline_ns, store_msg *m, bool *got,
                              core_err *err) {
  *got = false;
  for (;;) {
    core_err e = {0};
    bool ready;
    tern_status rc = store_reader_pump(&c->in, c->fd, &ready, NULL, c->what, &e);
    if (rc == TERN_OK && ready) rc = store_msg_decode(c->in.body, c->in.body_len, m, c->what, &e);
    if (rc != TERN_OK) return set_gone(c, &e, err);
    if (ready && m->type == STORE_NOTICE) {
      rc = on_notice(c, m, err);
      store_reader_next(&c->in);
      if (rc != TERN_OK) return rc;
      continue;
    }
    if (ready) {
      *got = true;
      return TERN_OK; /* the caller calls store_reader_next */
    }
    if (deadline_ns == 0) return TERN_OK;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, core_ms_left(deadline_ns, 1000));
    if (n < 0 && errno != EINTR) {
      core_err_errno(&e, errno, "poll on %s", c->what);
      return set_gone(c, &e, err);
    }
    if (n == 0 && core_now_ns() >= deadline_ns) {
      core_err_set(&e, TERN_ERR_TIMEOUT,
                   "%s did not answer in time (its reply may still come, so the connection is "
                   "out of step and dropped)",
                   c->what);
      return set_gone(c, &e, err);
    }
  }
}

static bool reply_fits(store_msg_type req, store_msg_type rep) {
  if (rep == STORE_ERROR) return true;
  switch (req) {
  case STORE_SET:
  case STORE_BYE:
    return rep == STORE_OK;
  case STORE_GET:
    return rep == STORE_VALUE || rep == STORE_TIMEOUT;
  case STORE_ADD:
    return rep == STORE_COUNT;
  default:
    return false;
  }
}

/* Sends m and reads its reply into *r (valid until store_reader_next). */
static tern_status call(store_client *c, const store_msg *m, uint64_t reply_deadline, store_msg *r,
                        core_err *err) {
  if (c->gone) return fail_with(c, err);
  size_t n = store_msg_size(m);
  if (n == 0)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "store %s: key must be 1 to %d printable ASCII bytes, value at most %u",
                        store_msg_name(m->type), STORE_MAX_KEY, STORE_MAX_VALUE);
  uint8_t small[512], *buf = n <= sizeof small ? small : malloc(n);
  if (buf == NULL) return core_err_set(err, TERN_ERR_NOMEM, "no memory for a %zu-byte frame", n);
  store_msg_encode(m, buf, n);
  core_err e = {0};
  tern_status rc = net_write_all(c->fd, buf, n, reply_deadline, c->what, &e);
  if (buf != small) free(buf);
  if (rc != TERN_OK) return set_gone(c, &e, err);
  bool got;
  rc = next_reply(c, reply_deadline, r, &got, err);
  if (rc != TERN_OK) return rc;
  if (!reply_fits(m->type, r->type)) {
    core_err_set(&e, TERN_ERR_PROTOCOL, "%s answered %s with %s", c->what, store_msg_name(m->type),
                 store_msg_name(r->type));
    store_reader_next(&c->in);
    return set_gone(c, &e, err);
  }
  return TERN_OK;
}

/* An ERROR reply: the notice's text when a rank was lost, else the server's own words. */
static tern_status refused(store_client *c, const store_msg *req, const store_msg *r,
                           core_err *err) {
  if (c->notice) return fail_with(c, err);
  char text[320];
  clean_text(text, sizeof text, r->value, r->value_len);
  return core_err_set(err, TERN_ERR_INVALID_ARG, "%s refused %s '%.*s': %s", c->what,
                      store_msg_name(req->type), (int)req->key_len, req->key, text);
}

tern_status store_connect(store_client **out, const char *addr, int rank, int size,
                          const uint8_t *key, uint64_t deadline_ns, core_err *err) {
  *out = NULL;
  char host[NET_HOST_LEN];
  int port;
  tern_status rc = net_parse_addr(addr, host, sizeof host, &port, false, err);
  if (rc != TERN_OK) return rc;
  if (size < 0 || size > NET_MAX_RANKS || rank < -1 || (size > 0 && rank >= size))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "store_connect: rank %d of %d", rank, size);
  store_client *c = calloc(1, sizeof *c);
  if (c == NULL) return core_err_set(err, TERN_ERR_NOMEM, "no memory for a store client");
  c->rank = rank;
  c->size = size;
  c->lost_rank = -1;
  snprintf(c->what, sizeof c->what, "store %s", addr);
  rc = net_connect(host, port, deadline_ns, &c->fd, err);
  if (rc != TERN_OK) goto fail;
  net_hello mine = {.role = NET_ROLE_STORE_CLIENT, .rank = rank, .size = size, .nstreams = 1};
  net_hello theirs;
  rc = net_handshake_run(c->fd, &mine, &theirs, key, deadline_ns, err);
  if (rc != TERN_OK) goto fail;
  if (size > 0 && theirs.size != size) {
    rc = core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%s serves a job of %d ranks, and this rank was started for %d", c->what,
                      (int)theirs.size, size);
    goto fail;
  }
  memcpy(c->run_id, theirs.run_id, 16);
  *out = c;
  return TERN_OK;
fail:
  if (c->fd >= 0) close(c->fd);
  free(c);
  return rc;
}

const uint8_t *store_run_id(const store_client *c) {
  return c->run_id;
}

int store_fd(const store_client *c) {
  return c->fd;
}

static uint64_t default_deadline(void) {
  return core_deadline_after(core_config_get()->timeout_s);
}

tern_status store_set(store_client *c, const char *key, const void *value, size_t len,
                      core_err *err) {
  store_msg m = {.type = STORE_SET,
                 .key = key,
                 .key_len = strlen(key),
                 .value = value,
                 .value_len = len},
            r;
  tern_status rc = call(c, &m, default_deadline(), &r, err);
  if (rc != TERN_OK) return rc;
  if (r.type == STORE_ERROR) rc = refused(c, &m, &r, err);
  store_reader_next(&c->in);
  return rc;
}

tern_status store_add(store_client *c, const char *key, int64_t delta, int64_t *result,
                      core_err *err) {
  store_msg m = {.type = STORE_ADD, .key = key, .key_len = strlen(key), .number = delta}, r;
  tern_status rc = call(c, &m, default_deadline(), &r, err);
  if (rc != TERN_OK) return rc;
  if (r.type == STORE_ERROR)
    rc = refused(c, &m, &r, err);
  else if (result)
    *result = r.number;
  store_reader_next(&c->in);
  return rc;
}

tern_status store_get(store_client *c, const char *key, void **value, size_t *len,
                      uint64_t deadline_ns, core_err *err) {
  *value = NULL;
  *len = 0;
  if (c->notice) return fail_with(c, err);
  uint64_t now = core_now_ns();
  uint64_t wait_ms = deadline_ns > now ? (deadline_ns - now) / 1000000u : 0;
  store_msg m = {.type = STORE_GET,
                 .key = key,
                 .key_len = strlen(key),
                 .number = (int64_t)CORE_MIN(wait_ms, (uint64_t)UINT32_MAX)},
            r;
  uint64_t grace = (uint64_t)(REPLY_GRACE_S * 1e9);
  uint64_t reply_deadline = deadline_ns > UINT64_MAX - grace ? UINT64_MAX : deadline_ns + grace;
  tern_status rc = call(c, &m, CORE_MAX(reply_deadline, now + grace), &r, err);
  if (rc != TERN_OK) return rc;
  if (c->notice)
    rc = fail_with(c, err); /* a rank was lost meanwhile */
  else if (r.type == STORE_ERROR)
    rc = refused(c, &m, &r, err);
  else if (r.type == STORE_TIMEOUT)
    rc = core_err_set(err, TERN_ERR_TIMEOUT, "%s: key '%s' was not set within %.1f s", c->what, key,
                      (double)wait_ms / 1000);
  else if ((*value = malloc(r.value_len ? r.value_len : 1)) == NULL)
    rc = core_err_set(err, TERN_ERR_NOMEM, "no memory for a %zu-byte value", r.value_len);
  else {
    memcpy(*value, r.value, r.value_len);
    *len = r.value_len;
  }
  store_reader_next(&c->in);
  return rc;
}

tern_status store_check(store_client *c, int *lost_rank, core_err *err) {
  if (lost_rank) *lost_rank = -1;
  if (!c->gone && !c->notice) {
    store_msg m;
    bool got;
    tern_status rc = next_reply(c, 0, &m, &got, err);
    if (rc == TERN_OK && got) {
      core_err e = {0};
      core_err_set(&e, TERN_ERR_PROTOCOL, "%s sent %s, and no request was waiting", c->what,
                   store_msg_name(m.type));
      store_reader_next(&c->in);
      set_gone(c, &e, NULL);
    }
  }
  if (!c->gone && !c->notice) return TERN_OK;
  if (lost_rank) *lost_rank = c->lost_rank;
  return core_err_set(err, TERN_ERR_PEER_LOST, "%s", c->fail.msg);
}

void store_close(store_client *c, bool clean) {
  if (c == NULL) return;
  if (clean && !c->gone) {
    /* wait for the OK: closing with unread bytes would reset the connection, and the server
     * could lose the BYE and report this rank dead */
    store_msg m = {.type = STORE_BYE}, r;
    if (call(c, &m, core_deadline_after(BYE_WAIT_S), &r, NULL) == TERN_OK)
      store_reader_next(&c->in);
  }
  close(c->fd);
  store_reader_free(&c->in);
  free(c);
}

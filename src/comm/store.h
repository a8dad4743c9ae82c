/* store.h: the rendezvous store, a small TCP key-value server, and its client.
 *
 * Ranks meet through it: each publishes its address and finds the others'. It also watches the
 * job: every rank keeps its store connection open while its communicator lives, so the server
 * sees a rank vanish (its connection closes without a goodbye) and pushes a notice naming that
 * rank to every other client. `tern run` serves the store and also reports children that die;
 * under torchrun-style variables, rank 0 serves it from a thread of its own.
 *
 * Wire protocol (after net_handshake with roles STORE_CLIENT / STORE_SERVER; little-endian):
 *   frame   = u32 length of what follows (<= STORE_MAX_FRAME), u8 type, body
 *   SET     = u16 key length, key, u32 value length, value          -> OK
 *   GET     = u16 key length, key, u32 wait in ms                    -> VALUE | TIMEOUT
 *             (the server holds the answer until the key is set or the wait passes; once a
 *             rank is lost, a missing key is answered at once with ERROR, the notice's text)
 *   ADD     = u16 key length, key, i64 delta                         -> COUNT (i64 new value)
 *   BYE     = (empty): a clean goodbye, the server closes            -> OK
 *   replies = OK (empty), VALUE (u32 length, value), COUNT (i64), TIMEOUT (empty),
 *             ERROR (u16 length, text)
 *   NOTICE  = i32 rank, u16 length, text: pushed by the server at any time, "rank 3 lost: ...";
 *             also sent to every client that connects after the loss
 * A client sends one request at a time and reads its reply before the next (NOTICEs may come
 * between), so replies carry no ids. A server reads no further request from a client while a
 * GET of its is held or while more than 64 KiB of replies to it are unsent.
 * Keys are 1..STORE_MAX_KEY bytes of printable ASCII, values at most STORE_MAX_VALUE. ADD keeps
 * its counter as the key's value in decimal (a GET of it returns "5"), so a GET can wait for a
 * counter to appear; ADD on a key holding anything else is an ERROR. The server refuses, logs and
 * closes any connection that breaks this (bad handshake, bad frame, absurd length, nothing sent
 * within STORE_HELLO_SECONDS of connecting) and carries on serving everyone else.
 */
#ifndef TERN_COMM_STORE_H
#define TERN_COMM_STORE_H

#include "core/core.h"

#define STORE_MAX_KEY 256
#define STORE_MAX_VALUE (1u << 20)
#define STORE_MAX_FRAME (STORE_MAX_VALUE + STORE_MAX_KEY + 16)
#define STORE_HELLO_SECONDS 5.0

typedef enum store_msg_type {
  STORE_SET = 1,
  STORE_GET,
  STORE_ADD,
  STORE_BYE,
  STORE_OK,
  STORE_VALUE,
  STORE_COUNT,
  STORE_TIMEOUT,
  STORE_ERROR,
  STORE_NOTICE
} store_msg_type;

/* One decoded frame; key and value point into the buffer that was decoded. */
typedef struct store_msg {
  store_msg_type type;
  const char *key;
  size_t key_len;
  const uint8_t *value; /* VALUE, SET; ERROR and NOTICE text */
  size_t value_len;
  int64_t number; /* ADD delta, COUNT value, GET wait in ms, NOTICE rank */
} store_msg;

/* ---- the wire form (store_proto.c) ------------------------------------------------------- */

/* The length of m's frame, prefix included; 0 when m is invalid. */
size_t store_msg_size(const store_msg *m);
/* Encodes m into out (cap bytes): the full frame, length prefix included. Returns the frame
 * length, or 0 when it does not fit or m is invalid. */
size_t store_msg_encode(const store_msg *m, uint8_t *out, size_t cap);
/* Decodes the body of one frame (what follows the u32 length). Every length and the type are
 * checked against the frame; `from` names the sender in the message. */
tern_status store_msg_decode(const uint8_t *body, size_t len, store_msg *m, const char *from,
                             core_err *err);
/* Keys are 1..STORE_MAX_KEY bytes of printable ASCII (0x20..0x7e): they appear in log lines. */
bool store_key_valid(const char *key, size_t len);
/* "SET", "NOTICE", ...; "?" outside the enum. */
const char *store_msg_name(int type);

/* Reads frames off a nonblocking socket a piece at a time. The length prefix is checked against
 * STORE_MAX_FRAME before the body is allocated; between frames at most a few KiB stay held. */
typedef struct store_reader {
  uint8_t hdr[4];
  size_t hdr_done;
  uint8_t *body;
  size_t body_len, body_cap, body_done;
} store_reader;

/* Reads what fd has, up to the end of one frame. *ready: body[0..body_len) holds a whole frame
 * (call store_reader_next once done with it). *moved (may be NULL): some bytes came. A closed
 * connection is TERN_ERR_PEER_LOST, an absurd length TERN_ERR_PROTOCOL. */
tern_status store_reader_pump(store_reader *r, int fd, bool *ready, bool *moved, const char *from,
                              core_err *err);
void store_reader_next(store_reader *r);
void store_reader_free(store_reader *r);

/* ---- the server (store_server.c) --------------------------------------------------------- */

typedef struct store_server store_server;

/* Serves on host:port (port 0: any free port) from a thread of its own, for a job of world_size
 * ranks, with run_id (16 bytes) and an optional key (NULL: none). */
tern_status store_server_start(store_server **out, const char *host, int port, int world_size,
                               const uint8_t run_id[16], const uint8_t *key, core_err *err);
/* "host:port" clients can reach it at. */
const char *store_server_addr(const store_server *s);
/* Tells every client that rank is lost, with why ("killed by signal 9"); `tern run` calls it
 * when a child dies. The first report of a rank wins; later ones are dropped. */
void store_server_report_lost(store_server *s, int rank, const char *why);
/* Waits until every rank that connected has said BYE or is gone, or until timeout_s passes. */
tern_status store_server_wait_all_left(store_server *s, double timeout_s, core_err *err);
/* Whether the job is over, waiting for it at most wait_ms: every rank has connected and left,
 * or a rank was lost and every other has left (`tern store` serves until then). */
bool store_server_job_over(store_server *s, int wait_ms);
/* Stops the thread, closes every connection, frees s. NULL is accepted. */
void store_server_stop(store_server *s);

/* ---- the client (store_client.c) --------------------------------------------------------- */

typedef struct store_client store_client; /* used by one thread at a time */

/* Connects to the store at addr ("host:port") as rank of size (rank -1: a tool), retrying until
 * deadline_ns, and runs the handshake. */
tern_status store_connect(store_client **out, const char *addr, int rank, int size,
                          const uint8_t *key, uint64_t deadline_ns, core_err *err);
/* The run id the server gave. */
const uint8_t *store_run_id(const store_client *c);

/* SET and ADD wait for their reply at most TERN_TIMEOUT seconds. A request the server refuses
 * (a full store, ADD on a value that is not a counter) is TERN_ERR_INVALID_ARG with the server's
 * reason, and the client stays usable; a broken connection makes every later call fail with its
 * cause. */
tern_status store_set(store_client *c, const char *key, const void *value, size_t len,
                      core_err *err);
/* Waits until key is set (or deadline_ns: TERN_ERR_TIMEOUT); *value is malloc'd, the caller
 * frees it. A NOTICE that arrives meanwhile fails the wait with TERN_ERR_PEER_LOST, and so does
 * every GET after one: the job has lost a rank. */
tern_status store_get(store_client *c, const char *key, void **value, size_t *len,
                      uint64_t deadline_ns, core_err *err);
tern_status store_add(store_client *c, const char *key, int64_t delta, int64_t *result,
                      core_err *err);

/* The socket, for poll(): readable when the server pushed something (a NOTICE) or closed. */
int store_fd(const store_client *c);
/* Reads what the server pushed, without blocking: TERN_OK when nothing bad came,
 * TERN_ERR_PEER_LOST with the notice's text (rank and cause) when a rank was reported lost or
 * the store itself went away. Once failed, it keeps failing with the same text. */
tern_status store_check(store_client *c, int *lost_rank, core_err *err);

/* Closes the connection; with clean, says BYE first so the server does not report this rank
 * lost. NULL is accepted. */
void store_close(store_client *c, bool clean);

#endif /* TERN_COMM_STORE_H */

/* swarm.h: the swarm layer's insides: peers, DHT records, messages, the listener, matchmaking
 * and the group all-reduce. The public face is the tern_swarm_* section of tern.h.
 *
 * One peer = one TCP listening socket and one OpenDHT node on the same port number (TCP for
 * averaging, UDP for the DHT). A listener thread accepts connections, runs tern's handshake
 * (role NET_ROLE_PEER, the run id, the optional key), reads the first message header, answers
 * what it can alone (a state request, a leave notice) and queues the rest (joins, parts) for
 * the thread inside tern_swarm_average.
 */
#ifndef TERN_SWARM_H
#define TERN_SWARM_H

#include "core/core.h"
#include "net/net.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define SWARM_MAX_GROUP 64         /* contributor masks are 64-bit */
#define SWARM_CONNECT_SECONDS 2.0  /* a TCP connect to a member: no answer past this, it is gone */
#define SWARM_REFUSED_SECONDS 0.25 /* ... and refused past this */
/* A member known to listen (it matched with us, or answered before) that refuses a connection
 * is dead: retried only this long, for a passing EAGAIN or EINTR (swarm_dial_refused). */
#define SWARM_REFUSED_DEAD_SECONDS 0.01
#define SWARM_HOST_LEN 64
#define SWARM_REGION_LEN 64

typedef struct swarm_member {
  uint64_t id;
  char host[SWARM_HOST_LEN];
  int port;
  double bw; /* declared bandwidth, bytes/s */
  /* half.c: 1 + the slice (half of the vector) this peer would carry across regions alone this
   * round, its region partner carrying the other; 0: the whole vector */
  uint8_t half;
} swarm_member;

/* ---- matchmaking records on the DHT (record.c) ------------------------------------------- */
/* Wire form: "TSR2" | u8 keyed | u8 hostlen | u16 port | u32 round | u64 id | f64 bw |
 * group key (32) | u64 stamp | u32 ttl | host | [crypto_auth MAC (32) over all before it, when
 * keyed]. The group key and round inside the record (covered by the MAC) stop a record being
 * replayed elsewhere. stamp: the writer's wall clock in ms, growing with each record it writes;
 * the record stands for ttl ms from then, and a ttl of 0 withdraws the writer's earlier records
 * under the key (the round-free pool, docs/SWARM.md "Matching under churn"). */
#define SWARM_RECORD_MAX (72 + SWARM_HOST_LEN + 32)
#define SWARM_ANY_ROUND UINT32_MAX /* decode: a round-free key (the pool) */
typedef struct swarm_record {
  swarm_member m;
  uint32_t round;
  uint64_t stamp_ms;
  uint32_t ttl_ms;
} swarm_record;
size_t swarm_record_encode(const swarm_member *m, uint32_t round, uint64_t stamp_ms,
                           uint32_t ttl_ms, const uint8_t gkey[32], const uint8_t *key,
                           uint8_t *out);
/* A record's end: host after the fixed bytes, then, keyed, the MAC over all of it; the length.
 * (status.c's records end the same way.) */
size_t swarm_record_close(uint8_t *out, size_t fixed, const char *host, const uint8_t *key);
/* TERN_ERR_PROTOCOL for malformed records, records of another round (unless SWARM_ANY_ROUND)
 * or group key, and keyedness that differs from ours; TERN_ERR_AUTH for a bad MAC. */
tern_status swarm_record_decode(const uint8_t *in, size_t len, uint32_t round,
                                const uint8_t gkey[32], const uint8_t *key, swarm_record *r,
                                core_err *err);

/* ---- messages after the handshake (wire.c) ----------------------------------------------- */
/* Header, 40 bytes little-endian: "TSW1" | u8 type | u8 codec | u16 part | u32 round |
 * u32 zero | u64 sender | u64 tag | u64 payload length. */
#define SWARM_HDR_LEN 40
#define SWARM_SMALL_MAX 65536       /* control messages: joins, groups, redirects */
#define SWARM_DATA_MAX (1ull << 34) /* data messages: 16 GiB, far past any vector */
#define SWARM_REJECT_LATE 1 /* a REJECT's payload: u8 this, u32 the sender's first open round */
#define SWARM_REJECT_GONE 2 /* ... or this, u32 unused: not in the pool (any more) */
#define SWARM_LATE_LEN 5    /* that payload's length */
#define SWARM_MAX_JUMP 1024 /* a late peer skips at most this many rounds at once */

enum swarm_type {
  SWARM_JOIN = 1,   /* follower -> leader: my member record */
  SWARM_GROUP,      /* leader -> follower: the members, sorted by id */
  SWARM_REDIRECT,   /* "I follow this peer": its member record */
  SWARM_REJECT,     /* no group for you here (payload SWARM_REJECT_LATE: the round has closed) */
  SWARM_PART,       /* contributor -> reducer: f64 weight + a part of the vector */
  SWARM_RESULT,     /* reducer -> contributor: f64 total weight, u64 mask, the averaged part */
  SWARM_STATE_REQ,  /* joiner -> live peer */
  SWARM_STATE,      /* u32 round, u64 count, f32 values */
  SWARM_LEAVE,      /* a peer leaving cleanly */
  SWARM_HELLO,      /* a new peer to its bootstrap peers: my member record (the DHT port) */
  SWARM_RESULT_REQ, /* member -> member: your result of part `part` of this all-reduce? */
  SWARM_PENDING,    /* "not yet: my own wait for that part is still running" */
  SWARM_ROUND_REQ,  /* a leader nobody joined -> a peer it saw: has `round` closed for you?
                       (with the pool's tag: are you still in the pool?) Payload: the asker's
                       member record, u8 1 when it leads a group on that key (match.c) */
  SWARM_PART_IN,    /* reducer -> contributor, before the result: your part has arrived whole */
  SWARM_REF,        /* reducer -> member (int8ef): 8-bit codes of its own part, the reference */
  SWARM_PROBE,      /* prober -> peer: bytes to time (probe.c); the answer: u64 bytes read */
  SWARM_HALF,       /* region partner -> partner after a cross-region round: its slice (half.c) */
  SWARM_TYPE_END
};

typedef struct swarm_hdr {
  uint8_t type, codec;
  uint16_t part;
  uint32_t round;
  uint64_t sender, tag, len;
} swarm_hdr;

void swarm_hdr_encode(const swarm_hdr *h, uint8_t out[SWARM_HDR_LEN]);
/* Checks magic, type, codec, zero bytes, and the length against the type's bound. */
tern_status swarm_hdr_decode(const uint8_t in[SWARM_HDR_LEN], swarm_hdr *h, const char *from,
                             core_err *err);
/* Members: u64 id | u16 port | u8 hostlen | host | f64 bw | u8 half; hosts are checked to be
 * printable address characters. */
#define SWARM_MEMBER_MAX (20 + SWARM_HOST_LEN) /* a member's encoded size at most */
size_t swarm_member_encode(const swarm_member *m, uint8_t *out);
tern_status swarm_member_decode(const uint8_t *in, size_t len, size_t *used, swarm_member *m,
                                core_err *err);
const char *swarm_type_name(int type);
/* A host is 1..SWARM_HOST_LEN-1 characters of [0-9A-Za-z.:-]: an address or a plain name. */
bool swarm_host_ok(const char *h, size_t n);

/* ---- the peer ---------------------------------------------------------------------------- */

#define SWARM_QUEUE_MAX 256
#define SWARM_PENDING_MAX 64

typedef struct swarm_conn {
  int fd;
  swarm_hdr hdr;
  uint8_t *payload; /* control messages only (len <= SWARM_SMALL_MAX); data stays in the socket */
  char from[96];
  uint64_t expires_ns;
} swarm_conn;

/* limit.c: the listener's limits per source address (the listener thread's alone). */
#define SWARM_LIMIT_SOURCES 64
#define SWARM_LIMIT_HOST 48
#define SWARM_CONN_RATE 2000        /* connections a second from one address, and the burst */
#define SWARM_REFUSALS_MAX 20       /* refusals in a second before an address is blocked */
#define SWARM_PENDING_PER_SOURCE 32 /* handshakes in progress from one address */
#define SWARM_LOG_LINES 10          /* refusal lines a second; the rest are counted */
typedef struct swarm_source {
  bool used;
  char host[SWARM_LIMIT_HOST];
  double tokens;
  int pending;
  unsigned refusals;
  uint64_t seen_ns, window_ns, blocked_until_ns;
} swarm_source;
typedef struct swarm_limits {
  swarm_source src[SWARM_LIMIT_SOURCES];
  uint64_t log_window_ns;
  unsigned lines;
  unsigned long long unlogged, dropped;
} swarm_limits;
/* A new connection from `from` ("host:port"): false, close it unread (counted, not logged). */
bool swarm_limit_admit(swarm_limits *l, const char *from, uint64_t now);
/* An admitted connection's handshake is over: refused, or its first message taken. */
void swarm_limit_done(swarm_limits *l, const char *from, bool refused, uint64_t now);
/* May a refusal be logged now? (SWARM_LOG_LINES a second; the rest are counted.) */
bool swarm_limit_log(swarm_limits *l, uint64_t now);
/* Once a second: one line for what was refused or dropped and not logged. */
void swarm_limit_tick(swarm_limits *l, uint64_t now);

struct dht_runner;
struct get_ctx;
struct swarm_watch;
struct dht_op_token;

/* status.c: a peer's progress as `tern swarm status` lists it (one DHT record). */
typedef struct swarm_status {
  uint64_t id;
  char host[SWARM_HOST_LEN];
  int port;
  unsigned long long epoch;
  double samples_per_s;
  uint32_t round;
  int group_size;   /* of the peer's last round (1: alone; 0: none yet) */
  int ttl;          /* seconds the record stands for after its publication */
  double published; /* Unix seconds */
} swarm_status;

/* The results this peer received in its current all-reduce, part by part (repair.c), for the
 * members whose reducer died before answering them. */
enum swarm_held_status { SWARM_HELD_PENDING = 0, SWARM_HELD_HAVE, SWARM_HELD_NONE };
typedef struct swarm_held {
  uint32_t round;
  uint64_t tag;
  int n;
  uint8_t status[SWARM_MAX_GROUP];
  double W[SWARM_MAX_GROUP];
  uint64_t mask[SWARM_MAX_GROUP];
  float *values[SWARM_MAX_GROUP]; /* owned; len[j] floats */
  size_t len[SWARM_MAX_GROUP];
} swarm_held;

struct tern_swarm {
  uint64_t id;
  swarm_member self;
  char addr[96];
  uint8_t run_id[16];
  uint8_t run_hash[32];
  bool keyed;
  uint8_t key[32];
  int ndims;
  int coords[TERN_SWARM_MAX_DIMS];
  int grid[TERN_SWARM_MAX_DIMS]; /* sizes per axis; 0: unknown */
  char bootstrap[TERN_SWARM_MAX_BOOTSTRAP][NET_HOST_LEN + 8];
  int nbootstrap;
  struct dht_runner *dht;
  struct get_ctx *gets;            /* DHT gets whose done callback has not come (dht.c), under mu */
  struct swarm_watch *watch;       /* what the watched keys brought (dht.c) */
  struct dht_op_token *pool_watch; /* the pool's key, watched from the first visit on */

  int listen_fd;
  int wake[2]; /* a byte written here stops the listener */
  pthread_t thread;
  bool thread_started;

  pthread_mutex_t mu; /* guards everything below */
  pthread_cond_t cv;  /* signalled when the queue grows */
  swarm_conn queue[SWARM_QUEUE_MAX];
  int nqueue;
  uint64_t departed[64]; /* ids that said SWARM_LEAVE, a ring */
  unsigned ndeparted;
  float *state;
  size_t state_count;
  uint32_t state_round;
  bool has_state;
  unsigned long long refused; /* connections refused by the listener, for tests and logs */
  swarm_limits limits;        /* the listener thread's (limit.c) */
  swarm_member hellos[16];    /* DHT addresses of peers that said hello, a ring (reconnect) */
  unsigned nhellos;
  /* While this peer follows a leader on the key of tag follow_tag (a line's names its round),
   * joins for that key are redirected to the leader by the listener at once (leadership only
   * points to lower ids). */
  bool following;
  uint64_t follow_tag;
  /* The round-free pool (match.c): its key's tag, and whether this peer is matching there now;
   * a join or ROUND_REQ for the pool when it is not is answered SWARM_REJECT_GONE. */
  uint64_t pool_tag;
  bool in_pool;
  /* The round and the key (its tag) this peer is matching on now, 0 between matchings: a
   * ROUND_REQ for another line of that round is answered SWARM_REJECT_GONE (the asker's line
   * is not this peer's any more: placed by region, it moved to another place). */
  uint32_t match_round;
  uint64_t match_tag;
  /* The line key (its tag) this peer leads a group on now, 0 otherwise: a ROUND_REQ there from
   * a lower id that leads on it too is queued for the leader, which then yields to it (two
   * leaders on one line, match.c: lead). One such ask is queued per lead (lead_yield_queued):
   * the queue holds joins, and asks cannot fill it. */
  uint64_t lead_tag;
  bool lead_yield_queued;
  uint64_t stamp_ms; /* the last record's stamp (averaging thread only; match.c) */
  swarm_member leader;
  /* Rounds 0..closed_rounds-1 have done their matching here: a join for one of them comes too
   * late and the listener says so at once (SWARM_REJECT_LATE), so that the latecomer moves on. */
  uint32_t closed_rounds;
  /* A late peer's next round: the first round still open at the peer that turned it away
   * (averaging thread only). */
  uint32_t catch_up;
  uint32_t
      last_round; /* the run's last round (tern_swarm_average_options.rounds - 1), or UINT32_MAX */

  swarm_held held;

  uint32_t round; /* used by the averaging thread only */
  double clip;    /* this round's CenteredClip radius, 0: off (clip.c) */
  swarm_member last_group[SWARM_MAX_GROUP];
  int last_group_n;
  /* The others of the last round's group, when its all-reduce updated every part here: this
   * peer holds their average already, and a pool avoids them (match.c). */
  uint64_t partners[SWARM_MAX_GROUP];
  int npartners;
  /* How many peers (this one included) were on this peer's line of each axis, and in the pool,
   * the last time it matched there: a group forms as soon as that many are in, and a peer that
   * was alone on its line looks only briefly before it goes to the pool (match.c). 0: never
   * matched there yet. */
  int line_seen[TERN_SWARM_MAX_DIMS];
  swarm_member line[TERN_SWARM_MAX_DIMS][SWARM_MAX_GROUP]; /* who they were (line_seen each) */
  bool line_known[TERN_SWARM_MAX_DIMS]; /* false: expect nothing yet (a hello came since) */
  int pool_seen;
  /* Peers found dead or stalled (ROUND_REQ unanswered) in this matching: not asked again in it,
   * so that a stalled one costs its silence once (match.c). */
  uint64_t silent[SWARM_MAX_GROUP];
  int nsilent;
  /* How long a member asked whether it is alive may take to answer, from the matching time of
   * the last call (match.c, alive_ask_s); 0 before the first. */
  double alive_ask_s;
  unsigned hellos_known; /* nhellos at the last call (match.c) */
  /* nhellos when each was learnt (when the reading of that key ended): placed by region, a hello
   * heard after it makes it news again (match.c) */
  unsigned line_hellos[TERN_SWARM_MAX_DIMS], pool_hellos;
  unsigned read_hellos; /* nhellos when the last reading of a key ended (match.c) */
  uint64_t line_late[TERN_SWARM_MAX_DIMS]; /* under mu: a late joiner's id (swarm_note_late_join) */
  /* region.c: with a region, axis 0 holds the peers of one region and axis 1 one peer of each
   * region (coords[1] = region_coord, coords[0] = the peer's place in its last region group). */
  bool regional;
  char region[SWARM_REGION_LEN];
  /* probe.c: the bandwidth this peer measured (self.bw), when it was not declared */
  bool measure_bw;
  bool probed;
  uint32_t probed_round;
  atomic_int probes_serving; /* probe answers in flight (the listener's threads) */
  /* half.c: the partner of the last region round (a group of 2), the round, and a hash of the
   * vector and weight it left here when it updated both parts (zero otherwise) */
  swarm_member region_partner;
  bool has_region_partner;
  uint32_t region_partner_round;
  uint8_t region_hash[16];
  bool region_hash_set;
  /* compress/ef.c: the int8ef residual, in weight x value units, one per element (count) */
  float *ef_mass;
  size_t ef_count;
  /* Under mu: the progress record tern_swarm_publish_status set, refreshed by the listener at
   * status_next_ns (status.c). */
  swarm_status status;
  bool status_on;
  uint64_t status_next_ns;
  core_err err;
};

/* swarm.c: a peer with nothing started (fds -1, lock and condition ready); NULL: no memory. */
tern_swarm *swarm_new(void);
/* swarm.c: the run's hash and the key's, from the run id and the secret (or TERN_KEY). */
void swarm_identity(tern_swarm *sw, const char *run_id, const char *key);

/* status.c: TERN_SWARM_STATUS_TTL, or its default. */
tern_status swarm_status_ttl(double *ttl, core_err *err);
/* The listener's tick: puts the status record again when it is due. */
void swarm_status_tick(tern_swarm *sw, uint64_t now_ns);
/* The live status records of the run (publishers' ttl ttl), each peer's newest, at most max;
 * each DHT get waits at most timeout_s. Returns how many. */
int swarm_status_read(tern_swarm *sw, double ttl, double timeout_s, swarm_status *out, int max);
/* observe.c: a DHT node of the run without a listener (it takes no part in rounds), for
 * reading records; *out NULL on failure. tern_swarm_leave frees it. */
tern_status swarm_observe(tern_swarm **out, const char *run_id, const char *key,
                          const char *const *bootstrap, int nbootstrap, bool insecure,
                          core_err *err);

/* listen.c */
tern_status swarm_listener_start(tern_swarm *sw, core_err *err);
void swarm_listener_stop(tern_swarm *sw);
/* Takes the first queued connection that satisfies want(conn, arg), waiting until deadline_ns;
 * false when none came. Expired entries are closed on the way. */
bool swarm_queue_take(tern_swarm *sw, bool (*want)(const swarm_conn *, void *), void *arg,
                      uint64_t deadline_ns, swarm_conn *out);
bool swarm_departed(tern_swarm *sw, uint64_t id);
void swarm_conn_close(swarm_conn *c);

/* secure.c: true for 127.0.0.0/8, ::1, ::ffff:127.x and "localhost". */
bool swarm_host_loopback(const char *host);
/* Without a key, any address but loopback (listen or bootstrap) is refused (TERN_ERR_AUTH)
 * unless insecure, which logs a warning instead. */
tern_status swarm_check_exposure(const char *listen_host, const char (*bootstrap)[NET_HOST_LEN + 8],
                                 int nbootstrap, bool keyed, bool insecure, core_err *err);
/* The DHT's network id: from the key's subkey when keyed, else from the run id. */
uint32_t swarm_dht_network(const tern_swarm *sw);
/* Where the records of group key gkey are stored: keyed, a keyed hash of it (no one without the
 * key can find or fill that place); else gkey itself. */
void swarm_dht_location(const tern_swarm *sw, const uint8_t gkey[32], uint8_t out[32]);

/* dht.c: OpenDHT, bootstrapped only from the given addresses, peer discovery off. */
tern_status swarm_dht_start(tern_swarm *sw, int port, core_err *err);
void swarm_dht_stop(tern_swarm *sw);
/* Pings host:port so that this node knows it (see SWARM_HELLO in listen.c). */
void swarm_dht_ping(tern_swarm *sw, const char *host, int port);
void swarm_dht_put(tern_swarm *sw, const uint8_t gkey[32], const uint8_t *data, size_t len);
/* Calls each(value, len, arg) for the values stored under gkey as they come, waiting at most
 * timeout_s. A value longer than SWARM_RECORD_MAX comes with its true len but only its first
 * SWARM_RECORD_MAX bytes: no record is that long, so it is refused by its length. It returns
 * early once each returns true: a get waits for every node it asked, and one dead node (a
 * killed peer's) held each get to its timeout, every round. Only the caller can say it has
 * enough: a count of values would count forged, refused and already-seen records, and end the
 * get before the ones it waits for (docs/SWARM.md, "Matching under churn"). */
void swarm_dht_get(tern_swarm *sw, const uint8_t gkey[32], double timeout_s,
                   bool (*each)(const uint8_t *, size_t, void *), void *arg);
/* A key read again and again for the whole run (the round-free pool) is watched: one OpenDHT
 * listen, whose values are kept as they come (the last 1024) and read locally with
 * swarm_dht_watched from *pos on (0: all kept). Polling gets on one long-lived key piled up
 * inside OpenDHT: each adds a query that every later step of the key's search walks, and a
 * peer of the kill test spent minutes of CPU there. NULL: not watched (out of memory). Line
 * keys, one per round, are read by gets: watching them was tried, and after a kill the listen
 * brought the others' records only after a quarter of a second, every round. */
struct dht_op_token *swarm_dht_watch(tern_swarm *sw, const uint8_t gkey[32]);
void swarm_dht_watched(tern_swarm *sw, unsigned long long *pos,
                       bool (*each)(const uint8_t *, size_t, void *), void *arg);

/* Opens a connection to m and runs the handshake; the fd is nonblocking. */
tern_status swarm_dial(tern_swarm *sw, const swarm_member *m, uint64_t deadline_ns, int *fd,
                       core_err *err);
/* The same, with refusals retried for refused_s (0: a refusal ends it at once). */
tern_status swarm_dial_refused(tern_swarm *sw, const swarm_member *m, uint64_t deadline_ns,
                               double refused_s, int *fd, core_err *err);
/* Sends a header and payload / reads a header (checked) and its payload (len <= max). */
tern_status swarm_send(int fd, const swarm_hdr *h, const void *payload, uint64_t deadline_ns,
                       const char *what, core_err *err);
tern_status swarm_recv_hdr(int fd, swarm_hdr *h, uint64_t deadline_ns, const char *what,
                           core_err *err);
/* Reads the payload (h.len bytes) of the header just received, and on a keyed connection its
 * tag, which must verify (TERN_ERR_AUTH). Every payload is read with it, never with a plain read.
 */
tern_status swarm_recv_payload(int fd, void *buf, size_t len, uint64_t deadline_ns,
                               const char *what, core_err *err);

/* seal.c: per-message AEAD on keyed connections (see the top of seal.c). */
#define SWARM_SEAL_TAG 16 /* crypto_aead_chacha20poly1305_ietf_ABYTES */
/* After a handshake on fd: keyed, its session from both nonces; unkeyed, no seal. */
tern_status swarm_seal_begin(const tern_swarm *sw, int fd, const uint8_t dialer_nonce[32],
                             const uint8_t acceptor_nonce[32], bool dialer, core_err *err);
/* SWARM_SEAL_TAG on a sealed connection, else 0: the bytes that follow a payload. */
size_t swarm_seal_overhead(int fd);
/* The whole message as sent on fd (header, payload sealed or not, tag), in *frame (malloc). */
tern_status swarm_seal_frame(int fd, const swarm_hdr *h, const void *payload, uint8_t **frame,
                             size_t *len, core_err *err);
/* The header (wire form) of the message about to be read on fd: the additional data. */
void swarm_seal_expect(int fd, const uint8_t hdr[SWARM_HDR_LEN]);
/* Checks tag and decrypts buf (len bytes, in place) on fd, else TERN_ERR_AUTH naming from. */
tern_status swarm_seal_open(int fd, uint8_t *buf, size_t len, const uint8_t tag[SWARM_SEAL_TAG],
                            const char *from, core_err *err);

/* match.c: the DHT key of this peer's group in a round (a line of the grid), and of the pool
 * where lonely peers of any round meet. */
void swarm_group_key(const tern_swarm *sw, uint32_t round, uint8_t out[32]);
void swarm_pool_key(const tern_swarm *sw, uint8_t out[32]);
/* The group for this round, members sorted by id (n = 1: alone). *tag names the
 * group's all-reduce; *pooled says it was found in the round's pool, not on the grid line. */
typedef struct swarm_match_opts {
  int min_group, target_group;
  double match_timeout;
  int random_groups; /* > 0: a random group of the round instead of the grid line */
  int expect;        /* peers seen on this kind of key the last time (match.c); 0: not known */
} swarm_match_opts;
tern_status swarm_match(tern_swarm *sw, const swarm_match_opts *o, swarm_member *group, int *n,
                        uint64_t *tag, bool *pooled, core_err *err);
/* After an all-reduce on the line of axis: the members that failed it and do not answer that
 * they are alive are not expected there next time (a killed one would otherwise cost the next
 * round on that axis a settling time). */
void swarm_line_drop_failed(tern_swarm *sw, int axis, const uint64_t *failed, int nfailed);
/* Whether m answers that it is alive (a ROUND_REQ, match.c): a dead peer refuses at once, a
 * stalled one is silent for the alive deadline. */
bool swarm_peer_answers(tern_swarm *sw, const swarm_member *m);
/* listen.c: a REJECT with a reason on fd: SWARM_REJECT_LATE "too late for round", open being
 * the first round still open where the others are (this peer's closed_rounds, or the round a
 * leader found them at); SWARM_REJECT_GONE "not in the pool" (open unused). */
void swarm_send_reject(tern_swarm *sw, int fd, uint32_t round, uint8_t code, uint32_t open);
/* listen.c: a join for the key this peer follows someone on is sent on to that leader
 * (SWARM_REDIRECT on fd); false, nothing sent, when it does not follow there. Any thread. */
bool swarm_redirect_join(tern_swarm *sw, int fd, const swarm_hdr *j);
/* listen.c: "join leader instead" (SWARM_REDIRECT) on fd, for a join of round. Any thread. */
void swarm_send_redirect(tern_swarm *sw, int fd, uint32_t round, const swarm_member *leader);
/* Answers the queued joins of rounds before `round` (and of `round` once assembled). */
void swarm_reject_stale(tern_swarm *sw, uint32_t round, bool include_current);
/* A join, or a leader's "has this round closed?" (ROUND_REQ with the line's tag), turned away as
 * late: when it was for this peer's line, that line expects one more peer next time on its axis
 * (line_late). Any thread. */
void swarm_note_late_join(tern_swarm *sw, const swarm_hdr *join);

/* clip.c: true when every value is finite (a peer's values are checked before use). */
bool swarm_values_finite(const float *x, size_t n);
/* CenteredClip of the m contributions x[i] (len floats each) with radius tau > 0 into out;
 * members count equally. */
tern_status swarm_centered_clip(const float *const *x, int m, size_t len, double tau, float *out);

/* butterfly.c: the group all-reduce. */
typedef struct swarm_avg_result {
  int parts_updated;
  int failed_count;
  uint64_t failed[TERN_SWARM_MAX_FAILED];
  double weight_after;
  unsigned long long sent, received;
} swarm_avg_result;
tern_status swarm_butterfly(tern_swarm *sw, const swarm_member *group, int n, uint64_t tag,
                            float *values, size_t count, double weight, tern_compress codec,
                            double timeout_s, swarm_avg_result *res, core_err *err);
/* repair.c: a reducer that dies while sending its results back leaves some members of its part
 * updated and others not. The others ask the living members for the part they got (all got the
 * same bytes) before falling back to their own values; see the top of repair.c. */
void swarm_held_begin(tern_swarm *sw, uint32_t round, uint64_t tag, int n);
/* Records part j's outcome; with values (len floats, ownership passes) it is HAVE. */
void swarm_held_set(tern_swarm *sw, int part, double W, uint64_t mask, float *values, size_t len);
void swarm_held_free(tern_swarm *sw);
/* The listener's answer to a SWARM_RESULT_REQ. */
void swarm_held_serve(tern_swarm *sw, int fd, const swarm_hdr *req, const char *from);
/* Asks the members of g but me and part's reducer for part's result of this all-reduce, in
 * turn, until deadline. true: out (len floats), *W and *mask hold what the reducer sent them, and
 * me is in mask. */
bool swarm_repair(tern_swarm *sw, const swarm_member *g, int n, int me, int part, uint64_t tag,
                  float *out, size_t len, double *W, uint64_t *mask, uint64_t deadline);

/* swarm.c: failpoints for the tests, compiled in only with -DTERN_FAILPOINTS=ON (a test build,
 * CMakeLists.txt): in a release build swarm_fault is always false and swarm_fault_exit does
 * nothing, so the library never ends the process. swarm_fault: true when TERN_SWARM_FAULT names
 * this moment, and the caller then calls swarm_fault_exit (code 9). With TERN_SWARM_FAULT_ONCE
 * naming a file, only the first process of the swarm to come to the moment fires (it creates
 * the file; the others find it there): a test can kill "the leader" without knowing which peer
 * will lead. */
#ifdef TERN_FAILPOINTS
bool swarm_fault(const char *name);
_Noreturn void swarm_fault_exit(void);
#else
static inline bool swarm_fault(const char *name) {
  (void)name;
  return false;
}
static inline void swarm_fault_exit(void) {}
#endif

/* [off[j], off[j+1]) is part j: shares of count proportional to the members' bandwidths, each
 * bandwidth first held within SWARM_PARTS_SPREAD of the group's median (one peer that has not
 * measured yet, or measured wrong, then takes at most that much more or less than the others). */
#define SWARM_PARTS_SPREAD 4.0
void swarm_parts(const swarm_member *group, int n, size_t count, size_t *off);

/* region.c (docs/SWARM.md, "Regions"). A region name: 1..SWARM_REGION_LEN-1 of [A-Za-z0-9._-]. */
bool swarm_region_name_ok(const char *name);
/* The region's coordinate on axis 1: a hash of the name, never the key's 0xffffffff wildcard. */
uint32_t swarm_region_coord(const char *name);
/* Places the peer: 2 axes, coords (0, swarm_region_coord(name)). */
tern_status swarm_region_place(tern_swarm *sw, const char *name, core_err *err);
/* Placed by region, whether round runs inside the region (axis 0: rounds 0, 2, 4...) or across
 * regions (axis 1: rounds 1, 3, 5...); both false for a peer not placed by region. */
static inline bool swarm_region_within(const tern_swarm *sw, uint32_t round) {
  return sw->regional && round % 2 == 0;
}
static inline bool swarm_region_across(const tern_swarm *sw, uint32_t round) {
  return sw->regional && round % 2 == 1;
}
/* After a round on axis 0 (the region's): the peer's place in that group (sorted by id) becomes
 * coords[0], so that the region's peers spread over the cross-region lines, one per line,
 * whoever of them is alive; alone or matched in the pool (nobody of its region came), place 0. */
void swarm_region_after_round(tern_swarm *sw, uint32_t round, const swarm_member *group, int n,
                              bool pooled);
/* The codec of a round: a regional peer sends f32 inside its region (fast links, where coding
 * costs more CPU than the bytes it saves) and the chosen codec across regions. */
tern_compress swarm_region_codec(const tern_swarm *sw, uint32_t round, tern_compress chosen);

/* half.c (docs/SWARM.md, "Half the vector across"). A cross-region round after a region round
 * whose pair left both peers the same vector and weight: each peer carries one half (slice
 * place 0 or 1) across with the other regions' peers of its place, then the partners swap the
 * halves they averaged. */
typedef struct swarm_half {
  bool paired;          /* the region partner is due a SWARM_HALF after this round */
  bool offered;         /* self.half was set for the matching: the state is the region's */
  uint32_t round;       /* the round it was prepared for (a late peer may jump past it) */
  bool untouched;       /* averaged nothing (alone, or jumped): takes the partner's half */
  bool notice_failed;   /* the partner could not be told: it is gone */
  uint8_t entering[16]; /* hash of the vector and weight entering the round */
  int slice;            /* the slice the group averaged, -1: the whole vector */
  size_t lo, len;       /* that slice */
  double weight_in;     /* the weight entering the round */
} swarm_half;
/* Before the matching of a round: fills hf and sets self.half when this peer can carry half. */
void swarm_half_begin(tern_swarm *sw, const float *values, size_t count, double weight,
                      tern_compress codec, swarm_half *hf);
/* After the matching (n: the group's size, 0 when the matching failed): the slice the group
 * averages (every member offered the same one), or -1; sets hf->slice, lo and len. With -1 a
 * paired peer tells its partner at once whether it takes a half (alone: n == 1) or not. */
void swarm_half_choose(tern_swarm *sw, const swarm_member *group, int n, size_t count,
                       swarm_half *hf);
/* After the all-reduce: tells the partner what this peer averaged and, when both averaged
 * complementary halves of the same state, adopts the partner's half. *weight: the slice's
 * weight from the all-reduce in, the whole vector's out. Adds its bytes to res. */
void swarm_half_end(tern_swarm *sw, swarm_half *hf, float *values, size_t count, double *weight,
                    double timeout_s, swarm_avg_result *res);
/* After a region round: remembers the partner and the state this round left. */
void swarm_half_after_round(tern_swarm *sw, uint32_t round, const swarm_member *group, int n,
                            bool pooled, const swarm_avg_result *res, const float *values,
                            size_t count, double weight);

/* probe.c: the measured bandwidth (bytes/s) to m, from SWARM_PROBE_PAIRS (or more, up to
 * SWARM_PROBE_PAIRS_MAX, while the big is not the slower) pairs of timed messages
 * of SWARM_PROBE_SMALL and SWARM_PROBE_BYTES on one connection (the fastest big round trip less
 * the fastest small one, so that latency and the connection's start cancel), within timeout_s.
 * TERN_ERR_PROTOCOL for an answer that is not the byte count sent, or a rate that is not a finite
 * number within SWARM_PROBE_MAX_RATE. */
#define SWARM_PROBE_SMALL (64u << 10)
#define SWARM_PROBE_BYTES (1u << 20)
#define SWARM_PROBE_PAIRS 2        /* the fastest of each kind: a busy CPU delays some */
#define SWARM_PROBE_PAIRS_MAX 8    /* while the two kinds cannot be told apart */
#define SWARM_PROBE_MAX (4u << 20) /* a probe message larger than this is refused */
#define SWARM_PROBE_MAX_RATE 1e11  /* 100 GB/s: faster is a measuring error */
#define SWARM_PROBE_SERVING 2      /* probes answered at once; more are closed */
#define SWARM_PROBE_EVERY 8        /* rounds between two measurements */
tern_status swarm_probe(tern_swarm *sw, const swarm_member *m, double timeout_s, double *bw,
                        core_err *err);
/* The listener's answer to a probe: reads it and the next one on fd in a thread of its own and
 * answers each with the byte count. Takes fd. */
void swarm_probe_serve(tern_swarm *sw, int fd, const swarm_hdr *h, const char *from);
/* Before a round: every SWARM_PROBE_EVERY rounds (and once the peer has met others), measures
 * the members of its last group outside its region and sets self.bw to the slowest (the rate it
 * can count on), unless a bandwidth was declared. */
void swarm_probe_refresh(tern_swarm *sw);

#endif /* TERN_SWARM_H */

/* net.h: sockets, the handshake, and (in transport.h) the transports.
 *
 * Everything read from a socket is untrusted: every decoder here checks magic, version, lengths,
 * ranks and counts before use and answers TERN_ERR_PROTOCOL (or TERN_ERR_AUTH) with a message
 * that says what was wrong and from where.
 */
#ifndef TERN_NET_H
#define TERN_NET_H

#include "core/core.h"

#include <sys/socket.h>

/* ---- sockets (sock.c) -------------------------------------------------------------------- */

#define NET_HOST_LEN 256

/* Splits "host:port" (or "[v6]:port") into its parts; port 1..65535 (0 when allow_port0). */
tern_status net_parse_addr(const char *hostport, char *host, size_t host_len, int *port,
                           bool allow_port0, core_err *err);

/* A listening TCP socket on host:port (port 0: any free port; host "" or "0.0.0.0": every
 * interface), nonblocking, close-on-exec. *bound_port gets the port actually bound. */
tern_status net_listen(const char *host, int port, int *fd, int *bound_port, core_err *err);

/* Connects to host:port, retrying refused connections until deadline_ns (a server that is not
 * up yet is normal during start-up). The socket is returned blocking-free (O_NONBLOCK),
 * close-on-exec, with TCP_NODELAY. */
tern_status net_connect(const char *host, int port, uint64_t deadline_ns, int *fd, core_err *err);
/* The same, with refusals retried only until refused_by_ns (at most deadline_ns): for a peer
 * that is known to listen already, where a refusal means it is gone, while a connect that is
 * merely slow (a lost SYN is sent again after a second) still has until deadline_ns. */
tern_status net_connect_until(const char *host, int port, uint64_t deadline_ns,
                              uint64_t refused_by_ns, int *fd, core_err *err);

/* Accepts one connection if one is pending: *fd = -1 when none. Same socket options as above;
 * peer gets "ip:port" of the other end. */
tern_status net_accept(int listen_fd, int *fd, char *peer, size_t peer_len, core_err *err);

/* Socket buffers on a short path. A connected TCP socket whose smoothed round trip (TCP_INFO)
 * is under rtt_limit_us gets both buffers fixed at `bytes`, which turns the kernel's autotuning
 * off; a longer path, whose window must grow to its bandwidth-delay product, keeps autotuning.
 * Returns whether it fixed them. Ask net_kernel_grants_buffers first, once: where
 * net.core.rmem_max or wmem_max is smaller, the request would get less than autotuning reaches.
 * Why (docs/PERFORMANCE.md, section 3): on loopback, autotuning settles each connection at one
 * of two speeds, launch to launch (a 1 MiB allreduce at n = 2 took 220-250 us or 340-430 us);
 * fixed buffers took it to 240 us every time. The round trip is the kernel's, to the socket's
 * other end: behind a user-space relay (tests/wan's links) that is the relay on this host, so
 * the relay's emulated delay does not count and the buffers are fixed there too. */
#define NET_SHORT_PATH_RTT_US 1000u
#define NET_SHORT_PATH_BUF (4 << 20)
bool net_kernel_grants_buffers(int bytes);
bool net_fix_short_path_buffers(int fd, unsigned rtt_limit_us, int bytes);

/* "ip:port" of the local (or remote) end of a connected socket. */
void net_local_addr(int fd, char *out, size_t out_len);

/* ---- interfaces (ifname.c): TERN_SOCKET_IFNAME, NCCL_SOCKET_IFNAME's semantics ------------- */

/* Whether spec ("eth,ib", "^docker,lo", "=eth0", "^=lo") selects the interface called name. */
bool net_ifname_match(const char *spec, const char *name);
/* The address (text, without a port) and name of the first interface spec selects that is up
 * with an IPv4 address, else a global IPv6 one; TERN_ERR_INVALID_ARG naming the host's
 * interfaces when none is. */
tern_status net_ifname_addr(const char *spec, char *ip, size_t ip_len, char *ifname,
                            size_t ifname_len, core_err *err);
void net_peer_addr(int fd, char *out, size_t out_len);

/* Writes or reads exactly n bytes on a nonblocking socket, polling until deadline_ns.
 * A closed connection is TERN_ERR_PEER_LOST; the deadline is TERN_ERR_TIMEOUT. `what` names the
 * other end in messages ("store 127.0.0.1:4000", "rank 3 (10.0.0.2:5555)"). */
tern_status net_write_all(int fd, const void *buf, size_t n, uint64_t deadline_ns, const char *what,
                          core_err *err);
tern_status net_read_all(int fd, void *buf, size_t n, uint64_t deadline_ns, const char *what,
                         core_err *err);

/* ---- the handshake (handshake.c) --------------------------------------------------------- */
/* Every connection opens with it, both sides at once (no client/server asymmetry):
 *   1. each side sends a hello: magic "TERN", protocol version, role, whether it holds a key,
 *      run id, rank, size, stream index and count, and a fresh 32-byte random nonce;
 *   2. each side checks the other's hello (magic, version, ranges, same run, same keyedness);
 *   3. with a key, each side sends a MAC (libsodium crypto_auth, HMAC-SHA-512-256) over a label
 *      naming its role in the exchange, both hellos and the other side's nonce, and checks the
 *      one it receives. A peer without the key, or with another key, is refused: TERN_ERR_AUTH.
 * The nonces make every MAC fresh, so a recorded handshake cannot be replayed. */

#define NET_PROTOCOL_VERSION 1
#define NET_HELLO_LEN 72
#define NET_MAC_LEN 32
#define NET_MAX_RANKS (1 << 20) /* far past any job: a larger size or rank is a corrupt hello */
#define NET_MAX_STREAMS 64      /* TERN_TCP_STREAMS stops at 16; the wire allows some room */

typedef enum net_role {
  NET_ROLE_RANK = 1,         /* rank-to-rank data connection */
  NET_ROLE_STORE_CLIENT = 2, /* a rank (or tool) talking to the store */
  NET_ROLE_STORE_SERVER = 3, /* the store answering */
  NET_ROLE_PEER = 4          /* member to member of a group without ranks: pairs only with itself */
} net_role;

typedef struct net_hello {
  uint8_t role;       /* net_role */
  bool keyed;         /* the sender holds a key */
  uint8_t run_id[16]; /* all zero: not known yet (a store client before it learns the run) */
  int32_t rank;       /* -1 for none (the store server, a tool) */
  int32_t size;       /* world size; 0 when not known */
  uint16_t stream, nstreams;
  uint8_t nonce[32];
} net_hello;

/* The wire form: NET_HELLO_LEN bytes, little-endian:
 *   0 "TERN" | 4 u16 version | 6 u8 role | 7 u8 flags (bit 0: keyed; others zero) |
 *   8 run id (16) | 24 i32 rank | 28 i32 size | 32 u16 stream | 34 u16 nstreams |
 *   36 four zero bytes | 40 nonce (32). */
void net_hello_encode(const net_hello *h, uint8_t out[NET_HELLO_LEN]);
/* Checks everything a hello carries: magic, version, role, rank in [-1, size) when size > 0
 * (below NET_MAX_RANKS when size is 0), size in [0, NET_MAX_RANKS], nstreams in
 * [1, NET_MAX_STREAMS] and stream < nstreams, flags and reserved bytes zero. `from` names the
 * sender in messages. Connections that are not striped (the store) send stream 0 of 1. */
tern_status net_hello_decode(const uint8_t in[NET_HELLO_LEN], net_hello *h, const char *from,
                             core_err *err);

/* The handshake as a state machine over a nonblocking socket, so that one thread can run many
 * at once (the store server, a rank accepting its peers) and a silent or hostile connection
 * costs nothing but its own deadline. */
typedef struct net_handshake {
  int fd;
  net_hello mine, theirs;
  bool use_key;
  uint8_t key[32];
  uint8_t out[NET_HELLO_LEN + NET_MAC_LEN];
  size_t out_len, out_done;
  uint8_t in[NET_HELLO_LEN + NET_MAC_LEN];
  size_t in_len, in_done;
  int state;
  char from[96]; /* the other end, for messages */
} net_handshake;

/* Starts a handshake on fd: mine is sent (its nonce and keyed flag are filled in here); key NULL
 * means none. Accept policy: theirs must carry mine's run id unless either is all zero, the same
 * keyedness, a role that pairs with mine (RANK with RANK, STORE_CLIENT with STORE_SERVER:
 * otherwise TERN_ERR_PROTOCOL), and a nonce other than mine (a hello sent back is refused).
 * hs->from is set to the peer's address; a caller may overwrite it with a better name
 * ("rank 3 (10.0.0.2:5555)") before stepping. */
void net_handshake_start(net_handshake *hs, int fd, const net_hello *mine, const uint8_t *key);
/* Advances as far as the socket allows without blocking. *done becomes true when the handshake
 * has completed (hs->theirs is then valid and checked). Errors: TERN_ERR_PROTOCOL (not tern, or a
 * bad hello), TERN_ERR_AUTH (keyedness or MAC mismatch, another run), TERN_ERR_PEER_LOST. After
 * an error the handshake is over: close fd. It never reads past the handshake's own bytes, so
 * whatever the peer sends next stays in the socket for the caller. */
tern_status net_handshake_step(net_handshake *hs, bool *done, core_err *err);
/* POLLIN and/or POLLOUT: what the handshake waits for next. */
short net_handshake_events(const net_handshake *hs);
/* Steps a started handshake until done or deadline_ns (TERN_ERR_TIMEOUT); hs->mine and
 * hs->theirs then hold both nonces (the swarm derives a session key from them). */
tern_status net_handshake_finish(net_handshake *hs, uint64_t deadline_ns, core_err *err);
/* Start + finish. */
tern_status net_handshake_run(int fd, const net_hello *mine, net_hello *theirs, const uint8_t *key,
                              uint64_t deadline_ns, core_err *err);

#endif /* TERN_NET_H */

/* transport.h: moving one message to or from one peer, over TCP or shared memory.
 *
 * The executor posts transfers (net_xfer): a send of some bytes, or a receive into a buffer,
 * optionally reducing what arrives with another operand. Per peer and direction, transfers
 * complete in the order they were posted, which is how both ends match messages without tags.
 * Every message carries its operation's identity (net_msg_hdr), so a receiver checks that the
 * sender is in the same operation with the same count, dtype and root: ranks that disagree are
 * told so, instead of reading each other's bytes as something else.
 *
 * Nothing here blocks: *_progress() moves what it can and says whether it moved anything; the
 * communicator decides how to wait (comm/wait.c).
 */
#ifndef TERN_NET_TRANSPORT_H
#define TERN_NET_TRANSPORT_H

#include "net/net.h"
#include "net/shm_fill.h"

#include <poll.h>
#include <stdatomic.h>

/* ---- the identity every message carries (frame.c) ---------------------------------------- */

/* The collectives number their kinds 0..NET_COLL_KINDS - 1 (coll_kind's order: coll/exec.c
 * holds the two to each other); a frame of any other kind but these two is refused. */
#define NET_COLL_KINDS 10
#define NET_KIND_P2P 15                /* kind of send/recv */
#define NET_KIND_CALIBRATE 14          /* start-up timing between ranks (comm/shm_calibrate.c) */
#define NET_MAX_MSG_BYTES (1ull << 42) /* 4 TiB: anything larger is a corrupt length */

typedef struct net_msg_hdr {
  uint8_t kind;   /* the operation (a collective below NET_COLL_KINDS), or NET_KIND_P2P */
  uint8_t dtype;  /* tern_dtype */
  uint8_t op;     /* tern_op (0 where none) */
  uint32_t seq;   /* the operation's number: collectives count per communicator, p2p per pair */
  int32_t root;   /* broadcast/reduce root, else 0 */
  uint64_t count; /* the public call's count argument */
  uint64_t bytes; /* this message's length */
} net_msg_hdr;

/* On TCP every stripe of a message starts with a frame: the header plus where the stripe lies. */
#define NET_FRAME_LEN 48
#define NET_FRAME_MAGIC 0x314e5254u /* "TRN1" */

typedef struct net_frame {
  net_msg_hdr msg;
  uint64_t stripe_off, stripe_len;
} net_frame;

void net_frame_encode(const net_frame *f, uint8_t out[NET_FRAME_LEN]);
/* Checks magic, type, kind, dtype, op and that the stripe lies inside the message. */
tern_status net_frame_decode(const uint8_t in[NET_FRAME_LEN], net_frame *f, const char *from,
                             core_err *err);
/* Compares what arrived with what this rank expects; a mismatch is TERN_ERR_INVALID_ARG that
 * says which field and both values ("rank 3 is in broadcast #7, this rank in allreduce #7"). */
tern_status net_msg_match(const net_msg_hdr *want, const net_msg_hdr *got, int peer, core_err *err);
/* The operation's name in messages ("allreduce", "send/recv"). */
const char *net_kind_name(int kind);

/* How data flows in the operation a transfer belongs to, which is all the transports need to
 * know of it: they size TCP stripes and choose single copy by it. The layer above maps its
 * operations to a flow (coll/exec.c); 0 is one way with nothing reduced (send/recv). */
typedef enum net_flow {
  NET_FLOW_ONE_WAY = 0,  /* data flows one way, the receiver only receives (broadcast) */
  NET_FLOW_EXCHANGE = 1, /* every rank sends and receives at once: both ends of a channel are
                            busy (allgather, alltoall, barrier; with REDUCE, allreduce and
                            reduce_scatter) */
  NET_FLOW_REDUCE = 2    /* a flag: receivers may reduce what arrives (reduce; allreduce and
                            reduce_scatter with EXCHANGE) */
} net_flow;

/* ---- a transfer ------------------------------------------------------------------------- */

typedef struct net_xfer {
  net_msg_hdr hdr; /* send: what goes out; receive: what is expected */
  int peer;
  bool is_send;
  bool reduce;     /* receive: dst = src op incoming */
  uint8_t flow;    /* net_flow bits of the operation (both ends set the same) */
  const char *src; /* send: the bytes; reducing receive: the other operand */
  char *dst;       /* receive: where the bytes (or the reduction) go */
  /* kept by the transport */
  int parts_left; /* stripes (TCP) or the one message (shm) not yet complete */
  bool complete;
} net_xfer;

/* A small FIFO of fixed-size items (transfers, stripes), grown by doubling and kept: no
 * allocation once warm. */
typedef struct net_queue {
  char *items;
  size_t esize, head, len, cap;
} net_queue;

void net_queue_init(net_queue *q, size_t esize);
tern_status net_queue_push(net_queue *q, const void *item);
static inline void *net_queue_peek(const net_queue *q) {
  return q->len ? q->items + q->head * q->esize : NULL;
}
void net_queue_pop(net_queue *q);
void net_queue_free(net_queue *q);

/* ---- TCP (tcp.c) ------------------------------------------------------------------------- */
/* A TCP channel is nstreams connected sockets to one peer. A message is cut into up to
 * nstreams stripes (4 KiB-aligned) of at least NET_STRIPE_MIN bytes, one per stream, each behind
 * its own frame; smaller messages travel whole on stream 0. Where data flows one way
 * (no NET_FLOW_EXCHANGE: broadcast, reduce, send/recv) the stripes are at least
 * NET_STRIPE_MIN_ONE_WAY: there the receiver has nothing else to do, and each further stream
 * only adds system calls and wake-ups on both ends (loopback, interleaved: the broadcast of
 * 512 KiB and 1 MiB at n = 2 about 20% faster in two stripes than in four, the reduce of 1 and
 * 2 MiB too), while an exchange, both directions full, was 7-29% slower at 1-4 MiB with stripes
 * of 512 KiB (docs/PERFORMANCE.md). */

#define NET_STRIPE_MIN (256u << 10)
#define NET_STRIPE_MIN_ONE_WAY (512u << 10)
#define NET_BOUNCE_BYTES (256u << 10) /* per stream, for reducing receives */
#define NET_READ_AHEAD (16u << 10)    /* per stream, read past the message a receive waits for */

typedef struct net_tcp_stream net_tcp_stream;

typedef struct net_tcp_chan {
  int peer;
  int nstreams;
  net_tcp_stream *streams;
  char what[112]; /* "rank 3 (10.0.0.2:5555)", for messages */
} net_tcp_chan;

tern_status net_tcp_chan_init(net_tcp_chan *ch, int peer, const int *fds, int nstreams,
                              const char *what, core_err *err);
void net_tcp_chan_close(net_tcp_chan *ch);
/* Queues a transfer on the channel. */
tern_status net_tcp_post(net_tcp_chan *ch, net_xfer *x, core_err *err);
/* Moves what the sockets allow without blocking; *moved is set when anything moved. A peer that
 * closed, reset, or sent a bad frame fails the channel (and every later call) with a message
 * naming it. */
tern_status net_tcp_progress(net_tcp_chan *ch, bool *moved, core_err *err);
/* True when transfers are queued on the channel. */
bool net_tcp_busy(const net_tcp_chan *ch);
/* The header of the next message the peer sends this rank, without taking it: *ready is false
 * while its frame has not wholly arrived, or while a receive is queued on stream 0 (the message
 * is that receive's). A frame that is not tern's fails as a receive would. */
tern_status net_tcp_peek(net_tcp_chan *ch, net_msg_hdr *hdr, bool *ready, core_err *err);
/* Stream 0's socket, where every message starts (a receive from any source polls it). */
int net_tcp_first_fd(const net_tcp_chan *ch);
/* Adds the channel's sockets that have work to fds (events POLLIN/POLLOUT as needed); returns
 * how many were added (at most max). */
int net_tcp_pollfds(const net_tcp_chan *ch, struct pollfd *fds, int max);
/* Shuts every socket down (wakes any poll on them; the peer sees the connection close). Safe to
 * call from another thread. */
void net_tcp_shutdown(net_tcp_chan *ch);

/* ---- shared memory (shm.c) --------------------------------------------------------------- */
/* Each rank owns one segment holding a doorbell and an inbound ring from each peer on its host.
 * A sender writes into the receiver's ring; with single copy (CMA) on, a message of at least
 * NET_CMA_MIN bytes (NET_CMA_COPY_MIN when its flow has no NET_FLOW_REDUCE) goes as a
 * descriptor instead, and the receiver copies it straight out of the sender's memory with
 * process_vm_readv; with share on, a waiting sender writes part of it (net/shm_cma.h). */

/* A ring has two lanes, one sequence: NET_SHM_SLOTS slots of a header line and
 * NET_SHM_SLOT_BYTES of payload, and NET_SHM_LINES slots of NET_SHM_LINE_SLOT_BYTES, a header
 * line and a payload line, for messages of at most 64 bytes (shm.c says why). */
#define NET_SHM_SLOTS 16
#define NET_SHM_SLOT_BYTES (64u << 10)
#define NET_SHM_LINES 256
#define NET_SHM_LINE_SLOT_BYTES 128
#define NET_CMA_MIN (96u << 10)
#define NET_CMA_COPY_MIN (16u << 10)
#define NET_CMA_CROWDED_MIN (1u << 20) /* the floor on an oversubscribed host */

typedef struct net_shm_seg net_shm_seg;   /* a mapped segment (ours or a peer's) */
typedef struct net_shm_ring net_shm_ring; /* one inbound ring inside a segment */

typedef struct net_shm_chan {
  int peer;
  int pid;                     /* the peer's process, for process_vm_readv */
  bool cma;                    /* process_vm_readv into the peer works */
  uint64_t cma_floor;          /* with cma: no single copy for messages under this many bytes */
  uint64_t cma_floor_exchange; /* the same for messages of an exchange (NET_FLOW_EXCHANGE) */
  net_shm_ring *in;            /* the ring in our segment that the peer writes */
  net_shm_ring *out;           /* the ring in the peer's segment that we write */
  _Atomic uint32_t *peer_bell; /* the peer's doorbell */
  _Atomic uint32_t *peer_sleeping;
  _Atomic uint32_t *peer_state; /* the peer's segment state: NET_SHM_ABORTED once it gave up */
  net_queue sendq, recvq;
  uint64_t send_done, recv_done; /* bytes done of the transfer at the head of each queue */
  uint64_t out_next;             /* messages (of either lane) we have published into out */
  uint64_t out_slots, out_lines; /* of them, in each lane */
  uint64_t out_slots_head, out_lines_head; /* the reader's heads as we last read them */
  uint64_t in_next;                        /* messages we have consumed from in */
  uint64_t in_slots, in_lines;             /* of them, from each lane */
  uint64_t cma_slot;      /* the head send's descriptor: its sequence number (0: none) */
  uint64_t cma_at;        /* and its place in the slot lane */
  bool share;             /* with cma: large plain copies are shared with the sender (shm_cma.h) */
  bool share_failed;      /* as sender: a write into the peer failed; it copies alone from now on */
  bool share_took_back;   /* as receiver: the chunk the sender gave back is copied */
  uint64_t share_seq;     /* as receiver: the descriptor slot we offered to share, or 0 */
  uint64_t share_claimed; /* as receiver: chunks of it we claimed */
  char *bounce;           /* for reducing CMA receives, allocated on first use */
  shm_fill fill;          /* as sender: how large payloads are copied into slots (shm_fill.h) */
  char what[112];
} net_shm_chan;

/* Our segment: a doorbell, a state word, and nin inbound rings. */
tern_status net_shm_seg_create(net_shm_seg **out, const char *name, const uint8_t run_id[16],
                               int rank, int nin, core_err *err);
tern_status net_shm_seg_open(net_shm_seg **out, const char *name, const uint8_t run_id[16],
                             int rank, core_err *err);
/* Removes the name; the mapping stays until net_shm_seg_close. */
void net_shm_seg_unlink(net_shm_seg *s);
void net_shm_seg_close(net_shm_seg *s);
/* The ring with index slot in segment s (slot: the writer's index among s's owner's peers). */
net_shm_ring *net_shm_seg_ring(net_shm_seg *s, int slot);
_Atomic uint32_t *net_shm_seg_bell(net_shm_seg *s);
_Atomic uint32_t *net_shm_seg_sleeping(net_shm_seg *s);
/* The segment's state word: 0 while its owner is healthy; set to NET_SHM_ABORTED when it
 * aborts, or to NET_SHM_CLOSED when it closes the communicator cleanly (tern_comm_destroy) and
 * goes on living, so that peers on the host learn either without a socket, as a TCP peer learns
 * it from the closed connection. */
_Atomic uint32_t *net_shm_seg_state(net_shm_seg *s);
#define NET_SHM_ABORTED 1u
#define NET_SHM_CLOSED 2u
/* The address, in this process, of a probe word peers read with process_vm_readv to learn
 * whether CMA works between us. */
uint64_t net_shm_seg_probe_addr(net_shm_seg *s);

/* Sleeping on our doorbell (the waiter's side): begin (announce the sleep and note the bell),
 * check for work once more, then either sleep (futex, at most timeout_ms; returns early when
 * anyone rings) or cancel. One thread sleeps on a segment at a time. */
uint32_t net_shm_sleep_begin(net_shm_seg *s);
void net_shm_sleep(net_shm_seg *s, uint32_t seen, int timeout_ms);
void net_shm_sleep_cancel(net_shm_seg *s);
/* Rings a doorbell (ours or a peer's): wakes its owner if it sleeps. Any thread. */
void net_shm_ring_bell(_Atomic uint32_t *bell, _Atomic uint32_t *sleeping);

void net_shm_chan_init(net_shm_chan *ch, int peer, int pid, net_shm_ring *in, net_shm_ring *out,
                       net_shm_seg *peer_seg, const char *what);
/* Tries process_vm_readv on the peer's probe word; sets ch->cma. */
void net_shm_chan_probe_cma(net_shm_chan *ch, uint64_t peer_probe_addr);
void net_shm_chan_close(net_shm_chan *ch);
/* Called when the communicator breaks: no peer writes into a receive buffer of ours after it
 * returns (a shared copy in progress is revoked). */
void net_shm_chan_quiesce(net_shm_chan *ch);
tern_status net_shm_post(net_shm_chan *ch, net_xfer *x, core_err *err);
/* Small messages (under NET_SHM_NOW_MAX bytes: one slot, never single copy) moved on the spot
 * instead of posted, when nothing is queued before them on the channel: a send whose ring has a
 * free slot is published, a receive whose message has arrived is taken (checked as
 * net_shm_progress checks it). *done false: nothing was done, post x as usual. */
#define NET_SHM_NOW_MAX NET_CMA_COPY_MIN
tern_status net_shm_move_now(net_shm_chan *ch, net_xfer *x, bool *done, core_err *err);
tern_status net_shm_progress(net_shm_chan *ch, bool *moved, core_err *err);
/* The header of the next message the peer has published to us, without taking it; false while
 * none has arrived or a receive is queued (the message is that receive's). The header is the
 * peer's word: a receive posted for it checks it as any other. */
bool net_shm_peek(net_shm_chan *ch, net_msg_hdr *hdr);
bool net_shm_busy(const net_shm_chan *ch);

#endif /* TERN_NET_TRANSPORT_H */

/* shm_cma.h: single copy over shared memory (net/shm.c's large messages), inside the net layer.
 *
 * A large message goes as a descriptor slot naming the sender's buffer; the receiver copies it
 * with process_vm_readv (shm_cma_read). A plain copy (nothing to reduce) of at least
 * NET_SHARE_MIN bytes, from a sender that only waits for it (shm_cma_shares), is shared when the
 * channel allows it (ch->share, off on an oversubscribed host): the receiver offers its buffer's
 * address in the descriptor slot's unused payload, and both sides take chunks (at most
 * NET_SHARE_CHUNK bytes) from a counter there, the receiver reading them and the sender, which
 * otherwise would only wait for the slot to come back, writing them (process_vm_writev). Two
 * cores copy what one did, in about half the time (docs/perf/shm.md, "Shared copy").
 */
#ifndef TERN_NET_SHM_CMA_H
#define TERN_NET_SHM_CMA_H

#include "net/transport.h"

#define NET_SHARE_MIN (32u << 10)
#define NET_SHARE_CHUNK (256u << 10)

/* The receiver's offer, in the descriptor slot's payload (the sender never writes a descriptor
 * slot's payload, and the receiver returns the slot only once nobody touches the offer). */
typedef struct shm_share {
  _Atomic uint64_t offer;       /* the slot's sequence number once dst and the counters are set */
  uint64_t dst;                 /* the receive buffer, in the receiver's address space */
  _Atomic uint64_t next;        /* chunks claimed by either side; SHARE_CLOSED once revoked */
  _Atomic uint64_t sender_done; /* chunks the sender wrote */
  _Atomic uint64_t given_back;  /* a chunk the sender could not write, + 1 (0: none) */
} shm_share;

/* Copies (or reduces) bytes [at, end) of x's message from addr, the message's address in the
 * sender, into place. */
tern_status shm_cma_read(net_shm_chan *ch, net_xfer *x, uint64_t addr, uint64_t at, uint64_t end,
                         core_err *err);
/* Whether the receive x of the descriptor slot with sequence number seq is shared with its
 * sender: a plain copy of at least NET_SHARE_MIN bytes from a peer we are not sending to (in an
 * exchange both sides are busy copying already, and chunks only add calls: an allgather of
 * 64 KiB at n = 2 took 4.3 us copied whole, 5.6 us shared). */
bool shm_cma_shares(const net_shm_chan *ch, const net_xfer *x, uint64_t seq);
/* The receiver's side of a shared copy of the descriptor slot with sequence number seq, whose
 * offer is s: offers on the first call, then copies what chunks it can claim. *finished once
 * every chunk is in place; until then call again (the sender rings the doorbell as it writes). */
tern_status shm_cma_share_read(net_shm_chan *ch, net_xfer *x, shm_share *s, uint64_t seq,
                               uint64_t addr, bool *finished, bool *moved, core_err *err);
/* The sender's side: while its descriptor slot (sequence seq) is out, writes the chunks it can
 * claim, if the receiver offered. */
void shm_cma_share_write(net_shm_chan *ch, const net_xfer *x, shm_share *s, uint64_t seq,
                         bool *moved);
/* The receiver gives up on a shared copy (its communicator broke): no more claims, and it waits
 * (briefly) for a chunk the sender is writing, so that the buffer can be reused on return. */
void shm_cma_share_revoke(net_shm_chan *ch, net_xfer *x, shm_share *s);

#endif /* TERN_NET_SHM_CMA_H */

/* shm_fill.h: how a sender copies a large payload into a slot of a shared-memory ring (net/shm.c).
 *
 * With ordinary stores each line of the slot is first taken back from the reader's cache, which
 * last read it (a read for ownership). On this project's 2-core VM that costs nothing much when
 * the two vCPUs sit close on the host and everything when they sit far (bench/peers' c2c probe:
 * a cache line's round trip 60-90 ns or 310-350 ns; the placement changes every few tens of
 * seconds): the sender's copy into the slots ran at 22-37 GB/s near and 2-3 GB/s far, and an
 * allgather of 1 MiB at n = 2 took 39-42 us near and 268-322 us far (2026-12-06). Streaming
 * (non-temporal) stores write whole lines without reading them: far, the same copy ran at 28 GB/s
 * and the allgather took 67-74 us; near, they cost the reader its cache hits (its copy out went
 * from 37-41 to 15-17 GB/s) and the allgather took 65-82 us. So the sender times its ordinary
 * copies, streams while they run slower than SHM_FILL_SLOW_BYTES_PER_NS, and every
 * SHM_FILL_RECHECK streamed fills makes one ordinary copy again to see whether that still holds.
 * The reader sees the same bytes either way.
 */
#ifndef TERN_NET_SHM_FILL_H
#define TERN_NET_SHM_FILL_H

#include <stdbool.h>
#include <stdint.h>

#define SHM_FILL_MIN (32u << 10)      /* smaller payloads: always an ordinary copy */
#define SHM_FILL_SLOW_BYTES_PER_NS 8.0 /* 8 GB/s: between the 2-3 far and the 22-37 near */
#define SHM_FILL_RECHECK 64

typedef struct shm_fill {
  bool streaming;   /* the last ordinary copy ran slow */
  uint32_t streamed; /* fills streamed since that copy */
} shm_fill;

/* Copies n bytes from src to dst (a slot's payload, 16-byte aligned), the way f says, and
 * updates f; all stores are visible before a later release store (the slot's publication).
 * Under SHM_FILL_MIN bytes it is a plain copy that leaves f alone (net/shm.c's small messages
 * do not call it). */
void shm_fill_copy(shm_fill *f, void *dst, const void *src, uint64_t n);

#endif

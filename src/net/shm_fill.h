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
 * from 37-41 to 15-17 GB/s) and the allgather took 65-82 us.
 *
 * A slow ordinary copy is not enough to tell far from near: a source that comes from DRAM (the
 * allreduce of 64 MiB) makes it slow near too. Timed copy by copy, the two kinds in turn (GB/s,
 * 10th and 90th percentiles, 2026-12-06): near, ordinary 8.6-25 and streamed 8.9-14 for the
 * allreduce of 64 MiB, 29-43 and 40-55 for the allgather of 1 MiB; far, ordinary 1.8-3.0
 * (one rank 2.4-7.8) and streamed 8.8-53. Choosing by one slow copy at a time streamed most
 * of the near allreduce of 64 MiB, which then took 13-15 ms against 11-12 ordinary. So each
 * kind's rate is a moving average (SHM_FILL_WEIGHT a copy, so that one preempted copy is no
 * sign), and the sender streams while ordinary copies average under SHM_FILL_SLOW_BYTES_PER_NS
 * and streamed ones SHM_FILL_STREAM_GAIN times faster: the mark of lines taken back from a far
 * cache, not of a slow source. The kind not chosen is copied again every SHM_FILL_RECHECK fills
 * (a streamed one only while ordinary ones are slow), so the choice follows the placement.
 * The reader sees the same bytes either way.
 *
 * From 4 KiB (SHM_FILL_MIN): a far reader costs a small payload as much as a large one. The n = 2
 * allgather through the rings, vCPUs far (2026-12-06, 4 launches each, ordinary copies under
 * 32 KiB -> the choice from 4 KiB): 8 KiB 2.22-2.24 -> 1.27-1.40 us, 16 KiB 4.5-4.9 -> 1.77-1.83,
 * 32 KiB 9.0-9.1 -> 2.74-2.87, 48 KiB 13.1-17.5 -> 3.7-4.0 (the 64 KiB allgather, 32 KiB a
 * message, was already chosen for: 4.7 us either way). Two clock reads (about 47 ns here) are a
 * third of a near 4 KiB copy, so fills under SHM_FILL_TIME_ALL are timed one in SHM_FILL_SAMPLE
 * (the rechecks always), which keeps the near calls where they were.
 */
#ifndef TERN_NET_SHM_FILL_H
#define TERN_NET_SHM_FILL_H

#include <stdbool.h>
#include <stdint.h>

#define SHM_FILL_MIN (4u << 10)       /* smaller payloads: always an ordinary copy */
#define SHM_FILL_TIME_ALL (32u << 10) /* fills this large are all timed; smaller, one in ... */
#define SHM_FILL_SAMPLE 8
#define SHM_FILL_SLOW_BYTES_PER_NS 8.0 /* far copies average 2-6 GB/s, near ones 9 and more */
#define SHM_FILL_STREAM_GAIN 3.0       /* medians: about 1-2 near, 5-15 far */
#define SHM_FILL_RECHECK 64
#define SHM_FILL_WEIGHT 0.25 /* of a new copy's rate in its kind's average */

typedef struct shm_fill {
  bool streaming;        /* the choice for the next fills */
  uint32_t since_other;  /* fills since the last copy of the kind not chosen */
  double ordinary_rate;  /* bytes per ns of ordinary copies, a moving average; 0 before one */
  double streamed_rate;  /* and of streamed ones */
} shm_fill;

/* A sender's first state: it copies ordinarily, and may try streaming on its first slow copy. */
#define SHM_FILL_INIT ((shm_fill){.since_other = SHM_FILL_RECHECK})

/* Copies n bytes from src to dst (a slot's payload, 16-byte aligned), the way f says, and
 * updates f; all stores are visible before a later release store (the slot's publication).
 * Under SHM_FILL_MIN bytes it is a plain copy that leaves f alone (net/shm.c's small messages
 * do not call it). */
void shm_fill_copy(shm_fill *f, void *dst, const void *src, uint64_t n);

/* Whether copies at these rates (bytes per ns, 0 unknown) should stream. */
bool shm_fill_should_stream(double ordinary_rate, double streamed_rate);

#endif

/* shm_fill.h: how a sender copies a large payload into a slot of a shared-memory ring (net/shm.c).
 *
 * With ordinary stores each line of the slot is first taken back from the reader's cache, which
 * last read it (a read for ownership). That costs little when the two CPUs share a cache and
 * nearly all of the copy when they sit far apart, as the vCPUs of a VM may, moving between the
 * two every few tens of seconds. Streaming (non-temporal) stores write whole lines without
 * reading them: far they are several times faster; near they cost the reader its cache hits.
 * So a sender chooses per copy, by what it measures (docs/perf/shm.md, "Streaming stores for a
 * far reader", has the figures).
 *
 * A slow ordinary copy is not enough to tell far from near: a source that comes from DRAM (a
 * large allreduce) makes it slow near too. So each kind's rate is a moving average
 * (SHM_FILL_WEIGHT a copy, so that one preempted copy is no sign), and the sender streams while
 * ordinary copies average under SHM_FILL_SLOW_BYTES_PER_NS and streamed ones SHM_FILL_STREAM_GAIN
 * times faster: the mark of lines taken back from a far cache, not of a slow source. The kind
 * not chosen is copied again every SHM_FILL_RECHECK fills (a streamed one only while ordinary
 * ones are slow), so the choice follows the placement. The reader sees the same bytes either way.
 *
 * From 4 KiB (SHM_FILL_MIN): a far reader costs a small payload as much as a large one. Two
 * clock reads are a third of a near 4 KiB copy, so fills under SHM_FILL_TIME_ALL are timed one
 * in SHM_FILL_SAMPLE (the rechecks always), which keeps the near calls where they were.
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
  bool streaming;       /* the choice for the next fills */
  uint32_t since_other; /* fills since the last copy of the kind not chosen */
  double ordinary_rate; /* bytes per ns of ordinary copies, a moving average; 0 before one */
  double streamed_rate; /* and of streamed ones */
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

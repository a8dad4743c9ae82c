/* shm.c: the shared-memory transport between processes on one host.
 *
 * Each rank creates one segment (POSIX shm, mode 0600, a name with the run id in it) holding a
 * header, a doorbell and one inbound ring per peer on the host. A ring is single-producer
 * single-consumer: the peer fills slots, we empty them. A slot is one 64-byte header line
 * (its sequence word, the message identity, offset, length) followed by NET_SHM_SLOT_BYTES of
 * payload; the sequence word is written last with release order, so a reader that sees it sees
 * the slot whole. The reader returns slots by advancing the ring's head.
 *
 * A message of at most 64 bytes goes in a second lane of NET_SHM_LINES small slots: a header
 * line and one payload line, an aligned pair that the other core fetches together (up to 8 bytes
 * ride in the header line itself). Both lanes share one sequence (a slot's sequence word is the
 * message's number on the channel), so the reader takes the next message from whichever lane
 * holds that number, and the order is the writer's. Why: with more ranks than cores, a rank runs
 * until its ring to a peer is full and only then lets the peer's process have the core, and a
 * switch costs several microseconds of kernel time in a VM; small messages move in batches of a
 * lane's slots per switch, several times more than the payload slots alone carry
 * (docs/perf/shm.md, "The line lane"). Payload slots stay as they were: a payload next to its
 * header line arrives with it, where a payload kept apart costs a second wait for a line from the
 * other core (tried: a 4 KiB broadcast at n = 2, 0.51 -> 0.62-0.76 us). The line lane costs
 * 32 KiB a ring; as many payload slots would cost 16 MiB.
 *
 * Messages are copied into slots and out again (the reducing receive reduces straight out of the
 * slot, no second copy). With single copy (CMA, on by default, from 1 MiB a message on an
 * oversubscribed host: comm/shm_setup.c), large messages (uses_cma, below) go as a descriptor
 * (the sender's address) instead: the receiver copies them straight from the sender's memory with
 * process_vm_readv, one copy in all, and the send completes when the receiver returns the slot,
 * i.e. when it is done reading. A sender that only waits for that helps: with two ranks on two
 * cores, the receiver of a plain copy offers its buffer, and the two copy it in chunks, one
 * reading, the other writing (shared copy: net/shm_cma.h). CMA needs ptrace rights over the peer;
 * a probe at start-up decides per peer, and without it the slots carry everything.
 *
 * Whether single copy pays depends on the host's kernel copy, so each host times it against the
 * rings at start-up (comm/shm_calibrate.c): on one host kind single copy wins by about 2x from
 * 64 KiB, on another the rings win by 2-3x (docs/perf/shm.md). On a crowded host the rings win
 * under about 1 MiB: a single-copy sender waits for its reader to be scheduled, while through
 * the rings it leaves up to a ring's worth behind and goes on; from 1 MiB the copy saved wins
 * there too, hence cma_floor. Where the start-up timing turned single copy off, it is off
 * crowded too.
 *
 * Nobody spins here: progress is a look at the slots. Waiting is comm/wait.c's job; the doorbell
 * (a futex word in each segment, with a "sleeping" flag so that a sender only pays for the wake
 * syscall when the receiver really sleeps) is how a writer wakes a reader that went to sleep.
 */
#include "net/shm_cma.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SEG_MAGIC 0x4d48534e52455400ull /* "\0TERNSHM" */
#define SEG_VERSION 3
#define SLOT_CMA 1u
#define SLOT_INLINE_BYTES 8 /* a message this small rides in the header line: one miss, not two */
#define PREFETCH_AFTER_MAX 256 /* return_slot */
#define PREFETCH_PAYLOAD_LINES 4
#define PAGE_BYTES 4096 /* prefault's stride: a smaller page than the real one only costs time */

typedef struct slot {
  _Alignas(64) _Atomic uint64_t seq; /* index + 1 once published */
  net_msg_hdr hdr;
  uint64_t off;   /* where this slot's bytes lie in the message */
  uint32_t len;   /* bytes in this slot (CMA: the whole message's) */
  uint32_t flags; /* SLOT_CMA */
  union {
    uint64_t cma_addr;                   /* CMA: the message's address in the sender */
    char inline_data[SLOT_INLINE_BYTES]; /* len <= SLOT_INLINE_BYTES: the bytes themselves */
  };
  union {
    _Alignas(64) char payload[NET_SHM_SLOT_BYTES];
    shm_share share; /* CMA: the receiver's offer to share the copy (shm_cma.h) */
  };
} slot;

/* A slot of the line lane: a header line and one line of payload. The ring lives in shared
 * memory and is only ever reached through pointers, so a line slot is read and written as a slot
 * whose payload is LINE_PAYLOAD_BYTES long (slot_at). */
#define LINE_PAYLOAD_BYTES (NET_SHM_LINE_SLOT_BYTES - 64)
typedef struct line_slot {
  _Alignas(NET_SHM_LINE_SLOT_BYTES) char bytes[NET_SHM_LINE_SLOT_BYTES];
} line_slot;
_Static_assert(offsetof(slot, payload) == 64, "a slot's header is one line");

struct net_shm_ring {
  _Alignas(64) _Atomic uint64_t head; /* payload slots the reader has returned */
  _Atomic uint64_t lines_head;        /* line slots the reader has returned */
  line_slot lines[NET_SHM_LINES]; /* from 128 bytes in: a slot's two lines are one aligned pair */
  slot slots[NET_SHM_SLOTS];
};

typedef struct seg_header {
  uint64_t magic;
  uint32_t version, nin;
  uint8_t run_id[16];
  int32_t rank;
  uint32_t ring_bytes;
  uint64_t probe; /* SEG_MAGIC: read by peers through process_vm_readv */
  _Alignas(64) _Atomic uint32_t state;
  _Alignas(64) _Atomic uint32_t bell;
  _Atomic uint32_t sleeping;
} seg_header;

struct net_shm_seg {
  seg_header *hdr;
  size_t size;
  char name[96];
  bool owner;
};

static size_t seg_rings_offset(void) {
  return (sizeof(seg_header) + 4095) & ~(size_t)4095;
}

static size_t seg_size(int nin) {
  return seg_rings_offset() + (size_t)(nin > 0 ? nin : 0) * sizeof(net_shm_ring);
}

static tern_status seg_map(net_shm_seg **out, int fd, size_t size, const char *name, bool owner,
                           core_err *err) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return core_err_errno(err, errno, "mapping shared memory %s", name);
  net_shm_seg *s = calloc(1, sizeof *s);
  if (s == NULL) {
    munmap(p, size);
    return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", name);
  }
  s->hdr = p;
  s->size = size;
  s->owner = owner;
  snprintf(s->name, sizeof s->name, "%s", name);
  *out = s;
  return TERN_OK;
}

/* A lane's slot at a place (a count of the lane's messages). The line lane's slots are the
 * header lines alone: only the header is ever read or written through them. */
static slot *slot_at(net_shm_ring *r, bool line, uint64_t at) {
  return line ? (slot *)&r->lines[at % NET_SHM_LINES] : &r->slots[at % NET_SHM_SLOTS];
}

static bool in_line_lane(const net_shm_ring *r, const slot *sl) {
  return (const char *)sl >= (const char *)r->lines &&
         (const char *)sl < (const char *)(r->lines + NET_SHM_LINES);
}

/* Writes every page of a ring in this process's mapping, so that no message pays for a page's
 * first use: the owner of the segment at creation, before anyone may write into it, and the
 * ring's one writer when it opens its channel, before it has sent anything; so nobody else
 * writes these bytes meanwhile. Header lines are touched with an atomic add of 0, since the
 * reader may already look at them; payload bytes are written with the value already there.
 *
 * Before, only the header pages and each slot's first payload page were touched, and the first
 * trip through a ring wrote up to 16 fresh pages a slot inside the caller's collectives: dear
 * on this VM, where a rank that stalls on them holds up ranks waiting for a CPU. 16 ranks on 2
 * cores, allreduce by direct exchange, 5 warm-up calls (bench/peers' method), interleaved
 * launches: 16 KiB 17.8-18.5 -> 0.54-0.56 ms, 1 KiB 1.01-1.12 -> 0.18-0.19 ms. It costs the
 * memory the rings would take at their first large messages anyway, (ranks on the host - 1) x
 * 1 MiB a rank, from the start. */
static void prefault(net_shm_ring *r) {
  if (r == NULL) return;
  atomic_fetch_add_explicit(&r->head, 0, memory_order_relaxed);
  for (int i = 0; i < NET_SHM_LINES; i++)
    atomic_fetch_add_explicit(&slot_at(r, true, (uint64_t)i)->seq, 0, memory_order_relaxed);
  for (int i = 0; i < NET_SHM_SLOTS; i++) {
    atomic_fetch_add_explicit(&r->slots[i].seq, 0, memory_order_relaxed);
    volatile char *payload = r->slots[i].payload;
    /* a volatile read and write back: the page is mapped and dirtied, its contents kept */
    for (size_t at = 0; at < NET_SHM_SLOT_BYTES; at += PAGE_BYTES) {
      // cppcheck-suppress selfAssignment
      payload[at] = payload[at];
    }
    // cppcheck-suppress selfAssignment
    payload[NET_SHM_SLOT_BYTES - 1] = payload[NET_SHM_SLOT_BYTES - 1];
  }
}

tern_status net_shm_seg_create(net_shm_seg **out, const char *name, const uint8_t run_id[16],
                               int rank, int nin, core_err *err) {
  size_t size = seg_size(nin);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return core_err_errno(err, errno, "creating shared memory %s", name);
  tern_status rc = TERN_OK;
  if (ftruncate(fd, (off_t)size) != 0) {
    rc = core_err_errno(err, errno, "sizing shared memory %s to %zu bytes", name, size);
    goto fail;
  }
  /* Reserved now, so that a /dev/shm too small is this error, not a SIGBUS at the first write
   * (as it was: a 2 MiB /dev/shm and 4 ranks died of SIGBUS while joining) */
  int e = posix_fallocate(fd, 0, (off_t)size);
  if (e != 0) {
    rc = core_err_errno(err, e,
                        "reserving %.1f MiB of shared memory for %s: each rank needs about 1 MiB "
                        "per other rank on its host in /dev/shm (a container's --shm-size), or "
                        "TERN_TRANSPORT=tcp",
                        (double)size / (1 << 20), name);
    goto fail;
  }
  rc = seg_map(out, fd, size, name, true, err);
  if (rc != TERN_OK) goto fail;
  close(fd);
  seg_header *h = (*out)->hdr;
  h->version = SEG_VERSION;
  h->nin = (uint32_t)nin;
  memcpy(h->run_id, run_id, 16);
  h->rank = rank;
  h->ring_bytes = (uint32_t)sizeof(net_shm_ring);
  h->probe = SEG_MAGIC;
  atomic_store(&h->state, 0);
  for (int i = 0; i < nin; i++)
    prefault(net_shm_seg_ring(*out, i));
  atomic_store_explicit((_Atomic uint64_t *)&h->magic, SEG_MAGIC, memory_order_release);
  return TERN_OK;
fail:
  close(fd);
  shm_unlink(name);
  return rc;
}

tern_status net_shm_seg_open(net_shm_seg **out, const char *name, const uint8_t run_id[16],
                             int rank, core_err *err) {
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return core_err_errno(err, errno, "opening rank %d's shared memory %s", rank, name);
  struct stat st;
  tern_status rc = TERN_OK;
  if (fstat(fd, &st) != 0) {
    rc = core_err_errno(err, errno, "reading the size of %s", name);
    goto out;
  }
  if ((size_t)st.st_size < seg_rings_offset()) {
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "%s is %lld bytes, too small for a tern segment",
                      name, (long long)st.st_size);
    goto out;
  }
  rc = seg_map(out, fd, (size_t)st.st_size, name, false, err);
  if (rc != TERN_OK) goto out;
  const seg_header *h = (*out)->hdr;
  if (h->magic != SEG_MAGIC || h->version != SEG_VERSION || h->rank != rank ||
      memcmp(h->run_id, run_id, 16) != 0 || h->ring_bytes != sizeof(net_shm_ring) ||
      seg_size((int)h->nin) != (size_t)st.st_size) {
    rc = core_err_set(err, TERN_ERR_PROTOCOL,
                      "%s is not rank %d's segment of this run (version %u, rank %d, %u rings)",
                      name, rank, h->version, h->rank, h->nin);
    net_shm_seg_close(*out);
    *out = NULL;
  }
out:
  close(fd);
  return rc;
}

void net_shm_seg_unlink(net_shm_seg *s) {
  if (s && s->owner && s->name[0]) {
    shm_unlink(s->name);
    s->name[0] = '\0';
  }
}

void net_shm_seg_close(net_shm_seg *s) {
  if (s == NULL) return;
  net_shm_seg_unlink(s);
  munmap(s->hdr, s->size);
  free(s);
}

net_shm_ring *net_shm_seg_ring(net_shm_seg *s, int slot_index) {
  if (slot_index < 0 || (uint32_t)slot_index >= s->hdr->nin) return NULL;
  return (net_shm_ring *)((char *)s->hdr + seg_rings_offset()) + slot_index;
}

_Atomic uint32_t *net_shm_seg_bell(net_shm_seg *s) {
  return &s->hdr->bell;
}

_Atomic uint32_t *net_shm_seg_sleeping(net_shm_seg *s) {
  return &s->hdr->sleeping;
}

_Atomic uint32_t *net_shm_seg_state(net_shm_seg *s) {
  return &s->hdr->state;
}

uint64_t net_shm_seg_probe_addr(net_shm_seg *s) {
  return (uint64_t)(uintptr_t)&s->hdr->probe;
}

/* ---- the doorbell ------------------------------------------------------------------------ */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* The doorbell is rung only for a sleeper, so a reader that spins costs its writers nothing but
 * a load of a line that does not change. The sleeper stores its flag, fences, and looks for work
 * once more before it sleeps; the ringer does not fence (a full fence per message would wait for
 * the message's own stores to reach the other core: a seventh of an 8-byte allreduce).
 * So in a window of a store-buffer drain (~100 ns) the ringer can miss a sleeper that has just
 * announced itself; the sleeper then wakes at the end of its slice (up to 20 ms, comm/wait.c)
 * and finds the work: a rare delay, never a lost message. Counted in crowded runs, no doorbell
 * sleep ran to its slice's end, and shorter, growing slices cost more in wake-ups than they
 * saved (docs/perf/shm.md, "The doorbell's slices"). */
void net_shm_ring_bell(_Atomic uint32_t *bell, _Atomic uint32_t *sleeping) {
  if (atomic_load_explicit(sleeping, memory_order_relaxed)) {
    atomic_fetch_add(bell, 1);
    futex(bell, FUTEX_WAKE, INT_MAX, NULL);
  }
}

uint32_t net_shm_sleep_begin(net_shm_seg *s) {
  atomic_store(&s->hdr->sleeping, 1);
  atomic_thread_fence(memory_order_seq_cst);
  return atomic_load(&s->hdr->bell);
}

void net_shm_sleep(net_shm_seg *s, uint32_t seen, int timeout_ms) {
  struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
  futex(&s->hdr->bell, FUTEX_WAIT, seen, &ts);
  atomic_store(&s->hdr->sleeping, 0);
}

void net_shm_sleep_cancel(net_shm_seg *s) {
  atomic_store(&s->hdr->sleeping, 0);
}

/* ---- channels ---------------------------------------------------------------------------- */

void net_shm_chan_init(net_shm_chan *ch, int peer, int pid, net_shm_ring *in, net_shm_ring *out,
                       net_shm_seg *peer_seg, const char *what) {
  memset(ch, 0, sizeof *ch);
  ch->peer = peer;
  ch->pid = pid;
  ch->in = in;
  ch->out = out;
  ch->peer_bell = net_shm_seg_bell(peer_seg);
  ch->peer_sleeping = net_shm_seg_sleeping(peer_seg);
  ch->peer_state = net_shm_seg_state(peer_seg);
  ch->fill = SHM_FILL_INIT;
  snprintf(ch->what, sizeof ch->what, "%s", what);
  net_queue_init(&ch->sendq, sizeof(net_xfer *));
  net_queue_init(&ch->recvq, sizeof(net_xfer *));
  prefault(out);
}

/* A message goes in the line lane when its slot's payload line holds it. */
static bool fits_line(uint64_t bytes) {
  return bytes <= LINE_PAYLOAD_BYTES;
}

/* The transfer at the head of q, or NULL. */
static net_xfer *head_xfer(const net_queue *q) {
  net_xfer **x = net_queue_peek(q);
  return x ? *x : NULL;
}

void net_shm_chan_probe_cma(net_shm_chan *ch, uint64_t peer_probe_addr) {
  uint64_t word = 0;
  struct iovec local = {&word, sizeof word};
  struct iovec remote = {(void *)(uintptr_t)peer_probe_addr, sizeof word};
  ch->cma = process_vm_readv(ch->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof word &&
            word == SEG_MAGIC;
}

void net_shm_chan_close(net_shm_chan *ch) {
  net_queue_free(&ch->sendq);
  net_queue_free(&ch->recvq);
  free(ch->bounce);
  ch->bounce = NULL;
}

void net_shm_chan_quiesce(net_shm_chan *ch) {
  net_xfer *x = head_xfer(&ch->recvq);
  if (x && ch->share_seq == ch->in_next + 1)
    shm_cma_share_revoke(ch, x, &slot_at(ch->in, false, ch->in_slots)->share);
}

tern_status net_shm_post(net_shm_chan *ch, net_xfer *x, core_err *err) {
  x->parts_left = 1;
  x->complete = false;
  if (net_queue_push(x->is_send ? &ch->sendq : &ch->recvq, &x) != TERN_OK)
    return core_err_set(err, TERN_ERR_NOMEM, "no memory to queue a message for %s", ch->what);
  return TERN_OK;
}

bool net_shm_busy(const net_shm_chan *ch) {
  return ch->sendq.len || ch->recvq.len;
}

/* A reducing receive reads a CMA message through a bounce buffer, a pass more than reducing
 * straight out of the slots; so messages that may be reduced go single-copy only from
 * NET_CMA_MIN, where the saved copy pays for it, and copied ones from NET_CMA_COPY_MIN
 * (docs/perf/shm.md, "Single-copy floors").
 * Messages of an exchange have a floor of their own (cma_floor_exchange): the start-up timing
 * finds the two patterns apart on some hosts (comm/shm_calibrate.c). */
static bool uses_cma(const net_shm_chan *ch, const net_xfer *x) {
  uint64_t bytes = x->hdr.bytes; /* the smaller floor first: small messages stop there */
  if (!ch->cma || bytes < NET_CMA_COPY_MIN) return false;
  uint64_t floor = x->flow & NET_FLOW_EXCHANGE ? ch->cma_floor_exchange : ch->cma_floor;
  return bytes >= floor && bytes >= (x->flow & NET_FLOW_REDUCE ? NET_CMA_MIN : NET_CMA_COPY_MIN);
}

static void publish(net_shm_chan *ch, slot *sl) {
  atomic_store_explicit(&sl->seq, ch->out_next + 1, memory_order_release);
  ch->out_next++;
  net_shm_ring_bell(ch->peer_bell, ch->peer_sleeping);
}

static uint64_t reader_head(net_shm_chan *ch) {
  ch->out_slots_head = atomic_load_explicit(&ch->out->head, memory_order_acquire);
  return ch->out_slots_head;
}

static uint64_t reader_lines_head(net_shm_chan *ch) {
  ch->out_lines_head = atomic_load_explicit(&ch->out->lines_head, memory_order_acquire);
  return ch->out_lines_head;
}

/* Whether every slot of a lane holds a message the reader has not returned. The reader's heads
 * are read only when the lane looks full: their line stays put otherwise. */
static bool ring_full(net_shm_chan *ch, bool line) {
  if (line)
    return ch->out_lines - ch->out_lines_head >= NET_SHM_LINES &&
           ch->out_lines - reader_lines_head(ch) >= NET_SHM_LINES;
  return ch->out_slots - ch->out_slots_head >= NET_SHM_SLOTS &&
         ch->out_slots - reader_head(ch) >= NET_SHM_SLOTS;
}

/* The next slot of a lane to fill (it has room), stamped with the message's header and where
 * the slot's bytes lie in it. */
static slot *next_out_slot(net_shm_chan *ch, bool line, const net_msg_hdr *hdr, uint64_t off) {
  slot *sl = slot_at(ch->out, line, line ? ch->out_lines++ : ch->out_slots++);
  sl->hdr = *hdr;
  sl->off = off;
  return sl;
}

/* Copies n bytes (the slot's share of the message whose header sl->hdr holds, from sl->off) into
 * the slot and publishes it. */
static void fill_slot(net_shm_chan *ch, slot *sl, const char *src, uint64_t n) {
  sl->len = (uint32_t)n;
  sl->flags = 0;
  if (n >= SHM_FILL_MIN)
    shm_fill_copy(&ch->fill, sl->payload, src, n); /* off the small path */
  else if (n)
    memcpy(n <= SLOT_INLINE_BYTES ? sl->inline_data : sl->payload, src, n);
  publish(ch, sl);
}

/* Fills free slots with the head send; completes it once all is published (copied sends) or
 * once the receiver returned the descriptor's slot (CMA sends: it has finished reading). */
static void send_some(net_shm_chan *ch, bool *moved) {
  net_xfer *x;
  while ((x = head_xfer(&ch->sendq)) != NULL) {
    if (ch->cma_slot) {
      if (reader_head(ch) <= ch->cma_at) {
        shm_cma_share_write(ch, x, &slot_at(ch->out, false, ch->cma_at)->share, ch->cma_slot,
                            moved);
        return;
      }
      ch->cma_slot = 0;
      *moved = true; /* else the waiter, seeing no progress, sleeps a slice on a finished send */
      goto done;
    }
    do {
      bool cma = uses_cma(ch, x);
      uint64_t n = CORE_MIN(x->hdr.bytes - ch->send_done, (uint64_t)NET_SHM_SLOT_BYTES);
      bool line = !cma && fits_line(n);
      if (ring_full(ch, line)) return;
      if (cma) ch->cma_at = ch->out_slots;
      slot *sl = next_out_slot(ch, line, &x->hdr, ch->send_done);
      if (cma) {
        sl->len = 0;
        sl->flags = SLOT_CMA;
        sl->cma_addr = (uint64_t)(uintptr_t)x->src;
        ch->cma_slot = ch->out_next + 1;
        publish(ch, sl);
        *moved = true;
        break;
      }
      fill_slot(ch, sl, x->src + ch->send_done, n);
      ch->send_done += n;
      *moved = true;
    } while (ch->send_done < x->hdr.bytes);
    if (ch->cma_slot) continue; /* wait for the receiver to return it */
  done:
    ch->send_done = 0;
    net_queue_pop(&ch->sendq);
    x->parts_left = 0;
    x->complete = true;
  }
}

static tern_status check_slot(net_shm_chan *ch, const net_xfer *x, const slot *sl, core_err *err) {
  tern_status rc = net_msg_match(&x->hdr, &sl->hdr, ch->peer, err);
  if (rc != TERN_OK) return rc;
  bool ok = sl->flags == SLOT_CMA
                ? sl->off == 0 && sl->len == 0 && !in_line_lane(ch->in, sl)
                : sl->flags == 0 && sl->off == ch->recv_done && sl->len <= NET_SHM_SLOT_BYTES &&
                      sl->len <= x->hdr.bytes - ch->recv_done &&
                      (sl->len > 0 || x->hdr.bytes == 0) &&
                      (fits_line(sl->len) || !in_line_lane(ch->in, sl));
  if (!ok)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s wrote a slot with flags %u for bytes [%llu, +%u) where [%llu, ...) "
                        "of %llu was due",
                        ch->what, sl->flags, (unsigned long long)sl->off, sl->len,
                        (unsigned long long)ch->recv_done, (unsigned long long)x->hdr.bytes);
  return TERN_OK;
}

/* The next message the peer has published to us, from whichever lane holds it, or NULL while it
 * has not. The line lane is looked at first: a stream of small messages reads only its lines. */
static const slot *arrived_slot(net_shm_chan *ch) {
  const slot *sl = slot_at(ch->in, true, ch->in_lines);
  if (atomic_load_explicit(&sl->seq, memory_order_acquire) == ch->in_next + 1) return sl;
  sl = slot_at(ch->in, false, ch->in_slots);
  return atomic_load_explicit(&sl->seq, memory_order_acquire) == ch->in_next + 1 ? sl : NULL;
}

/* Copies (or reduces) an inline slot's bytes into place. */
static void take_bytes(net_xfer *x, const slot *sl) {
  const char *bytes = sl->len <= SLOT_INLINE_BYTES ? sl->inline_data : sl->payload;
  if (x->reduce)
    core_reduce((tern_dtype)x->hdr.dtype, (tern_op)x->hdr.op, x->dst + sl->off, x->src + sl->off,
                bytes, sl->len / tern_dtype_size((tern_dtype)x->hdr.dtype));
  else if (sl->len)
    memcpy(x->dst + sl->off, bytes, sl->len);
}

/* Hands the slot at in_next back to the writer, in its lane. After a small message, the lane's
 * next header line (and, in the payload lane, the first payload lines) are fetched ahead: in a
 * stream of small messages the writer is usually ahead, and its slots lie 64 KiB apart, where the
 * hardware cannot guess the next one. The fetch overlaps the rest of the caller's call instead of
 * stalling the next look (a fifth to a third of a small broadcast at n = 2: docs/perf/shm.md).
 * After a larger message it costs more than it saves: the writer is then not far ahead, and the
 * lines fetched are written again. */
static void return_slot(net_shm_chan *ch, const slot *sl) {
  bool small =
      sl->flags == 0 && sl->len <= PREFETCH_AFTER_MAX; /* read before the slot is given back */
  bool line = in_line_lane(ch->in, sl);
  uint64_t *taken = line ? &ch->in_lines : &ch->in_slots;
  ch->in_next++;
  ++*taken;
  if (small) {
    const slot *next = slot_at(ch->in, line, *taken);
    __builtin_prefetch(next);
    int lines = line ? LINE_PAYLOAD_BYTES / 64 : PREFETCH_PAYLOAD_LINES;
    for (int i = 0; i < lines; i++)
      __builtin_prefetch(next->payload + 64 * i);
  }
  atomic_store_explicit(line ? &ch->in->lines_head : &ch->in->head, *taken, memory_order_release);
  net_shm_ring_bell(ch->peer_bell, ch->peer_sleeping);
}

static tern_status recv_some(net_shm_chan *ch, bool *moved, core_err *err) {
  net_xfer *x;
  while ((x = head_xfer(&ch->recvq)) != NULL) {
    const slot *sl = arrived_slot(ch);
    if (sl == NULL) return TERN_OK;
    tern_status rc = check_slot(ch, x, sl, err);
    if (rc != TERN_OK) return rc;
    if (sl->flags == SLOT_CMA && shm_cma_shares(ch, x, ch->in_next + 1)) {
      bool finished;
      rc = shm_cma_share_read(ch, x, &slot_at(ch->in, false, ch->in_slots)->share, ch->in_next + 1,
                              sl->cma_addr, &finished, moved, err);
      if (rc != TERN_OK || !finished) return rc;
      ch->recv_done = x->hdr.bytes;
    } else if (sl->flags == SLOT_CMA) {
      rc = shm_cma_read(ch, x, sl->cma_addr, 0, x->hdr.bytes, err);
      if (rc != TERN_OK) return rc;
      ch->recv_done = x->hdr.bytes;
    } else {
      take_bytes(x, sl);
      ch->recv_done += sl->len;
    }
    return_slot(ch, sl);
    *moved = true;
    if (ch->recv_done == x->hdr.bytes) {
      ch->recv_done = 0;
      net_queue_pop(&ch->recvq);
      x->parts_left = 0;
      x->complete = true;
    }
  }
  return TERN_OK;
}

tern_status net_shm_move_now(net_shm_chan *ch, net_xfer *x, bool *done, core_err *err) {
  *done = false;
  if (x->hdr.bytes >= NET_SHM_NOW_MAX) return TERN_OK;
  if (x->is_send) {
    bool line = fits_line(x->hdr.bytes);
    if (ch->sendq.len || ring_full(ch, line)) return TERN_OK;
    fill_slot(ch, next_out_slot(ch, line, &x->hdr, 0), x->src, x->hdr.bytes);
  } else {
    const slot *sl = ch->recvq.len ? NULL : arrived_slot(ch);
    if (sl == NULL) return TERN_OK;
    tern_status rc = check_slot(ch, x, sl, err);
    if (rc != TERN_OK) return rc;
    if (sl->flags != 0 || sl->len != x->hdr.bytes) /* a healthy sender sends it in one slot */
      return core_err_set(err, TERN_ERR_PROTOCOL,
                          "%s sent a %llu-byte message as a slot of %u bytes with flags %u",
                          ch->what, (unsigned long long)x->hdr.bytes, sl->len, sl->flags);
    take_bytes(x, sl);
    return_slot(ch, sl);
  }
  x->complete = true;
  *done = true;
  return TERN_OK;
}

tern_status net_shm_progress(net_shm_chan *ch, bool *moved, core_err *err) {
  if (ch->sendq.len) send_some(ch, moved);
  return ch->recvq.len ? recv_some(ch, moved, err) : TERN_OK;
}

/* coll_steady.c: the phases a simulation may take as steady (sim_steady in coll.h).
 *
 * A ring of n ranks repeats one phase 2(n-1) times on every rank; once every rank is past its
 * first few repeats the phases cost the same each time, and simulating the rest message by
 * message (537 million messages for a ring of 16384 ranks) only multiplies that time. So with
 * steady = K, a phase index that is at least the K-th repeat of a run of identical phases on
 * every rank is not played: each rank sleeps, per repeat skipped, the least time of its own
 * repeats played after the first (coll_actor.c says why not the last's).
 *
 * Every rank skips the same phase indices, but a schedule's messages need not pair phase k with
 * phase k (a rank may receive in a later phase what its peer sent earlier). So the skip is kept
 * only if, on every channel (sender, receiver), the sender skips exactly the messages the
 * receiver skips: each end's sequence of skipped and played messages, run-length encoded and
 * hashed, must be the same. Otherwise nothing is skipped and the simulation is exact.
 */
#include "sim/coll.h"

#include <stdlib.h>
#include <string.h>

void sim_steady_init(sim_steady *st, int K) {
  memset(st, 0, sizeof *st);
  st->K = K;
}

void sim_steady_free(sim_steady *st) {
  free(st->count);
  free(st->skip);
  sim_steady_init(st, st->K);
}

void sim_steady_reset(sim_steady *st) {
  if (st->count) memset(st->count, 0, (st->cap + 1) * sizeof *st->count);
  st->nphases = 0;
  st->skipped = 0;
}

static bool ensure(sim_steady *st, size_t phases) {
  if (phases <= st->cap) return true;
  size_t cap = st->cap ? st->cap : 256;
  while (cap < phases)
    cap *= 2;
  size_t old = st->count ? st->cap + 1 : 0;
  int32_t *c = realloc(st->count, (cap + 1) * sizeof *c);
  if (c == NULL) return false;
  memset(c + old, 0, (cap + 1 - old) * sizeof *c);
  st->count = c;
  uint8_t *s = realloc(st->skip, cap);
  if (s == NULL) return false;
  st->skip = s;
  st->cap = cap;
  return true;
}

tern_status sim_steady_add(sim_steady *st, const sim_plan *pl) {
  size_t i = 0;
  for (size_t k = 0; k < pl->nphases; k++)
    i += pl->phases[k].repeat;
  if (!ensure(st, i)) return TERN_ERR_NOMEM;
  st->nphases = CORE_MAX(st->nphases, i);
  i = 0;
  for (size_t k = 0; k < pl->nphases; k++) {
    uint32_t R = pl->phases[k].repeat;
    if (R > (uint32_t)st->K) st->count[i + (size_t)st->K]++, st->count[i + R]--;
    i += R;
  }
  return TERN_OK;
}

/* ---- the channels' check ------------------------------------------------------------------ */

typedef struct end_seq {
  uint64_t hash, len; /* the segments closed so far, and the open one's length */
  uint8_t flag;       /* the open segment's: 1 skipped, 0 played */
} end_seq;

typedef struct channel {
  uint64_t key; /* (from + 1) << 32 | to; 0: empty */
  end_seq out, in;
} channel;

typedef struct channel_table {
  channel *slots;
  size_t mask;
} channel_table;

static uint64_t mix(uint64_t x) {
  x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27, x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static channel *lookup(channel_table *t, int from, int to) {
  uint64_t key = (uint64_t)(from + 1) << 32 | (uint32_t)to;
  for (size_t i = mix(key) & t->mask;; i = (i + 1) & t->mask) {
    if (t->slots[i].key == key) return &t->slots[i];
    if (t->slots[i].key == 0) {
      t->slots[i].key = key;
      return &t->slots[i];
    }
  }
}

static void close_segment(end_seq *e) {
  if (e->len) e->hash = mix(e->hash ^ mix(e->len << 1 | e->flag));
  e->len = 0;
}

static void append(end_seq *e, uint8_t flag, uint64_t n) {
  if (n == 0) return;
  if (e->len && e->flag != flag) close_segment(e);
  e->flag = flag;
  e->len += n;
}

/* Whether every channel's two ends skip the same messages. */
static tern_status channels_agree(const sim_steady *st, const sim_plan *const *plans, int n,
                                  bool *agree) {
  size_t slots = 0;
  for (int r = 0; r < n; r++)
    slots += plans[r]->nmsgs;
  size_t cap = 64;
  while (cap < 2 * slots)
    cap *= 2;
  channel_table t = {.slots = calloc(cap, sizeof(channel)), .mask = cap - 1};
  if (t.slots == NULL) return TERN_ERR_NOMEM;
  for (int r = 0; r < n; r++) {
    const sim_plan *pl = plans[r];
    size_t i = 0;
    for (size_t k = 0; k < pl->nphases; k++) {
      const sim_phase *ph = &pl->phases[k];
      /* a stretch of repeats skipped alike appends to each of the phase's channels at once:
       * within it the order of the phase's messages does not matter */
      for (size_t ii = i; ph->nmsgs && ii < i + ph->repeat;) {
        size_t j = ii + 1;
        while (j < i + ph->repeat && st->skip[j] == st->skip[ii])
          j++;
        for (uint32_t m = 0; m < ph->nmsgs; m++) {
          const sim_msg *msg = &pl->msgs[ph->first + m];
          channel *c = msg->send ? lookup(&t, r, msg->peer) : lookup(&t, msg->peer, r);
          append(msg->send ? &c->out : &c->in, st->skip[ii], j - ii);
        }
        ii = j;
      }
      i += ph->repeat;
    }
  }
  *agree = true;
  for (size_t s = 0; s < cap && *agree; s++) {
    channel *c = &t.slots[s];
    if (c->key == 0) continue;
    close_segment(&c->out), close_segment(&c->in);
    *agree = c->out.hash == c->in.hash;
  }
  free(t.slots);
  return TERN_OK;
}

tern_status sim_steady_decide(sim_steady *st, const sim_plan *const *plans, int n) {
  int32_t sum = 0;
  bool any = false;
  for (size_t i = 0; i < st->nphases; i++) {
    sum += st->count[i];
    st->skip[i] = sum == n;
    any |= st->skip[i];
  }
  if (!any) return TERN_OK;
  bool agree;
  tern_status rc = channels_agree(st, plans, n, &agree);
  if (rc != TERN_OK) return rc;
  if (!agree) memset(st->skip, 0, st->nphases);
  for (size_t i = 0; i < st->nphases; i++)
    st->skipped += st->skip[i];
  return TERN_OK;
}

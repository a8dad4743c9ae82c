/* cache.c: the last few schedules built, so that a collective repeated with the same arguments
 * (a training loop's allreduce of the same bucket, step after step) runs its schedule without
 * building it again.
 *
 * A schedule is a function of (coll_args, algorithm) alone: its steps name buffers (SEND, RECV,
 * TMP) and offsets in elements, never addresses, dtypes or ops, so it is re-bound to each call's
 * buffers when the executor runs it. The key is therefore every field of coll_args and the
 * algorithm, compared field by field (coll_args has padding, so no memcmp). The cache holds
 * COLL_SCHED_CACHE_LEN entries and evicts the least recently used one; an evicted entry's step
 * array is reused for the next schedule, so a warm cache allocates nothing, hit or miss, once its
 * arrays have grown to their sizes.
 *
 * Measured (docs/PERFORMANCE.md, perf of an 8 B broadcast at n = 2 over shared memory):
 * building was about 13% of the samples; with the cache, the lookup is about 2%.
 */
#include "coll/sched.h"

#include <string.h>

/* A field added to coll_args must be added to same_key too (and to the key test in
 * test_sched.c): this catches the addition on the LP64 targets tern builds for. */
_Static_assert(sizeof(size_t) != 8 || sizeof(coll_args) == 64,
               "coll_args changed: update same_key in cache.c");

void coll_sched_cache_init(coll_sched_cache *k) {
  memset(k, 0, sizeof *k);
  for (int i = 0; i < COLL_SCHED_CACHE_LEN; i++)
    coll_sched_init(&k->e[i].sched);
}

void coll_sched_cache_free(coll_sched_cache *k) {
  for (int i = 0; i < COLL_SCHED_CACHE_LEN; i++)
    coll_sched_free(&k->e[i].sched);
  memset(k, 0, sizeof *k);
}

static bool same_key(const coll_sched_cache_entry *e, const coll_args *a, coll_algo algo) {
  const coll_args *b = &e->key;
  return e->used != 0 && e->algo == algo && b->kind == a->kind && b->count == a->count &&
         b->rank == a->rank && b->size == a->size && b->root == a->root &&
         b->inplace == a->inplace && b->cpus == a->cpus && b->seg_count == a->seg_count &&
         b->ppn == a->ppn && b->inner == a->inner && b->hosts == a->hosts &&
         b->unchecked_root == a->unchecked_root && b->v == NULL && a->v == NULL;
}

tern_status coll_sched_cache_get(coll_sched_cache *k, const coll_args *a, coll_algo algo,
                                 const coll_sched **out) {
  coll_sched_cache_entry *victim = &k->e[0];
  for (int i = 0; i < COLL_SCHED_CACHE_LEN; i++) {
    coll_sched_cache_entry *e = &k->e[i];
    if (same_key(e, a, algo)) {
      e->used = ++k->clock;
      k->hits++;
      *out = &e->sched;
      return TERN_OK;
    }
    if (e->used < victim->used) victim = e; /* empty entries (used 0) go first */
  }
  k->misses++;
  tern_status rc = coll_build(&victim->sched, a, algo);
  /* Failures are not remembered: the entry stays empty, and the caller may try another algo.
   * Nor are schedules of per-peer counts (alltoallv's v): their key would be the caller's 4 n
   * counts, and building one is a pass over them, which comparing them would cost anyway. The
   * entry stays the first victim, so they evict nothing. */
  victim->used = rc == TERN_OK && a->v == NULL ? ++k->clock : 0;
  victim->key = *a;
  victim->key.v = NULL;
  victim->algo = algo;
  *out = &victim->sched;
  return rc;
}

/* sym.h: symbolic buffers, the checker's memory (sym.c; used by check.c).
 *
 * A symbolic element is what the checker knows of a value: the set of ranks whose
 * contributions it holds (a bit per rank, n <= 64), the index of the element they came from,
 * and a hash of the shape of its reduction tree. A buffer is a sorted list of runs covering its
 * whole extent; a run is consecutive elements holding consecutive indices with the same set and
 * hash. Schedules move coarse slices, so a buffer of any count has few runs, and checking
 * costs O(steps x runs), not O(count): the checker runs counts of 2^40 as fast as 40.
 */
#ifndef TERN_COLL_SYM_H
#define TERN_COLL_SYM_H

#include "core/core.h"

typedef struct coll_sym {
  size_t off, len; /* the run's elements, [off, off + len) */
  uint64_t set;    /* ranks whose contributions each holds; 0: never written */
  uint64_t hash;   /* the reduction tree's shape, commutative (coll_sym_combine_hash) */
  size_t idx;      /* the index of origin of element off; off + i holds idx + i */
} coll_sym;

/* Runs read out of a buffer, their offsets relative to where the read began. */
typedef struct coll_symlist {
  coll_sym *v;
  size_t len, cap;
} coll_symlist;

typedef struct coll_symbuf {
  coll_symlist runs; /* covers [0, extent) in order; in small until it outgrows it */
  coll_sym small[4]; /* most buffers never hold more runs: no allocation for them */
  size_t extent;
} coll_symbuf;

/* An extent of never-written elements. b must not move while in use (runs may point into it). */
void coll_symbuf_init(coll_symbuf *b, size_t extent);
void coll_symbuf_free(coll_symbuf *b);
/* Elements [off, off + len) (within the extent) get rank's contribution, indices idx on. */
tern_status coll_symbuf_fill(coll_symbuf *b, size_t off, size_t len, int rank, size_t idx,
                             coll_symlist *scratch);
/* Appends the runs of [off, off + len) to out (emptied first), offsets relative to off. */
tern_status coll_symbuf_read(const coll_symbuf *b, size_t off, size_t len, coll_symlist *out);
/* Writes in's runs at off: they must cover [0, total) of in contiguously. scratch is any list
 * the call may use. */
tern_status coll_symbuf_write(coll_symbuf *b, size_t off, const coll_symlist *in,
                              coll_symlist *scratch);

tern_status coll_symlist_grow(coll_symlist *l);
static inline tern_status coll_symlist_push(coll_symlist *l, const coll_sym *s) {
  if (l->len == l->cap && coll_symlist_grow(l) != TERN_OK) return TERN_ERR_NOMEM;
  l->v[l->len++] = *s;
  return TERN_OK;
}
void coll_symlist_free(coll_symlist *l);

/* The hash of a leaf (rank's own value) and of op(x, y), equal for op(y, x). */
uint64_t coll_sym_leaf_hash(int rank);
uint64_t coll_sym_combine_hash(uint64_t x, uint64_t y);

#endif /* TERN_COLL_SYM_H */

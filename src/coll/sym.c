/* sym.c: symbolic buffers (sym.h): sorted runs, read by binary search, written by splicing the
 * new runs over the old ones and merging neighbours that continue each other, so that a buffer
 * written block by block collapses back to a run per distinct value. */
#include "coll/sym.h"

#include "core/mix.h"

#include <stdlib.h>
#include <string.h>

uint64_t coll_sym_leaf_hash(int rank) {
  return core_mix64((uint64_t)rank + 0x51ed270b27a1f3c5ull);
}

/* Ordered by value, so op(x, y) and op(y, x) hash alike; mixed unevenly, so that (x y) z and
 * x (y z) do not. */
uint64_t coll_sym_combine_hash(uint64_t x, uint64_t y) {
  uint64_t lo = x < y ? x : y, hi = x < y ? y : x;
  return core_mix64(core_mix64(lo) ^ (hi * 0x2545f4914f6cdd1dull));
}

tern_status coll_symlist_grow(coll_symlist *l) {
  size_t cap = l->cap ? 2 * l->cap : 16;
  coll_sym *v = realloc(l->v, cap * sizeof *v);
  if (v == NULL) return TERN_ERR_NOMEM;
  l->v = v;
  l->cap = cap;
  return TERN_OK;
}

void coll_symlist_free(coll_symlist *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

void coll_symbuf_init(coll_symbuf *b, size_t extent) {
  b->extent = extent;
  b->runs = (coll_symlist){b->small, extent > 0, CORE_ARRAY_LEN(b->small)};
  b->small[0] = (coll_sym){.off = 0, .len = extent};
}

void coll_symbuf_free(coll_symbuf *b) {
  if (b->runs.v != b->small) free(b->runs.v);
  coll_symbuf_init(b, 0);
}

/* Room for len runs. */
static tern_status reserve(coll_symbuf *b, size_t len) {
  coll_symlist *r = &b->runs;
  if (len <= r->cap) return TERN_OK;
  size_t cap = CORE_MAX(len, 2 * r->cap);
  coll_sym *v = r->v == b->small ? malloc(cap * sizeof *v) : realloc(r->v, cap * sizeof *v);
  if (v == NULL) return TERN_ERR_NOMEM;
  if (r->v == b->small) memcpy(v, b->small, r->len * sizeof *v);
  r->v = v;
  r->cap = cap;
  return TERN_OK;
}

/* The run holding element off (< extent). */
static size_t find(const coll_symbuf *b, size_t off) {
  size_t lo = 0, hi = b->runs.len;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->runs.v[mid].off <= off)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

tern_status coll_symbuf_read(const coll_symbuf *b, size_t off, size_t len, coll_symlist *out) {
  out->len = 0;
  size_t end = off + len;
  for (size_t i = len ? find(b, off) : b->runs.len; i < b->runs.len && b->runs.v[i].off < end;
       i++) {
    const coll_sym *r = &b->runs.v[i];
    size_t lo = CORE_MAX(r->off, off), hi = CORE_MIN(r->off + r->len, end);
    coll_sym piece = {lo - off, hi - lo, r->set, r->hash, r->idx + (lo - r->off)};
    if (coll_symlist_push(out, &piece) != TERN_OK) return TERN_ERR_NOMEM;
  }
  return TERN_OK;
}

/* Whether y, right after x, continues it (never-written runs always do). */
static bool continues(const coll_sym *x, const coll_sym *y) {
  return x->set == y->set && (x->set == 0 || (x->hash == y->hash && y->idx == x->idx + x->len));
}

/* Pushes s onto l, merged into l's last run when it continues it. */
static tern_status push_merged(coll_symlist *l, const coll_sym *s) {
  if (s->len == 0) return TERN_OK;
  if (l->len && continues(&l->v[l->len - 1], s)) {
    l->v[l->len - 1].len += s->len;
    return TERN_OK;
  }
  return coll_symlist_push(l, s);
}

/* Replaces runs [i0, i1] of b with those of with. */
static tern_status splice(coll_symbuf *b, size_t i0, size_t i1, const coll_symlist *with) {
  coll_symlist *r = &b->runs;
  size_t old = i1 - i0 + 1, m = with->len, len = r->len - old + m;
  if (reserve(b, len) != TERN_OK) return TERN_ERR_NOMEM;
  memmove(r->v + i0 + m, r->v + i1 + 1, (r->len - i1 - 1) * sizeof *r->v);
  memcpy(r->v + i0, with->v, m * sizeof *r->v);
  r->len = len;
  return TERN_OK;
}

tern_status coll_symbuf_write(coll_symbuf *b, size_t off, const coll_symlist *in,
                              coll_symlist *tmp) {
  size_t len = 0;
  for (size_t k = 0; k < in->len; k++)
    len += in->v[k].len;
  if (len == 0) return TERN_OK;
  size_t end = off + len, i0 = find(b, off), i1 = find(b, end - 1);
  /* Take the neighbours in too, so that runs merge across the edges of the write. */
  if (i0 > 0) i0--;
  if (i1 + 1 < b->runs.len) i1++;
  tmp->len = 0;
  tern_status st = TERN_OK;
  for (size_t i = i0; i <= i1 && st == TERN_OK; i++) {
    coll_sym head = b->runs.v[i];
    if (head.off >= off) break;
    head.len = CORE_MIN(head.len, off - head.off);
    st = push_merged(tmp, &head);
  }
  for (size_t k = 0; k < in->len && st == TERN_OK; k++) {
    coll_sym s = in->v[k];
    s.off += off;
    st = push_merged(tmp, &s);
  }
  for (size_t i = i0; i <= i1 && st == TERN_OK; i++) {
    coll_sym tail = b->runs.v[i];
    size_t tend = tail.off + tail.len;
    if (tend <= end) continue;
    if (tail.off < end) {
      tail.idx += end - tail.off;
      tail.len = tend - end;
      tail.off = end;
    }
    st = push_merged(tmp, &tail);
  }
  return st == TERN_OK ? splice(b, i0, i1, tmp) : st;
}

tern_status coll_symbuf_fill(coll_symbuf *b, size_t off, size_t len, int rank, size_t idx,
                             coll_symlist *scratch) {
  coll_sym run = {0, len, 1ull << rank, coll_sym_leaf_hash(rank), idx};
  coll_symlist one = {&run, 1, 1};
  return coll_symbuf_write(b, off, &one, scratch);
}

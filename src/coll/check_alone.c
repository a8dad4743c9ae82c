/* check_alone.c: the checker's look at each schedule on its own, before any message moves:
 * every step well formed (kind, buffers, a peer that is another rank), SEND never written,
 * every region inside its buffer's extent, no step whose source overlaps its destination
 * shifted, phases closed and counted right, and no race inside a phase. Regions are compared in
 * storage terms (coll_chk_rank's store and base), so in place SEND and RECV are one buffer. */
#include "coll/check.h"

#include <stdlib.h>

/* The regions step i (st) touches (at most 2), in storage terms. */
static int regions(const coll_chk_rank *k, const coll_step *st, size_t i, coll_chk_region out[2]) {
  int m = 0;
  if (st->count == 0) return 0;
  out[m++] = (coll_chk_region){k->store[st->buf], k->base[st->buf] + st->off,
                               k->base[st->buf] + st->off + st->count, coll_chk_writes(st), i};
  if (coll_chk_has_src(st))
    out[m++] = (coll_chk_region){k->store[st->src_buf], k->base[st->src_buf] + st->src_off,
                                 k->base[st->src_buf] + st->src_off + st->count, false, i};
  return m;
}

static bool overlap(const coll_chk_region *x, const coll_chk_region *y) {
  return x->store == y->store && x->lo < y->hi && y->lo < x->hi;
}

static bool inside(const coll_chk_rank *k, int buf, size_t off, size_t count) {
  return count == 0 || (off <= k->extent[buf] && count <= k->extent[buf] - off);
}

static tern_status check_step(coll_checker *c, int r, size_t i) {
  const coll_chk_rank *k = &c->rk[r];
  const coll_step *st = &k->s->steps[i];
  char w[256];
  if (st->kind > COLL_STEP_REDUCE || st->buf >= COLL_NUM_BUFS || st->last > 1 ||
      (coll_chk_has_src(st) && st->src_buf >= COLL_NUM_BUFS))
    return coll_chk_fail(c, "rank %d step %zu is malformed (kind %u, buf %u, src %u, last %u)", r,
                         i, st->kind, st->buf, st->src_buf, st->last);
  if (coll_chk_is_msg(st) && (st->peer < 0 || st->peer >= c->n || st->peer == r))
    return coll_chk_fail(c, "%s: no such peer (n = %d)", coll_chk_where(c, r, i, w, sizeof w),
                         c->n);
  if (coll_chk_writes(st) && st->buf == COLL_BUF_SEND)
    return coll_chk_fail(c, "%s writes SEND, which is never written",
                         coll_chk_where(c, r, i, w, sizeof w));
  if (!inside(k, st->buf, st->off, st->count) ||
      (coll_chk_has_src(st) && !inside(k, st->src_buf, st->src_off, st->count)))
    return coll_chk_fail(c, "%s: outside the extents (SEND %zu, RECV %zu, TMP %zu)",
                         coll_chk_where(c, r, i, w, sizeof w), k->extent[0], k->extent[1],
                         k->extent[2]);
  coll_chk_region g[2];
  if (regions(k, st, i, g) == 2 && overlap(&g[0], &g[1]) && g[0].lo != g[1].lo)
    return coll_chk_fail(c, "%s: its source overlaps its destination, shifted",
                         coll_chk_where(c, r, i, w, sizeof w));
  return TERN_OK;
}

/* The furthest-reaching regions of a sweep: the top one, and the top one of another step. */
typedef struct reach {
  size_t hi[2], step[2];
} reach;

static void reach_add(reach *x, const coll_chk_region *g) {
  if (g->step == x->step[0]) {
    x->hi[0] = CORE_MAX(x->hi[0], g->hi);
  } else if (g->hi > x->hi[0]) {
    x->hi[1] = x->hi[0], x->step[1] = x->step[0];
    x->hi[0] = g->hi, x->step[0] = g->step;
  } else if (g->hi > x->hi[1]) {
    x->hi[1] = g->hi, x->step[1] = g->step;
  }
}

/* A step other than step whose coll_chk_region, starting at or before lo, reaches past it; or
 * SIZE_MAX. */
static size_t reach_past(const reach *x, size_t lo, size_t step) {
  int k = x->step[0] == step;
  return x->hi[k] > lo ? x->step[k] : SIZE_MAX;
}

/* Sorts g[0, m) by (store, start): insertion, as phases are short and come nearly sorted. */
static void sort_regions(coll_chk_region *g, size_t m) {
  for (size_t i = 1; i < m; i++) {
    coll_chk_region x = g[i];
    size_t j = i;
    for (; j > 0 && (g[j - 1].store > x.store || (g[j - 1].store == x.store && g[j - 1].lo > x.lo));
         j--)
      g[j] = g[j - 1];
    g[j] = x;
  }
}

/* No step of the phase [ps, pe) writes what another reads or writes: a sweep over its regions
 * sorted by start, each checked against the furthest reach of the writes, and (when it is a
 * write) of all the regions, of other steps before it. */
static tern_status check_races(coll_checker *c, int r, size_t ps, size_t pe) {
  const coll_chk_rank *k = &c->rk[r];
  char w1[256], w2[256];
  size_t m = 0;
  if (2 * (pe - ps) > c->nregions) {
    coll_chk_region *g = realloc(c->regions, 2 * (pe - ps) * sizeof *g);
    if (g == NULL) return TERN_ERR_NOMEM;
    c->regions = g, c->nregions = 2 * (pe - ps);
  }
  for (size_t i = ps; i < pe; i++)
    m += (size_t)regions(k, &k->s->steps[i], i, c->regions + m);
  sort_regions(c->regions, m);
  reach writes = {{0, 0}, {SIZE_MAX, SIZE_MAX}}, all = writes;
  for (size_t q = 0; q < m; q++) {
    const coll_chk_region *g = &c->regions[q];
    if (q > 0 && g->store != c->regions[q - 1].store)
      all = writes = (reach){{0, 0}, {SIZE_MAX, SIZE_MAX}};
    size_t other = reach_past(&writes, g->lo, g->step);
    if (other == SIZE_MAX && g->write) other = reach_past(&all, g->lo, g->step);
    if (other != SIZE_MAX)
      return coll_chk_fail(c, "race in a phase: %s and %s touch the same elements",
                           coll_chk_where(c, r, CORE_MIN(g->step, other), w1, sizeof w1),
                           coll_chk_where(c, r, CORE_MAX(g->step, other), w2, sizeof w2));
    reach_add(&all, g);
    if (g->write) reach_add(&writes, g);
  }
  return TERN_OK;
}

tern_status coll_chk_alone(coll_checker *c, int r) {
  const coll_sched *s = c->rk[r].s;
  int phases = 0;
  size_t ps = 0;
  for (size_t i = 0; i < s->len; i++) {
    tern_status st = check_step(c, r, i);
    if (st != TERN_OK) return st;
    if (!s->steps[i].last) continue;
    if ((st = check_races(c, r, ps, i + 1)) != TERN_OK) return st;
    phases++;
    ps = i + 1;
  }
  if (ps != s->len)
    return coll_chk_fail(c, "rank %d: its last phase is not closed (no step has last)", r);
  if (phases != s->nphases)
    return coll_chk_fail(c, "rank %d: nphases is %d but its steps close %d phases", r, s->nphases,
                         phases);
  return TERN_OK;
}

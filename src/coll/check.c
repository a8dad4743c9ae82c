/* check.c: the symbolic checker. It runs the schedules of all n ranks of one collective
 * without data, on symbolic buffers (sym.h), and proves what sched.h promises.
 *
 * First each schedule alone: steps well formed, phases closed, every region inside the extent
 * the public API gives its buffer (so a non-root's RECV of reduce, of extent 0, is never
 * touched), SEND never written, and no race inside a phase: no step writes what another step
 * of its phase reads or writes, counting the aliasing of in-place calls (each buffer maps to a
 * storage and a base: in place, SEND and RECV share one). Then the messages: the k-th send
 * from a to b must meet b's k-th receive from a, with the same count.
 *
 * Then the run. Every rank enters its first phase; entering a phase does its local steps (the
 * race check makes their order irrelevant). A send and its receive complete together, when
 * both ranks are in the phases that hold them: nothing is buffered, so a schedule that
 * finishes here finishes on any transport. A phase ends when its messages have completed, and
 * if no rank can move while one is unfinished, that is a deadlock. Each element moved carries
 * its set of contributions, index of origin and tree hash: a reduction of two elements of
 * different indices, or whose sets meet (a contribution counted twice), is an error where it
 * happens. A barrier's messages carry what their sender knew when its phase began: who it has
 * heard from, directly or not.
 *
 * Last, every rank's RECV must hold exactly what the collective promises, element by element
 * (all contributions, each once, of the right index), allreduce's and allgather's with the same
 * hash on every rank: the same bits, since a commutative op's operands may swap but not
 * regroup. A barrier rank must have heard from every rank.
 */
#include "coll/sched.h"
#include "coll/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 64

typedef struct rank_state {
  const coll_sched *s;
  size_t extent[COLL_NUM_BUFS]; /* as the table of sched.h gives it (TMP: tmp_count) */
  uint8_t store[COLL_NUM_BUFS]; /* the storage buffer b lives in, at base[b] */
  size_t base[COLL_NUM_BUFS];
  coll_symbuf mem[COLL_NUM_BUFS]; /* the storages (one unused when in place) */
  size_t *match;                  /* per message step: the partner's step */
  size_t ps, pe;                  /* the current phase's steps; ps == len: finished */
  size_t pending;                 /* its messages not yet completed */
  int phase;
  uint64_t known, known_then; /* ranks heard from; the same when the phase began */
} rank_state;

typedef struct region {
  int store;
  size_t lo, hi;
  bool write;
  size_t step;
} region;

typedef struct checker {
  const coll_args *a;
  int n;
  rank_state rk[MAX_RANKS];
  coll_symlist l1, l2, l3, scratch;
  size_t *match;   /* every rank's match, one after the other */
  region *regions; /* scratch for the race check */
  size_t nregions;
  char *why;
  size_t why_len;
} checker;

static const char *const buf_names[COLL_NUM_BUFS] = {"SEND", "RECV", "TMP"};
static const char *const step_names[] = {"send", "recv", "recv_reduce", "copy", "reduce"};

static tern_status fail(checker *c, const char *fmt, ...) CORE_PRINTF(2, 3);
static tern_status fail(checker *c, const char *fmt, ...) {
  if (c->why_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->why_len, fmt, ap);
    va_end(ap);
  }
  return TERN_ERR_INVALID_ARG;
}

static bool is_msg(const coll_step *st) {
  return st->kind <= COLL_STEP_RECV_REDUCE;
}
static bool writes(const coll_step *st) {
  return st->kind != COLL_STEP_SEND;
}
static bool has_src(const coll_step *st) {
  return st->kind >= COLL_STEP_RECV_REDUCE;
}

/* "rank 2 step 5 (phase 1: recv_reduce from 3 into RECV[8,+4) with SEND[8,+4))". */
static const char *where(const checker *c, int r, size_t i, char *out, size_t len) {
  const coll_step *st = &c->rk[r].s->steps[i];
  int phase = 0;
  for (size_t k = 0; k < i; k++)
    phase += c->rk[r].s->steps[k].last;
  char peer[24] = "", src[64] = "";
  if (is_msg(st))
    snprintf(peer, sizeof peer, st->kind == COLL_STEP_SEND ? " to %d" : " from %d", st->peer);
  if (has_src(st))
    snprintf(src, sizeof src, " with %s[%zu,+%zu)", buf_names[st->src_buf], st->src_off, st->count);
  snprintf(out, len, "rank %d step %zu (phase %d: %s%s %s %s[%zu,+%zu)%s)", r, i, phase,
           step_names[st->kind], peer, st->kind == COLL_STEP_SEND ? "of" : "into",
           buf_names[st->buf], st->off, st->count, src);
  return out;
}

/* "3, 5, 9" (the first few ranks of a set). */
static const char *ranks_str(uint64_t set, char *out, size_t len) {
  size_t w = 0;
  out[0] = 0;
  for (int r = 0, shown = 0; r < MAX_RANKS && w < len; r++) {
    if (!(set >> r & 1)) continue;
    if (shown++ == 6) {
      snprintf(out + w, len - w, ", ...");
      break;
    }
    w += snprintf(out + w, len - w, "%s%d", w ? ", " : "", r);
  }
  return out;
}

/* ---- extents and aliasing ---------------------------------------------------------------- */

static void layout(checker *c, int r) {
  const coll_args *a = c->a;
  rank_state *k = &c->rk[r];
  size_t n = (size_t)c->n, cnt = a->count, send = cnt, recv = cnt;
  bool root = r == a->root;
  switch (a->kind) {
  case COLL_REDUCE_SCATTER:
    send = n * cnt;
    break;
  case COLL_ALLGATHER:
    recv = n * cnt;
    break;
  case COLL_BROADCAST:
    send = root ? cnt : 0;
    break;
  case COLL_REDUCE:
    recv = root ? cnt : 0;
    break;
  case COLL_ALLTOALL:
    send = recv = n * cnt;
    break;
  case COLL_BARRIER:
    send = recv = 0;
    break;
  default:
    break;
  }
  k->extent[COLL_BUF_SEND] = send;
  k->extent[COLL_BUF_RECV] = recv;
  k->extent[COLL_BUF_TMP] = k->s->tmp_count;
  for (int b = 0; b < COLL_NUM_BUFS; b++)
    k->store[b] = (uint8_t)b, k->base[b] = 0;
  if (!a->inplace) return;
  if (a->kind == COLL_ALLREDUCE || ((a->kind == COLL_BROADCAST || a->kind == COLL_REDUCE) && root))
    k->store[COLL_BUF_SEND] = COLL_BUF_RECV;
  if (a->kind == COLL_ALLGATHER)
    k->store[COLL_BUF_SEND] = COLL_BUF_RECV, k->base[COLL_BUF_SEND] = (size_t)r * cnt;
  if (a->kind == COLL_REDUCE_SCATTER)
    k->store[COLL_BUF_RECV] = COLL_BUF_SEND, k->base[COLL_BUF_RECV] = (size_t)r * cnt;
}

/* ---- each schedule alone ----------------------------------------------------------------- */

/* The regions step i (st) touches (at most 2), in storage terms. */
static int regions(const rank_state *k, const coll_step *st, size_t i, region out[2]) {
  int m = 0;
  if (st->count == 0) return 0;
  out[m++] = (region){k->store[st->buf], k->base[st->buf] + st->off,
                      k->base[st->buf] + st->off + st->count, writes(st), i};
  if (has_src(st))
    out[m++] = (region){k->store[st->src_buf], k->base[st->src_buf] + st->src_off,
                        k->base[st->src_buf] + st->src_off + st->count, false, i};
  return m;
}

static bool overlap(const region *x, const region *y) {
  return x->store == y->store && x->lo < y->hi && y->lo < x->hi;
}

static bool inside(const rank_state *k, int buf, size_t off, size_t count) {
  return count == 0 || (off <= k->extent[buf] && count <= k->extent[buf] - off);
}

static tern_status check_step(checker *c, int r, size_t i) {
  const rank_state *k = &c->rk[r];
  const coll_step *st = &k->s->steps[i];
  char w[256];
  if (st->kind > COLL_STEP_REDUCE || st->buf >= COLL_NUM_BUFS || st->last > 1 ||
      (has_src(st) && st->src_buf >= COLL_NUM_BUFS))
    return fail(c, "rank %d step %zu is malformed (kind %u, buf %u, src %u, last %u)", r, i,
                st->kind, st->buf, st->src_buf, st->last);
  if (is_msg(st) && (st->peer < 0 || st->peer >= c->n || st->peer == r))
    return fail(c, "%s: no such peer (n = %d)", where(c, r, i, w, sizeof w), c->n);
  if (writes(st) && st->buf == COLL_BUF_SEND)
    return fail(c, "%s writes SEND, which is never written", where(c, r, i, w, sizeof w));
  if (!inside(k, st->buf, st->off, st->count) ||
      (has_src(st) && !inside(k, st->src_buf, st->src_off, st->count)))
    return fail(c, "%s: outside the extents (SEND %zu, RECV %zu, TMP %zu)",
                where(c, r, i, w, sizeof w), k->extent[0], k->extent[1], k->extent[2]);
  region g[2];
  if (regions(k, st, i, g) == 2 && overlap(&g[0], &g[1]) && g[0].lo != g[1].lo)
    return fail(c, "%s: its source overlaps its destination, shifted", where(c, r, i, w, sizeof w));
  return TERN_OK;
}

/* The furthest-reaching regions of a sweep: the top one, and the top one of another step. */
typedef struct reach {
  size_t hi[2], step[2];
} reach;

static void reach_add(reach *x, const region *g) {
  if (g->step == x->step[0]) {
    x->hi[0] = CORE_MAX(x->hi[0], g->hi);
  } else if (g->hi > x->hi[0]) {
    x->hi[1] = x->hi[0], x->step[1] = x->step[0];
    x->hi[0] = g->hi, x->step[0] = g->step;
  } else if (g->hi > x->hi[1]) {
    x->hi[1] = g->hi, x->step[1] = g->step;
  }
}

/* A step other than step whose region, starting at or before lo, reaches past it; or SIZE_MAX. */
static size_t reach_past(const reach *x, size_t lo, size_t step) {
  int k = x->step[0] == step;
  return x->hi[k] > lo ? x->step[k] : SIZE_MAX;
}

/* Sorts g[0, m) by (store, start): insertion, as phases are short and come nearly sorted. */
static void sort_regions(region *g, size_t m) {
  for (size_t i = 1; i < m; i++) {
    region x = g[i];
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
static tern_status check_races(checker *c, int r, size_t ps, size_t pe) {
  const rank_state *k = &c->rk[r];
  char w1[256], w2[256];
  size_t m = 0;
  if (2 * (pe - ps) > c->nregions) {
    region *g = realloc(c->regions, 2 * (pe - ps) * sizeof *g);
    if (g == NULL) return TERN_ERR_NOMEM;
    c->regions = g, c->nregions = 2 * (pe - ps);
  }
  for (size_t i = ps; i < pe; i++)
    m += (size_t)regions(k, &k->s->steps[i], i, c->regions + m);
  sort_regions(c->regions, m);
  reach writes = {{0, 0}, {SIZE_MAX, SIZE_MAX}}, all = writes;
  for (size_t q = 0; q < m; q++) {
    const region *g = &c->regions[q];
    if (q > 0 && g->store != c->regions[q - 1].store)
      all = writes = (reach){{0, 0}, {SIZE_MAX, SIZE_MAX}};
    size_t other = reach_past(&writes, g->lo, g->step);
    if (other == SIZE_MAX && g->write) other = reach_past(&all, g->lo, g->step);
    if (other != SIZE_MAX)
      return fail(c, "race in a phase: %s and %s touch the same elements",
                  where(c, r, CORE_MIN(g->step, other), w1, sizeof w1),
                  where(c, r, CORE_MAX(g->step, other), w2, sizeof w2));
    reach_add(&all, g);
    if (g->write) reach_add(&writes, g);
  }
  return TERN_OK;
}

static tern_status check_sched(checker *c, int r) {
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
  if (ps != s->len) return fail(c, "rank %d: its last phase is not closed (no step has last)", r);
  if (phases != s->nphases)
    return fail(c, "rank %d: nphases is %d but its steps close %d phases", r, s->nphases, phases);
  return TERN_OK;
}

/* ---- messages ---------------------------------------------------------------------------- */

/* The message steps of every rank, grouped by (owner, peer) in schedule order: sends at key
 * owner n + peer, receives at key owner n + peer too (owner being the receiver). */
typedef struct msg_index {
  size_t *start; /* n n + 1, then room to fill them, then step: one allocation */
  size_t *step;
} msg_index;

static tern_status index_msgs(checker *c, bool sends, msg_index *x) {
  size_t n = (size_t)c->n, total = 0;
  for (int r = 0; r < c->n; r++)
    total += c->rk[r].s->len;
  x->start = malloc((2 * n * n + 1 + total) * sizeof *x->start);
  if (x->start == NULL) return TERN_ERR_NOMEM;
  size_t *fill = x->start + n * n + 1;
  x->step = fill + n * n;
  memset(x->start, 0, (n * n + 1) * sizeof *x->start);
  for (int r = 0; r < c->n; r++)
    for (size_t i = 0; i < c->rk[r].s->len; i++) {
      const coll_step *st = &c->rk[r].s->steps[i];
      if (is_msg(st) && (st->kind == COLL_STEP_SEND) == sends) x->start[r * n + st->peer + 1]++;
    }
  for (size_t k = 0; k < n * n; k++)
    x->start[k + 1] += x->start[k], fill[k] = x->start[k];
  for (int r = 0; r < c->n; r++)
    for (size_t i = 0; i < c->rk[r].s->len; i++) {
      const coll_step *st = &c->rk[r].s->steps[i];
      if (is_msg(st) && (st->kind == COLL_STEP_SEND) == sends)
        x->step[fill[r * n + st->peer]++] = i;
    }
  return TERN_OK;
}

static tern_status pair_msgs(checker *c, const msg_index *snd, const msg_index *rcv) {
  size_t n = (size_t)c->n;
  char w1[256], w2[256];
  for (int a = 0; a < c->n; a++)
    for (int b = 0; b < c->n; b++) {
      size_t s0 = snd->start[a * n + b], ns = snd->start[a * n + b + 1] - s0;
      size_t r0 = rcv->start[b * n + a], nr = rcv->start[b * n + a + 1] - r0;
      if (ns != nr)
        return fail(c, "rank %d sends %zu messages to rank %d, which receives %zu from it", a, ns,
                    b, nr);
      for (size_t k = 0; k < ns; k++) {
        size_t si = snd->step[s0 + k], ri = rcv->step[r0 + k];
        const coll_step *x = &c->rk[a].s->steps[si], *y = &c->rk[b].s->steps[ri];
        if (x->count != y->count)
          return fail(c, "count mismatch: message %zu from %d to %d: %s sends %zu, %s expects %zu",
                      k, a, b, where(c, a, si, w1, sizeof w1), x->count,
                      where(c, b, ri, w2, sizeof w2), y->count);
        c->rk[a].match[si] = ri;
        c->rk[b].match[ri] = si;
      }
    }
  return TERN_OK;
}

static tern_status link_msgs(checker *c) {
  msg_index snd = {0}, rcv = {0};
  tern_status st = index_msgs(c, true, &snd);
  if (st == TERN_OK) st = index_msgs(c, false, &rcv);
  if (st == TERN_OK) st = pair_msgs(c, &snd, &rcv);
  free(snd.start);
  free(rcv.start);
  return st;
}

/* ---- the symbolic run -------------------------------------------------------------------- */

/* The runs of rank r's buf[off, +count) into out, all of them written. */
static tern_status load(checker *c, int r, size_t i, int buf, size_t off, size_t count,
                        coll_symlist *out) {
  rank_state *k = &c->rk[r];
  char w[256];
  if (coll_symbuf_read(&k->mem[k->store[buf]], k->base[buf] + off, count, out) != TERN_OK)
    return TERN_ERR_NOMEM;
  for (size_t q = 0; q < out->len; q++)
    if (out->v[q].set == 0)
      return fail(c, "%s reads %s[%zu], which was never written", where(c, r, i, w, sizeof w),
                  buf_names[buf], off + out->v[q].off);
  return TERN_OK;
}

static tern_status store(checker *c, int r, int buf, size_t off, const coll_symlist *in) {
  rank_state *k = &c->rk[r];
  return coll_symbuf_write(&k->mem[k->store[buf]], k->base[buf] + off, in, &c->scratch);
}

/* out = x op y, element by element, for step i of rank r. */
static tern_status combine(checker *c, int r, size_t i, const coll_symlist *x,
                           const coll_symlist *y, coll_symlist *out) {
  char w[256], who[64];
  out->len = 0;
  size_t p = 0, q = 0, dp = 0, dq = 0;
  while (p < x->len && q < y->len) {
    const coll_sym *u = &x->v[p], *v = &y->v[q];
    size_t len = CORE_MIN(u->len - dp, v->len - dq);
    if (u->idx + dp != v->idx + dq)
      return fail(c, "%s reduces element %zu with element %zu", where(c, r, i, w, sizeof w),
                  u->idx + dp, v->idx + dq);
    if (u->set & v->set)
      return fail(c, "%s counts the contribution of rank %s twice (element %zu)",
                  where(c, r, i, w, sizeof w), ranks_str(u->set & v->set, who, sizeof who),
                  u->idx + dp);
    coll_sym s = {u->off + dp, len, u->set | v->set, coll_sym_combine_hash(u->hash, v->hash),
                  u->idx + dp};
    if (coll_symlist_push(out, &s) != TERN_OK) return TERN_ERR_NOMEM;
    dp += len, dq += len;
    if (dp == u->len) p++, dp = 0;
    if (dq == v->len) q++, dq = 0;
  }
  return TERN_OK;
}

static tern_status exec_local(checker *c, int r, size_t i) {
  const coll_step *st = &c->rk[r].s->steps[i];
  tern_status s = load(c, r, i, st->src_buf, st->src_off, st->count, &c->l1);
  if (s == TERN_OK && st->kind == COLL_STEP_REDUCE) {
    s = load(c, r, i, st->buf, st->off, st->count, &c->l2);
    if (s == TERN_OK) s = combine(c, r, i, &c->l2, &c->l1, &c->l3);
    return s == TERN_OK ? store(c, r, st->buf, st->off, &c->l3) : s;
  }
  return s == TERN_OK ? store(c, r, st->buf, st->off, &c->l1) : s;
}

/* Rank a's send i meets rank b's receive j. */
static tern_status fire(checker *c, int a, size_t i, int b, size_t j) {
  const coll_step *x = &c->rk[a].s->steps[i], *y = &c->rk[b].s->steps[j];
  tern_status s = load(c, a, i, x->buf, x->off, x->count, &c->l1);
  if (s == TERN_OK && y->kind == COLL_STEP_RECV_REDUCE) {
    s = load(c, b, j, y->src_buf, y->src_off, y->count, &c->l2);
    if (s == TERN_OK) s = combine(c, b, j, &c->l2, &c->l1, &c->l3);
    if (s == TERN_OK) s = store(c, b, y->buf, y->off, &c->l3);
  } else if (s == TERN_OK) {
    s = store(c, b, y->buf, y->off, &c->l1);
  }
  c->rk[b].known |= c->rk[a].known_then;
  c->rk[a].match[i] = SIZE_MAX; /* done */
  c->rk[b].match[j] = SIZE_MAX;
  c->rk[a].pending--;
  c->rk[b].pending--;
  return s;
}

/* Moves rank r into its next phase and does the phase's local steps. */
static tern_status enter(checker *c, int r) {
  rank_state *k = &c->rk[r];
  const coll_sched *s = k->s;
  k->ps = k->pe;
  if (k->ps == s->len) return TERN_OK;
  while (!s->steps[k->pe].last)
    k->pe++;
  k->pe++;
  k->phase++;
  k->known_then = k->known;
  k->pending = 0;
  for (size_t i = k->ps; i < k->pe; i++) {
    if (is_msg(&s->steps[i])) {
      k->pending++;
      continue;
    }
    tern_status st = exec_local(c, r, i);
    if (st != TERN_OK) return st;
  }
  return TERN_OK;
}

static tern_status deadlock(checker *c) {
  char msg[900], w[256];
  size_t len = (size_t)snprintf(msg, sizeof msg, "deadlock:");
  for (int r = 0, shown = 0; r < c->n && shown < 3; r++) {
    const rank_state *k = &c->rk[r];
    if (k->ps == k->s->len) continue;
    size_t i = k->ps;
    while (k->match[i] == SIZE_MAX || !is_msg(&k->s->steps[i]))
      i++;
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%s %s waits",
                            shown++ ? ";" : "", where(c, r, i, w, sizeof w));
    if (len >= sizeof msg) break;
  }
  return fail(c, "%s", msg);
}

/* A message can only become possible when one of its ranks enters the phase that holds it, so
 * a rank entering a phase fires what it can meet, and a rank whose phase completes goes on the
 * stack to enter the next: every step is looked at a bounded number of times. */
static tern_status run(checker *c) {
  int stack[MAX_RANKS], top = 0;
  for (int r = 0; r < c->n; r++)
    stack[top++] = r;
  while (top > 0) {
    int r = stack[--top];
    rank_state *k = &c->rk[r];
    tern_status st = enter(c, r);
    if (st != TERN_OK) return st;
    for (size_t i = k->ps; i < k->pe; i++) {
      const coll_step *x = &k->s->steps[i];
      if (!is_msg(x) || k->match[i] == SIZE_MAX) continue;
      rank_state *kb = &c->rk[x->peer];
      size_t j = k->match[i];
      if (j < kb->ps || j >= kb->pe) continue;
      st = x->kind == COLL_STEP_SEND ? fire(c, r, i, x->peer, j) : fire(c, x->peer, j, r, i);
      if (st != TERN_OK) return st;
      if (kb->pending == 0) stack[top++] = x->peer;
    }
    if (k->ps < k->s->len && k->pending == 0) stack[top++] = r;
  }
  for (int r = 0; r < c->n; r++)
    if (c->rk[r].ps != c->rk[r].s->len) return deadlock(c);
  return TERN_OK;
}

/* ---- the results ------------------------------------------------------------------------- */

typedef struct want {
  size_t off, len, idx; /* RECV[off, +len) holds indices idx on ... */
  uint64_t set;         /* ... of these ranks' contributions */
} want;

/* Piece q of what rank r's RECV must hold; false past the last. */
static bool expect(const checker *c, int r, int q, want *w) {
  const coll_args *a = c->a;
  size_t cnt = a->count;
  uint64_t all = c->n == 64 ? ~0ull : (1ull << c->n) - 1;
  bool per_rank = a->kind == COLL_ALLGATHER || a->kind == COLL_ALLTOALL;
  if (q >= (per_rank ? c->n : 1)) return false;
  *w = (want){per_rank ? (size_t)q * cnt : 0, cnt, 0, all};
  switch (a->kind) {
  case COLL_REDUCE_SCATTER:
    w->idx = (size_t)r * cnt;
    break;
  case COLL_ALLGATHER:
    w->set = 1ull << q;
    break;
  case COLL_BROADCAST:
    w->set = 1ull << a->root;
    break;
  case COLL_REDUCE:
    return r == a->root;
  case COLL_ALLTOALL:
    w->set = 1ull << q, w->idx = (size_t)r * cnt;
    break;
  case COLL_BARRIER:
    return false;
  default:
    break;
  }
  return true;
}

static tern_status read_recv(checker *c, int r, coll_symlist *out) {
  rank_state *k = &c->rk[r];
  return coll_symbuf_read(&k->mem[k->store[COLL_BUF_RECV]], k->base[COLL_BUF_RECV],
                          k->extent[COLL_BUF_RECV], out);
}

static tern_status verify_rank(checker *c, int r) {
  char who[64];
  want w;
  if (read_recv(c, r, &c->l1) != TERN_OK) return TERN_ERR_NOMEM;
  for (size_t p = 0; p < c->l1.len; p++) {
    const coll_sym *u = &c->l1.v[p];
    if (u->set == 0) return fail(c, "rank %d: RECV[%zu] is never written", r, u->off);
    int q = 0;
    while (expect(c, r, q, &w) && w.off + w.len <= u->off)
      q++;
    if (!expect(c, r, q, &w)) continue;
    if (u->idx != w.idx + (u->off - w.off))
      return fail(c, "rank %d: RECV[%zu] holds element %zu of its senders, not %zu", r, u->off,
                  u->idx, w.idx + (u->off - w.off));
    if (w.set & ~u->set)
      return fail(c, "rank %d: RECV[%zu] misses the contribution of rank %s", r, u->off,
                  ranks_str(w.set & ~u->set, who, sizeof who));
    if (u->set & ~w.set)
      return fail(
          c, "rank %d: RECV[%zu] holds the contribution of rank %s, which does not belong there", r,
          u->off, ranks_str(u->set & ~w.set, who, sizeof who));
  }
  return TERN_OK;
}

/* Rank r's RECV hashes (in l1) against rank 0's (in l2). */
static tern_status same_bits(checker *c, int r) {
  size_t p = 0, q = 0;
  while (p < c->l1.len && q < c->l2.len) {
    const coll_sym *u = &c->l1.v[p], *v = &c->l2.v[q];
    if (u->hash != v->hash)
      return fail(c,
                  "%s is not bit-identical: ranks 0 and %d reduce RECV[%zu] in different "
                  "orders",
                  coll_kind_name(c->a->kind), r, CORE_MAX(u->off, v->off));
    size_t ue = u->off + u->len, ve = v->off + v->len;
    p += ue <= ve;
    q += ve <= ue;
  }
  return TERN_OK;
}

static tern_status verify(checker *c) {
  char who[64];
  uint64_t all = c->n == 64 ? ~0ull : (1ull << c->n) - 1;
  bool identical = c->a->kind == COLL_ALLREDUCE || c->a->kind == COLL_ALLGATHER;
  for (int r = 0; r < c->n; r++) {
    tern_status st = verify_rank(c, r);
    if (st != TERN_OK) return st;
    if (c->a->kind == COLL_BARRIER && c->rk[r].known != all)
      return fail(c, "rank %d leaves the barrier before hearing from rank %s", r,
                  ranks_str(all & ~c->rk[r].known, who, sizeof who));
  }
  if (!identical || read_recv(c, 0, &c->l2) != TERN_OK) return TERN_OK;
  for (int r = 1; r < c->n; r++) {
    tern_status st = read_recv(c, r, &c->l1);
    if (st == TERN_OK) st = same_bits(c, r);
    if (st != TERN_OK) return st;
  }
  return TERN_OK;
}

/* ---- the entry points -------------------------------------------------------------------- */

static tern_status setup(checker *c, const coll_sched *scheds) {
  const coll_args *a = c->a;
  if (a->size < 1 || a->size > MAX_RANKS)
    return fail(c, "n = %d: the checker takes 1 to %d ranks", a->size, MAX_RANKS);
  if ((unsigned)a->kind >= COLL_NUM_KINDS) return fail(c, "no collective kind %d", a->kind);
  if ((a->kind == COLL_BROADCAST || a->kind == COLL_REDUCE) && (a->root < 0 || a->root >= a->size))
    return fail(c, "root %d is not a rank of %d", a->root, a->size);
  size_t steps = 0;
  for (int r = 0; r < c->n; r++)
    steps += scheds[r].len;
  c->match = malloc((steps ? steps : 1) * sizeof *c->match);
  if (c->match == NULL) return TERN_ERR_NOMEM;
  steps = 0;
  for (int r = 0; r < c->n; steps += scheds[r].len, r++) {
    rank_state *k = &c->rk[r];
    k->s = &scheds[r];
    k->match = c->match + steps;
    layout(c, r);
    for (int b = 0; b < COLL_NUM_BUFS; b++)
      coll_symbuf_init(&k->mem[b], k->store[b] == b ? k->extent[b] : 0);
    size_t send = k->extent[COLL_BUF_SEND];
    if (send && coll_symbuf_fill(&k->mem[k->store[COLL_BUF_SEND]], k->base[COLL_BUF_SEND], send, r,
                                 0, &c->scratch) != TERN_OK)
      return TERN_ERR_NOMEM;
    k->known = 1ull << r;
    k->phase = -1;
  }
  return TERN_OK;
}

tern_status coll_check_scheds(const coll_args *a, const coll_sched *scheds, char *why,
                              size_t why_len) {
  if (why_len) why[0] = 0;
  checker *c = calloc(1, sizeof *c);
  if (c == NULL) return TERN_ERR_NOMEM;
  c->a = a;
  c->n = a->size;
  c->why = why;
  c->why_len = why_len;
  tern_status st = setup(c, scheds);
  for (int r = 0; r < c->n && st == TERN_OK; r++)
    st = check_sched(c, r);
  if (st == TERN_OK) st = link_msgs(c);
  if (st == TERN_OK) st = run(c);
  if (st == TERN_OK) st = verify(c);
  if (st == TERN_ERR_NOMEM && why_len) snprintf(why, why_len, "out of memory");
  for (int r = 0; r < MAX_RANKS; r++) {
    for (int b = 0; b < COLL_NUM_BUFS; b++)
      coll_symbuf_free(&c->rk[r].mem[b]);
  }
  coll_symlist_free(&c->l1);
  coll_symlist_free(&c->l2);
  coll_symlist_free(&c->l3);
  coll_symlist_free(&c->scratch);
  free(c->regions);
  free(c->match);
  free(c);
  return st;
}

tern_status coll_check(const coll_args *a, coll_algo algo, char *why, size_t why_len) {
  if (why_len) why[0] = 0;
  if (a->size < 1 || a->size > MAX_RANKS) {
    if (why_len)
      snprintf(why, why_len, "n = %d: the checker takes 1 to %d ranks", a->size, MAX_RANKS);
    return TERN_ERR_INVALID_ARG;
  }
  coll_sched *s = calloc((size_t)a->size, sizeof *s);
  if (s == NULL) return TERN_ERR_NOMEM;
  tern_status st = TERN_OK;
  for (int r = 0; r < a->size && st == TERN_OK; r++) {
    coll_args ar = *a;
    ar.rank = r;
    st = coll_build(&s[r], &ar, algo);
    if (st != TERN_OK && why_len)
      snprintf(why, why_len, "coll_build(%s, %s) for rank %d: %s", coll_kind_name(a->kind),
               coll_algo_name(algo), r, tern_status_str(st));
  }
  if (st == TERN_OK) st = coll_check_scheds(a, s, why, why_len);
  for (int r = 0; r < a->size; r++)
    coll_sched_free(&s[r]);
  free(s);
  return st;
}

/* check.c: the symbolic checker. It runs the schedules of all n ranks of one collective
 * without data, on symbolic buffers (sym.h), and proves what sched.h promises, in three steps:
 *
 *  1. each schedule alone (check_alone.c): well formed, every region inside the extent the
 *     public API gives its buffer (so a non-root's RECV of reduce, of extent 0, is never
 *     touched), SEND never written, no race inside a phase, counting in-place aliasing;
 *  2. the run (check_run.c): messages paired in order with equal counts, then all ranks run
 *     phase by phase with unbuffered messages, each element carrying its contributions, index
 *     of origin and reduction-tree hash; a deadlock, a reduction of mismatched elements or a
 *     contribution counted twice stops it where it happens;
 *  3. the results (here): every rank's RECV holds exactly what the collective promises,
 *     element by element (all contributions, each once, of the right index); allreduce's and
 *     allgather's with the same hash on every rank, that is the same bits, since a commutative
 *     op's operands may swap but not regroup; and a barrier rank has heard from every rank.
 *
 * This file also lays out each rank's buffers: the extents of sched.h's table, and for each
 * buffer the storage it lives in and where (in place, SEND and RECV share one storage), the
 * SEND storage holding the rank's own contribution, indices 0 on.
 */
#include "coll/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const coll_chk_buf_names[COLL_NUM_BUFS] = {"SEND", "RECV", "TMP"};
static const char *const step_names[] = {"send", "recv", "recv_reduce", "copy", "reduce"};

tern_status coll_chk_fail(coll_checker *c, const char *fmt, ...) {
  if (c->why_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->why_len, fmt, ap);
    va_end(ap);
  }
  return TERN_ERR_INVALID_ARG;
}

const char *coll_chk_where(const coll_checker *c, int r, size_t i, char *out, size_t len) {
  const coll_step *st = &c->rk[r].s->steps[i];
  int phase = 0;
  for (size_t k = 0; k < i; k++)
    phase += c->rk[r].s->steps[k].last;
  char peer[24] = "", src[64] = "";
  if (coll_chk_is_msg(st))
    snprintf(peer, sizeof peer, st->kind == COLL_STEP_SEND ? " to %d" : " from %d", st->peer);
  if (coll_chk_has_src(st))
    snprintf(src, sizeof src, " with %s[%zu,+%zu)", coll_chk_buf_names[st->src_buf], st->src_off,
             st->count);
  snprintf(out, len, "rank %d step %zu (phase %d: %s%s %s %s[%zu,+%zu)%s)", r, i, phase,
           step_names[st->kind], peer, st->kind == COLL_STEP_SEND ? "of" : "into",
           coll_chk_buf_names[st->buf], st->off, st->count, src);
  return out;
}

const char *coll_chk_ranks(uint64_t set, char *out, size_t len) {
  size_t w = 0;
  out[0] = 0;
  for (int r = 0, shown = 0; r < COLL_CHECK_MAX_RANKS && w < len; r++) {
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

/* The arguments rank r built its schedule with: alltoallv's a->v holds every rank's counts. */
static coll_args rank_args(const coll_checker *c, int r) {
  coll_args ar = *c->a;
  ar.rank = r;
  if (ar.kind == COLL_ALLTOALLV && ar.v) ar.v = &c->a->v[r];
  return ar;
}

static void layout(coll_checker *c, int r) {
  const coll_args *a = c->a;
  coll_chk_rank *k = &c->rk[r];
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
  case COLL_GATHER:
    recv = root ? n * cnt : 0;
    break;
  case COLL_SCATTER:
    send = root ? n * cnt : 0;
    break;
  case COLL_ALLTOALLV: {
    coll_args ar = rank_args(c, r);
    send = coll_v_extent(&ar, true), recv = coll_v_extent(&ar, false);
    if (a->inplace) send = recv = CORE_MAX(send, recv); /* one buffer holds both layouts */
    break;
  }
  default:
    break;
  }
  k->extent[COLL_BUF_SEND] = send;
  k->extent[COLL_BUF_RECV] = recv;
  k->extent[COLL_BUF_TMP] = k->s->tmp_count;
  for (int b = 0; b < COLL_NUM_BUFS; b++)
    k->store[b] = (uint8_t)b, k->base[b] = 0;
  if (!a->inplace) return;
  if (a->kind == COLL_ALLREDUCE || a->kind == COLL_ALLTOALL || a->kind == COLL_ALLTOALLV ||
      ((a->kind == COLL_BROADCAST || a->kind == COLL_REDUCE) && root))
    k->store[COLL_BUF_SEND] = COLL_BUF_RECV;
  if (a->kind == COLL_ALLGATHER)
    k->store[COLL_BUF_SEND] = COLL_BUF_RECV, k->base[COLL_BUF_SEND] = (size_t)r * cnt;
  if (a->kind == COLL_REDUCE_SCATTER || (a->kind == COLL_SCATTER && root))
    k->store[COLL_BUF_RECV] = COLL_BUF_SEND, k->base[COLL_BUF_RECV] = (size_t)r * cnt;
  if (a->kind == COLL_GATHER && root)
    k->store[COLL_BUF_SEND] = COLL_BUF_RECV, k->base[COLL_BUF_SEND] = (size_t)r * cnt;
}

/* ---- the results ------------------------------------------------------------------------- */

typedef struct want {
  size_t off, len, idx; /* RECV[off, +len) holds indices idx on ... */
  uint64_t set;         /* ... of these ranks' contributions */
} want;

/* Piece q of what rank r's RECV must hold; false past the last. */
static bool expect(const coll_checker *c, int r, int q, want *w) {
  const coll_args *a = c->a;
  size_t cnt = a->count;
  uint64_t all = c->n == 64 ? ~0ull : (1ull << c->n) - 1;
  bool per_rank = a->kind == COLL_ALLGATHER || a->kind == COLL_ALLTOALL || a->kind == COLL_GATHER;
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
  case COLL_GATHER:
    w->set = 1ull << q;
    return r == a->root;
  case COLL_SCATTER:
    w->set = 1ull << a->root, w->idx = (size_t)r * cnt;
    break;
  default:
    break;
  }
  return true;
}

/* alltoallv: rank q's block for r, at RECV[recv_displs[q], +recv_counts[q]) of r, holds q's
 * SEND[q's send_displs[r], ...). Blocks lie in any order, with gaps between (left alone). */
static tern_status verify_blocks(coll_checker *c, int r) {
  const coll_chk_rank *k = &c->rk[r];
  coll_args ar = rank_args(c, r);
  for (int q = 0; q < c->n; q++) {
    coll_args aq = rank_args(c, q);
    size_t off = coll_v_displ(&ar, false, q), len = coll_v_count(&ar, false, q);
    size_t idx = coll_v_displ(&aq, true, r);
    if (len == 0) continue;
    if (coll_symbuf_read(&k->mem[k->store[COLL_BUF_RECV]], k->base[COLL_BUF_RECV] + off, len,
                         &c->l1) != TERN_OK)
      return TERN_ERR_NOMEM;
    for (size_t p = 0; p < c->l1.len; p++) {
      const coll_sym *u = &c->l1.v[p];
      if (u->set != 1ull << q)
        return coll_chk_fail(c, "rank %d: RECV[%zu] (of rank %d's block) %s", r, off + u->off, q,
                             u->set ? "holds other ranks' contributions" : "is never written");
      if (u->idx != idx + u->off)
        return coll_chk_fail(c, "rank %d: RECV[%zu] holds element %zu of rank %d, not %zu", r,
                             off + u->off, u->idx, q, idx + u->off);
    }
  }
  return TERN_OK;
}

static tern_status read_recv(coll_checker *c, int r, coll_symlist *out) {
  coll_chk_rank *k = &c->rk[r];
  return coll_symbuf_read(&k->mem[k->store[COLL_BUF_RECV]], k->base[COLL_BUF_RECV],
                          k->extent[COLL_BUF_RECV], out);
}

/* Every run of rank r's RECV against every expected piece it overlaps: a run may span several
 * pieces (two blocks of one sender that happen to lie side by side), and each part must be
 * checked against its own piece. */
static tern_status verify_rank(coll_checker *c, int r) {
  char who[64];
  want w;
  if (read_recv(c, r, &c->l1) != TERN_OK) return TERN_ERR_NOMEM;
  for (size_t p = 0; p < c->l1.len; p++) {
    const coll_sym *u = &c->l1.v[p];
    if (u->set == 0) return coll_chk_fail(c, "rank %d: RECV[%zu] is never written", r, u->off);
    size_t pos = u->off, end = u->off + u->len;
    for (int q = 0; pos < end && expect(c, r, q, &w); q++) {
      if (w.off + w.len <= pos) continue;
      if (w.off >= end) break;
      pos = CORE_MAX(pos, w.off);
      size_t got = u->idx + (pos - u->off), want_idx = w.idx + (pos - w.off);
      if (got != want_idx)
        return coll_chk_fail(c, "rank %d: RECV[%zu] holds element %zu of its senders, not %zu", r,
                             pos, got, want_idx);
      if (w.set & ~u->set)
        return coll_chk_fail(c, "rank %d: RECV[%zu] misses the contribution of rank %s", r, pos,
                             coll_chk_ranks(w.set & ~u->set, who, sizeof who));
      if (u->set & ~w.set)
        return coll_chk_fail(
            c, "rank %d: RECV[%zu] holds the contribution of rank %s, which does not belong there",
            r, pos, coll_chk_ranks(u->set & ~w.set, who, sizeof who));
      pos = CORE_MIN(end, w.off + w.len);
    }
  }
  return TERN_OK;
}

/* Rank r's RECV hashes (in l1) against rank 0's (in l2). */
static tern_status same_bits(coll_checker *c, int r) {
  size_t p = 0, q = 0;
  while (p < c->l1.len && q < c->l2.len) {
    const coll_sym *u = &c->l1.v[p], *v = &c->l2.v[q];
    if (u->hash != v->hash)
      return coll_chk_fail(c,
                           "%s is not bit-identical: ranks 0 and %d reduce RECV[%zu] in different "
                           "orders",
                           coll_kind_name(c->a->kind), r, CORE_MAX(u->off, v->off));
    size_t ue = u->off + u->len, ve = v->off + v->len;
    p += ue <= ve;
    q += ve <= ue;
  }
  return TERN_OK;
}

static tern_status verify(coll_checker *c) {
  char who[64];
  uint64_t all = c->n == 64 ? ~0ull : (1ull << c->n) - 1;
  bool identical = c->a->kind == COLL_ALLREDUCE || c->a->kind == COLL_ALLGATHER;
  for (int r = 0; r < c->n; r++) {
    tern_status st = c->a->kind == COLL_ALLTOALLV ? verify_blocks(c, r) : verify_rank(c, r);
    if (st != TERN_OK) return st;
    if (c->a->kind == COLL_BARRIER && c->rk[r].known != all)
      return coll_chk_fail(c, "rank %d leaves the barrier before hearing from rank %s", r,
                           coll_chk_ranks(all & ~c->rk[r].known, who, sizeof who));
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

static tern_status setup(coll_checker *c, const coll_sched *scheds) {
  const coll_args *a = c->a;
  if (a->size < 1 || a->size > COLL_CHECK_MAX_RANKS)
    return coll_chk_fail(c, "n = %d: the coll_checker takes 1 to %d ranks", a->size,
                         COLL_CHECK_MAX_RANKS);
  if ((unsigned)a->kind >= COLL_NUM_KINDS)
    return coll_chk_fail(c, "no collective kind %d", a->kind);
  if (coll_kind_rooted(a->kind) && (a->root < 0 || a->root >= a->size))
    return coll_chk_fail(c, "root %d is not a rank of %d", a->root, a->size);
  size_t steps = 0;
  for (int r = 0; r < c->n; r++)
    steps += scheds[r].len;
  c->match = malloc((steps ? steps : 1) * sizeof *c->match);
  if (c->match == NULL) return TERN_ERR_NOMEM;
  steps = 0;
  for (int r = 0; r < c->n; steps += scheds[r].len, r++) {
    coll_chk_rank *k = &c->rk[r];
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
  }
  return TERN_OK;
}

tern_status coll_check_scheds(const coll_args *a, const coll_sched *scheds, char *why,
                              size_t why_len) {
  if (why_len) why[0] = 0;
  int nr = a->size >= 1 && a->size <= COLL_CHECK_MAX_RANKS ? a->size : 0; /* setup refuses others */
  coll_checker *c = calloc(1, sizeof *c + (size_t)nr * sizeof c->rk[0]);
  if (c == NULL) return TERN_ERR_NOMEM;
  c->a = a;
  c->n = a->size;
  c->why = why;
  c->why_len = why_len;
  tern_status st = setup(c, scheds);
  for (int r = 0; r < c->n && st == TERN_OK; r++)
    st = coll_chk_alone(c, r);
  if (st == TERN_OK) st = coll_chk_link(c);
  if (st == TERN_OK) st = coll_chk_run(c);
  if (st == TERN_OK) st = verify(c);
  if (st == TERN_ERR_NOMEM && why_len) snprintf(why, why_len, "out of memory");
  for (int r = 0; r < nr; r++)
    for (int b = 0; b < COLL_NUM_BUFS; b++)
      coll_symbuf_free(&c->rk[r].mem[b]);
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
  if (a->size < 1 || a->size > COLL_CHECK_MAX_RANKS) {
    if (why_len)
      snprintf(why, why_len, "n = %d: the coll_checker takes 1 to %d ranks", a->size,
               COLL_CHECK_MAX_RANKS);
    return TERN_ERR_INVALID_ARG;
  }
  coll_sched *s = calloc((size_t)a->size, sizeof *s);
  if (s == NULL) return TERN_ERR_NOMEM;
  tern_status st = TERN_OK;
  for (int r = 0; r < a->size && st == TERN_OK; r++) {
    coll_args ar = *a;
    ar.rank = r;
    if (a->kind == COLL_ALLTOALLV && a->v) ar.v = &a->v[r];
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

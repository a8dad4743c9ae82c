/* check_run.c: the checker's run. First the messages are paired: the k-th send from a to b
 * with b's k-th receive from a, which must have the same count. Then every rank enters its
 * first phase; entering a phase does its local steps (the race check makes their order
 * irrelevant). A send and its receive complete together, when both ranks are in the phases
 * that hold them: nothing is buffered, so a schedule that finishes here finishes on any
 * transport. A phase ends when its messages have completed; if the ranks stop with one
 * unfinished, that is a deadlock. Each element moved carries its contributions, index of origin
 * and tree hash (sym.h); a reduction of elements of different indices, or whose contributions
 * meet, is an error where it happens. A barrier's messages carry what their sender knew when
 * its phase began: whom it has heard from, directly or not. */
#include "coll/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The message steps of every rank, grouped by (owner, peer) in schedule order: sends at key
 * owner n + peer, receives at key owner n + peer too (owner being the receiver). */
typedef struct msg_index {
  size_t *start; /* n n + 1, then room to fill them, then step: one allocation */
  size_t *step;
} msg_index;

static tern_status index_msgs(coll_checker *c, bool sends, msg_index *x) {
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
      if (coll_chk_is_msg(st) && (st->kind == COLL_STEP_SEND) == sends)
        x->start[r * n + st->peer + 1]++;
    }
  for (size_t k = 0; k < n * n; k++)
    x->start[k + 1] += x->start[k], fill[k] = x->start[k];
  for (int r = 0; r < c->n; r++)
    for (size_t i = 0; i < c->rk[r].s->len; i++) {
      const coll_step *st = &c->rk[r].s->steps[i];
      if (coll_chk_is_msg(st) && (st->kind == COLL_STEP_SEND) == sends)
        x->step[fill[r * n + st->peer]++] = i;
    }
  return TERN_OK;
}

static tern_status pair_msgs(coll_checker *c, const msg_index *snd, const msg_index *rcv) {
  size_t n = (size_t)c->n;
  char w1[256], w2[256];
  for (int a = 0; a < c->n; a++)
    for (int b = 0; b < c->n; b++) {
      size_t s0 = snd->start[a * n + b], ns = snd->start[a * n + b + 1] - s0;
      size_t r0 = rcv->start[b * n + a], nr = rcv->start[b * n + a + 1] - r0;
      if (ns != nr)
        return coll_chk_fail(c, "rank %d sends %zu messages to rank %d, which receives %zu from it",
                             a, ns, b, nr);
      for (size_t k = 0; k < ns; k++) {
        size_t si = snd->step[s0 + k], ri = rcv->step[r0 + k];
        const coll_step *x = &c->rk[a].s->steps[si], *y = &c->rk[b].s->steps[ri];
        if (x->count != y->count)
          return coll_chk_fail(
              c, "count mismatch: message %zu from %d to %d: %s sends %zu, %s expects %zu", k, a, b,
              coll_chk_where(c, a, si, w1, sizeof w1), x->count,
              coll_chk_where(c, b, ri, w2, sizeof w2), y->count);
        c->rk[a].match[si] = ri;
        c->rk[b].match[ri] = si;
      }
    }
  return TERN_OK;
}

tern_status coll_chk_link(coll_checker *c) {
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
static tern_status load(coll_checker *c, int r, size_t i, int buf, size_t off, size_t count,
                        coll_symlist *out) {
  coll_chk_rank *k = &c->rk[r];
  char w[256];
  if (coll_symbuf_read(&k->mem[k->store[buf]], k->base[buf] + off, count, out) != TERN_OK)
    return TERN_ERR_NOMEM;
  for (size_t q = 0; q < out->len; q++)
    if (out->v[q].set == 0)
      return coll_chk_fail(c, "%s reads %s[%zu], which was never written",
                           coll_chk_where(c, r, i, w, sizeof w), coll_chk_buf_names[buf],
                           off + out->v[q].off);
  return TERN_OK;
}

static tern_status store(coll_checker *c, int r, int buf, size_t off, const coll_symlist *in) {
  coll_chk_rank *k = &c->rk[r];
  return coll_symbuf_write(&k->mem[k->store[buf]], k->base[buf] + off, in, &c->scratch);
}

/* out = x op y, element by element, for step i of rank r. */
static tern_status combine(coll_checker *c, int r, size_t i, const coll_symlist *x,
                           const coll_symlist *y, coll_symlist *out) {
  char w[256], who[64];
  out->len = 0;
  size_t p = 0, q = 0, dp = 0, dq = 0;
  while (p < x->len && q < y->len) {
    const coll_sym *u = &x->v[p], *v = &y->v[q];
    size_t len = CORE_MIN(u->len - dp, v->len - dq);
    if (u->idx + dp != v->idx + dq)
      return coll_chk_fail(c, "%s reduces element %zu with element %zu",
                           coll_chk_where(c, r, i, w, sizeof w), u->idx + dp, v->idx + dq);
    if (u->set & v->set)
      return coll_chk_fail(c, "%s counts the contribution of rank %s twice (element %zu)",
                           coll_chk_where(c, r, i, w, sizeof w),
                           coll_chk_ranks(u->set & v->set, who, sizeof who), u->idx + dp);
    coll_sym s = {u->off + dp, len, u->set | v->set, coll_sym_combine_hash(u->hash, v->hash),
                  u->idx + dp};
    if (coll_symlist_push(out, &s) != TERN_OK) return TERN_ERR_NOMEM;
    dp += len, dq += len;
    if (dp == u->len) p++, dp = 0;
    if (dq == v->len) q++, dq = 0;
  }
  return TERN_OK;
}

static tern_status exec_local(coll_checker *c, int r, size_t i) {
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
static tern_status fire(coll_checker *c, int a, size_t i, int b, size_t j) {
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
static tern_status enter(coll_checker *c, int r) {
  coll_chk_rank *k = &c->rk[r];
  const coll_sched *s = k->s;
  k->ps = k->pe;
  if (k->ps == s->len) return TERN_OK;
  while (!s->steps[k->pe].last)
    k->pe++;
  k->pe++;
  k->known_then = k->known;
  k->pending = 0;
  for (size_t i = k->ps; i < k->pe; i++) {
    if (coll_chk_is_msg(&s->steps[i])) {
      k->pending++;
      continue;
    }
    tern_status st = exec_local(c, r, i);
    if (st != TERN_OK) return st;
  }
  return TERN_OK;
}

static tern_status deadlock(coll_checker *c) {
  char msg[900], w[256];
  size_t len = (size_t)snprintf(msg, sizeof msg, "deadlock:");
  for (int r = 0, shown = 0; r < c->n && shown < 3; r++) {
    const coll_chk_rank *k = &c->rk[r];
    if (k->ps == k->s->len) continue;
    size_t i = k->ps;
    while (k->match[i] == SIZE_MAX || !coll_chk_is_msg(&k->s->steps[i]))
      i++;
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%s %s waits",
                            shown++ ? ";" : "", coll_chk_where(c, r, i, w, sizeof w));
    if (len >= sizeof msg) break;
  }
  return coll_chk_fail(c, "%s", msg);
}

/* A message can only become possible when one of its ranks enters the phase that holds it, so
 * a rank entering a phase fires what it can meet, and a rank whose phase completes goes on the
 * stack to enter the next: every step is looked at a bounded number of times. */
tern_status coll_chk_run(coll_checker *c) {
  int stack[COLL_CHECK_MAX_RANKS], top = 0;
  for (int r = 0; r < c->n; r++)
    stack[top++] = r;
  while (top > 0) {
    int r = stack[--top];
    coll_chk_rank *k = &c->rk[r];
    tern_status st = enter(c, r);
    if (st != TERN_OK) return st;
    for (size_t i = k->ps; i < k->pe; i++) {
      const coll_step *x = &k->s->steps[i];
      if (!coll_chk_is_msg(x) || k->match[i] == SIZE_MAX) continue;
      coll_chk_rank *kb = &c->rk[x->peer];
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

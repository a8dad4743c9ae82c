/* policy.c: the planner interface: the state a policy sees, one planning round, the table of
 * policies.
 *
 * Every policy is an order over the queue and a placement rule for one job on what is free now.
 * A planning round walks the queue in the policy's order and places every job the rule accepts,
 * taking its GPUs and links before the next job is considered; jobs it cannot place stay queued
 * for the next round (work-conserving, for every policy alike: a job behind one that waits may
 * still start). The simulator runs a round at every arrival and every completion.
 */
#include "plan/plan.h"

#include "core/mix.h"
#include "plan/memo.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

extern const plan_policy plan_policy_bace, plan_policy_bace_noprio, plan_policy_bace_nopath,
    plan_policy_bace_nocost, plan_policy_lcf, plan_policy_ldf, plan_policy_crlcf, plan_policy_crldf,
    plan_policy_ours, plan_policy_ours_online, plan_policy_ours_fast, plan_policy_ours_trim,
    plan_policy_ours_nowait, plan_policy_ours_nodp, plan_policy_ours_fastest,
    plan_policy_ours_speed, plan_policy_ours_prio;

static const plan_policy *const table[] = {
    &plan_policy_ours,        &plan_policy_bace,        &plan_policy_lcf,
    &plan_policy_ldf,         &plan_policy_crlcf,       &plan_policy_crldf,
    &plan_policy_bace_noprio, &plan_policy_bace_nopath, &plan_policy_bace_nocost,
    &plan_policy_ours_online, &plan_policy_ours_fast,   &plan_policy_ours_trim,
    &plan_policy_ours_nowait, &plan_policy_ours_nodp,   &plan_policy_ours_fastest,
    &plan_policy_ours_speed,  &plan_policy_ours_prio,   NULL,
};

const plan_policy *const *plan_policies(void) {
  return table;
}

const plan_policy *plan_policy_find(const char *name) {
  for (int i = 0; table[i]; i++)
    if (strcmp(table[i]->name, name) == 0) return table[i];
  return NULL;
}

/* What the time model reads of a cluster, hashed: what ours keeps by (a cluster freed and another
 * allocated at its address must not share them). */
static uint64_t mix_double(uint64_t h, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  h ^= bits;
  return core_splitmix64(&h);
}

static uint64_t cluster_hash(const plan_cluster *c) {
  uint64_t h = (uint64_t)(unsigned)c->nregions << 32 | (unsigned)c->ntypes;
  h = mix_double(mix_double(h, c->mfu), c->mem_fraction);
  for (int t = 0; t < c->ntypes; t++)
    h = mix_double(mix_double(h, c->types[t].peak_flops), c->types[t].memory_bytes);
  for (int r = 0; r < c->nregions; r++)
    h = mix_double(mix_double(h, (double)c->regions[r].type), c->regions[r].intra_Bps);
  for (size_t i = 0; i < (size_t)c->nregions * (size_t)c->nregions; i++)
    h = mix_double(mix_double(h, c->links[i].latency_s), c->links[i].Bps);
  return h;
}

tern_status plan_state_init(plan_state *s, const plan_cluster *c, core_err *err) {
  size_t r = (size_t)c->nregions;
  memset(s, 0, sizeof *s);
  s->c = c;
  s->free = calloc(r, sizeof *s->free);
  s->share = calloc(r * r, sizeof *s->share);
  s->load_Bps = calloc(r * r, sizeof *s->load_Bps);
  if (s->free == NULL || s->share == NULL || s->load_Bps == NULL) {
    plan_state_free(s);
    return core_err_set(err, TERN_ERR_NOMEM, "planner state for %zu regions", r);
  }
  s->memo = plan_memo_new();
  s->owns_memo = s->memo != NULL;
  if (s->memo == NULL) {
    plan_state_free(s);
    return core_err_set(err, TERN_ERR_NOMEM, "planner memo");
  }
  for (size_t i = 0; i < r; i++)
    s->free[i] = c->regions[i].gpus;
  s->cluster_id = cluster_hash(c);
  plan_state_touch(s);
  return TERN_OK;
}

/* Versions count in the state's memo, so that a run's versions, and so which of its kept
 * answers collide in their tables, are the same in every run: a run's result never depends on
 * what ran before it in the process (the portfolio runs several). Without a memo, a counter of
 * the process keeps them unique. */
void plan_state_touch(plan_state *s) {
  static _Atomic uint64_t counter;
  uint64_t x = s->memo ? ++s->memo->touches : ++counter + (1ull << 63);
  s->version = core_splitmix64(&x);
}

void plan_state_copy(plan_state *dst, const plan_state *src) {
  size_t r = (size_t)src->c->nregions;
  memcpy(dst->free, src->free, r * sizeof *dst->free);
  memcpy(dst->share, src->share, r * r * sizeof *dst->share);
  memcpy(dst->load_Bps, src->load_Bps, r * r * sizeof *dst->load_Bps);
  dst->now = src->now;
  dst->version = src->version;
  dst->cluster_id = src->cluster_id;
  dst->releases = src->releases;
  dst->nreleases = src->nreleases;
}

plan_memo *plan_memo_new(void) {
  plan_memo *m = calloc(1, sizeof *m);
  if (m) m->wake_at = INFINITY;
  return m;
}

void plan_memo_free(plan_memo *m) {
  if (m == NULL) return;
  plan_splits_free(m->splits);
  plan_ours_memo_free(m->ours);
  free(m->placed);
  if (m->idle) plan_state_free(m->idle);
  free(m->idle);
  free(m);
}

void plan_state_share_memo(plan_state *dst, const plan_state *src) {
  if (dst->owns_memo) plan_memo_free(dst->memo);
  dst->memo = src->memo;
  dst->owns_memo = false;
}

void plan_state_wake(const plan_state *s, double t) {
  if (s->memo && t > s->now) s->memo->wake_at = fmin(s->memo->wake_at, t);
}

double plan_state_wake_at(const plan_state *s) {
  return s->memo ? s->memo->wake_at : INFINITY;
}

void plan_state_free(plan_state *s) {
  if (s->owns_memo) plan_memo_free(s->memo);
  s->memo = NULL;
  s->owns_memo = false;
  free(s->free);
  free(s->share);
  free(s->load_Bps);
  s->free = s->share = NULL;
  s->load_Bps = NULL;
}

void plan_state_apply(plan_state *s, const plan_job *j, const plan_demand *d,
                      const plan_placement *p, int sign) {
  (void)j;
  size_t n = (size_t)s->c->nregions;
  /* the same change to the same state gives the same version: states replayed alike (ours'
   * lookahead, job after job) share what was computed on them */
  uint64_t mix = s->version ^ ((uint64_t)(sign + 2) << 60);
  double bps = d->demand_Bps;
  uint64_t bits;
  memcpy(&bits, &bps, sizeof bits);
  mix ^= core_splitmix64(&bits);
  for (int i = 0; i < p->nseg; i++) {
    uint64_t seg =
        ((uint64_t)(unsigned)p->seg[i].region << 32 | (unsigned)plan_seg_gpus(p, i)) + mix;
    mix ^= core_splitmix64(&seg);
  }
  s->version = core_splitmix64(&mix);
  for (int i = 0; i < p->nseg; i++) {
    s->free[p->seg[i].region] -= sign * plan_seg_gpus(p, i);
    if (i == 0) continue;
    /* each copy of a DP x PP job is a pipeline of its own on the link */
    size_t a = (size_t)p->seg[i - 1].region, b = (size_t)p->seg[i].region;
    int copies = plan_replicas(p);
    s->share[a * n + b] += sign * copies;
    s->share[b * n + a] += sign * copies;
    s->load_Bps[a * n + b] += sign * copies * d->demand_Bps;
    s->load_Bps[b * n + a] += sign * copies * d->demand_Bps;
  }
}

int plan_decide(const plan_policy *pol, plan_state *s, plan_queued *q, int n, plan_placement *out,
                unsigned char *placed) {
  int count = 0, free = 0;
  long want = 0;
  for (int r = 0; r < s->c->nregions; r++)
    free += s->free[r];
  for (int i = 0; i < n; i++)
    want += q[i].d->kstar;
  s->contended = want > free;
  plan_memo *m = s->memo;
  if (m) {
    m->wake_at = INFINITY;
    m->nplaced = 0;
    m->rounds++;
    if (m->cap_placed < n) { /* without room the round's placements are not kept: less known */
      plan_release *grown = realloc(m->placed, (size_t)n * sizeof *grown);
      if (grown) {
        m->placed = grown;
        m->cap_placed = n;
      }
    }
  }
  pol->order(pol, s, q, n);
  for (int i = 0; i < n; i++) {
    placed[i] = 0;
    if (!pol->place(pol, s, &q[i], &out[i])) continue;
    plan_state_apply(s, q[i].job, q[i].d, &out[i], +1);
    if (m && m->nplaced < m->cap_placed)
      m->placed[m->nplaced++] = (plan_release){INFINITY, q[i].job, q[i].d, &out[i]};
    placed[i] = 1;
    count++;
  }
  if (m) { /* their placements are the caller's now */
    m->nplaced = 0;
    m->rounds++;
  }
  return count;
}

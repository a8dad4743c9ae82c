/* exec.c: the executor: runs one schedule over the transports.
 *
 * For each phase it posts every transfer of the phase (sends and receives to all the peers the
 * phase talks to), does the phase's local copies and reductions while the first bytes travel,
 * then progresses and waits (comm/wait.c) until every transfer of the phase is complete. The
 * schedule comes from the communicator's cache of the last ones built (cache.c), so a repeated
 * call does not build it again, and the transfers are kept from the last call: a warm
 * collective allocates nothing.
 *
 * The algorithm comes from TERN_ALGO when it names one this collective has, else from the
 * selector (coll_choose) for the site in use; every rank decides alike.
 */
#include "coll/coll.h"
#include "coll/select_learned.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Where this communicator's collectives run. Several hosts (some peers over TCP, some host with
 * two ranks or more, in any placement): hier competes, and the weights learned on the simulated
 * cluster price where the placement is theirs (select_learned.h). Crowded (more ranks than CPUs
 * here) only when every rank is on this host, as it always is over shared memory: then every rank
 * counts the same ranks and CPUs and picks alike; across hosts, each host would judge its own
 * crowding. */
coll_site coll_site_of(const tern_comm *c) {
  bool one_host = c->local_size == c->size, across = c->any_tcp && coll_state_hosts(c) != NULL;
  return (coll_site){.tr = c->any_tcp ? COLL_TR_TCP : COLL_TR_SHM,
                     .one_host = one_host,
                     .crowded = c->oversubscribed && one_host,
                     .cpus = c->host_cpus,
                     .across_hosts = across,
                     .learned = across ? &coll_learned_cluster : NULL};
}

static const char *transport_of(const tern_comm *c) {
  if (coll_site_of(c).across_hosts) return "shm+tcp";
  return c->any_tcp ? "tcp" : (c->size > 1 ? "shm" : "self");
}

static coll_algo select_algo(tern_comm *c, coll_args *a, size_t esize) {
  coll_choice *memo = coll_state_choice(c, a->kind);
  if (memo->algo == COLL_ALGO_AUTO || memo->count != a->count || memo->elem_size != esize) {
    coll_site w = coll_site_of(c);
    const char *from;
    coll_algo inner, algo = coll_choose(a, esize, &w, coll_state_tuning(c), &inner, &from);
    *memo = (coll_choice){a->count, esize, algo, inner, from};
  }
  a->inner = memo->inner;
  return memo->algo;
}

/* *out = a's schedule with algo, from the communicator's cache when it was built before. */
static tern_status build_algo(tern_comm *c, const coll_args *a, coll_algo algo,
                              const coll_sched **out) {
  return coll_sched_cache_get(coll_state_scheds(c), a, algo, out);
}

void coll_args_place(const tern_comm *c, coll_args *a) {
  a->ppn = c->ppn;
  a->hosts = coll_state_hosts(c);
  coll_site w = coll_site_of(c);
  a->cpus = w.crowded ? w.cpus : 0; /* tern run deals such ranks round: r on CPU r mod cpus */
  a->unchecked_root = core_config_get()->unchecked_roots;
}

/* What the log says of the algorithm: hier names its two levels and its grid. */
static void describe(const tern_comm *c, const coll_args *a, coll_algo algo, char *out,
                     size_t len) {
  const coll_hosts *h = a->hosts;
  if (algo != COLL_ALGO_HIER) {
    snprintf(out, len, "%s", coll_algo_name(algo));
    return;
  }
  int hosts = h ? h->nhosts : c->size / c->ppn, lanes = h ? h->lanes : c->ppn;
  char extras[40] = "";
  if (c->size > hosts * lanes)
    snprintf(extras, sizeof extras, ", %d ranks folded in", c->size - hosts * lanes);
  snprintf(out, len, "hier (within hosts ring, across hosts %s; %d hosts x %d lanes%s)",
           coll_algo_name(a->inner), hosts, lanes, extras);
}

static tern_status build(tern_comm *c, const tern_request *r, coll_args *a, size_t esize,
                         const coll_sched **out) {
  coll_algo inner, algo = coll_state_forced(c, &inner);
  const char *from = algo != COLL_ALGO_AUTO ? "forced by tern tune" : "TERN_ALGO";
  /* TERN_ALGO: an algorithm, or hier with its inter-host one, "hier:rhd", as the tuning file
   * names them (docs/ENVIRONMENT.md) */
  const char *forced = core_config_get()->algo;
  if (algo == COLL_ALGO_AUTO && forced[0] && !coll_tuning_parse_algo(forced, &algo, &inner))
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG,
                        "TERN_ALGO='%s' names no algorithm (hier:ring or hier:rhd for hier's "
                        "inter-host level)",
                        forced);
  tern_status rc = TERN_ERR_UNSUPPORTED;
  coll_args_place(c, a);
  a->inner = inner;
  if (algo != COLL_ALGO_AUTO) {
    rc = build_algo(c, a, algo, out);
    if (rc == TERN_ERR_UNSUPPORTED)
      CORE_DEBUG("TERN_ALGO=%s has no %s: the selector chooses", forced, coll_kind_name(a->kind));
  }
  if (rc == TERN_ERR_UNSUPPORTED) {
    algo = select_algo(c, a, esize);
    from = coll_state_choice(c, a->kind)->from;
    rc = build_algo(c, a, algo, out);
  }
  if (rc == TERN_ERR_UNSUPPORTED) { /* a tuned choice this layout cannot build */
    coll_site w = coll_site_of(c);
    algo = coll_choose(a, esize, &w, NULL, &a->inner, &from);
    rc = build_algo(c, a, algo, out);
  }
  if (rc != TERN_OK)
    return core_err_set(&c->err, rc, "building the %s schedule (%s, %d ranks, count %zu) failed",
                        coll_kind_name(a->kind), coll_algo_name(algo), c->size, a->count);
  coll_state_set_last_algo(c, a->kind, algo);
  if (core_log_on(CORE_LOG_INFO)) {
    char what[128];
    describe(c, a, algo, what, sizeof what);
    CORE_INFO("%s #%u: %zu elements of %s (%s), %s over %s, %d phases (%s)",
              coll_kind_name(a->kind), r->seq, a->count, tern_dtype_name(r->dt),
              tern_op_name(r->op), what, transport_of(c), (*out)->nphases, from);
  }
  return TERN_OK;
}

static void local_step(const tern_request *r, const coll_step *s, char *const bufs[],
                       size_t esize) {
  char *dst = bufs[s->buf] + s->off * esize;
  const char *src = bufs[s->src_buf] + s->src_off * esize;
  if (s->kind == COLL_STEP_COPY) {
    if (dst != src) memcpy(dst, src, s->count * esize);
  } else {
    core_reduce(r->dt, r->op, dst, dst, src, s->count);
  }
}

static void trace_step(const tern_request *r, const coll_step *s, int phase) {
  static const char *kinds[] = {"send", "recv", "recv+reduce", "copy", "reduce"};
  static const char *bufs[] = {"send", "recv", "tmp"};
  char src[48] = "";
  if (s->kind != COLL_STEP_SEND && s->kind != COLL_STEP_RECV)
    snprintf(src, sizeof src, " with %s[%zu]", bufs[s->src_buf], s->src_off);
  char peer[24] = "";
  if (s->kind <= COLL_STEP_RECV_REDUCE) snprintf(peer, sizeof peer, " peer %d", s->peer);
  CORE_TRACE("%s #%u phase %d: %s%s %s[%zu+%zu]%s", coll_kind_name((coll_kind)r->coll), r->seq,
             phase, kinds[s->kind], peer, bufs[s->buf], s->off, s->count, src);
}

/* How data flows in each kind of collective, which is what the transports go by (net_flow:
 * TCP stripe sizes, single-copy floors). */
_Static_assert(COLL_NUM_KINDS == NET_COLL_KINDS, "the wire's kinds are coll_kind's");
static const uint8_t flows[COLL_NUM_KINDS] = {
    [COLL_ALLREDUCE] = NET_FLOW_EXCHANGE | NET_FLOW_REDUCE,
    [COLL_REDUCE_SCATTER] = NET_FLOW_EXCHANGE | NET_FLOW_REDUCE,
    [COLL_ALLGATHER] = NET_FLOW_EXCHANGE,
    [COLL_BROADCAST] = NET_FLOW_ONE_WAY,
    [COLL_REDUCE] = NET_FLOW_REDUCE,
    [COLL_ALLTOALL] = NET_FLOW_EXCHANGE,
    [COLL_BARRIER] = NET_FLOW_EXCHANGE,
    [COLL_GATHER] = NET_FLOW_ONE_WAY,
    [COLL_SCATTER] = NET_FLOW_ONE_WAY,
    [COLL_ALLTOALLV] = NET_FLOW_EXCHANGE};

/* What an alltoallv message carries as its count, that the two ends of each pair check against
 * each other (net_msg_match): a message to peer carries the count this rank expects back from
 * it; a receive from peer wants the count this rank sends it. With the bytes, which each end
 * checks against its own count for the message, a pair that disagrees on either direction is
 * told at both ends, and no rank waits for a message that is not coming: every pair exchanges
 * one both ways, empty or not (sched.h). */
static uint64_t pair_count(const tern_request *r, const coll_step *st) {
  return st->kind == COLL_STEP_SEND ? r->v[2][st->peer] : r->v[0][st->peer];
}

static tern_status run_phases(tern_comm *c, tern_request *r, const coll_sched *s,
                              char *const bufs[], size_t esize) {
  bool trace = core_log_on(CORE_LOG_TRACE); /* once a call, not once a step */
  uint8_t flow = flows[r->coll];
  net_msg_hdr hdr = {.kind = (uint8_t)r->coll,
                     .dtype = (uint8_t)r->dt,
                     .op = (uint8_t)r->op,
                     .seq = r->seq,
                     .root = r->root,
                     .count = r->count};
  int phase = 0;
  for (size_t begin = 0; begin < s->len; phase++) {
    size_t end = begin;
    while (end < s->len && !s->steps[end].last)
      end++;
    end = end < s->len ? end + 1 : end;
    tern_status rc = comm_request_xfers(c, r, end - begin);
    if (rc != TERN_OK) return rc;
    size_t n = 0;
    for (size_t i = begin; i < end; i++) {
      const coll_step *st = &s->steps[i];
      if (trace) trace_step(r, st, phase);
      if (st->kind == COLL_STEP_COPY || st->kind == COLL_STEP_REDUCE) continue;
      net_xfer *x = &r->xfers[n];
      *x = (net_xfer){.hdr = hdr,
                      .peer = st->peer,
                      .is_send = st->kind == COLL_STEP_SEND,
                      .reduce = st->kind == COLL_STEP_RECV_REDUCE,
                      .flow = flow};
      x->hdr.bytes = st->count * esize;
      if (r->coll == COLL_ALLTOALLV) x->hdr.count = pair_count(r, st);
      if (x->is_send)
        x->src = bufs[st->buf] + st->off * esize;
      else
        x->dst = bufs[st->buf] + st->off * esize;
      if (x->reduce) x->src = bufs[st->src_buf] + st->src_off * esize;
      if ((rc = comm_post_counted(c, x)) != TERN_OK) return rc;
      n += !x->complete; /* a small message may move as it is posted: its place is reused */
    }
    for (size_t i = begin; i < end; i++) {
      const coll_step *st = &s->steps[i];
      if (st->kind == COLL_STEP_COPY || st->kind == COLL_STEP_REDUCE)
        local_step(r, st, bufs, esize);
    }
    if (n > 0 && (rc = comm_wait_all(c, r->xfers, n)) != TERN_OK) return rc;
    begin = end;
  }
  return TERN_OK;
}

/* AVG: the schedules sum; the owner of each result divides it once. */
static void finish_avg(tern_comm *c, tern_request *r) {
  if (r->op != TERN_AVG) return;
  coll_kind k = (coll_kind)r->coll;
  if (k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER || (k == COLL_REDUCE && r->root == c->rank))
    core_avg_finish(r->dt, r->recvbuf, r->count, c->size);
}

static tern_status run_coll(tern_comm *c, tern_request *r) {
  tern_status rc = comm_check_alive(c);
  if (rc != TERN_OK) return rc;
  if (r->count == 0 && !coll_kind_runs_empty((coll_kind)r->coll)) return TERN_OK;
  coll_vcounts v = {r->v[0], r->v[1], r->v[2], r->v[3]};
  coll_args a = {.kind = (coll_kind)r->coll,
                 .rank = c->rank,
                 .size = c->size,
                 .root = r->root,
                 .count = r->count,
                 .inplace = r->inplace,
                 .v = r->coll == COLL_ALLTOALLV ? &v : NULL};
  const coll_sched *s = NULL;
  size_t esize = tern_dtype_size(r->dt);
  if ((rc = build(c, r, &a, esize, &s)) != TERN_OK) return rc;
  char *tmp = NULL;
  if (s->tmp_count && (rc = coll_state_tmp(c, s->tmp_count * esize, &tmp)) != TERN_OK) return rc;
  char *const bufs[COLL_NUM_BUFS] = {(char *)r->sendbuf, r->recvbuf, tmp};
  if ((rc = run_phases(c, r, s, bufs, esize)) != TERN_OK) return rc;
  finish_avg(c, r);
  return TERN_OK;
}

/* The operation that breaks the communicator names itself in the message; later ones, which
 * fail on the standing error, leave that first message alone. */
tern_status coll_exec_coll(tern_comm *c, tern_request *r) {
  bool fresh = comm_op_fresh(c);
  tern_status rc = run_coll(c, r);
  if (rc == TERN_OK || !fresh) return rc;
  char op[64];
  snprintf(op, sizeof op, "%s #%u", coll_kind_name((coll_kind)r->coll), r->seq);
  return comm_op_failed(c, rc, fresh, op);
}

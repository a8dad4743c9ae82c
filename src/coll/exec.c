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
 * selector (coll_select) with the model of the transport in use; every rank decides alike.
 */
#include "coll/coll.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The crowded model (more ranks than CPUs here) only when every rank is on this host, as it
 * always is over shared memory: then every rank counts the same ranks and CPUs and picks alike;
 * across hosts, each host would judge its own crowding. */
static coll_net_model model_of(const tern_comm *c) {
  bool one_host = c->local_size == c->size;
  return coll_model_for(c->any_tcp, one_host, c->oversubscribed && one_host, c->host_cpus);
}

/* Several hosts (some peers over TCP, some host with two ranks or more, in any placement):
 * hier competes. */
static bool across_hosts(const tern_comm *c) {
  return c->any_tcp && coll_engine_hosts(c) != NULL;
}

static const char *transport_of(const tern_comm *c) {
  if (across_hosts(c)) return "shm+tcp";
  return c->any_tcp ? "tcp" : (c->size > 1 ? "shm" : "self");
}

static coll_algo select_algo(tern_comm *c, tern_request *r, size_t esize) {
  coll_choice *memo = coll_engine_choice(c, r->args.kind);
  if (memo->algo == COLL_ALGO_AUTO || memo->count != r->args.count || memo->elem_size != esize) {
    coll_algo inner = COLL_ALGO_RING, algo = COLL_ALGO_AUTO;
    const coll_tuning *tuned = coll_engine_tuning(c);
    if (across_hosts(c))
      algo = coll_select_hosts(&r->args, esize, &coll_model_shm, &coll_model_tcp, &inner);
    else if (tuned)
      algo = coll_tuning_select(tuned, c->any_tcp ? COLL_TR_TCP : COLL_TR_SHM, r->args.kind,
                                c->size, r->args.count, esize);
    if (algo == COLL_ALGO_AUTO || !coll_algo_supported(r->args.kind, algo)) {
      coll_net_model m = model_of(c);
      algo = coll_select(r->args.kind, c->size, r->args.count, esize, &m);
    }
    *memo = (coll_choice){r->args.count, esize, algo, inner};
  }
  r->args.inner = memo->inner;
  return memo->algo;
}

/* *out = r's schedule with algo, from the communicator's cache when it was built before. */
static tern_status build_algo(tern_comm *c, tern_request *r, coll_algo algo,
                              const coll_sched **out) {
  return coll_sched_cache_get(coll_engine_scheds(c), &r->args, algo, out);
}

void coll_args_place(const tern_comm *c, coll_args *a) {
  a->ppn = c->ppn;
  a->hosts = coll_engine_hosts(c);
  a->dealt = c->dealt;
  a->shared_memory = !c->any_tcp;
  a->unchecked_root = core_config_get()->unchecked_roots;
}

/* TERN_ALGO: an algorithm, or hier with the algorithm of its inter-host level, "hier:rhd"
 * (docs/ENVIRONMENT.md). */
static bool parse_forced(const char *text, coll_algo *algo, coll_algo *inner) {
  char name[sizeof core_config_get()->algo];
  snprintf(name, sizeof name, "%s", text);
  char *colon = strchr(name, ':');
  *inner = COLL_ALGO_RING;
  if (colon == NULL) return coll_algo_parse(name, algo);
  *colon = '\0';
  return coll_algo_parse(name, algo) && *algo == COLL_ALGO_HIER &&
         coll_algo_parse(colon + 1, inner) && (*inner == COLL_ALGO_RING || *inner == COLL_ALGO_RHD);
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

static tern_status build(tern_comm *c, tern_request *r, size_t esize, const coll_sched **out) {
  coll_algo algo = coll_engine_forced(c), inner = COLL_ALGO_RING;
  const char *forced = core_config_get()->algo;
  if (algo == COLL_ALGO_AUTO && forced[0] && !parse_forced(forced, &algo, &inner))
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG,
                        "TERN_ALGO='%s' names no algorithm (hier:ring or hier:rhd for hier's "
                        "inter-host level)",
                        forced);
  tern_status rc = TERN_ERR_UNSUPPORTED;
  coll_args_place(c, &r->args);
  r->args.inner = inner;
  if (algo != COLL_ALGO_AUTO) {
    rc = build_algo(c, r, algo, out);
    if (rc == TERN_ERR_UNSUPPORTED)
      CORE_DEBUG("TERN_ALGO=%s has no %s: the selector chooses", forced,
                 coll_kind_name(r->args.kind));
  }
  if (rc == TERN_ERR_UNSUPPORTED) {
    algo = select_algo(c, r, esize);
    rc = build_algo(c, r, algo, out);
  }
  if (rc == TERN_ERR_UNSUPPORTED) { /* a tuned choice this layout cannot build */
    coll_net_model m = model_of(c);
    algo = coll_select(r->args.kind, c->size, r->args.count, esize, &m);
    rc = build_algo(c, r, algo, out);
  }
  if (rc != TERN_OK)
    return core_err_set(&c->err, rc, "building the %s schedule (%s, %d ranks, count %zu) failed",
                        coll_kind_name(r->args.kind), coll_algo_name(algo), c->size, r->args.count);
  coll_engine_counters(c)->last_algo[r->args.kind] = algo;
  if (core_log_on(CORE_LOG_INFO)) {
    char what[128];
    describe(c, &r->args, algo, what, sizeof what);
    CORE_INFO("%s #%u: %zu elements of %s (%s), %s over %s, %d phases",
              coll_kind_name(r->args.kind), r->seq, r->args.count, tern_dtype_name(r->dt),
              tern_op_name(r->op), what, transport_of(c), (*out)->nphases);
  }
  return TERN_OK;
}

static tern_status reserve_xfers(tern_comm *c, tern_request *r, size_t n) {
  if (n <= r->xfers_cap) return TERN_OK;
  net_xfer *x = realloc(r->xfers, n * sizeof *x);
  if (x == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for %zu transfers", n);
  r->xfers = x;
  r->xfers_cap = n;
  return TERN_OK;
}

/* Posts x, counting its payload. */
static tern_status post(tern_comm *c, net_xfer *x) {
  coll_counters *k = coll_engine_counters(c);
  *(x->is_send ? &k->bytes_sent : &k->bytes_received) += x->hdr.bytes;
  return comm_post(c, x);
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
  CORE_TRACE("%s #%u phase %d: %s%s %s[%zu+%zu]%s", coll_kind_name(r->args.kind), r->seq, phase,
             kinds[s->kind], peer, bufs[s->buf], s->off, s->count, src);
}

static tern_status run_phases(tern_comm *c, tern_request *r, const coll_sched *s,
                              char *const bufs[], size_t esize) {
  bool trace = core_log_on(CORE_LOG_TRACE); /* once a call, not once a step */
  net_msg_hdr hdr = {.kind = (uint8_t)r->args.kind,
                     .dtype = (uint8_t)r->dt,
                     .op = (uint8_t)r->op,
                     .seq = r->seq,
                     .root = r->args.root,
                     .count = r->args.count};
  int phase = 0;
  for (size_t begin = 0; begin < s->len; phase++) {
    size_t end = begin;
    while (end < s->len && !s->steps[end].last)
      end++;
    end = end < s->len ? end + 1 : end;
    tern_status rc = reserve_xfers(c, r, end - begin);
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
                      .reduce = st->kind == COLL_STEP_RECV_REDUCE};
      x->hdr.bytes = st->count * esize;
      if (x->is_send)
        x->src = bufs[st->buf] + st->off * esize;
      else
        x->dst = bufs[st->buf] + st->off * esize;
      if (x->reduce) x->src = bufs[st->src_buf] + st->src_off * esize;
      if ((rc = post(c, x)) != TERN_OK) return rc;
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
  coll_kind k = r->args.kind;
  if (k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER ||
      (k == COLL_REDUCE && r->args.root == c->rank))
    core_avg_finish(r->dt, r->recvbuf, r->args.count, c->size);
}

/* Puts the operation in front of the failure's message: "allreduce #12 on rank 0: ...". */
static tern_status name_operation(tern_comm *c, tern_status rc, const char *op) {
  char what[CORE_ERR_LEN];
  memcpy(what, c->err.msg, sizeof what);
  int n = snprintf(c->err.msg, sizeof c->err.msg, "%s on rank %d: ", op, c->rank);
  if (n > 0 && (size_t)n < sizeof c->err.msg)
    snprintf(c->err.msg + n, sizeof c->err.msg - (size_t)n, "%.*s",
             (int)(sizeof c->err.msg) - n - 1, what);
  return rc;
}

static tern_status run_coll(tern_comm *c, tern_request *r) {
  tern_status rc = comm_check_alive(c);
  if (rc != TERN_OK) return rc;
  if (r->args.count == 0 && r->args.kind != COLL_BARRIER) return TERN_OK;
  const coll_sched *s = NULL;
  size_t esize = tern_dtype_size(r->dt);
  if ((rc = build(c, r, esize, &s)) != TERN_OK) return rc;
  char *tmp = NULL;
  if (s->tmp_count && (rc = coll_engine_tmp(c, s->tmp_count * esize, &tmp)) != TERN_OK) return rc;
  char *const bufs[COLL_NUM_BUFS] = {(char *)r->sendbuf, r->recvbuf, tmp};
  if ((rc = run_phases(c, r, s, bufs, esize)) != TERN_OK) return rc;
  finish_avg(c, r);
  return TERN_OK;
}

tern_status coll_exec_p2p_post(tern_comm *c, tern_request *r) {
  tern_status rc = comm_check_alive(c);
  if (rc != TERN_OK || (rc = reserve_xfers(c, r, 1)) != TERN_OK) return rc;
  if (r->peer == COLL_ANY_PEER) { /* nothing to post until a sender is found */
    r->xfers[0] =
        (net_xfer){.hdr = {.kind = NET_KIND_P2P, .bytes = r->args.count * tern_dtype_size(r->dt)},
                   .peer = COLL_ANY_PEER};
    bool matched;
    return coll_exec_p2p_match(c, r, &matched);
  }
  comm_peer *p = &c->peers[r->peer];
  bool send = r->type == COLL_REQ_SEND;
  net_xfer *x = &r->xfers[0];
  *x = (net_xfer){.hdr = {.kind = NET_KIND_P2P,
                          .dtype = (uint8_t)r->dt,
                          .seq = send ? p->p2p_send_seq++ : p->p2p_recv_seq++,
                          .count = r->args.count,
                          .bytes = r->args.count * tern_dtype_size(r->dt)},
                  .peer = r->peer,
                  .is_send = send,
                  .src = r->sendbuf,
                  .dst = r->recvbuf};
  CORE_INFO("%s #%u: %zu elements of %s %s rank %d over %s", send ? "send" : "recv", x->hdr.seq,
            r->args.count, tern_dtype_name(r->dt), send ? "to" : "from", r->peer,
            p->link == COMM_LINK_SHM ? "shm" : "tcp");
  return post(c, x);
}

/* The operation that breaks the communicator names itself in the message; later ones, which
 * fail on the standing error, leave that first message alone. */
tern_status coll_exec_coll(tern_comm *c, tern_request *r) {
  bool fresh = coll_exec_fresh(c);
  tern_status rc = run_coll(c, r);
  if (rc == TERN_OK || !fresh) return rc;
  char op[64];
  snprintf(op, sizeof op, "%s #%u", coll_kind_name(r->args.kind), r->seq);
  return name_operation(c, rc, op);
}

bool coll_exec_fresh(tern_comm *c) {
  bool fresh = c->broken == TERN_OK && !atomic_load(&c->aborted);
  if (fresh) core_err_clear(&c->err);
  return fresh;
}

tern_status coll_exec_p2p_failed(tern_comm *c, tern_status rc, bool fresh, int n) {
  if (rc == TERN_OK || !fresh) return rc;
  char op[64];
  snprintf(op, sizeof op, "send/recv (%d request%s)", n, n == 1 ? "" : "s");
  return name_operation(c, rc, op);
}

tern_status coll_exec_p2p_match(tern_comm *c, tern_request *r, bool *matched) {
  int sender;
  *matched = false;
  if (r->peer != COLL_ANY_PEER) return TERN_OK;
  tern_status rc = comm_peek_p2p(c, &sender);
  if (rc != TERN_OK || sender < 0) return rc;
  *matched = true;
  c->any_next = (sender + 1) % c->size;
  r->peer = sender;
  *r->source = sender;
  return coll_exec_p2p_post(c, r);
}

/* A blocking receive from any source: waits, as every wait does, until some peer sends. */
static tern_status wait_sender(tern_comm *c, tern_request *r) {
  comm_idle_state idle;
  comm_idle_reset(&idle);
  c->any_source = true;
  tern_status rc = TERN_OK;
  while (r->peer == COLL_ANY_PEER && rc == TERN_OK) {
    bool moved = false, matched = false;
    if ((rc = comm_progress(c, &moved)) != TERN_OK ||
        (rc = coll_exec_p2p_match(c, r, &matched)) != TERN_OK || matched)
      break;
    if (moved)
      comm_idle_reset(&idle);
    else
      rc = comm_idle(c, &idle, &r->xfers[0]);
  }
  c->any_source = false;
  return rc;
}

tern_status coll_exec_p2p(tern_comm *c, tern_request *r) {
  bool fresh = coll_exec_fresh(c);
  tern_status rc = coll_exec_p2p_post(c, r);
  if (rc == TERN_OK && r->peer == COLL_ANY_PEER) rc = wait_sender(c, r);
  if (rc == TERN_OK) rc = comm_wait_all(c, r->xfers, 1);
  return coll_exec_p2p_failed(c, rc, fresh, 1);
}

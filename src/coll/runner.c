/* runner.c: the collective layer behind comm's engine: what it keeps for each communicator, the
 * runner the engine hands collectives to (comm/engine.h), tern_comm_init, which makes a
 * communicator with that runner, and tern_comm_last_algorithm, which reads the state.
 *
 * The state is made once the communicator is open (its layout decides the host-ordered view hier
 * runs on) and before its progress thread starts; rank 0's tuning file reaches every rank then.
 * Only the thread running operations touches it, under the engine's run lock, except `forced`
 * (set by `tern tune` between calls) and last_algo (read by tools between calls).
 */
#include "coll/coll.h"

#include <stdlib.h>

typedef struct coll_state {
  char *tmp;
  size_t tmp_cap;
  coll_choice choices[COLL_NUM_KINDS];
  coll_sched_cache scheds;
  coll_tuning tuning;
  bool tuned;
  coll_algo forced, forced_inner;
  coll_algo last_algo[COLL_NUM_KINDS];
  coll_hosts *hosts; /* NULL on one host, or one rank a host */
} coll_state;

static coll_state *state_of(const tern_comm *c) {
  return comm_engine_runner_state(c);
}

const coll_hosts *coll_state_hosts(const tern_comm *c) {
  return state_of(c)->hosts;
}

coll_algo coll_state_last_algo(tern_comm *c, coll_kind kind) {
  return state_of(c)->last_algo[kind];
}

void coll_state_set_last_algo(tern_comm *c, coll_kind kind, coll_algo algo) {
  state_of(c)->last_algo[kind] = algo;
}

void coll_state_force(tern_comm *c, coll_algo algo, coll_algo inner) {
  state_of(c)->forced = algo;
  state_of(c)->forced_inner = inner;
}

coll_algo coll_state_forced(tern_comm *c, coll_algo *inner) {
  *inner = state_of(c)->forced_inner;
  return state_of(c)->forced;
}

const coll_tuning *coll_state_tuning(tern_comm *c) {
  coll_state *s = state_of(c);
  return s->tuned ? &s->tuning : NULL;
}

coll_choice *coll_state_choice(tern_comm *c, coll_kind kind) {
  return &state_of(c)->choices[kind];
}

coll_sched_cache *coll_state_scheds(tern_comm *c) {
  return &state_of(c)->scheds;
}

tern_status coll_state_tmp(tern_comm *c, size_t bytes, char **out) {
  coll_state *s = state_of(c);
  if (bytes > s->tmp_cap) {
    char *t = realloc(s->tmp, bytes);
    if (t == NULL)
      return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for %zu bytes of scratch", bytes);
    s->tmp = t;
    s->tmp_cap = bytes;
  }
  *out = s->tmp;
  return TERN_OK;
}

static void stop(void *state) {
  coll_state *s = state;
  coll_sched_cache_free(&s->scheds);
  free(s->tmp);
  coll_tuning_free(&s->tuning);
  coll_hosts_free(s->hosts);
  free(s);
}

static tern_status start(tern_comm *c, void **state) {
  coll_state *s = calloc(1, sizeof *s);
  if (s == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for the collectives");
  coll_sched_cache_init(&s->scheds);
  /* the host-ordered view hier runs on (hier_hosts.c), when ranks span hosts */
  if (c->nhosts > 1 && c->nhosts < c->size &&
      coll_hosts_make(c->size, c->host_id, &s->hosts) != TERN_OK) {
    stop(s);
    return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for the hosts of %d ranks", c->size);
  }
  tern_status rc = coll_tuning_share(c, &s->tuning, &s->tuned);
  if (rc != TERN_OK) {
    stop(s);
    return rc;
  }
  *state = s;
  return TERN_OK;
}

const comm_runner coll_runner = {.start = start, .run = coll_exec_coll, .stop = stop};

tern_status tern_comm_init(tern_comm **comm, int rank, int size, const char *store) {
  return comm_create(comm, rank, size, store, rank == 0, NULL, &coll_runner);
}

tern_status tern_comm_init_env(tern_comm **comm) {
  return comm_create_env(comm, &coll_runner);
}

const char *tern_comm_last_algorithm(const tern_comm *comm, const char *collective) {
  coll_kind kind;
  if (comm == NULL || collective == NULL || !coll_kind_parse(collective, &kind)) return NULL;
  coll_algo algo = state_of(comm)->last_algo[kind];
  return algo == COLL_ALGO_AUTO ? "" : coll_algo_name(algo);
}

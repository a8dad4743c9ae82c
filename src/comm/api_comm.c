/* api_comm.c: making a communicator with its engine (comm_create), and the public calls on one:
 * destroy, abort, rank, size, last error, traffic. tern_comm_init is the collective layer's
 * (coll/runner.c): it names the runner the engine starts with. */
#include "comm/engine.h"
#include "comm/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reason the last init on this thread failed, for tern_comm_last_error(NULL). */
static __thread char init_error[CORE_ERR_LEN];

tern_status comm_create(tern_comm **out, int rank, int size, const char *store, bool serve,
                        store_server *served, const comm_runner *runner) {
  if (out == NULL) {
    store_server_stop(served);
    return TERN_ERR_INVALID_ARG;
  }
  *out = NULL;
  tern_comm *c = calloc(1, sizeof *c);
  if (c == NULL) {
    store_server_stop(served);
    snprintf(init_error, sizeof init_error, "no memory for a communicator");
    return TERN_ERR_NOMEM;
  }
  c->server = served; /* comm_close stops it, on failure too */
  tern_status rc = comm_open(c, rank, size, store, serve);
  if (rc == TERN_OK && (rc = comm_engine_start(c, runner)) != TERN_OK) comm_close(c);
  if (rc != TERN_OK) {
    store_server_stop(c->server); /* comm_open's early refusals return before comm_close */
    snprintf(init_error, sizeof init_error, "%s", c->err.msg);
    CORE_WARN("joining as rank %d of %d at %s failed: %s", rank, size, store ? store : "?",
              c->err.msg);
    free(c);
    return rc;
  }
  init_error[0] = '\0';
  *out = c;
  return TERN_OK;
}

tern_status comm_create_env(tern_comm **comm, const comm_runner *runner) {
  if (comm) *comm = NULL;
  comm_env env;
  core_err err = {0};
  tern_status rc = comm_env_read(&env, &err);
  if (rc != TERN_OK) {
    snprintf(init_error, sizeof init_error, "%s", err.msg);
    CORE_WARN("%s", err.msg);
    return rc;
  }
  CORE_DEBUG("rank %d of %d from %s, store %s%s", env.rank, env.size, env.source, env.store,
             env.serve_store ? " (served here)" : "");
  return comm_create(comm, env.rank, env.size, env.store, env.serve_store, NULL, runner);
}

int tern_comm_rank(const tern_comm *comm) {
  return comm ? comm->rank : -1;
}

int tern_comm_size(const tern_comm *comm) {
  return comm ? comm->size : -1;
}

const char *tern_comm_last_error(const tern_comm *comm) {
  if (comm == NULL) return init_error;
  if (atomic_load(&comm->arg_err_last)) return comm->arg_err.msg;
  return comm->err.status == TERN_OK ? "" : comm->err.msg;
}

tern_status tern_comm_traffic(const tern_comm *comm, uint64_t *sent, uint64_t *received) {
  if (comm == NULL || sent == NULL || received == NULL) return TERN_ERR_INVALID_ARG;
  *sent = comm->bytes_sent;
  *received = comm->bytes_received;
  return TERN_OK;
}

void tern_comm_abort(tern_comm *comm) {
  if (comm == NULL) return;
  comm_abort(comm);
  comm_engine_wake_all(comm);
}

void tern_comm_destroy(tern_comm *comm) {
  if (comm == NULL) return;
  if (comm_engine_busy(comm)) tern_comm_abort(comm); /* cancel what is still outstanding */
  comm_engine_stop(comm);
  comm_close(comm);
  free(comm);
}

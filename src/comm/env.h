/* env.h: who this process is in the job, read from what the launcher put in the environment
 * (env.c). DESIGN.md's environment table is the list; TERN_STORE always wins for the store. */
#ifndef TERN_COMM_ENV_H
#define TERN_COMM_ENV_H

#include "core/core.h"
#include "net/net.h"

typedef struct comm_env {
  int rank, size;
  char store[NET_HOST_LEN + 8]; /* "host:port" of the rendezvous store */
  /* This rank serves the store itself (from a thread, store_server_start on every interface,
   * "", at the store's port): rank 0 under torchrun-style variables, or under an MPI launcher or
   * Slurm when every rank is on this host and no address was given. */
  bool serve_store;
  int local_rank, local_size; /* on this host; -1 and 0 when the launcher does not say */
  const char *source;         /* "TERN_RANK", "torchrun", "Open MPI", "MPICH", "Slurm" */
} comm_env;

/* Fills env from the first launcher whose rank variable is set, in the order above. Every
 * number must be plain decimal digits with 0 <= rank < size, 1 <= size <= NET_MAX_RANKS. When
 * neither TERN_STORE nor MASTER_ADDR and MASTER_PORT give the store and the ranks are not all on
 * this host, TERN_ERR_INVALID_ARG says which variables to set. */
tern_status comm_env_read(comm_env *env, core_err *err);
/* Whether any launcher's rank variable is set (a program alone has none). */
bool comm_env_launched(void);

/* The port a job with this launcher job id serves its store at on one host: a hash into
 * COMM_ENV_PORT_BASE .. + COMM_ENV_PORT_SPAN, below Linux's ephemeral range (32768-60999 by
 * default, /proc/sys/net/ipv4/ip_local_port_range), so no outgoing connection holds it. */
#define COMM_ENV_PORT_BASE 20000
#define COMM_ENV_PORT_SPAN 12000
int comm_env_port_for(const char *job_id);

#endif /* TERN_COMM_ENV_H */

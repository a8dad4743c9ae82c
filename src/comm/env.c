/* env.c: the launch environment: rank, world size, where the store is, who serves it.
 *
 * Launchers are tried in a fixed order (tern's own variables, torchrun, Open MPI, MPICH, Slurm)
 * and the first whose rank variable is set is the one believed: inside a Slurm allocation,
 * mpirun's per-rank OMPI_* must win over the SLURM_PROCID the batch shell carries. The numbers
 * are parsed strictly (digits only), because a rank that is silently 0 makes two rank 0s.
 *
 * The store: TERN_STORE if given (someone else serves it); else MASTER_ADDR:MASTER_PORT, which
 * rank 0 serves, as torch's TCPStore does. Under torchrun proper (TORCHELASTIC_USE_AGENT_STORE=
 * True) the agent already holds MASTER_PORT with its own TCPStore (torch/distributed/
 * rendezvous.py, _create_c10d_store), so tern takes MASTER_PORT + 1. With no address at all but
 * every rank on this host (an MPI launcher or Slurm says so), rank 0 serves on 127.0.0.1 at a
 * port hashed from the launcher's job id: `mpirun -n 4 ./prog` needs no extra variable. Open MPI
 * gives the job id (OMPI_MCA_ess_base_jobid); MPICH's Hydra gives none, but every rank on a host
 * is a child of the same hydra_pmi_proxy, so its pid serves; Slurm has job and step ids.
 */
#include "env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { L_TERN, L_TORCH, L_OMPI, L_MPICH, L_SLURM };

static const struct launcher {
  const char *name, *rank, *size, *local_rank, *local_size;
} launchers[] = {
    [L_TERN] = {"TERN_RANK", "TERN_RANK", "TERN_WORLD_SIZE", "TERN_LOCAL_RANK", "TERN_LOCAL_SIZE"},
    [L_TORCH] = {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    [L_OMPI] = {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    [L_MPICH] = {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    [L_SLURM] = {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};

static const char *get(const char *name) {
  const char *v = name ? getenv(name) : NULL;
  return v && *v ? v : NULL;
}

static bool digits(const char *s) {
  return s[0] != '\0' && s[strspn(s, "0123456789")] == '\0' && strlen(s) < 12;
}

/* The variable `name` as a number in [lo, hi]; *present false (and TERN_OK) when unset. */
static tern_status number(const char *name, long lo, long hi, long *out, bool *present,
                          core_err *err) {
  const char *v = get(name);
  *present = v != NULL;
  if (v == NULL) return TERN_OK;
  if (!digits(v) || !core_parse_int(v, lo, hi, out))
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s='%.40s' is not a whole number from %ld to %ld", name, v, lo, hi);
  return TERN_OK;
}

int comm_env_port_for(const char *job_id) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = job_id; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  return COMM_ENV_PORT_BASE + (int)(h % COMM_ENV_PORT_SPAN);
}

/* Slurm's tasks per node, "2(x3),1", at node index `node`; -1 when it cannot be read. */
static long slurm_tasks_on(const char *spec, long node) {
  const char *p = spec;
  while (p && *p) {
    char *end;
    long count = strtol(p, &end, 10), repeat = 1;
    if (end == p || count < 1) return -1;
    p = end;
    if (strncmp(p, "(x", 2) == 0) {
      repeat = strtol(p + 2, &end, 10);
      if (end == p + 2 || repeat < 1 || *end != ')') return -1;
      p = end + 1;
    }
    if (node < repeat) return count;
    node -= repeat;
    if (*p == ',')
      p++;
    else if (*p != '\0')
      return -1;
  }
  return -1;
}

static tern_status read_local(comm_env *env, int which, core_err *err) {
  const struct launcher *l = &launchers[which];
  long v;
  bool have;
  tern_status rc = number(l->local_rank, 0, env->size - 1, &v, &have, err);
  if (rc != TERN_OK) return rc;
  if (have) env->local_rank = (int)v;
  if (which == L_SLURM) {
    const char *spec = get("SLURM_STEP_TASKS_PER_NODE");
    if (spec == NULL) spec = get("SLURM_TASKS_PER_NODE");
    long node = 0;
    rc = number("SLURM_NODEID", 0, NET_MAX_RANKS, &node, &have, err);
    if (rc != TERN_OK) return rc;
    v = spec ? slurm_tasks_on(spec, node) : -1;
    have = v >= 1 && v <= env->size;
  } else {
    rc = number(l->local_size, 1, env->size, &v, &have, err);
    if (rc != TERN_OK) return rc;
  }
  if (have) env->local_size = (int)v;
  if (env->local_rank >= 0 && env->local_size > 0 && env->local_rank >= env->local_size)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%s=%d is not below the %d ranks on this host",
                        l->local_rank, env->local_rank, env->local_size);
  return TERN_OK;
}

static void set_store(comm_env *env, const char *host, int port) {
  bool v6 = strchr(host, ':') != NULL && host[0] != '[';
  snprintf(env->store, sizeof env->store, v6 ? "[%s]:%d" : "%s:%d", host, port);
}

/* MASTER_ADDR and MASTER_PORT, when both are set: *found says whether they were. */
static tern_status master_store(comm_env *env, bool *found, core_err *err) {
  const char *addr = get("MASTER_ADDR"), *port_s = get("MASTER_PORT");
  *found = addr && port_s;
  if (!addr && !port_s) return TERN_OK;
  if (!addr || !port_s)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s is set but %s is not: set both (or "
                        "TERN_STORE=host:port)",
                        addr ? "MASTER_ADDR" : "MASTER_PORT", addr ? "MASTER_PORT" : "MASTER_ADDR");
  long port;
  bool have;
  tern_status rc = number("MASTER_PORT", 1, 65535, &port, &have, err);
  if (rc != TERN_OK) return rc;
  const char *agent = get("TORCHELASTIC_USE_AGENT_STORE");
  if (agent && strcmp(agent, "True") == 0) {
    if (port == 65535)
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "torchrun's agent store holds MASTER_PORT="
                          "65535 and tern needs the next port: set TERN_STORE=host:port");
    port++;
  }
  if (strlen(addr) >= NET_HOST_LEN)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "MASTER_ADDR is longer than %d bytes",
                        NET_HOST_LEN - 1);
  set_store(env, addr, (int)port);
  env->serve_store = env->rank == 0;
  return TERN_OK;
}

/* The job id that names this job on this host, for the derived port; false when none. */
static bool job_id(int which, char *out, size_t cap) {
  const char *a, *b;
  switch (which) {
  case L_OMPI:
    if ((a = get("OMPI_MCA_ess_base_jobid")) == NULL) a = get("PMIX_NAMESPACE");
    return a && snprintf(out, cap, "ompi %s", a) > 0;
  case L_MPICH:
    return snprintf(out, cap, "mpich proxy %d", (int)getppid()) > 0;
  case L_SLURM:
    a = get("SLURM_JOB_ID");
    b = get("SLURM_STEP_ID");
    return a && snprintf(out, cap, "slurm %s.%s", a, b ? b : "batch") > 0;
  default:
    return false;
  }
}

static bool all_here(const comm_env *env, int which) {
  if (which == L_SLURM) {
    const char *n = get("SLURM_STEP_NUM_NODES");
    if (n == NULL) n = get("SLURM_NNODES");
    if (n) return strcmp(n, "1") == 0;
  }
  return env->local_size == env->size;
}

static tern_status find_store(comm_env *env, int which, core_err *err) {
  const char *ts = get("TERN_STORE");
  if (ts) {
    char host[NET_HOST_LEN];
    int port;
    core_err e = {0};
    if (net_parse_addr(ts, host, sizeof host, &port, false, &e) != TERN_OK)
      return core_err_set(err, TERN_ERR_INVALID_ARG, "TERN_STORE: %s", e.msg);
    snprintf(env->store, sizeof env->store, "%s", ts);
    return TERN_OK;
  }
  bool found;
  tern_status rc = master_store(env, &found, err);
  if (rc != TERN_OK || found) return rc;
  char id[128];
  if (all_here(env, which) && job_id(which, id, sizeof id)) {
    set_store(env, "127.0.0.1", comm_env_port_for(id));
    env->serve_store = env->rank == 0;
    return TERN_OK;
  }
  return core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%s gives rank %d of %d but not where the rendezvous store is: set "
                      "TERN_STORE=host:port (a store someone serves, as `tern run` does) or "
                      "MASTER_ADDR and MASTER_PORT (rank 0 then serves it there)",
                      launchers[which].name, env->rank, env->size);
}

/* The first launcher whose rank variable is set; CORE_ARRAY_LEN(launchers) when none is. */
static int launcher_found(void) {
  int which = 0;
  while (which < (int)CORE_ARRAY_LEN(launchers) && get(launchers[which].rank) == NULL)
    which++;
  return which;
}

bool comm_env_launched(void) {
  return launcher_found() < (int)CORE_ARRAY_LEN(launchers);
}

tern_status comm_env_read(comm_env *env, core_err *err) {
  memset(env, 0, sizeof *env);
  env->local_rank = -1;
  int which = launcher_found();
  if (which == (int)CORE_ARRAY_LEN(launchers))
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "no rank in the environment: start the program with `tern run -n N -- "
                        "PROG`, or set TERN_RANK, TERN_WORLD_SIZE and TERN_STORE (torchrun's "
                        "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and the ranks of Open MPI, "
                        "MPICH and Slurm are read too)");
  const struct launcher *l = &launchers[which];
  env->source = l->name;
  if (get(l->size) == NULL)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%s is set but %s is not", l->rank, l->size);
  long size, rank;
  bool have;
  tern_status rc = number(l->size, 1, NET_MAX_RANKS, &size, &have, err);
  if (rc != TERN_OK) return rc;
  env->size = (int)size;
  rc = number(l->rank, 0, size - 1, &rank, &have, err);
  if (rc != TERN_OK) return rc;
  env->rank = (int)rank;
  rc = read_local(env, which, err);
  if (rc == TERN_OK) rc = find_store(env, which, err);
  return rc;
}

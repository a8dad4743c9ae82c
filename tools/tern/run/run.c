/* run.c: `tern run -n N [--nnodes M --node-rank K --master HOST:PORT] [--tag-output]
 * [--grace SECONDS] -- PROG ARGS`, the launcher.
 *
 * It serves the rendezvous store on 127.0.0.1 (a port the kernel picks), starts N copies of PROG
 * with TERN_RANK, TERN_WORLD_SIZE, TERN_STORE, TERN_LOCAL_RANK and TERN_LOCAL_SIZE set, and
 * watches them. It sets torchrun's variables too (RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT), so that a script written for torchrun runs unchanged; MASTER_PORT is a port of
 * its own, not the store's, since torch's env:// rendezvous serves a TCPStore there from rank 0.
 *
 * Several hosts, the way torchrun does it: one tern run per host, started by whatever the user
 * has (ssh, srun, mpirun), each with --nnodes M --node-rank K --master HOST:PORT and the same
 * -n. Node 0 serves the store at PORT on every interface, the others' ranks reach it at
 * HOST:PORT; host K's local rank r is rank K N + r of M N, and MASTER_PORT is PORT + 1. Node 0
 * stops the store only when every rank of every host has left (or the deadline, TERN_TIMEOUT).
 * A rank that dies on another host is seen by the store when its connection drops, and the
 * others' ranks fail on the store's notice, so each host's tern run ends its own.
 *
 * Each child runs in a process group of its own, so a Ctrl-C at the terminal reaches tern run
 * alone and is forwarded once (SIGINT and SIGTERM are); the group also lets
 * the ending signals reach whatever a rank started itself.
 *
 * It binds rank r to the r-th of the CPUs it may run on, counted round (--bind none turns that
 * off). With no more ranks than CPUs that is what Open MPI's mpirun does: measured in
 * bench/peers, two unbound ranks that meet a third busy process end up on one core, where every
 * exchange waits out a spin and a yield (allgather of 8 B at n = 2: 8-11 us unbound, 2-2.6 us
 * bound, load 8). With more ranks than CPUs, counting round gives every CPU the same number of
 * ranks; left to the kernel, 4 ranks on 2 CPUs were often placed 3 and 1, and calls where every
 * rank waits for every other took twice as long in such a launch (interleaved launches, shared
 * memory: allreduce of 8 B at n = 4, 16-25 us unbound, 11-12.5 us bound; at n = 8, 97-109 ->
 * 56 us; a 64 KiB broadcast at n = 4, 15-20 -> 11.5-12 us; 16 MiB allreduce 4-10% faster). The
 * ranks learn the CPU count in TERN_HOST_CPUS, since each one's own affinity mask is now a
 * single CPU; the collectives' trees count on this dealing to spread their work over the CPUs
 * (src/coll/algo/tree.c).
 *
 * When a rank exits non-zero or dies by a signal, tern run tells the store (which pushes the
 * notice to every other rank, so they fail at once instead of waiting for a dead peer), gives
 * the others --grace seconds to finish, then sends SIGTERM, then SIGKILL KILL_AFTER_S later.
 * Signals arrive through a signalfd in one poll loop with those deadlines, so nothing waits
 * without one. The exit code is the first failure's (128 + signal for a signal), or
 * 128 + the signal tern run was asked to stop with, or 0.
 */
#include "tern/cmd.h"
#include "output.h"

#include "comm/store.h"
#include "core/core.h"
#include "net/net.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sodium.h>
#include <unistd.h>

#define KILL_AFTER_S 2.0 /* from SIGTERM to SIGKILL */
#define REAP_LIMIT_S 5.0 /* from SIGKILL to giving up on a child (stuck in the kernel) */
#define MAX_RANKS 4096   /* processes on one host: far past what a machine runs usefully */

extern char **environ;

#define NOWN 16 /* the variables child_env sets */

typedef struct job {
  int n;
  int nnodes, node_rank;         /* 1 and 0 on one host */
  char master[NET_HOST_LEN + 8]; /* --master HOST:PORT; "" on one host */
  char master_host[NET_HOST_LEN];
  int master_port; /* the store's port with --master; torch's MASTER_PORT is the next one */
  int torch_port;  /* MASTER_PORT */
  run_output *out; /* --tag-output, else NULL */
  bool tag_output;
  double grace_s;
  char **argv;
  pid_t *pid; /* 0 once reaped (or never started) */
  int running;
  store_server *store;
  int sfd;
  int exit_code; /* of the first failure; -1 while there is none */
  int stop_signal;
  int phase;        /* 0 running, 1 grace, 2 SIGTERM sent, 3 SIGKILL sent */
  uint64_t next_at; /* when the phase advances */
  cpu_set_t cpus;   /* tern run's own affinity mask */
  int ncpus;
  bool bind; /* rank r on the r-th CPU of cpus, counted round */
} job;

static void usage(FILE *out) {
  fprintf(out, "usage: tern run -n N [--nnodes M --node-rank K --master HOST:PORT] [--tag-output]\n"
               "                [--grace SECONDS] [--bind core|none] -- PROG [ARGS...]\n\n"
               "Starts N ranks of PROG on this host around a rendezvous store, and ends them all\n"
               "when one fails. Sets TERN_* and torchrun's variables (RANK, LOCAL_RANK,\n"
               "WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...).\n"
               "Several hosts: run it on each with --nnodes M --node-rank K --master HOST:PORT;\n"
               "node 0 serves the store at PORT, HOST is its address the others reach; torch's\n"
               "MASTER_PORT is PORT + 1. --tag-output: each line of a rank's output starts with\n"
               "[1,RANK]<stdout>: or [1,RANK]<stderr>: (mpirun's). --grace: seconds the others\n"
               "get to finish after a failure before\n"
               "SIGTERM (default 5; SIGKILL follows 2 s later). --bind core (default): rank r\n"
               "runs only on the r-th CPU it may use, counted round when there are more ranks\n"
               "than CPUs. Exits with the first failing rank's code (128 + signal for a signal),\n"
               "0 when every rank exits 0.\n");
}

static int parse_args(job *j, int argc, char **argv) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    long n;
    if (strcmp(a, "-n") == 0 && i + 1 < argc) {
      if (!core_parse_int(argv[++i], 1, MAX_RANKS, &n))
        return cmd_usage_error("run", "-n '%s': want a number of ranks from 1 to %d", argv[i],
                               MAX_RANKS);
      j->n = (int)n;
    } else if (strcmp(a, "--bind") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "core") != 0 && strcmp(v, "none") != 0)
        return cmd_usage_error("run", "--bind '%s': want core or none", v);
      j->bind = strcmp(v, "core") == 0;
    } else if (strcmp(a, "--nnodes") == 0 && i + 1 < argc) {
      if (!core_parse_int(argv[++i], 1, MAX_RANKS, &n))
        return cmd_usage_error("run", "--nnodes '%s': want a number of hosts from 1 to %d", argv[i],
                               MAX_RANKS);
      j->nnodes = (int)n;
    } else if (strcmp(a, "--node-rank") == 0 && i + 1 < argc) {
      if (!core_parse_int(argv[++i], 0, MAX_RANKS - 1, &n))
        return cmd_usage_error("run", "--node-rank '%s': want a number from 0", argv[i]);
      j->node_rank = (int)n;
    } else if (strcmp(a, "--master") == 0 && i + 1 < argc) {
      core_err err = {0};
      const char *v = argv[++i];
      if (strlen(v) >= sizeof j->master || net_parse_addr(v, j->master_host, sizeof j->master_host,
                                                          &j->master_port, false, &err) != TERN_OK)
        return cmd_usage_error("run", "--master '%s': %s", v, err.msg[0] ? err.msg : "too long");
      if (j->master_port == 65535)
        return cmd_usage_error("run", "--master: port 65535 leaves no MASTER_PORT for torch");
      snprintf(j->master, sizeof j->master, "%s", v);
    } else if (strcmp(a, "--tag-output") == 0) {
      j->tag_output = true;
    } else if (strcmp(a, "--grace") == 0 && i + 1 < argc) {
      if (!core_parse_seconds(argv[++i], &j->grace_s))
        return cmd_usage_error("run", "--grace '%s': want seconds", argv[i]);
    } else {
      return cmd_usage_error("run", "unknown option '%s' (tern run --help)", a);
    }
  }
  if (j->n == 0) return cmd_usage_error("run", "-n N is missing (tern run --help)");
  if (j->node_rank >= j->nnodes)
    return cmd_usage_error("run", "--node-rank %d: want 0 to %d (--nnodes %d)", j->node_rank,
                           j->nnodes - 1, j->nnodes);
  if (j->nnodes > 1 && !j->master[0])
    return cmd_usage_error("run", "--nnodes %d needs --master HOST:PORT (node 0's address)",
                           j->nnodes);
  if ((long)j->nnodes * j->n > NET_MAX_RANKS)
    return cmd_usage_error("run", "%d hosts of %d ranks: more than %d ranks", j->nnodes, j->n,
                           NET_MAX_RANKS);
  if (i >= argc) return cmd_usage_error("run", "no program to run after the options");
  j->argv = argv + i;
  return -1; /* go on */
}

/* The variables child_env sets, in its order; TORCHELASTIC_USE_AGENT_STORE too, which it never
 * sets: left over from a torchrun around tern run, it would move tern's store port. */
static const char *const own_names[NOWN + 1] = {"TERN_RANK",
                                                "TERN_WORLD_SIZE",
                                                "TERN_STORE",
                                                "TERN_LOCAL_RANK",
                                                "TERN_LOCAL_SIZE",
                                                "TERN_HOST_CPUS",
                                                "RANK",
                                                "LOCAL_RANK",
                                                "WORLD_SIZE",
                                                "LOCAL_WORLD_SIZE",
                                                "GROUP_RANK",
                                                "GROUP_WORLD_SIZE",
                                                "ROLE_RANK",
                                                "ROLE_WORLD_SIZE",
                                                "MASTER_ADDR",
                                                "MASTER_PORT",
                                                "TORCHELASTIC_USE_AGENT_STORE"};

static bool is_ours(const char *entry) {
  for (size_t i = 0; i < CORE_ARRAY_LEN(own_names); i++) {
    size_t len = strlen(own_names[i]);
    if (strncmp(entry, own_names[i], len) == 0 && entry[len] == '=') return true;
  }
  return false;
}

/* The environment of local rank r: ours, then everything else but stale copies of ours. */
static char **child_env(const job *j, int r, char own[NOWN][NET_HOST_LEN + 32]) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + NOWN + 1, sizeof *env);
  if (env == NULL) return NULL;
  int world = j->nnodes * j->n, rank = j->node_rank * j->n + r;
  const char *store = j->master[0] ? j->master : store_server_addr(j->store);
  const char *master = j->master[0] ? j->master_host : "127.0.0.1";
  int values[NOWN] = {rank, world,        0,         r,    j->n,  j->ncpus, rank,         r, world,
                      j->n, j->node_rank, j->nnodes, rank, world, 0,        j->torch_port};
  for (int i = 0; i < NOWN; i++) {
    const char *text = i == 2 ? store : i == 14 ? master : NULL;
    if (text)
      snprintf(own[i], sizeof own[i], "%s=%s", own_names[i], text);
    else
      snprintf(own[i], sizeof own[i], "%s=%d", own_names[i], values[i]);
    env[i] = own[i];
  }
  size_t k = NOWN;
  for (size_t i = 0; i < n; i++)
    if (!is_ours(environ[i])) env[k++] = environ[i];
  return env;
}

static void describe(int status, char *out, size_t cap) {
  if (WIFSIGNALED(status))
    snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(out, cap, "exited with code %d", WEXITSTATUS(status));
}

static void signal_all(job *j, int sig) {
  for (int r = 0; r < j->n; r++)
    if (j->pid[r] > 0) kill(-j->pid[r], sig);
}

/* A rank failed (or could not start): the first failure sets the code and starts the end. */
static void failed(job *j, int r, int code, const char *why) {
  int rank = j->node_rank * j->n + r;
  if (j->phase == 0 && j->store) store_server_report_lost(j->store, rank, why);
  if (j->exit_code >= 0) return;
  j->exit_code = code;
  fprintf(stderr, "tern run: rank %d %s; ending the other ranks (--grace %.1f s)\n", rank, why,
          j->grace_s);
  if (j->phase == 0) {
    j->phase = 1;
    j->next_at = core_deadline_after(j->grace_s);
  }
}

/* The r-th CPU of tern run's mask, counted round, for rank r's mask alone (binding implies the
 * mask was read, so ncpus counts it). */
static void rank_cpus(const job *j, int r, cpu_set_t *one) {
  CPU_ZERO(one);
  int at = r % j->ncpus;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &j->cpus) && seen++ == at) {
      CPU_SET(cpu, one);
      return;
    }
}

static int spawn_rank(job *j, int r) {
  char own[NOWN][NET_HOST_LEN + 32];
  char **env = child_env(j, r, own);
  if (env == NULL) return ENOMEM;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  sigaddset(&dflt, SIGINT);
  sigaddset(&dflt, SIGTERM);
  sigaddset(&dflt, SIGCHLD);
  sigaddset(&dflt, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &dflt);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  /* ranks run in groups of their own: a terminal would stop one that reads it (SIGTTIN), so
   * only rank 0 gets stdin, and only when it is not a terminal */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (r > 0 || j->node_rank > 0 || isatty(STDIN_FILENO))
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  int e = j->out ? run_output_attach(j->out, r, &fa) : 0;
  /* posix_spawn has no affinity attribute: the child inherits this thread's mask, so it is
   * narrowed for the spawn and restored after */
  cpu_set_t one;
  if (j->bind) rank_cpus(j, r, &one);
  if (j->bind) sched_setaffinity(0, sizeof one, &one);
  if (e == 0) e = posix_spawnp(&j->pid[r], j->argv[0], &fa, &attr, j->argv, env);
  if (j->bind) sched_setaffinity(0, sizeof j->cpus, &j->cpus);
  if (j->out) run_output_spawned(j->out, r);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  free(env);
  if (e != 0)
    j->pid[r] = 0;
  else
    j->running++;
  return e;
}

static void reap(job *j) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    int r = 0;
    while (r < j->n && j->pid[r] != pid)
      r++;
    if (r == j->n) continue;
    j->pid[r] = 0;
    j->running--;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) continue;
    char why[96];
    describe(status, why, sizeof why);
    failed(j, r, WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status), why);
  }
}

static void on_signal(job *j) {
  struct signalfd_siginfo si;
  while (read(j->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD) continue; /* reap() runs every turn */
    fprintf(stderr, "tern run: forwarding %s to the ranks\n", strsignal(sig));
    signal_all(j, sig);
    if (j->stop_signal == 0) j->stop_signal = sig;
    if (j->phase == 0) { /* they were asked to stop: the same clock as after a failure */
      j->phase = 1;
      j->next_at = core_deadline_after(j->grace_s);
    }
  }
}

/* The grace period, SIGTERM, SIGKILL, and at last giving up, each at its time. */
static void advance(job *j) {
  if (j->phase == 0 || core_now_ns() < j->next_at) return;
  if (j->phase == 1) {
    fprintf(stderr, "tern run: %d rank(s) still running after the grace period: SIGTERM\n",
            j->running);
    signal_all(j, SIGTERM);
    j->next_at = core_deadline_after(KILL_AFTER_S);
  } else if (j->phase == 2) {
    fprintf(stderr, "tern run: %d rank(s) still running %.0f s after SIGTERM: SIGKILL\n",
            j->running, KILL_AFTER_S);
    signal_all(j, SIGKILL);
    j->next_at = core_deadline_after(REAP_LIMIT_S);
  } else {
    fprintf(stderr, "tern run: %d rank(s) survive SIGKILL (stuck in the kernel); leaving them\n",
            j->running);
    j->running = 0;
  }
  j->phase++;
}

static int supervise(job *j) {
  while (j->running > 0) {
    reap(j);
    advance(j);
    if (j->running == 0) break;
    struct pollfd p[1 + 2 * MAX_RANKS];
    p[0] = (struct pollfd){.fd = j->sfd, .events = POLLIN};
    int nout = j->out ? run_output_pollfds(j->out, p + 1, 2 * MAX_RANKS) : 0;
    int ms = j->phase == 0 ? 1000 : core_ms_left(j->next_at, 1000);
    if (poll(p, (nfds_t)(1 + nout), ms) > 0) {
      if (p[0].revents) on_signal(j);
      if (nout) run_output_pump(j->out, p + 1, nout);
    }
  }
  if (j->exit_code >= 0) return j->exit_code;
  return j->stop_signal ? 128 + j->stop_signal : 0;
}

static int start_all(job *j) {
  for (int r = 0; r < j->n; r++) {
    int e = spawn_rank(j, r);
    if (e == 0) continue;
    char why[160];
    snprintf(why, sizeof why, "could not be started: %s: %s", j->argv[0], strerror(e));
    failed(j, r, e == ENOENT ? 127 : 126, why);
    break;
  }
  return supervise(j);
}

/* A port the kernel has free on this host now, for MASTER_PORT on one host (as torchrun's
 * standalone mode picks one); 0 when none could be had. */
static int free_port(void) {
  int fd, port = 0;
  core_err ignored = {0};
  if (net_listen("127.0.0.1", 0, &fd, &port, &ignored) != TERN_OK) return 0;
  close(fd);
  return port;
}

/* The store: on one host, served here on loopback; with --master, served by node 0 on every
 * interface at the master's port, and only reached by the others' ranks. */
static tern_status serve_store(job *j, const core_config *cfg, core_err *err) {
  j->torch_port = j->master[0] ? j->master_port + 1 : free_port();
  if (j->master[0] && j->node_rank > 0) return TERN_OK;
  uint8_t run_id[16];
  randombytes_buf(run_id, sizeof run_id); /* core_config_get() initialised libsodium */
  const char *host = j->master[0] ? "0.0.0.0" : "127.0.0.1";
  return store_server_start(&j->store, host, j->master[0] ? j->master_port : 0, j->nnodes * j->n,
                            run_id, cfg->have_key ? cfg->key : NULL, err);
}

/* Node 0 of several: the other hosts' ranks may still be at work or saying goodbye. */
static void wait_other_hosts(job *j, const core_config *cfg) {
  if (j->store == NULL || j->nnodes == 1 || j->exit_code >= 0 || j->stop_signal) return;
  uint64_t deadline = core_deadline_after(cfg->timeout_s);
  while (!store_server_job_over(j->store, 200))
    if (core_now_ns() >= deadline) {
      fprintf(stderr, "tern run: the other hosts' ranks have not all left after %.0f s\n",
              cfg->timeout_s);
      return;
    }
}

int cmd_run(int argc, char **argv) {
  job j = {.grace_s = 5, .sfd = -1, .exit_code = -1, .bind = true, .nnodes = 1};
  int rc = parse_args(&j, argc, argv);
  if (rc >= 0) return rc;
  if (sched_getaffinity(0, sizeof j.cpus, &j.cpus) == 0) {
    j.ncpus = CPU_COUNT(&j.cpus);
  } else {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    j.ncpus = n > 0 ? (int)n : 1;
  }
  j.bind = j.bind && CPU_COUNT(&j.cpus) > 0;
  const core_config *cfg = core_config_get();
  if (cfg->config_error[0]) return cmd_usage_error("run", "%s", cfg->config_error);
  rc = 1;
  /* blocked before the store's thread starts, so that it inherits the mask and every one of
   * these signals reaches the signalfd; an ignored signal never does, and a shell starts
   * background jobs with SIGINT ignored, so the dispositions are reset first */
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
  j.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  j.pid = calloc((size_t)j.n, sizeof *j.pid);
  if (j.tag_output) j.out = run_output_new(j.n, j.node_rank * j.n);
  if (j.sfd < 0 || j.pid == NULL || (j.tag_output && j.out == NULL)) {
    fprintf(stderr, "tern run: %s\n", strerror(errno));
    goto fail;
  }
  core_err err = {0};
  if (serve_store(&j, cfg, &err) != TERN_OK) {
    fprintf(stderr, "tern run: cannot serve the store: %s\n", err.msg);
    goto fail;
  }
  CORE_INFO("tern run: %d ranks of %s (host %d of %d), store at %s", j.n, j.argv[0], j.node_rank,
            j.nnodes, j.master[0] ? j.master : store_server_addr(j.store));
  rc = start_all(&j);
  run_output_finish(j.out, 1000);
  j.out = NULL;
  wait_other_hosts(&j, cfg);
fail:
  run_output_finish(j.out, 0);
  store_server_stop(j.store);
  if (j.sfd >= 0) close(j.sfd);
  free(j.pid);
  return rc;
}

/* coll_run.c: sim_coll_run: one simulation in a child process, its results through a pipe.
 *
 * SimGrid keeps one engine per process, which cannot be started twice and calls abort() on what
 * it cannot model; the library must do neither to its caller. So each call writes the platform
 * to a private temporary directory, forks, and the child runs the simulation (coll_actor.c)
 * with its stderr in a log file there, writes a header (its status and message) and one record
 * per job to the pipe, and leaves with _exit. The parent reads with a deadline, kills the child
 * when it passes, and when the child dies without its results, quotes the end of its log; the
 * child dies with the parent (PR_SET_PDEATHSIG), so that no simulation outlives its caller.
 */
#include "sim/coll.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct run_header {
  int32_t status;
  char msg[CORE_ERR_LEN];
} run_header;

typedef struct run_record {
  int32_t status;
  double time, bound;
  uint64_t messages, steady;
} run_record;

typedef struct run_files {
  char dir[256], xml[300], log[300];
  bool made; /* dir exists */
} run_files;

static bool write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, len -= (size_t)k;
  }
  return true;
}

static tern_status check_jobs(const sim_coll_job *jobs, size_t njobs, core_err *err) {
  for (size_t j = 0; j < njobs; j++) {
    const sim_coll_job *job = &jobs[j];
    if ((unsigned)job->kind >= COLL_NUM_KINDS || job->algo == COLL_ALGO_AUTO ||
        (unsigned)job->algo >= COLL_NUM_ALGOS || job->elem_size < 1 || job->elem_size > 16)
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "job %zu: kind %d, algorithm %d, element "
                          "size %zu is not a simulation",
                          j, (int)job->kind, (int)job->algo, job->elem_size);
  }
  return TERN_OK;
}

static tern_status make_files(const sim_platform *p, run_files *f, core_err *err) {
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/tern-sim-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(f->dir) == NULL) return core_err_errno(err, errno, "mkdtemp %s", f->dir);
  f->made = true;
  snprintf(f->xml, sizeof f->xml, "%s/platform.xml", f->dir);
  snprintf(f->log, sizeof f->log, "%s/simgrid.log", f->dir);
  FILE *out = fopen(f->xml, "w");
  if (out == NULL) return core_err_errno(err, errno, "creating %s", f->xml);
  tern_status rc = sim_platform_write_xml(p, out, err);
  if (fclose(out) != 0 && rc == TERN_OK) rc = core_err_errno(err, errno, "writing %s", f->xml);
  return rc;
}

static void remove_files(const run_files *f) {
  unlink(f->xml);
  unlink(f->log);
  rmdir(f->dir);
}

static void child(const sim_platform *p, sim_coll_job *jobs, size_t njobs, const run_files *f,
                  int fd, pid_t parent) {
  /* A simulation nobody waits for any more ends with its caller. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
  int log = open(f->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (log >= 0) dup2(log, STDERR_FILENO);
  core_err err = {0};
  run_header h = {.status = sim_coll_simulate(p, jobs, njobs, f->xml, &err)};
  memcpy(h.msg, err.msg, sizeof h.msg);
  bool ok = write_all(fd, &h, sizeof h);
  for (size_t j = 0; ok && j < njobs; j++) {
    run_record r = {.status = jobs[j].status,
                    .time = jobs[j].time,
                    .bound = jobs[j].bound,
                    .messages = jobs[j].messages,
                    .steady = jobs[j].steady};
    ok = write_all(fd, &r, sizeof r);
  }
  _exit(ok ? 0 : 1);
}

/* Reads len bytes by the deadline: TERN_OK, TERN_ERR_TIMEOUT, or TERN_ERR_PEER_LOST at EOF. */
static tern_status read_all(int fd, void *buf, size_t len, uint64_t deadline) {
  char *p = buf;
  while (len > 0) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ms = core_ms_left(deadline, 1000);
    if (ms == 0 && core_now_ns() >= deadline) return TERN_ERR_TIMEOUT;
    int k = poll(&pfd, 1, ms);
    if (k < 0 && errno != EINTR) return TERN_ERR_SYSTEM;
    if (k <= 0) continue;
    ssize_t got = read(fd, p, len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return TERN_ERR_PEER_LOST;
    p += got, len -= (size_t)got;
  }
  return TERN_OK;
}

/* The last line of the child's log, for an error message. */
static void log_tail(const char *path, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  char line[400];
  while (fgets(line, sizeof line, f))
    if (line[0] != '\n' && strncmp(line, "  ->", 4) != 0 && strncmp(line, "Backtrace", 9) != 0)
      snprintf(out, len, "%s", line);
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

static tern_status collect(pid_t pid, int fd, sim_coll_job *jobs, size_t njobs, double deadline_s,
                           const run_files *f, core_err *err) {
  uint64_t deadline = core_deadline_after(deadline_s);
  run_header h;
  tern_status rc = read_all(fd, &h, sizeof h, deadline);
  for (size_t j = 0; rc == TERN_OK && j < njobs; j++) {
    run_record r;
    if ((rc = read_all(fd, &r, sizeof r, deadline)) != TERN_OK) break;
    jobs[j].status = (tern_status)r.status, jobs[j].time = r.time, jobs[j].bound = r.bound;
    jobs[j].messages = r.messages, jobs[j].steady = r.steady;
  }
  if (rc == TERN_ERR_TIMEOUT) kill(pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (rc == TERN_ERR_TIMEOUT)
    return core_err_set(err, rc, "the simulation took more than %g s of wall time", deadline_s);
  if (rc != TERN_OK) {
    char tail[400];
    log_tail(f->log, tail, sizeof tail);
    return core_err_set(err, TERN_ERR_SYSTEM, "the simulator died (%s %d) without its results%s%s",
                        WIFSIGNALED(ws) ? "signal" : "exit code",
                        WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws), tail[0] ? ": " : "",
                        tail);
  }
  h.msg[sizeof h.msg - 1] = '\0';
  if (h.status != TERN_OK) return core_err_set(err, (tern_status)h.status, "%s", h.msg);
  return TERN_OK;
}

tern_status sim_coll_run(const sim_platform *p, sim_coll_job *jobs, size_t njobs, double deadline_s,
                         core_err *err) {
  run_files f = {0};
  int fds[2] = {-1, -1};
  for (size_t j = 0; j < njobs; j++)
    jobs[j].status = TERN_OK, jobs[j].time = jobs[j].bound = 0, jobs[j].messages = 0,
    jobs[j].steady = 0;
  tern_status rc = check_jobs(jobs, njobs, err);
  if (rc != TERN_OK || (rc = make_files(p, &f, err)) != TERN_OK) goto fail;
  if (pipe(fds) != 0) {
    rc = core_err_errno(err, errno, "pipe");
    goto fail;
  }
  fflush(NULL); /* the child must not write the parent's buffered output again */
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) {
    rc = core_err_errno(err, errno, "fork");
    goto fail;
  }
  if (pid == 0) {
    close(fds[0]);
    child(p, jobs, njobs, &f, fds[1], parent);
  }
  close(fds[1]);
  fds[1] = -1;
  rc = collect(pid, fds[0], jobs, njobs, deadline_s, &f, err);
fail:
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  if (f.made) remove_files(&f);
  return rc;
}

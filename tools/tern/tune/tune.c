/* tune.c: `tern tune`: measures the host it runs on, or the hosts the job it was launched in
 * spans, and writes the tuning file the selector uses.
 *
 *   tern tune [--budget SECONDS] [--ns 2,4] [--transports shm,tcp] [--max-bytes 16M] [-o FILE]
 *             [--save-rows FILE]
 *   tern tune --from ROWS [--from ROWS ...] [-o FILE]
 *   tern run ... -- tern tune [--budget SECONDS] [--max-bytes 16M] [-o FILE] [--save-rows FILE]
 *
 * --save-rows keeps what was measured (tune/rows.c); --from fits and writes a tuning file from
 * such files again without measuring, merging them (sweeps of other rank counts, other days).
 *
 * For each (transport, rank count) it runs one worker job under `tern run` (tune/worker.c) with
 * an equal share of the budget, then fits and scores the predictors (tune/fit.c) and writes the
 * file (default: TERN_TUNING, else ~/.cache/tern/tuning). The budget covers the measurements, as
 * a deadline each worker keeps (dropping its largest sizes if it must); start-up and fitting add
 * a few seconds.
 *
 * Launched as one rank of a job (a launcher's rank variable set: `tern run --nnodes`, torchrun,
 * mpirun), it is that job's worker instead: every rank measures the job's own placement, which
 * may span hosts (rows HxP, hier among the algorithms), with the whole budget, and rank 0 fits
 * and writes the file on its host. That is the only way to measure across hosts: `tern tune`
 * alone knows no other host to start ranks on.
 */
#include "tern/cmd.h"
#include "tune.h"

#include "comm/env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct plan {
  double budget;
  int ns[16], nn;
  coll_transport_kind trs[COLL_NUM_TR];
  int ntr;
  char max_bytes[32];
  char out[4096];
  const char *save_rows;
  const char *from[16];
  int nfrom;
  const char *placement; /* --ns or --transports, given: the placement a job cannot choose */
} plan;

static int usage(void) {
  fprintf(stderr, "usage: tern tune [--budget SECONDS] [--ns 2,4] [--transports shm,tcp]\n"
                  "                 [--max-bytes 16M] [-o FILE] [--save-rows FILE]\n"
                  "       tern tune --from ROWS [--from ROWS ...] [-o FILE]\n");
  return 2;
}

static bool parse_list(const char *s, plan *p, bool ns) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long v;
    if (ns) {
      if (!core_parse_int(t, 1, 1024, &v) || p->nn == 16) return false;
      p->ns[p->nn++] = (int)v;
    } else if (!strcmp(t, "shm") || !strcmp(t, "tcp")) {
      if (p->ntr == COLL_NUM_TR) return false;
      p->trs[p->ntr++] = !strcmp(t, "tcp") ? COLL_TR_TCP : COLL_TR_SHM;
    } else {
      return false;
    }
  }
  return true;
}

static int parse(int argc, char **argv, plan *p) {
  *p = (plan){.budget = 120, .ns = {2, 4}, .nn = 2, .trs = {COLL_TR_SHM, COLL_TR_TCP}, .ntr = 2};
  snprintf(p->max_bytes, sizeof p->max_bytes, "16M");
  bool ns_given = false, tr_given = false;
  const char *measuring = NULL;       /* an option that only a measuring run takes */
  for (int i = 1; i < argc; i += 2) { /* every option takes one value */
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    size_t bytes;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(), 1;
    if (v == NULL) return usage();
    if (strcmp(argv[i], "-o") && strcmp(argv[i], "--from")) measuring = argv[i];
    if (!strcmp(argv[i], "--ns") || !strcmp(argv[i], "--transports")) p->placement = argv[i];
    if (!strcmp(argv[i], "--budget")) {
      if (!core_parse_seconds(v, &p->budget) || p->budget < 1)
        return cmd_usage_error("tune", "--budget '%s' is not a number of seconds >= 1", v);
    } else if (!strcmp(argv[i], "--ns")) {
      if (!ns_given) p->nn = 0, ns_given = true;
      if (!parse_list(v, p, true)) return cmd_usage_error("tune", "--ns '%s': want 2,4,...", v);
    } else if (!strcmp(argv[i], "--transports")) {
      if (!tr_given) p->ntr = 0, tr_given = true;
      if (!parse_list(v, p, false))
        return cmd_usage_error("tune", "--transports '%s': want shm,tcp", v);
    } else if (!strcmp(argv[i], "--max-bytes")) {
      if (!core_parse_size(v, &bytes) || bytes < 8)
        return cmd_usage_error("tune", "--max-bytes '%s'", v);
      snprintf(p->max_bytes, sizeof p->max_bytes, "%s", v);
    } else if (!strcmp(argv[i], "-o")) {
      snprintf(p->out, sizeof p->out, "%s", v);
    } else if (!strcmp(argv[i], "--save-rows")) {
      p->save_rows = v;
    } else if (!strcmp(argv[i], "--from")) {
      if (p->nfrom == (int)CORE_ARRAY_LEN(p->from))
        return cmd_usage_error("tune", "--from given more than %d times", p->nfrom);
      p->from[p->nfrom++] = v;
    } else {
      return usage();
    }
  }
  if (p->nfrom > 0 && measuring)
    return cmd_usage_error("tune", "%s with --from: --from fits saved rows and measures nothing",
                           measuring);
  if (p->nfrom == 0 && p->placement && comm_env_launched())
    return cmd_usage_error("tune", "%s in a job: the job's own ranks and hosts are measured",
                           p->placement);
  if (!p->out[0]) {
    const char *given = getenv("TERN_TUNING");
    if (given && *given)
      snprintf(p->out, sizeof p->out, "%s", given);
    else
      coll_tuning_default_path(p->out, sizeof p->out);
  }
  return 0;
}

/* mkdir -p of path's directory. */
static void make_parent(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *s = dir + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    mkdir(dir, 0755);
    *s = '/';
  }
}

/* One worker job: tern run -n N -- tern tune --worker ..., under TERN_TRANSPORT=tr. */
static int run_cell(const plan *p, coll_transport_kind tr, int n, double seconds, const char *csv) {
  char nbuf[16], secs[32];
  snprintf(nbuf, sizeof nbuf, "%d", n);
  snprintf(secs, sizeof secs, "%.3f", seconds);
  char *args[] = {
      "/proc/self/exe", "run",       "-n",        nbuf, "--",          "/proc/self/exe",
      "tune",           "--worker",  "--seconds", secs, "--max-bytes", (char *)p->max_bytes,
      "--csv",          (char *)csv, NULL};
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  args[0] = args[5] = self;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    setenv("TERN_TRANSPORT", tune_tr_names[tr], 1);
    unsetenv("TERN_ALGO");
    unsetenv("TERN_TUNING");
    execv(self, args);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* The fit and the file, unless rc says an earlier step failed; frees rows. */
static int fit_and_write(const plan *p, tune_rows *rows, int rc) {
  if (rc == 0) {
    make_parent(p->out);
    rc = tune_fit_and_write(rows, p->out, stdout);
  } else {
    fprintf(stderr, "tern tune: nothing written\n");
  }
  tune_rows_free(rows);
  return rc;
}

/* Launched as one rank of a job: the sweep of the job's placement, the whole budget its own;
 * rank 0 fits and writes. TERN_TUNING names the file to write, not one to read at start-up (it
 * may not exist yet), and the algorithms are forced one by one, not by TERN_ALGO. */
static int tune_job(const plan *p) {
  size_t max_bytes = 0;
  core_parse_size(p->max_bytes, &max_bytes); /* checked by parse */
  unsetenv("TERN_TUNING");
  unsetenv("TERN_ALGO");
  core_config_reload();
  tune_rows rows = {0};
  bool rank0, ok = tune_sweep(p->budget, max_bytes, &rows, &rank0);
  if (!rank0) {
    tune_rows_free(&rows);
    return ok ? 0 : 1;
  }
  int rc = ok ? 0 : 1;
  if (rc == 0 && p->save_rows && !tune_write_rows(&rows, p->save_rows)) rc = 1;
  return fit_and_write(p, &rows, rc);
}

int cmd_tune(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--worker")) return tune_worker(argc, argv);
  plan p;
  int rc = parse(argc, argv, &p);
  if (rc) return rc == 1 ? 0 : rc;
  tune_rows rows = {0};
  if (p.nfrom > 0) { /* fit saved rows again, measuring nothing */
    for (int i = 0; rc == 0 && i < p.nfrom; i++)
      if (!tune_read_rows(p.from[i], &rows)) rc = 1;
    if (rc == 0 && rows.len == 0) fprintf(stderr, "tern tune: no rows in --from\n"), rc = 1;
    return fit_and_write(&p, &rows, rc);
  }
  if (comm_env_launched()) return tune_job(&p);
  int cells = p.nn * p.ntr;
  double share = p.budget / cells;
  printf("tern tune: %d runs (%d rank counts x %d transports), %.0f s of measurement in all "
         "(%.0f s each), sizes 8 B to %s\n",
         cells, p.nn, p.ntr, p.budget, share, p.max_bytes);
  fflush(stdout);
  char dir[] = "/tmp/tern-tune-XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;
  for (int t = 0; t < p.ntr && rc == 0; t++)
    for (int i = 0; i < p.nn && rc == 0; i++) {
      char csv[4200];
      snprintf(csv, sizeof csv, "%s/%s-%d.csv", dir, tune_tr_names[p.trs[t]], p.ns[i]);
      printf("%s, %d ranks:\n", tune_tr_names[p.trs[t]], p.ns[i]);
      fflush(stdout);
      rc = run_cell(&p, p.trs[t], p.ns[i], share, csv);
      if (rc == 0 && !tune_read_rows(csv, &rows)) rc = 1;
      unlink(csv);
    }
  rmdir(dir);
  if (rc != 0) fprintf(stderr, "tern tune: a measurement run failed (exit %d)\n", rc);
  if (rc == 0 && p.save_rows && !tune_write_rows(&rows, p.save_rows)) rc = 1;
  return fit_and_write(&p, &rows, rc);
}

/* pipe/plan.c: one job's pipeline out of a plan JSON, the file `tern plan -o` writes
 * (src/plan/plan_json.c): jobs[].name, and jobs[].pipeline with microbatches, iteration_s,
 * stages[] {fwd_s, bwd_s} and hops[] {bytes, bandwidth_Bps, latency_s, transfer_s}. Every figure
 * is required and checked against physical limits, and a refusal names the file and the field:
 * the processes this job becomes sleep and send what these numbers say. */
#include "pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct reader {
  const char *path;
  char *why;
  size_t cap;
} reader;

static int refuse(const reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(const reader *r, const char *fmt, ...) {
  int n = snprintf(r->why, r->cap, "%s: ", r->path);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < r->cap) vsnprintf(r->why + n, r->cap - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* A number field of obj at `where`, in [lo, hi] (lo excluded when open_lo). */
static int number(const reader *r, const json_t *obj, const char *where, const char *key, double lo,
                  double hi, bool open_lo, double *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v) return refuse(r, "%s.%s: missing (is this a plan from `tern plan -o`?)", where, key);
  if (!json_is_number(v)) return refuse(r, "%s.%s: not a number", where, key);
  double x = json_number_value(v);
  if (!isfinite(x) || x < lo || x > hi || (open_lo && x <= lo))
    return refuse(r, "%s.%s: %g is out of range: valid is %s%g to %g", where, key, x,
                  open_lo ? "above " : "", lo, hi);
  *out = x;
  return 0;
}

static const json_t *array(const reader *r, const json_t *obj, const char *where, const char *key) {
  const json_t *v = json_object_get(obj, key);
  if (!v)
    refuse(r, "%s.%s: missing (is this a plan from `tern plan -o`?)", where, key);
  else if (!json_is_array(v))
    refuse(r, "%s.%s: not an array", where, key);
  return json_is_array(v) ? v : NULL;
}

static int read_stages(const reader *r, const json_t *pipe, const char *where, pipe_job *job) {
  const json_t *stages = array(r, pipe, where, "stages"), *hops = array(r, pipe, where, "hops");
  if (!stages || !hops) return -1;
  size_t n = json_array_size(stages);
  if (n < 1 || n > PIPE_MAX_STAGES)
    return refuse(r, "%s.stages: %zu stages: valid is 1 to %d (one process each)", where, n,
                  PIPE_MAX_STAGES);
  if (json_array_size(hops) != n - 1)
    return refuse(r, "%s.hops: %zu hops for %zu stages: want %zu", where, json_array_size(hops), n,
                  n - 1);
  job->stages = (int)n;
  char at[96];
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(stages, i);
    snprintf(at, sizeof at, "%s.stages[%zu]", where, i);
    if (!json_is_object(s)) return refuse(r, "%s: not an object", at);
    if (number(r, s, at, "fwd_s", 0, 86400, true, &job->stage[i].fwd_s) ||
        number(r, s, at, "bwd_s", 0, 86400, true, &job->stage[i].bwd_s))
      return -1;
  }
  for (size_t i = 0; i + 1 < n; i++) {
    const json_t *h = json_array_get(hops, i);
    pipe_hop *p = &job->hop[i];
    snprintf(at, sizeof at, "%s.hops[%zu]", where, i);
    if (!json_is_object(h)) return refuse(r, "%s: not an object", at);
    /* bytes: one activation of up to 1 TB; bandwidth: 1 kB/s to 100 Tbit/s; latency: 10 s */
    if (number(r, h, at, "bytes", 0, 1e12, true, &p->bytes) ||
        number(r, h, at, "bandwidth_Bps", 1e3, 1.25e13, false, &p->bandwidth_Bps) ||
        number(r, h, at, "latency_s", 0, 10, false, &p->latency_s) ||
        number(r, h, at, "transfer_s", 0, 86400, false, &p->transfer_s))
      return -1;
  }
  return 0;
}

static int read_job(const reader *r, const json_t *j, size_t i, pipe_job *job) {
  char where[64];
  snprintf(where, sizeof where, "jobs[%zu].pipeline", i);
  const json_t *pipe = json_object_get(j, "pipeline");
  if (!json_is_object(pipe))
    return refuse(r, "%s: %s (is this a plan from `tern plan -o`?)", where,
                  pipe ? "not an object" : "missing");
  double m;
  if (number(r, pipe, where, "microbatches", 1, 100000, false, &m) ||
      number(r, pipe, where, "iteration_s", 0, 1e9, true, &job->iteration_s))
    return -1;
  if (m != floor(m)) return refuse(r, "%s.microbatches: %g is not a whole number", where, m);
  job->microbatches = (int)m;
  return read_stages(r, pipe, where, job);
}

/* The job named `name`, or a refusal naming the jobs there are. */
static int find_job(const reader *r, const json_t *root, const char *name, pipe_job *job) {
  const json_t *jobs = json_is_object(root) ? array(r, root, "plan", "jobs") : NULL;
  if (!json_is_object(root)) return refuse(r, "not a plan: the top level is not an object");
  if (!jobs) return -1;
  char names[512] = "";
  size_t used = 0;
  for (size_t i = 0; i < json_array_size(jobs); i++) {
    const json_t *j = json_array_get(jobs, i);
    const char *n = json_string_value(json_object_get(j, "name"));
    if (!n) return refuse(r, "jobs[%zu].name: missing or not a string", i);
    if (strcmp(n, name) == 0) {
      snprintf(job->name, sizeof job->name, "%s", n);
      return read_job(r, j, i, job);
    }
    if (used < sizeof names) {
      int k = snprintf(names + used, sizeof names - used, "%s'%s'", i ? ", " : "", n);
      used += k > 0 ? (size_t)k : 0;
    }
  }
  if (json_array_size(jobs) == 0) return refuse(r, "no job '%s': the plan has no jobs", name);
  return refuse(r, "no job '%s'; the jobs here are %s", name, names);
}

int pipe_plan_read(const char *path, const char *name, pipe_job *job, char *why, size_t cap) {
  reader r = {path, why, cap};
  memset(job, 0, sizeof *job);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block us */
  if (fd < 0) return refuse(&r, "cannot open: %s", strerror(errno));
  struct stat sb = {0};
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return refuse(&r, "not a regular file%s", S_ISDIR(sb.st_mode) ? " (a directory)" : "");
  }
  json_error_t jerr;
  json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
  close(fd);
  if (!root) return refuse(&r, "line %d: %s", jerr.line, jerr.text);
  int rc = find_job(&r, root, name, job);
  json_decref(root);
  return rc;
}

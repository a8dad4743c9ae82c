/* tuning.c: the tuning file: parsing, loading, and the tuned choice (see tuning.h). */
#include "coll/tuning.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tr_names[COLL_NUM_TR] = {"shm", "tcp"};

static bool parse_tr(const char *s, coll_transport_kind *out) {
  for (int i = 0; i < COLL_NUM_TR; i++)
    if (strcmp(s, tr_names[i]) == 0) return *out = (coll_transport_kind)i, true;
  return false;
}

static bool grow(void **arr, size_t len, size_t elem) {
  if (len & (len - 1)) return true; /* capacity doubles at powers of two */
  void *p = realloc(*arr, (len ? 2 * len : 16) * elem);
  if (p == NULL) return false;
  *arr = p;
  return true;
}

/* One line (NUL-terminated, no newline); lineno for messages. */
static tern_status parse_line(coll_tuning *t, char *line, int lineno, bool *saw_use,
                              const char *what, core_err *err) {
  char tr[8], kind[32], algo[16], word[16], extra[2];
  int n;
  double alpha, beta, gamma, o, bytes, secs;
  coll_transport_kind trk;
  coll_kind k;
  coll_algo a;
  char *p = line + strspn(line, " \t");
  if (*p == '\0' || *p == '#') return TERN_OK;
  if (sscanf(p, "use %15s %1s", word, extra) == 1 &&
      (!strcmp(word, "model") || !strcmp(word, "table"))) {
    t->use_table = !strcmp(word, "table");
    *saw_use = true;
    return TERN_OK;
  }
  if (sscanf(p, "model %7s %d %lf %lf %lf %lf %1s", tr, &n, &alpha, &beta, &gamma, &o, extra) ==
          6 &&
      parse_tr(tr, &trk) && n >= 1 && alpha >= 0 && beta >= 0 && gamma >= 0 && o >= 0 &&
      isfinite(alpha + beta + gamma + o)) {
    if (!grow((void **)&t->models, t->nmodels, sizeof *t->models))
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
    t->models[t->nmodels++] = (coll_tuned_model){trk, n, {alpha, beta, gamma, o}};
    return TERN_OK;
  }
  if (sscanf(p, "time %7s %d %31s %lf %15s %lf %1s", tr, &n, kind, &bytes, algo, &secs, extra) ==
          6 &&
      parse_tr(tr, &trk) && n >= 1 && coll_kind_parse(kind, &k) && bytes >= 0 && isfinite(bytes) &&
      coll_algo_parse(algo, &a) && a != COLL_ALGO_AUTO && coll_algo_supported(k, a) && secs > 0 &&
      isfinite(secs)) {
    if (!grow((void **)&t->times, t->ntimes, sizeof *t->times))
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
    t->times[t->ntimes++] = (coll_tuned_time){trk, n, k, bytes, a, secs};
    return TERN_OK;
  }
  return core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%s, line %d: '%.60s' is not a 'use', 'model' or 'time' line of version %d "
                      "(run tern tune again to rewrite it)",
                      what, lineno, p, COLL_TUNING_VERSION);
}

tern_status coll_tuning_parse(coll_tuning *t, const char *text, size_t len, const char *what,
                              core_err *err) {
  memset(t, 0, sizeof *t);
  char *copy = malloc(len + 1);
  if (copy == NULL) return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
  memcpy(copy, text, len);
  copy[len] = '\0';
  tern_status rc = TERN_OK;
  int version = -1;
  if (memchr(text, '\0', len) != NULL || sscanf(copy, "tern-tuning %d", &version) != 1) {
    rc = core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%s is not a tern tuning file (its first line must be 'tern-tuning %d')",
                      what, COLL_TUNING_VERSION);
    goto out;
  }
  if (version != COLL_TUNING_VERSION) {
    rc = core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%s is of version %d; this tern reads version %d: run tern tune again", what,
                      version, COLL_TUNING_VERSION);
    goto out;
  }
  bool saw_use = false;
  int lineno = 1;
  char *save = NULL, *line = strtok_r(copy, "\n", &save);
  for (line = strtok_r(NULL, "\n", &save); line && rc == TERN_OK;
       line = strtok_r(NULL, "\n", &save))
    rc = parse_line(t, line, ++lineno, &saw_use, what, err);
  if (rc == TERN_OK && !saw_use)
    rc = core_err_set(err, TERN_ERR_INVALID_ARG, "%s has no 'use model' or 'use table' line", what);
  if (rc == TERN_OK && (t->use_table ? t->ntimes : t->nmodels) == 0)
    rc = core_err_set(err, TERN_ERR_INVALID_ARG, "%s says 'use %s' but has no such lines", what,
                      t->use_table ? "table" : "model");
out:
  free(copy);
  if (rc != TERN_OK) coll_tuning_free(t);
  return rc;
}

void coll_tuning_free(coll_tuning *t) {
  free(t->models);
  free(t->times);
  memset(t, 0, sizeof *t);
}

tern_status coll_tuning_load(coll_tuning *t, const char *path, char **text, size_t *len,
                             core_err *err) {
  *text = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return core_err_errno(err, errno, "opening the tuning file %s", path);
  char *buf = malloc(COLL_TUNING_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, COLL_TUNING_MAX_BYTES + 1, f) : 0;
  fclose(f);
  char what[300];
  snprintf(what, sizeof what, "tuning file %s", path);
  tern_status rc;
  if (buf == NULL)
    rc = core_err_set(err, TERN_ERR_NOMEM, "no memory to read %s", what);
  else if (n > COLL_TUNING_MAX_BYTES)
    rc = core_err_set(err, TERN_ERR_INVALID_ARG, "%s is larger than %u bytes: not a tuning file",
                      what, COLL_TUNING_MAX_BYTES);
  else
    rc = coll_tuning_parse(t, buf, n, what, err);
  if (rc != TERN_OK) {
    free(buf);
    return rc;
  }
  *text = buf;
  *len = n;
  return TERN_OK;
}

void coll_tuning_default_path(char *out, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg)
    snprintf(out, len, "%s/tern/tuning", xdg);
  else
    snprintf(out, len, "%s/.cache/tern/tuning", home && *home ? home : ".");
}

/* Distance between rank counts, on a log scale. */
static double rank_distance(int n, int m) {
  return fabs(log2((double)n) - log2((double)m));
}

/* The measured times of each algorithm just below and just above a size. */
typedef struct bracket {
  double lo_bytes, lo_secs, hi_bytes, hi_secs; /* lo_bytes < 0, hi_bytes = inf: none */
} bracket;

/* An algorithm's time at bytes, interpolated on log scales between its bracket (the nearer
 * measured time beyond either end); HUGE_VAL when it was not measured. */
static double interpolate(const bracket *b, double bytes) {
  bool lo = b->lo_bytes >= 0, hi = isfinite(b->hi_bytes);
  if (!lo || !hi) return lo ? b->lo_secs : hi ? b->hi_secs : HUGE_VAL;
  if (b->hi_bytes == b->lo_bytes) return b->lo_secs;
  double w =
      (log(bytes + 1) - log(b->lo_bytes + 1)) / (log(b->hi_bytes + 1) - log(b->lo_bytes + 1));
  return exp((1 - w) * log(b->lo_secs) + w * log(b->hi_secs));
}

static coll_algo table_select(const coll_tuning *t, coll_transport_kind tr, coll_kind kind, int n,
                              double bytes) {
  int nearest = 0;
  double best_d = HUGE_VAL;
  for (size_t i = 0; i < t->ntimes; i++) {
    const coll_tuned_time *e = &t->times[i];
    double d = e->tr == tr && e->kind == kind ? rank_distance(n, e->n) : HUGE_VAL;
    if (d < best_d) best_d = d, nearest = e->n;
  }
  bracket br[COLL_NUM_ALGOS];
  for (int a = 0; a < COLL_NUM_ALGOS; a++)
    br[a] = (bracket){-1, 0, HUGE_VAL, 0};
  for (size_t i = 0; i < t->ntimes; i++) {
    const coll_tuned_time *e = &t->times[i];
    if (e->tr != tr || e->kind != kind || e->n != nearest) continue;
    bracket *b = &br[e->algo];
    if (e->bytes <= bytes && e->bytes > b->lo_bytes) b->lo_bytes = e->bytes, b->lo_secs = e->secs;
    if (e->bytes >= bytes && e->bytes < b->hi_bytes) b->hi_bytes = e->bytes, b->hi_secs = e->secs;
  }
  coll_algo best = COLL_ALGO_AUTO;
  double best_secs = HUGE_VAL;
  for (int a = 0; a < COLL_NUM_ALGOS; a++) {
    double s = interpolate(&br[a], bytes);
    if (s < best_secs) best_secs = s, best = (coll_algo)a;
  }
  return best;
}

coll_algo coll_tuning_select(const coll_tuning *t, coll_transport_kind tr, coll_kind kind, int n,
                             size_t count, size_t elem_size) {
  double bytes = (double)count * (double)elem_size, best_d = HUGE_VAL;
  if (t->use_table) return table_select(t, tr, kind, n, bytes);
  const coll_tuned_model *m = NULL;
  for (size_t i = 0; i < t->nmodels; i++) {
    if (t->models[i].tr != tr) continue;
    double d = rank_distance(n, t->models[i].n);
    if (d < best_d) best_d = d, m = &t->models[i];
  }
  if (m == NULL) return COLL_ALGO_AUTO;
  coll_net_model fitted = m->m; /* the file keeps the constants; the rules are the reference's */
  fitted.one_host = coll_fit_reference(tr)->one_host;
  fitted.reduce_in_place = coll_fit_reference(tr)->reduce_in_place;
  return coll_select(kind, n, count, elem_size, &fitted);
}

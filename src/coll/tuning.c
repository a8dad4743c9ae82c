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

bool coll_tuning_parse_ranks(const char *s, int *hosts, int *n) {
  int h, p, used = 0;
  char extra;
  if (sscanf(s, "%dx%d%n%c", &h, &p, &used, &extra) == 2 && used == (int)strlen(s))
    return h >= 2 && p >= 1 && h <= 1 << 20 && p <= 1 << 20 && (*hosts = h, *n = h * p, true);
  if (sscanf(s, "%d%n%c", &p, &used, &extra) == 1 && used == (int)strlen(s))
    return p >= 1 && (*hosts = 1, *n = p, true);
  return false;
}

bool coll_tuning_parse_algo(const char *s, coll_algo *algo, coll_algo *inner) {
  char name[32];
  snprintf(name, sizeof name, "%s", s);
  char *colon = strchr(name, ':');
  *inner = COLL_ALGO_RING;
  if (colon == NULL) return coll_algo_parse(name, algo);
  *colon = '\0';
  return coll_algo_parse(name, algo) && *algo == COLL_ALGO_HIER &&
         coll_algo_parse(colon + 1, inner) && (*inner == COLL_ALGO_RING || *inner == COLL_ALGO_RHD);
}

/* One line (NUL-terminated, no newline); lineno for messages. */
static tern_status parse_line(coll_tuning *t, char *line, int lineno, bool *saw_use,
                              const char *what, core_err *err) {
  char tr[8], ranks[24], kind[32], algo[24], word[16], extra[2];
  int hosts, n;
  double alpha, beta, gamma, o, bytes, secs;
  coll_transport_kind trk;
  coll_kind k;
  coll_algo a, inner;
  char *p = line + strspn(line, " \t");
  if (*p == '\0' || *p == '#') return TERN_OK;
  if (sscanf(p, "use %15s %1s", word, extra) == 1 &&
      (!strcmp(word, "model") || !strcmp(word, "table") || !strcmp(word, "builtin"))) {
    t->use_table = !strcmp(word, "table");
    t->use_builtin = !strcmp(word, "builtin");
    *saw_use = true;
    return TERN_OK;
  }
  if (sscanf(p, "model %7s %23s %lf %lf %lf %lf %1s", tr, ranks, &alpha, &beta, &gamma, &o,
             extra) == 6 &&
      parse_tr(tr, &trk) && coll_tuning_parse_ranks(ranks, &hosts, &n) && alpha >= 0 && beta >= 0 &&
      gamma >= 0 && o >= 0 && isfinite(alpha + beta + gamma + o)) {
    if (!grow((void **)&t->models, t->nmodels, sizeof *t->models))
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
    t->models[t->nmodels++] = (coll_tuned_model){trk, hosts, n, {alpha, beta, gamma, o}};
    return TERN_OK;
  }
  if (sscanf(p, "time %7s %23s %31s %lf %23s %lf %1s", tr, ranks, kind, &bytes, algo, &secs,
             extra) == 6 &&
      parse_tr(tr, &trk) && coll_tuning_parse_ranks(ranks, &hosts, &n) &&
      coll_kind_parse(kind, &k) && bytes >= 0 && isfinite(bytes) &&
      coll_tuning_parse_algo(algo, &a, &inner) && a != COLL_ALGO_AUTO &&
      coll_algo_supported(k, a) && (a != COLL_ALGO_HIER || hosts >= 2) && secs > 0 &&
      isfinite(secs)) {
    if (!grow((void **)&t->times, t->ntimes, sizeof *t->times))
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for %s", what);
    t->times[t->ntimes++] = (coll_tuned_time){trk, hosts, n, k, bytes, a, inner, secs};
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
  if (rc == TERN_OK && !t->use_builtin && (t->use_table ? t->ntimes : t->nmodels) == 0)
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

/* Whether a row of the file is for the placement hosts x (n / hosts): only the placements
 * measured are answered, the others being the built-in model's (docs/TUNING.md: standing in
 * for another rank count, the nearest measured one picked worse than the built-in model). */
static bool same_placement(int hosts, int n, int h, int m) {
  return hosts == h && n == m;
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

/* A row's algorithm as one index: hier by rhd past the others. */
#define NUM_PICKS (COLL_NUM_ALGOS + 1)
static int pick_index(coll_algo algo, coll_algo inner) {
  return algo == COLL_ALGO_HIER && inner == COLL_ALGO_RHD ? COLL_NUM_ALGOS : (int)algo;
}

static coll_algo table_select(const coll_tuning *t, coll_transport_kind tr, coll_kind kind,
                              int hosts, int n, double bytes, coll_algo *inner) {
  bracket br[NUM_PICKS];
  for (int a = 0; a < NUM_PICKS; a++)
    br[a] = (bracket){-1, 0, HUGE_VAL, 0};
  for (size_t i = 0; i < t->ntimes; i++) {
    const coll_tuned_time *e = &t->times[i];
    if (e->tr != tr || e->kind != kind || !same_placement(hosts, n, e->hosts, e->n)) continue;
    bracket *b = &br[pick_index(e->algo, e->inner)];
    if (e->bytes <= bytes && e->bytes > b->lo_bytes) b->lo_bytes = e->bytes, b->lo_secs = e->secs;
    if (e->bytes >= bytes && e->bytes < b->hi_bytes) b->hi_bytes = e->bytes, b->hi_secs = e->secs;
  }
  int best = 0;
  double best_secs = HUGE_VAL;
  for (int a = 0; a < NUM_PICKS; a++) {
    double s = interpolate(&br[a], bytes);
    if (s < best_secs) best_secs = s, best = a;
  }
  *inner = best == COLL_NUM_ALGOS ? COLL_ALGO_RHD : COLL_ALGO_RING;
  return best == COLL_NUM_ALGOS ? COLL_ALGO_HIER : (coll_algo)best;
}

/* The fitted model of (hosts, n) for tr; NULL: none. */
static const coll_tuned_model *model_of(const coll_tuning *t, coll_transport_kind tr, int hosts,
                                        int n) {
  for (size_t i = 0; i < t->nmodels; i++)
    if (t->models[i].tr == tr && same_placement(hosts, n, t->models[i].hosts, t->models[i].n))
      return &t->models[i];
  return NULL;
}

static coll_net_model fitted(const coll_tuned_model *m, coll_transport_kind tr) {
  coll_net_model f = m->m; /* the file keeps the constants; the rules are the reference's */
  f.one_host = coll_fit_reference(tr)->one_host;
  f.reduce_in_place = coll_fit_reference(tr)->reduce_in_place;
  return f;
}

coll_algo coll_tuning_select(const coll_tuning *t, coll_transport_kind tr, coll_kind kind, int n,
                             size_t count, size_t elem_size) {
  double bytes = (double)count * (double)elem_size;
  coll_algo inner;
  if (t->use_builtin) return COLL_ALGO_AUTO;
  if (t->use_table) return table_select(t, tr, kind, 1, n, bytes, &inner);
  const coll_tuned_model *m = model_of(t, tr, 1, n);
  if (m == NULL) return COLL_ALGO_AUTO;
  coll_net_model f = fitted(m, tr);
  return coll_select(kind, n, count, elem_size, &f);
}

coll_algo coll_tuning_select_hosts(const coll_tuning *t, const coll_args *a, size_t elem_size,
                                   const coll_net_model *intra, coll_algo *inner) {
  int hosts = coll_host_count(a);
  *inner = COLL_ALGO_RING;
  if (t->use_builtin || hosts < 2) return COLL_ALGO_AUTO;
  /* rows are named HxP, every host with P ranks: they say nothing of hosts of unequal sizes
   * (a 3 + 1 layout is not 2x2), where the runtime's own choice stands */
  if (coll_ranks_per_host(a) == 0) return COLL_ALGO_AUTO;
  if (t->use_table)
    return table_select(t, COLL_TR_TCP, a->kind, hosts, a->size,
                        (double)a->count * (double)elem_size, inner);
  const coll_tuned_model *m = model_of(t, COLL_TR_TCP, hosts, a->size);
  if (m == NULL) return COLL_ALGO_AUTO;
  coll_net_model inter = fitted(m, COLL_TR_TCP);
  return coll_select_hosts(a, elem_size, intra, &inter, inner);
}

/* tune/fit.c: from the measured rows to the tuning file.
 *
 * Three predictors are compared on points they did not see: the built-in model (what the
 * runtime picks without a file: select.c's constants on one host, the learned weights or the
 * phases of select_hosts.c across hosts), the model refitted to the host (alpha, beta, gamma, o
 * per transport and rank count, least squares on each algorithm's schedule terms, fit.c), and
 * the table of measured times (interpolated between measured sizes, coll/tuning.c). Held out, in
 * turn: every size that is an odd power of two (8 B x 2, x 8, ...: the fit sees 8 B x 1, x 4,
 * x 16, ...: interpolation); the two largest sizes measured of each collective at each
 * placement (extrapolation beyond the sizes seen); and, when two or more placements (rank
 * counts, or hosts x ranks) were measured, each placement in turn (leave one out: what the
 * runtime picks at a placement the file has not measured, the built-in model's). A pick is right
 * when the algorithm it names measured within 5% of the fastest at that point; where a learned
 * predictor has nothing for a point, the runtime falls back to the built-in model, and so does its
 * score. The file keeps the learned predictor with the better held-out score, refitted on every
 * point, only when it scores above the built-in model; else it says "use builtin".
 *
 * Rows measured across hosts (HxP, tune/rows.c) go into the table only: the fitted model prices
 * one host's schedule terms, and across hosts its pick is the built-in one.
 */
#include "tune.h"

#include "coll/select_learned.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef enum predictor { P_BUILTIN, P_MODEL, P_TABLE, NUM_P } predictor;
static const char *p_names[NUM_P] = {"built-in model", "fitted model", "measured table"};

static int hosts_of(const tune_row *r) {
  return r->hosts > 1 ? r->hosts : 1;
}

static bool same_point(const tune_row *a, const tune_row *b) {
  return a->tr == b->tr && a->n == b->n && hosts_of(a) == hosts_of(b) && a->kind == b->kind &&
         a->count == b->count;
}

static bool held_out_size(size_t count) {
  int l = 0;
  for (size_t b = count * sizeof(float) / 8; b > 1; b /= 2)
    l++;
  return l % 2 == 1;
}

/* Which rows a fit or a table may use. */
typedef struct train_set {
  bool skip_odd_sizes;
  const size_t *top;      /* non-NULL: skip row i when its count is above top[i] / 4 (its
                             collective's two largest measured sizes at its placement) */
  int skip_hosts, skip_n; /* skip_n 0: none */
} train_set;

static bool in_train(const tune_rows *rows, const tune_row *r, const train_set *ts) {
  if (ts->skip_odd_sizes && held_out_size(r->count)) return false;
  if (ts->top && r->count > ts->top[r - rows->v] / 4) return false;
  return !(r->n == ts->skip_n && hosts_of(r) == ts->skip_hosts);
}

/* Builds the tuning (models per (tr, n) on one host and the table of times) from the rows
 * train_set allows. */
static bool build_tuning(const tune_rows *rows, const train_set *ts, coll_tuning *t) {
  memset(t, 0, sizeof *t);
  coll_sched scratch;
  coll_sched_init(&scratch);
  size_t m = rows->len;
  coll_cost_terms *terms = malloc((m ? m : 1) * sizeof *terms);
  double *secs = malloc((m ? m : 1) * sizeof *secs);
  t->models = malloc((m ? m : 1) * sizeof *t->models);
  t->times = malloc((m ? m : 1) * sizeof *t->times);
  bool ok = terms && secs && t->models && t->times;
  for (size_t i = 0; ok && i < m; i++) { /* one model per (tr, n) seen first at row i */
    const tune_row *r = &rows->v[i];
    bool first = hosts_of(r) == 1 && in_train(rows, r, ts);
    for (size_t j = 0; first && j < i; j++)
      first = !(rows->v[j].tr == r->tr && rows->v[j].n == r->n && hosts_of(&rows->v[j]) == 1 &&
                in_train(rows, &rows->v[j], ts));
    if (!first) continue;
    size_t k = 0;
    const coll_net_model *ref = coll_fit_reference(r->tr);
    for (size_t j = i; j < m; j++) {
      const tune_row *q = &rows->v[j];
      if (q->tr != r->tr || q->n != r->n || hosts_of(q) != 1 || !in_train(rows, q, ts)) continue;
      if (coll_cost_terms_of(q->kind, q->algo, q->n, q->count, sizeof(float), ref, &scratch,
                             &terms[k]) == TERN_OK)
        secs[k++] = q->secs;
    }
    t->models[t->nmodels++] = (coll_tuned_model){r->tr, 1, r->n, coll_fit_model(terms, secs, k)};
  }
  for (size_t i = 0; ok && i < m; i++) {
    const tune_row *r = &rows->v[i];
    coll_algo inner = r->algo == COLL_ALGO_HIER ? r->inner : COLL_ALGO_RING;
    if (in_train(rows, r, ts) && r->secs > 0)
      t->times[t->ntimes++] =
          (coll_tuned_time){r->tr,   hosts_of(r), r->n,   r->kind, (double)r->count * sizeof(float),
                            r->algo, inner,       r->secs};
  }
  free(terms);
  free(secs);
  coll_sched_free(&scratch);
  return ok;
}

/* The CPUs this process may run on: the ranks `tern tune` measured ran here. Asked once: the
 * scoring asks for every point. */
static int host_cpus(void) {
  static int cpus;
  cpu_set_t set;
  if (cpus == 0) cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return cpus;
}

/* What the runtime picks at r's point without a tuning file: on one host the built-in model,
 * crowded when the ranks outnumber CPUs; across hosts the site exec.c builds (coll_choose). */
static coll_algo builtin_pick(const tune_row *r, coll_algo *inner) {
  *inner = COLL_ALGO_RING;
  if (hosts_of(r) > 1) {
    coll_args a = {.kind = r->kind, .size = r->n, .count = r->count, .ppn = r->n / hosts_of(r)};
    coll_site w = {.tr = COLL_TR_TCP, .across_hosts = true, .learned = &coll_learned_cluster};
    return coll_choose(&a, sizeof(float), &w, NULL, inner, NULL);
  }
  coll_net_model m = coll_model_for(r->tr == COLL_TR_TCP, true, r->n > host_cpus(), host_cpus());
  return coll_select(r->kind, r->n, r->count, sizeof(float), &m);
}

static coll_algo pick(predictor p, coll_tuning *t, const tune_row *r, coll_algo *inner) {
  coll_algo a = COLL_ALGO_AUTO;
  *inner = COLL_ALGO_RING;
  t->use_table = p == P_TABLE;
  if (p != P_BUILTIN && hosts_of(r) > 1) {
    coll_args place = {.kind = r->kind, .size = r->n, .count = r->count, .ppn = r->n / hosts_of(r)};
    a = coll_tuning_select_hosts(t, &place, sizeof(float), &coll_model_shm, inner);
  } else if (p != P_BUILTIN) {
    a = coll_tuning_select(t, r->tr, r->kind, r->n, r->count, sizeof(float));
  }
  return a != COLL_ALGO_AUTO ? a : builtin_pick(r, inner); /* as the runtime falls back */
}

/* Scores predictor p (trained on ts) on the points ts left out: right and total counts. */
static void score(const tune_rows *rows, const train_set *ts, coll_tuning *t, predictor p,
                  long *right, long *total) {
  for (size_t i = 0; i < rows->len; i++) {
    const tune_row *r = &rows->v[i];
    if (in_train(rows, r, ts)) continue;
    double best = HUGE_VAL, chosen = HUGE_VAL;
    bool first = true;
    for (size_t j = 0; j < rows->len; j++) {
      const tune_row *q = &rows->v[j];
      if (!same_point(q, r)) continue;
      first = first && j >= i;
      best = CORE_MIN(best, q->secs);
    }
    if (!first) continue; /* each point once */
    coll_algo inner, a = pick(p, t, r, &inner);
    for (size_t j = 0; j < rows->len; j++) {
      const tune_row *q = &rows->v[j];
      if (same_point(q, r) && q->algo == a && (a != COLL_ALGO_HIER || q->inner == inner))
        chosen = q->secs;
    }
    (*total)++;
    *right += chosen <= 1.05 * best;
  }
}

static void write_file(FILE *f, const coll_tuning *t, predictor use, const long right[NUM_P],
                       const long total[NUM_P]) {
  static const char *use_names[NUM_P] = {"builtin", "model", "table"};
  fprintf(f,
          "tern-tuning %d\n# written by tern tune; held-out accuracy (pick within 5%% of the "
          "fastest):\n",
          COLL_TUNING_VERSION);
  for (int p = 0; p < NUM_P; p++)
    fprintf(f, "#   %-15s %5.1f%% of %ld points\n", p_names[p],
            total[p] ? 100.0 * right[p] / total[p] : 0, total[p]);
  fprintf(f, "use %s\n", use_names[use]);
  char ranks[24], algo[24];
  for (size_t i = 0; i < t->nmodels; i++) {
    const coll_tuned_model *m = &t->models[i];
    tune_print_ranks(ranks, sizeof ranks, m->hosts, m->n);
    fprintf(f, "model %s %s %.6g %.6g %.6g %.6g\n", tune_tr_names[m->tr], ranks, m->m.alpha,
            m->m.beta, m->m.gamma, m->m.o);
  }
  for (size_t i = 0; i < t->ntimes; i++) {
    const coll_tuned_time *e = &t->times[i];
    tune_print_ranks(ranks, sizeof ranks, e->hosts, e->n);
    tune_print_algo(algo, sizeof algo, e->algo, e->inner);
    fprintf(f, "time %s %s %s %.0f %s %.6g\n", tune_tr_names[e->tr], ranks, coll_kind_name(e->kind),
            e->bytes, algo, e->secs);
  }
}

/* Per row, the largest count measured of its collective at its placement and transport. */
static size_t *largest_counts(const tune_rows *rows) {
  size_t *top = calloc(rows->len ? rows->len : 1, sizeof *top);
  for (size_t i = 0; top && i < rows->len; i++) {
    const tune_row *r = &rows->v[i];
    for (size_t j = 0; j < rows->len; j++) {
      const tune_row *q = &rows->v[j];
      if (q->tr == r->tr && q->n == r->n && hosts_of(q) == hosts_of(r) && q->kind == r->kind)
        top[i] = CORE_MAX(top[i], q->count);
    }
  }
  return top;
}

/* The held-out sets by what they test. */
enum { S_BETWEEN, S_LARGEST, S_PLACEMENTS, NUM_S };
static const char *s_names[NUM_S] = {"sizes between", "largest sizes", "other placements"};

int tune_fit_and_write(const tune_rows *rows, const char *path, FILE *out) {
  long right[NUM_P] = {0}, total[NUM_P] = {0}, by_r[NUM_S][NUM_P] = {{0}},
       by_t[NUM_S][NUM_P] = {{0}};
  int ns[64], hs[64], nn = 0;
  for (size_t i = 0; i < rows->len; i++) {
    bool seen = false;
    for (int k = 0; k < nn; k++)
      seen = seen || (ns[k] == rows->v[i].n && hs[k] == hosts_of(&rows->v[i]));
    if (!seen && nn < 64) ns[nn] = rows->v[i].n, hs[nn++] = hosts_of(&rows->v[i]);
  }
  size_t *top = largest_counts(rows);
  if (top == NULL) return 1;
  /* held-out sizes, the largest sizes, then (with two or more placements) each in turn */
  train_set sets[66] = {{.skip_odd_sizes = true}, {.top = top}};
  int nsets = 2;
  for (int k = 0; nn >= 2 && k < nn; k++)
    sets[nsets++] = (train_set){.skip_hosts = hs[k], .skip_n = ns[k]};
  for (int s = 0; s < nsets; s++) {
    coll_tuning t;
    if (!build_tuning(rows, &sets[s], &t)) return free(top), 1;
    int kind = s < NUM_S ? s : S_PLACEMENTS;
    for (int p = 0; p < NUM_P; p++)
      score(rows, &sets[s], &t, (predictor)p, &by_r[kind][p], &by_t[kind][p]);
    coll_tuning_free(&t);
  }
  free(top);
  for (int k = 0; k < NUM_S; k++)
    for (int p = 0; p < NUM_P; p++)
      right[p] += by_r[k][p], total[p] += by_t[k][p];
  fprintf(out, "\nheld-out accuracy (the pick measured within 5%% of the fastest algorithm):\n");
  for (int p = 0; p < NUM_P; p++) {
    fprintf(out, "  %-15s %5.1f%%  (%ld of %ld points;", p_names[p],
            total[p] ? 100.0 * right[p] / total[p] : 0, right[p], total[p]);
    for (int k = 0, n = 0; k < NUM_S; k++)
      if (by_t[k][p])
        fprintf(out, "%s %s %.1f%%", n++ ? "," : "", s_names[k], 100.0 * by_r[k][p] / by_t[k][p]);
    fprintf(out, ")\n");
  }
  /* the better learned predictor, and it only when it beats the built-in model (every predictor
   * is scored on the same points: the counts compare) */
  predictor use = right[P_TABLE] > right[P_MODEL] ? P_TABLE : P_MODEL;
  if (right[use] <= right[P_BUILTIN]) use = P_BUILTIN;
  train_set all = {0};
  coll_tuning t;
  if (!build_tuning(rows, &all, &t)) return 1;
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "tern tune: cannot write %s\n", path);
    coll_tuning_free(&t);
    return 1;
  }
  write_file(f, &t, use, right, total);
  fclose(f);
  fprintf(out, "wrote %s (use %s); TERN_TUNING=%s selects with it\n", path,
          use == P_TABLE   ? "table"
          : use == P_MODEL ? "model"
                           : "builtin, the better here",
          path);
  coll_tuning_free(&t);
  return 0;
}

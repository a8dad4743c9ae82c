/* tune/fit.c: from the measured rows to the tuning file.
 *
 * Three predictors are compared on points they did not see: the built-in model (select.c's
 * constants), the model refitted to the host (alpha, beta, gamma, o per transport and rank
 * count, least squares on each algorithm's schedule terms, fit.c), and the table of measured
 * times (interpolated between measured sizes, coll/tuning.c). Held out: every size that is an odd
 * power of two (8 B x 2, x 8, ...: the fit sees 8 B x 1, x 4, x 16, ...) and, when three or more
 * rank counts were measured, each rank count in turn (leave one out). A pick is right when the
 * algorithm it names measured within 5% of the fastest at that point. The file keeps the predictor
 * with the better held-out score, refitted on every point.
 */
#include "tune.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef enum predictor { P_BUILTIN, P_MODEL, P_TABLE, NUM_P } predictor;
static const char *p_names[NUM_P] = {"built-in model", "fitted model", "measured table"};

static bool held_out_size(size_t count) {
  int l = 0;
  for (size_t b = count * sizeof(float) / 8; b > 1; b /= 2)
    l++;
  return l % 2 == 1;
}

/* Which rows a fit or a table may use. */
typedef struct train_set {
  bool skip_odd_sizes;
  int skip_n; /* 0: none */
} train_set;

static bool in_train(const tune_row *r, const train_set *ts) {
  return !(ts->skip_odd_sizes && held_out_size(r->count)) && r->n != ts->skip_n;
}

/* Builds the tuning (models per (tr, n) and the table of times) from the rows train_set allows. */
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
    bool first = in_train(r, ts);
    for (size_t j = 0; first && j < i; j++)
      first = !(rows->v[j].tr == r->tr && rows->v[j].n == r->n && in_train(&rows->v[j], ts));
    if (!first) continue;
    size_t k = 0;
    const coll_net_model *ref = coll_fit_reference(r->tr);
    for (size_t j = i; j < m; j++) {
      const tune_row *q = &rows->v[j];
      if (q->tr != r->tr || q->n != r->n || !in_train(q, ts)) continue;
      if (coll_cost_terms_of(q->kind, q->algo, q->n, q->count, sizeof(float), ref, &scratch,
                             &terms[k]) == TERN_OK)
        secs[k++] = q->secs;
    }
    t->models[t->nmodels++] = (coll_tuned_model){r->tr, r->n, coll_fit_model(terms, secs, k)};
  }
  for (size_t i = 0; ok && i < m; i++) {
    const tune_row *r = &rows->v[i];
    if (in_train(r, ts) && r->secs > 0)
      t->times[t->ntimes++] = (coll_tuned_time){
          r->tr, r->n, r->kind, (double)r->count * sizeof(float), r->algo, r->secs};
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

static coll_algo pick(predictor p, coll_tuning *t, const tune_row *r) {
  if (p == P_BUILTIN) { /* as the runtime picks on this host, crowded when the ranks outnumber
                          CPUs */
    coll_net_model m = coll_model_for(r->tr == COLL_TR_TCP, true, r->n > host_cpus(), host_cpus());
    return coll_select(r->kind, r->n, r->count, sizeof(float), &m);
  }
  t->use_table = p == P_TABLE;
  return coll_tuning_select(t, r->tr, r->kind, r->n, r->count, sizeof(float));
}

/* Scores predictor p (trained on ts) on the points ts left out: right and total counts. */
static void score(const tune_rows *rows, const train_set *ts, coll_tuning *t, predictor p,
                  long *right, long *total) {
  for (size_t i = 0; i < rows->len; i++) {
    const tune_row *r = &rows->v[i];
    if (in_train(r, ts)) continue;
    double best = HUGE_VAL, chosen = HUGE_VAL;
    bool first = true;
    for (size_t j = 0; j < rows->len; j++) {
      const tune_row *q = &rows->v[j];
      if (q->tr != r->tr || q->n != r->n || q->kind != r->kind || q->count != r->count) continue;
      first = first && j >= i;
      best = CORE_MIN(best, q->secs);
    }
    if (!first) continue; /* each point once */
    coll_algo a = pick(p, t, r);
    for (size_t j = 0; j < rows->len; j++) {
      const tune_row *q = &rows->v[j];
      if (q->tr == r->tr && q->n == r->n && q->kind == r->kind && q->count == r->count &&
          q->algo == a)
        chosen = q->secs;
    }
    (*total)++;
    *right += chosen <= 1.05 * best;
  }
}

static void write_file(FILE *f, const coll_tuning *t, predictor use, const long right[NUM_P],
                       const long total[NUM_P]) {
  fprintf(f,
          "tern-tuning %d\n# written by tern tune; held-out accuracy (pick within 5%% of the "
          "fastest):\n",
          COLL_TUNING_VERSION);
  for (int p = 0; p < NUM_P; p++)
    fprintf(f, "#   %-15s %5.1f%% of %ld points\n", p_names[p],
            total[p] ? 100.0 * right[p] / total[p] : 0, total[p]);
  fprintf(f, "use %s\n", use == P_TABLE ? "table" : "model");
  for (size_t i = 0; i < t->nmodels; i++) {
    const coll_tuned_model *m = &t->models[i];
    fprintf(f, "model %s %d %.6g %.6g %.6g %.6g\n", tune_tr_names[m->tr], m->n, m->m.alpha,
            m->m.beta, m->m.gamma, m->m.o);
  }
  for (size_t i = 0; i < t->ntimes; i++) {
    const coll_tuned_time *e = &t->times[i];
    fprintf(f, "time %s %d %s %.0f %s %.6g\n", tune_tr_names[e->tr], e->n, coll_kind_name(e->kind),
            e->bytes, coll_algo_name(e->algo), e->secs);
  }
}

int tune_fit_and_write(const tune_rows *rows, const char *path, FILE *out) {
  long right[NUM_P] = {0}, total[NUM_P] = {0};
  int ns[64], nn = 0;
  for (size_t i = 0; i < rows->len; i++) {
    bool seen = false;
    for (int k = 0; k < nn; k++)
      seen = seen || ns[k] == rows->v[i].n;
    if (!seen && nn < 64) ns[nn++] = rows->v[i].n;
  }
  /* held-out sizes, then (with three or more rank counts) each rank count left out in turn */
  train_set sets[65] = {{true, 0}};
  int nsets = 1;
  for (int k = 0; nn >= 3 && k < nn; k++)
    sets[nsets++] = (train_set){false, ns[k]};
  for (int s = 0; s < nsets; s++) {
    coll_tuning t;
    if (!build_tuning(rows, &sets[s], &t)) return 1;
    for (int p = 0; p < NUM_P; p++)
      score(rows, &sets[s], &t, (predictor)p, &right[p], &total[p]);
    coll_tuning_free(&t);
  }
  fprintf(out, "\nheld-out accuracy (the pick measured within 5%% of the fastest algorithm):\n");
  for (int p = 0; p < NUM_P; p++)
    fprintf(out, "  %-15s %5.1f%%  (%ld of %ld points)\n", p_names[p],
            total[p] ? 100.0 * right[p] / total[p] : 0, right[p], total[p]);
  predictor use =
      right[P_TABLE] * total[P_MODEL] > right[P_MODEL] * total[P_TABLE] ? P_TABLE : P_MODEL;
  train_set all = {false, 0};
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
          use == P_TABLE ? "table" : "model", path);
  coll_tuning_free(&t);
  return 0;
}

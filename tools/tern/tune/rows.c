/* tune/rows.c: the rows `tern tune` measures, as text: one line per (transport, ranks,
 * collective, count, algorithm) with the median seconds of one call,
 *
 *   shm,4,allreduce,256,rhd,1.234e-05
 *
 * Rows measured across hosts (by `tern tune` launched across them, or by hand) name the ranks
 * HxP, H hosts of P ranks, the transport being the one between hosts, and hier by its
 * inter-host algorithm: tcp,2x4,allreduce,256,hier:rhd,1.234e-05.
 *
 * The workers write them (tune/worker.c), `--save-rows` keeps them and `--from` fits a tuning
 * file from them again, so a file read here may come from a user: every line is checked, and
 * the first bad one is named with its file and line. Lines starting with '#' are comments.
 */
#include "tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tune_tr_names[COLL_NUM_TR] = {"shm", "tcp"};

void tune_rows_free(tune_rows *rows) {
  free(rows->v);
  memset(rows, 0, sizeof *rows);
}

bool tune_rows_append(tune_rows *rows, tune_row r) {
  if (rows->len == rows->cap) {
    size_t cap = rows->cap ? 2 * rows->cap : 256;
    tune_row *v = realloc(rows->v, cap * sizeof *v);
    if (v == NULL) return false;
    rows->v = v, rows->cap = cap;
  }
  rows->v[rows->len++] = r;
  return true;
}

/* One line into *r, or what is wrong with it. */
static const char *parse_row(const char *line, tune_row *r) {
  char tr[8], ranks[24], kind[32], algo[24], end;
  int n, hosts;
  size_t count;
  double secs;
  if (sscanf(line, "%7[^,],%23[^,],%31[^,],%zu,%23[^,],%lf %c", tr, ranks, kind, &count, algo,
             &secs, &end) != 6)
    return "want transport,ranks,collective,count,algorithm,seconds";
  if (strcmp(tr, "shm") && strcmp(tr, "tcp")) return "the transport is not shm or tcp";
  if (!coll_tuning_parse_ranks(ranks, &hosts, &n) || n > 1024)
    return "the ranks are not N or HxP (H hosts of P ranks), 1..1024 in all";
  if (!coll_kind_parse(kind, &r->kind)) return "no such collective";
  if (!coll_tuning_parse_algo(algo, &r->algo, &r->inner) ||
      !coll_algo_supported(r->kind, r->algo) || (r->algo == COLL_ALGO_HIER && hosts < 2))
    return "no such algorithm for this collective";
  if (count < 1) return "the count is not a positive number of elements";
  if (!isfinite(secs) || secs <= 0) return "the seconds are not a positive time";
  r->tr = strcmp(tr, "tcp") == 0 ? COLL_TR_TCP : COLL_TR_SHM;
  r->n = n, r->hosts = hosts, r->count = count, r->secs = secs;
  return NULL;
}

bool tune_read_rows(const char *path, tune_rows *rows) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "tern tune: cannot read %s\n", path);
    return false;
  }
  char line[256];
  const char *bad = NULL;
  long at = 0;
  while (bad == NULL && fgets(line, sizeof line, f)) {
    at++;
    if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0') continue;
    tune_row r;
    bad = strchr(line, '\n') == NULL && !feof(f) ? "the line is too long" : parse_row(line, &r);
    if (bad == NULL && !tune_rows_append(rows, r)) bad = "no memory for the rows";
  }
  fclose(f);
  if (bad) fprintf(stderr, "tern tune: %s, line %ld: %s\n", path, at, bad);
  return bad == NULL;
}

void tune_print_ranks(char *out, size_t len, int hosts, int n) {
  if (hosts > 1)
    snprintf(out, len, "%dx%d", hosts, n / hosts);
  else
    snprintf(out, len, "%d", n);
}

void tune_print_algo(char *out, size_t len, coll_algo algo, coll_algo inner) {
  if (algo == COLL_ALGO_HIER)
    snprintf(out, len, "hier:%s", coll_algo_name(inner));
  else
    snprintf(out, len, "%s", coll_algo_name(algo));
}

void tune_print_row(FILE *f, const tune_row *r) {
  char ranks[24], algo[24];
  tune_print_ranks(ranks, sizeof ranks, r->hosts, r->n);
  tune_print_algo(algo, sizeof algo, r->algo, r->inner);
  fprintf(f, "%s,%s,%s,%zu,%s,%.9g\n", tune_tr_names[r->tr], ranks, coll_kind_name(r->kind),
          r->count, algo, r->secs);
}

bool tune_write_rows(const tune_rows *rows, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "tern tune: cannot write %s\n", path);
    return false;
  }
  fprintf(f, "# tern tune rows: transport,ranks,collective,count,algorithm,seconds\n");
  for (size_t i = 0; i < rows->len; i++)
    tune_print_row(f, &rows->v[i]);
  return fclose(f) == 0;
}

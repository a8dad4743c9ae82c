/* tune.h: `tern tune`, in four files: tune.c (the command: the plan, the budget, the runs),
 * tune/worker.c (one run: every algorithm of every collective timed at every size),
 * tune/rows.c (the measured rows as text), tune/fit.c (the predictors, their held-out accuracy,
 * the tuning file). */
#ifndef TERN_TOOLS_TUNE_H
#define TERN_TOOLS_TUNE_H

#include "coll/tuning.h"

#include <stdio.h>

typedef struct tune_row {
  coll_transport_kind tr;
  int n;
  int hosts; /* 0 or 1: the n ranks on one host; else n / hosts on each (tr: between hosts) */
  coll_kind kind;
  size_t count;          /* the call's count argument, of f32 */
  coll_algo algo, inner; /* inner: hier's inter-host algorithm */
  double secs;           /* median time of one call, max over ranks */
} tune_row;

typedef struct tune_rows {
  tune_row *v;
  size_t len, cap;
} tune_rows;

int tune_worker(int argc, char **argv);
/* One rank's part of a sweep by the job this process was launched in (tern_comm_init_env):
 * every algorithm of every collective at every size to max_bytes within seconds, at the job's
 * placement (one host, or H hosts of P ranks). *rank0: this is rank 0, whose *rows get the
 * measured rows (the other ranks' get none). False, said on stderr, when it failed. */
bool tune_sweep(double seconds, size_t max_bytes, tune_rows *rows, bool *rank0);
bool tune_rows_append(tune_rows *rows, tune_row r);
/* Reads rows (tune/rows.c's format) and appends them; false, with the file, the line and what
 * is wrong on stderr, at the first bad line. */
bool tune_read_rows(const char *path, tune_rows *rows);
bool tune_write_rows(const tune_rows *rows, const char *path);
/* One row as a line of that format: the workers' files and --save-rows write alike. */
void tune_print_row(FILE *f, const tune_row *r);
/* RANKS and ALGO as the rows and the tuning file spell them: N or HxP; a name or hier:INNER. */
void tune_print_ranks(char *out, size_t len, int hosts, int n);
void tune_print_algo(char *out, size_t len, coll_algo algo, coll_algo inner);
void tune_rows_free(tune_rows *rows);
/* Fits, evaluates, prints the accuracy table to out and writes the tuning file at path. */
int tune_fit_and_write(const tune_rows *rows, const char *path, FILE *out);

extern const char *const tune_tr_names[COLL_NUM_TR];

#endif

/* tuning.h: what `tern tune` learns about the host it runs on, and how the selector uses it.
 *
 * The tuner measures every algorithm of every collective at a grid of sizes, rank counts and
 * transports, then fits two predictors and keeps the one that picks better on points it did not
 * train on, or neither when the built-in model picks at least as well ("use builtin"):
 *  - "model": alpha, beta, gamma and o refitted per (transport, rank count) by least squares,
 *    with the features of each algorithm's own schedule (coll_sched_cost's terms), so that the
 *    closed forms of select.c predict with the measured host's constants;
 *  - "table": every algorithm's measured time per (transport, rank count, collective, size);
 *    a choice interpolates each algorithm's time between the measured sizes on log scales and
 *    takes the fastest. (Looking up the winner at the
 *    nearest measured size instead was right 2-4 points in 100 less often here: between two
 *    measured sizes it cannot see where two algorithms' curves cross.)
 *
 * The file is text, line-oriented, versioned:
 *   tern-tuning 2
 *   use model|table|builtin
 *   model TRANSPORT RANKS ALPHA BETA GAMMA O
 *   time TRANSPORT RANKS KIND BYTES ALGO SECONDS
 *   # comments
 * RANKS is N, N ranks on one host, or HxP, H >= 2 hosts of P ranks each (across hosts, the
 * transport being the one between hosts, tcp): rows measured across hosts, which the selector
 * uses once ranks span hosts (coll_tuning_select_hosts). There ALGO may be hier:ring or hier:rhd
 * (hier and its inter-host algorithm), and a model line's constants are the inter-host link's.
 * A file of another version, or with a line that does not parse, is refused with the line and
 * what is wrong, never half-used. Every rank uses rank 0's copy (sent through the store at
 * start-up), so ranks whose files differ still agree.
 */
#ifndef TERN_COLL_TUNING_H
#define TERN_COLL_TUNING_H

#include "coll/sched.h"

#define COLL_TUNING_VERSION 2
#define COLL_TUNING_MAX_BYTES (512u << 10) /* larger is not ours (and must fit a store value) */

typedef struct coll_tuned_model {
  coll_transport_kind tr;
  int hosts, n; /* hosts 1: n ranks on one host; else n / hosts ranks on each of them */
  coll_net_model m;
} coll_tuned_model;

typedef struct coll_tuned_time {
  coll_transport_kind tr;
  int hosts, n;
  coll_kind kind;
  double bytes;
  coll_algo algo, inner; /* inner: hier's inter-host algorithm (RING otherwise) */
  double secs;           /* one call, > 0 */
} coll_tuned_time;

typedef struct coll_tuning {
  bool use_builtin; /* `tern tune` found the built-in model at least as good: no tuned choice */
  bool use_table;
  coll_tuned_model *models;
  size_t nmodels;
  coll_tuned_time *times;
  size_t ntimes;
} coll_tuning;

/* Parses text (len bytes) into t; `what` names the source in messages ("tuning file X"). */
tern_status coll_tuning_parse(coll_tuning *t, const char *text, size_t len, const char *what,
                              core_err *err);
void coll_tuning_free(coll_tuning *t);
/* Reads and parses a file (at most COLL_TUNING_MAX_BYTES). *text gets the bytes (malloc'd,
 * caller frees), to hand to the other ranks. */
tern_status coll_tuning_load(coll_tuning *t, const char *path, char **text, size_t *len,
                             core_err *err);
/* The default path: $XDG_CACHE_HOME/tern/tuning, else $HOME/.cache/tern/tuning. */
void coll_tuning_default_path(char *out, size_t len);

/* The tuned choice for (transport, n, kind, bytes) on one host: the algorithm whose measured
 * times at n, interpolated to bytes, are the least (table), or coll_select with the constants
 * fitted at n (model); AUTO when the file has nothing for this transport, n and collective (a
 * rank count not measured is the built-in model's: standing in for it, the nearest measured one
 * picked worse, docs/TUNING.md), or says "use builtin". Deterministic. */
coll_algo coll_tuning_select(const coll_tuning *t, coll_transport_kind tr, coll_kind kind, int n,
                             size_t count, size_t elem_size);
/* The same across hosts, for a's collective and placement (H hosts, n ranks): from the rows
 * measured at H x (n / H) (table), or coll_select_hosts with intra and the inter-host constants
 * fitted there (model). *inner: hier's inter-host algorithm. AUTO when the file has nothing
 * there for a's collective. */
coll_algo coll_tuning_select_hosts(const coll_tuning *t, const coll_args *a, size_t elem_size,
                                   const coll_net_model *intra, coll_algo *inner);
/* Parses RANKS (N or HxP, see above) into *hosts and *n; false when it is neither. */
bool coll_tuning_parse_ranks(const char *s, int *hosts, int *n);
/* Parses an algorithm as the file names it: a name, or hier:ring / hier:rhd. */
bool coll_tuning_parse_algo(const char *s, coll_algo *algo, coll_algo *inner);

/* ---- fitting (fit.c) --------------------------------------------------------------------- */

/* The built-in model whose pricing of a schedule's terms (which bytes beta counts) a fit for
 * transport tr is made under, and whose rules its fitted constants then keep. */
const coll_net_model *coll_fit_reference(coll_transport_kind tr);

/* The terms of coll_sched_cost for one schedule: time = alpha a + o b + beta c + gamma d. */
typedef struct coll_cost_terms {
  double a, b, c, d;
} coll_cost_terms;

/* The terms of the rank whose schedule of (kind, algo, n, count) costs most under ref: the
 * critical path. scratch is any schedule storage. */
tern_status coll_cost_terms_of(coll_kind kind, coll_algo algo, int n, size_t count,
                               size_t elem_size, const coll_net_model *ref, coll_sched *scratch,
                               coll_cost_terms *out);
/* Least squares with non-negative constants: the model minimising the squared relative error of
 * predicted against measured times (relative, so that 8 B and 64 MiB weigh alike). */
coll_net_model coll_fit_model(const coll_cost_terms *terms, const double *secs, size_t n);

#endif /* TERN_COLL_TUNING_H */

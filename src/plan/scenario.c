/* scenario.c: reading a scenario file (JSON, through jansson) into a cluster and its jobs.
 *
 * The format is the fixtures' (data/scenarios/geo-six-regions.json): "gpu_types" (an object of
 * types), "regions", "links" and "jobs" (arrays of objects) and "assumptions" (mfu, pue,
 * memory_usable_fraction; defaults 0.35, 1.2, 0.9, see docs/PLANNING.md). Units are the file's
 * (Gbit/s, ms, GB, billions of parameters) and are converted here, once.
 *
 * Every error says the file, the line and what is wrong: jansson gives the line of a syntax
 * error; for a value that parses but cannot be (a negative bandwidth, a link to an unknown
 * region, a job that fits nowhere) plan_json_line finds the line of the value in the text.
 * A field that is missing is an error, never a silent zero.
 */
#include "plan/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB 1073741824.0 /* a GPU's "48 GB" is 48 GiB of device memory */

typedef struct ctx {
  const char *file, *text;
  size_t len;
  core_err *err;
  plan_scenario *s;
} ctx;

/* "file:line: path: what": the line of path in the text, or of its nearest parent found. */
static tern_status fail_at(ctx *x, const char *path, const char *fmt, ...) CORE_PRINTF(3, 4);
static tern_status fail_at(ctx *x, const char *path, const char *fmt, ...) {
  char what[CORE_ERR_LEN], p[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(p, sizeof p, "%s", path);
  int line = 0;
  while ((line = plan_json_line(x->text, x->len, p)) == 0 && p[0]) {
    char *cut = strrchr(p, '.'), *br = strrchr(p, '[');
    if (br > cut) cut = br;
    if (cut)
      *cut = '\0';
    else
      p[0] = '\0';
  }
  if (line == 0) line = 1;
  return core_err_set(x->err, TERN_ERR_INVALID_ARG, "%s:%d: %s%s%s", x->file, line, path,
                      path[0] ? ": " : "", what);
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* The physical range of every number a scenario file holds, in the file's units. Each is wide
 * enough for any real cluster and narrow enough that every time and cost the models derive stays
 * finite and every loop over them ends (docs/PLANNING.md, "Scenario files"). */
typedef struct limit {
  double lo, hi;
  const char *unit;
} limit;

static const limit L_TFLOPS = {0.01, 1e5, "TFLOP/s"}, L_POWER = {1, 1e5, "W"},
                   L_MEMORY = {0.1, 1e5, "GB"}, L_GPUS = {1, 1e6, "GPUs"},
                   L_PRICE = {0, 100, "USD/kWh"}, L_GBPS = {0.001, 1e5, "Gbit/s"},
                   L_LATENCY = {0, 1e4, "ms"}, L_PARAMS = {1e-6, 1e5, "billion parameters"},
                   L_LAYERS = {1, PLAN_MAX_STAGES, "layers"}, L_HIDDEN = {1, 1 << 20, ""},
                   L_SEQ = {1, 1 << 24, "tokens"}, L_MB_SEQS = {1, 1 << 16, "sequences"},
                   L_MBS = {1, 1 << 20, "micro-batches"}, L_TOKENS = {1, 1e15, "tokens"},
                   L_ARRIVAL = {0, 3.2e8, "s (ten years)"}, L_DTYPE = {1, 8, "bytes"},
                   L_MFU = {0.001, 1, ""}, L_PUE = {1, 10, ""}, L_MEMFRAC = {0.01, 1, ""},
                   L_WEIGHT = {0, 1000, ""}, L_DEADLINE = {0.001, 87660, "h (ten years)"},
                   L_BUDGET = {0.01, 1e9, "USD"};

/* A number field within its limit. */
static tern_status get_num(ctx *x, const json_t *o, const char *base, const char *key,
                           const limit *lim, double *out) {
  char path[160];
  *out = 0;
  snprintf(path, sizeof path, "%s.%s", base, key);
  const json_t *v = json_object_get(o, key);
  if (v == NULL) return fail_at(x, base, "missing \"%s\"", key);
  if (!json_is_number(v)) return fail_at(x, path, "expected a number, got %s", type_name(v));
  double d = json_number_value(v);
  if (!isfinite(d) || d < lim->lo || d > lim->hi)
    return fail_at(x, path, "%g is out of range: valid is %g to %g%s%s", d, lim->lo, lim->hi,
                   lim->unit[0] ? " " : "", lim->unit);
  *out = d;
  return TERN_OK;
}

static tern_status get_int(ctx *x, const json_t *o, const char *base, const char *key,
                           const limit *lim, int *out) {
  double d;
  tern_status st = get_num(x, o, base, key, lim, &d);
  if (st != TERN_OK) return st;
  if (d != floor(d)) {
    char path[160];
    snprintf(path, sizeof path, "%s.%s", base, key);
    return fail_at(x, path, "%g is not a whole number", d);
  }
  *out = (int)d;
  return TERN_OK;
}

static tern_status get_str(ctx *x, const json_t *o, const char *base, const char *key, char *out) {
  char path[160];
  snprintf(path, sizeof path, "%s.%s", base, key);
  const json_t *v = json_object_get(o, key);
  if (v == NULL) return fail_at(x, base, "missing \"%s\"", key);
  if (!json_is_string(v)) return fail_at(x, path, "expected a string, got %s", type_name(v));
  size_t n = strlen(json_string_value(v));
  if (n == 0 || n >= PLAN_NAME_LEN)
    return fail_at(x, path, "a name of 1 to %d characters, got %zu", PLAN_NAME_LEN - 1, n);
  memcpy(out, json_string_value(v), n + 1);
  return TERN_OK;
}

/* The array at key, non-empty and at most max long. */
static tern_status get_array(ctx *x, const json_t *root, const char *key, size_t max,
                             const json_t **out) {
  const json_t *v = json_object_get(root, key);
  if (v == NULL) return fail_at(x, "", "missing \"%s\"", key);
  if (!json_is_array(v)) return fail_at(x, key, "expected an array, got %s", type_name(v));
  if (json_array_size(v) == 0) return fail_at(x, key, "is empty");
  if (json_array_size(v) > max)
    return fail_at(x, key, "%zu entries, at most %zu are supported", json_array_size(v), max);
  *out = v;
  return TERN_OK;
}

static tern_status read_types(ctx *x, const json_t *root) {
  plan_cluster *c = &x->s->c;
  const json_t *types = json_object_get(root, "gpu_types"), *t;
  const char *name;
  if (types == NULL) return fail_at(x, "", "missing \"gpu_types\"");
  if (!json_is_object(types) || json_object_size(types) == 0)
    return fail_at(x, "gpu_types", "expected a non-empty object of GPU types");
  if (json_object_size(types) > PLAN_MAX_TYPES)
    return fail_at(x, "gpu_types", "at most %d types are supported", PLAN_MAX_TYPES);
  json_object_foreach((json_t *)types, name, t) {
    char base[128];
    plan_gpu_type *g = &c->types[c->ntypes];
    snprintf(base, sizeof base, "gpu_types.%s", name);
    if (!json_is_object(t)) return fail_at(x, base, "expected an object, got %s", type_name(t));
    if (strlen(name) >= PLAN_NAME_LEN) return fail_at(x, base, "name too long");
    strcpy(g->name, name);
    const char *peak = json_object_get(t, "peak_tflops") ? "peak_tflops" : "peak_tflops_bf16";
    double tflops = 0, gb = 0;
    tern_status st;
    if ((st = get_num(x, t, base, peak, &L_TFLOPS, &tflops)) != TERN_OK ||
        (st = get_num(x, t, base, "power_w", &L_POWER, &g->power_w)) != TERN_OK ||
        (st = get_num(x, t, base, "memory_gb", &L_MEMORY, &gb)) != TERN_OK)
      return st;
    g->peak_flops = tflops * 1e12;
    g->memory_bytes = gb * GIB;
    c->ntypes++;
  }
  return TERN_OK;
}

static tern_status read_price(ctx *x, const json_t *o, const char *base, plan_region *r) {
  const json_t *v = json_object_get(o, "price_usd_per_kwh");
  if (v == NULL || json_is_number(v)) {
    double p;
    tern_status st = get_num(x, o, base, "price_usd_per_kwh", &L_PRICE, &p);
    for (int h = 0; h < 24; h++)
      r->price[h] = p;
    return st;
  }
  char path[160];
  snprintf(path, sizeof path, "%s.price_usd_per_kwh", base);
  if (!json_is_array(v) || json_array_size(v) != 24)
    return fail_at(x, path, "expected a price or an array of 24 hourly prices (UTC)");
  for (int h = 0; h < 24; h++) {
    const json_t *e = json_array_get(v, (size_t)h);
    double p = json_is_number(e) ? json_number_value(e) : -1;
    if (!(p >= L_PRICE.lo && p <= L_PRICE.hi))
      return fail_at(x, path, "hour %d: not a price: valid is %g to %g %s", h, L_PRICE.lo,
                     L_PRICE.hi, L_PRICE.unit);
    r->price[h] = p;
  }
  return TERN_OK;
}

static tern_status read_region(ctx *x, const json_t *o, int i) {
  plan_cluster *c = &x->s->c;
  plan_region *r = &c->regions[i];
  char base[64], gpu[PLAN_NAME_LEN];
  double gbps;
  tern_status st;
  snprintf(base, sizeof base, "regions[%d]", i);
  if (!json_is_object(o)) return fail_at(x, base, "expected an object, got %s", type_name(o));
  if ((st = get_str(x, o, base, "name", r->name)) != TERN_OK ||
      (st = get_str(x, o, base, "gpu", gpu)) != TERN_OK ||
      (st = get_int(x, o, base, "gpus", &L_GPUS, &r->gpus)) != TERN_OK ||
      (st = read_price(x, o, base, r)) != TERN_OK ||
      (st = get_num(x, o, base, "intra_bandwidth_gbps", &L_GBPS, &gbps)) != TERN_OK)
    return st;
  r->intra_Bps = gbps * 1e9 / 8;
  r->type = -1;
  for (int t = 0; t < c->ntypes; t++)
    if (strcmp(c->types[t].name, gpu) == 0) r->type = t;
  if (r->type < 0) return fail_at(x, base, "region \"%s\": unknown GPU type \"%s\"", r->name, gpu);
  for (int k = 0; k < i; k++)
    if (strcmp(c->regions[k].name, r->name) == 0)
      return fail_at(x, base, "a second region named \"%s\"", r->name);
  return TERN_OK;
}

static tern_status read_link(ctx *x, const json_t *o, int i) {
  plan_cluster *c = &x->s->c;
  char base[64], a[PLAN_NAME_LEN], b[PLAN_NAME_LEN], path[96];
  double ms, gbps;
  tern_status st;
  snprintf(base, sizeof base, "links[%d]", i);
  if (!json_is_object(o)) return fail_at(x, base, "expected an object, got %s", type_name(o));
  if ((st = get_str(x, o, base, "a", a)) != TERN_OK ||
      (st = get_str(x, o, base, "b", b)) != TERN_OK)
    return st;
  int ra = plan_region_find(c, a), rb = plan_region_find(c, b);
  snprintf(path, sizeof path, "%s.%s", base, ra < 0 ? "a" : "b");
  if (ra < 0 || rb < 0) return fail_at(x, path, "unknown region \"%s\"", ra < 0 ? a : b);
  if (ra == rb) return fail_at(x, base, "a link from \"%s\" to itself", a);
  if (plan_link_at(c, ra, rb)->Bps > 0)
    return fail_at(x, base, "a second link between \"%s\" and \"%s\"", a, b);
  if ((st = get_num(x, o, base, "latency_ms", &L_LATENCY, &ms)) != TERN_OK ||
      (st = get_num(x, o, base, "bandwidth_gbps", &L_GBPS, &gbps)) != TERN_OK)
    return st;
  plan_link l = {ms / 1e3, gbps * 1e9 / 8};
  c->links[(size_t)ra * (size_t)c->nregions + (size_t)rb] = l;
  c->links[(size_t)rb * (size_t)c->nregions + (size_t)ra] = l;
  return TERN_OK;
}

/* A job's optional `objective`: {weight_jct, weight_cost, deadline_h, budget_usd}, each
 * optional (docs/PLANNING.md, "Objectives"). */
static tern_status read_objective(ctx *x, const json_t *job, const char *jbase,
                                  plan_objective *ob) {
  *ob = PLAN_OBJECTIVE_DEFAULT;
  const json_t *o = json_object_get(job, "objective");
  if (o == NULL) return TERN_OK;
  char base[80];
  snprintf(base, sizeof base, "%s.objective", jbase);
  if (!json_is_object(o)) return fail_at(x, base, "expected an object, got %s", type_name(o));
  static const char *const known[] = {"weight_jct", "weight_cost", "deadline_h", "budget_usd"};
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    bool ok = false;
    for (size_t k = 0; k < CORE_ARRAY_LEN(known); k++)
      ok = ok || strcmp(key, known[k]) == 0;
    if (!ok)
      return fail_at(x, base,
                     "unknown field \"%s\": valid are weight_jct, weight_cost, deadline_h, "
                     "budget_usd",
                     key);
  }
  tern_status st = TERN_OK;
  double hours = 0;
  if (json_object_get(o, "weight_jct"))
    st = get_num(x, o, base, "weight_jct", &L_WEIGHT, &ob->w_jct);
  if (st == TERN_OK && json_object_get(o, "weight_cost"))
    st = get_num(x, o, base, "weight_cost", &L_WEIGHT, &ob->w_cost);
  if (st == TERN_OK && json_object_get(o, "deadline_h"))
    st = get_num(x, o, base, "deadline_h", &L_DEADLINE, &hours);
  if (st == TERN_OK && json_object_get(o, "budget_usd"))
    st = get_num(x, o, base, "budget_usd", &L_BUDGET, &ob->budget_usd);
  if (st != TERN_OK) return st;
  if (ob->w_jct + ob->w_cost <= 0)
    return fail_at(x, base, "weight_jct and weight_cost are both 0: one must be > 0");
  ob->deadline_s = hours * 3600;
  ob->given = true;
  return TERN_OK;
}

static tern_status read_job(ctx *x, const json_t *o, int i) {
  plan_job *j = &x->s->jobs[i];
  char base[64];
  double params_b;
  tern_status st;
  snprintf(base, sizeof base, "jobs[%d]", i);
  if (!json_is_object(o)) return fail_at(x, base, "expected an object, got %s", type_name(o));
  if ((st = get_str(x, o, base, "name", j->name)) != TERN_OK ||
      (st = get_num(x, o, base, "params_b", &L_PARAMS, &params_b)) != TERN_OK ||
      (st = get_int(x, o, base, "layers", &L_LAYERS, &j->layers)) != TERN_OK ||
      (st = get_int(x, o, base, "hidden", &L_HIDDEN, &j->hidden)) != TERN_OK ||
      (st = get_int(x, o, base, "seq_len", &L_SEQ, &j->seq_len)) != TERN_OK ||
      (st = get_int(x, o, base, "microbatch_sequences", &L_MB_SEQS, &j->mb_seqs)) != TERN_OK ||
      (st = get_int(x, o, base, "microbatches", &L_MBS, &j->microbatches)) != TERN_OK ||
      (st = get_num(x, o, base, "tokens", &L_TOKENS, &j->tokens)) != TERN_OK ||
      (st = get_num(x, o, base, "arrival_s", &L_ARRIVAL, &j->arrival_s)) != TERN_OK ||
      (st = get_int(x, o, base, "dtype_bytes", &L_DTYPE, &j->dtype_bytes)) != TERN_OK ||
      (st = read_objective(x, o, base, &j->objective)) != TERN_OK)
    return st;
  j->params = params_b * 1e9;
  for (int k = 0; k < i; k++)
    if (strcmp(x->s->jobs[k].name, j->name) == 0)
      return fail_at(x, base, "a second job named \"%s\"", j->name);
  return TERN_OK;
}

static tern_status read_assumptions(ctx *x, const json_t *root) {
  plan_cluster *c = &x->s->c;
  const json_t *a = json_object_get(root, "assumptions");
  c->mfu = 0.35;
  c->pue = 1.2;
  c->mem_fraction = 0.9;
  if (a == NULL) return TERN_OK;
  if (!json_is_object(a)) return fail_at(x, "assumptions", "expected an object");
  tern_status st = TERN_OK;
  if (json_object_get(a, "mfu")) st = get_num(x, a, "assumptions", "mfu", &L_MFU, &c->mfu);
  if (st == TERN_OK && json_object_get(a, "pue"))
    st = get_num(x, a, "assumptions", "pue", &L_PUE, &c->pue);
  if (st == TERN_OK && json_object_get(a, "memory_usable_fraction"))
    st = get_num(x, a, "assumptions", "memory_usable_fraction", &L_MEMFRAC, &c->mem_fraction);
  return st;
}

/* The simulator keeps one slot per GPU: a million is far past any real cluster. */
static tern_status check_total(ctx *x) {
  int total = plan_cluster_total_gpus(&x->s->c); /* at most 1024 regions x 1e6: fits an int */
  return total <= PLAN_MAX_GPUS ? TERN_OK
                                : fail_at(x, "regions", "%d GPUs in all: at most %d are supported",
                                          total, PLAN_MAX_GPUS);
}

/* Each array's elements through fn. */
static tern_status read_each(ctx *x, const json_t *arr,
                             tern_status (*fn)(ctx *, const json_t *, int)) {
  for (size_t i = 0; i < json_array_size(arr); i++) {
    tern_status st = fn(x, json_array_get(arr, i), (int)i);
    if (st != TERN_OK) return st;
  }
  return TERN_OK;
}

static tern_status read_root(ctx *x, const json_t *root) {
  const json_t *regions, *links, *jobs;
  tern_status st;
  if (!json_is_object(root)) return fail_at(x, "", "expected an object at the top");
  if (json_is_string(json_array_get(json_object_get(root, "regions"), 0)))
    return fail_at(x, "regions",
                   "names only: a links-only file (make a scenario on its links "
                   "with `tern plan gen --links %s`)",
                   x->file);
  if ((st = read_types(x, root)) != TERN_OK ||
      (st = get_array(x, root, "regions", PLAN_MAX_REGIONS, &regions)) != TERN_OK ||
      (st = get_array(x, root, "jobs", 1000000, &jobs)) != TERN_OK ||
      (st = read_assumptions(x, root)) != TERN_OK)
    return st;
  links = json_object_get(root, "links");
  if (links != NULL && !json_is_array(links)) return fail_at(x, "links", "expected an array");
  if ((st = plan_cluster_alloc(&x->s->c, (int)json_array_size(regions), x->err)) != TERN_OK)
    return st;
  x->s->njobs = (int)json_array_size(jobs);
  x->s->jobs = calloc((size_t)x->s->njobs, sizeof *x->s->jobs);
  if (x->s->jobs == NULL) return core_err_set(x->err, TERN_ERR_NOMEM, "%s: jobs", x->file);
  if ((st = read_each(x, regions, read_region)) != TERN_OK || (st = check_total(x)) != TERN_OK ||
      (links && (st = read_each(x, links, read_link)) != TERN_OK) ||
      (st = read_each(x, jobs, read_job)) != TERN_OK)
    return st;
  int bad = -1;
  core_err why = {0};
  if (plan_scenario_check(x->s, &bad, &why) != TERN_OK) {
    char base[32];
    snprintf(base, sizeof base, "jobs[%d]", bad);
    return fail_at(x, base, "%s", why.msg);
  }
  return TERN_OK;
}

tern_status plan_scenario_parse(const char *name, const char *text, size_t len, plan_scenario *s,
                                core_err *err) {
  memset(s, 0, sizeof *s);
  snprintf(s->source, sizeof s->source, "%s", name);
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%s:%d:%d: not valid JSON: %s", name, jerr.line,
                        jerr.column, jerr.text);
  ctx x = {name, text, len, err, s};
  tern_status st = read_root(&x, root);
  json_decref(root);
  if (st != TERN_OK) plan_scenario_free(s);
  return st;
}

/* The whole file into a buffer the caller frees. Only a regular file of at most
 * PLAN_MAX_FILE_BYTES: the open does not block (a FIFO with no writer would), and a directory or
 * a device is refused by name before anything is read. */
#define PLAN_MAX_FILE_BYTES (256L << 20)
static tern_status read_file(const char *path, char **text, size_t *len, core_err *err) {
  *text = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return core_err_errno(err, errno, "%s: cannot open", path);
  struct stat sb;
  tern_status st = TERN_OK;
  if (fstat(fd, &sb) != 0) {
    st = core_err_errno(err, errno, "%s: cannot stat", path);
  } else if (!S_ISREG(sb.st_mode)) {
    st = core_err_set(err, TERN_ERR_INVALID_ARG, "%s: not a regular file (%s)", path,
                      S_ISDIR(sb.st_mode)    ? "a directory"
                      : S_ISFIFO(sb.st_mode) ? "a FIFO"
                      : S_ISSOCK(sb.st_mode) ? "a socket"
                                             : "a device");
  } else if (sb.st_size > PLAN_MAX_FILE_BYTES) {
    st = core_err_set(err, TERN_ERR_INVALID_ARG, "%s: %lld bytes: at most %ld are read", path,
                      (long long)sb.st_size, PLAN_MAX_FILE_BYTES);
  } else if ((*text = malloc((size_t)sb.st_size + 1)) == NULL) {
    st = core_err_set(err, TERN_ERR_NOMEM, "%s: %lld bytes", path, (long long)sb.st_size);
  }
  while (st == TERN_OK && *len < (size_t)sb.st_size) { /* each pass reads >= 1 byte or ends */
    ssize_t n = read(fd, *text + *len, (size_t)sb.st_size - *len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) st = core_err_errno(err, n < 0 ? errno : EIO, "%s: cannot read", path);
    if (n > 0) *len += (size_t)n;
  }
  close(fd);
  if (st != TERN_OK) {
    free(*text);
    *text = NULL;
    *len = 0;
  }
  return st;
}

tern_status plan_scenario_load(const char *path, plan_scenario *s, core_err *err) {
  memset(s, 0, sizeof *s);
  char *text = NULL;
  size_t len = 0;
  tern_status st = read_file(path, &text, &len, err);
  if (st == TERN_OK) st = plan_scenario_parse(path, text, len, s, err);
  free(text);
  return st;
}

/* A links-only file (aws-10-regions.json): "regions" as names, and "links". */
static tern_status read_links_root(ctx *x, const json_t *root) {
  const json_t *regions, *links;
  tern_status st;
  if (!json_is_object(root)) return fail_at(x, "", "expected an object at the top");
  if ((st = get_array(x, root, "regions", PLAN_MAX_REGIONS, &regions)) != TERN_OK ||
      (st = get_array(x, root, "links", 1000000, &links)) != TERN_OK ||
      (st = plan_cluster_alloc(&x->s->c, (int)json_array_size(regions), x->err)) != TERN_OK)
    return st;
  for (size_t i = 0; i < json_array_size(regions); i++) {
    const json_t *v = json_array_get(regions, i);
    char path[32];
    snprintf(path, sizeof path, "regions[%zu]", i);
    size_t n = json_is_string(v) ? strlen(json_string_value(v)) : 0;
    if (n == 0 || n >= PLAN_NAME_LEN)
      return fail_at(x, path, "expected a region name of 1 to %d characters", PLAN_NAME_LEN - 1);
    if (plan_region_find(&x->s->c, json_string_value(v)) >= 0)
      return fail_at(x, path, "a second region named \"%s\"", json_string_value(v));
    strcpy(x->s->c.regions[i].name, json_string_value(v));
  }
  return read_each(x, links, read_link);
}

tern_status plan_links_load(const char *path, plan_cluster *c, core_err *err) {
  plan_scenario s = {0};
  char *text = NULL;
  size_t len = 0;
  tern_status st = read_file(path, &text, &len, err);
  if (st != TERN_OK) return st;
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL) {
    st = core_err_set(err, TERN_ERR_INVALID_ARG, "%s:%d:%d: not valid JSON: %s", path, jerr.line,
                      jerr.column, jerr.text);
    goto fail;
  }
  ctx x = {path, text, len, err, &s};
  st = read_links_root(&x, root);
  json_decref(root);
  if (st == TERN_OK)
    *c = s.c;
  else
    plan_cluster_free(&s.c);
fail:
  free(text);
  return st;
}

void plan_scenario_free(plan_scenario *s) {
  plan_cluster_free(&s->c);
  free(s->jobs);
  s->jobs = NULL;
  s->njobs = 0;
}

tern_status plan_scenario_check(const plan_scenario *s, int *bad, core_err *err) {
  if (plan_cluster_total_gpus(&s->c) > PLAN_MAX_GPUS)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%d GPUs in all: at most %d are supported",
                        plan_cluster_total_gpus(&s->c), PLAN_MAX_GPUS);
  plan_demand *d = calloc((size_t)(s->njobs > 0 ? s->njobs : 1), sizeof *d);
  if (d == NULL) return core_err_set(err, TERN_ERR_NOMEM, "demands of %d jobs", s->njobs);
  bool ok = plan_jobs_demand(&s->c, s->jobs, s->njobs, d, bad, err);
  free(d);
  return ok ? TERN_OK : TERN_ERR_INVALID_ARG;
}

/* sim/coll_validate.c: `tern sim coll validate`: the simulator against the host it runs on.
 *
 * It measures, then predicts, then compares:
 *  1. calibration: `tern run -n 2 --bind none -- tern bench allgather` over TCP
 *     (TERN_TRANSPORT=tcp, the ring), out of place; unbound, as the 4- and 8-rank runs it
 *     predicts are (tern run binds only ranks that fit the CPUs, and a bound pair measures a
 *     faster loopback than the model's shared cores then see): one exchange of m bytes each way per
 * size, and the copy of the rank's own block (coll_model_shm's beta), taken off. On a loopback the
 * "network" is the kernel copying on the ranks' own cores, so the platform puts every rank on one
 * host with the host's cores and makes each message cost CPU: half the exchange's time on each end,
 * as a table over m (sim_platform's message costs). Reductions and copies cost coll_model_shm's
 * measured gamma and beta. Nothing else is fitted.
 *  2. measurement: the same bench, out of place, for every (ranks, collective, algorithm) asked,
 *     TERN_ALGO forcing the algorithm;
 *  3. simulation of the same runs on the calibrated platform, and a table of both times.
 * Every bench runs --repeat times, round by round (so that a burst of other work lands on all
 * benches alike), and each time is the median of its runs, calibration and measurements alike:
 * a VM's loopback can be bimodal (the same exchange takes one time or half again as much,
 * run to run), and the median takes the same mode for both. While some cell disagrees, up to
 * --retries more rounds. It exits 1 when a cell is off by more than --tolerance (default 0.25,
 * the 25%).
 *
 * With --from FILE it measures nothing: it reads a validation's output (the calibration line and
 * the measured column) and simulates those cells again, which is how the unit test holds the
 * simulator to a recorded host's figures without timing anything itself.
 */
#include "tern/cmd.h"
#include "sim_coll.h"

#include "sim/coll.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES 20
#define MAX_NS 8

typedef struct vopts {
  int ns[MAX_NS], nns;
  bool kinds[COLL_NUM_KINDS], algos[COLL_NUM_ALGOS];
  size_t min_bytes, max_bytes;
  int factor, repeat, retries, iters;
  double tolerance;
  const char *from; /* --from: a recorded validation to simulate again, instead of measuring */
  char self[1024];
} vopts;

#define MAX_RUNS 32
enum {
  SPECS_CAP = 1 + MAX_NS * COLL_NUM_KINDS * COLL_NUM_ALGOS,
  CELLS_CAP = SPECS_CAP * MAX_SIZES
};

/* A bench's out-of-place times in us, per size (n of them) and per run (runs of them). */
typedef struct bench_times {
  size_t bytes[MAX_SIZES];
  double us[MAX_RUNS][MAX_SIZES];
  int n, runs;
} bench_times;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median over runs of size i's time, in seconds. */
static double median_s(const bench_times *t, int i) {
  double v[MAX_RUNS] = {0};
  for (int r = 0; r < t->runs; r++)
    v[r] = t->us[r][i];
  qsort(v, (size_t)t->runs, sizeof v[0], cmp_double);
  double m = t->runs % 2 ? v[t->runs / 2] : (v[t->runs / 2 - 1] + v[t->runs / 2]) / 2;
  return m * 1e-6;
}

static int vusage(void) {
  fprintf(stderr, "usage: tern sim coll validate [-n N[,N..]] [-c COLL[,..]] [-a ALGO[,..]] "
                  "[-b MIN] [-e MAX] [-f FACTOR]\n"
                  "         [--repeat K] [--retries R] [--iters I] [--tolerance T]\n"
                  "       tern sim coll validate --from FILE [--tolerance T]   (a recorded run)\n"
                  "  defaults: -n 2,4,8 -c allreduce,reduce_scatter,allgather -a ring,rhd "
                  "-b 256K -e 4M -f 4 --repeat 5 --retries 4 --iters 10 --tolerance 0.25\n");
  return 2;
}

/* Runs one bench and adds its times to t as one more run. */
static bool bench_once(const vopts *o, int n, const char *coll, coll_algo algo, size_t lo,
                       size_t hi, int factor, bench_times *t) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "TERN_TRANSPORT=tcp TERN_ALGO=%s timeout 120 '%s' run -n %d --bind none -- '%s' bench "
           "%s -b %zu "
           "-e %zu -f %d -n %d -w 3 -c 0",
           coll_algo_name(algo), o->self, n, o->self, coll, lo, hi, factor, o->iters);
  FILE *p = popen(cmd, "r");
  if (p == NULL) return false;
  char line[512];
  int i = 0, r = t->runs;
  while (fgets(line, sizeof line, p) && i < MAX_SIZES && r < MAX_RUNS) {
    /* size count type redop root time algbw busbw #wrong time algbw busbw #wrong */
    char *f[13], *save = NULL;
    int nf = 0;
    for (char *w = strtok_r(line, " \t\n", &save); w && nf < 13; w = strtok_r(NULL, " \t\n", &save))
      f[nf++] = w;
    if (nf < 10 || f[0][0] == '#') continue;
    t->bytes[i] = strtoull(f[0], NULL, 10);
    t->us[r][i++] = strtod(f[5], NULL);
  }
  bool ok = pclose(p) == 0 && i > 0 && (r == 0 || i == t->n);
  if (ok) t->n = i, t->runs = r + 1;
  return ok;
}

/* One bench to run: the calibration (specs[0]) or a measurement. */
typedef struct spec {
  int n;
  coll_kind kind;
  coll_algo algo;
  size_t lo, hi;
  int factor;
  bench_times t;
} spec;

/* Runs every bench once more. */
static bool bench_round(const vopts *o, spec *specs, int nspecs) {
  for (int i = 0; i < nspecs; i++) {
    spec *sp = &specs[i];
    if (!bench_once(o, sp->n, coll_kind_name(sp->kind), sp->algo, sp->lo, sp->hi, sp->factor,
                    &sp->t)) {
      fprintf(stderr, "tern sim coll validate: tern bench %s over %d ranks failed\n",
              coll_kind_name(sp->kind), sp->n);
      return false;
    }
  }
  return true;
}

/* The platform: one host of the given cores; messages will cost what calibration says. */
static void platform_base(sim_platform *p, int cores) {
  sim_platform_cluster(p, 1, 2);
  p->cores = cores;
  p->shm_bw = 1e12; /* the copies are CPU (the message costs); the link only delivers */
  p->shm_lat = 0;
  p->copy_cpu = coll_model_shm.beta;
  p->reduce_cpu = coll_model_shm.gamma;
}

/* The platform of the host's cores, calibrated on the 2-rank allgather's times. */
static bool calibrate(const bench_times *t, sim_platform *p) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  platform_base(p, cores > 0 ? (int)cores : 1);
  /* Out of place, as the runs it predicts: the exchange and the copy of the rank's own block,
   * whose cost is known. */
  for (int i = 0; i < t->n && p->ncost < SIM_COST_POINTS; i++) {
    double m = (double)t->bytes[i] / 2, x = median_s(t, i) - p->copy_cpu * m;
    if (!(x > 0)) continue;
    p->cost_bytes[p->ncost] = m;
    p->cost_s[p->ncost++] = x / 2;
  }
  return p->ncost >= 2;
}

/* A cell: measured and simulated us of one (ranks, collective, algorithm, size). */
typedef struct cell {
  int n;
  coll_kind kind;
  coll_algo algo;
  size_t bytes;
  double measured, simulated;
} cell;

/* The cells of the measurements (specs[1..]): one per (ranks, collective, algorithm, size). */
static int cells_from_specs(const spec *specs, int nspecs, cell *cells, int cap) {
  int ncells = 0;
  for (int i = 1; i < nspecs; i++)
    for (int k = 0; k < specs[i].t.n && ncells < cap; k++)
      cells[ncells++] = (cell){specs[i].n,
                               specs[i].kind,
                               specs[i].algo,
                               specs[i].t.bytes[k],
                               median_s(&specs[i].t, k) * 1e6,
                               NAN};
  return ncells;
}

/* Simulates the cells of n ranks on the calibrated platform, one SimGrid run for all of them. */
static bool simulate_n(const sim_platform *calib, int n, cell *cells, int ncells) {
  sim_platform p = *calib;
  p.ranks_per_host = n;
  sim_coll_job jobs[COLL_NUM_KINDS * COLL_NUM_ALGOS * MAX_SIZES];
  int at[COLL_NUM_KINDS * COLL_NUM_ALGOS * MAX_SIZES], nj = 0;
  for (int i = 0; i < ncells && nj < (int)CORE_ARRAY_LEN(jobs); i++) {
    size_t count = sim_cli_count(cells[i].kind, (double)cells[i].bytes, n, 4);
    if (cells[i].n != n || count == 0) continue;
    at[nj] = i;
    jobs[nj++] = (sim_coll_job){
        .kind = cells[i].kind, .algo = cells[i].algo, .count = count, .elem_size = 4};
  }
  core_err err = {0};
  if (nj > 0 && sim_coll_run(&p, jobs, (size_t)nj, 600, &err) != TERN_OK) {
    fprintf(stderr, "tern sim coll validate: %s\n", err.msg);
    return false;
  }
  for (int j = 0; j < nj; j++)
    cells[at[j]].simulated = jobs[j].status == TERN_OK ? jobs[j].time * 1e6 : NAN;
  return true;
}

/* Simulates every cell, rank count by rank count. */
static bool simulate_all(const sim_platform *calib, cell *cells, int ncells) {
  for (int i = 0; i < ncells; i++) {
    bool first = true;
    for (int j = 0; j < i && first; j++)
      first = cells[j].n != cells[i].n;
    if (first && !simulate_n(calib, cells[i].n, cells, ncells)) return false;
  }
  return true;
}

static bool within(const vopts *o, const cell *c) {
  return fabs(c->simulated - c->measured) <= o->tolerance * c->measured;
}

static int report(const vopts *o, const sim_platform *calib, const cell *cells, int ncells,
                  int rounds) {
  printf("# calibration (2 ranks, allgather, ring), message bytes:CPU us on each end:");
  for (int i = 0; i < calib->ncost; i++)
    printf(" %.0f:%.2f", calib->cost_bytes[i], calib->cost_s[i] * 1e6);
  printf("\n# %d cores; the median of %d runs of %d calls each\n", calib->cores, rounds, o->iters);
  printf("| ranks | collective | algorithm | size (B) | measured (us) | simulated (us) | error |\n"
         "|---:|---|---|---:|---:|---:|---:|\n");
  int bad = 0;
  double worst = 0, sum = 0;
  for (int i = 0; i < ncells; i++) {
    const cell *c = &cells[i];
    double e = (c->simulated - c->measured) / c->measured;
    bad += !within(o, c);
    worst = fabs(e) > worst || isnan(e) ? fabs(e) : worst;
    sum += fabs(e);
    printf("| %d | %s | %s | %zu | %.1f | %.1f | %+.1f%%%s |\n", c->n, coll_kind_name(c->kind),
           coll_algo_name(c->algo), c->bytes, c->measured, c->simulated, 100 * e,
           within(o, c) ? "" : " !");
  }
  printf("# %d cells, %d within %.0f%%, mean |error| %.1f%%, worst %.1f%%\n", ncells, ncells - bad,
         100 * o->tolerance, ncells ? 100 * sum / ncells : 0.0, 100 * worst);
  return bad == 0 ? 0 : 1;
}

static bool parse_ns(const char *s, vopts *o) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", s);
  o->nns = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long v;
    if (o->nns == MAX_NS || !core_parse_int(t, 2, 64, &v)) return false;
    if (o->nns > 0 && v <= o->ns[o->nns - 1]) return false;
    o->ns[o->nns++] = (int)v;
  }
  return o->nns > 0;
}

static int vparse(vopts *o, int argc, char **argv) {
  static const struct option lo[] = {
      {"repeat", 1, 0, 'R'}, {"retries", 1, 0, 'X'}, {"iters", 1, 0, 'I'}, {"tolerance", 1, 0, 'T'},
      {"from", 1, 0, 'F'},   {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
  bool kinds = false, algos = false;
  int ch;
  long v;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "n:c:a:b:e:f:h", lo, NULL)) != -1) {
    bool ok;
    switch (ch) {
    case 'n':
      ok = parse_ns(optarg, o);
      break;
    case 'c':
      ok = kinds = sim_cli_kinds(optarg, o->kinds);
      break;
    case 'a':
      ok = algos = sim_cli_algos(optarg, o->algos);
      break;
    case 'b':
      ok = core_parse_size(optarg, &o->min_bytes);
      break;
    case 'e':
      ok = core_parse_size(optarg, &o->max_bytes);
      break;
    case 'f':
      ok = core_parse_int(optarg, 2, 1024, &v) && (o->factor = (int)v, true);
      break;
    case 'R':
      ok = core_parse_int(optarg, 1, MAX_RUNS / 2, &v) && (o->repeat = (int)v, true);
      break;
    case 'X':
      ok = core_parse_int(optarg, 0, MAX_RUNS / 2, &v) && (o->retries = (int)v, true);
      break;
    case 'I':
      ok = core_parse_int(optarg, 1, 100000, &v) && (o->iters = (int)v, true);
      break;
    case 'T':
      ok = (o->tolerance = atof(optarg)) > 0;
      break;
    case 'F':
      ok = *(o->from = optarg) != '\0';
      break;
    default:
      return vusage();
    }
    if (!ok) return cmd_usage_error("sim coll validate", "bad value '%s'", optarg);
  }
  if (optind != argc || o->min_bytes > o->max_bytes || o->min_bytes == 0) return vusage();
  if (!kinds) sim_cli_kinds("allreduce,reduce_scatter,allgather", o->kinds);
  if (!algos) sim_cli_algos("ring,rhd", o->algos);
  ssize_t len = readlink("/proc/self/exe", o->self, sizeof o->self - 1);
  if (len <= 0) return cmd_usage_error("sim coll validate", "cannot find the tern command");
  o->self[len] = '\0';
  return 0;
}

/* The benches: the calibration first, then one per (ranks, collective, algorithm). Its
 * messages run from a ring block of -b over the most ranks to half of -e (rhd's first). */
static int make_specs(const vopts *o, spec *specs, int cap) {
  size_t lo = CORE_MAX(o->min_bytes / (size_t)(4 * o->ns[o->nns - 1]), 64);
  int n = 0;
  specs[n++] = (spec){2, COLL_ALLGATHER, COLL_ALGO_RING, lo, o->max_bytes, 2};
  for (int i = 0; i < o->nns; i++)
    for (int k = 0; k < COLL_NUM_KINDS; k++)
      for (int a = 1; a < COLL_NUM_ALGOS && n < cap; a++)
        if (o->kinds[k] && o->algos[a] && coll_algo_supported((coll_kind)k, (coll_algo)a))
          specs[n++] =
              (spec){o->ns[i], (coll_kind)k, (coll_algo)a, o->min_bytes, o->max_bytes, o->factor};
  return n;
}

/* After --repeat rounds, and after each retry round, simulates on the calibration so far; stops
 * when every cell agrees or the retries are spent. */
static int validate(const vopts *o, spec *specs, int nspecs, cell *cells) {
  int ncells = 0, bad = 1, round = 0;
  sim_platform calib = {0};
  while (bad && round < o->repeat + o->retries) {
    if (!bench_round(o, specs, nspecs)) return 1;
    if (++round < o->repeat) continue;
    if (!calibrate(&specs[0].t, &calib)) {
      fprintf(stderr, "tern sim coll validate: the calibration bench gave no in-place times\n");
      return 1;
    }
    ncells = cells_from_specs(specs, nspecs, cells, CELLS_CAP);
    if (!simulate_all(&calib, cells, ncells)) return 1;
    bad = 0;
    for (int i = 0; i < ncells; i++)
      bad += !within(o, &cells[i]);
  }
  return report(o, &calib, cells, ncells, round);
}

/* One line of a recorded validation: the calibration's "bytes:us" pairs, the cores and runs,
 * or a table row. Returns false on a line that should be one of them and is not. */
static bool read_recorded_line(char *line, sim_platform *p, int *rounds, int *iters, cell *cells,
                               int *ncells) {
  if (strncmp(line, "# calibration", 13) == 0) {
    char *save = NULL;
    for (char *w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
      double m, us;
      int used = 0;
      if (sscanf(w, "%lf:%lf%n", &m, &us, &used) != 2 || w[used] != '\0') continue;
      if (p->ncost == SIM_COST_POINTS || !(m > 0) || !(us > 0)) return false;
      p->cost_bytes[p->ncost] = m;
      p->cost_s[p->ncost++] = us * 1e-6;
    }
    return true;
  }
  int cores, r, i; /* sscanf writes what matched of a line that does not match whole */
  if (sscanf(line, "# %d cores; the median of %d runs of %d calls", &cores, &r, &i) == 3) {
    p->cores = cores, *rounds = r, *iters = i;
    return cores > 0 && r > 0 && i > 0;
  }
  if (line[0] != '|' || strstr(line, "ranks |") || strstr(line, "---")) return true;
  char kind[32], algo[32];
  cell c = {.simulated = NAN};
  if (*ncells == CELLS_CAP || sscanf(line, "| %d | %31s | %31s | %zu | %lf |", &c.n, kind, algo,
                                     &c.bytes, &c.measured) != 5)
    return false;
  if (!coll_kind_parse(kind, &c.kind) || !coll_algo_parse(algo, &c.algo) || c.n < 2 ||
      !(c.measured > 0))
    return false;
  cells[(*ncells)++] = c;
  return true;
}

/* --from FILE: simulates again the measurements a validation recorded (its output, as
 * bench/scale/run.sh keeps it), on the platform its calibration line describes. The simulator
 * is then held to what the host measured, with no timing in the run itself. */
static int validate_recorded(vopts *o, cell *cells) {
  FILE *f = fopen(o->from, "r");
  if (f == NULL) return cmd_usage_error("sim coll validate", "cannot read '%s'", o->from);
  sim_platform p;
  platform_base(&p, 0);
  int rounds = 0, ncells = 0, lineno = 0;
  char line[1024];
  bool ok = true;
  while (ok && fgets(line, sizeof line, f)) {
    lineno++;
    ok = read_recorded_line(line, &p, &rounds, &o->iters, cells, &ncells);
  }
  fclose(f);
  if (!ok)
    return cmd_usage_error("sim coll validate", "%s:%d: not a line of a validation's output",
                           o->from, lineno);
  if (p.ncost < 2 || p.cores == 0 || ncells == 0)
    return cmd_usage_error("sim coll validate",
                           "%s: no calibration, cores line or measured cell in it", o->from);
  if (!simulate_all(&p, cells, ncells)) return 1;
  return report(o, &p, cells, ncells, rounds);
}

int cmd_sim_coll_validate(int argc, char **argv) {
  vopts o = {.ns = {2, 4, 8},
             .nns = 3,
             .min_bytes = 256 << 10,
             .max_bytes = 4 << 20,
             .factor = 4,
             .repeat = 5,
             .retries = 4,
             .iters = 10,
             .tolerance = 0.25};
  int rc = vparse(&o, argc, argv);
  if (rc != 0) return rc;
  spec *specs = calloc(SPECS_CAP, sizeof *specs);
  cell *cells = calloc(CELLS_CAP, sizeof *cells);
  if (specs == NULL || cells == NULL)
    rc = 1;
  else if (o.from)
    rc = validate_recorded(&o, cells);
  else
    rc = validate(&o, specs, make_specs(&o, specs, SPECS_CAP), cells);
  free(specs);
  free(cells);
  return rc;
}

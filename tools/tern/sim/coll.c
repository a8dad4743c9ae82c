/* sim/coll.c: `tern sim coll COLL ...`: tern's own schedules on a simulated platform.
 *
 * For every collective named, every size from -b to -e (times -f) and every algorithm asked
 * (default: each that has the collective), one simulated run (src/sim/coll.h) on the platform
 * the options describe; all of them in one simulation. Sizes are tern bench's (nccl-tests'):
 * the whole buffer, so n x count for allgather, reduce_scatter and alltoall. It prints the
 * simulated time, algbw and busbw per (collective, size, algorithm), marks the fastest with '*',
 * or with --csv writes one comma-separated line per run for the sweeps in bench/scale/.
 */
#include "tern/cmd.h"
#include "sim_coll.h"

#include "coll/select_learned.h"
#include "sim/coll.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
  sim_platform plat;
  bool kinds[COLL_NUM_KINDS], algos[COLL_NUM_ALGOS], csv, bound_only;
  size_t min_bytes, max_bytes;
  double factor, timeout;
  tern_dtype dt;
  int root, ranks;
} opts;

static int usage(void) {
  fprintf(
      stderr,
      "usage: tern sim coll COLL[,COLL..]|all [-b MIN] [-e MAX] [-f FACTOR] [-a ALGO[,..]|all]\n"
      "         [-d DTYPE] [-r ROOT] [-n RANKS] [--rph R] [--cores C]\n"
      "         [--topo flat|fat-tree|dragonfly|dragonfly-minimal|geo] [--topo-params P]\n"
      "         [--geo FILE]\n"
      "         [--regions K] [--nic-bw GBPS] [--nics K] [--nic-lat US] [--shm-bw GBPS]\n"
      "         [--shm-lat US] [--frontier]\n"
      "         [--msg-cpu US] [--byte-cpu NS] [--reduce-bw GBPS] [--copy-bw GBPS]\n"
      "         [--tcp-window BYTES] [--msg-cost B:US,..] [--timeout S] [--csv] [--bound-only]\n"
      "         [--steady K]\n"
      "  COLL: allreduce reduce_scatter allgather broadcast reduce alltoall barrier\n"
      "  Sizes are the whole buffer, as tern bench's; K, M, G suffixes. Defaults: -b 1K -e 64M\n"
      "  -f 4, every algorithm, f32, -n 8 ranks, 1 rank per host, a flat cluster of 25 GB/s\n"
      "  2 us NICs, shared memory 12.45 GB/s 0.34 us, 1 us of CPU per message, reductions at\n"
      "  8.1 GB/s (docs/SCALE.md). --bound-only builds every rank's plan and prints the most\n"
      "  local work of any rank, a lower bound on the time, without simulating. --frontier:\n"
      "  Frontier's nodes (8 ranks, four 25 GB/s NICs, 50 GB/s between GCDs, reductions at\n"
      "  500 GB/s and copies at 800 GB/s: docs/SCALE.md), options after it changing them.\n"
      "  --steady K (K >= 4): a phase repeated on every rank takes, from its K-th repeat on,\n"
      "  the least time of its repeats simulated after the first (docs/SCALE.md); default 0,\n"
      "  every message simulated.\n");
  return 2;
}

/* Sets flags[i] for each comma-separated name that parse recognises ("all": every one). */
static bool parse_list(const char *s, bool *flags, int n, bool (*parse)(const char *, int *)) {
  if (strcmp(s, "all") == 0) {
    for (int i = 0; i < n; i++)
      flags[i] = true;
    return true;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int i;
    if (!parse(tok, &i)) return false;
    flags[i] = true;
  }
  return true;
}

static bool parse_kind(const char *s, int *i) {
  coll_kind k;
  bool ok = coll_kind_parse(s, &k);
  *i = (int)k;
  return ok;
}
static bool parse_algo(const char *s, int *i) {
  coll_algo a;
  bool ok = coll_algo_parse(s, &a) && a != COLL_ALGO_AUTO;
  *i = (int)a;
  return ok;
}

bool sim_cli_kinds(const char *s, bool flags[COLL_NUM_KINDS]) {
  return parse_list(s, flags, COLL_NUM_KINDS, parse_kind);
}
bool sim_cli_algos(const char *s, bool flags[COLL_NUM_ALGOS]) {
  bool ok = parse_list(s, flags, COLL_NUM_ALGOS, parse_algo);
  flags[COLL_ALGO_AUTO] = false;
  return ok;
}

static bool per_rank_blocks(coll_kind k) {
  return k == COLL_ALLGATHER || k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL ||
         k == COLL_ALLTOALLV;
}

size_t sim_cli_count(coll_kind kind, double bytes, int n, size_t elem_size) {
  if (kind == COLL_BARRIER) return 0;
  return (size_t)bytes / (per_rank_blocks(kind) ? (size_t)n * elem_size : elem_size);
}

double sim_cli_bytes(coll_kind kind, size_t count, int n, size_t elem_size) {
  return (double)count * (double)elem_size * (per_rank_blocks(kind) ? n : 1);
}

/* A number > 0 (or >= 0 with zero_ok) times scale. */
static bool parse_num(const char *s, double scale, bool zero_ok, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !isfinite(v) || v < 0 || (v == 0 && !zero_ok)) return false;
  *out = v * scale;
  return true;
}

/* By sim_topo. */
static const char *const topo_names[] = {"flat", "fat-tree", "dragonfly", "geo",
                                         "dragonfly-minimal"};

static bool parse_topo(const char *s, sim_topo *t) {
  for (size_t i = 0; i < CORE_ARRAY_LEN(topo_names); i++)
    if (strcmp(s, topo_names[i]) == 0) return *t = (sim_topo)i, true;
  return false;
}

enum {
  O_RPH = 256,
  O_CORES,
  O_TOPO,
  O_PARAMS,
  O_GEO,
  O_REGIONS,
  O_NIC_BW,
  O_NIC_LAT,
  O_SHM_BW,
  O_SHM_LAT,
  O_MSG_CPU,
  O_BYTE_CPU,
  O_REDUCE_BW,
  O_COPY_BW,
  O_WINDOW,
  O_TIMEOUT,
  O_CSV,
  O_BOUND,
  O_COST,
  O_NICS,
  O_FRONTIER,
  O_STEADY
};

static const struct option long_opts[] = {{"rph", 1, 0, O_RPH},
                                          {"cores", 1, 0, O_CORES},
                                          {"topo", 1, 0, O_TOPO},
                                          {"topo-params", 1, 0, O_PARAMS},
                                          {"geo", 1, 0, O_GEO},
                                          {"regions", 1, 0, O_REGIONS},
                                          {"nic-bw", 1, 0, O_NIC_BW},
                                          {"nic-lat", 1, 0, O_NIC_LAT},
                                          {"shm-bw", 1, 0, O_SHM_BW},
                                          {"shm-lat", 1, 0, O_SHM_LAT},
                                          {"msg-cpu", 1, 0, O_MSG_CPU},
                                          {"byte-cpu", 1, 0, O_BYTE_CPU},
                                          {"reduce-bw", 1, 0, O_REDUCE_BW},
                                          {"copy-bw", 1, 0, O_COPY_BW},
                                          {"tcp-window", 1, 0, O_WINDOW},
                                          {"timeout", 1, 0, O_TIMEOUT},
                                          {"csv", 0, 0, O_CSV},
                                          {"bound-only", 0, 0, O_BOUND},
                                          {"msg-cost", 1, 0, O_COST},
                                          {"nics", 1, 0, O_NICS},
                                          {"frontier", 0, 0, O_FRONTIER},
                                          {"steady", 1, 0, O_STEADY},
                                          {"help", 0, 0, 'h'},
                                          {0, 0, 0, 0}};

/* "BYTES:US,BYTES:US,...": a message's CPU cost on each end by its size (sim_platform's table,
 * as `tern sim coll validate` prints its calibration). */
static bool parse_costs(const char *s, sim_platform *p) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", s);
  p->ncost = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(t, ':');
    if (colon == NULL || p->ncost == SIM_COST_POINTS) return false;
    *colon = '\0';
    if (!parse_num(t, 1, true, &p->cost_bytes[p->ncost]) ||
        !parse_num(colon + 1, 1e-6, true, &p->cost_s[p->ncost]))
      return false;
    p->ncost++;
  }
  return p->ncost > 0;
}

/* A bandwidth in GB/s as seconds per byte (0: free). */
static bool parse_rate(const char *s, double *sec_per_byte) {
  double bw;
  if (!parse_num(s, 1e9, true, &bw)) return false;
  *sec_per_byte = bw > 0 ? 1 / bw : 0;
  return true;
}

static bool parse_opt(opts *o, int ch, const char *arg, bool *cores_set) {
  sim_platform *p = &o->plat;
  long v;
  switch (ch) {
  case 'b':
    return core_parse_size(arg, &o->min_bytes);
  case 'e':
    return core_parse_size(arg, &o->max_bytes);
  case 'f':
    return parse_num(arg, 1, false, &o->factor) && o->factor > 1;
  case 'a':
    return sim_cli_algos(arg, o->algos);
  case 'd':
    return core_dtype_parse(arg, &o->dt);
  case 'r':
    return core_parse_int(arg, 0, 1 << 20, &v) && (o->root = (int)v, true);
  case 'n':
    return core_parse_int(arg, 1, 1 << 20, &v) && (o->ranks = (int)v, true);
  case O_RPH:
    return core_parse_int(arg, 1, 4096, &v) && (p->ranks_per_host = (int)v, true);
  case O_CORES:
    return core_parse_int(arg, 1, 4096, &v) && (p->cores = (int)v, *cores_set = true);
  case O_STEADY:
    return core_parse_int(arg, 0, 1 << 20, &v) && (v == 0 || v >= 4) && (p->steady = (int)v, true);
  case O_TOPO:
    return parse_topo(arg, &p->topo);
  case O_PARAMS:
    return snprintf(p->topo_params, sizeof p->topo_params, "%s", arg) > 0;
  case O_GEO:
    return snprintf(p->geo_file, sizeof p->geo_file, "%s", arg) > 0;
  case O_REGIONS:
    return core_parse_int(arg, 1, SIM_GEO_MAX_REGIONS, &v) && (p->regions = (int)v, true);
  case O_NIC_BW:
    return parse_num(arg, 1e9, false, &p->nic_bw);
  case O_NIC_LAT:
    return parse_num(arg, 1e-6, true, &p->nic_lat);
  case O_SHM_BW:
    return parse_num(arg, 1e9, false, &p->shm_bw);
  case O_SHM_LAT:
    return parse_num(arg, 1e-6, true, &p->shm_lat);
  case O_MSG_CPU:
    return parse_num(arg, 1e-6, true, &p->msg_cpu);
  case O_BYTE_CPU:
    return parse_num(arg, 1e-9, true, &p->byte_cpu);
  case O_REDUCE_BW:
    return parse_rate(arg, &p->reduce_cpu);
  case O_COPY_BW:
    return parse_rate(arg, &p->copy_cpu);
  case O_WINDOW:
    return parse_num(arg, 1, true, &p->tcp_window);
  case O_TIMEOUT:
    return parse_num(arg, 1, false, &o->timeout);
  case O_CSV:
    return o->csv = true;
  case O_BOUND:
    return o->bound_only = true;
  case O_COST:
    return parse_costs(arg, p);
  case O_NICS:
    return core_parse_int(arg, 1, 64, &v) && (p->nics = (int)v, true);
  case O_FRONTIER: { /* the layout of a run is the options', the rest Frontier's */
    sim_platform f;
    sim_platform_frontier(&f, p->hosts);
    f.topo = p->topo;
    memcpy(f.topo_params, p->topo_params, sizeof f.topo_params);
    memcpy(f.geo_file, p->geo_file, sizeof f.geo_file);
    f.regions = p->regions;
    f.steady = p->steady;
    *p = f;
    return true;
  }
  default:
    return false;
  }
}

static int parse(opts *o, int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0) return usage();
  if (strcmp(argv[1], "validate") == 0) return -1;
  if (!sim_cli_kinds(argv[1], o->kinds))
    return cmd_usage_error("sim coll", "no collective '%s' (see --help)", argv[1]);
  bool cores_set = false, any_algo = false;
  optind = 2;
  int ch;
  int li = -1;
  while ((ch = getopt_long(argc, argv, "b:e:f:a:d:r:n:h", long_opts, &li)) != -1) {
    if (ch == 'h' || ch == '?') return usage();
    if (!parse_opt(o, ch, optarg, &cores_set))
      return ch < 256 ? cmd_usage_error("sim coll", "bad value '%s' for -%c", optarg, ch)
                      : cmd_usage_error("sim coll", "bad value '%s' for --%s", optarg,
                                        long_opts[li].name);
  }
  if (optind != argc) return cmd_usage_error("sim coll", "unexpected '%s'", argv[optind]);
  for (int a = 1; a < COLL_NUM_ALGOS; a++)
    any_algo |= o->algos[a];
  for (int a = 1; a < COLL_NUM_ALGOS && !any_algo; a++)
    o->algos[a] = true;
  if (o->min_bytes > o->max_bytes) return cmd_usage_error("sim coll", "-b is larger than -e");
  if (o->ranks % o->plat.ranks_per_host)
    return cmd_usage_error("sim coll", "-n %d is not a multiple of --rph %d", o->ranks,
                           o->plat.ranks_per_host);
  o->plat.hosts = o->ranks / o->plat.ranks_per_host;
  if (!cores_set) o->plat.cores = o->plat.ranks_per_host;
  if (o->root >= o->ranks) return cmd_usage_error("sim coll", "-r %d is not a rank", o->root);
  sim_platform_fill_topo(&o->plat);
  return 0;
}

/* nccl-tests' bus factor, as tern bench's. */
static double bus_factor(coll_kind k, int n) {
  if (k == COLL_ALLREDUCE) return 2.0 * (n - 1) / n;
  return per_rank_blocks(k) ? (double)(n - 1) / n : 1.0;
}

typedef struct job_list {
  sim_coll_job *jobs;
  size_t n, cap;
} job_list;

static bool append(job_list *l, const sim_coll_job *job) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    sim_coll_job *j = realloc(l->jobs, cap * sizeof *j);
    if (j == NULL) return false;
    l->jobs = j, l->cap = cap;
  }
  l->jobs[l->n++] = *job;
  return true;
}

/* The jobs the options ask for, in print order (hier twice: across hosts by ring, by rhd);
 * NULL with *n = 0 when there are none. */
static sim_coll_job *make_jobs(const opts *o, size_t *njobs) {
  size_t es = tern_dtype_size(o->dt);
  job_list l = {0};
  bool ok = true;
  for (int k = 0; k < COLL_NUM_KINDS; k++) {
    if (!o->kinds[k]) continue;
    for (double b = (double)o->min_bytes; b <= (double)o->max_bytes; b *= o->factor) {
      size_t count = sim_cli_count((coll_kind)k, b, o->ranks, es);
      for (int a = 1; a < COLL_NUM_ALGOS && (count > 0 || k == COLL_BARRIER); a++) {
        if (!o->algos[a] || !coll_algo_supported((coll_kind)k, (coll_algo)a)) continue;
        sim_coll_job job = {.kind = (coll_kind)k,
                            .algo = (coll_algo)a,
                            .inner = COLL_ALGO_RING,
                            .count = count,
                            .elem_size = es,
                            .root = o->root};
        ok = ok && append(&l, &job);
        job.inner = COLL_ALGO_RHD;
        if (a == COLL_ALGO_HIER) ok = ok && append(&l, &job);
      }
      if (k == COLL_BARRIER || b * o->factor == b) break;
    }
  }
  if (!ok) free(l.jobs), l.jobs = NULL, l.n = 0;
  *njobs = l.n;
  return l.jobs;
}

static const char *topo_name(sim_topo t) {
  return topo_names[t];
}

static void print_header(const opts *o) {
  const sim_platform *p = &o->plat;
  if (o->csv) {
    printf("collective,ranks,hosts,rph,topology,bytes,count,algorithm,time_s,bound_s,messages,"
           "shm_alpha,shm_beta,shm_gamma,shm_o,net_alpha,net_beta,net_gamma,net_o\n");
    return;
  }
  printf("# tern sim coll: %d ranks (%d hosts x %d), %s%s%s, %d NIC%s of %.4g GB/s %.4g us, shared "
         "memory %.4g GB/s %.4g us, %d cores/host, %.4g us CPU per message, reductions %.4g GB/s, "
         "copies %.4g GB/s\n",
         o->ranks, p->hosts, p->ranks_per_host, topo_name(p->topo), p->topo_params[0] ? " " : "",
         p->topo_params, p->nics, p->nics > 1 ? "s" : "", p->nic_bw / 1e9, p->nic_lat * 1e6,
         p->shm_bw / 1e9, p->shm_lat * 1e6, p->cores, p->msg_cpu * 1e6,
         p->reduce_cpu > 0 ? 1e-9 / p->reduce_cpu : INFINITY,
         p->copy_cpu > 0 ? 1e-9 / p->copy_cpu : INFINITY);
  printf("# %-14s %12s %12s %-9s %12s %8s %8s %s\n", "collective", "size(B)", "count", "algorithm",
         "time(us)", "algbw", "busbw", "best");
}

/* "hier-ring" or "hier-rhd" for hier, else the algorithm's name. */
static const char *algo_label(const sim_coll_job *j) {
  if (j->algo != COLL_ALGO_HIER) return coll_algo_name(j->algo);
  return j->inner == COLL_ALGO_RHD ? "hier-rhd" : "hier-ring";
}

/* The learned selector's terms of rank 0's schedule (coll/select_learned.h): what
 * bench/scale/train.py fits it on. */
static void features(const opts *o, const sim_coll_job *j, double f[COLL_LEARNED_TERMS]) {
  coll_sched s;
  coll_sched_init(&s);
  coll_args a = sim_coll_args(&o->plat, j, 0);
  bool ok = coll_build(&s, &a, j->algo) == TERN_OK;
  coll_args place = {.ppn = o->plat.ranks_per_host};
  coll_learned_terms(&s, j->elem_size, &place, 0, f);
  for (int i = 0; !ok && i < COLL_LEARNED_TERMS; i++)
    f[i] = NAN;
  coll_sched_free(&s);
}

static void print_csv(const opts *o, const sim_coll_job *j, double bytes) {
  double f[COLL_LEARNED_TERMS];
  features(o, j, f);
  printf("%s,%d,%d,%d,%s,%.0f,%zu,%s,%.9g,%.9g,%llu", coll_kind_name(j->kind), o->ranks,
         o->plat.hosts, o->plat.ranks_per_host, topo_name(o->plat.topo), bytes, j->count,
         algo_label(j), j->status == TERN_OK && !o->bound_only ? j->time : NAN, j->bound,
         (unsigned long long)j->messages);
  for (int i = 0; i < COLL_LEARNED_TERMS; i++)
    printf(",%.9g", f[i]);
  printf("\n");
}

/* The least time among jobs[i, end) that share jobs[i]'s kind and count. */
static double best_of(const sim_coll_job *jobs, size_t i, size_t n) {
  double best = HUGE_VAL;
  for (size_t j = i; j < n && jobs[j].kind == jobs[i].kind && jobs[j].count == jobs[i].count; j++)
    if (jobs[j].status == TERN_OK && jobs[j].time < best) best = jobs[j].time;
  return best;
}

static void print_jobs(const opts *o, const sim_coll_job *jobs, size_t n) {
  size_t group = 0;
  double best = 0;
  for (size_t i = 0; i < n; i++) {
    const sim_coll_job *j = &jobs[i];
    if (i == 0 || j->kind != jobs[group].kind || j->count != jobs[group].count)
      group = i, best = best_of(jobs, i, n);
    double bytes = sim_cli_bytes(j->kind, j->count, o->ranks, j->elem_size);
    if (o->csv) {
      if (j->status == TERN_OK) print_csv(o, j, bytes); /* a row per schedule that exists */
      continue;
    }
    if (j->status != TERN_OK) {
      printf("  %-14s %12.0f %12zu %-9s %12s  (%s)\n", coll_kind_name(j->kind), bytes, j->count,
             algo_label(j), "-", tern_status_str(j->status));
      continue;
    }
    if (o->bound_only) {
      printf("  %-14s %12.0f %12zu %-9s %12.2f  (bound)\n", coll_kind_name(j->kind), bytes,
             j->count, algo_label(j), j->bound * 1e6);
      continue;
    }
    double algbw = j->time > 0 ? bytes / j->time / 1e9 : 0;
    printf("  %-14s %12.0f %12zu %-9s %12.2f %8.2f %8.2f %s\n", coll_kind_name(j->kind), bytes,
           j->count, algo_label(j), j->time * 1e6, algbw, algbw * bus_factor(j->kind, o->ranks),
           j->time == best ? "*" : "");
  }
}

int cmd_sim_coll(int argc, char **argv) {
  opts o = {.min_bytes = 1024,
            .max_bytes = 64 << 20,
            .factor = 4,
            .timeout = 3600,
            .dt = TERN_F32,
            .ranks = 8};
  sim_platform_cluster(&o.plat, 8, 1);
  int rc = parse(&o, argc, argv);
  if (rc < 0) return cmd_sim_coll_validate(argc - 1, argv + 1);
  if (rc != 0) return rc;
  core_err err = {0};
  if (sim_platform_check(&o.plat, &err) != TERN_OK)
    return cmd_usage_error("sim coll", "%s", err.msg);
  size_t n;
  sim_coll_job *jobs = make_jobs(&o, &n);
  if (n == 0) {
    free(jobs);
    return cmd_usage_error("sim coll", "nothing to simulate: no size from -b to -e gives a count "
                                       "of at least 1 and no algorithm asked has the collective");
  }
  print_header(&o);
  fflush(stdout);
  uint64_t t0 = core_now_ns();
  tern_status st = o.bound_only ? sim_coll_bound(&o.plat, jobs, n, &err)
                                : sim_coll_run(&o.plat, jobs, n, o.timeout, &err);
  if (st != TERN_OK) {
    fprintf(stderr, "tern sim coll: %s\n", err.msg);
    free(jobs);
    return 1;
  }
  print_jobs(&o, jobs, n);
  uint64_t steady = 0;
  for (size_t i = 0; i < n; i++)
    steady += jobs[i].steady;
  if (!o.csv)
    printf("# %zu runs %s in %.2f s of wall time%s", n, o.bound_only ? "bounded" : "simulated",
           (double)(core_now_ns() - t0) * 1e-9, steady ? "" : "\n");
  if (!o.csv && steady)
    printf(" (%llu phases taken as steady, --steady %d)\n", (unsigned long long)steady,
           o.plat.steady);
  free(jobs);
  return 0;
}

/* swarm.c: `tern swarm`, one swarm peer: joins through the given addresses, runs rounds of
 * Moshpit averaging on a vector and prints a report per round (tern_swarm_* in tern.h).
 *
 * The vector is made up for the demonstration and the tests: element k of this peer's vector
 * is --value + (k mod 7). The last line sums up: the peer's weight, the vector's mean and its
 * first elements, so that a script can check what the swarm computed.
 */
#include "tern/cmd.h"

#include "compress/compress.h"
#include "core/core.h"
#include "core/mix.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
  tern_swarm_options sw;
  tern_swarm_average_options avg;
  int nboot;
  long rounds, dim;
  double value, weight;
  double compute; /* seconds of "training step" between two rounds */
  bool download, rss, sketch;
  int show;
  long init_peer, npeers; /* --init-peer K --peers N: a vector whose global average is known */
  float *ref;             /* then: that average */
} opts;

static int usage(FILE *out) {
  fprintf(
      out,
      "usage: tern swarm --listen HOST:PORT --run-id NAME [--join HOST:PORT]...\n"
      "                  [--grid M,M,...] [--coord C,C,...] [--rounds R] [--dim N]\n"
      "                  [--value V] [--weight W] [--compress none|fp16|bf16|int8]\n"
      "                  [--key SECRET] [--bandwidth B/s] [--min-group K] [--target-group K]\n"
      "                  [--match-timeout S] [--timeout S] [--download] [--rss] [--show K]\n"
      "                  [--compute S] [--random-groups K] [--init-peer K --peers N [--sketch]]\n"
      "                  [--clip TAU] [--insecure] [--region NAME]\n\n"
      "A swarm peer: joins the DHT through the --join addresses (the only ones it contacts\n"
      "first), then averages an N-float vector (element k = V + k mod 7) with its group for R\n"
      "rounds, printing one report per round; `tern swarm status` lists it with the rounds\n"
      "done as its epoch and W x rounds / second as its samples/s. --coord places the peer on the "
      "Moshpit grid\n"
      "(--grid gives the sizes: a line's group closes once it is full). --download\n"
      "first takes the current vector and round from a --join peer (joining mid-run; it then\n"
      "runs only the swarm's rounds that are left of 0..R-1). --rss\n"
      "adds the process's resident memory to each report. --compute S sleeps S seconds between\n"
      "two rounds, standing in for the training step between averages. --random-groups K puts\n"
      "the peers in K random groups of --target-group G each round instead of the grid: the\n"
      "cells 0..K*G-1 (--coord C) are dealt by a permutation of the run and round; K = N/2,\n"
      "G = 2 is pairwise gossip. --init-peer K --peers N (for the\n"
      "benchmark) makes element k = (K + 1) (1 + k mod 7) times a factor in [0.5, 1.5) hashed\n"
      "from (K, k) instead; the peer computes the global average of the N such vectors, and\n"
      "each report adds the time (CLOCK_REALTIME) and the relative L2 error against it;\n"
      "--sketch adds 16 random projections of the vector (and, at the start, of the global\n"
      "average), from which two peers' distance can be estimated offline.\n"
      "--key SECRET (or TERN_KEY / TERN_KEY_FILE) admits only peers holding the secret and\n"
      "hides the run's DHT records from others. Without a key only loopback addresses are\n"
      "accepted (--listen and --join) unless --insecure is given. --clip TAU averages each\n"
      "part with CenteredClip of radius TAU (members count once each; one member moves a\n"
      "part by about TAU / (members - 1) at most); see docs/SWARM.md, \"Security\".\n"
      "--region NAME places the peer by its region instead of --coord (--grid P,R then gives\n"
      "the peers per region and the regions, as line sizes): even rounds average\n"
      "inside the region, odd ones with one peer of each other region; without --bandwidth\n"
      "the peer measures its own (docs/SWARM.md, \"Regions\"). --compress int8ef sends 8-bit\n"
      "codes of differences with error feedback: it reaches the average, int8 stays ~5e-3 off.\n");
  return out == stdout ? 0 : 2;
}

static bool parse_ints(const char *s, int *out, int *n) {
  char buf[256];
  if (strlen(s) >= sizeof buf) return false;
  strcpy(buf, s);
  *n = 0;
  for (char *save, *t = strtok_r(buf, ",x", &save); t; t = strtok_r(NULL, ",x", &save)) {
    long v;
    if (*n == TERN_SWARM_MAX_DIMS || !core_parse_int(t, 0, 1 << 20, &v)) return false;
    out[(*n)++] = (int)v;
  }
  return *n > 0;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

static int parse(int argc, char **argv, opts *o) {
  static const struct option longs[] = {{"listen", 1, 0, 'l'},
                                        {"join", 1, 0, 'j'},
                                        {"run-id", 1, 0, 'r'},
                                        {"grid", 1, 0, 'g'},
                                        {"coord", 1, 0, 'c'},
                                        {"rounds", 1, 0, 'R'},
                                        {"dim", 1, 0, 'n'},
                                        {"value", 1, 0, 'v'},
                                        {"weight", 1, 0, 'w'},
                                        {"compress", 1, 0, 'z'},
                                        {"key", 1, 0, 'k'},
                                        {"bandwidth", 1, 0, 'b'},
                                        {"min-group", 1, 0, 'm'},
                                        {"target-group", 1, 0, 't'},
                                        {"match-timeout", 1, 0, 'M'},
                                        {"timeout", 1, 0, 'T'},
                                        {"download", 0, 0, 'd'},
                                        {"rss", 0, 0, 'S'},
                                        {"show", 1, 0, 's'},
                                        {"help", 0, 0, 'h'},
                                        {"init-peer", 1, 0, 'K'},
                                        {"peers", 1, 0, 'N'},
                                        {"compute", 1, 0, 'C'},
                                        {"random-groups", 1, 0, 'G'},
                                        {"sketch", 0, 0, 'x'},
                                        {"insecure", 0, 0, 'I'},
                                        {"clip", 1, 0, 'P'},
                                        {"region", 1, 0, 'E'},
                                        {0, 0, 0, 0}};
  int ngrid = 0, ncoord = 0, c;
  long v;
  double d;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case 'l':
      o->sw.listen = optarg;
      break;
    case 'j':
      if (o->nboot == TERN_SWARM_MAX_BOOTSTRAP) return cmd_usage_error("swarm", "too many --join");
      o->sw.bootstrap[o->nboot++] = optarg;
      break;
    case 'r':
      o->sw.run_id = optarg;
      break;
    case 'g':
      if (!parse_ints(optarg, o->sw.grid, &ngrid))
        return cmd_usage_error("swarm", "bad --grid %s", optarg);
      break;
    case 'c':
      if (!parse_ints(optarg, o->sw.coords, &ncoord))
        return cmd_usage_error("swarm", "bad --coord %s", optarg);
      o->sw.ndims = ncoord;
      break;
    case 'R':
    case 'G':
    case 'n':
    case 'm':
    case 't':
    case 's':
      if (!core_parse_int(optarg, c == 'R' || c == 's' ? 0 : 1, c == 'n' ? 1L << 30 : 1L << 20, &v))
        return cmd_usage_error("swarm", "bad number %s", optarg);
      if (c == 'R') o->rounds = v;
      if (c == 'n') o->dim = v;
      if (c == 'm') o->avg.min_group = (int)v;
      if (c == 't') o->avg.target_group = (int)v;
      if (c == 's') o->show = (int)v;
      if (c == 'G') o->avg.random_groups = (int)v;
      break;
    case 'v':
    case 'w':
    case 'b':
    case 'M':
    case 'C':
    case 'P':
    case 'T': {
      char *end;
      d = strtod(optarg, &end);
      if (end == optarg || *end || d < 0) return cmd_usage_error("swarm", "bad number %s", optarg);
      if (c == 'v') o->value = d;
      if (c == 'w') o->weight = d;
      if (c == 'b') o->sw.bandwidth = d;
      if (c == 'M') o->avg.match_timeout = d;
      if (c == 'T') o->avg.average_timeout = d;
      if (c == 'C') o->compute = d;
      if (c == 'P') o->avg.clip = d;
      break;
    }
    case 'z':
      if (!compress_parse(optarg, &o->avg.compress))
        return cmd_usage_error("swarm", "bad --compress %s", optarg);
      break;
    case 'K':
    case 'N':
      if (!core_parse_int(optarg, c == 'K' ? 0 : 1, 1L << 20, &v))
        return cmd_usage_error("swarm", "bad number %s", optarg);
      if (c == 'K')
        o->init_peer = v;
      else
        o->npeers = v;
      break;
    case 'k':
      o->sw.key = optarg;
      break;
    case 'd':
      o->download = true;
      break;
    case 'S':
      o->rss = true;
      break;
    case 'x':
      o->sketch = true;
      break;
    case 'I':
      o->sw.insecure = 1;
      break;
    case 'E':
      o->sw.region = optarg;
      break;
    case 'h':
      return usage(stdout) - 1;
    default:
      return usage(stderr);
    }
  }
  if (!o->sw.listen || !o->sw.run_id)
    return cmd_usage_error("swarm", "--listen and --run-id are needed");
  if (o->sw.region && (ncoord || (ngrid && ngrid != 2) || o->avg.random_groups))
    return cmd_usage_error("swarm", "--region places the peer: no --coord or --random-groups, "
                                    "and --grid (if any) is PEERS_PER_REGION,REGIONS");
  if (ngrid && ngrid != ncoord && !o->sw.region)
    return cmd_usage_error("swarm", "--grid has %d dimensions, --coord %d", ngrid, ncoord);
  for (int i = 0; i < ngrid && !o->sw.region; i++)
    if (o->sw.coords[i] >= o->sw.grid[i])
      return cmd_usage_error("swarm", "coordinate %d is %d, outside the grid's %d", i,
                             o->sw.coords[i], o->sw.grid[i]);
  if ((o->init_peer >= 0) != (o->npeers > 0) || (o->npeers > 0 && o->init_peer >= o->npeers))
    return cmd_usage_error("swarm", "--init-peer K needs --peers N, K < N");
  if (o->sketch && o->npeers <= 0) return cmd_usage_error("swarm", "--sketch needs --init-peer");
  if (o->weight <= 0) return cmd_usage_error("swarm", "--weight must be > 0");
  return 0;
}

/* Element i of peer k's --init-peer vector: (k + 1)(1 + i mod 7), times a factor in [0.5, 1.5)
 * hashed from (k, i), so that no pairing of peers averages to the global average by symmetry
 * (without it, peers k and N-1-k did, and gossip looked exact after two rounds). */
static double init_value(long k, long i) {
  uint64_t h = core_mix64((uint64_t)k << 40 ^ (uint64_t)i);
  return (double)(k + 1) * (double)(1 + i % 7) * (0.5 + (double)(h >> 11) * 0x1.0p-53);
}

/* The global average of the N --init-peer vectors, element by element. */
static float *reference(const opts *o) {
  float *ref = malloc((size_t)o->dim * sizeof *ref);
  for (long i = 0; ref && i < o->dim; i++) {
    double s = 0;
    for (long k = 0; k < o->npeers; k++)
      s += init_value(k, i);
    ref[i] = (float)(s / (double)o->npeers);
  }
  return ref;
}

/* ||x - a|| / ||a||, a the global average of --peers N vectors made by --init-peer */
static double rel_error(const opts *o, const float *x) {
  double num = 0, den = 0;
  for (long k = 0; k < o->dim; k++) {
    double a = o->ref[k], d = (double)x[k] - a;
    num += d * d;
    den += a * a;
  }
  return sqrt(num / den);
}

/* A sketch of x, for telling offline how far apart two peers' vectors are without either
 * vector: SKETCH_DIMS random +-1 projections of every SKETCH_STRIDE-th element. For any two
 * vectors a and b, |sketch(a) - sketch(b)| / |sketch(ref)| estimates |a - b| / |ref| on those
 * elements to within about 1/sqrt(SKETCH_DIMS) of itself (Johnson-Lindenstrauss); the averaging
 * error is spread over every element, so the sample stands for the whole. bench/swarm's
 * summary uses it for the live peers' agreement where the global average is out of reach (a
 * peer killed before its values were averaged took them with it). */
#define SKETCH_DIMS 16
#define SKETCH_STRIDE 16
static void print_sketch(const char *what, const float *x, long dim) {
  double s[SKETCH_DIMS] = {0};
  for (long i = 0; i < dim; i += SKETCH_STRIDE) {
    uint64_t signs = core_mix64((uint64_t)i ^ 0x5ce7c4u);
    for (int j = 0; j < SKETCH_DIMS; j++)
      s[j] += (signs >> j & 1) ? (double)x[i] : -(double)x[i];
  }
  printf(" %s", what);
  for (int j = 0; j < SKETCH_DIMS; j++)
    printf("%s%.12g", j ? "," : " ", s[j]);
}

static double mean_of(const opts *o, const float *x) {
  double s = 0;
  for (long k = 0; k < o->dim; k++)
    s += x[k];
  return s / (double)o->dim;
}

static void report(const opts *o, const tern_swarm_report *r, const float *x) {
  printf("round %u group %d failed %d", r->round, r->group_size, r->failed_count);
  for (int i = 0; i < r->failed_count && i < TERN_SWARM_MAX_FAILED; i++)
    printf("%s%016llx", i ? "," : " [", r->failed[i]);
  printf("%s parts %d/%d weight %.9g -> %.9g sent %llu received %llu matching %.3f s "
         "averaging %.3f s",
         r->failed_count ? "]" : "", r->parts_updated, r->group_size, r->weight_before,
         r->weight_after, r->bytes_sent, r->bytes_received, r->seconds_matching,
         r->seconds_averaging);
  if (r->pooled) printf(" pool");
  if (o->rss) printf(" rss %ld kB", rss_kb());
  if (o->npeers > 0) {
    double at = core_wall_s();
    printf(" at %.6f relerr %.6g", at, rel_error(o, x));
    if (o->sketch) print_sketch("sketch", x, o->dim);
  }
  printf("\n");
  fflush(stdout);
}

int cmd_swarm(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "status") == 0) return cmd_swarm_status(argc - 1, argv + 1);
  opts o = {.rounds = 10, .dim = 1024, .weight = 1, .show = 4, .init_peer = -1};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? 0 : rc;
  signal(SIGPIPE, SIG_IGN);
  float *x = malloc((size_t)o.dim * sizeof *x);
  if (o.npeers > 0) o.ref = reference(&o);
  if (!x || (o.npeers > 0 && !o.ref)) {
    free(x);
    free(o.ref);
    return 1;
  }
  for (long k = 0; k < o.dim; k++)
    x[k] = o.npeers > 0 ? (float)init_value(o.init_peer, k) : (float)(o.value + (double)(k % 7));
  tern_swarm *sw;
  if (tern_swarm_join(&sw, &o.sw) != TERN_OK) {
    fprintf(stderr, "tern swarm: %s\n", tern_swarm_last_error(NULL));
    free(x);
    free(o.ref);
    return 1;
  }
  printf("peer %016llx listening on %s\n", tern_swarm_id(sw), tern_swarm_address(sw));
  if (o.npeers > 0) {
    double at = core_wall_s();
    printf("start at %.6f relerr %.6g mean %.9g", at, rel_error(&o, x), mean_of(&o, x));
    if (o.sketch) {
      print_sketch("sketch", x, o.dim);
      print_sketch("reference", o.ref, o.dim);
    }
    printf("\n");
  }
  fflush(stdout);
  tern_status st = TERN_OK;
  /* The state is the whole vector, like an all-reduce's traffic: it gets the same deadline (a
   * fixed 10 s cut a restarted peer's 64 MiB download from another region at 46 MB). */
  double download_s = o.avg.average_timeout > 0 ? o.avg.average_timeout : 10;
  if (o.download && (st = tern_swarm_download_state(sw, x, (size_t)o.dim, download_s)) != TERN_OK)
    fprintf(stderr, "tern swarm: %s\n", tern_swarm_last_error(sw));
  else if (o.download) {
    printf("downloaded state: v0 %.9g", (double)x[0]);
    if (o.sketch) print_sketch("sketch", x, o.dim);
    printf("\n");
  }
  double w = o.weight;
  /* `tern swarm status` lists this peer: its epoch is the rounds done, its samples/s the
   * --weight of a round (the samples it stands for) times the rounds a second. */
  double started = core_wall_s();
  tern_swarm_publish_status(sw, 0, 0);
  /* Rounds 0..R-1 of the swarm: a peer that downloaded round k's state runs only k..R-1. */
  o.avg.rounds = (int)o.rounds;
  for (long next = 0, i = 0; st == TERN_OK && next < o.rounds; i++) {
    tern_swarm_report r;
    if (i > 0 && o.compute > 0) core_sleep_ms((int)(o.compute * 1000));
    st = tern_swarm_average(sw, x, (size_t)o.dim, &w, &o.avg, &r);
    if (st != TERN_OK)
      fprintf(stderr, "tern swarm: %s\n", tern_swarm_last_error(sw));
    else
      report(&o, &r, x);
    next = (long)r.round + 1;
    tern_swarm_publish_status(sw, (unsigned long long)(i + 1),
                              o.weight * (double)(i + 1) / (core_wall_s() - started));
  }
  printf("final weight %.15g mean %.9g values", w, mean_of(&o, x));
  for (int k = 0; k < o.show && k < o.dim; k++)
    printf(" %.9g", (double)x[k]);
  printf("\n");
  fflush(stdout);
  tern_swarm_leave(sw);
  free(x);
  free(o.ref);
  return st == TERN_OK ? 0 : 1;
}

/* sim/averaging.c: `tern sim averaging`, rounds of decentralised averaging to consensus
 * (src/sim/averaging.h) for a table of peer counts and failure probabilities.
 *
 * With no options it runs the Moshpit SGD paper's experiment (N 512, 768, 900; p 0, 0.001,
 * 0.005, 0.01; 50 rounds, 10 restarts, groups of 32, a 32 x 32 grid) and prints, per N and p,
 * each protocol's mean rounds to an error of 1e-9 and, in brackets, of 1e-4, as the paper's
 * table does. --curve prints instead the mean error after every round, one line per round,
 * for plots.
 */
#include "tern/cmd.h"

#include "sim/averaging.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16

typedef struct opts {
  sim_avg_setup base;
  int ns[MAX_LIST], nn;
  double ps[MAX_LIST];
  int np;
  sim_avg_proto protos[SIM_AVG_NPROTOS];
  int nprotos;
  bool curve;
} opts;

static int usage(FILE *out) {
  fprintf(out,
          "usage: tern sim averaging [-n N,...] [-p P,...] [--protocols LIST] [--rounds R]\n"
          "                          [--restarts K] [--group M] [--grid SxS...] [--targets E,...]\n"
          "                          [--seed S] [--curve]\n\n"
          "Rounds of averaging to consensus for N peers, each failing in a round with probability\n"
          "P. LIST: allreduce,gossip,pushsum,groups,moshpit (the default: all). Defaults: the\n"
          "Moshpit SGD paper's set-up, -n 512,768,900 -p 0,0.001,0.005,0.01 --rounds 50\n"
          "--restarts 10 --group 32 --grid 32x32 --targets 1e-9,1e-4 --seed 1. Prints the mean\n"
          "rounds to the first target (the second in brackets; the cap R when never), or with\n"
          "--curve the mean error after each round.\n");
  return out == stdout ? 0 : 2;
}

static bool parse_double(const char *s, double *out) {
  char *end;
  *out = strtod(s, &end);
  return end != s && *end == '\0';
}

/* A comma-separated list of at most MAX_LIST numbers into ints (ints != NULL) or doubles. */
static bool parse_list(const char *s, int *ints, double *doubles, int *count) {
  char buf[512];
  if (strlen(s) >= sizeof buf) return false;
  strcpy(buf, s);
  *count = 0;
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    long v;
    if (*count == MAX_LIST) return false;
    if (ints ? !core_parse_int(tok, 2, SIM_AVG_MAX_PEERS, &v)
             : !parse_double(tok, &doubles[*count]))
      return false;
    if (ints) ints[*count] = (int)v;
    (*count)++;
  }
  return *count > 0;
}

static bool parse_protos(const char *s, opts *o) {
  char buf[256];
  if (strlen(s) >= sizeof buf) return false;
  strcpy(buf, s);
  o->nprotos = 0;
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (o->nprotos == SIM_AVG_NPROTOS || !sim_avg_proto_parse(tok, &o->protos[o->nprotos++]))
      return false;
  return o->nprotos > 0;
}

/* "32x32": grid_size 32, grid_dims 2; every axis the same size (a Moshpit grid is M^d). */
static bool parse_grid(const char *s, sim_avg_setup *b) {
  long size = -1, v;
  int dims = 0;
  char buf[128];
  if (strlen(s) >= sizeof buf) return false;
  strcpy(buf, s);
  for (char *save, *tok = strtok_r(buf, "x", &save); tok; tok = strtok_r(NULL, "x", &save)) {
    if (!core_parse_int(tok, 2, 1 << 20, &v) || (size >= 0 && v != size) ||
        ++dims > SIM_AVG_MAX_DIMS)
      return false;
    size = v;
  }
  b->grid_size = (int)size, b->grid_dims = dims;
  return dims > 0;
}

static const struct option longs[] = {{"protocols", 1, NULL, 'P'}, {"rounds", 1, NULL, 'r'},
                                      {"restarts", 1, NULL, 'k'},  {"group", 1, NULL, 'm'},
                                      {"grid", 1, NULL, 'g'},      {"targets", 1, NULL, 't'},
                                      {"seed", 1, NULL, 's'},      {"curve", 0, NULL, 'c'},
                                      {"help", 0, NULL, 'h'},      {NULL, 0, NULL, 0}};

static const char *opt_name(int ch) {
  for (const struct option *l = longs; l->name; l++)
    if (l->val == ch) return l->name;
  return ch == 'n' ? "n" : "p";
}

static int parse(opts *o, int argc, char **argv) {
  int ch;
  long v;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "n:p:h", longs, NULL)) != -1) {
    bool ok = true;
    switch (ch) {
    case 'n':
      ok = parse_list(optarg, o->ns, NULL, &o->nn);
      break;
    case 'p':
      ok = parse_list(optarg, NULL, o->ps, &o->np);
      break;
    case 'P':
      ok = parse_protos(optarg, o);
      break;
    case 'r':
      ok = core_parse_int(optarg, 1, 1000000, &v), o->base.max_rounds = (int)v;
      break;
    case 'k':
      ok = core_parse_int(optarg, 1, 1000000, &v), o->base.restarts = (int)v;
      break;
    case 'm':
      ok = core_parse_int(optarg, 2, SIM_AVG_MAX_PEERS, &v), o->base.group = (int)v;
      break;
    case 'g':
      ok = parse_grid(optarg, &o->base);
      break;
    case 't':
      ok = parse_list(optarg, NULL, o->base.targets, &o->base.ntargets) &&
           o->base.ntargets <= SIM_AVG_MAX_TARGETS;
      break;
    case 's':
      ok = core_parse_int(optarg, 0, 2147483647L, &v), o->base.seed = (uint64_t)v;
      break;
    case 'c':
      o->curve = true;
      break;
    case 'h':
      return usage(stdout) - 1; /* -1: done, exit 0 */
    default:
      return usage(stderr);
    }
    if (!ok)
      return cmd_usage_error("sim averaging", "bad value '%s' for %s%s", optarg,
                             ch == 'n' || ch == 'p' ? "-" : "--", opt_name(ch));
  }
  if (optind < argc) return cmd_usage_error("sim averaging", "unexpected '%s'", argv[optind]);
  return 0;
}

static void print_header(const opts *o) {
  const sim_avg_setup *b = &o->base;
  printf(
      "# tern sim averaging: %d rounds at most, %d restarts, seed %llu, groups of %d, grid %d^%d\n",
      b->max_rounds, b->restarts, (unsigned long long)b->seed, b->group, b->grid_size,
      b->grid_dims);
  if (o->curve) {
    printf("%-10s %6s %7s %5s %12s\n", "protocol", "N", "p", "round", "error");
    return;
  }
  printf("# mean rounds to an error below %g", b->ntargets > 0 ? b->targets[0] : 0);
  if (b->ntargets > 1) printf(" (below %g)", b->targets[1]);
  printf("\n%6s %7s", "N", "p");
  for (int j = 0; j < o->nprotos; j++)
    printf(" %15s", sim_avg_proto_name(o->protos[j]));
  printf("\n");
}

static void print_cell(const sim_avg_setup *s, const sim_avg_result *r) {
  char cell[64] = "";
  if (s->ntargets > 1)
    snprintf(cell, sizeof cell, "%.1f (%.1f)", r->rounds[0], r->rounds[1]);
  else if (s->ntargets == 1)
    snprintf(cell, sizeof cell, "%.1f", r->rounds[0]);
  printf(" %15s", cell);
}

static int run_one(const opts *o, int n, double p, sim_avg_proto proto) {
  sim_avg_setup s = o->base;
  s.proto = proto, s.n = n, s.p = p;
  sim_avg_result r;
  core_err err = {0};
  if (sim_avg_run(&s, &r, &err) != TERN_OK) {
    fprintf(stderr, "tern sim averaging: %s\n", err.msg);
    return 1;
  }
  if (o->curve) {
    for (int t = 0; t <= s.max_rounds; t++)
      printf("%-10s %6d %7g %5d %12.6g\n", sim_avg_proto_name(proto), n, p, t, r.error[t]);
  } else {
    print_cell(&s, &r);
  }
  sim_avg_result_free(&r);
  return 0;
}

/* Every set-up of the table, checked before the first line is printed. */
static int check_all(const opts *o) {
  for (int i = 0; i < o->nn; i++)
    for (int k = 0; k < o->np; k++)
      for (int j = 0; j < o->nprotos; j++) {
        sim_avg_setup s = o->base;
        s.proto = o->protos[j], s.n = o->ns[i], s.p = o->ps[k];
        core_err err = {0};
        if (sim_avg_setup_check(&s, &err) != TERN_OK)
          return cmd_usage_error("sim averaging", "%s", err.msg);
      }
  return 0;
}

int cmd_sim_averaging(int argc, char **argv) {
  opts o = {.nn = 3,
            .ns = {512, 768, 900},
            .np = 4,
            .ps = {0, 0.001, 0.005, 0.01},
            .nprotos = SIM_AVG_NPROTOS};
  sim_avg_setup_default(&o.base, SIM_AVG_ALLREDUCE, 0, 0);
  for (int j = 0; j < SIM_AVG_NPROTOS; j++)
    o.protos[j] = (sim_avg_proto)j;
  int rc = parse(&o, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if ((rc = check_all(&o)) != 0) return rc;
  print_header(&o);
  for (int i = 0; i < o.nn; i++)
    for (int k = 0; k < o.np; k++) {
      if (!o.curve) printf("%6d %7g", o.ns[i], o.ps[k]);
      for (int j = 0; j < o.nprotos; j++)
        if ((rc = run_one(&o, o.ns[i], o.ps[k], o.protos[j])) != 0) return rc;
      if (!o.curve) printf("\n");
      fflush(stdout);
    }
  return 0;
}

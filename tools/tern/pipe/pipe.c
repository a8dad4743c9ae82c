/* pipe.c: `tern pipe PLAN.json --job NAME`, a planned job's pipeline run for real.
 *
 * Started by hand (no TERN_RANK in the environment), it checks the plan and starts one rank per
 * stage through `tern run`, each rank this same command; started as a rank (by tern run, or by
 * a driver of the WAN harness that sets TERN_RANK, TERN_WORLD_SIZE and TERN_STORE itself), it
 * runs its stage (pipe/run.c). Rank 0, the first stage, reports the measured iteration time
 * against the plan's time model (src/plan/pipeline.c) replayed on the scaled figures.
 * docs/PIPE.md has the scales, the links a harness must emulate, and the measurements.
 */
#include "tern/cmd.h"
#include "comm/env.h"
#include "core/core.h"
#include "pipe.h"
#include "plan/plan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MESSAGE_BYTES (256.0 * 1024 * 1024) /* one scaled message: memory, not the wire */
#define MAX_RUN_S 3600.0                        /* a scaled run that long is a wrong scale */

static const char help[] =
    "usage: tern pipe PLAN.json --job NAME [--time-scale T] [--bytes-scale B]\n"
    "                 [--iterations N] [--schedule 1f1b|gpipe]\n"
    "\n"
    "Runs job NAME of a plan (`tern plan SCENARIO.json -o PLAN.json`) for real: one process per\n"
    "stage, started through `tern run` (or, with TERN_RANK, TERN_WORLD_SIZE and TERN_STORE set,\n"
    "this process is one stage of a job started elsewhere, such as the WAN harness). Compute is\n"
    "a sleep of each stage's planned forward and backward seconds per micro-batch over T;\n"
    "activations go forward and gradients back over tern_send/tern_recv, the planned bytes of\n"
    "each hop over B. Link latency is not scaled. Rank 0 prints the measured seconds per\n"
    "iteration against the plan's time model on the same scaled figures, for a network whose\n"
    "hop h has the plan's one-way latency and the plan's bandwidth x T / B (printed per hop).\n"
    "\n"
    "  --job NAME         the job of the plan to run (required)\n"
    "  --time-scale T     compute and transfer seconds / T (default 1)\n"
    "  --bytes-scale B    message bytes / B (default 100)\n"
    "  --iterations N     timed iterations after one warm-up (default 3)\n"
    "  --schedule S       1f1b (default, as planned) or gpipe\n"
    "  -h, --help         this text\n"
    "\n"
    "Last line on stdout: pipe job=... predicted_s=... measured_s=... ratio=... (docs/PIPE.md).\n";

typedef struct args {
  const char *plan, *job;
  pipe_options o;
  int first; /* argv index of the plan, to hand the same line to the ranks */
} args;

static bool parse_scale(const char *s, double *out) {
  char *end;
  double v = s ? strtod(s, &end) : 0;
  if (!s || end == s || *end || !(v >= 1e-3 && v <= 1e9)) return false;
  *out = v;
  return true;
}

static int parse(int argc, char **argv, args *a) {
  a->o = (pipe_options){1, 100, 3, PIPE_1F1B};
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (strcmp(k, "-h") == 0 || strcmp(k, "--help") == 0) {
      fputs(help, stdout);
      return 0;
    } else if (strcmp(k, "--job") == 0 && v) {
      a->job = v;
    } else if (strcmp(k, "--time-scale") == 0) {
      if (!parse_scale(v, &a->o.time_scale))
        return cmd_usage_error("pipe", "--time-scale '%s': want a number from 0.001 to 1e9",
                               v ? v : "");
    } else if (strcmp(k, "--bytes-scale") == 0) {
      if (!parse_scale(v, &a->o.bytes_scale))
        return cmd_usage_error("pipe", "--bytes-scale '%s': want a number from 0.001 to 1e9",
                               v ? v : "");
    } else if (strcmp(k, "--iterations") == 0) {
      if (!v || !core_parse_int(v, 1, 10000, &n))
        return cmd_usage_error("pipe", "--iterations '%s': want 1 to 10000", v ? v : "");
      a->o.iterations = (int)n;
    } else if (strcmp(k, "--schedule") == 0 && v) {
      if (strcmp(v, "1f1b") != 0 && strcmp(v, "gpipe") != 0)
        return cmd_usage_error("pipe", "--schedule '%s': want 1f1b or gpipe", v);
      a->o.schedule = strcmp(v, "gpipe") == 0 ? PIPE_GPIPE : PIPE_1F1B;
    } else if (k[0] != '-' && !a->plan) {
      a->plan = k;
      continue;
    } else {
      return cmd_usage_error("pipe", "unexpected '%s' (tern pipe --help)", k);
    }
    i++; /* the option's value */
  }
  if (!a->plan) return cmd_usage_error("pipe", "no plan (tern pipe PLAN.json --job NAME)");
  if (!a->job) return cmd_usage_error("pipe", "no --job NAME");
  return -1;
}

/* The plan's time model on the scaled figures: compute and transfer over T, latency as is. */
static double predicted(const pipe_job *j, const pipe_options *o, double time_scale) {
  double fb[PIPE_MAX_STAGES], lat[PIPE_MAX_STAGES], beta[PIPE_MAX_STAGES];
  for (int i = 0; i < j->stages; i++) {
    fb[i] = (j->stage[i].fwd_s + j->stage[i].bwd_s) / time_scale;
    if (i + 1 < j->stages) {
      lat[i] = j->hop[i].latency_s;
      beta[i] = j->hop[i].transfer_s / time_scale;
    }
  }
  return plan_schedule_time(o->schedule == PIPE_GPIPE ? PLAN_GPIPE : PLAN_1F1B, j->stages,
                            j->microbatches, fb, lat, beta);
}

static int check_scales(const pipe_job *j, const pipe_options *o) {
  for (int h = 0; h + 1 < j->stages; h++)
    if (j->hop[h].bytes / o->bytes_scale > MAX_MESSAGE_BYTES)
      return cmd_usage_error("pipe",
                             "hop %d: %.0f bytes / %g is above %.0f MiB a message: "
                             "raise --bytes-scale",
                             h, j->hop[h].bytes, o->bytes_scale, MAX_MESSAGE_BYTES / 1048576);
  double run = predicted(j, o, o->time_scale) * (o->iterations + 1);
  if (run > MAX_RUN_S)
    return cmd_usage_error("pipe",
                           "the run would take about %.0f s (above %.0f): raise "
                           "--time-scale or lower --iterations",
                           run, MAX_RUN_S);
  return -1;
}

static void report(const pipe_job *j, const pipe_options *o, const pipe_result *r) {
  double pred = predicted(j, o, o->time_scale);
  const char *sched = o->schedule == PIPE_GPIPE ? "gpipe" : "1f1b";
  printf("tern pipe: job '%s': %d stages, %d micro-batches, %s, %d timed iterations\n", j->name,
         j->stages, j->microbatches, sched, o->iterations);
  printf("  scales: compute and transfer / %g, bytes / %g, latency as planned\n", o->time_scale,
         o->bytes_scale);
  for (int h = 0; h + 1 < j->stages; h++)
    printf("  hop %d->%d: %.0f bytes a message, link as planned %.1f ms one-way, %.4g MB/s "
           "(emulated: %.4g MB/s)\n",
           h, h + 1, j->hop[h].bytes / o->bytes_scale, j->hop[h].latency_s * 1e3,
           j->hop[h].bandwidth_Bps / 1e6,
           j->hop[h].bandwidth_Bps * o->time_scale / o->bytes_scale / 1e6);
  printf("  predicted %.4f s per iteration (unscaled: the model %.4f s, the plan says %.4f s)\n",
         pred, predicted(j, o, 1), j->iteration_s);
  printf("  measured  %.4f s per iteration (min %.4f, max %.4f)\n", r->mean_s, r->min_s, r->max_s);
  printf("pipe job=%s stages=%d microbatches=%d schedule=%s time_scale=%g bytes_scale=%g "
         "iterations=%d predicted_s=%.6f measured_s=%.6f min_s=%.6f max_s=%.6f ratio=%.4f\n",
         j->name, j->stages, j->microbatches, sched, o->time_scale, o->bytes_scale, o->iterations,
         pred, r->mean_s, r->min_s, r->max_s, r->mean_s / pred);
  fflush(stdout);
}

/* Not a rank yet: the same command line, once per stage, under `tern run`. */
static int launch(int argc, char **argv, const pipe_job *j) {
  static char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    perror("tern pipe: /proc/self/exe");
    return 1;
  }
  self[n] = '\0';
  char ranks[16];
  snprintf(ranks, sizeof ranks, "%d", j->stages);
  char **line = calloc((size_t)argc + 6, sizeof *line);
  if (!line) return 1;
  int k = 0;
  line[k++] = "run";
  line[k++] = "-n";
  line[k++] = ranks;
  line[k++] = "--";
  line[k++] = self;
  for (int i = 0; i < argc; i++)
    line[k++] = argv[i];
  int rc = cmd_run(k, line);
  free(line);
  return rc;
}

int cmd_pipe(int argc, char **argv) {
  bool rank = comm_env_launched();
  comm_env env;
  core_err ignored = {0};
  /* ranks but the first only exit 2 on a usage error: the line is the same in every rank */
  cmd_usage_quiet(rank && comm_env_read(&env, &ignored) == TERN_OK && env.rank > 0);
  args a = {0};
  int rc = parse(argc, argv, &a);
  if (rc >= 0) return rc;
  static pipe_job job;
  char why[1024];
  if (pipe_plan_read(a.plan, a.job, &job, why, sizeof why) != 0) {
    fprintf(stderr, "tern pipe: %s\n", why);
    return 1;
  }
  if ((rc = check_scales(&job, &a.o)) >= 0) return rc;
  if (!rank) return launch(argc, argv, &job);
  pipe_result r = {0};
  if (pipe_run_stage(&job, &a.o, &r) != 0) return 1;
  if (r.rank == 0) report(&job, &a.o, &r);
  return 0;
}

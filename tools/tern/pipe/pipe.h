/* pipe.h: `tern pipe`, a plan's pipeline run for real (docs/PIPE.md). pipe/plan.c reads one
 * job's pipeline out of a plan JSON (`tern plan -o`); pipe/run.c runs its schedule as one rank
 * per stage over tern's point-to-point send and receive; pipe.c is the command. */
#ifndef TERN_TOOLS_PIPE_H
#define TERN_TOOLS_PIPE_H

#include <stddef.h>

#define PIPE_MAX_STAGES 64 /* one process per stage on one machine or harness */

typedef struct pipe_stage {
  double fwd_s, bwd_s; /* one micro-batch, as planned */
} pipe_stage;

typedef struct pipe_hop {
  double bytes, bandwidth_Bps, latency_s, transfer_s; /* stage h to h + 1, as priced */
} pipe_hop;

typedef struct pipe_job {
  char name[128];
  int stages, microbatches;
  double iteration_s; /* the plan's own prediction (1F1B) */
  pipe_stage stage[PIPE_MAX_STAGES];
  pipe_hop hop[PIPE_MAX_STAGES - 1];
} pipe_job;

/* Reads job `name` of the plan at path into *job. On a bad file, a missing job (the message
 * names the jobs there are) or a field missing or out of range (the message names it), writes
 * the reason into why and returns -1. */
int pipe_plan_read(const char *path, const char *name, pipe_job *job, char *why, size_t cap);

typedef enum pipe_schedule { PIPE_1F1B, PIPE_GPIPE } pipe_schedule;

typedef struct pipe_options {
  double time_scale;  /* compute and transfer seconds are divided by this */
  double bytes_scale; /* message bytes are divided by this */
  int iterations;     /* timed, after one untimed warm-up */
  pipe_schedule schedule;
} pipe_options;

typedef struct pipe_result {
  int rank;                    /* this process's stage */
  double mean_s, min_s, max_s; /* measured seconds per iteration, on the first stage */
} pipe_result;

/* Runs this rank's stage (TERN_RANK etc. from the launcher; the world is the job's stages).
 * Sets r->rank; rank 0 fills the rest of *r. Returns 0, or 1 with the reason printed. */
int pipe_run_stage(const pipe_job *job, const pipe_options *o, pipe_result *r);

#endif

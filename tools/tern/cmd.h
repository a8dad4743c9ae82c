/* cmd.h: the subcommands of `tern`, one file each under tools/tern/. Each takes the arguments
 * after its own name (argv[0] is the subcommand) and returns the process exit code. */
#ifndef TERN_TOOLS_CMD_H
#define TERN_TOOLS_CMD_H

#include <stdbool.h>

int cmd_run(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_sim_coll(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_sim_plan(int argc, char **argv); /* `tern sim plan`, in sim/plan.c */
int cmd_demo(int argc, char **argv);
int cmd_pipe(int argc, char **argv); /* pipe.c: a plan's pipeline run for real */
int cmd_sim_averaging(int argc, char **argv);
int cmd_swarm(int argc, char **argv);
int cmd_swarm_status(int argc, char **argv); /* `tern swarm status`, in swarm/status.c */

/* `tern demo`'s swarm phase (demo/swarm.c): peers that train by swarm averaging, one killed and
 * one joining mid-run. Returns 0 when every live peer ends at min_accuracy or above. */
typedef struct demo_swarm_options {
  int rounds, hidden;
  const char *data; /* NULL: the data set the build knows */
  double min_accuracy;
} demo_swarm_options;
int demo_swarm(const demo_swarm_options *o);

/* Prints "tern SUB: message" to stderr and returns 2, the exit code for a usage error; after
 * cmd_usage_quiet(true) only returns 2 (ranks but one of a job that all parse one command line:
 * the error is printed once). */
void cmd_usage_quiet(bool quiet);
int cmd_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

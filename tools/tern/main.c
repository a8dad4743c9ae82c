/* main.c: `tern`, the command. It finds the subcommand and hands it the rest of the line. */
#include "cmd.h"
#include "tern.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
    {"run", cmd_run, "run -n N [--nnodes M --node-rank K --master H:P] -- PROG ARGS: start ranks"},
    {"store", cmd_store, "store --listen H:P -n N: serve the rendezvous store (TERN_STORE)"},
    {"bench", cmd_bench, "bench COLL [-b -e -f -i -n -w -c -d -o -a -r -z]: time a collective"},
    {"tune", cmd_tune,
     "tune [--budget S] [--ns 2,4] [-o FILE]: measure, fit, write the tuning file"},
    {"sim", cmd_sim, "sim WHAT ...: the simulators"},
    {"swarm", cmd_swarm, "swarm --listen H:P --run-id ID [--join H:P]...: a swarm averaging peer"},
    {"plan", cmd_plan, "plan SCENARIO.json: place training jobs across regions (geo planner)"},
    {"pipe", cmd_pipe, "pipe PLAN.json --job NAME: run a planned job's pipeline for real"},
    {"demo", cmd_demo, "demo [-n N] [--epochs E]: ranks train a model with tern, live"},
};

static bool usage_quiet;

void cmd_usage_quiet(bool quiet) {
  usage_quiet = quiet;
}

int cmd_usage_error(const char *sub, const char *fmt, ...) {
  if (usage_quiet) return 2;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tern %s: ", sub);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

static void usage(FILE *out) {
  fprintf(out, "tern %s: communication for deep-learning training\n\nusage: tern COMMAND ...\n\n",
          tern_version_str());
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-7s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n`tern COMMAND --help` tells more; docs/CLI.md has it all.\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("tern %s\n", tern_version_str());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "tern: no command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

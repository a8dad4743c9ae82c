/* sim.c: `tern sim WHAT`, the simulators: each kind of simulation is its own file. */
#include "tern/cmd.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} simulators[] = {
    {"coll", cmd_sim_coll, "COLL ...: tern's schedules on a simulated cluster (SimGrid)"},
    {"plan", cmd_sim_plan, "SCENARIO.json: the job queue of the geo planner, per policy"},
    {"averaging", cmd_sim_averaging, "rounds of averaging to consensus while peers fail"},
    {NULL, NULL, NULL}, /* the simulators register here as they land */
};

int cmd_sim(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    FILE *out = argc < 2 ? stderr : stdout;
    fprintf(out, "usage: tern sim WHAT ...\n\n");
    for (size_t i = 0; simulators[i].name; i++)
      fprintf(out, "  %-10s %s\n", simulators[i].name, simulators[i].summary);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; simulators[i].name; i++)
    if (strcmp(argv[1], simulators[i].name) == 0) return simulators[i].run(argc - 1, argv + 1);
  return cmd_usage_error("sim", "no simulator '%s' (tern sim --help lists them)", argv[1]);
}

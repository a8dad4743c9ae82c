/* run/output.h: `tern run --tag-output`: each rank's stdout and stderr come through pipes, and
 * every line goes out on tern run's own stream with the rank in front, as Open MPI's mpirun
 * --tag-output writes it: "[1,R]<stdout>:" and "[1,R]<stderr>:". */
#ifndef TERN_TOOLS_RUN_OUTPUT_H
#define TERN_TOOLS_RUN_OUTPUT_H

#include <poll.h>
#include <spawn.h>
#include <stdbool.h>

typedef struct run_output run_output;

/* For n ranks, tagged with the ranks first .. first + n - 1; NULL without memory. */
run_output *run_output_new(int n, int first);
/* Makes rank r's pipes and has the spawn put their write ends on its fds 1 and 2; after the
 * spawn, run_output_spawned closes them here. Returns 0 or an errno. */
int run_output_attach(run_output *o, int r, posix_spawn_file_actions_t *fa);
void run_output_spawned(run_output *o, int r);
/* Fills fds with the pipes still open (at most cap); returns how many. */
int run_output_pollfds(const run_output *o, struct pollfd *fds, int cap);
/* Copies out what the pipes in fds (n of them, as polled) hold, a whole line at a time. */
void run_output_pump(run_output *o, const struct pollfd *fds, int n);
/* Reads every pipe to its end (the ranks are gone), waiting at most ms for the last bytes,
 * writes any unfinished last line, and frees o. NULL is accepted. */
void run_output_finish(run_output *o, int ms);

#endif

/* coll_actor.c: the simulation itself, run in a fresh process (coll_run.c forks it).
 *
 * One SimGrid actor per rank, on its host (rank r on host r / ranks_per_host). For each job, each
 * actor builds its own rank's schedule with coll_build and turns it into a plan (coll_plan.c),
 * so that only the compressed plans of all ranks are alive at once. The schedule is the run's
 * one scratch schedule: actors take turns (none yields between building and planning), and a
 * schedule a rank of its own, freed after planning, left each rank's plan pinning a hole the
 * size of a schedule in the heap (a ring of 2048 ranks took 560 MB, of 16384 ranks all memory). A
 * barrier (no simulated time) lines the ranks up; then each plays its plan as the executor
 * does (coll/exec.c): per phase, every send and receive posted at once, the local work done
 * while they travel (sg_actor_execute on the host's cores, which the host's ranks share), then a
 * wait for all of them. The job's time is from the barrier to the last rank's end. A job whose
 * schedule some rank cannot build is skipped by all ranks alike, after the barrier, so that no
 * rank waits for messages that will never come.
 *
 * Messages travel on one mailbox per (sender, receiver): SimGrid matches a mailbox's puts and
 * gets in order, which is the schedule format's rule for two ranks' messages.
 */
#include "sim/coll.h"
#include "sim/coll_rate.h"

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>

typedef struct sim_run {
  const sim_platform *p;
  sim_coll_job *jobs;
  size_t njobs, done; /* done: jobs every rank has finished */
  int nranks;
  double start, *end;     /* the current job's start, and each rank's end */
  sim_bounds bounds;      /* the current job's */
  sim_steady steady;      /* the current job's phases taken as steady (platform's steady > 0) */
  coll_sched sched;       /* the ranks' scratch schedule, reused by each in turn */
  const sim_plan **plans; /* each rank's, for steady's check */
  sg_bar_t bar;
} sim_run;

typedef struct sim_rank {
  sim_run *run;
  int rank;
  sim_plan plan;
  sg_mailbox_t *boxes; /* the mailbox of each message of the plan */
  sg_comm_t *comms;    /* one phase's communications */
  size_t boxes_cap, comms_cap;
  void *got; /* where receives put the (unused) payload */
} sim_rank;

static sg_mailbox_t mailbox(int from, int to) {
  char name[32];
  snprintf(name, sizeof name, "%d>%d", from, to);
  return sg_mailbox_by_name(name);
}

/* Sizes boxes and comms for the plan and looks the mailboxes up. */
static tern_status resolve(sim_rank *me) {
  const sim_plan *pl = &me->plan;
  size_t most = 0;
  for (size_t i = 0; i < pl->nphases; i++)
    most = CORE_MAX(most, (size_t)pl->phases[i].nmsgs);
  if (pl->nmsgs > me->boxes_cap) {
    sg_mailbox_t *b = realloc(me->boxes, pl->nmsgs * sizeof *b);
    if (b == NULL) return TERN_ERR_NOMEM;
    me->boxes = b, me->boxes_cap = pl->nmsgs;
  }
  if (most > me->comms_cap) {
    sg_comm_t *c = realloc(me->comms, most * sizeof *c);
    if (c == NULL) return TERN_ERR_NOMEM;
    me->comms = c, me->comms_cap = most;
  }
  for (size_t i = 0; i < pl->nmsgs; i++) {
    const sim_msg *m = &pl->msgs[i];
    if (m->bytes > LONG_MAX) return TERN_ERR_INVALID_ARG;
    me->boxes[i] = m->send ? mailbox(me->rank, m->peer) : mailbox(m->peer, me->rank);
  }
  return TERN_OK;
}

/* Posts one send: between hosts of several NICs, held to one NIC's rate (a flow goes through
 * one NIC; the host's link carries all of them together). */
static sg_comm_t post_send(sim_rank *me, const sim_msg *m, sg_mailbox_t box) {
  const sim_platform *p = me->run->p;
  if (p->nics > 1 && m->peer / p->ranks_per_host != me->rank / p->ranks_per_host)
    return sim_put_async_at_most(box, me->run, (long)m->bytes, p->nic_bw);
  return sg_mailbox_put_async(box, me->run, (long)m->bytes);
}

/* One phase: its messages posted, its local work done meanwhile, then the wait. A rank with a
 * core of its own (no more ranks than cores on the host) gets that core whole, so its work
 * need not be a SimGrid execution contending for it: when the messages took less time than the
 * work, the rank sleeps the rest. That is exact, and spares SimGrid one activity per phase. */
static uint64_t play_phase(sim_rank *me, const sim_phase *ph, bool own_core) {
  uint64_t sent = 0;
  double t0 = simgrid_get_clock();
  for (uint32_t k = 0; k < ph->nmsgs; k++) {
    const sim_msg *m = &me->plan.msgs[ph->first + k];
    sg_mailbox_t box = me->boxes[ph->first + k];
    me->comms[k] = m->send ? post_send(me, m, box) : sg_mailbox_get_async(box, &me->got);
    sent += m->send;
  }
  if (ph->cpu > 0 && !own_core) sg_actor_execute(ph->cpu * 1e9); /* hosts run 1 Gflop/s */
  if (ph->nmsgs) sg_comm_wait_all(me->comms, ph->nmsgs);
  double left = ph->cpu - (simgrid_get_clock() - t0);
  if (own_core && left > 0) sg_actor_sleep_for(left);
  return sent;
}

static uint64_t phase_sends(const sim_plan *pl, const sim_phase *ph) {
  uint64_t n = 0;
  for (uint32_t k = 0; k < ph->nmsgs; k++)
    n += pl->msgs[ph->first + k].send;
  return n;
}

/* Plays the plan; returns the messages this rank sent (those of skipped phases too). A phase
 * index that steady skips costs the run's period: the shortest of its repeats played after
 * the first (coll_steady.c guarantees K were played before: a skipped index is at least the
 * K-th repeat on every rank). Not the last one's: a repeat may include waiting for a peer still
 * asleep through its own skipped stretch, and that wait, multiplied by the repeats skipped,
 * grew a ring of 256 ranks on a fat tree tenfold. */
static uint64_t play(sim_rank *me) {
  const sim_plan *pl = &me->plan;
  const uint8_t *skip = me->run->steady.skipped ? me->run->steady.skip : NULL;
  bool own_core = me->run->p->cores >= me->run->p->ranks_per_host;
  uint64_t sent = 0;
  size_t i = 0; /* the phase index, repeats counted */
  for (size_t k = 0; k < pl->nphases; k++) {
    const sim_phase *ph = &pl->phases[k];
    double first = 0, later = HUGE_VAL; /* the first repeat's time, the least of the others' */
    uint32_t played = 0, pending = 0;   /* skipped repeats whose time is not slept yet */
    for (uint32_t rep = 0; rep < ph->repeat; rep++, i++) {
      if (skip && skip[i]) {
        pending++;
        sent += phase_sends(pl, ph);
        continue;
      }
      if (pending) sg_actor_sleep_for(pending * (played > 1 ? later : first)), pending = 0;
      double t0 = simgrid_get_clock();
      sent += play_phase(me, ph, own_core);
      double took = simgrid_get_clock() - t0;
      if (played++ == 0)
        first = took;
      else if (took < later)
        later = took;
    }
    if (pending) sg_actor_sleep_for(pending * (played > 1 ? later : first));
  }
  return sent;
}

/* Rank 0's end of a job: its time and bound, and the bounds emptied for the next. */
static void finish_job(sim_run *run, sim_coll_job *job) {
  double last = run->start;
  for (int r = 0; r < run->nranks; r++)
    last = CORE_MAX(last, run->end[r]);
  if (job->status == TERN_OK) job->time = last - run->start;
  job->bound = sim_bounds_get(&run->bounds);
  job->steady = run->steady.skipped;
  sim_bounds_reset(&run->bounds);
  sim_steady_reset(&run->steady);
}

/* Three barriers: all plans built (and their bounds added) before anyone plays, all ranks done
 * before rank 0 takes the time, and the bounds emptied before anyone adds the next job's; with
 * steady phases a fourth, rank 0 choosing them before anyone plays. */
static void run_job(sim_rank *me, sim_coll_job *job) {
  sim_run *run = me->run;
  coll_args a = sim_coll_args(run->p, job, me->rank);
  tern_status rc = coll_build(&run->sched, &a, job->algo);
  if (rc == TERN_OK) rc = sim_plan_build(&me->plan, &run->sched, job->elem_size, run->p);
  if (rc == TERN_OK) rc = resolve(me);
  if (rc != TERN_OK && job->status == TERN_OK) job->status = rc;
  if (rc == TERN_OK) sim_bounds_add(&run->bounds, me->rank, &me->plan);
  if (rc == TERN_OK && run->steady.K > 0) rc = sim_steady_add(&run->steady, &me->plan);
  if (rc != TERN_OK && job->status == TERN_OK) job->status = rc;
  sg_barrier_wait(run->bar);
  if (me->rank == 0) run->start = simgrid_get_clock();
  if (run->steady.K > 0) { /* rank 0 decides the steady phases before anyone plays */
    if (me->rank == 0 && job->status == TERN_OK)
      job->status = sim_steady_decide(&run->steady, run->plans, run->nranks);
    sg_barrier_wait(run->bar);
  }
  if (job->status == TERN_OK) { /* every rank sees the same status here */
    job->messages += play(me);
    run->end[me->rank] = simgrid_get_clock();
  }
  sg_barrier_wait(run->bar);
  if (me->rank == 0) finish_job(run, job);
  sg_barrier_wait(run->bar);
}

static void rank_main(int argc, char **argv) {
  (void)argc, (void)argv;
  sim_rank *me = sg_actor_self_get_data();
  for (size_t j = 0; j < me->run->njobs; j++) {
    run_job(me, &me->run->jobs[j]);
    if (me->rank == 0) me->run->done = j + 1;
  }
  sim_plan_free(&me->plan);
}

/* SimGrid's options: the CM02 model takes latencies and bandwidths as given (LV08, the default,
 * scales them by factors fitted to other networks), without the 5% of reverse bandwidth it
 * charges for TCP's acknowledgements (a NIC's bandwidth here is what one flow achieves); the TCP
 * window cap only where asked. Under
 * sanitizers, actors run on threads: the sanitizers cannot follow SimGrid's own stack
 * switching. */
static void engine_init(const sim_platform *p) {
  static char model[] = "--cfg=network/model:CM02", acks[] = "--cfg=network/crosstraffic:0",
              stack[] = "--cfg=contexts/stack-size:256", log[] = "--log=root.thres:warning",
              name[] = "tern-sim";
  char gamma[64];
  snprintf(gamma, sizeof gamma, "--cfg=network/TCP-gamma:%.17g",
           p->tcp_window > 0 ? p->tcp_window : 1e30);
#ifdef TERN_SANITIZED
  static char factory[] = "--cfg=contexts/factory:thread";
  char *argv[] = {name, model, acks, stack, log, gamma, factory, NULL};
#else
  char *argv[] = {name, model, acks, stack, log, gamma, NULL};
#endif
  int argc = (int)CORE_ARRAY_LEN(argv) - 1;
  simgrid_init(&argc, argv);
}

tern_status sim_coll_simulate(const sim_platform *p, sim_coll_job *jobs, size_t njobs,
                              const char *xml_path, core_err *err) {
  int n = sim_platform_ranks(p);
  sim_run run = {.p = p, .jobs = jobs, .njobs = njobs, .nranks = n};
  sim_steady_init(&run.steady, p->steady);
  coll_sched_init(&run.sched);
  sim_rank *ranks = calloc((size_t)n, sizeof *ranks);
  run.end = calloc((size_t)n, sizeof *run.end);
  run.plans = calloc((size_t)n, sizeof *run.plans);
  tern_status rc = TERN_OK;
  if (ranks == NULL || run.end == NULL || run.plans == NULL ||
      sim_bounds_init(&run.bounds, p) != TERN_OK) {
    rc = core_err_set(err, TERN_ERR_NOMEM, "no memory for %d simulated ranks", n);
    goto fail;
  }
  engine_init(p);
  simgrid_load_platform(xml_path);
  run.bar = sg_barrier_init((unsigned)n);
  for (int r = 0; r < n; r++) {
    char host[32], name[32];
    snprintf(host, sizeof host, "h%d", r / p->ranks_per_host);
    snprintf(name, sizeof name, "rank%d", r);
    ranks[r] = (sim_rank){.run = &run, .rank = r};
    run.plans[r] = &ranks[r].plan;
    sg_actor_t actor = sg_actor_init(name, sg_host_by_name(host));
    sg_actor_set_data(actor, &ranks[r]);
    sg_actor_start(actor, rank_main, 0, NULL);
  }
  simgrid_run();
  sg_barrier_destroy(run.bar);
  if (run.done != njobs)
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "the simulation stopped after %zu of %zu jobs",
                      run.done, njobs);
  for (int r = 0; r < n; r++)
    free(ranks[r].boxes), free(ranks[r].comms);
fail:
  sim_bounds_free(&run.bounds);
  sim_steady_free(&run.steady);
  coll_sched_free(&run.sched);
  free(ranks);
  free(run.end);
  free(run.plans);
  return rc;
}

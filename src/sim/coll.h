/* coll.h: `tern sim coll`, tern's own schedules on a simulated platform (SimGrid).
 *
 * The simulator runs the schedules coll_build writes, one per rank, exactly as the executor
 * (coll/exec.c) runs them: phase by phase, each phase posting all its sends and receives at
 * once, doing its local work while they travel, and waiting for all of them. Each rank is a
 * SimGrid actor; a message is a SimGrid communication on a per-(sender, receiver) mailbox, so
 * messages between two ranks match in order, as the schedule format requires. The network is
 * SimGrid's flow-level model (CM02: max-min sharing, latency and bandwidth as given).
 *
 * A platform is hosts x ranks per host (rank r on host r / ranks_per_host). Each host has NICs
 * (its private links up and down, of all its NICs' rate, a flow held to one NIC's) into a
 * topology: a flat switch, a fat tree, a dragonfly routed adaptively (groups whose global links
 * are one pool), SimGrid's minimally routed dragonfly, or the regions of a geo fixture (hosts
 * split into regions in order, a link per pair of regions). Ranks of one host talk over the
 * host's loopback at shared-memory speed. Each host has cores that its ranks' local work
 * shares: per message (msg_cpu, LogP's o), per byte sent or received (byte_cpu: a TCP stack's
 * copies), per byte reduced (reduce_cpu) and copied (copy_cpu).
 *
 * SimGrid has one engine per process, which cannot be started twice and aborts on what it
 * cannot model; so sim_coll_run runs the whole simulation in a child process and reads the
 * results back through a pipe, with a deadline. The jobs of one call run one after another on
 * one platform, a barrier of no simulated time between them.
 *
 * Files: coll_platform.c (checks a platform, writes it as SimGrid XML), coll_geo.c (the geo
 * fixtures), coll_plan.c (a schedule compressed to what the simulation needs), coll_bound.c
 * (lower bounds from the plans, without simulating), coll_steady.c (the repeats taken as
 * steady), coll_rate.cpp (a flow held to one NIC's rate), coll_actor.c (the actors, in the child),
 * coll_run.c (sim_coll_run: the child, the pipe, the deadline).
 */
#ifndef TERN_SIM_COLL_H
#define TERN_SIM_COLL_H

#include "coll/sched.h"
#include "core/core.h"

#include <stdio.h>

typedef enum sim_topo {
  SIM_TOPO_FLAT,     /* every NIC on one switch */
  SIM_TOPO_FAT_TREE, /* SimGrid's FAT_TREE cluster; topo_params as SimGrid's */
  /* A dragonfly routed adaptively, as Slingshot's: groups of hosts on a non-blocking group
   * fabric, each group's traffic to others spread over all its global links (topo_params
   * "G,U": G hosts a group, U global links a group at a host's rate). Built as SimGrid's
   * two-level fat tree whose group switches have U links up. */
  SIM_TOPO_DRAGONFLY,
  SIM_TOPO_GEO,              /* hosts in the regions of geo_file, in order */
  SIM_TOPO_DRAGONFLY_MINIMAL /* SimGrid's DRAGONFLY cluster (minimal routes); its topo_params */
} sim_topo;

#define SIM_COST_POINTS 24

typedef struct sim_platform {
  sim_topo topo;
  int hosts, ranks_per_host, cores; /* cores: per host */
  double nic_bw, nic_lat;           /* bytes/s each way, seconds: one NIC's */
  int nics; /* NICs a host: its link into the network carries nics x nic_bw, and each flow
               between hosts at most one NIC's nic_bw (docs/SCALE.md) */
  double shm_bw, shm_lat;                         /* between ranks of one host */
  double msg_cpu, byte_cpu, reduce_cpu, copy_cpu; /* seconds per message / per byte */
  double tcp_window; /* bytes: caps a flow at window / RTT (SimGrid's TCP gamma); 0: no cap */
  /* A measured CPU cost of one message on each end by its size, piecewise linear in the bytes
   * (extended along its last segment); when given, it replaces msg_cpu + byte_cpu x bytes. How
   * the loopback validation stands for a TCP stack whose copies run on the ranks' cores. */
  int ncost;
  double cost_bytes[SIM_COST_POINTS], cost_s[SIM_COST_POINTS]; /* bytes ascending */
  char topo_params[128]; /* fat tree: "levels;down;up;count", dragonfly: "G,U", dragonfly
                            minimal: "g,l;c,l;r,l;n" */
  char geo_file[1024];   /* SIM_TOPO_GEO: a fixture such as aws-10-regions.json */
  int regions;           /* SIM_TOPO_GEO: how many of its regions (0: all) */
  /* Not the platform but how it is simulated: with steady = K >= 4, phases from the K-th
   * repeat of identical ones on every rank on take the least time of the repeats played
   * after the first (coll_steady.c, coll_actor.c); 0: every message simulated. */
  int steady;
} sim_platform;

/* A cluster of hosts x rph, flat topology, rph cores per host. Measured: shared memory at this
 * machine's 12.45 GB/s and 0.34 us and reductions at its 8.10 GB/s (coll_model_shm, from
 * peers/BASELINES.md). Taken from the hardware: 25 GB/s NICs, one 200 Gb/s Slingshot port as on
 * Frontier, the machine of PCCL's study. Assumed, to vary with the options: 2 us one way between
 * hosts and 1 us of CPU per message (LogP's o), the order of an HPC NIC's and MPI's. */
void sim_platform_cluster(sim_platform *p, int hosts, int rph);
/* Frontier's nodes (OLCF's Frontier user guide), as PCCL ran on them: 8 ranks a node (the 8
 * GCDs of 4 MI250X), four 25 GB/s Slingshot NICs, 50 GB/s between GCDs (Infinity Fabric between
 * packages, the slowest of a node's GCD links); reductions at 500 GB/s and copies at 800 GB/s,
 * a kernel on one GCD's 1.6 TB/s HBM2e reading two vectors and writing one (copies: one and
 * one); 2 us a message within the node, 2 us between nodes, 1 us of CPU a message. */
void sim_platform_frontier(sim_platform *p, int hosts);
/* Gives a fat tree or dragonfly without topo_params the parameters for its hosts: a two-level
 * fat tree of full bisection; a dragonfly of Frontier's groups (up to 128 hosts, global links
 * carrying 57% of what the group's hosts inject: coll_platform.c); SimGrid's minimal dragonfly
 * in as many groups as SimGrid can route. */
void sim_platform_fill_topo(sim_platform *p);
/* The platform's ranks: hosts x ranks_per_host. */
int sim_platform_ranks(const sim_platform *p);
/* TERN_OK, or TERN_ERR_INVALID_ARG with what is wrong in err. */
tern_status sim_platform_check(const sim_platform *p, core_err *err);
/* Writes p as a SimGrid platform file (hosts named h0, h1, ... in rank order of hosts). */
tern_status sim_platform_write_xml(const sim_platform *p, FILE *out, core_err *err);

/* The CPU seconds one message of bytes costs on each end (see ncost). */
double sim_platform_msg_cost(const sim_platform *p, double bytes);

/* ---- the geo fixtures (coll_geo.c) -------------------------------------------------------- */

#define SIM_GEO_MAX_REGIONS 64

typedef struct sim_geo {
  int nregions;
  char names[SIM_GEO_MAX_REGIONS][32];
  double lat[SIM_GEO_MAX_REGIONS][SIM_GEO_MAX_REGIONS]; /* seconds, one way */
  double bw[SIM_GEO_MAX_REGIONS][SIM_GEO_MAX_REGIONS];  /* bytes/s of one flow */
} sim_geo;

/* Reads a fixture {"regions": [names], "links": [{"a", "b", "latency_ms", "bandwidth_gbps"}]};
 * every pair of regions must have a link. Errors name the file, and the line and column or the
 * link at fault. */
tern_status sim_geo_load(const char *path, sim_geo *g, core_err *err);

/* ---- plans: a schedule as the simulation runs it (coll_plan.c) ---------------------------- */

typedef struct sim_msg {
  int32_t peer;
  uint8_t send; /* 1: send, 0: receive */
  uint64_t bytes;
} sim_msg;

typedef struct sim_phase {
  uint32_t first, nmsgs; /* msgs[first, first + nmsgs) */
  uint32_t repeat;       /* the phase runs this many times in a row (identical phases merged) */
  double cpu;            /* seconds of local work: messages, bytes, reductions, copies */
} sim_phase;

typedef struct sim_plan {
  sim_msg *msgs;
  sim_phase *phases;
  size_t nmsgs, nphases, msgs_cap, phases_cap;
} sim_plan;

void sim_plan_init(sim_plan *pl);
void sim_plan_free(sim_plan *pl);
/* The phases of s for a rank of platform p moving elements of elem_size bytes; consecutive
 * identical phases become one with a repeat count, so a ring of 4096 ranks takes a few phases,
 * not 8190. TERN_ERR_NOMEM on failure. */
tern_status sim_plan_build(sim_plan *pl, const coll_sched *s, size_t elem_size,
                           const sim_platform *p);

/* ---- steady phases (coll_steady.c) ------------------------------------------------------- */

typedef struct sim_steady {
  int K;
  int32_t *count; /* [cap + 1]: differences of the ranks' eligible phase indices */
  uint8_t *skip;  /* [cap]: the phase indices no rank plays */
  size_t nphases; /* the most phases of a rank (repeats counted) */
  size_t cap;
  size_t skipped; /* phase indices skipped */
} sim_steady;

void sim_steady_init(sim_steady *st, int K);
void sim_steady_free(sim_steady *st);
/* Empties it for the next job. */
void sim_steady_reset(sim_steady *st);
/* Adds one rank's plan: the phase indices past the K-th repeat of its runs. */
tern_status sim_steady_add(sim_steady *st, const sim_plan *pl);
/* With every rank's plan added (plans[0, n)): skip[i] for the indices every rank may skip,
 * none when a channel's two ends would skip different messages. */
tern_status sim_steady_decide(sim_steady *st, const sim_plan *const *plans, int n);

/* ---- running (coll_run.c, coll_actor.c) ---------------------------------------------------- */

typedef struct sim_coll_job {
  coll_kind kind;
  coll_algo algo;  /* never AUTO */
  coll_algo inner; /* hier: its inter-host algorithm (ring or rhd; AUTO: ring) */
  size_t count;    /* as coll_args.count */
  size_t elem_size;
  int root;
  bool inplace;
  /* results */
  tern_status status; /* coll_build's for one of the ranks, or TERN_OK */
  double time;        /* simulated seconds from the start to the last rank's end */
  double bound;       /* a lower bound on time (sim_bounds): time >= bound */
  uint64_t messages;  /* messages sent by all ranks */
  uint64_t steady;    /* phase indices taken as steady, not simulated (platform's steady) */
} sim_coll_job;

/* Runs jobs[0, njobs) one after another on platform p and fills in their results. Fails with
 * TERN_ERR_TIMEOUT when the simulation takes more than deadline_s seconds of wall time, and with
 * the simulator's own message when it dies. A job whose schedule cannot be built (an algorithm
 * without that collective) gets that status and does not stop the others. */
tern_status sim_coll_run(const sim_platform *p, sim_coll_job *jobs, size_t njobs, double deadline_s,
                         core_err *err);

/* The arguments rank's schedule of job is built with: the platform's hosts layout (ppn = ranks
 * per host), and hier's inner algorithm. */
coll_args sim_coll_args(const sim_platform *p, const sim_coll_job *job, int rank);

/* ---- lower bounds (coll_bound.c) --------------------------------------------------------- *
 * No simulation of a job can beat two bounds: the most local work of any rank (no phase ends
 * before its work is done), and the most bytes any host's NIC must carry one way over its
 * bandwidth. Both come from the plans alone. */

typedef struct sim_bounds {
  const sim_platform *p;
  double cpu;       /* the most local work of a rank so far */
  double *out, *in; /* bytes each host sends to, receives from, other hosts */
} sim_bounds;

tern_status sim_bounds_init(sim_bounds *b, const sim_platform *p);
void sim_bounds_free(sim_bounds *b);
void sim_bounds_reset(sim_bounds *b);
/* Adds rank's plan. */
void sim_bounds_add(sim_bounds *b, int rank, const sim_plan *pl);
/* The bound, in seconds, of the plans added since the reset. */
double sim_bounds_get(const sim_bounds *b);

/* Fills in each job's status and bound without simulating: every rank's schedule is built and
 * planned, no more. How a sweep shows an algorithm cannot win a cell without paying for its
 * simulation (a ring of 4096 ranks sends 33 million messages). */
tern_status sim_coll_bound(const sim_platform *p, sim_coll_job *jobs, size_t njobs, core_err *err);

/* Runs the simulation in this process, which must not have started SimGrid before (coll_run.c
 * calls it in a fresh child): the platform from xml_path (written from p), the jobs' results
 * filled in. */
tern_status sim_coll_simulate(const sim_platform *p, sim_coll_job *jobs, size_t njobs,
                              const char *xml_path, core_err *err);

#endif /* TERN_SIM_COLL_H */

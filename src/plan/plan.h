/* plan.h: the geo planner, after BACE-Pipe (Zhang, Liu, Xu, 2026). Pure computation: it knows no
 * sockets and links nothing of net, comm or coll.
 *
 *  - the cluster model: GPU types, regions (a pool of one GPU type, an electricity price per
 *    UTC hour, an intra-region bandwidth), inter-region links (latency, bandwidth) that the jobs
 *    crossing them share (cluster.c);
 *  - the job model: a transformer trained with pipeline parallelism, one GPU per stage; its
 *    FLOPs, activation bytes and memory per layer, and its GPU demand K* (job.c);
 *  - the pipeline time model: layers split over uneven stages within memory, and the 1F1B
 *    iteration time over uneven stages and links (pipeline.c); the energy model (energy.c);
 *  - the policies behind one interface: BACE-Pipe and its ablations (bace.c with priority.c,
 *    pathfind.c, alloc.c), the four baselines (single.c, cross.c) and ours (ours.c);
 *  - scenarios: JSON in and out through jansson with file:line errors (scenario.c, jsonpos.c,
 *    scenario_write.c) and a seeded generator of the paper's variants (gen.c).
 *
 * Units everywhere: seconds, bytes, FLOP/s, watts, USD. docs/PLANNING.md states every model and
 * every constant with its source.
 */
#ifndef TERN_PLAN_H
#define TERN_PLAN_H

#include "core/core.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PLAN_NAME_LEN 48
#define PLAN_MAX_TYPES 16
#define PLAN_MAX_REGIONS 1024
#define PLAN_MAX_GPUS 1000000    /* in a whole cluster */
#define PLAN_MAX_STAGES 1024     /* one GPU per stage and at least one layer each */
#define PLAN_MAX_PATH 16         /* regions one pipeline may cross: our bound, see PLANNING.md */
#define PLAN_MAX_RUN_S 3.15576e9 /* a job training alone longer than 100 years is refused */

typedef struct plan_memo plan_memo; /* below, with plan_state */

/* ---- cluster model (cluster.c) ----------------------------------------------------------- */

typedef struct plan_gpu_type {
  char name[PLAN_NAME_LEN];
  double peak_flops;   /* dense 16-bit tensor FLOP/s */
  double power_w;      /* board power while the job holds the GPU */
  double memory_bytes; /* device memory */
} plan_gpu_type;

typedef struct plan_region {
  char name[PLAN_NAME_LEN];
  int type; /* index into plan_cluster.types */
  int gpus;
  double price[24]; /* USD per kWh in each UTC hour; 24 equal values for a flat price */
  double intra_Bps; /* bytes/s between two GPUs of the region (one stage boundary) */
} plan_region;

typedef struct plan_link {
  double latency_s;
  double Bps; /* bytes/s of the whole link, shared by the jobs crossing it; 0: no link */
} plan_link;

typedef struct plan_cluster {
  int ntypes, nregions;
  plan_gpu_type types[PLAN_MAX_TYPES];
  plan_region *regions;
  plan_link *links;    /* nregions x nregions, symmetric, diagonal unused */
  double mfu;          /* model FLOPs utilisation of a stage's GPU */
  double pue;          /* power usage effectiveness of every region's data centre */
  double mem_fraction; /* share of device memory a stage may fill */
} plan_cluster;

static inline const plan_link *plan_link_at(const plan_cluster *c, int a, int b) {
  return &c->links[(size_t)a * (size_t)c->nregions + (size_t)b];
}
/* The region's price at simulated time t (seconds from hour 0 UTC of day 0). */
double plan_price_at(const plan_region *r, double t);
/* The index of a region by name, -1 if none. */
int plan_region_find(const plan_cluster *c, const char *name);
int plan_cluster_total_gpus(const plan_cluster *c);
/* Allocates regions and links for n regions (links zeroed). */
tern_status plan_cluster_alloc(plan_cluster *c, int nregions, core_err *err);
void plan_cluster_free(plan_cluster *c);
/* A deep copy. */
tern_status plan_cluster_copy(plan_cluster *dst, const plan_cluster *src, core_err *err);

/* ---- job model (job.c) ------------------------------------------------------------------- */

/* A job's own objective (the scenario's `objective` object, docs/PLANNING.md "Objectives"): what
 * ours trades when it chooses among placements and start times. The other policies ignore it. */
typedef struct plan_objective {
  double w_jct, w_cost; /* weights on run time and cost, each relative to the best option */
  double deadline_s;    /* finish at most this long after arrival; 0: none */
  double budget_usd;    /* electricity cost at most this; 0: none */
  bool given;           /* the file set any of them: only then may ours delay to a cheaper hour */
} plan_objective;
/* The default: weights 1 and 1, no deadline, no budget. */
#define PLAN_OBJECTIVE_DEFAULT ((plan_objective){1, 1, 0, 0, false})

typedef struct plan_job {
  char name[PLAN_NAME_LEN];
  double params;    /* parameters */
  int layers;       /* transformer blocks */
  int hidden;       /* model width */
  int seq_len;      /* tokens per sequence */
  int mb_seqs;      /* sequences per micro-batch */
  int microbatches; /* micro-batches per iteration (one optimizer step) */
  double tokens;    /* tokens to train */
  double arrival_s;
  int dtype_bytes; /* bytes per activation element (2 for bf16) */
  plan_objective objective;
} plan_job;

/* What a job asks of the cluster, computed once from the job and the cluster. */
typedef struct plan_demand {
  int kstar;                      /* K*: the GPU count that minimises iteration time */
  int kstar_type[PLAN_MAX_TYPES]; /* K* on each GPU type (0 for a type that cannot hold it) */
  int kedp;                       /* the count that minimises energy x delay, K T^2 (ours.c) */
  int smin[PLAN_MAX_TYPES];       /* fewest GPUs of each type that hold the job in memory */
  double iter_kstar;              /* iteration time at K* on the reference region, s */
  double iter_fast;  /* least over GPU types of the iteration time at the type's K* on its largest
                      * pool, s: the fastest one region of the idle cluster runs the job */
  double stage_fb_s; /* forward+backward time of one stage at K*, s */
  double demand_Bps; /* bandwidth one stage boundary needs not to stall, bytes/s */
  double work_flops; /* FLOPs of the whole training run */
  int ref;           /* the region K* was searched on */
} plan_demand;

double plan_job_iterations(const plan_job *j);
/* Forward FLOPs of one layer for one micro-batch. */
double plan_job_layer_fwd_flops(const plan_job *j);
/* Bytes crossing one stage boundary per micro-batch, each way. */
double plan_job_boundary_bytes(const plan_job *j);
/* Bytes one layer keeps resident: weights, gradients, optimizer state. */
double plan_job_layer_static_bytes(const plan_job *j);
/* Bytes of activations one layer keeps per micro-batch in flight (its input: full
 * recomputation). */
double plan_job_layer_act_bytes(const plan_job *j);
/* Bytes a stage needs once, for the layer it is recomputing. */
double plan_job_stage_work_bytes(const plan_job *j);
/* K* on region r's GPU type. */
static inline int plan_kstar_at(const plan_cluster *c, const plan_demand *d, int r) {
  return d->kstar_type[c->regions[r].type];
}
/* Whether two jobs have one shape (all but name, tokens and arrival): one demand serves both. */
bool plan_job_same_shape(const plan_job *a, const plan_job *b);
/* Fills d; false (with err) when the job fits nowhere in c or would run past PLAN_MAX_RUN_S. */
bool plan_job_demand(const plan_cluster *c, const plan_job *j, plan_demand *d, core_err *err);
/* The parts of d that depend on j's tokens, d's shape parts already filled (from a job of the
 * same shape); false as plan_job_demand. */
bool plan_job_demand_finish(const plan_cluster *c, const plan_job *j, plan_demand *d,
                            core_err *err);
/* Every job's demand, each shape searched once; false at the first job that fails (*bad). */
bool plan_jobs_demand(const plan_cluster *c, const plan_job *jobs, int n, plan_demand *d, int *bad,
                      core_err *err);

/* ---- placements and the pipeline time model (pipeline.c) -------------------------------- */

typedef struct plan_seg {
  int region;
  int gpus; /* stages in this region, contiguous in the pipeline */
} plan_seg;

/* Where a job runs: a chain of regions in pipeline order and the layers of every stage. */
typedef struct plan_placement {
  int nseg;
  plan_seg seg[PLAN_MAX_PATH];
  int stages;
  uint16_t layers[PLAN_MAX_STAGES];
  /* data parallelism: the job runs as this many copies of the pipeline (DP x PP), each copy's
   * stage i in stage i's region, m / replicas micro-batches each, and every stage's gradients
   * all-reduced among its copies after the pipeline (dp.c). plan_build sets 1. */
  int replicas;
} plan_placement;

/* The most copies a placement runs: past a few, each copy's m / copies micro-batches leave its
 * 1F1B fill and drain uncovered. The bounds (src/sim/jobs_bounds.c) hold up to this. */
#define PLAN_MAX_REPLICAS 4

/* The copies of the pipeline (at least 1) and the GPUs segment s holds over all of them. */
static inline int plan_replicas(const plan_placement *p) {
  return p->replicas > 1 ? p->replicas : 1;
}
static inline int plan_seg_gpus(const plan_placement *p, int s) {
  return p->seg[s].gpus * plan_replicas(p);
}

/* ---- data parallelism across pipeline replicas (dp.c) ------------------------------------ */

/* Seconds of a ring all-reduce of bytes over n ranks, each step paying alpha_s and moving a
 * 1/n block over a link of Bps each way: 2 (n - 1) (alpha + bytes / (n Bps)), the reduce-scatter
 * then the allgather (Patarasuk and Yuan, JPDC 2009; Thakur, Rabenseifner and Gropp 2005). The
 * same closed form as tern's collective cost model's ring (src/coll/select.c) with o and gamma 0
 * and links full duplex; tests/unit/test_plan_dp.c holds the two together. */
double plan_ring_allreduce_s(int n, double bytes, double alpha_s, double Bps);
/* The gradient all-reduce of a placement with replicas > 1: every stage's copies sit in one
 * region and all-reduce its layers' bf16 gradients over the region's intra-region bandwidth
 * (no latency inside a region, as the pipeline model); the copies of all stages run at once,
 * so the slowest stage's sets the time. 0 with one replica. */
double plan_dp_allreduce_s(const plan_cluster *c, const plan_job *j, const plan_placement *p);
/* The micro-batches each copy runs: ceil(m / replicas), so the global batch stays the job's. */
int plan_dp_microbatches(const plan_job *j, const plan_placement *p);

/* Splits the job's layers over the placement's stages so that the slowest stage is as fast as
 * possible and every stage fits in memory. False when no split fits. */
bool plan_split_layers(const plan_cluster *c, const plan_job *j, plan_placement *p);
/* The same, kept in (and read from) memo when not NULL. */
bool plan_split_layers_kept(plan_memo *memo, const plan_cluster *c, const plan_job *j,
                            plan_placement *p);
/* 1F1B iteration time of a placement with split layers. share, when not NULL, is an
 * nregions x nregions count of the jobs crossing each link; extra is added to it (1 for a job
 * not yet counted there). NULL and 0: the job alone. */
double plan_iter_time(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                      const int *share, int extra);
/* The pipeline schedules the time model knows (pipeline.c). */
typedef enum plan_schedule { PLAN_1F1B, PLAN_GPIPE } plan_schedule;
/* The iteration time under either schedule; plan_iter_time is 1F1B's. */
double plan_iter_time_sched(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                            const int *share, int extra, plan_schedule sched);
/* The iteration time of S stages (forward+backward fb[i] per micro-batch, backward twice the
 * forward) and S - 1 hops (latency lat[h], transfer beta[h] each way) over m micro-batches. */
double plan_schedule_time(plan_schedule sched, int S, int m, const double *fb, const double *lat,
                          const double *beta);
/* Each stage's forward+backward seconds per micro-batch (fb[S]) and each hop's latency and
 * transfer seconds (lat[S-1], beta[S-1]); returns S. */
int plan_pipeline_times(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                        const int *share, int extra, double *fb, double *lat, double *beta);
/* Per-micro-batch time of one inter-region hop: latency + bytes / (bandwidth / sharers). */
double plan_hop_time(const plan_cluster *c, const plan_job *j, int a, int b, int sharers);
/* The placement's slowest stage, forward+backward, per micro-batch. */
double plan_stage_fb_max(const plan_cluster *c, const plan_job *j, const plan_placement *p);

/* ---- energy model (energy.c) ------------------------------------------------------------- */

/* kWh of n GPUs of region r held for seconds s: power x PUE x hours. */
double plan_energy_kwh(const plan_cluster *c, int r, int n, double s);
/* USD of n GPUs of region r held over [t0, t1], at the region's price hour by hour. */
double plan_cost_usd(const plan_cluster *c, int r, int n, double t0, double t1);
/* Both over a whole placement. */
double plan_placement_kwh(const plan_cluster *c, const plan_placement *p, double s);
double plan_placement_cost(const plan_cluster *c, const plan_placement *p, double t0, double t1);

/* ---- planner state and the policy interface (policy.c) ----------------------------------- */

/* A running job's GPUs and links as they will be given back: its predicted finish. */
typedef struct plan_release {
  double t;
  const plan_job *job;
  const plan_demand *d;
  const plan_placement *p;
} plan_release;

/* What a policy sees when it decides: free GPUs, the load on every link, and when the running
 * jobs are expected to give theirs back (sorted by t; the simulator fills it). */
/* What the policies keep between calls on one planning run, so that a state's answers are
 * computed once (ours' offers, chain times, lookahead states; the layer splits): owned by one
 * plan_state and used by one thread at a time. The library keeps no other state between calls. */
plan_memo *plan_memo_new(void);
void plan_memo_free(plan_memo *m);

typedef struct plan_state {
  const plan_cluster *c;
  double now;
  int *free;        /* per region */
  int *share;       /* nregions x nregions: running jobs crossing each link */
  double *load_Bps; /* nregions x nregions: bandwidth those jobs need */
  const plan_release *releases;
  int nreleases;
  bool contended;   /* the queue asks for more than K* x jobs GPUs than are free (plan_decide) */
  uint64_t version; /* names free, share and load: plan_state_apply and plan_state_touch set it */
  uint64_t cluster_id; /* a hash of what the time model reads of c: types, regions, links */
  plan_memo *memo;     /* plan_state_init makes it; NULL: nothing kept (slower, same answers) */
  bool owns_memo;
} plan_state;

/* One queued job as a policy sees it. */
typedef struct plan_queued {
  const plan_job *job;
  const plan_demand *d;
  int id; /* the caller's index */
} plan_queued;

typedef struct plan_policy plan_policy;
struct plan_policy {
  const char *name;
  const char *summary;
  /* Orders the queue in place: the order the policy considers jobs in. */
  void (*order)(const plan_policy *pol, const plan_state *s, plan_queued *q, int n);
  /* A placement for one job on what is free now, or false to keep it queued. */
  bool (*place)(const plan_policy *pol, const plan_state *s, const plan_queued *q,
                plan_placement *out);
  unsigned flags; /* policy-specific switches (BACE's ablations) */
  /* A portfolio (ours): the simulator runs the members and the rivals on the whole scenario and
   * keeps the first member whose predicted average JCT and cost are no worse than every rival's,
   * else the member least worse (src/sim/jobs_portfolio.c). order and place are members[0]'s,
   * for a single planning round. NULL-terminated; NULL: a plain policy. */
  const plan_policy *const *members;
  const plan_policy *const *rivals;
};

/* The policies by name: bace, lcf, ldf, cr-lcf, cr-ldf, the ablations and ours; NULL if none. */
const plan_policy *plan_policy_find(const char *name);
/* All of them, NULL-terminated, in the order --compare prints them. */
const plan_policy *const *plan_policies(void);

tern_status plan_state_init(plan_state *s, const plan_cluster *c, core_err *err);
/* A new version for a state changed other than by plan_state_apply (what policies cache on a
 * state is keyed by its version and time). */
void plan_state_touch(plan_state *s);
/* Copies src's free GPUs and link loads into dst (both from plan_state_init on one cluster). */
void plan_state_copy(plan_state *dst, const plan_state *src);
void plan_state_free(plan_state *s);
/* dst uses src's memo instead of its own (a state replayed from src within one run). */
void plan_state_share_memo(plan_state *dst, const plan_state *src);
/* A queued job asks to be planned again at time t (a cheaper hour it waits for), kept in s's
 * memo; plan_decide forgets what the previous round asked. The caller runs a round at
 * plan_state_wake_at (INFINITY: none asked). */
void plan_state_wake(const plan_state *s, double t);
double plan_state_wake_at(const plan_state *s);
/* Takes a placement's GPUs and links (sign +1) or gives them back (sign -1). */
void plan_state_apply(plan_state *s, const plan_job *j, const plan_demand *d,
                      const plan_placement *p, int sign);

/* One planning round: orders the queue (q is sorted in place) and places every job the policy
 * can place now, applying each to s. For q's new order, placed[i] is 1 and out[i] filled for
 * the jobs placed, 0 for the others. Returns how many were placed. During the round s's memo
 * lists the jobs placed so far (their GPUs come back too: ours' wait estimate); out must stay
 * put until it returns. */
int plan_decide(const plan_policy *pol, plan_state *s, plan_queued *q, int n, plan_placement *out,
                unsigned char *placed);

/* ---- policy helpers shared by the policies (alloc.c) ------------------------------------- */

/* Builds a placement over a chain of regions taking gpus[i] from each, and splits layers.
 * False when the split does not fit memory. */
bool plan_build(const plan_cluster *c, const plan_job *j, const int *regions, const int *gpus,
                int n, plan_placement *out);
/* The same with the layer split kept in s's memo (what the policies call). */
bool plan_build_at(const plan_state *s, const plan_job *j, const int *regions, const int *gpus,
                   int n, plan_placement *out);
/* The cost-min allocator: every region of the chain gets one stage, the rest of k goes to the
 * cheapest regions first (price at now), up to their free GPUs. Fills gpus[]. */
void plan_alloc_costmin(const plan_state *s, const int *regions, int n, int k, int *gpus);
/* Fills in chain order instead (the allocator's ablation and the cross-region baselines). */
void plan_alloc_inorder(const plan_state *s, const int *regions, int n, int k, int *gpus);
/* CR-LCF's (by_price) or CR-LDF's placement of one job (cross.c); LCF and LDF use them for a
 * job no single region can hold. */
bool plan_cross_place(const plan_state *s, const plan_queued *q, bool by_price,
                      plan_placement *out);
/* Smallest memory floor over a chain's GPU types: a lower bound of the GPUs the job needs. */
int plan_smin_path(const plan_cluster *c, const plan_demand *d, const int *regions, int n);
/* Predicted iteration time of p if it started now (its links' sharers + 1). */
double plan_predict_iter(const plan_state *s, const plan_job *j, const plan_placement *p);
/* Predicted electricity cost of the whole run of p started now. */
double plan_predict_cost(const plan_state *s, const plan_job *j, const plan_placement *p,
                         double iter_s);

/* ---- BACE-Pipe's parts (priority.c, pathfind.c) ------------------------------------------ */

/* The network's congestion now: mean over links of min(1, load / bandwidth). */
double plan_congestion(const plan_state *s);
/* The share of the queued jobs that no single region can give its K* now. */
double plan_pressure(const plan_state *s, const plan_queued *q, int n);
/* BACE-Pipe's a: plan_congestion() while a running job crosses a link, else plan_pressure(). */
double plan_alpha(const plan_state *s, const plan_queued *q, int n);
/* P_j = (1 - a)(1 - I_j) + a(1 - D_j) for each queued job, a = plan_alpha(). */
void plan_priorities(const plan_state *s, const plan_queued *q, int n, double *prio);
/* Sorts q by descending priority (ties: arrival order). */
void plan_order_priority(const plan_state *s, plan_queued *q, int n);
/* Sorts q by the run time alone at K*, shortest first (ties: arrival, then id). */
void plan_order_shortest(plan_queued *q, int n);
/* Sorts q by arrival (FCFS), ties by id. */
void plan_order_fcfs(plan_queued *q, int n);
/* The same as a policy's order callback, for the baselines. */
void plan_policy_fcfs(const plan_policy *pol, const plan_state *s, plan_queued *q, int n);

/* BACE-Pipe's choice for one job on what is free now (bace.c), with flags PLAN_BACE_*; fills
 * out and its predicted iteration time and cost. False when nothing fits. */
enum {
  PLAN_BACE_NO_PRIORITY = 1u,
  PLAN_BACE_NO_PATHFINDER = 2u,
  PLAN_BACE_NO_COSTMIN = 4u,
  PLAN_BACE_TRIM = 8u, /* ours: no GPUs past those the slowest stage needs */
};
bool plan_bace_choose(const plan_state *s, const plan_queued *q, unsigned flags,
                      plan_placement *out, double *iter_s, double *cost);
void plan_bace_order(const plan_policy *pol, const plan_state *s, plan_queued *q, int n);

/* A chain of regions found by the pathfinder and the GPUs it may use. */
typedef struct plan_path {
  int n;
  int region[PLAN_MAX_PATH];
  int free_gpus; /* free GPUs over the chain */
  int k;         /* GPUs the job would take on it */
} plan_path;

/* Grows a chain from start, fastest link first, accepting a link only if its per-micro-batch
 * transfer time does not exceed the stage compute time at the GPUs the job would then hold.
 * Stops once the chain holds kmax GPUs or no link qualifies. When check_links is false every
 * link qualifies (the pathfinder's ablation). */
void plan_pathfind(const plan_state *s, const plan_queued *q, int start, int kmax, bool check_links,
                   plan_path *out);
/* Whether, on the idle cluster, some chain grown with the link check holds the job's memory
 * floor (kept in s's memo). When not, BACE-Pipe and ours grow chains without the check, so that
 * a job the cluster can hold across regions is never refused. True without a memo. */
bool plan_linked_can_hold(const plan_state *s, const plan_queued *q);

/* ---- scenarios (scenario.c, scenario_write.c, gen.c) ------------------------------------- */

typedef struct plan_scenario {
  plan_cluster c;
  int njobs;
  plan_job *jobs;
  char source[256]; /* the file it came from, or what generated it */
} plan_scenario;

/* Reads a scenario file. Errors name the file, the line and what is wrong. */
tern_status plan_scenario_load(const char *path, plan_scenario *s, core_err *err);
/* Same from a buffer; name is used in messages. */
tern_status plan_scenario_parse(const char *name, const char *text, size_t len, plan_scenario *s,
                                core_err *err);
void plan_scenario_free(plan_scenario *s);
/* Reads a links-only file (data/scenarios/aws-10-regions.json: region names and links) into c:
 * names and links set, nothing else. */
tern_status plan_links_load(const char *path, plan_cluster *c, core_err *err);
/* Checks what makes a scenario impossible (a job that fits nowhere); *bad, when given, is set
 * to the index of the first such job. */
tern_status plan_scenario_check(const plan_scenario *s, int *bad, core_err *err);
/* Writes the scenario as JSON in the format plan_scenario_load reads. */
tern_status plan_scenario_write(const plan_scenario *s, FILE *out, core_err *err);

/* A placement as JSON: per region its GPUs, its stages and the layers of each (plan_json.c). */
json_t *plan_placement_json(const plan_cluster *c, const plan_placement *p);
/* The pipeline as the time model priced it: per stage the forward and backward seconds of one
 * micro-batch, per hop the bytes, bandwidth (sharers[s]: the jobs on the link into segment s,
 * this one included; NULL: alone), latency and transfer seconds, and the 1F1B iteration time. */
json_t *plan_pipeline_json(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                           const int *sharers);
/* "2x32 1x16": the layers per stage of segment seg, as counts of equal stages. */
void plan_layers_text(const plan_placement *p, int seg, char *out, size_t cap);

/* The 1-based line where the value at path ("regions[2].gpus") starts in a JSON text; 0 if the
 * path is not there. The text must be valid JSON. */
int plan_json_line(const char *text, size_t len, const char *path);

/* The paper's variants of a base scenario: inter-region bandwidth x bw, GPUs per region x gpus
 * (at least 1), and njobs jobs: the base's first ones, then more drawn (seeded) from its models,
 * token counts and arrival gaps. */
typedef struct plan_variant {
  double bw_scale;
  double gpu_scale;
  int njobs;
  uint64_t seed;
  bool hourly;      /* redraw every region's prices as a daily curve around its mean (gen.c) */
  int microbatches; /* every job's micro-batches per iteration; 0 keeps each job's */
} plan_variant;
tern_status plan_gen_variant(const plan_scenario *base, const plan_variant *v, plan_scenario *out,
                             core_err *err);
/* A random scenario: nregions regions (GPU pools, prices and links in the fixtures' ranges),
 * njobs jobs of the fixture's model shapes, all drawn from seed. */
tern_status plan_gen_random(int nregions, int njobs, uint64_t seed, plan_scenario *out,
                            core_err *err);
/* The same on given regions and links (names and links kept; pools, prices and jobs drawn). */
tern_status plan_gen_on_links(const plan_cluster *links, int njobs, uint64_t seed,
                              plan_scenario *out, core_err *err);

#endif /* TERN_PLAN_H */

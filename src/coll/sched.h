/* sched.h: algorithms as schedules.
 *
 * An algorithm is a function that, for one rank of a collective, writes that rank's schedule: a
 * list of coarse steps (send a slice to a peer, receive a slice, receive and reduce, copy, reduce)
 * grouped into phases. The executor (exec.c) runs schedules over the transports; the checker
 * (check.c) runs every rank's schedule symbolically and proves the result; the cost model and
 * the simulator read the same steps. So an algorithm is written once, in src/coll/algo/, and
 * needs nothing of net/ or comm/.
 *
 * Semantics, which the checker enforces and the executor relies on:
 *  - Phases run in order. The steps of one phase are started together and may complete in any
 *    order; the phase ends when all have completed. So within a phase no step may write a region
 *    that another step of the same phase reads or writes (on that rank, counting the aliasing of
 *    in-place calls).
 *  - Between two ranks, messages are matched in order: the k-th SEND from a to b (in schedule
 *    order) is the k-th RECV or RECV_REDUCE of b from a, with the same count. A send may not
 *    complete before its receive is posted (the checker assumes no buffering), so a schedule
 *    that is deadlock-free in the checker is deadlock-free on any transport.
 *  - Offsets and counts are in elements of the collective's dtype.
 *
 * Buffers, as the public API defines them (n ranks, c = coll_args.count):
 *   kind            SEND extent            RECV extent       in place (inplace = true) means
 *   allreduce       c                      c                 SEND is RECV
 *   reduce_scatter  n*c                    c                 RECV is SEND + rank*c
 *   allgather       c                      n*c               SEND is RECV + rank*c
 *   broadcast       c (read on root only)  c                 on root SEND is RECV
 *   reduce          c                      c (root only)     on root SEND is RECV
 *   alltoall        n*c                    n*c               SEND is RECV
 *   barrier         -                      -                 zero-element messages only
 *   gather          c                      n*c (root only)   on root SEND is RECV + root*c
 *   scatter         n*c (root only)        c                 on root RECV is SEND + root*c
 *   alltoallv       see below              see below         SEND is RECV (both extents the larger)
 * alltoallv's counts are per peer (coll_vcounts): block q of SEND (send_displs[q], send_counts[q]
 * elements) goes to rank q, and rank q's block lands at recv_displs[q]; each extent is the
 * largest displ + count of its blocks (coll_v_extent). With v NULL every count is c and block q
 * lies at q*c, alltoall's layout. It always exchanges a message with every peer,
 * even of zero elements, so that ranks that disagree on a count are told (exec.c).
 * SEND is never written. RECV is not touched where the API leaves it undefined (reduce on
 * non-roots may pass NULL). TMP is scratch the executor provides, sched->tmp_count elements.
 */
#ifndef TERN_COLL_SCHED_H
#define TERN_COLL_SCHED_H

#include "core/core.h"

typedef enum coll_kind {
  COLL_ALLREDUCE,
  COLL_REDUCE_SCATTER,
  COLL_ALLGATHER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_ALLTOALL,
  COLL_BARRIER,
  COLL_GATHER,    /* block q of root's RECV from rank q (MPI_Gather) */
  COLL_SCATTER,   /* root's SEND block q to rank q's RECV (MPI_Scatter) */
  COLL_ALLTOALLV, /* alltoall with counts per peer (MPI_Alltoallv): coll_args.v */
  COLL_NUM_KINDS
} coll_kind;

/* The collectives with a root: every rank must name the same one (build.c checks it). */
static inline bool coll_kind_rooted(coll_kind k) {
  return k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER;
}

/* The collectives that move messages even when there is nothing to move: barrier's are its
 * point, alltoallv's carry the counts each pair must agree on (build.c, exec.c). */
static inline bool coll_kind_runs_empty(coll_kind k) {
  return k == COLL_BARRIER || k == COLL_ALLTOALLV;
}

/* The algorithms: one per file under src/coll/algo/, listed in algo/list.h (the comment atop
 * each file says what it is). */
typedef enum coll_algo {
  COLL_ALGO_AUTO = 0, /* let the selector choose */
#define COLL_ALGORITHM(ID, name) COLL_ALGO_##ID,
#include "coll/algo/list.h"
#undef COLL_ALGORITHM
  COLL_NUM_ALGOS
} coll_algo;

typedef enum coll_buf { COLL_BUF_SEND, COLL_BUF_RECV, COLL_BUF_TMP, COLL_NUM_BUFS } coll_buf;

typedef enum coll_step_kind {
  COLL_STEP_SEND,        /* send buf[off, off+count) to peer */
  COLL_STEP_RECV,        /* receive count elements from peer into buf[off, ...) */
  COLL_STEP_RECV_REDUCE, /* buf[off+i] = src_buf[src_off+i] op incoming[i] */
  COLL_STEP_COPY,        /* buf[off+i] = src_buf[src_off+i] */
  COLL_STEP_REDUCE       /* buf[off+i] = buf[off+i] op src_buf[src_off+i] */
} coll_step_kind;

typedef struct coll_step {
  uint8_t kind;    /* coll_step_kind */
  uint8_t buf;     /* coll_buf read by SEND, written by the others */
  uint8_t src_buf; /* coll_buf read by RECV_REDUCE, COPY and REDUCE */
  uint8_t last;    /* 1 on the last step of its phase */
  int32_t peer;    /* SEND, RECV, RECV_REDUCE: the other rank */
  size_t off, src_off, count;
} coll_step;

/* While on, appends are re-addressed: a builder written for ranks 0..m-1 and the buffers of its
 * own call writes into a sub-group and sub-regions of a larger schedule. hier.c builds its
 * intra-host and inter-host phases with the flat builders this way. Virtual rank v is real
 * rank first + v * stride; virtual buffer b is buf[b] starting at off[b]. */
typedef struct coll_view {
  bool on;
  int first, stride;
  const int *ranks; /* NULL, or the table virtual ranks index: real rank ranks[first + v stride]
                       (hier's host-ordered grid, coll_hosts) */
  uint8_t buf[COLL_NUM_BUFS];
  size_t off[COLL_NUM_BUFS];
} coll_view;

typedef struct coll_sched {
  coll_step *steps;
  size_t len, cap;
  size_t tmp_count; /* elements of TMP the steps use (0: none) */
  int nphases;
  coll_algo algo;
  tern_status status; /* the first failed append since the last reset (coll_sched_status) */
  coll_view view;     /* off except while hier.c builds a sub-group's phase */
} coll_sched;

/* alltoallv's counts and displacements of one rank, in elements, one per peer (n each): the
 * caller's arrays, read while the schedule is built and run. */
typedef struct coll_vcounts {
  const size_t *send_counts, *send_displs, *recv_counts, *recv_displs;
} coll_vcounts;

typedef struct coll_args {
  coll_kind kind;
  int rank, size;
  int root;            /* broadcast and reduce; 0 elsewhere */
  size_t count;        /* as the public call's count (see the table above) */
  bool inplace;        /* the in-place form of the call (see the table above) */
  bool unchecked_root; /* broadcast and reduce without build.c's root check (TERN_CHECK_ROOTS=0) */
  int cpus;            /* the CPUs of one host that its ranks outnumber, rank r on CPU r mod cpus
                          (the crowded site's, coll_site); 0 when not crowded. Trees spread their
                          inner members over those CPUs (tree.c) */
  size_t seg_count;    /* pipelining segment in elements, for algorithms that pipeline; 0 lets the
                          algorithm choose */
  int ppn;             /* ranks per host when hosts hold equal, contiguous blocks of ranks (rank r
                          on host r / ppn); 0 when not (hier needs 1 < ppn < size) */
  coll_algo inner;     /* hier: the algorithm of the inter-host phase (ring or rhd; AUTO: ring) */
  const struct coll_hosts *hosts; /* which host each rank is on, for any placement (hier uses it
                                     before ppn); NULL when not known */
  const coll_vcounts *v;          /* alltoallv: this rank's counts (NULL: every count is count); the
                                     checker's coll_check takes every rank's, v[r] rank r's. Else NULL */
} coll_args;

/* alltoallv's block for (send) or from (!send) peer: its count and displacement. */
static inline size_t coll_v_count(const coll_args *a, bool send, int peer) {
  if (a->v == NULL) return a->count;
  return send ? a->v->send_counts[peer] : a->v->recv_counts[peer];
}
static inline size_t coll_v_displ(const coll_args *a, bool send, int peer) {
  if (a->v == NULL) return (size_t)peer * a->count;
  return send ? a->v->send_displs[peer] : a->v->recv_displs[peer];
}
/* The elements of SEND (send) or RECV that alltoallv's blocks span: the largest displ + count;
 * SIZE_MAX when one overflows. */
size_t coll_v_extent(const coll_args *a, bool send);

/* ---- hosts (algo/hier_hosts.c) ----------------------------------------------------------- *
 * Ranks placed on hosts in any order and any numbers: round-robin as `mpirun --map-by node`
 * deals them, uneven blocks, anything. The host-ordered view hier builds on: host h's ranks, in
 * rank order, are order[start[h] .. start[h+1]); the first `lanes` of each (lanes: the ranks of
 * the smallest host) form the grid, grid[h lanes + k] being host h's k-th rank. A rank whose
 * local index l is lanes or more (an extra, on a host larger than the smallest) hands its data
 * to the grid rank of lane l mod lanes on its host and takes the result back (hier.c). */
typedef struct coll_hosts {
  int n, nhosts, lanes;
  int *host;  /* n: the host of rank r (0 .. nhosts-1, numbered in order of first rank) */
  int *local; /* n: rank r's index among its host's ranks */
  int *start; /* nhosts + 1 */
  int *order; /* n */
  int *grid;  /* nhosts * lanes */
} coll_hosts;

/* *out = the hosts of n ranks, rank r on host host_of[r] (any ids >= 0, alike for ranks of one
 * host). TERN_ERR_NOMEM or TERN_ERR_INVALID_ARG (a negative id). */
tern_status coll_hosts_make(int n, const int *host_of, coll_hosts **out);
void coll_hosts_free(coll_hosts *h);
/* The host of rank r under a's placement: a->hosts, else ppn's contiguous blocks, else 0. */
int coll_host_of(const coll_args *a, int r);
/* The hosts under a's placement (1 when none is known). */
int coll_host_count(const coll_args *a);
/* The ranks of each host when every host holds as many; 0 when they differ (a 3 + 1 layout). */
int coll_ranks_per_host(const coll_args *a);
/* Whether a's placement gives hier two levels: two hosts or more, one of them with two ranks. */
bool coll_hier_fits(const coll_args *a);

/* ---- building (sched.c) ------------------------------------------------------------------ */

void coll_sched_init(coll_sched *s);
void coll_sched_free(coll_sched *s);
/* Empties s, keeping its storage: a warm schedule is rebuilt without allocating. */
void coll_sched_reset(coll_sched *s);

/* Append one step to the current phase. Each returns TERN_ERR_NOMEM when growth fails; the
 * failure sticks, so a builder may append freely and check the status once at the end. Copies
 * and reductions of zero elements, and copies onto themselves, append nothing. */
tern_status coll_sched_send(coll_sched *s, int peer, coll_buf buf, size_t off, size_t count);
tern_status coll_sched_recv(coll_sched *s, int peer, coll_buf buf, size_t off, size_t count);
tern_status coll_sched_recv_reduce(coll_sched *s, int peer, coll_buf buf, size_t off, coll_buf src,
                                   size_t src_off, size_t count);
tern_status coll_sched_copy(coll_sched *s, coll_buf buf, size_t off, coll_buf src, size_t src_off,
                            size_t count);
tern_status coll_sched_reduce(coll_sched *s, coll_buf buf, size_t off, coll_buf src, size_t src_off,
                              size_t count);
/* Closes the current phase (no-op when it is empty). */
void coll_sched_end_phase(coll_sched *s);
/* TERN_OK, or the first failure of an append since the last reset. */
tern_status coll_sched_status(const coll_sched *s);
/* Whether x and y hold the same steps in the same phases with the same scratch: a rank runs the
 * one as it runs the other, whichever algorithm built each. */
bool coll_sched_equal(const coll_sched *x, const coll_sched *y);

/* Builds rank a->rank's schedule of a->kind with algo (never AUTO) into s (reset first).
 * TERN_ERR_UNSUPPORTED when algo has no schedule for this kind; TERN_ERR_INVALID_ARG for args
 * out of range (rank, size, root, counts whose extents overflow).
 * count 0 gives an empty schedule (barrier excepted) and size 1 a local copy, whatever algo. */
tern_status coll_build(coll_sched *s, const coll_args *a, coll_algo algo);
/* Whether coll_build has a schedule of kind for algo (AUTO: false). */
bool coll_algo_supported(coll_kind kind, coll_algo algo);
/* Whether it has one for a's kind, size and placement too (hier needs two levels of hosts, pair
 * two ranks). */
bool coll_algo_fits(coll_algo algo, const coll_args *a);

/* The names of algo/list.h, "auto" for COLL_ALGO_AUTO. Parsing ignores case. */
const char *coll_algo_name(coll_algo algo);
bool coll_algo_parse(const char *s, coll_algo *out);
/* "allreduce", "reduce_scatter", ... */
const char *coll_kind_name(coll_kind kind);
bool coll_kind_parse(const char *s, coll_kind *out);

/* ---- caching (cache.c) ------------------------------------------------------------------- */

/* The last schedules built, keyed by every field of coll_args and the algorithm (a schedule
 * depends on nothing else: it names buffers and offsets in elements, not addresses, dtypes or
 * ops). Least recently used out. */
#define COLL_SCHED_CACHE_LEN 8
typedef struct coll_sched_cache_entry {
  coll_args key;
  coll_algo algo;
  uint64_t used; /* the cache's clock at the last use; 0: empty */
  coll_sched sched;
} coll_sched_cache_entry;
typedef struct coll_sched_cache {
  coll_sched_cache_entry e[COLL_SCHED_CACHE_LEN];
  uint64_t clock, hits, misses;
} coll_sched_cache;

void coll_sched_cache_init(coll_sched_cache *k);
void coll_sched_cache_free(coll_sched_cache *k);
/* *out = the schedule coll_build(a, algo) writes: the cached one, or built now into the least
 * recently used entry. The schedule stays valid until the next call on k. Returns coll_build's
 * status on a miss (a failure is not cached; *out is then an empty schedule). */
tern_status coll_sched_cache_get(coll_sched_cache *k, const coll_args *a, coll_algo algo,
                                 const coll_sched **out);

/* ---- checking (check.c) ------------------------------------------------------------------ */

/* Builds the schedules of all n ranks and runs them symbolically: every element carries the set
 * of ranks whose contributions it holds and its index of origin. Proves that the run completes
 * without deadlock, that messages match in count, that no phase races with itself, that no
 * contribution is counted twice, that nothing outside the table's extents is touched, and that
 * every rank ends with exactly what the collective promises (for barrier: that no rank leaves
 * before it has heard, directly or not, from every rank). n <= 64.
 * Allreduce and allgather must also be bit-identical on every rank: each value carries a hash
 * of its reduction tree that commutes (op(a,b) and op(b,a) hash alike) but does not associate,
 * and every rank's must match.
 * alltoallv's a->v (when not NULL) holds all n ranks' counts, a->v[r] rank r's: ranks whose
 * counts disagree fail the pairing of messages.
 * TERN_OK, or TERN_ERR_INVALID_ARG with the first violation in why (coll_build's own status when
 * it fails, e.g. TERN_ERR_UNSUPPORTED). */
tern_status coll_check(const coll_args *a, coll_algo algo, char *why, size_t why_len);
/* The same proof over schedules given by the caller, scheds[r] being rank r's (a->rank is
 * ignored): how the tests show that broken schedules are caught. */
tern_status coll_check_scheds(const coll_args *a, const coll_sched *scheds, char *why,
                              size_t why_len);

/* ---- cost (select.c) --------------------------------------------------------------------- */

/* How the ranks reach each other: the transport a profile of constants is for (profile.c). */
typedef enum coll_transport_kind { COLL_TR_SHM, COLL_TR_TCP, COLL_NUM_TR } coll_transport_kind;

/* Where a collective runs, as the selector sees it (exec.c fills it in from the communicator;
 * the placement itself, ppn and hosts, is coll_args'). */
typedef struct coll_site {
  coll_transport_kind tr; /* shm: every peer over shared memory; tcp: some over TCP */
  bool one_host;          /* every rank on this host (TCP over loopback, or shared memory) */
  bool crowded;           /* one host, more ranks than CPUs */
  int cpus;               /* crowded: the CPUs the ranks share */
  bool across_hosts;      /* several hosts, one of them with two ranks or more: hier competes */
  /* across hosts, the platform's profile: the models within a host and across (NULL: the
   * built-in shm and tcp), and weights learned from simulated sweeps (select_learned.h; exec.c
   * gives every site across hosts those of the simulated cluster, scaled to these models) */
  const struct coll_net_model *intra, *inter;
  const struct coll_learned_model *learned;
} coll_site;

/* The alpha-beta-gamma constants of one transport: seconds per message, per byte moved, per
 * byte reduced; and o, the seconds each further message of a phase adds (LogP's overhead: the
 * messages of one phase overlap their latency but not the work of posting them). */
typedef struct coll_net_model {
  double alpha, beta, gamma, o;
  bool crowded; /* more ranks than CPUs on the host: a pipeline's stages take turns */
  /* crowded: what each round of a pipeline costs on top, when its stages take turns on the CPUs
   * (a switch between the ranks sharing a core); 0: the stages do not overlap at all, and the
   * pipeline costs its hops unpipelined */
  double handoff;
  /* crowded: the CPU time one message costs its two ends (the system calls and the wake-up of a
   * rank that had given its CPU away), and the CPUs the ranks share (0: not known). With both,
   * a collective costs at least its whole work (coll_algo_work) shared among the CPUs:
   * coll_host_time. */
  double msg_cpu;
  int cpus;
  /* crowded, with msg_cpu and cpus known: what one rank's turn on a CPU costs (a switch to it, and
   * its look at what arrived), paid n / cpus times over by every phase in which the ranks wait for
   * each other (select.c); 0: not modelled */
  double turn;
  /* every rank on one host, so a CPU at each end copies every byte and no link carries any
   * (shared memory, or TCP over loopback): see coll_phase_bytes */
  bool one_host;
  /* a reducing receive reads the message where it lies (shared memory's slots) and so copies
   * nothing of its own: its bytes cost gamma alone. Over TCP they are copied out of the socket
   * first. */
  bool reduce_in_place;
} coll_net_model;

/* The bytes of a phase that beta prices, for a rank that sends sent bytes in it and receives
 * received, reduce_received of them reducing.
 *
 * On one host (one_host) a CPU at each end copies every byte (into and out of shared memory's
 * slots, or of the kernel's socket buffers), so a rank that sends and receives in one phase does
 * both copies on its own CPU, while the two ends of a one-way message work in parallel: the
 * phase costs all it sends and receives, but what it reduces in place (reduce_in_place). Priced
 * at the larger of the two, halving-doubling's reduce, an exchange, looked cheaper than the
 * tree's one-way hop, which beat it by 1.2-1.6x at n = 2 from 16 KiB (docs/perf/select.md).
 *
 * Across hosts a full-duplex link carries both directions at once, and on a crowded host no rank
 * has a CPU of its own (every copy is in the host's work, coll_host_time, shared by the CPUs):
 * there a phase costs its larger direction, its time in a chain of dependent phases. */
static inline double coll_phase_bytes(const coll_net_model *m, double sent, double received,
                                      double reduce_received) {
  if (m->crowded || !m->one_host) return sent > received ? sent : received;
  return sent + received - (m->reduce_in_place ? reduce_received : 0);
}

/* One phase of a schedule, in elements: messages in its busier direction, elements sent,
 * received, received reducing, and reduced in all (local reductions too); crosses: it has a
 * message to or from another host. */
typedef struct coll_phase_tally {
  double msgs, sent, received, reduce_received, reduced;
  bool crosses;
} coll_phase_tally;
/* Tallies the phase of s that starts at step *i and moves *i past it; false when the steps left
 * make no whole phase. crosses is asked only with ppn > 0 (ppn ranks a host, rank this one). */
bool coll_phase_next(const coll_sched *s, size_t *i, const coll_args *place, int rank,
                     coll_phase_tally *p);
/* A phase's modelled time: alpha if it moves anything (a message, even of zero elements), plus
 * o for each message beyond the first in the busier direction, plus beta times coll_phase_bytes,
 * plus gamma times the bytes it reduces. Local copies are not charged. */
double coll_phase_cost(const coll_net_model *m, const coll_phase_tally *p, size_t elem_size);
/* The modelled time of s: the sum of its phases' coll_phase_cost. */
double coll_sched_cost(const coll_sched *s, size_t elem_size, const coll_net_model *m);

/* The closed-form alpha-beta-gamma time of (kind, algo) over n ranks, count as in coll_args and
 * seg_count 0: the critical path of the schedules coll_build writes, under the model of
 * coll_sched_cost; on a crowded host with msg_cpu and cpus known, the time its CPUs need for the
 * whole work (coll_host_time) plus part of that path, plus the ranks' turns (turn). HUGE_VAL
 * where algo has no schedule for kind. */
double coll_algo_cost(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size,
                      const coll_net_model *m);

/* What a collective costs the whole host, summed over all ranks (work.c). */
typedef struct coll_work {
  double msgs, bytes, red; /* messages sent, bytes sent, bytes reduced */
  double red_received;     /* of red, reduced as it arrives (not all algorithms do) */
} coll_work;
/* The work of (kind, algo) over n ranks, count as in coll_args, as coll_build's schedules do it;
 * HUGE_VAL fields where algo has no schedule for kind. */
coll_work coll_algo_work(coll_kind kind, coll_algo algo, int n, size_t count, size_t elem_size);
/* The time the host's CPUs need for w on a crowded model with msg_cpu and cpus known (0
 * otherwise): messages at msg_cpu, copies at beta, reductions at gamma, over cpus. A byte sent
 * is one copy, or over shared memory (reduce_in_place) two, into the slots and out of them, but
 * for what a reducing receive sums straight from the slots. coll_algo_cost is never below it. */
double coll_host_time(const coll_work *w, const coll_net_model *m);

/* The algorithm the model picks for (kind, n, count, elem_size) on transport m: the least
 * coll_algo_cost, ties to the shorter critical path, then to the earlier in algo/list.h (roughly,
 * the least scratch first); the same answer on every rank, so that all ranks run the same
 * algorithm. Never AUTO or HIER. */
coll_algo coll_select(coll_kind kind, int n, size_t count, size_t elem_size,
                      const coll_net_model *m);

/* Ranks on several hosts (place's hosts, or its ppn contiguous blocks): coll_sched_cost with
 * each phase priced on intra's constants when its messages stay on rank's host, on inter's
 * otherwise. */
double coll_sched_cost_hosts(const coll_sched *s, size_t elem_size, const coll_args *place,
                             int rank, const coll_net_model *intra, const coll_net_model *inter);
/* The choice across hosts for place's kind, size, count and placement (ppn, hosts):
 * every algorithm priced from the schedules of one host's ranks (select_hosts.c), hier with
 * *inner its inter-host algorithm. The same answer on every rank. */
coll_algo coll_select_hosts(const coll_args *place, size_t elem_size, const coll_net_model *intra,
                            const coll_net_model *inter, coll_algo *inner);

/* ---- profiles (profile.c) and the one selector (choose.c) ------------------------------- */

/* The built-in profiles: the constants for shared memory and for TCP, each measured as profile.c
 * says; the _crowded ones are the same transport on an oversubscribed host (cpus 0: the caller
 * fills it in). */
extern const coll_net_model coll_model_shm, coll_model_shm_crowded, coll_model_tcp,
    coll_model_tcp_crowded;
/* The one of the four for a transport (tcp or shared memory) on a host crowded or not, with
 * cpus (the CPUs the ranks share) filled in when crowded, and one_host when every rank is on
 * one host (always so over shared memory). */
coll_net_model coll_model_for(bool tcp, bool one_host, bool crowded, int cpus);
/* The same for a site. */
coll_net_model coll_model_of_site(const coll_site *w);

struct coll_tuning;
/* The algorithm to run a's collective (kind, size, count, placement) at site w, the same on
 * every rank: across hosts, by the tuning file's rows measured at a's placement (tuned, NULL:
 * none), else by w's learned weights when they fit the placement, else every
 * algorithm and hier's inner ones priced from their schedules phase by phase on w's models
 * (coll_select_hosts); on one host the tuning file's choice (tuned, NULL: none), else the
 * built-in profile's (coll_select). Then a refinement of the choice that suits the site runs
 * instead (pair for the ring). *inner: hier's inter-host algorithm (RING when not hier).
 * *from (from NULL: not asked): what chose, for the log: "tuning file", "learned weights",
 * "phase model" (coll_select_hosts) or "built-in model" (coll_select). */
coll_algo coll_choose(const coll_args *a, size_t elem_size, const coll_site *w,
                      const struct coll_tuning *tuned, coll_algo *inner, const char **from);

#endif /* TERN_COLL_SCHED_H */

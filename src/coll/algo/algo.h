/* algo.h: what the algorithms share inside coll/: their descriptors (one file per algorithm
 * under algo/, listed in list.h), the vocabulary of their costs, and the arithmetic several of
 * their builders use: blocks of a vector, binomial trees, the fold of a non-power-of-two group
 * onto a power of two, the segments of a pipeline.
 *
 * A builder appends rank a->rank's steps to an empty schedule and sets tmp_count; build.c has
 * already checked the arguments and handled count 0 and size 1, so a builder sees n >= 2 and
 * count >= 1 (barrier: count ignored; alltoallv with counts per peer: any n, any counts). The
 * append status is sticky (sched.c), so builders do not check it.
 */
#ifndef TERN_COLL_ALGO_H
#define TERN_COLL_ALGO_H

#include "coll/sched.h"

#include <math.h>

typedef void coll_builder(coll_sched *s, const coll_args *a);

/* ---- an algorithm's descriptor ----------------------------------------------------------- *
 * Each file under algo/ defines one, coll_algo_<name>, listed in list.h: all that the rest of
 * coll/ knows of the algorithm (in the manner of UCC's per-collective algorithm tables). build.c
 * builds with it, select.c and work.c price with it, select_hosts.c walks it.
 *
 * The cost is in closed form, from the shape of the call: the critical path of the schedules
 * the builders write under the alpha-beta-gamma model of coll_sched_cost (test_select.c holds
 * the forms to the built schedules), the host's whole work (work.c says why), and the phases in
 * which every rank waits for ranks that wait for it (turns: select.c says why). An algorithm
 * without closed forms (path NULL) is priced only from its built schedules, across hosts
 * (select_hosts.c). */
typedef struct coll_shape {
  const coll_net_model *m; /* NULL when only the work is asked */
  coll_kind kind;
  double n, B; /* ranks, and count x elem_size: the vector, or one rank's block (coll_args) */
  double p, L; /* the power of two p <= n, L = log2 p */
  double Lc;   /* ceil(log2 n) */
  bool fold;   /* p != n: the fold (below) is needed */
  double red;  /* 1 for reduce_scatter and reduce, 0 for their twins allgather and broadcast */
  bool rooted; /* coll_kind_rooted: broadcast, reduce, gather, scatter */
  size_t count, elem_size;
} coll_shape;

typedef struct coll_algo_desc {
  coll_builder *build[COLL_NUM_KINDS]; /* NULL: no schedule of that kind */
  /* What the placement must allow beyond the builders' own checks (NULL: any): coll_build
   * refuses, and the selector skips, an algorithm whose fits is false */
  bool (*fits)(const coll_args *a);
  /* The algorithms the inter-host level may run (coll_args.inner), none for a flat one */
  coll_algo inner[2];
  int ninner;
  double (*path)(const coll_shape *x);    /* the critical path; NULL: no closed form */
  coll_work (*work)(const coll_shape *x); /* the whole host's work */
  double (*turns)(const coll_shape *x);   /* the phases of turns; NULL: none */
  /* A variant of another algorithm that the cost model cannot tell apart from it (pair: the
   * ring in cache-sized pieces): where suits holds, a choice of `refines` runs this one
   * instead (coll_choose). AUTO: none. */
  coll_algo refines;
  bool (*suits)(const coll_args *a, const coll_site *w);
} coll_algo_desc;

#define COLL_ALGORITHM(ID, name) extern const coll_algo_desc coll_algo_##name;
#include "coll/algo/list.h"
#undef COLL_ALGORITHM

/* The descriptor of algo; NULL for AUTO and out of range. */
const coll_algo_desc *coll_algo_desc_of(coll_algo algo);

/* ---- the vocabulary of the closed forms (cost.c) ----------------------------------------- */

coll_shape coll_shape_of(const coll_net_model *m, coll_kind kind, int n, size_t count,
                         size_t elem_size);
/* A phase of msgs messages in its busier direction, sending sent bytes and receiving received,
 * red of them reducing: alpha, o per further message, beta on coll_phase_bytes, gamma on red. */
double coll_cost_phase_of(const coll_net_model *m, double msgs, double sent, double received,
                          double red);
/* A phase that moves bytes one way (what the busiest rank receives, or sends when red = 0),
 * msgs messages in its busier direction, red bytes of them reduced. */
double coll_cost_phase(const coll_net_model *m, double msgs, double bytes, double red);
/* A phase in which the rank sends bytes and receives as many. */
double coll_cost_exchange(const coll_net_model *m, double msgs, double bytes, double red);
/* Recursive halving (reducing what it receives: red = 1) or doubling among p ranks, in which
 * the busiest rank sends and receives these bytes over its L phases. */
double coll_cost_halving(const coll_shape *x, double sent, double received, double red);
/* The part of an even split of B in p units: all but one unit. */
static inline double coll_cost_even_part(const coll_shape *x) {
  return (x->p - 1) / x->p * x->B;
}
static inline coll_work coll_work_of(double msgs, double bytes, double red) {
  return (coll_work){msgs, bytes, red, red}; /* reduced as it arrives: see coll_work */
}
#define COLL_NO_WORK ((coll_work){HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL})

/* ---- builders other files run ------------------------------------------------------------ */

/* pair's pieces: COLL_PAIR_PIECE elements from COLL_PAIR_PIECES_FROM elements on, 512 KiB and
 * 4 MiB of f32, where each rank's half outgrows a core's cache (pair.c, docs/perf/shm.md). */
#define COLL_PAIR_PIECE ((size_t)128 << 10)
#define COLL_PAIR_PIECES_FROM ((size_t)1 << 20)

/* rhd's barrier is rd's exchange: a barrier has nothing to halve. */
coll_builder coll_rd_barrier;

/* The ring's two halves over a vector of total elements in n uneven blocks (coll_block_*), for
 * hier's intra-host phases: reduce-scatter leaves block rank, reduced, at out[out_off];
 * allgather starts from rank's block at first[first_off] and fills buf. */
void coll_ring_rs(coll_sched *s, const coll_args *a, coll_buf in, size_t total, coll_buf out,
                  size_t out_off);
void coll_ring_ag(coll_sched *s, const coll_args *a, coll_buf buf, size_t total, coll_buf first,
                  size_t first_off);

/* Every rank sends SEND[q stride, +count) to each rank q and receives rank q's into RECV block
 * q, its own block copied (not in place): all in one phase (one_phase), or peer r+k in phase k.
 * stride count is alltoall's exchange, stride 0 allgather's. */
void coll_exchange(coll_sched *s, const coll_args *a, size_t stride, bool one_phase);
/* alltoallv's: SEND's block for each rank q (coll_v_displ, coll_v_count) to q, q's into RECV
 * where this rank's counts put it, one phase or n - 1 as coll_exchange; every message sent even
 * when empty; n = 1 too (build.c hands it alltoallv at one rank). */
void coll_exchange_v(coll_sched *s, const coll_args *a, bool one_phase);

/* ---- messages of data collectives -------------------------------------------------------- */

/* Data builders leave zero-element messages out (both ends see the same empty block, so they
 * stay matched); only barriers send empty messages, through coll_sched_send itself. */
static inline void coll_data_send(coll_sched *s, int peer, coll_buf b, size_t off, size_t count) {
  if (count) coll_sched_send(s, peer, b, off, count);
}
static inline void coll_data_recv(coll_sched *s, int peer, coll_buf b, size_t off, size_t count) {
  if (count) coll_sched_recv(s, peer, b, off, count);
}
static inline void coll_data_recv_reduce(coll_sched *s, int peer, coll_buf b, size_t off,
                                         coll_buf src, size_t src_off, size_t count) {
  if (count) coll_sched_recv_reduce(s, peer, b, off, src, src_off, count);
}
static inline void coll_need_tmp(coll_sched *s, size_t count) {
  /* through a view, the builder's TMP is a region further on in the real one */
  if (s->view.on) {
    if (s->view.buf[COLL_BUF_TMP] != COLL_BUF_TMP) return;
    count += s->view.off[COLL_BUF_TMP];
  }
  if (count > s->tmp_count) s->tmp_count = count;
}

/* ---- blocks: total elements split into nb nearly equal parts, the first total % nb one longer */

static inline size_t coll_block_off(size_t total, int nb, int i) {
  size_t q = total / (size_t)nb, r = total % (size_t)nb, ui = (size_t)i;
  return ui * q + (ui < r ? ui : r);
}
static inline size_t coll_block_len(size_t total, int nb, int i) {
  return total / (size_t)nb + ((size_t)i < total % (size_t)nb);
}
/* i mod n for any int i. */
static inline int coll_mod(int i, int n) {
  int m = i % n;
  return m < 0 ? m + n : m;
}

/* ---- binomial trees over relative ranks (v = (rank - root) mod n) ------------------------ */

/* The lowest set bit of v; for the root (v = 0), the first power of two >= n. */
static inline int coll_lowbit(int v, int n) {
  if (v) return v & -v;
  int b = 1;
  while (b < n)
    b <<= 1;
  return b;
}
/* ceil(log2 n) for n >= 1. */
static inline int coll_log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n)
    l++;
  return l;
}

/* ---- the fold (Thakur, Rabenseifner and Gropp 2005, sec. 4) ------------------------------- *
 * With p the largest power of two <= n and rem = n - p, relative ranks 2i and 2i+1 (i < rem)
 * pair up: the even one takes part in the power-of-two algorithm as new rank i, the odd one
 * (its helper) only hands its data in before and takes the result after. Relative ranks from
 * 2 rem on take part as new rank v - rem. The even one is the participant so that the root of a
 * rooted collective (relative rank 0) always takes part. */
typedef struct coll_fold {
  int n, p, rem, root;
  int newrank; /* -1 on a helper */
  int partner; /* actual rank of the helper (participant) or participant (helper); -1: none */
} coll_fold;

void coll_fold_init(coll_fold *f, int rank, int n, int root);
/* The actual rank of new rank j. */
int coll_fold_actual(const coll_fold *f, int j);
/* The relative rank of new rank j's first member. */
static inline int coll_fold_rel(const coll_fold *f, int j) {
  return j < f->rem ? 2 * j : j + f->rem;
}

/* ---- pipelines --------------------------------------------------------------------------- */

/* The segment (in elements) of a chain pipeline of count elements over n ranks: seg_count when
 * the caller gave one, else count / nseg with nseg near the optimum of the chain's time
 * (nseg + n - 2)(alpha + beta count / nseg), nseg = sqrt((n - 2) count beta / alpha), taking
 * alpha / beta = 2048 elements: the geometric mean of the built-in shared-memory ratio (0.34
 * us x 12.45 GB/s = 4.2 KB) and TCP's (4.55 us x 3 GB/s = 13.7 KB) is 7.6 KB, about 2048 f32
 * elements (select.c's defaults). At most 256 segments, to keep schedules short. */
size_t coll_pipeline_seg(size_t count, int n, size_t seg_count);

#endif /* TERN_COLL_ALGO_H */

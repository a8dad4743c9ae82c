/* check.h: the checker's insides, shared by its three files: check.c (the entry points, each
 * rank's buffers and the results), check_alone.c (each schedule on its own: well formed, inside
 * its extents, no race in a phase) and check_run.c (messages paired, then the symbolic run).
 * What the checker proves is in sched.h and check.c. */
#ifndef TERN_COLL_CHECK_H
#define TERN_COLL_CHECK_H

#include "coll/sched.h"
#include "coll/sym.h"

#define COLL_CHECK_MAX_RANKS 64

typedef struct coll_chk_rank {
  const coll_sched *s;
  size_t extent[COLL_NUM_BUFS]; /* as the table of sched.h gives it (TMP: tmp_count) */
  uint8_t store[COLL_NUM_BUFS]; /* the storage buffer b lives in, at base[b] */
  size_t base[COLL_NUM_BUFS];
  coll_symbuf mem[COLL_NUM_BUFS]; /* the storages (one unused when in place) */
  size_t *match;                  /* per message step: the partner's step */
  size_t ps, pe;                  /* the current phase's steps; ps == len: finished */
  size_t pending;                 /* its messages not yet completed */
  uint64_t known, known_then;     /* ranks heard from; the same when the phase began */
} coll_chk_rank;

typedef struct coll_chk_region {
  int store;
  size_t lo, hi;
  bool write;
  size_t step;
} coll_chk_region;

typedef struct coll_checker {
  const coll_args *a;
  int n;
  coll_symlist l1, l2, l3, scratch;
  size_t *match;            /* every rank's match, one after the other */
  coll_chk_region *regions; /* scratch for the race check */
  size_t nregions;
  char *why;
  size_t why_len;
  coll_chk_rank rk[]; /* n of them */
} coll_checker;

extern const char *const coll_chk_buf_names[COLL_NUM_BUFS];

/* Writes the complaint into c's why and returns TERN_ERR_INVALID_ARG. */
tern_status coll_chk_fail(coll_checker *c, const char *fmt, ...) CORE_PRINTF(2, 3);
/* "rank 2 step 5 (phase 1: recv_reduce from 3 into RECV[8,+4) with SEND[8,+4))". */
const char *coll_chk_where(const coll_checker *c, int r, size_t i, char *out, size_t len);
/* "3, 5, 9" (the first few ranks of a set). */
const char *coll_chk_ranks(uint64_t set, char *out, size_t len);

static inline bool coll_chk_is_msg(const coll_step *st) {
  return st->kind <= COLL_STEP_RECV_REDUCE;
}
static inline bool coll_chk_writes(const coll_step *st) {
  return st->kind != COLL_STEP_SEND;
}
static inline bool coll_chk_has_src(const coll_step *st) {
  return st->kind >= COLL_STEP_RECV_REDUCE;
}

/* Rank r's schedule on its own (check_alone.c). */
tern_status coll_chk_alone(coll_checker *c, int r);
/* Pairs every send with its receive (check_run.c). */
tern_status coll_chk_link(coll_checker *c);
/* The symbolic run of all ranks (check_run.c). */
tern_status coll_chk_run(coll_checker *c);

#endif /* TERN_COLL_CHECK_H */

/* memo.h: what one planning run keeps between calls (plan_memo, plan.h): the layer splits of
 * pipeline.c, ours' tables (ours.c), and the wake-up a waiting job asked for. Private to
 * src/plan. */
#ifndef TERN_PLAN_MEMO_H
#define TERN_PLAN_MEMO_H

#include "plan/plan.h"

struct kept_split;
struct ours_memo;

/* Whether a job shape's linked chains can hold it on the idle cluster (pathfind.c). */
typedef struct linked_can {
  plan_job shape;
  bool set, can;
} linked_can;
#define LINKED_CAN 64

struct plan_memo {
  struct kept_split *splits; /* pipeline.c; NULL until first used */
  struct ours_memo *ours;    /* ours.c; NULL until first used */
  plan_state *idle;          /* pathfind.c: the cluster with nothing running; NULL until used */
  linked_can linked[LINKED_CAN];
  double wake_at;
  /* The jobs plan_decide placed so far in its current round: not running yet, so not among the
   * state's releases, but they will give their GPUs back too (ours' wait for a region). */
  plan_release *placed; /* t unset: the reader predicts it */
  int nplaced, cap_placed;
  uint64_t rounds;  /* counts plan_decide's starts and ends: names what placed holds */
  uint64_t touches; /* plan_state_touch's count: a run's versions are the same in every run */
};

void plan_splits_free(struct kept_split *k);
void plan_ours_memo_free(struct ours_memo *m);

#endif /* TERN_PLAN_MEMO_H */

/* choose.c: the one selector (coll_choose, sched.h): every choice of an algorithm at run time
 * goes through here, whatever feeds it: the built-in profiles (profile.c) through the closed
 * forms (select.c) on one host or the schedules' phases across hosts (select_hosts.c), the tuning
 * file of `tern tune` (tuning.h; its rows across hosts once ranks span hosts), or weights learned
 * from simulated sweeps (select_learned.h).
 * All of them walk the algorithms' descriptors (algo/list.h).
 */
#include "coll/algo/algo.h"
#include "coll/select_learned.h"
#include "coll/tuning.h"

/* The refinement of algo that suits a at w (pair for the ring), else algo. */
static coll_algo refined(const coll_args *a, const coll_site *w, coll_algo algo) {
  for (int r = COLL_ALGO_AUTO + 1; r < COLL_NUM_ALGOS; r++) {
    const coll_algo_desc *d = coll_algo_desc_of((coll_algo)r);
    if (d->refines == algo && d->build[a->kind] && d->suits(a, w)) return (coll_algo)r;
  }
  return algo;
}

/* An algorithm, and which input of the selector chose it (TERN_DEBUG names it). */
typedef struct {
  coll_algo algo; /* COLL_ALGO_AUTO: this input had no answer */
  const char *from;
} choice;

/* Across hosts: the tuning file's rows measured across hosts, else the learned weights where
 * they were trained for the placement, else (and for the collectives neither has) every
 * algorithm priced phase by phase. */
static choice across_hosts(const coll_args *a, size_t elem_size, const coll_site *w,
                           const coll_tuning *tuned, coll_algo *inner) {
  const coll_net_model *intra = w->intra ? w->intra : &coll_model_shm,
                       *inter = w->inter ? w->inter : &coll_model_tcp;
  if (tuned) {
    coll_algo algo = coll_tuning_select_hosts(tuned, a, elem_size, intra, inner);
    if (algo != COLL_ALGO_AUTO) return (choice){algo, "tuning file"};
  }
  if (w->learned && coll_learned_fits(w->learned, a)) {
    coll_sched scratch;
    coll_sched_init(&scratch);
    coll_algo algo = coll_select_learned(w->learned, a, elem_size, intra, inter, &scratch, inner);
    coll_sched_free(&scratch);
    if (algo != COLL_ALGO_AUTO) return (choice){algo, "learned weights"};
  }
  return (choice){coll_select_hosts(a, elem_size, intra, inter, inner), "phase model"};
}

coll_algo coll_choose(const coll_args *a, size_t elem_size, const coll_site *w,
                      const coll_tuning *tuned, coll_algo *inner, const char **from) {
  /* alltoallv: a rank knows only its own counts, and every rank must choose alike, so the
   * choice is made from what they share: the ranks and their placement, at count 0 (the
   * latency of the exchange; docs/API.md) */
  coll_args shared;
  if (a->kind == COLL_ALLTOALLV) {
    shared = *a;
    shared.v = NULL, shared.count = 0;
    a = &shared;
  }
  choice c = {COLL_ALGO_AUTO, NULL};
  *inner = COLL_ALGO_RING;
  if (w->across_hosts)
    c = across_hosts(a, elem_size, w, tuned, inner);
  else if (tuned)
    c = (choice){coll_tuning_select(tuned, w->tr, a->kind, a->size, a->count, elem_size),
                 "tuning file"};
  if (c.algo == COLL_ALGO_AUTO || !coll_algo_supported(a->kind, c.algo)) {
    coll_net_model m = coll_model_of_site(w);
    c = (choice){coll_select(a->kind, a->size, a->count, elem_size, &m), "built-in model"};
  }
  if (from) *from = c.from;
  return refined(a, w, c.algo);
}

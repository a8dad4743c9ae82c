/* bruck.c: Bruck's dissemination pattern (Bruck, Ho, Kipnis, Upfal and Weathersby 1997), for
 * any number of ranks in ceil(log2 n) rounds, one message each way per round: the rounds that
 * small messages want.
 *
 *  - allgather: TMP holds the blocks rotated, slot i being block r+i. In round k (dist = 2^k)
 *    rank r sends its first min(dist, n - dist) slots to r - dist and receives as many from
 *    r + dist into slots dist and on; at the end the slots are rotated back into RECV.
 *  - alltoall: TMP slot i holds the block for rank r+i. In round k every slot whose index has
 *    bit k set is packed into one message to r + 2^k, which unpacks it into the same slots; a
 *    block that must go distance i thus travels the bits of i, and at the end slot i holds the
 *    block rank r-i sent to r. Packing costs local copies (not charged by the model) and saves
 *    a message per slot, which is what Bruck's alltoall is for.
 *  - barrier: the dissemination barrier (Hensgen, Finkel and Manber 1988): round k sends an
 *    empty message to r + 2^k and receives one from r - 2^k.
 */
#include "coll/algo/algo.h"

static void allgather(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  size_t c = a->count, mine = (size_t)r * c;
  coll_buf own = a->inplace ? COLL_BUF_RECV : COLL_BUF_SEND;
  size_t own_off = a->inplace ? mine : 0;
  coll_need_tmp(s, (size_t)n * c);
  for (int dist = 1; dist < n; dist *= 2) {
    size_t cnt = (size_t)CORE_MIN(dist, n - dist) * c;
    if (dist == 1) {
      coll_sched_copy(s, COLL_BUF_TMP, 0, own, own_off, c);
      coll_data_send(s, coll_mod(r - 1, n), own, own_off, c);
    } else {
      coll_data_send(s, coll_mod(r - dist, n), COLL_BUF_TMP, 0, cnt);
    }
    coll_data_recv(s, (r + dist) % n, COLL_BUF_TMP, (size_t)dist * c, cnt);
    coll_sched_end_phase(s);
  }
  size_t skip = a->inplace ? c : 0; /* in place, block r is already home */
  coll_sched_copy(s, COLL_BUF_RECV, mine + skip, COLL_BUF_TMP, skip, (size_t)(n - r) * c - skip);
  coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_TMP, (size_t)(n - r) * c, mine);
  coll_sched_end_phase(s);
}

/* The slots with bit set, as runs [lo, lo + len): copied to (pack) or from (unpack) the
 * contiguous area at TMP[area]; returns the elements moved (s NULL: only counts them). */
static size_t pack(coll_sched *s, const coll_args *a, int bit, size_t area, bool unpack) {
  size_t c = a->count, o = 0;
  for (int lo = bit; lo < a->size; lo += 2 * bit) {
    size_t at = (size_t)lo * c, len = (size_t)CORE_MIN(bit, a->size - lo) * c;
    if (s != NULL && unpack) coll_sched_copy(s, COLL_BUF_TMP, at, COLL_BUF_TMP, area + o, len);
    if (s != NULL && !unpack) coll_sched_copy(s, COLL_BUF_TMP, area + o, COLL_BUF_TMP, at, len);
    o += len;
  }
  return o;
}

static void alltoall(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  size_t c = a->count, all = (size_t)n * c, most = 0;
  for (int bit = 1; bit < n; bit *= 2)
    most = CORE_MAX(most, pack(NULL, a, bit, 0, false));
  size_t out = all, in = all + most;
  coll_need_tmp(s, all + 2 * most);
  coll_sched_copy(s, COLL_BUF_TMP, 0, COLL_BUF_SEND, (size_t)r * c, (size_t)(n - r) * c);
  coll_sched_copy(s, COLL_BUF_TMP, (size_t)(n - r) * c, COLL_BUF_SEND, 0, (size_t)r * c);
  coll_sched_end_phase(s);
  for (int bit = 1; bit < n; bit *= 2) {
    size_t len = pack(s, a, bit, out, false);
    coll_sched_end_phase(s);
    coll_data_send(s, (r + bit) % n, COLL_BUF_TMP, out, len);
    coll_data_recv(s, coll_mod(r - bit, n), COLL_BUF_TMP, in, len);
    coll_sched_end_phase(s);
    pack(s, a, bit, in, true);
    coll_sched_end_phase(s);
  }
  for (int i = 0; i < n; i++)
    coll_sched_copy(s, COLL_BUF_RECV, (size_t)coll_mod(r - i, n) * c, COLL_BUF_TMP, (size_t)i * c,
                    c);
}

static void barrier(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank;
  for (int dist = 1; dist < n; dist *= 2) {
    coll_sched_send(s, (r + dist) % n, COLL_BUF_RECV, 0, 0);
    coll_sched_recv(s, coll_mod(r - dist, n), COLL_BUF_RECV, 0, 0);
    coll_sched_end_phase(s);
  }
}

/* ---- cost -------------------------------------------------------------------------------- */

/* How many of n slots have bit set: what one message of the alltoall packs. */
static int slots(int n, int bit) {
  return n / (2 * bit) * bit + CORE_MAX(0, n % (2 * bit) - bit);
}

static double path(const coll_shape *x) {
  const coll_net_model *m = x->m;
  double n = x->n, B = x->B, t = 0;
  int ni = (int)n;
  switch (x->kind) {
  case COLL_ALLGATHER:
    return x->Lc * m->alpha + coll_phase_bytes(m, (n - 1) * B, (n - 1) * B, 0) * m->beta;
  case COLL_ALLTOALL:
    for (int bit = 1; bit < ni; bit *= 2)
      t += coll_cost_exchange(m, 1, (double)slots(ni, bit) * B, 0);
    return t;
  case COLL_BARRIER:
    return x->Lc * m->alpha;
  default:
    return HUGE_VAL;
  }
}

static coll_work work(const coll_shape *x) {
  double n = x->n, B = x->B, all = 0;
  int ni = (int)n;
  switch (x->kind) {
  case COLL_ALLGATHER:
    return coll_work_of(n * x->Lc, n * (n - 1) * B, 0);
  case COLL_ALLTOALL:
    for (int bit = 1; bit < ni; bit *= 2)
      all += slots(ni, bit);
    return coll_work_of(n * x->Lc, n * all * B, 0);
  case COLL_BARRIER:
    return coll_work_of(n * x->Lc, 0, 0);
  default:
    return COLL_NO_WORK;
  }
}

/* every round is an exchange */
static double turns(const coll_shape *x) {
  return x->Lc;
}

const coll_algo_desc coll_algo_bruck = {
    .build = {[COLL_ALLGATHER] = allgather, [COLL_ALLTOALL] = alltoall, [COLL_BARRIER] = barrier},
    .path = path,
    .work = work,
    .turns = turns,
};

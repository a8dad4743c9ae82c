/* pair.c: the allreduce of two ranks in pieces, one behind the other. The ring's two phases
 * each run over a whole half, so once the half outgrows the cache a rank reads its reduced half
 * back from memory to send it. Here phase t reduces piece t of this rank's half while piece t-1,
 * reduced a phase before and still in cache, goes back to the peer: a fifth faster from 4 MiB
 * over shared memory, a little slower at 1 and 2 MiB (docs/perf/shm.md). Over TCP the pieces
 * would cut each message below what is striped over the streams (net/tcp.c), so it is kept to
 * shared memory.
 *
 * The cost model prices bytes, not caches: the pieces cost a few more alphas than the ring's
 * two phases and never win on price. So the selector does not price pair against the others:
 * it refines the ring, running pair where the ring is chosen for two ranks over shared memory
 * from COLL_PAIR_PIECES_FROM elements (suits). Pieces are COLL_PAIR_PIECE elements, or
 * coll_args.seg_count when given.
 */
#include "coll/algo/algo.h"

/* Piece t of a block of len elements: its length, 0 past the end. */
static size_t piece_len(size_t len, size_t piece, size_t t) {
  size_t at = t * piece;
  return at < len ? CORE_MIN(piece, len - at) : 0;
}

static void allreduce(coll_sched *s, const coll_args *a) {
  size_t piece = a->seg_count ? a->seg_count : COLL_PAIR_PIECE;
  int peer = 1 - a->rank;
  size_t c = a->count;
  size_t mine = coll_block_off(c, 2, a->rank), my_len = coll_block_len(c, 2, a->rank);
  size_t its = coll_block_off(c, 2, peer), its_len = coll_block_len(c, 2, peer);
  size_t npieces = (CORE_MAX(my_len, its_len) + piece - 1) / piece;
  for (size_t t = 0; t <= npieces; t++) {
    if (t < npieces) {
      coll_data_send(s, peer, COLL_BUF_SEND, its + t * piece, piece_len(its_len, piece, t));
      coll_data_recv_reduce(s, peer, COLL_BUF_RECV, mine + t * piece, COLL_BUF_SEND,
                            mine + t * piece, piece_len(my_len, piece, t));
    }
    if (t > 0) {
      coll_data_send(s, peer, COLL_BUF_RECV, mine + (t - 1) * piece,
                     piece_len(my_len, piece, t - 1));
      coll_data_recv(s, peer, COLL_BUF_RECV, its + (t - 1) * piece,
                     piece_len(its_len, piece, t - 1));
    }
    coll_sched_end_phase(s);
  }
}

static bool fits(const coll_args *a) {
  return a->size == 2;
}

static bool suits(const coll_args *a, const coll_site *w) {
  return a->kind == COLL_ALLREDUCE && a->size == 2 && w->tr == COLL_TR_SHM && !w->across_hosts &&
         a->count >= COLL_PAIR_PIECES_FROM;
}

/* ---- cost -------------------------------------------------------------------------------- */

/* The longer half's pieces, phase by phase: piece t goes and is reduced while piece t-1 comes
 * back, each rank alike. */
static double path(const coll_shape *x) {
  size_t half = (x->count + 1) / 2, piece = COLL_PAIR_PIECE;
  size_t npieces = (half + piece - 1) / piece;
  double es = (double)x->elem_size, t = 0;
  for (size_t k = 0; k <= npieces; k++) {
    double now = k < npieces ? (double)piece_len(half, piece, k) * es : 0;
    double back = k > 0 ? (double)piece_len(half, piece, k - 1) * es : 0;
    t += coll_cost_phase_of(x->m, (now > 0) + (back > 0), now + back, now + back, now);
  }
  return t;
}

/* The ring's bytes (each rank sends the other's half, then its reduced own) in 2 messages a
 * piece. */
static coll_work work(const coll_shape *x) {
  size_t half = (x->count + 1) / 2, npieces = (half + COLL_PAIR_PIECE - 1) / COLL_PAIR_PIECE;
  return coll_work_of(4 * (double)npieces, 2 * x->B, x->B);
}

/* every phase is an exchange */
static double turns(const coll_shape *x) {
  size_t half = (x->count + 1) / 2;
  return (double)((half + COLL_PAIR_PIECE - 1) / COLL_PAIR_PIECE + 1);
}

const coll_algo_desc coll_algo_pair = {
    .build = {[COLL_ALLREDUCE] = allreduce},
    .fits = fits,
    .refines = COLL_ALGO_RING,
    .suits = suits,
    .path = path,
    .work = work,
    .turns = turns,
};

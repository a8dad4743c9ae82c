/* gather_direct.c: MPI_Gather in one phase: every rank sends its c elements straight to the
 * root, which receives rank q's into RECV block q and copies its own (in place, it is there
 * already). The root takes n - 1 messages at once: one alpha, and the (n - 1) c elements it
 * must take whatever the algorithm. torch.distributed's gather is this call (python/tern). */
#include "coll/algo/algo.h"

void coll_direct_gather(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank, root = a->root;
  size_t c = a->count;
  if (r != root) {
    coll_data_send(s, root, COLL_BUF_SEND, 0, c);
    return;
  }
  for (int i = 1; i < n; i++) {
    int from = (r + i) % n;
    coll_data_recv(s, from, COLL_BUF_RECV, (size_t)from * c, c);
  }
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, (size_t)r * c, COLL_BUF_SEND, 0, c);
}

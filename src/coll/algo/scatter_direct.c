/* scatter_direct.c: MPI_Scatter in one phase: the root sends SEND block q straight to rank q
 * and copies its own block (in place, it is there already); every other rank receives its c
 * elements. One alpha; the root sends the (n - 1) c elements it must send whatever the
 * algorithm. torch.distributed's scatter is this call (python/tern). */
#include "coll/algo/algo.h"

void coll_direct_scatter(coll_sched *s, const coll_args *a) {
  int n = a->size, r = a->rank, root = a->root;
  size_t c = a->count;
  if (r != root) {
    coll_data_recv(s, root, COLL_BUF_RECV, 0, c);
    return;
  }
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n;
    coll_data_send(s, to, COLL_BUF_SEND, (size_t)to * c, c);
  }
  if (!a->inplace) coll_sched_copy(s, COLL_BUF_RECV, 0, COLL_BUF_SEND, (size_t)r * c, c);
}

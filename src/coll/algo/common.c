/* common.c: the arithmetic several builders share: the fold of a non-power-of-two group onto a
 * power of two (rhd.c, rd.c) and the segment of a chain pipeline (ring.c, and select.c, whose
 * closed forms must see the same segments). */
#include "coll/algo/algo.h"

#include <math.h>

void coll_fold_init(coll_fold *f, int rank, int n, int root) {
  int p = 1;
  while (2 * p <= n)
    p *= 2;
  int rel = coll_mod(rank - root, n);
  f->n = n;
  f->p = p;
  f->rem = n - p;
  f->root = root;
  f->partner = -1;
  if (rel < 2 * f->rem) {
    f->newrank = rel % 2 ? -1 : rel / 2;
    f->partner = (rel % 2 ? rel - 1 + root : rel + 1 + root) % n;
  } else {
    f->newrank = rel - f->rem;
  }
}

int coll_fold_actual(const coll_fold *f, int j) {
  return (coll_fold_rel(f, j) + f->root) % f->n;
}

size_t coll_pipeline_seg(size_t count, int n, size_t seg_count) {
  if (seg_count) return seg_count < count ? seg_count : count;
  double nseg = ceil(sqrt((double)(n > 2 ? n - 2 : 0) * (double)count / 2048.0));
  if (nseg < 1) nseg = 1;
  if (nseg > 256) nseg = 256;
  size_t k = (size_t)nseg;
  return (count + k - 1) / k;
}

/* hier_hosts.c: the host-ordered view of a communicator that hier builds on (coll_hosts in
 * sched.h): which host each rank is on, each host's ranks in rank order, and the grid of the
 * first `lanes` ranks of every host. Built once per communicator from one host id per rank,
 * whatever the numbering: contiguous blocks, round-robin (`mpirun --map-by node`), uneven hosts.
 */
#include "coll/sched.h"

#include <stdlib.h>

void coll_hosts_free(coll_hosts *h) {
  if (h == NULL) return;
  free(h->host);
  free(h->local);
  free(h->start);
  free(h->order);
  free(h->grid);
  free(h);
}

/* Numbers the hosts 0, 1, ... in order of their first rank; -1 on a negative id. */
static int number_hosts(int n, const int *host_of, int *host) {
  int nhosts = 0;
  for (int r = 0; r < n; r++) {
    if (host_of[r] < 0) return -1;
    host[r] = -1;
    for (int q = 0; q < r && host[r] < 0; q++)
      if (host_of[q] == host_of[r]) host[r] = host[q];
    if (host[r] < 0) host[r] = nhosts++;
  }
  return nhosts;
}

static void fill(coll_hosts *h) {
  int n = h->n;
  for (int r = 0; r < n; r++)
    h->start[h->host[r] + 1]++;
  h->lanes = n;
  for (int k = 0; k < h->nhosts; k++) {
    h->lanes = CORE_MIN(h->lanes, h->start[k + 1]);
    h->start[k + 1] += h->start[k];
  }
  for (int r = 0; r < n; r++) { /* rank order within a host: r's place is the ranks before it */
    int k = h->host[r];
    h->local[r] = 0;
    for (int q = 0; q < r; q++)
      h->local[r] += h->host[q] == k;
    h->order[h->start[k] + h->local[r]] = r;
  }
  for (int k = 0; k < h->nhosts; k++)
    for (int l = 0; l < h->lanes; l++)
      h->grid[k * h->lanes + l] = h->order[h->start[k] + l];
}

tern_status coll_hosts_make(int n, const int *host_of, coll_hosts **out) {
  *out = NULL;
  if (n < 1) return TERN_ERR_INVALID_ARG;
  coll_hosts *h = calloc(1, sizeof *h);
  if (h == NULL) return TERN_ERR_NOMEM;
  h->n = n;
  size_t un = (size_t)n;
  h->host = calloc(un, sizeof(int));
  h->local = calloc(un, sizeof(int));
  h->order = calloc(un, sizeof(int));
  h->start = calloc(un + 1, sizeof(int));
  h->grid = calloc(un, sizeof(int)); /* hosts x lanes <= n */
  if (!h->host || !h->local || !h->order || !h->start || !h->grid) {
    coll_hosts_free(h);
    return TERN_ERR_NOMEM;
  }
  h->nhosts = number_hosts(n, host_of, h->host);
  if (h->nhosts < 0) {
    coll_hosts_free(h);
    return TERN_ERR_INVALID_ARG;
  }
  fill(h);
  *out = h;
  return TERN_OK;
}

int coll_host_of(const coll_args *a, int r) {
  if (a->hosts) return a->hosts->host[r];
  return a->ppn > 0 ? r / a->ppn : 0;
}

int coll_host_count(const coll_args *a) {
  if (a->hosts) return a->hosts->nhosts;
  return a->ppn > 0 ? a->size / a->ppn : 1;
}

int coll_ranks_per_host(const coll_args *a) {
  const coll_hosts *h = a->hosts;
  if (h) return h->n == h->nhosts * h->lanes ? h->lanes : 0;
  if (a->ppn <= 0) return a->size;
  return a->size % a->ppn == 0 ? a->ppn : 0;
}

bool coll_hier_fits(const coll_args *a) {
  const coll_hosts *h = a->hosts;
  if (h == NULL) return a->ppn > 1 && a->ppn < a->size && a->size % a->ppn == 0;
  return h->n == a->size && h->nhosts >= 2 && h->nhosts < a->size;
}

/* api_split.c: tern_comm_split, MPI_Comm_split's semantics over a tern communicator.
 *
 * Every rank of the parent calls it. Two all-gathers over the parent do the agreeing:
 *   1. each rank's (color, key): the members of a color, ordered by (key, parent rank), are the
 *      child's ranks 0..k-1;
 *   2. each child root's store address: the root of each color serves a store of its own (any
 *      free port, on the interface its parent's peers reach it at), and its members join there.
 * The child then opens its own connections as tern_comm_init does, so the child has the
 * parent's transports by kind (shared memory on a host, TCP across), not its connections.
 * Every wait is bounded: the all-gathers by the parent's TERN_TIMEOUT, the opening by its own.
 */
#include "coll/coll.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_LEN 96 /* "ip:port", the store address each child root publishes */

typedef struct split_entry {
  int32_t color, key, rank;
} split_entry;

/* (key, parent rank) order within one color. */
static int by_key(const void *a, const void *b) {
  const split_entry *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* This rank's child rank and size from everyone's entries; *root_rank: the parent rank of the
 * child's rank 0. */
static tern_status place(const split_entry *all, int n, int me, int *child_rank, int *child_size,
                         int *root_rank) {
  split_entry *mine = malloc((size_t)n * sizeof *mine);
  if (mine == NULL) return TERN_ERR_NOMEM;
  int k = 0;
  for (int r = 0; r < n; r++)
    if (all[r].color == all[me].color) mine[k++] = all[r];
  qsort(mine, (size_t)k, sizeof *mine, by_key);
  for (int i = 0; i < k; i++)
    if (mine[i].rank == me) *child_rank = i;
  *child_size = k;
  *root_rank = mine[0].rank;
  free(mine);
  return TERN_OK;
}

/* Serves the child's store on the interface the parent listens on (peers reach it there). */
static tern_status serve_child_store(tern_comm *parent, int child_size, store_server **srv,
                                     char *addr) {
  char host[NET_HOST_LEN];
  int port;
  tern_status rc = net_parse_addr(parent->peers[parent->rank].addr, host, sizeof host, &port, false,
                                  &parent->err);
  if (rc != TERN_OK) return rc;
  uint8_t run_id[16]; /* a run of its own: shared-memory names carry it, and the children of
                         one split must not share them */
  randombytes_buf(run_id, sizeof run_id);
  const core_config *cfg = core_config_get();
  rc = store_server_start(srv, host, 0, child_size, run_id, cfg->have_key ? cfg->key : NULL,
                          &parent->err);
  if (rc == TERN_OK) snprintf(addr, ADDR_LEN, "%s", store_server_addr(*srv));
  return rc;
}

tern_status tern_comm_split(tern_comm *parent, int color, int key, tern_comm **child) {
  if (child) *child = NULL;
  if (parent == NULL || child == NULL) return TERN_ERR_INVALID_ARG;
  if (color < 0 && color != TERN_SPLIT_UNDEFINED)
    return core_err_set(&parent->err, TERN_ERR_INVALID_ARG,
                        "comm_split: color %d: want >= 0 or TERN_SPLIT_UNDEFINED", color);
  int n = parent->size, me = parent->rank;
  split_entry *all = calloc((size_t)n, sizeof *all);
  char *addrs = calloc((size_t)n, ADDR_LEN);
  store_server *srv = NULL;
  tern_status rc = all && addrs ? TERN_OK : TERN_ERR_NOMEM;
  split_entry mine = {color, key, me};
  if (rc == TERN_OK) rc = tern_allgather(parent, &mine, all, 3, TERN_I32);
  int child_rank = -1, child_size = 0, root_rank = -1;
  bool member = color != TERN_SPLIT_UNDEFINED;
  if (rc == TERN_OK && member) rc = place(all, n, me, &child_rank, &child_size, &root_rank);
  if (rc == TERN_OK && member && child_rank == 0)
    rc = serve_child_store(parent, child_size, &srv, addrs + (size_t)me * ADDR_LEN);
  /* every rank takes part in the exchange, members or not, failed or not: the others wait */
  char sent[ADDR_LEN];
  memcpy(sent, addrs ? addrs + (size_t)me * ADDR_LEN : "", addrs ? ADDR_LEN : 1);
  tern_status ex = addrs ? tern_allgather(parent, sent, addrs, ADDR_LEN, TERN_U8) : TERN_ERR_NOMEM;
  if (rc == TERN_OK) rc = ex;
  if (rc == TERN_OK && member) {
    char *root_addr = addrs + (size_t)root_rank * ADDR_LEN;
    root_addr[ADDR_LEN - 1] = '\0';
    if (root_addr[0] == '\0')
      rc = core_err_set(&parent->err, TERN_ERR_PEER_LOST,
                        "comm_split: rank %d, the root of color %d, published no store", root_rank,
                        color);
    else {
      rc = comm_create(child, child_rank, child_size, root_addr, false, srv, &coll_runner);
      srv = NULL; /* the child owns it now, failed or not */
      if (rc != TERN_OK)
        core_err_set(&parent->err, rc, "comm_split: joining color %d as rank %d of %d: %s", color,
                     child_rank, child_size, tern_comm_last_error(NULL));
    }
  }
  store_server_stop(srv);
  free(all);
  free(addrs);
  return rc;
}

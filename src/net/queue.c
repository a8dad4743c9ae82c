/* queue.c: the FIFO of transfers per peer and direction (and of stripes per TCP stream): a ring
 * of fixed-size items that grows by doubling and never shrinks, so a warm communicator queues
 * without allocating. The capacity is a power of two, so a position wraps with a mask: a
 * division by a variable (two per push, one per pop) cost 20-40 cycles each, on the path of
 * every message (callgrind and the instruction tables of an 8-byte allreduce). */
#include "net/transport.h"

#include <stdlib.h>
#include <string.h>

void net_queue_init(net_queue *q, size_t esize) {
  memset(q, 0, sizeof *q);
  q->esize = esize;
}

tern_status net_queue_push(net_queue *q, const void *item) {
  if (q->len == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16; /* a power of two, always */
    char *items = malloc(cap * q->esize);
    if (items == NULL) return TERN_ERR_NOMEM;
    for (size_t i = 0; i < q->len; i++)
      memcpy(items + i * q->esize, q->items + ((q->head + i) & (q->cap - 1)) * q->esize, q->esize);
    free(q->items);
    q->items = items;
    q->cap = cap;
    q->head = 0;
  }
  memcpy(q->items + ((q->head + q->len) & (q->cap - 1)) * q->esize, item, q->esize);
  q->len++;
  return TERN_OK;
}

void net_queue_pop(net_queue *q) {
  if (q->len == 0) return;
  q->head = (q->head + 1) & (q->cap - 1);
  q->len--;
}

void net_queue_free(net_queue *q) {
  free(q->items);
  net_queue_init(q, q->esize);
}

/* queue.c: the FIFO of transfers per peer and direction. It grows by doubling and never
 * shrinks, so a warm communicator queues without allocating. */
#include "net/transport.h"

#include <stdlib.h>
#include <string.h>

tern_status net_queue_push(net_queue *q, void *item) {
  if (q->len == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16;
    void **items = malloc(cap * sizeof *items);
    if (items == NULL) return TERN_ERR_NOMEM;
    for (size_t i = 0; i < q->len; i++) items[i] = q->items[(q->head + i) % q->cap];
    free(q->items);
    q->items = items;
    q->cap = cap;
    q->head = 0;
  }
  q->items[(q->head + q->len) % q->cap] = item;
  q->len++;
  return TERN_OK;
}

void net_queue_pop(net_queue *q) {
  if (q->len == 0) return;
  q->head = (q->head + 1) % q->cap;
  q->len--;
}

void net_queue_free(net_queue *q) {
  free(q->items);
  memset(q, 0, sizeof *q);
}

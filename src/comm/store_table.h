/* store_table.h: the store's keys and values, a chained hash table (store_table.c). Used by the
 * server thread only, so it has no lock. */
#ifndef TERN_COMM_STORE_TABLE_H
#define TERN_COMM_STORE_TABLE_H

#include "core/core.h"

/* What the table holds at most, keys and values together. A rendezvous needs a few hundred bytes
 * per rank (addresses, counters), so this is room for a million ranks; past it a SET is refused
 * rather than letting unauthenticated clients grow the server without bound. */
#define STORE_TABLE_MAX_BYTES (256u << 20)

typedef struct store_table store_table;

store_table *store_table_new(void);
void store_table_free(store_table *t);
/* The value of key, or NULL when it is not set. */
const uint8_t *store_table_get(const store_table *t, const char *key, size_t key_len,
                               size_t *value_len);
/* Sets (or replaces) key. TERN_ERR_NOMEM past STORE_TABLE_MAX_BYTES or without memory. */
tern_status store_table_set(store_table *t, const char *key, size_t key_len, const void *value,
                            size_t value_len, core_err *err);
/* Adds delta to the decimal counter at key (absent: 0) and stores the result as decimal text.
 * TERN_ERR_INVALID_ARG when the value there is not a decimal integer or the sum overflows. */
tern_status store_table_add(store_table *t, const char *key, size_t key_len, int64_t delta,
                            int64_t *result, core_err *err);

#endif /* TERN_COMM_STORE_TABLE_H */

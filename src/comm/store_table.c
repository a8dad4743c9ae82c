/* store_table.c: the store's key-value table: chained hashing (FNV-1a), doubled when the
 * entries outnumber the buckets, and a byte count held under STORE_TABLE_MAX_BYTES.
 *
 * Counters live in the same table as decimal text, the way torch's TCPStore keeps them, so a
 * rank can GET (and wait for) a counter another rank ADDs to.
 */
#include "store_table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  struct entry *next;
  uint32_t hash;
  size_t key_len, value_len;
  uint8_t *value;
  char key[];
} entry;

struct store_table {
  entry **buckets;
  size_t nbuckets, count, bytes;
};

static uint32_t fnv1a(const char *key, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (uint8_t)key[i]) * 16777619u;
  return h;
}

store_table *store_table_new(void) {
  store_table *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  t->nbuckets = 64;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  if (t->buckets == NULL) {
    free(t);
    return NULL;
  }
  return t;
}

void store_table_free(store_table *t) {
  if (t == NULL) return;
  for (size_t i = 0; i < t->nbuckets; i++) {
    for (entry *e = t->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      free(e->value);
      free(e);
    }
  }
  free(t->buckets);
  free(t);
}

static entry *find(const store_table *t, const char *key, size_t key_len, uint32_t h) {
  for (entry *e = t->buckets[h & (t->nbuckets - 1)]; e != NULL; e = e->next)
    if (e->hash == h && e->key_len == key_len && memcmp(e->key, key, key_len) == 0) return e;
  return NULL;
}

const uint8_t *store_table_get(const store_table *t, const char *key, size_t key_len,
                               size_t *value_len) {
  entry *e = find(t, key, key_len, fnv1a(key, key_len));
  if (e == NULL) return NULL;
  *value_len = e->value_len;
  return e->value != NULL ? e->value : (const uint8_t *)""; /* an empty value is still set */
}

/* Doubles the buckets; a failed allocation just leaves the chains longer. */
static void grow(store_table *t) {
  size_t n = t->nbuckets * 2;
  entry **b = calloc(n, sizeof *b);
  if (b == NULL) return;
  for (size_t i = 0; i < t->nbuckets; i++) {
    for (entry *e = t->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      e->next = b[e->hash & (n - 1)];
      b[e->hash & (n - 1)] = e;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = n;
}

tern_status store_table_set(store_table *t, const char *key, size_t key_len, const void *value,
                            size_t value_len, core_err *err) {
  uint32_t h = fnv1a(key, key_len);
  entry *e = find(t, key, key_len, h);
  size_t old = e ? e->value_len : 0, extra = e ? 0 : key_len + sizeof *e;
  if (t->bytes - old + value_len + extra > STORE_TABLE_MAX_BYTES)
    return core_err_set(err, TERN_ERR_NOMEM, "the store is full (%zu bytes held, at most %u)",
                        t->bytes, STORE_TABLE_MAX_BYTES);
  uint8_t *copy = NULL;
  if (value_len > 0 && (copy = malloc(value_len)) == NULL)
    return core_err_set(err, TERN_ERR_NOMEM, "no memory for a %zu-byte value", value_len);
  if (value_len > 0) memcpy(copy, value, value_len);
  if (e == NULL) {
    e = malloc(sizeof *e + key_len);
    if (e == NULL) {
      free(copy);
      return core_err_set(err, TERN_ERR_NOMEM, "no memory for a key");
    }
    e->hash = h;
    e->key_len = key_len;
    memcpy(e->key, key, key_len);
    e->value = NULL;
    e->value_len = 0;
    e->next = t->buckets[h & (t->nbuckets - 1)];
    t->buckets[h & (t->nbuckets - 1)] = e;
    t->count++;
  }
  free(e->value);
  e->value = copy;
  e->value_len = value_len;
  t->bytes = t->bytes - old + value_len + extra;
  if (t->count > t->nbuckets) grow(t);
  return TERN_OK;
}

/* A whole decimal integer, nothing else. */
static bool parse_counter(const uint8_t *v, size_t len, int64_t *out) {
  char buf[24];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, v, len);
  buf[len] = '\0';
  if (buf[0] != '-' && (buf[0] < '0' || buf[0] > '9')) return false;
  char *end;
  errno = 0;
  long long n = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = n;
  return true;
}

tern_status store_table_add(store_table *t, const char *key, size_t key_len, int64_t delta,
                            int64_t *result, core_err *err) {
  size_t len;
  const uint8_t *v = store_table_get(t, key, key_len, &len);
  int64_t now = 0;
  if (v != NULL && !parse_counter(v, len, &now))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "key '%.*s' holds a value that is not a counter",
                        (int)key_len, key);
  if (__builtin_add_overflow(now, delta, &now))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "counter '%.*s' would overflow", (int)key_len,
                        key);
  char text[24];
  int n = snprintf(text, sizeof text, "%" PRId64, now);
  tern_status rc = store_table_set(t, key, key_len, text, (size_t)n, err);
  if (rc == TERN_OK) *result = now;
  return rc;
}

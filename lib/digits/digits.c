/* digits.c: reading the digits CSV (see digits.h) and splitting it.
 *
 * The file is read whole (a few hundred KB) and parsed in one pass: a line is 65 unsigned
 * decimal fields separated by commas, the first 64 pixels in 0..16 and the last the label in
 * 0..9; a trailing "\r" and a last line without "\n" are accepted, nothing else is. Rows are
 * counted first so that the arrays are allocated once.
 */
#include "digits.h"
#include "rng.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELDS (DIGITS_PIXELS + 1)
#define PIXEL_MAX 16 /* 4x4 blocks of a 32x32 bitmap: 0..16 pixels on (digits.rst) */
#define FILE_MAX (64u << 20)

static size_t count_rows(const char *text, size_t len) {
  size_t rows = 0;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') rows++;
  if (len > 0 && text[len - 1] != '\n') rows++;
  return rows;
}

/* Parses one field at *p (up to end); advances *p past it. -1 when it is not a number. */
static long field(const char **p, const char *end) {
  long v = 0;
  const char *s = *p;
  if (s == end || *s < '0' || *s > '9') return -1;
  while (s < end && *s >= '0' && *s <= '9' && v <= 1000)
    v = v * 10 + (*s++ - '0');
  *p = s;
  return v;
}

/* One line [p, end) into row r. */
static int parse_line(digits *d, size_t r, const char *p, const char *end, const char *name,
                      size_t line, char *err, size_t errlen) {
  if (end > p && end[-1] == '\r') end--;
  for (int f = 0; f < FIELDS; f++) {
    const char *at = p;
    long v = field(&p, end);
    long max = f < DIGITS_PIXELS ? PIXEL_MAX : DIGITS_CLASSES - 1;
    if (v < 0 || v > max) {
      int w = (int)(end - at > 8 ? 8 : end - at);
      snprintf(err, errlen, "%s:%zu: field %d (%s): '%.*s' is not a number in 0..%ld", name, line,
               f + 1, f < DIGITS_PIXELS ? "a pixel" : "the label", w, at, max);
      return -1;
    }
    if (f < DIGITS_PIXELS)
      d->x[r * DIGITS_PIXELS + (size_t)f] = (float)v / PIXEL_MAX;
    else
      d->label[r] = (int)v;
    char want = f + 1 < FIELDS ? ',' : '\0';
    char got = p < end ? *p : '\0';
    if (got != want) {
      snprintf(err, errlen, "%s:%zu: after field %d: want %s, found '%c' (a line is %d fields)",
               name, line, f + 1, want ? "','" : "the end of the line", got ? got : ' ', FIELDS);
      return -1;
    }
    p++;
  }
  return 0;
}

int digits_parse(digits *d, const char *text, size_t len, const char *name, char *err,
                 size_t errlen) {
  memset(d, 0, sizeof *d);
  size_t rows = count_rows(text, len);
  if (rows == 0 || rows > DIGITS_MAX_ROWS) {
    snprintf(err, errlen, "%s: %zu lines, want 1 to %d images", name, rows, DIGITS_MAX_ROWS);
    return -1;
  }
  d->x = malloc(rows * DIGITS_PIXELS * sizeof *d->x);
  d->label = malloc(rows * sizeof *d->label);
  if (d->x == NULL || d->label == NULL) {
    snprintf(err, errlen, "%s: no memory for %zu images", name, rows);
    goto fail;
  }
  const char *p = text, *end = text + len;
  for (size_t r = 0; r < rows; r++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL) eol = end;
    if (parse_line(d, r, p, eol, name, r + 1, err, errlen) != 0) goto fail;
    p = eol < end ? eol + 1 : end;
  }
  d->n = rows;
  return 0;
fail:
  digits_free(d);
  return -1;
}

int digits_load(digits *d, const char *path, char *err, size_t errlen) {
  int rc = -1;
  char *text = NULL;
  memset(d, 0, sizeof *d);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (size < 0 || (unsigned long)size > FILE_MAX || fseek(f, 0, SEEK_SET) != 0) {
    snprintf(err, errlen, "%s: not a regular file of at most %u MB", path, FILE_MAX >> 20);
    goto fail;
  }
  text = malloc((size_t)size + 1);
  if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
    snprintf(err, errlen, "%s: %s", path, text ? "read failed" : "no memory");
    goto fail;
  }
  rc = digits_parse(d, text, (size_t)size, path, err, errlen);
fail:
  free(text);
  fclose(f);
  return rc;
}

void digits_free(digits *d) {
  free(d->x);
  free(d->label);
  memset(d, 0, sizeof *d);
}

int digits_split(const digits *d, double test_fraction, uint64_t seed, int *idx, size_t *ntrain) {
  if (d->n < 2) return -1;
  for (size_t i = 0; i < d->n; i++)
    idx[i] = (int)i;
  rng_shuffle(&seed, idx, d->n);
  size_t ntest = (size_t)ceil((double)d->n * test_fraction);
  if (ntest < 1) ntest = 1;
  if (ntest >= d->n) ntest = d->n - 1;
  *ntrain = d->n - ntest;
  return 0;
}

/* digits.h: the handwritten digits data set (scikit-learn's copy of the UCI test set; see
 * data/README.md): 1797 images of 8x8 pixels valued 0..16, each with its digit.
 *
 * digits_load reads the CSV form scikit-learn ships (64 pixel values then the label, one image
 * a line), checking every field; pixels are scaled to [0, 1]. digits_split shuffles the images
 * with a seed and keeps the last fraction apart as the held-out set, the same on every rank.
 */
#ifndef TRAIN_DIGITS_H
#define TRAIN_DIGITS_H

#include <stddef.h>
#include <stdint.h>

#define DIGITS_PIXELS 64
#define DIGITS_CLASSES 10
#define DIGITS_MAX_ROWS 100000 /* far past the 1797 of the real set: a bound on bad input */

typedef struct digits {
  size_t n;
  float *x;   /* n x DIGITS_PIXELS, in [0, 1] */
  int *label; /* n, in [0, DIGITS_CLASSES) */
} digits;

/* Loads path into d. On failure returns -1 with the file, line and field at fault in err. */
int digits_load(digits *d, const char *path, char *err, size_t errlen);
/* The same from a buffer of len bytes (name names it in messages). */
int digits_parse(digits *d, const char *text, size_t len, const char *name, char *err,
                 size_t errlen);
void digits_free(digits *d);

/* Fills idx (d->n entries) with a seeded permutation: the first *ntrain are the training set,
 * the rest (test_fraction of n, rounded up, at least 1) the held-out set. -1 when n < 2. */
int digits_split(const digits *d, double test_fraction, uint64_t seed, int *idx, size_t *ntrain);

#endif

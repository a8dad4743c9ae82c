/* pattern.h: known inputs for every (dtype, op), and the exact result a collective must give.
 *
 * Values are small integers (and +-1, 2 for products), so that every partial result on any
 * reduction tree is exact in every dtype, bf16 included, up to 64 ranks: a check can then demand
 * bit equality, whatever algorithm ran. Used by `tern bench -c 1` and by the integration tests.
 */
#ifndef TERN_TOOLS_PATTERN_H
#define TERN_TOOLS_PATTERN_H

#include "tern.h"

#include <stddef.h>

/* Rank `rank`'s input element i for op. */
double pattern_value(tern_op op, int rank, size_t i);
/* Writes count elements of rank's input, starting at element index first. */
void pattern_fill(void *buf, tern_dtype dt, tern_op op, int rank, size_t first, size_t count);
/* The reduction over n ranks of element i, as dt holds it (AVG divided as tern does). */
double pattern_reduced(tern_dtype dt, tern_op op, int n, size_t i);
/* Element i of buf, widened to double. */
double pattern_get(const void *buf, tern_dtype dt, size_t i);
/* How many of buf's count elements differ from want(i) = pattern_reduced(dt, op, n, first + i). */
size_t pattern_count_wrong_reduced(const void *buf, tern_dtype dt, tern_op op, int n, size_t first,
                                   size_t count);
/* How many differ from rank's own inputs first .. first + count - 1. */
size_t pattern_count_wrong_input(const void *buf, tern_dtype dt, tern_op op, int rank, size_t first,
                                 size_t count);

#endif

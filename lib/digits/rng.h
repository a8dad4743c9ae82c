/* rng.h: the trainer's random numbers: splitmix64 (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014), small, seedable and the same on every machine,
 * so that every rank draws the same permutation of the data from the same seed without talking.
 */
#ifndef TRAIN_RNG_H
#define TRAIN_RNG_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1), from the top 24 bits: every value is a float exactly. */
static inline float rng_uniform(uint64_t *state) {
  return (float)(rng_next(state) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform in [0, n) for n > 0 (Lemire's multiply-shift; its bias is below 2^-32 for n < 2^32). */
static inline size_t rng_below(uint64_t *state, size_t n) {
  return (size_t)(((rng_next(state) >> 32) * (uint64_t)n) >> 32);
}

/* Fisher-Yates shuffle of idx[0, n). */
static inline void rng_shuffle(uint64_t *state, int *idx, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = rng_below(state, i);
    int t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
  }
}

#endif

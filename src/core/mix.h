/* mix.h: splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): its finaliser, a bijection of 64-bit words that mixes every bit into every other
 * (hashing), and the generator that steps a state through it (seeding, cheap draws). */
#ifndef TERN_CORE_MIX_H
#define TERN_CORE_MIX_H

#include <stdint.h>

#define CORE_GOLDEN64 0x9e3779b97f4a7c15ull

static inline uint64_t core_mix64(uint64_t x) {
  x += CORE_GOLDEN64;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The next draw of the generator whose state is *state. */
static inline uint64_t core_splitmix64(uint64_t *state) {
  uint64_t r = core_mix64(*state);
  *state += CORE_GOLDEN64;
  return r;
}

#endif /* TERN_CORE_MIX_H */

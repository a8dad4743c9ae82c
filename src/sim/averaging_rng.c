/* averaging_rng.c: the simulator's random numbers, one seeded stream per restart.
 *
 * xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number generators", 2018):
 * 256 bits of state, passes BigCrush, a few cycles per draw. Its state is filled from the seed
 * by splitmix64, the seeding its authors recommend, so nearby seeds give unrelated streams.
 * Bounded integers use Lemire's multiply-and-reject (2019), unbiased for any bound.
 */
#include "sim/averaging.h"

#include "core/mix.h"

#include <math.h>

void sim_rng_seed(sim_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++)
    r->s[i] = core_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(sim_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

double sim_rng_uniform(sim_rng *r) {
  return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

double sim_rng_normal(sim_rng *r) {
  double u = 1.0 - sim_rng_uniform(r); /* (0, 1]: log stays finite */
  double v = sim_rng_uniform(r);
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t sim_rng_below(sim_rng *r, uint64_t bound) {
  unsigned __int128 m = (unsigned __int128)sim_rng_next(r) * bound;
  uint64_t low = (uint64_t)m;
  if (low < bound) {
    uint64_t floor = -bound % bound; /* 2^64 mod bound */
    while (low < floor) {
      m = (unsigned __int128)sim_rng_next(r) * bound;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

void sim_rng_shuffle(sim_rng *r, int *a, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)sim_rng_below(r, i);
    int t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

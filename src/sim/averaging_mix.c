/* averaging_mix.c: the protocols that mix along a fixed graph: gossip on a ring and PushSum on
 * an exponential graph. Both are synchronous: a round reads the values as they were before it
 * (pk->tmp_x, pk->tmp_w) and writes the new ones.
 */
#include "sim/averaging.h"

/* Gossip (Boyd et al. 2006, on a ring): a live peer takes the mean of itself and its live
 * neighbours i - 1 and i + 1 (once each, so two peers are each other's one neighbour). */
void sim_avg_round_gossip(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  (void)s, (void)t, (void)r;
  int n = pk->n;
  for (int i = 0; i < n; i++)
    pk->tmp_x[i] = pk->x[i];
  for (int i = 0; i < n; i++) {
    if (!pk->alive[i]) continue;
    int left = (i + n - 1) % n, right = (i + 1) % n;
    double sum = pk->tmp_x[i], count = 1;
    if (pk->alive[left]) sum += pk->tmp_x[left], count++;
    if (right != left && pk->alive[right]) sum += pk->tmp_x[right], count++;
    pk->x[i] = sum / count;
  }
}

/* The hop of round t: h = t mod floor(log2(n - 1)), as SGP cycles through its exponential
 * graph's edges (Assran et al. 2019, section 6), so that every power of two up to about n / 2
 * is used in turn. */
static int hop_of(int n, int t) {
  int hops = 0;
  while (hops < 30 && (2L << hops) <= n - 1)
    hops++; /* hops = floor(log2(n - 1)) */
  return hops > 0 ? t % hops : 0;
}

/* The out-neighbour of i at distance k < n on the exponential graph, as the authors' experiment
 * builds it: i + k, but an edge that passes the last peer lands one short of where a circulant
 * wrap would put it, (i + k - 1) mod n. Their graph is numpy's roll of the whole n x n matrix,
 * which carries a wrapped entry onto the next row (moshpit-sgd, averaging_experiments/
 * averager.py); with it the simulator reproduces their SGP figures, while the exact circulant
 * wrap takes about 5 rounds more at N = 768 (its slow modes at n not a power of two). */
static int out_neighbour(int i, long k, int n) {
  return i + k < n ? (int)(i + k) : (int)((i + k - 1) % n);
}

/* PushSum: a live peer keeps one share of its (sum, weight) and pushes one share to each live
 * out-neighbour distinct from itself, at distances 2^h and 2^(h+1). A failed peer neither sends
 * nor receives, so the totals of sums and weights never change. */
void sim_avg_round_pushsum(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  (void)s, (void)r;
  int n = pk->n, h = hop_of(n, t);
  long a = (1L << h) % n, b = (2L << h) % n;
  for (int i = 0; i < n; i++) {
    pk->tmp_x[i] = pk->x[i], pk->tmp_w[i] = pk->w[i];
    if (pk->alive[i]) pk->x[i] = 0, pk->w[i] = 0;
  }
  for (int i = 0; i < n; i++) {
    if (!pk->alive[i]) continue;
    int to[3] = {i}, k = 1, c1 = out_neighbour(i, a, n), c2 = out_neighbour(i, b, n);
    if (c1 != i && pk->alive[c1]) to[k++] = c1;
    if (c2 != i && c2 != c1 && pk->alive[c2]) to[k++] = c2;
    double share_x = pk->tmp_x[i] / k, share_w = pk->tmp_w[i] / k;
    for (int j = 0; j < k; j++)
      pk->x[to[j]] += share_x, pk->w[to[j]] += share_w;
  }
}

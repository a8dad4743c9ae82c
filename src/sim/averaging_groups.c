/* averaging_groups.c: the protocols that average exactly inside groups: All-Reduce (one group of
 * everyone, void when anyone fails), random groups and the Moshpit grid.
 *
 * Each round labels every live peer with its group (pk->idx; -1 for peers outside any group),
 * then one pass sums the groups and another hands each member its group's mean, so a round is
 * O(peers + groups) whatever the grouping.
 */
#include "sim/averaging.h"

/* Replaces the value of every peer with a label in [0, ngroups) by its group's mean. */
static void average_labelled(sim_avg_peers *pk, int ngroups) {
  for (int g = 0; g < ngroups; g++)
    pk->sum[g] = 0, pk->count[g] = 0;
  for (int i = 0; i < pk->n; i++)
    if (pk->idx[i] >= 0) pk->sum[pk->idx[i]] += pk->x[i], pk->count[pk->idx[i]]++;
  for (int i = 0; i < pk->n; i++)
    if (pk->idx[i] >= 0) pk->x[i] = pk->sum[pk->idx[i]] / pk->count[pk->idx[i]];
}

void sim_avg_round_allreduce(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  (void)s, (void)t, (void)r;
  for (int i = 0; i < pk->n; i++)
    if (!pk->alive[i]) return;
  for (int i = 0; i < pk->n; i++)
    pk->idx[i] = 0;
  average_labelled(pk, 1);
}

/* Shuffles the live peers; group g takes shuffled positions [gM, (g+1)M) and the live - gM left
 * over go one each to groups 0, 1, ... in turn, so every group has M or M + 1 members. With
 * fewer than M live peers they form one group. */
void sim_avg_round_groups(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  (void)t;
  int *live = pk->count, nlive = 0; /* count is free until average_labelled */
  for (int i = 0; i < pk->n; i++) {
    pk->idx[i] = -1;
    if (pk->alive[i]) live[nlive++] = i;
  }
  if (nlive < 2) return;
  sim_rng_shuffle(r, live, (size_t)nlive);
  int groups = nlive / s->group > 0 ? nlive / s->group : 1;
  int whole = nlive / s->group > 0 ? groups * s->group : 0;
  for (int k = 0; k < nlive; k++)
    pk->idx[live[k]] = k < whole ? k / s->group : (k - whole) % groups;
  average_labelled(pk, groups);
}

/* Round t averages along axis a = t mod d: the group of a cell is its index with coordinate a
 * taken out, (cell / M^(a+1)) M^a + cell mod M^a. */
void sim_avg_round_moshpit(sim_avg_peers *pk, const sim_avg_setup *s, int t, sim_rng *r) {
  (void)r;
  long below = 1, groups = 1;
  int axis = t % s->grid_dims;
  for (int i = 0; i < s->grid_dims; i++) {
    if (i < axis) below *= s->grid_size;
    if (i != axis) groups *= s->grid_size;
  }
  long above = below * s->grid_size;
  for (int i = 0; i < pk->n; i++) {
    long c = pk->cell[i];
    pk->idx[i] = pk->alive[i] ? (int)(c / above * below + c % below) : -1;
  }
  average_labelled(pk, (int)groups);
}

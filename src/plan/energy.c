/* energy.c: the energy model: a job's GPUs draw their board power times the data centre's PUE
 * for as long as the job holds them, and each hour is paid at the region's price of that hour.
 *
 * The GPU count is charged whole while the job runs, bubbles included: a GPU waiting in the
 * pipeline bubble stays allocated and powered (the model; docs/PLANNING.md discusses
 * what idle power would change). Prices change on UTC hour boundaries; a run of many days is
 * summed day by day, then hour by hour for the ends.
 */
#include "plan/plan.h"

#include <math.h>

double plan_energy_kwh(const plan_cluster *c, int r, int n, double s) {
  return n * c->types[c->regions[r].type].power_w * c->pue * s / 3.6e6;
}

/* The integral of the price (USD/kWh) over [t0, t1], in USD per kW. */
static double price_integral(const plan_region *r, double t0, double t1) {
  double day = 0, sum = 0;
  for (int h = 0; h < 24; h++)
    day += r->price[h];
  double t = t0;
  while (t < t1) {
    double next_hour = (floor(t / 3600.0) + 1) * 3600.0;
    if (fmod(t, 86400.0) == 0 && t1 - t >= 86400.0) {
      double days = floor((t1 - t) / 86400.0);
      sum += days * day;
      t += days * 86400.0;
      continue;
    }
    double end = CORE_MIN(next_hour, t1);
    sum += plan_price_at(r, t) * (end - t) / 3600.0;
    t = end;
  }
  return sum;
}

double plan_cost_usd(const plan_cluster *c, int r, int n, double t0, double t1) {
  if (t1 <= t0 || n <= 0) return 0;
  double kw = n * c->types[c->regions[r].type].power_w * c->pue / 1000.0;
  return kw * price_integral(&c->regions[r], t0, t1);
}

double plan_placement_kwh(const plan_cluster *c, const plan_placement *p, double s) {
  double e = 0;
  for (int i = 0; i < p->nseg; i++)
    e += plan_energy_kwh(c, p->seg[i].region, p->seg[i].gpus, s);
  return e;
}

double plan_placement_cost(const plan_cluster *c, const plan_placement *p, double t0, double t1) {
  double usd = 0;
  for (int i = 0; i < p->nseg; i++)
    usd += plan_cost_usd(c, p->seg[i].region, p->seg[i].gpus, t0, t1);
  return usd;
}

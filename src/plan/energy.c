/* energy.c: the energy model: a job's GPUs draw their board power times the data centre's PUE
 * for as long as the job holds them, and each hour is paid at the region's price of that hour.
 *
 * The GPU count is charged whole while the job runs, bubbles included: a GPU waiting in the
 * pipeline bubble stays allocated and powered (the model; docs/PLANNING.md discusses
 * what idle power would change). Prices change on UTC hour boundaries; a span is the difference
 * of two integrals from the start of t0's day, each whole days then at most 24 hours.
 */
#include "plan/plan.h"

#include <math.h>

double plan_energy_kwh(const plan_cluster *c, int r, int n, double s) {
  return n * c->types[c->regions[r].type].power_w * c->pue * s / 3.6e6;
}

/* The integral of the price (USD/kWh x h) from hour 0 of day 0 to t >= 0, the day's sum given:
 * whole days times the day's sum, then at most 24 hours of the last day. No loop depends on t's
 * size, so a rate so small that t no longer moves by an hour's step cannot stall it. */
static double price_from_zero(const plan_region *r, double day, double t) {
  double days = floor(t / 86400.0), in_day = t - days * 86400.0, sum = days * day;
  int whole = (int)(in_day / 3600.0);
  for (int h = 0; h < whole && h < 24; h++)
    sum += r->price[h];
  if (whole < 24) sum += r->price[whole] * (in_day - whole * 3600.0) / 3600.0;
  return sum;
}

/* The integral of the price (USD/kWh) over [t0, t1], in USD per kW. A span within one day is
 * summed from t0 directly, which keeps its precision when t0 is far from day 0. A flat price
 * (the fixtures') is one product. */
static double price_integral(const plan_region *r, double t0, double t1) {
  double day = 0;
  bool flat = true;
  for (int h = 0; h < 24; h++) {
    day += r->price[h];
    flat = flat && r->price[h] == r->price[0];
  }
  if (flat) return r->price[0] * (t1 - t0) / 3600.0;
  double base = floor(t0 / 86400.0) * 86400.0;
  return price_from_zero(r, day, t1 - base) - price_from_zero(r, day, t0 - base);
}

double plan_cost_usd(const plan_cluster *c, int r, int n, double t0, double t1) {
  if (t1 <= t0 || n <= 0) return 0;
  double kw = n * c->types[c->regions[r].type].power_w * c->pue / 1000.0;
  return kw * price_integral(&c->regions[r], t0, t1);
}

double plan_placement_kwh(const plan_cluster *c, const plan_placement *p, double s) {
  double e = 0;
  for (int i = 0; i < p->nseg; i++)
    e += plan_energy_kwh(c, p->seg[i].region, plan_seg_gpus(p, i), s);
  return e;
}

double plan_placement_cost(const plan_cluster *c, const plan_placement *p, double t0, double t1) {
  double usd = 0;
  for (int i = 0; i < p->nseg; i++)
    usd += plan_cost_usd(c, p->seg[i].region, plan_seg_gpus(p, i), t0, t1);
  return usd;
}

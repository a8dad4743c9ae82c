/* test_plan_energy.c: energy and electricity cost against hand sums: flat prices, prices by the
 * hour across hour and day boundaries, and whole placements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan_testing.h"

#include <math.h>
#include <time.h>

static plan_scenario sc;

static int setup(void **state) {
  (void)state;
  char text[4096], hourly[512];
  size_t n = 0;
  for (int h = 0; h < 24; h++)
    n += (size_t)snprintf(hourly + n, sizeof hourly - n, "%s%d.0e-2", h ? ", " : "", h);
  snprintf(text, sizeof text,
           "{" PT_TYPES ", \"regions\": ["
           "{\"name\": \"flat\", \"gpu\": \"slow\", \"gpus\": 10, \"price_usd_per_kwh\": 0.2, "
           "\"intra_bandwidth_gbps\": 25},"
           "{\"name\": \"hourly\", \"gpu\": \"slow\", \"gpus\": 4, \"price_usd_per_kwh\": [%s], "
           "\"intra_bandwidth_gbps\": 25}],"
           "\"jobs\": [" PT_JOB "], \"assumptions\": {\"pue\": 1.2}}",
           hourly, "j", 1e6, 0.0);
  pt_load(text, &sc);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  plan_scenario_free(&sc);
  return 0;
}

static void flat(void **state) {
  (void)state;
  /* 10 GPUs x 250 W x PUE 1.2 x 2 h = 6 kWh; at USD 0.2 = 1.2 */
  assert_true(fabs(plan_energy_kwh(&sc.c, 0, 10, 7200) - 6.0) < 1e-12);
  assert_true(fabs(plan_cost_usd(&sc.c, 0, 10, 100, 7300) - 1.2) < 1e-12);
  assert_true(plan_cost_usd(&sc.c, 0, 10, 50, 50) == 0);
}

static void by_hour(void **state) {
  (void)state;
  /* 4 x 250 W x 1.2 = 1.2 kW. [0.5 h, 3.25 h]: half of hour 0 at 0, hours 1 and 2 at 0.01 and
   * 0.02, a quarter of hour 3 at 0.03: 0.0375 USD per kW */
  assert_true(fabs(plan_cost_usd(&sc.c, 1, 4, 1800, 3 * 3600 + 900) - 1.2 * 0.0375) < 1e-12);
  /* [23 h, 49 h]: hour 23 (0.23), a whole day (0.00 + ... + 0.23 = 2.76), hour 0 again (0) */
  assert_true(fabs(plan_cost_usd(&sc.c, 1, 4, 23 * 3600, 49 * 3600) - 1.2 * 2.99) < 1e-12);
  /* many days at once agree with the same span summed day by day */
  double ten = plan_cost_usd(&sc.c, 1, 4, 5000, 5000 + 10 * 86400), sum = 0;
  for (int d = 0; d < 10; d++)
    sum += plan_cost_usd(&sc.c, 1, 4, 5000 + d * 86400.0, 5000 + (d + 1) * 86400.0);
  assert_true(fabs(ten - sum) < 1e-9);
  assert_true(plan_price_at(&sc.c.regions[1], 25 * 3600 + 1) == 0.01);
}

/* Far from day 0 a second no longer moves t by an hour's step in floating point; the cost is
 * still computed, at once (a loop stepping hour by hour from t would never end). */
static void far_times_end(void **state) {
  (void)state;
  clock_t t0 = clock();
  double usd = plan_cost_usd(&sc.c, 1, 4, 1e20, 1e20 + 1e12);
  assert_true(isfinite(usd) && usd > 0);
  /* 1e12 s is 11,574,074 whole days of 2.76 USD per kW at 1.2 kW, give or take the ends */
  assert_true(fabs(usd - 1.2 * 2.76 * 1e12 / 86400) < 1.2 * 2.76 * 2);
  assert_true(isfinite(plan_cost_usd(&sc.c, 0, 10, 3e17, 3e17 + 1)));
  assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
}

static void placement(void **state) {
  (void)state;
  plan_placement p = {.nseg = 2, .seg = {{0, 3}, {1, 2}}, .stages = 5};
  /* 5 GPUs x 250 W x 1.2 for 1 h = 1.5 kWh; cost: 3 at 0.2 (0.18) + 2 at hour 0's 0 */
  assert_true(fabs(plan_placement_kwh(&sc.c, &p, 3600) - 1.5) < 1e-12);
  assert_true(fabs(plan_placement_cost(&sc.c, &p, 0, 3600) - 0.18) < 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(flat),
      cmocka_unit_test(by_hour),
      cmocka_unit_test(far_times_end),
      cmocka_unit_test(placement),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_ifname.c: TERN_SOCKET_IFNAME's matcher, NCCL_SOCKET_IFNAME's semantics (net/ifname.c):
 * prefixes, comma lists, '^' to exclude, '=' for whole names; and the address it picks on this
 * machine's loopback, or the error naming the interfaces when nothing matches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net/net.h"

#include <string.h>

static void prefixes_lists_exclusion_and_exact_names(void **state) {
  (void)state;
  assert_true(net_ifname_match("eth", "eth0"));
  assert_true(net_ifname_match("eth", "eth10"));
  assert_true(net_ifname_match("eth", "eth"));
  assert_false(net_ifname_match("eth", "et"));
  assert_false(net_ifname_match("eth", "veth0")); /* a prefix, not a substring */
  assert_true(net_ifname_match("ib,eth1", "ib0"));
  assert_true(net_ifname_match("ib,eth1", "eth10"));
  assert_false(net_ifname_match("ib,eth1", "eth0"));
  assert_true(net_ifname_match("=eth0", "eth0"));
  assert_false(net_ifname_match("=eth0", "eth00"));
  assert_false(net_ifname_match("=eth0,ib0", "ib"));
  assert_true(net_ifname_match("=eth0,ib0", "ib0"));
  assert_false(net_ifname_match("^docker,lo", "docker0"));
  assert_false(net_ifname_match("^docker,lo", "lo"));
  assert_true(net_ifname_match("^docker,lo", "eth0"));
  assert_false(net_ifname_match("^=lo", "lo"));
  assert_true(net_ifname_match("^=lo", "lo1"));
  assert_true(net_ifname_match("^", "x"));          /* excluding nothing selects everything */
  assert_false(net_ifname_match("", "eth0"));       /* selecting nothing */
  assert_true(net_ifname_match("eth0,,ib", "ib1")); /* empty entries match nothing */
  assert_false(net_ifname_match(",", "eth0"));
}

static void picks_the_selected_interfaces_address(void **state) {
  (void)state;
  char ip[64], name[64];
  core_err err = {0};
  assert_int_equal(net_ifname_addr("=lo", ip, sizeof ip, name, sizeof name, &err), TERN_OK);
  assert_string_equal(name, "lo");
  assert_string_equal(ip, "127.0.0.1");
  assert_int_equal(net_ifname_addr("nosuchif", ip, sizeof ip, name, sizeof name, &err),
                   TERN_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "TERN_SOCKET_IFNAME='nosuchif' selects no interface"));
  assert_non_null(strstr(err.msg, "lo")); /* the interfaces there are, named */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(prefixes_lists_exclusion_and_exact_names),
      cmocka_unit_test(picks_the_selected_interfaces_address),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

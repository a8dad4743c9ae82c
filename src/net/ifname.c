/* ifname.c: which network interface TCP uses, from TERN_SOCKET_IFNAME, with the semantics of
 * NCCL_SOCKET_IFNAME (NCCL's environment variables page): a comma-separated list of names, each
 * selecting the interfaces whose name begins with it; a leading '^' selects the interfaces that
 * match none of them instead; '=' (after the '^', if any) makes every name match only exactly.
 *   "eth"          eth0, eth1, ...          "=eth0"     eth0 only (not eth00)
 *   "ib,eth1"      ib0, ib1, eth1, eth10    "^docker,lo" all but docker* and lo*
 * A rank listens on the address of the first interface (in the kernel's order) that is up,
 * selected, and has an IPv4 address, else a global IPv6 one; that address is what it publishes
 * to its peers (comm/open.c). Without the variable a rank uses the interface that reaches the
 * store, which is right on a machine with one network and wrong on one with two (a slow
 * management network beside the fast one).
 */
#include "net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* Whether name matches one entry of the comma-separated list (prefixes, or whole names). */
static bool in_list(const char *list, const char *name, bool exact) {
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n > 0 && (exact ? n == len : n <= len) && strncmp(p, name, n) == 0) return true;
    p += n + (p[n] == ',');
  }
  return false;
}

bool net_ifname_match(const char *spec, const char *name) {
  bool exclude = spec[0] == '^';
  spec += exclude;
  bool exact = spec[0] == '=';
  spec += exact;
  return in_list(spec, name, exact) != exclude;
}

/* The address of a, as text, when it is one a peer can reach: IPv4, or IPv6 but link-local. */
static bool usable(const struct ifaddrs *a, char *ip, size_t len) {
  if (a->ifa_addr == NULL || !(a->ifa_flags & IFF_UP)) return false;
  if (a->ifa_addr->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const void *)a->ifa_addr;
    return inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)len) != NULL;
  }
  if (a->ifa_addr->sa_family != AF_INET6) return false;
  const struct sockaddr_in6 *in6 = (const void *)a->ifa_addr;
  char text[INET6_ADDRSTRLEN];
  if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ||
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text) == NULL)
    return false;
  snprintf(ip, len, "[%s]", text); /* as net_local_addr writes it, for "ip:port" */
  return true;
}

tern_status net_ifname_addr(const char *spec, char *ip, size_t ip_len, char *ifname,
                            size_t ifname_len, core_err *err) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) return core_err_errno(err, errno, "listing the network interfaces");
  char seen[256] = "", text[INET6_ADDRSTRLEN + 2];
  size_t at = 0;
  bool found = false;
  for (int family = AF_INET; !found && family != AF_UNSPEC;
       family = family == AF_INET ? AF_INET6 : AF_UNSPEC)
    for (const struct ifaddrs *a = all; a && !found; a = a->ifa_next) {
      if (a->ifa_addr == NULL || a->ifa_addr->sa_family != family || !usable(a, text, sizeof text))
        continue;
      if (family == AF_INET && at < sizeof seen && !strstr(seen, a->ifa_name))
        at += (size_t)snprintf(seen + at, sizeof seen - at, "%s%s", at ? ", " : "", a->ifa_name);
      if (!net_ifname_match(spec, a->ifa_name)) continue;
      snprintf(ip, ip_len, "%s", text);
      snprintf(ifname, ifname_len, "%s", a->ifa_name);
      found = true;
    }
  freeifaddrs(all);
  if (!found)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "TERN_SOCKET_IFNAME='%s' selects no interface that is up with an address "
                        "(this host has: %s)",
                        spec, seen[0] ? seen : "none");
  return TERN_OK;
}

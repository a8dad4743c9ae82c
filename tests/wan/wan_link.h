/* wan_link.h: what the harness's two delayers share (relay.c for TCP, udp_delay.c for UDP): the
 * links file they are given, the clock, and the draws that decide losses (wan_link.c).
 *
 * A links file has one line per destination, "CIDR ONE_WAY_MS LOSS", e.g.
 * "10.77.2.0/24 33.5 0.001" (topo.py writes one per peer); blank lines and # comments are
 * skipped. A destination matches the first line whose CIDR holds it.
 */
#ifndef TERN_TESTS_WAN_LINK_H
#define TERN_TESTS_WAN_LINK_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

#define WAN_MAX_LINKS 256

typedef struct wan_link {
  uint32_t net, mask; /* host order */
  uint64_t delay_ns;  /* one way */
  double loss;        /* per packet (UDP) or per segment (TCP), below 1 */
} wan_link;

typedef struct wan_links {
  wan_link v[WAN_MAX_LINKS];
  int n;
} wan_links;

/* Reads path into out; on a bad line prints "WHO: path:line: ..." to stderr and returns -1. */
int wan_links_read(const char *path, wan_links *out, const char *who);
/* The link to ip (host order), or NULL when no line holds it. */
const wan_link *wan_links_find(const wan_links *l, uint32_t ip);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t wan_now_ns(void);
/* A uniform draw in [0, 1) from *state (xorshift64*; state never 0). */
double wan_uniform(uint64_t *state);

/* The timeout for ppoll until the deadline next (wan_now_ns's clock; UINT64_MAX: none), in *ts;
 * NULL when there is no deadline, as ppoll wants it. */
struct timespec *wan_timeout_until(uint64_t next, uint64_t now, struct timespec *ts);

/* Blocks SIGTERM and SIGINT, puts on_stop on both and leaves in *open the mask to wait with
 * (ppoll): a stop is then let in only inside the wait, so it cannot slip in before it. */
void wan_stop_signals(void (*on_stop)(int), sigset_t *open);

#endif

/* wan_link.c: the links file, the clock and the loss draws of the harness's delayers
 * (wan_link.h). */
#include "wan_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int parse_link(const char *line, wan_link *out) {
  char cidr[64];
  int bits;
  double ms, loss;
  struct in_addr a;
  if (sscanf(line, "%63[0-9.]/%d %lf %lf", cidr, &bits, &ms, &loss) != 4) return -1;
  if (inet_pton(AF_INET, cidr, &a) != 1 || bits < 0 || bits > 32) return -1;
  if (!(ms >= 0 && ms <= 60000) || !(loss >= 0 && loss < 1)) return -1;
  out->mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
  out->net = ntohl(a.s_addr) & out->mask;
  out->delay_ns = (uint64_t)(ms * 1e6);
  out->loss = loss;
  return 0;
}

int wan_links_read(const char *path, wan_links *out, const char *who) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno)), -1;
  char line[256];
  int lineno = 0, rc = 0;
  out->n = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    if (out->n == WAN_MAX_LINKS || parse_link(line, &out->v[out->n]) != 0) {
      fprintf(stderr, "%s: %s:%d: not 'CIDR ONE_WAY_MS LOSS' (at most %d, loss below 1): %s", who,
              path, lineno, WAN_MAX_LINKS, line);
      rc = -1;
    }
    out->n++;
  }
  fclose(f);
  return rc;
}

const wan_link *wan_links_find(const wan_links *l, uint32_t ip) {
  for (int i = 0; i < l->n; i++)
    if ((ip & l->v[i].mask) == l->v[i].net) return &l->v[i];
  return NULL;
}

uint64_t wan_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double wan_uniform(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  *state = x;
  return (double)((x * 2685821657736338717u) >> 11) * 0x1.0p-53;
}

void wan_stop_signals(void (*on_stop)(int), sigset_t *open) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, open);
  signal(SIGTERM, on_stop);
  signal(SIGINT, on_stop);
}

struct timespec *wan_timeout_until(uint64_t next, uint64_t now, struct timespec *ts) {
  if (next == UINT64_MAX) return NULL;
  uint64_t wait = next > now ? next - now : 0;
  *ts = (struct timespec){.tv_sec = (time_t)(wait / 1000000000u),
                          .tv_nsec = (long)(wait % 1000000000u)};
  return ts;
}

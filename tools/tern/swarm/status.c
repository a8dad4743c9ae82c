/* status.c: `tern swarm status`, the live peers of a run as their DHT status records say
 * (src/swarm/status.c): peer, address, epoch, samples/s, round, last round's group size and the
 * record's age, then the groups of the last rounds. It reads through its own DHT node and
 * takes no part in the run (src/swarm/observe.c).
 */
#include "tern/cmd.h"

#include "swarm/swarm.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_MAX_PEERS 256

static int usage(FILE *out) {
  fprintf(out,
          "usage: tern swarm status --join HOST:PORT [--join HOST:PORT]... --run-id NAME\n"
          "                         [--key SECRET] [--wait S] [--insecure]\n\n"
          "Lists the live peers of the run: each peer's epoch, samples per second, round and\n"
          "the size of its last round's group, from the status records the peers keep on the\n"
          "DHT (tern_swarm_publish_status). A record is live for TERN_SWARM_STATUS_TTL seconds\n"
          "(default 30; set it as the peers have it) after the peer last refreshed it, so a\n"
          "peer that died leaves the listing within that time. --key (or TERN_KEY) is needed\n"
          "for a keyed run. --wait S (default 5): how long to look for records.\n");
  return out == stdout ? 0 : 2;
}

static int by_address(const void *a, const void *b) {
  const swarm_status *x = a, *y = b;
  int c = strcmp(x->host, y->host);
  return c ? c : x->port - y->port;
}

static void print(const swarm_status *s, int n, double ttl) {
  double now = core_wall_s();
  printf("%d live peer%s (records refreshed in the last %.0f s)\n", n, n == 1 ? "" : "s", ttl);
  if (n)
    printf("%-16s  %-21s  %8s  %10s  %6s  %5s  %6s\n", "peer", "address", "epoch", "samples/s",
           "round", "group", "age");
  int groups[SWARM_MAX_GROUP + 1] = {0};
  for (int i = 0; i < n; i++) {
    char addr[SWARM_HOST_LEN + 8];
    snprintf(addr, sizeof addr, "%s:%d", s[i].host, s[i].port);
    printf("%016llx  %-21s  %8llu  %10.1f  %6u  %5d  %5.1fs\n", (unsigned long long)s[i].id, addr,
           s[i].epoch, s[i].samples_per_s, s[i].round, s[i].group_size, now - s[i].published);
    groups[s[i].group_size]++;
  }
  /* A group of k peers shows in k records: k records of size k are one group. */
  printf("last rounds' groups:");
  bool any = false;
  for (int k = SWARM_MAX_GROUP; k >= 1; k--)
    if (groups[k]) {
      printf("%s %d of %d%s", any ? "," : "", (groups[k] + k - 1) / k, k,
             groups[k] % k ? " (partly seen)" : "");
      any = true;
    }
  printf("%s\n", any ? "" : " none yet");
}

int cmd_swarm_status(int argc, char **argv) {
  static const struct option longs[] = {
      {"join", 1, 0, 'j'},     {"run-id", 1, 0, 'r'}, {"key", 1, 0, 'k'}, {"wait", 1, 0, 'w'},
      {"insecure", 0, 0, 'I'}, {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
  const char *boot[TERN_SWARM_MAX_BOOTSTRAP], *run = NULL, *key = NULL;
  int nboot = 0, c;
  double wait = 5;
  bool insecure = false;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case 'j':
      if (nboot == TERN_SWARM_MAX_BOOTSTRAP)
        return cmd_usage_error("swarm status", "too many --join");
      boot[nboot++] = optarg;
      break;
    case 'r':
      run = optarg;
      break;
    case 'k':
      key = optarg;
      break;
    case 'w':
      if (!core_parse_seconds(optarg, &wait) || wait <= 0 || wait > 600)
        return cmd_usage_error("swarm status", "bad --wait %s (seconds, up to 600)", optarg);
      break;
    case 'I':
      insecure = true;
      break;
    case 'h':
      return usage(stdout);
    default:
      return usage(stderr);
    }
  }
  if (!nboot || !run) return cmd_usage_error("swarm status", "--join and --run-id are needed");
  core_err err = {0};
  double ttl;
  if (swarm_status_ttl(&ttl, &err) != TERN_OK)
    return cmd_usage_error("swarm status", "%s", err.msg);
  tern_swarm *sw;
  if (swarm_observe(&sw, run, key, boot, nboot, insecure, &err) != TERN_OK) {
    fprintf(stderr, "tern swarm status: %s\n", err.msg);
    return 1;
  }
  /* A read right after the start may come before the DHT node has its routes: read again
   * until two reads in a row add no peer, or --wait is over (each read lists the live ones). */
  swarm_status *best = calloc(2 * STATUS_MAX_PEERS, sizeof *best), *now = best + STATUS_MAX_PEERS;
  int nbest = 0, stable = 0;
  uint64_t deadline = core_deadline_after(wait);
  while (best && stable < 2 && core_now_ns() < deadline) {
    double left = (double)(deadline - core_now_ns()) / 1e9;
    int n = swarm_status_read(sw, ttl, left < 1 ? left : 1, now, STATUS_MAX_PEERS);
    stable = n > nbest || !nbest ? 0 : stable + 1;
    if (n >= nbest) {
      memcpy(best, now, (size_t)n * sizeof *now);
      nbest = n;
    }
    if (!n) core_sleep_ms(200);
  }
  tern_swarm_leave(sw);
  if (!best) {
    fprintf(stderr, "tern swarm status: no memory\n");
    return 1;
  }
  qsort(best, (size_t)nbest, sizeof *best, by_address);
  print(best, nbest, ttl);
  free(best);
  return 0;
}

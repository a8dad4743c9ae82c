/* limit.c: what the listener (listen.c) takes from one source address, and how much it says
 * about what it refuses.
 *
 * A process without the key cannot get past the handshake, but it can still open connections
 * as fast as the kernel accepts them: each would take a handshake slot, a MAC check and, before
 * these limits, a warning line (a flood measured ~10,000 lines). So, per source address (the
 * table holds the SWARM_LIMIT_SOURCES most recent; memory is fixed):
 *   - connections: a token bucket of SWARM_CONN_RATE a second (a burst of as many); past it a
 *     connection is closed unread;
 *   - refusals (a failed handshake, a bad first message): past SWARM_REFUSALS_MAX in one second
 *     the source is blocked until the next second ends, its connections closed unread;
 *   - handshakes in progress: at most SWARM_PENDING_PER_SOURCE of the listener's slots, so that
 *     one source cannot take them all and keep the others out.
 * Refusals are logged SWARM_LOG_LINES times a second at most; the rest are counted and told in
 * one line when the second is over. An honest peer opens a few connections per round to each
 * member of its group; the rates are far above that (docs/SWARM.md, "Security").
 */
#include "swarm/swarm.h"

#include <string.h>

#define NS 1000000000ull

static void source_of(const char *from, char *out) {
  const char *colon = strrchr(from, ':');
  size_t n = colon ? (size_t)(colon - from) : strlen(from);
  n = CORE_MIN(n, (size_t)SWARM_LIMIT_HOST - 1);
  memcpy(out, from, n);
  out[n] = 0;
}

static swarm_source *find(swarm_limits *l, const char *from, uint64_t now) {
  char host[SWARM_LIMIT_HOST];
  source_of(from, host);
  swarm_source *oldest = &l->src[0];
  for (int i = 0; i < SWARM_LIMIT_SOURCES; i++) {
    swarm_source *s = &l->src[i];
    if (s->used && strcmp(s->host, host) == 0) return s;
    if (!s->used || (oldest->used && s->seen_ns < oldest->seen_ns)) oldest = s;
  }
  *oldest =
      (swarm_source){.used = true, .tokens = SWARM_CONN_RATE, .seen_ns = now, .window_ns = now};
  memcpy(oldest->host, host, sizeof host);
  return oldest;
}

bool swarm_limit_admit(swarm_limits *l, const char *from, uint64_t now) {
  swarm_source *s = find(l, from, now);
  double dt = (double)(now - s->seen_ns) / 1e9;
  s->seen_ns = now;
  s->tokens = CORE_MIN((double)SWARM_CONN_RATE, s->tokens + dt * SWARM_CONN_RATE);
  bool ok = now >= s->blocked_until_ns && s->tokens >= 1 && s->pending < SWARM_PENDING_PER_SOURCE;
  if (ok) {
    s->tokens -= 1;
    s->pending++;
  } else {
    l->dropped++;
  }
  return ok;
}

void swarm_limit_done(swarm_limits *l, const char *from, bool refused, uint64_t now) {
  swarm_source *s = find(l, from, now);
  if (s->pending > 0) s->pending--;
  if (!refused) return;
  if (now - s->window_ns >= NS) {
    s->window_ns = now;
    s->refusals = 0;
  }
  if (++s->refusals == SWARM_REFUSALS_MAX) {
    s->blocked_until_ns = s->window_ns + 2 * NS;
    CORE_WARN("swarm: %s: %d refused connections in a second; its connections are closed unread "
              "for the next %.1f s",
              s->host, SWARM_REFUSALS_MAX, (double)(s->blocked_until_ns - now) / 1e9);
  }
}

bool swarm_limit_log(swarm_limits *l, uint64_t now) {
  swarm_limit_tick(l, now);
  if (l->lines < SWARM_LOG_LINES) {
    l->lines++;
    return true;
  }
  l->unlogged++;
  return false;
}

void swarm_limit_tick(swarm_limits *l, uint64_t now) {
  if (now - l->log_window_ns < NS) return;
  if (l->unlogged || l->dropped)
    CORE_WARN("swarm: in the last second, %llu more refusals not logged one by one and %llu "
              "connections closed unread (rate limits, docs/SWARM.md)",
              (unsigned long long)l->unlogged, (unsigned long long)l->dropped);
  l->log_window_ns = now;
  l->lines = 0;
  l->unlogged = l->dropped = 0;
}

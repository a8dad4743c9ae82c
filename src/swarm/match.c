/* match.c: finding this round's group through the DHT, then assembling it.
 *
 * Round r's group key hashes the run, r, the axis a = r mod d and every coordinate but a: the
 * peers that share it are one line of the Moshpit grid. Each writes its record (record.c) under
 * that key and reads the key until it has seen target peers, or at least min and no new one for
 * a moment, or half the matching time has passed since the last new one (or its own record).
 *
 * The lowest id seen leads; everyone else sends it a join. Leadership only ever points to a
 * lower id, so two peers never wait on each other: a peer asked to lead that follows someone
 * else answers with a redirect to its own leader (or a reject once its group is closed). The
 * leader closes the group when all it saw have joined, or at the deadline, and sends every
 * member the list, sorted by id. Fewer than min members: the round's pool (swarm_match), and
 * alone if nobody is there either.
 */
#include "swarm/swarm.h"

#include "core/bytes.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FOLLOW_HOPS 4
/* Matching's deadlines, as fractions of the matching time T (--match-timeout): a peer reads its
 * key for DISCOVER_QUIET T after the last news; the leader closes its group at LEAD_CLOSE T from
 * the start (and LEAD_AFTER_FOUND T after discovery), before the followers give up at T (and
 * FOLLOW_AFTER_FOUND T after discovery), so that a list sent at the last moment still finds
 * them waiting: a line takes 1.5 T at most. */
#define DISCOVER_QUIET 0.5
#define LEAD_CLOSE 0.8
#define LEAD_AFTER_FOUND 0.3
#define FOLLOW_AFTER_FOUND 0.5
/* How long a follower sent on to a dead leader waits before it asks again: the one it asks needs
 * a connect timeout or a refusal to find that leader dead (SWARM_REFUSED_SECONDS). */
#define DEAD_LEADER_RETRY_MS 100
/* A peer that was alone on its key last time reads it this long (and twice at least) before it
 * goes on: a partner already there is seen (a loopback get takes a millisecond or two, a WAN
 * one a few round trips, and the matching time's DISCOVER_QUIET still bounds the read); a
 * partner that comes after sends a join that is turned away as late (it then waits a round
 * ahead, round_ahead) and is expected here next time (swarm_match). Not a fraction of T: a
 * lonely peer that spent 0.1 T per lonely round fell behind its partners of the other axes
 * by that much each time. */
#define LONELY_GLANCE_NS 50000000ull
/* How long a leader's question "has this round closed for you?" may take (lead()). */
#define CLOSED_ASK_SECONDS 1.5
/* How long a line member that did not come may take to answer that it is alive (keep_line): a
 * stalled process's kernel still accepts the connection, and only this ends the wait; a dead
 * one's refuses at once. At least this, and a settling time on a slow network (alive_ask_s). */
#define ALIVE_ASK_SECONDS 0.5

typedef struct seen {
  tern_swarm *sw;
  uint32_t round;
  const uint8_t *gkey;
  swarm_member m[SWARM_MAX_GROUP];
  uint64_t stamp[SWARM_MAX_GROUP]; /* of the record m[i] came from */
  int n;
  uint8_t bad[16][16]; /* digests of refused records, so each is logged once */
  int nbad;
  /* Leaders found unreachable or gone from the key: their records up to that stamp are
   * ignored (a newer one, in the pool, is the peer back again). */
  uint64_t dead[SWARM_MAX_GROUP], dead_stamp[SWARM_MAX_GROUP];
  int ndead;
  bool pool; /* matching in the round-free pool: the last round's partners are ignored too */
  uint32_t group_round; /* the round the group runs in: the latest of its members' (pool) */
  bool late; /* alone, and a peer asked had closed this round already (lonely_moved_on) */
  struct dht_op_token *watch;   /* the key's watch (dht.c); NULL: read by gets */
  unsigned long long watch_pos; /* how far the watched values have been read */
  int enough; /* members (valid, distinct, this peer included) after which a get may end */
  uint64_t away[SWARM_MAX_GROUP]; /* line members of last time that closed this round already */
  int naway;
} seen;

/* Whether id, a line member of last time, has closed this round already (line_absent). */
static bool is_away(const seen *s, uint64_t id) {
  for (int i = 0; i < s->naway; i++)
    if (s->away[i] == id) return true;
  return false;
}

static bool is_dead(const seen *s, uint64_t id, uint64_t stamp) {
  for (int i = 0; i < s->ndead; i++)
    if (s->dead[i] == id && stamp <= s->dead_stamp[i]) return true;
  return false;
}

/* The stamp of the record id was seen by, or UINT64_MAX (every record of it) if none. */
static uint64_t stamp_of(const seen *s, uint64_t id) {
  for (int i = 0; i < s->n; i++)
    if (s->m[i].id == id) return s->stamp[i];
  return UINT64_MAX;
}

static bool in_members(const swarm_member *m, int n, uint64_t id) {
  for (int i = 0; i < n; i++)
    if (m[i].id == id) return true;
  return false;
}

/* Whether id was in this peer's last whole all-reduce (sw->partners): the pool avoids it. */
static bool last_partner(const tern_swarm *sw, uint64_t id) {
  for (int i = 0; i < sw->npartners; i++)
    if (sw->partners[i] == id) return true;
  return false;
}

/* Ignores id's records up to stamp from now on. */
static void note_gone(seen *s, uint64_t id, uint64_t stamp) {
  for (int i = 0; i < s->ndead; i++)
    if (s->dead[i] == id) {
      s->dead_stamp[i] = CORE_MAX(s->dead_stamp[i], stamp);
      return;
    }
  if (s->ndead < SWARM_MAX_GROUP) {
    s->dead[s->ndead] = id;
    s->dead_stamp[s->ndead++] = stamp;
  }
}

static void note_dead(seen *s, uint64_t id) {
  note_gone(s, id, stamp_of(s, id));
}

/* The wall clock in ms, growing with each call: a peer's records under a key are ordered by it,
 * the newest standing for the peer (records.c). */
static uint64_t next_stamp(tern_swarm *sw) {
  uint64_t now = (uint64_t)(core_wall_s() * 1e3);
  sw->stamp_ms = CORE_MAX(now, sw->stamp_ms + 1);
  return sw->stamp_ms;
}

void swarm_group_key(const tern_swarm *sw, uint32_t round, uint8_t out[32]) {
  int axis = (int)(round % (uint32_t)sw->ndims);
  uint8_t buf[32 + 8 + 4 * TERN_SWARM_MAX_DIMS];
  size_t n = 0;
  memcpy(buf, sw->run_hash, 32);
  n += 32;
  core_put32(buf + n, round);
  core_put32(buf + n + 4, (uint32_t)axis);
  n += 8;
  for (int i = 0; i < sw->ndims; i++, n += 4)
    core_put32(buf + n, i == axis ? 0xffffffffu : (uint32_t)sw->coords[i]);
  crypto_generichash(out, 32, buf, n, (const uint8_t *)"tern-swarm-group", 16);
}

static uint64_t key_tag(const uint8_t *gkey, uint64_t leader) {
  uint8_t buf[40], h[8];
  memcpy(buf, gkey, 32);
  core_put64(buf + 32, leader);
  crypto_generichash(h, sizeof h, buf, sizeof buf, NULL, 0);
  return core_get64(h);
}

/* In the round-free pool every visit of a peer leaves a record: the newest per peer stands,
 * and only while it is live (its ttl not over, not a withdrawal). Removes or updates s->m. */
static bool pool_record(seen *s, const swarm_record *r) {
  int at = -1;
  for (int i = 0; i < s->n; i++)
    if (s->m[i].id == r->m.id) at = i;
  if (at >= 0 && s->stamp[at] >= r->stamp_ms) return false; /* older news */
  double now_ms = core_wall_s() * 1e3;
  bool live = r->ttl_ms > 0 && (double)r->stamp_ms + r->ttl_ms > now_ms;
  /* A watch brings a key's values in any order: a withdrawal seen first must still hide the
   * record it withdraws (a lonely peer led a peer that had left, and waited for it). */
  if (!live && r->m.id != s->sw->id) note_gone(s, r->m.id, r->stamp_ms);
  if (at >= 0 && r->m.id != s->sw->id && !live) { /* withdrawn or expired since */
    s->n--;
    s->m[at] = s->m[s->n];
    s->stamp[at] = s->stamp[s->n];
    return false;
  }
  if (at >= 0 && live) {
    s->m[at] = r->m;
    s->stamp[at] = r->stamp_ms;
  }
  return live && at < 0;
}

/* Takes a record read from the key; true once the get may end (seen.enough). */
static bool on_record(const uint8_t *v, size_t len, void *arg) {
  seen *s = arg;
  swarm_record r;
  core_err err = {0};
  if (swarm_record_decode(v, len, s->pool ? SWARM_ANY_ROUND : s->round, s->gkey,
                          s->sw->keyed ? s->sw->key : NULL, &r, &err) != TERN_OK) {
    uint8_t d[16];
    crypto_generichash(d, sizeof d, v, CORE_MIN(len, (size_t)SWARM_RECORD_MAX), NULL, 0);
    bool logged = false;
    for (int i = 0; i < s->nbad; i++)
      logged |= memcmp(s->bad[i], d, 16) == 0;
    if (!logged && s->nbad < 16) memcpy(s->bad[s->nbad++], d, 16);
    if (!logged) CORE_WARN("swarm: round %u: ignored a DHT record: %s", s->round, err.msg);
    return s->n >= s->enough;
  }
  swarm_member m = r.m;
  bool skip = swarm_departed(s->sw, m.id) || is_dead(s, m.id, r.stamp_ms) ||
              (s->pool && last_partner(s->sw, m.id));
  if (!skip && s->pool) skip = !pool_record(s, &r);
  for (int i = 0; i < s->n && !skip; i++)
    skip |= s->m[i].id == m.id;
  if (!skip && s->n < SWARM_MAX_GROUP) {
    s->stamp[s->n] = r.stamp_ms;
    s->m[s->n++] = m;
  }
  return s->n >= s->enough;
}

static int by_id(const void *a, const void *b) {
  uint64_t x = ((const swarm_member *)a)->id, y = ((const swarm_member *)b)->id;
  return x < y ? -1 : x > y;
}

/* Sorts the peers seen by id, each with the stamp of its record (stamp_of, is_dead and the
 * leader's wait read them together: sorting the members alone gave them each other's stamps). */
static void sort_seen(seen *s) {
  for (int i = 1; i < s->n; i++)
    for (int j = i; j > 0 && s->m[j - 1].id > s->m[j].id; j--) {
      swarm_member m = s->m[j];
      uint64_t t = s->stamp[j];
      s->m[j] = s->m[j - 1];
      s->stamp[j] = s->stamp[j - 1];
      s->m[j - 1] = m;
      s->stamp[j - 1] = t;
    }
}

/* Alone: OpenDHT holds a node's gets and puts back while it counts itself "connecting": a
 * first peer that only ever heard others' pings, or a node whose answering nodes died (a killed
 * group member, say). Pings go out regardless, and one answer makes it connected again: ping
 * the bootstrap peers, the last group (a member's DHT port is its TCP port) and the peers that
 * said hello. */
static void reconnect(tern_swarm *sw) {
  for (int i = 0; i < sw->nbootstrap; i++) {
    char host[NET_HOST_LEN];
    int port;
    if (net_parse_addr(sw->bootstrap[i], host, sizeof host, &port, false, NULL) == TERN_OK)
      swarm_dht_ping(sw, host, port);
  }
  for (int i = 0; i < sw->last_group_n; i++)
    if (sw->last_group[i].id != sw->id)
      swarm_dht_ping(sw, sw->last_group[i].host, sw->last_group[i].port);
  swarm_member h[CORE_ARRAY_LEN(sw->hellos)];
  pthread_mutex_lock(&sw->mu);
  size_t nh = CORE_MIN(sw->nhellos, CORE_ARRAY_LEN(sw->hellos));
  memcpy(h, sw->hellos, sizeof h);
  pthread_mutex_unlock(&sw->mu);
  for (size_t i = 0; i < nh; i++)
    swarm_dht_ping(sw, h[i].host, h[i].port);
}

/* How long "nobody new for a moment" is, once min_group peers are in: half a second, or a tenth
 * of a long matching time (at most 2 s). Across regions a record takes several round trips of
 * DHT hops to show: on the WAN benchmark, with half a second, a group of 4 closed on 3 while
 * the fourth peer's record was on its way, and that peer averaged alone. */
static double settle_s(const swarm_match_opts *o) {
  return CORE_MAX(CORE_MIN(0.5, o->match_timeout / 4), CORE_MIN(2.0, o->match_timeout / 10));
}

/* An answer to "are you alive?" takes two round trips (the connection, then the question): with
 * half a second flat, a leader in Tokyo dropped a live member in Frankfurt (a 223 ms round trip)
 * as silent, the group of 4 fell below its minimum and every peer averaged alone
 * (docs/SWARM_TRAINING.md, "the comm-bound regime"). The matching time is the user's measure of
 * their network, as for settle_s. */
static double alive_ask_s(const tern_swarm *sw) {
  return CORE_MAX(ALIVE_ASK_SECONDS, sw->alive_ask_s);
}

static bool lonely_moved_on(tern_swarm *sw, seen *s, bool *behind);
static int line_absent(tern_swarm *sw, seen *s);

/* On a line: whether every peer it held last time (sw->line) is among those seen. The count
 * alone is not enough: with a newcomer there and one of last time not yet, a column of the 3x3
 * grid with 7 peers closed without the one of last time, which came a moment later, was told
 * "too late" and jumped away (the lines then fell out of step). */
static bool line_all_here(const tern_swarm *sw, const seen *s) {
  if (s->pool) return true;
  int axis = (int)(s->round % (uint32_t)sw->ndims);
  for (int i = 0; i < sw->line_seen[axis]; i++) {
    uint64_t id = sw->line[axis][i].id;
    if (!is_away(s, id) && !in_members(s->m, s->n, id)) return false;
  }
  return true;
}

/* Whether a peer reading its line may ask if the others have moved on (lonely_moved_on): alone
 * on a grid's line, not in the pool. */
static bool lonely_may_ask(const swarm_match_opts *o, const seen *s) {
  return s->n == 1 && !s->pool && o->random_groups == 0;
}

static unsigned hellos_heard(tern_swarm *sw) {
  pthread_mutex_lock(&sw->mu);
  unsigned n = sw->nhellos;
  pthread_mutex_unlock(&sw->mu);
  return n;
}

/* Reads the key until enough peers are seen (see the top of the file): until deadline_ns at
 * most, and no longer than quiet_ns after the last news: a new peer on the key, or a hello from
 * a peer that joined the swarm (listen.c). A hello counts because the first peers of a swarm
 * wait for the rest to start: under TSan beside other tests the peers of the gossip and
 * forged-records tests started 3.6 s apart, and the first gave up its round 0 at 4 s, seeing
 * nobody on its key, while the others were joining it. */
static void read_key(tern_swarm *sw, const swarm_match_opts *o, seen *s, uint64_t quiet_ns,
                     uint64_t deadline_ns) {
  double settle = settle_s(o);
  uint64_t start = core_now_ns(), last_growth = start, last_news = start;
  unsigned heard = hellos_heard(sw);
  uint64_t ask_at = start + (uint64_t)(settle * 1e9);
  /* A get waits for every node it asked, a killed peer's until this cap, and sees only the
   * records there when it began: on a line whose members are known, a short cap is a prompt
   * second look. With 0.25 s, every round after a kill took a quarter of a second
   * (bench/swarm/pace.sh). Across regions a get takes DHT round trips; a long matching time
   * (the WAN's) gives it the quarter second back. Not knowing whom to expect (a first round,
   * random groups), a slow node (a sanitizer build under load) keeps the quarter second: with
   * 50 ms there, the gossip test under ASan left a peer unpaired. A peer alone on its line
   * last time glances at it (below): two gets of a quarter second each, held by a killed
   * peer's node, made the glance half a second (`tern demo`). */
  bool known = o->expect >= o->min_group || o->expect == 1 || s->watch;
  double get_s = known ? CORE_MIN(0.25, CORE_MAX(0.02, o->match_timeout / 80)) : 0.25;
  /* A get ends early only when what it found ends the reading (the first two breaks below):
   * a get cut short on fewer members would not wait for the remote nodes that hold the rest. */
  s->enough = o->expect >= o->min_group ? CORE_MIN(o->expect, o->target_group) : o->target_group;
  /* Expected here: the line's members of last time, less those found gone (line_absent). */
  int expect = o->expect;
  bool absent_asked = false;
  /* When the line's missing members of last time are asked (again) whether they are coming. */
  uint64_t absent_at = start + LONELY_GLANCE_NS, alone_until = 0;
  int axis = (int)(s->round % (uint32_t)sw->ndims);
  for (int tries = 0;; tries++) {
    int before = s->n;
    /* The pool is watched and read locally; a get now and then, and at the first look, is the
     * safety net there (a listen that has not reached a node yet: after a kill, a new listen
     * brought the records already there only after half a second, `tern demo`). */
    if (s->watch) swarm_dht_watched(sw, &s->watch_pos, on_record, s);
    uint64_t got = core_now_ns();
    if (!s->watch || tries % 25 == 0) swarm_dht_get(sw, s->gkey, get_s, on_record, s);
    if (tries == 2 && s->n == 1) reconnect(sw); /* alone so far: maybe OpenDHT holds us back */
    uint64_t now = core_now_ns();
    bool waited = !s->watch && (double)(now - got) >= 0.8e9 * get_s;
    unsigned h = hellos_heard(sw);
    if (s->n > before) last_growth = now;
    if (s->n > before || h != heard) last_news = now;
    heard = h;
    if (s->n >= o->target_group || now >= deadline_ns || now - last_news >= quiet_ns) {
      /* Alone to the end: asked once more before it leaves the line (the asks below come a
       * settling time apart, and the reading may end first). Asked only a settling time in,
       * the last of 7 peers on 3x3 heard that the others were one round on (a jump needs them
       * a cycle on), read its row out (T/2) and then met nobody: by its end they can tell. */
      if (lonely_may_ask(o, s)) s->late = lonely_moved_on(sw, s, NULL);
      break;
    }
    /* Everyone who was here last time is here again: nobody else is coming (a peer new to the
     * line is seen next time). */
    if (o->expect >= o->min_group && s->n >= expect && s->n >= o->min_group && line_all_here(sw, s))
      break;
    /* Every member of last time gone, and nobody else here yet: a settling time for peers new
     * to the line (below). */
    if (alone_until && s->n == 1 && now >= alone_until) break;
    /* Some of them still missing after a glance: ask them at once rather than wait for them.
     * A killed one refuses the connection, a stalled one stays silent for alive_ask_s:
     * either is dropped from the line and not waited for, here or next time; one that has
     * closed this round is not coming to it either. Waiting instead cost a settling time
     * (a group of 3 of 4), or half the matching time and a second alone (a pair), in the round
     * after a kill (bench/swarm/pace.sh, `tern demo`). */
    bool line_expected = o->expect >= o->min_group;
    /* Asked again every settling time while they have not come: one that said it was coming
     * may have died since (on the WAN kill test a peer waited 10 s, half the matching time, for
     * a region partner killed after answering). */
    if (now >= absent_at && !s->pool && o->random_groups == 0 &&
        (expect > s->n || (line_expected && !line_all_here(sw, s)))) {
      absent_asked = true;
      absent_at = now + (uint64_t)(settle * 1e9);
      expect -= line_absent(sw, s);
      /* By id, not by count: a newcomer to the line does not stand in for a member of last time
       * that said it is coming. Counting, a cross-region line of the WAN kill run closed on its
       * leader, one member of last time and a survivor new to the line, while the other member
       * of last time, whose record had not shown yet, was on its way: it was told "too late" and
       * skipped two rounds. Alone, and nobody of last time coming: on a grid nobody else
       * belongs to this line, and it goes on (to the pool) at once; on a cross-region line
       * survivors of other regions move to this place when they lose their region partners
       * (region.c), and it reads a settling time more for them. Leaving at once, a survivor of
       * the WAN kill test whose line-mates of last time had died went to the pool while the
       * three others were gathering on its line. */
      bool newcomers = swarm_region_across(sw, s->round) && s->n == 1;
      if (s->late || (s->n >= expect && !newcomers && line_all_here(sw, s))) break;
      if (newcomers && expect <= 1 && !alone_until) alone_until = now + (uint64_t)(settle * 1e9);
    }
    /* Its line not known (a hello since: a newcomer may be on it), alone a settling time in,
     * and it knows who was on the line last time: it asks them, as it asks expected ones. None
     * of them coming (dead, silent, or a round on), the settling time was the newcomer's chance.
     * Reading on to half the matching time, the bootstrap peer of the WAN benchmark's kill run
     * (its hellos heard after its first reading) sat 9.4 s alone on its region line after its
     * partner died, while the other survivors went on without it. */
    if (lonely_may_ask(o, s) && o->expect == 0 && sw->line_seen[axis] > 1 &&
        (double)(now - start) / 1e9 >= settle && now >= absent_at) {
      absent_asked = true;
      absent_at = now + (uint64_t)(settle * 1e9);
      line_absent(sw, s);
      if (s->late || sw->line_seen[axis] == 1) break;
    }
    /* Alone here last time (its partners dead, or the grid not full): a glance, not a wait. */
    if (o->expect == 1 && s->n == 1 && tries >= 1 && now - start >= LONELY_GLANCE_NS) break;
    /* A member of last time that said it is coming (asked above) and has not shown yet gets a
     * second settling time: on the WAN kill run, a cross-region line's leader closed on a
     * settling time with a newcomer while the two members of last time, finishing a longer
     * all-reduce of the round before, came 0.5-1 s later: the four survivors split into pairs
     * for that round. */
    bool coming = absent_asked && line_expected && !line_all_here(sw, s);
    if (s->n >= o->min_group && (double)(now - last_growth) / 1e9 >= settle * (coming ? 2 : 1))
      break;
    /* Still alone after a settling time: those it would meet may have moved on already (a
     * peer that lost time, or started after the others). Asked again every settling time while
     * alone: a peer that started after the others asks before they are far enough on to tell
     * (lonely_moved_on), and with one question only, the last of 7 peers on 3x3 read its row
     * out (T/2) while the others ran their 16 rounds. */
    if (lonely_may_ask(o, s) && now >= ask_at) {
      ask_at = core_now_ns() + (uint64_t)(settle * 1e9);
      bool behind = false;
      if ((s->late = lonely_moved_on(sw, s, &behind))) break;
      /* Alone on a cross-region line while a peer asked has not reached this round yet (a
       * longer all-reduce of the round before): it is coming here, where the survivors of
       * regions that lost peers gather (region.c), and that is news; the reading goes on, to
       * the matching time at most. In the full-size WAN kill run a survivor alone on line 0
       * left it after T/2 (10 s), 0.3 s before the three others came, whose group of 3 had
       * averaged 64 MiB for 10 s, and never met them again. */
      if (behind && swarm_region_across(sw, s->round)) last_news = core_now_ns();
    }
    /* Each get is a DHT search: poll gently. A watched key is read locally. A get that ran to
     * its cap (waiting for a dead node's answer) was gentle already: sleeping after it too,
     * each round after a kill that missed the last record on its first get took 40 ms more
     * instead of 20 (bench/swarm/pace.sh). */
    if (!waited) core_sleep_ms(s->watch ? 10 : tries < 3 ? 20 : 60);
  }
  sw->read_hellos = heard;
}

/* Writes this peer's record under the key, then reads it for half the matching time after the
 * last new peer it saw (the whole matching time at most). Peers reach a round at different
 * times: a line's first and last member as far apart as their rows' starts when the rows
 * finished the round before at different times. A window from this peer's own arrival left a
 * 3x3 grid under TSan with no line in round 1: its rows had started 4 s apart, so each column's
 * first member read for 8 s (--match-timeout 16), saw the second at 4 s and went to the pool
 * just before the third came, and the other two then waited for it until their deadline. A
 * peer that keeps appearing shows the line is alive; a dead line still ends in half the time. */
static void discover(tern_swarm *sw, const swarm_match_opts *o, seen *s, uint64_t start_ns,
                     double timeout_s) {
  uint8_t rec[SWARM_RECORD_MAX];
  /* The record stands while this peer may still be here: a matching takes 1.5 T at most. */
  uint64_t stamp = next_stamp(sw);
  size_t len = swarm_record_encode(&sw->self, s->round, stamp, (uint32_t)(timeout_s * 1.5e3),
                                   s->gkey, sw->keyed ? sw->key : NULL, rec);
  swarm_dht_put(sw, s->gkey, rec, len);
  s->stamp[s->n] = stamp;
  s->m[s->n++] = sw->self;
  /* In the pool a lonely peer waits a settling time for anyone (of any round) to come: long
   * enough for the lonely peers of lines in step to meet, short enough that the line that
   * expects it next is not held up. */
  double quiet = s->pool ? settle_s(o) : timeout_s * DISCOVER_QUIET;
  read_key(sw, o, s, (uint64_t)(quiet * 1e9), start_ns + (uint64_t)(timeout_s * 1e9));
}

/* A join for this key: a line's key names its round, so its tag does too; the pool's is the
 * same for every round, and joins from peers of any round are taken there. */
static bool is_join(const swarm_conn *c, void *arg) {
  const uint64_t *gtag = arg;
  return c->hdr.type == SWARM_JOIN && c->hdr.tag == *gtag;
}

static void reply(tern_swarm *sw, int fd, uint8_t type, uint32_t round, const uint8_t *payload,
                  size_t len) {
  swarm_hdr h = {.type = type, .round = round, .sender = sw->id, .len = len};
  core_err err = {0};
  swarm_send(fd, &h, payload, core_deadline_after(2), "a joining peer", &err);
}

/* Told that a peer's first open round is `open`: the next round to run (a bounded jump, and
 * never past the run's last round: peers that have finished report the round after it). */
static void catch_up_to(tern_swarm *sw, uint32_t open) {
  open = CORE_MIN(open, sw->last_round);
  if (open > sw->round && open - sw->round <= SWARM_MAX_JUMP && open > sw->catch_up) {
    CORE_INFO("swarm: round %u: late; the others are at round %u", sw->round, open);
    sw->catch_up = open;
  }
}

/* What a peer answers to "are you still matching here?" (round_state). */
enum { ROUND_SILENT = -1, ROUND_OPEN, ROUND_CLOSED, ROUND_GONE };

/* Asks m whether round `round` has closed there, or (the pool's tag) whether it is still in the
 * pool (ROUND_REQ), waiting at most seconds: ROUND_CLOSED (*open: the first round still open
 * there), ROUND_GONE (it has left the pool), ROUND_OPEN, or ROUND_SILENT (dead, or stalled).
 * Everyone asked wrote a record or said hello, so it listens: a refused connection is an answer
 * (dead), hardly retried. Retried for SWARM_REFUSED_SECONDS, the alive check of a killed line
 * member cost a quarter of a second in the round after the kill (bench/swarm/pace.sh). */
static int round_state(tern_swarm *sw, const swarm_member *m, uint32_t round, uint64_t gtag,
                       double seconds, uint32_t *open) {
  for (int i = 0; m->id && i < sw->nsilent; i++)
    if (sw->silent[i] == m->id) return ROUND_SILENT;
  core_err err = {0};
  int fd = -1;
  uint64_t deadline = core_deadline_after(seconds);
  /* Who asks, and whether it leads a group on this key: a peer that leads there too with a
   * higher id yields to it (lead) */
  uint8_t asker[SWARM_MEMBER_MAX + 1];
  size_t alen = swarm_member_encode(&sw->self, asker);
  asker[alen++] = gtag != 0 && sw->lead_tag == gtag;
  swarm_hdr h = {
      .type = SWARM_ROUND_REQ, .round = round, .sender = sw->id, .tag = gtag, .len = alen};
  uint8_t why[SWARM_LATE_LEN] = {0};
  bool answered =
      swarm_dial_refused(sw, m, deadline, SWARM_REFUSED_DEAD_SECONDS, &fd, &err) == TERN_OK &&
      swarm_send(fd, &h, asker, deadline, m->host, &err) == TERN_OK &&
      swarm_recv_hdr(fd, &h, deadline, m->host, &err) == TERN_OK && h.type == SWARM_REJECT;
  bool why_read = answered && h.len == sizeof why &&
                  swarm_recv_payload(fd, why, sizeof why, deadline, m->host, &err) == TERN_OK;
  if (fd >= 0) close(fd);
  if (why_read && why[0] == SWARM_REJECT_LATE) {
    *open = core_get32(why + 1);
    return ROUND_CLOSED;
  }
  if (why_read && why[0] == SWARM_REJECT_GONE) return ROUND_GONE;
  if (!answered && m->id && sw->nsilent < SWARM_MAX_GROUP) sw->silent[sw->nsilent++] = m->id;
  return answered ? ROUND_OPEN : ROUND_SILENT;
}

/* Asks the peers seen on the key that did not join (group: this peer and those who did). On a
 * line: true when one has closed this round without them (the round to catch up to is noted).
 * In the pool: true when every one has left it or does not answer (stale records: their
 * writers were here and went on), so that nobody is waited for. */
static bool others_moved_on(tern_swarm *sw, seen *s, uint64_t gtag, const swarm_member *group,
                            int n) {
  int here = 0;
  for (int i = 0; i < s->n; i++) {
    bool joined = false;
    for (int j = 0; j < n; j++)
      joined |= group[j].id == s->m[i].id;
    if (joined) continue;
    uint32_t open = 0;
    int st = round_state(sw, &s->m[i], s->round, gtag, CLOSED_ASK_SECONDS, &open);
    if (!s->pool && st == ROUND_CLOSED) {
      catch_up_to(sw, open);
      return true;
    }
    if (s->pool && (st == ROUND_GONE || st == ROUND_SILENT))
      note_dead(s, s->m[i].id);
    else
      here++;
  }
  return s->pool && here == 0;
}

/* Whether a peer this lonely one would meet on its line has closed the round already (the
 * round to catch up to is then noted): the line's members of last time, or, not knowing them
 * yet (its first visit, or a hello since), the peers it knows of (bootstrap, hellos). A peer
 * that started after the others, or lost time, then goes to them at once instead of waiting
 * out its line and the pool: on a 3x3 grid with 7 peers, the last to start spent a second
 * alone that way while the others ran their 16 rounds, and never caught up. */
static bool lonely_moved_on(tern_swarm *sw, seen *s, bool *behind) {
  swarm_member ask[SWARM_MAX_GROUP];
  int n = 0, axis = (int)(s->round % (uint32_t)sw->ndims);
  for (int i = 0; sw->line_known[axis] && i < sw->line_seen[axis]; i++)
    if (sw->line[axis][i].id != sw->id) ask[n++] = sw->line[axis][i];
  if (!sw->line_known[axis]) {
    for (int i = 0; i < sw->nbootstrap && n < SWARM_MAX_GROUP; i++) {
      swarm_member m = {.bw = 1};
      if (net_parse_addr(sw->bootstrap[i], m.host, sizeof m.host, &m.port, false, NULL) == TERN_OK)
        ask[n++] = m;
    }
    pthread_mutex_lock(&sw->mu);
    for (size_t i = 0; i < CORE_MIN(sw->nhellos, CORE_ARRAY_LEN(sw->hellos)) && n < SWARM_MAX_GROUP;
         i++)
      ask[n++] = sw->hellos[i];
    pthread_mutex_unlock(&sw->mu);
  }
  /* A peer off this line closing the round says nothing about this line, whose members may be
   * starting late (the 3x3 grid under ASan: a row's first peer jumped and its row never
   * formed). Only a swarm a whole cycle of rounds on has left this peer behind. */
  uint32_t ahead = sw->line_known[axis] ? 1u : (uint32_t)sw->ndims;
  /* Placed by region, the question names this line, so that a peer matching on another line of
   * the round says so (turn_away_off_line) and "still open" means behind, or on its way here
   * (*behind). */
  uint64_t tag = sw->regional ? core_get64(s->gkey) : 0;
  for (int i = 0; i < n; i++) {
    uint32_t open = 0;
    int st = round_state(sw, &ask[i], s->round, tag, alive_ask_s(sw), &open);
    if (st == ROUND_CLOSED && open >= s->round + ahead) {
      catch_up_to(sw, open);
      return sw->catch_up > s->round;
    }
    if (behind && st == ROUND_OPEN) *behind = true;
  }
  return false;
}

/* The line's members of last time that are not on the key, asked whether they are coming (see
 * read_key): one silent or refusing is dropped from the line, one that has closed the round is
 * not coming to it, and when this peer is alone there that one is ahead of it (s->late, the
 * round to catch up to noted, as lonely_moved_on). Returns how many are not coming. */
static int line_absent(tern_swarm *sw, seen *s) {
  int axis = (int)(s->round % (uint32_t)sw->ndims), gone = 0, n = 0;
  for (int i = 0; i < sw->line_seen[axis]; i++) {
    swarm_member m = sw->line[axis][i];
    int st = ROUND_OPEN;
    uint32_t open = 0;
    /* one found at an earlier ask to have closed the round was counted then */
    if (m.id != sw->id && !is_away(s, m.id) && !in_members(s->m, s->n, m.id))
      st = swarm_departed(sw, m.id)
               ? ROUND_SILENT
               : round_state(sw, &m, s->round, core_get64(s->gkey), alive_ask_s(sw), &open);
    gone += st == ROUND_SILENT || st == ROUND_CLOSED || st == ROUND_GONE;
    if (st == ROUND_CLOSED && s->naway < SWARM_MAX_GROUP) s->away[s->naway++] = m.id;
    if (st == ROUND_CLOSED && s->n == 1 && open > s->round) {
      catch_up_to(sw, open);
      s->late = sw->catch_up > s->round;
    }
    if (st == ROUND_OPEN || st == ROUND_CLOSED)
      sw->line[axis][n++] = m;
    else
      CORE_INFO("swarm: round %u: line member %016llx is not on the key and %s; not waited for "
                "again",
                s->round, (unsigned long long)m.id,
                st == ROUND_GONE ? "matches on another line" : "does not answer");
  }
  sw->line_seen[axis] = n;
  return gone;
}

/* How many of the peers seen that have not joined (group: this peer and those who did) are
 * gone: silent (dead: refused at once; stalled) or, in the pool, no longer there. *still_in:
 * whether one of them says it is still in this round (it may still be reading: lead). */
static int not_joined_gone(tern_swarm *sw, seen *s, uint64_t gtag, const swarm_member *group, int n,
                           bool *still_in) {
  int gone = 0;
  *still_in = false;
  for (int i = 0; i < s->n; i++) {
    uint32_t open = 0;
    if (in_members(group, n, s->m[i].id)) continue;
    int st = round_state(sw, &s->m[i], s->round, gtag, alive_ask_s(sw), &open);
    gone += st == ROUND_SILENT || st == ROUND_GONE;
    if (st == ROUND_OPEN && !*still_in)
      CORE_INFO("swarm: round %u: %016llx has not joined and is still in the round", s->round,
                (unsigned long long)s->m[i].id);
    *still_in |= st == ROUND_OPEN;
  }
  return gone;
}

/* What a leader takes from its queue: joins for its key, and a lower id's word that it leads
 * there too (listen.c, note_lower_leader). */
static bool is_join_or_lower_leader(const swarm_conn *c, void *arg) {
  const uint64_t *gtag = arg;
  return c->hdr.tag == *gtag && (c->hdr.type == SWARM_JOIN || c->hdr.type == SWARM_ROUND_REQ);
}

static bool is_lower_leader(const swarm_conn *c, void *arg) {
  const uint64_t *gtag = arg;
  return c->hdr.tag == *gtag && c->hdr.type == SWARM_ROUND_REQ;
}

static void set_lead_tag(tern_swarm *sw, uint64_t tag) {
  pthread_mutex_lock(&sw->mu);
  sw->lead_tag = tag;
  sw->lead_yield_queued = false;
  pthread_mutex_unlock(&sw->mu);
}

/* The leader a lower id's ROUND_REQ names (its payload: member record, u8 leads); false when
 * it does not decode or is not its sender. */
static bool lower_leader_of(tern_swarm *sw, const swarm_conn *c, swarm_member *m) {
  size_t used;
  core_err err = {0};
  return c->hdr.len >= 1 &&
         swarm_member_decode(c->payload, c->hdr.len - 1, &used, m, &err) == TERN_OK &&
         m->id == c->hdr.sender && m->id < sw->id;
}

/* Leads the group of the peers seen. *late: fewer than min_group joined, and a peer seen had
 * closed the round before this peer's record reached it (the followers are told so too).
 * yield_to->id != 0: a lower id leads on this line too (it saw this peer's record only after it
 * began to lead, and asked it to join): the members in are sent on to it, and this peer
 * follows it. Two leaders on one cross-region line split the WAN kill run's four survivors
 * into two pairs for the rest of the run (docs/SWARM.md, "Two leaders on one line"). */
static void lead(tern_swarm *sw, const swarm_match_opts *o, seen *s, uint64_t gtag,
                 uint64_t deadline_ns, swarm_member *group, int *n, bool *late,
                 swarm_member *yield_to) {
  int fds[SWARM_MAX_GROUP];
  int nf = 0;
  group[0] = sw->self;
  *n = 1;
  yield_to->id = 0;
  if (!s->pool) set_lead_tag(sw, gtag);
  /* On a cross-region line (placed by region) the joins are taken up to the line's size, not
   * only from the peers this leader saw: survivors of other regions move to this place, and a
   * follower may have seen more records than its leader. Closing on those it saw, the leader of
   * the WAN kill run's round 3 took the one survivor it knew, 0.13 s into its reading, and
   * turned away the two that had just moved there and were joining it; the pairs then ran a
   * round apart to the end. A settling time after the last join still closes it. */
  bool open_line = !s->pool && swarm_region_across(sw, s->round);
  int want = open_line ? o->target_group : CORE_MIN(s->n, o->target_group);
  s->group_round = s->round;
  /* Once min members are in, a peer seen on the DHT that has not joined within the settling
   * time is taken for gone (dead since it wrote its record, or in another group). */
  uint64_t settle = (uint64_t)(settle_s(o) * 1e9);
  uint64_t last_join = core_now_ns();
  /* Followers join as soon as their own discovery settles, which ends within a settling time of
   * ours: still short of min_group after that, this peer asks the peers seen that have not
   * joined whether they closed the round without it. One that has is ahead (it glanced at the
   * line and moved on, or waited alone): waiting for it would fail this round; this group is
   * late and catches up instead. If none has, it waits on: asking costs a connection, waiting
   * for a record left behind cost a late peer most of a matching time per round. */
  uint64_t join_by = CORE_MIN(deadline_ns, last_join + settle);
  /* A peer seen here that has not joined yet may still be reading: one that saw fewer records
   * than this one (a record of a peer that died at once never reached it) reads until it has
   * seen the newest record and nobody new for a settling time. A settling time for the newest
   * record to show there (what settle_s allows a record everywhere), one more for its reading
   * to end: until then, the members in do not close without it. Before, they waited a settling
   * time after the last join only: in leader_dies.sh under load, the survivor that had not seen
   * the dead leader's record ended its reading 1.3 s after the new leader began, and the new
   * leader, its settling time 1 s, had closed a group of 2 (1 run in 40). The pool's records
   * are kept for a time to live and name no round: it keeps the old wait. */
  uint64_t all_read_by = 0;
  if (!s->pool) {
    uint64_t newest = 0;
    for (int i = 0; i < s->n; i++)
      newest = CORE_MAX(newest, s->stamp[i]);
    double left_s = ((double)newest + 2e3 * settle_s(o) - core_wall_s() * 1e3) / 1e3;
    if (left_s > 0) all_read_by = core_now_ns() + (uint64_t)(left_s * 1e9);
  }
  bool asked = false, reading = false, gone_asked = false;
  while (*n < want) {
    swarm_conn c;
    /* The members seen are waited for past a settling time after the last join only if one
     * of them said it was still in this round when asked at the glance (not_joined_gone; one
     * ask, not a second a settling time on): a member that died after writing its record (the
     * pace test's victim) is refused at once and costs no more. */
    uint64_t until = *n >= o->min_group
                         ? CORE_MIN(deadline_ns, reading ? CORE_MAX(last_join + settle, all_read_by)
                                                         : last_join + settle)
                         : join_by;
    /* No join for a glance: a peer seen that has not joined may have died since it wrote its
     * record; one found gone is not waited for (a killed member of a group of 4 otherwise
     * cost the round a settling time, a killed partner of a pair most of a matching time). */
    if (!gone_asked) until = CORE_MIN(until, last_join + LONELY_GLANCE_NS);
    if (!swarm_queue_take(sw, is_join_or_lower_leader, &gtag, until, &c)) {
      if (!gone_asked) {
        gone_asked = true;
        int gone = not_joined_gone(sw, s, gtag, group, *n, &reading);
        if (!open_line) want = CORE_MIN(s->n - gone, o->target_group);
        continue;
      }
      if (*n >= o->min_group || asked) break;
      asked = true;
      if (others_moved_on(sw, s, gtag, group, *n)) {
        *late = !s->pool;
        break;
      }
      join_by = deadline_ns; /* not closed: they may still come */
      continue;
    }
    swarm_member m;
    if (c.hdr.type == SWARM_ROUND_REQ) {
      bool lower = lower_leader_of(sw, &c, &m);
      swarm_conn_close(&c);
      if (!lower) {
        set_lead_tag(sw, gtag); /* not a leader's ask after all: the next one is queued */
        continue;
      }
      *yield_to = m;
      break;
    }
    last_join = core_now_ns();
    size_t used;
    core_err err = {0};
    bool dup = false;
    if (swarm_member_decode(c.payload, c.hdr.len, &used, &m, &err) != TERN_OK ||
        m.id != c.hdr.sender || m.id == sw->id) {
      CORE_WARN("swarm: refused a join from %s: %s", c.from, err.msg[0] ? err.msg : "bad id");
      swarm_conn_close(&c);
      continue;
    }
    for (int i = 0; i < *n; i++)
      dup |= group[i].id == m.id;
    /* In the pool a last partner is turned away, as its record is ignored (on_record): it
     * comes only sent on by a peer that follows this one (swarm_redirect_join), and a pair of
     * partners taken so (4 peers on 4x2, pool_new_partners.sh) averaged nothing new. */
    if (dup || *n >= SWARM_MAX_GROUP || (s->pool && last_partner(sw, m.id))) {
      reply(sw, c.fd, SWARM_REJECT, s->round, NULL, 0);
      swarm_conn_close(&c);
      continue;
    }
    group[(*n)++] = m;
    /* In the pool, peers of any round meet: the group runs in the latest of theirs. */
    s->group_round = CORE_MAX(
        s->group_round, CORE_MIN(c.hdr.round, CORE_MIN(sw->last_round, s->round + SWARM_MAX_JUMP)));
    fds[nf++] = c.fd;
    c.fd = -1;
    swarm_conn_close(&c);
  }
  set_lead_tag(sw, 0);
  swarm_conn stale;
  while (swarm_queue_take(sw, is_lower_leader, &gtag, 0, &stale))
    swarm_conn_close(&stale);
  if (yield_to->id) {
    CORE_INFO("swarm: round %u: %016llx leads this line too, with a lower id: %d member(s) "
              "sent on to it, and this peer follows it",
              s->round, (unsigned long long)yield_to->id, *n - 1);
    for (int i = 0; i < nf; i++) {
      swarm_send_redirect(sw, fds[i], s->round, yield_to);
      close(fds[i]);
    }
    *n = 1;
    return;
  }
  if (*n < o->min_group) {
    for (int i = 0; i < nf; i++) {
      if (*late)
        swarm_send_reject(sw, fds[i], s->round, SWARM_REJECT_LATE,
                          sw->catch_up); /* where others_moved_on found them */
      else
        reply(sw, fds[i], SWARM_REJECT, s->round, NULL, 0);
      close(fds[i]);
    }
    *n = 1;
    return;
  }
  qsort(group, (size_t)*n, sizeof *group, by_id);
  uint8_t *buf = malloc(4 + (size_t)*n * (SWARM_MEMBER_MAX));
  size_t len = 4;
  if (buf) {
    core_put32(buf, (uint32_t)*n);
    for (int i = 0; i < *n; i++)
      len += swarm_member_encode(&group[i], buf + len);
  }
  for (int i = 0; i < nf; i++) {
    if (buf) reply(sw, fds[i], SWARM_GROUP, s->group_round, buf, len);
    close(fds[i]);
  }
  if (!buf) *n = 1;
  free(buf);
}

/* Parses a group list: sorted, unique, bounded, and holding this peer. */
static bool parse_group(tern_swarm *sw, const uint8_t *p, size_t len, swarm_member *group, int *n,
                        core_err *err) {
  if (len < 4) return false;
  uint32_t k = core_get32(p);
  if (k < 2 || k > SWARM_MAX_GROUP) return false;
  size_t at = 4;
  bool me = false;
  for (uint32_t i = 0; i < k; i++) {
    size_t used;
    if (swarm_member_decode(p + at, len - at, &used, &group[i], err) != TERN_OK) return false;
    at += used;
    if (i > 0 && group[i].id <= group[i - 1].id) return false;
    me |= group[i].id == sw->id;
  }
  *n = (int)k;
  return me && at == len;
}

/* How asking a leader to be let in ended. */
typedef enum follow_end {
  FOLLOW_ANSWERED,   /* a group list, a reject, or an error after the leader had answered */
  FOLLOW_GONE,       /* the leader could not be reached at all: dead since it wrote its record */
  FOLLOW_ASKS_A_DEAD /* it sent this peer on to a dead leader: it follows that one, and will
                        find it dead too and lead or point elsewhere; ask it again */
} follow_end;

/* Joins the group of leader (following redirects). *late: the leader's round had closed
 * (SWARM_REJECT_LATE). */
static follow_end follow(tern_swarm *sw, seen *s, swarm_member leader, uint64_t gtag,
                         uint64_t deadline_ns, swarm_member *group, int *n, bool *late) {
  *n = 1;
  group[0] = sw->self;
  uint8_t mine[SWARM_MEMBER_MAX];
  size_t mlen = swarm_member_encode(&sw->self, mine);
  for (int hop = 0; hop < FOLLOW_HOPS; hop++) {
    core_err err = {0};
    int fd = -1;
    swarm_hdr h = {
        .type = SWARM_JOIN, .round = s->round, .sender = sw->id, .tag = gtag, .len = mlen};
    char what[96];
    snprintf(what, sizeof what, "leader %016llx (%s:%d)", (unsigned long long)leader.id,
             leader.host, leader.port);
    uint8_t *payload = NULL;
    /* The leader wrote its record, so it listens: a refusal is its death. Retried for a
     * quarter of a second, a leader killed after writing its record cost its line that long
     * in the round after the kill (bench/swarm/pace.sh). */
    tern_status rc =
        swarm_dial_refused(sw, &leader, deadline_ns, SWARM_REFUSED_DEAD_SECONDS, &fd, &err);
    bool dialed = rc == TERN_OK;
    if (rc == TERN_OK) rc = swarm_send(fd, &h, mine, deadline_ns, what, &err);
    if (rc == TERN_OK) rc = swarm_recv_hdr(fd, &h, deadline_ns, what, &err);
    if (rc == TERN_OK && h.len > 0) {
      payload = malloc(h.len);
      rc = payload ? swarm_recv_payload(fd, payload, h.len, deadline_ns, what, &err)
                   : TERN_ERR_NOMEM;
    }
    if (fd >= 0) close(fd);
    bool gone = rc == TERN_OK && h.type == SWARM_REJECT && h.len == SWARM_LATE_LEN &&
                payload[0] == SWARM_REJECT_GONE;       /* its record in the pool was stale */
    if (!dialed || rc == TERN_ERR_PEER_LOST || gone) { /* unreachable, or closed on us unanswered */
      free(payload);
      CORE_INFO("swarm: round %u: %s", s->round, gone ? "left the pool" : err.msg);
      note_dead(s, leader.id);
      return hop == 0 ? FOLLOW_GONE : FOLLOW_ASKS_A_DEAD;
    }
    size_t used;
    if (rc == TERN_OK && h.type == SWARM_REDIRECT &&
        swarm_member_decode(payload, h.len, &used, &leader, &err) == TERN_OK &&
        leader.id < sw->id) {
      free(payload);
      if (is_dead(s, leader.id, stamp_of(s, leader.id))) return FOLLOW_ASKS_A_DEAD;
      continue;
    }
    /* A line's group runs in this round; the pool's in the latest of its members' rounds. */
    bool round_ok = s->pool ? h.round >= s->round && h.round - s->round <= SWARM_MAX_JUMP &&
                                  h.round <= CORE_MAX(sw->last_round, s->round)
                            : h.round == s->round;
    if (rc == TERN_OK && h.type == SWARM_GROUP) s->group_round = h.round;
    if (rc == TERN_OK && h.type == SWARM_GROUP &&
        (!round_ok || !parse_group(sw, payload, h.len, group, n, &err))) {
      CORE_WARN("swarm: round %u: %s sent a group list that is not valid", s->round, what);
      *n = 1;
      group[0] = sw->self;
    }
    if (rc != TERN_OK) CORE_INFO("swarm: round %u: no group: %s", s->round, err.msg);
    *late = rc == TERN_OK && h.type == SWARM_REJECT && h.len == SWARM_LATE_LEN &&
            payload[0] == SWARM_REJECT_LATE;
    if (*late) catch_up_to(sw, core_get32(payload + 1));
    free(payload);
    return FOLLOW_ANSWERED;
  }
  return FOLLOW_ANSWERED;
}

typedef struct stale_want {
  uint32_t round;
  bool include_current;
  uint64_t pool_tag;
} stale_want;

static bool is_stale_join(const swarm_conn *c, void *arg) {
  const stale_want *w = arg;
  /* Parts of the current round may already be here: the all-reduce takes them. */
  if (c->hdr.type == SWARM_PART) return c->hdr.round < w->round;
  bool old = w->include_current ? c->hdr.round <= w->round : c->hdr.round < w->round;
  return old && c->hdr.type == SWARM_JOIN && c->hdr.tag != w->pool_tag;
}

void swarm_reject_stale(tern_swarm *sw, uint32_t round, bool include_current) {
  stale_want w = {round, include_current, sw->pool_tag};
  pthread_mutex_lock(&sw->mu);
  uint32_t open = sw->closed_rounds; /* set by this thread alone */
  pthread_mutex_unlock(&sw->mu);
  swarm_conn c;
  while (swarm_queue_take(sw, is_stale_join, &w, 0, &c)) {
    if (c.hdr.type == SWARM_JOIN) {
      swarm_note_late_join(sw, &c.hdr);
      swarm_send_reject(sw, c.fd, c.hdr.round, SWARM_REJECT_LATE, open);
    }
    swarm_conn_close(&c);
  }
}

/* Leaves the pool: joins that came for it meanwhile are told so (the listener answers the
 * later ones), and the record there is withdrawn, so that nobody waits for this peer. */
static void leave_pool(tern_swarm *sw, const uint8_t gkey[32]) {
  pthread_mutex_lock(&sw->mu);
  sw->in_pool = false;
  pthread_mutex_unlock(&sw->mu);
  swarm_conn c;
  while (swarm_queue_take(sw, is_join, &sw->pool_tag, 0, &c)) {
    swarm_send_reject(sw, c.fd, c.hdr.round, SWARM_REJECT_GONE, 0);
    swarm_conn_close(&c);
  }
  uint8_t rec[SWARM_RECORD_MAX];
  size_t len = swarm_record_encode(&sw->self, sw->round, next_stamp(sw), 0, gkey,
                                   sw->keyed ? sw->key : NULL, rec);
  swarm_dht_put(sw, gkey, rec, len);
}

void swarm_note_late_join(tern_swarm *sw, const swarm_hdr *join) {
  if (sw->ndims < 1) return;
  uint8_t gkey[32];
  swarm_group_key(sw, join->round, gkey);
  if (core_get64(gkey) != join->tag) return; /* another key: the pool, a random group */
  pthread_mutex_lock(&sw->mu);
  sw->line_late[join->round % (uint32_t)sw->ndims] = join->sender;
  pthread_mutex_unlock(&sw->mu);
}

/* Joins that reached this peer before it turned follower (sent by peers that saw no lower id
 * than this one): sent on to its leader, as the listener does with those that come later. Left
 * queued, their senders were left out of the group and told "too late" once it closed the
 * round (7 peers on 3x3). In the pool the leader may have averaged with the sender last round;
 * it turns it away then (lead). */
static void redirect_queued_joins(tern_swarm *sw, uint64_t gtag) {
  swarm_conn c;
  while (swarm_queue_take(sw, is_join, &gtag, 0, &c)) {
    if (!swarm_redirect_join(sw, c.fd, &c.hdr)) reply(sw, c.fd, SWARM_REJECT, c.hdr.round, NULL, 0);
    swarm_conn_close(&c);
  }
}

/* A lower id this leader yields to (lead) heads the peers seen, so that it is followed. */
static void follow_lower_leader(seen *s, const swarm_member *m) {
  int at = 0;
  while (at < s->n && s->m[at].id != m->id)
    at++;
  if (at == s->n && s->n < SWARM_MAX_GROUP) s->n++; /* not seen before: added (at: the end) */
  if (at == s->n) at = s->n - 1;                    /* no room: it takes the last place */
  memmove(s->m + 1, s->m, (size_t)at * sizeof s->m[0]);
  memmove(s->stamp + 1, s->stamp, (size_t)at * sizeof s->stamp[0]);
  s->m[0] = *m;
  s->stamp[0] = 0;
}

/* One matching on one DHT key: discover, then lead or follow; timeout_s from now. *late: the
 * others on the key had closed their group before this peer came. */
static tern_status match_on(tern_swarm *sw, const swarm_match_opts *o, const uint8_t gkey[32],
                            bool pool, double timeout_s, swarm_member *group, int *n, uint64_t *tag,
                            bool *late, swarm_member *seen_m, int *seen_n, core_err *err) {
  seen *s = calloc(1, sizeof *s);
  if (!s) return core_err_set(err, TERN_ERR_NOMEM, "matchmaking");
  uint64_t start = core_now_ns();
  s->sw = sw;
  s->round = sw->round;
  s->gkey = gkey;
  s->pool = pool;
  s->watch = pool ? sw->pool_watch : NULL;
  discover(sw, o, s, start, timeout_s);
  *late = s->late;
  *seen_n = s->n;
  if (seen_m) memcpy(seen_m, s->m, (size_t)s->n * sizeof *seen_m);
  /* Assembly keeps the time it had after a discovery of DISCOVER_QUIET T (see the constants). */
  uint64_t found = core_now_ns();
  uint64_t lead_by = CORE_MAX(start + (uint64_t)(timeout_s * LEAD_CLOSE * 1e9),
                              found + (uint64_t)(timeout_s * LEAD_AFTER_FOUND * 1e9));
  uint64_t deadline = CORE_MAX(start + (uint64_t)(timeout_s * 1e9),
                               found + (uint64_t)(timeout_s * FOLLOW_AFTER_FOUND * 1e9));
  if (s->n < o->min_group) reconnect(sw);
  sort_seen(s);
  /* Who saw whom decides who leads: the line that lets a run's log explain a group that did
   * not form. */
  CORE_INFO("swarm: round %u: %d (%d expected) on the key after %.2f s, lowest id %016llx",
            s->round, s->n, o->expect, (double)(core_now_ns() - start) / 1e9,
            (unsigned long long)(s->n ? s->m[0].id : 0));
  uint64_t gtag = core_get64(gkey);
  *n = 1;
  group[0] = sw->self;
  /* A leader that cannot be reached died after writing its record: the next lowest id leads
   * instead, and everyone who saw the same records comes to the same conclusion. */
  while (s->n >= o->min_group) {
    /* The leader closes its group before the followers give up (LEAD_CLOSE). */
    if (s->m[0].id == sw->id) {
      /* exit-before-lead (tests/swarm/leader_dies.sh): the leader dies before taking a join. */
      if (swarm_fault("exit-before-lead")) swarm_fault_exit();
      swarm_member lower;
      lead(sw, o, s, gtag, lead_by, group, n, late, &lower);
      if (lower.id == 0) break;
      follow_lower_leader(s, &lower);
      continue;
    }
    pthread_mutex_lock(&sw->mu);
    sw->following = true;
    sw->follow_tag = gtag;
    sw->leader = s->m[0];
    pthread_mutex_unlock(&sw->mu);
    redirect_queued_joins(sw, gtag);
    follow_end end = follow(sw, s, s->m[0], gtag, deadline, group, n, late);
    pthread_mutex_lock(&sw->mu);
    sw->following = false;
    pthread_mutex_unlock(&sw->mu);
    if (end == FOLLOW_ANSWERED || core_now_ns() >= deadline) break;
    if (end == FOLLOW_ASKS_A_DEAD) {
      CORE_INFO("swarm: round %u: %016llx still follows a dead leader; asking it again", s->round,
                (unsigned long long)s->m[0].id);
      core_sleep_ms(DEAD_LEADER_RETRY_MS);
      continue;
    }
    CORE_INFO("swarm: round %u: leader %016llx unreachable; the next lowest id leads", s->round,
              (unsigned long long)s->m[0].id);
    memmove(s->m, s->m + 1, (size_t)--s->n * sizeof s->m[0]);
    memmove(s->stamp, s->stamp + 1, (size_t)s->n * sizeof s->stamp[0]);
    /* Alone without it: the others' records may not have reached this peer when it stopped
     * reading (across regions they take several DHT hops; a WAN test left one peer alone
     * while the two it had not yet seen paired up). Read on for up to half the time left. */
    if (s->n < o->min_group) {
      uint64_t now = core_now_ns();
      read_key(sw, o, s, (deadline - now) / 2, now + (deadline - now) / 2);
      sort_seen(s);
    }
  }
  if (pool && *n > 1 && s->group_round > sw->round) {
    CORE_INFO("swarm: round %u: pooled with a peer at round %u; going on from there", sw->round,
              s->group_round);
    sw->round = s->group_round;
  }
  *tag = key_tag(gkey, group[0].id);
  free(s);
  return TERN_OK;
}

/* Round r's random groups: slot 1 + group (slot 0 was the round's pool before it was made
 * round-free). */
static void round_key(const tern_swarm *sw, uint32_t round, uint32_t slot, uint8_t out[32]) {
  uint8_t buf[40];
  memcpy(buf, sw->run_hash, 32);
  core_put32(buf + 32, round);
  core_put32(buf + 36, slot);
  crypto_generichash(out, 32, buf, sizeof buf, (const uint8_t *)"tern-swarm-pool", 15);
}

void swarm_pool_key(const tern_swarm *sw, uint8_t out[32]) {
  crypto_generichash(out, 32, sw->run_hash, 32, (const uint8_t *)"tern-swarm-any-round-pool", 25);
}

/* Round r's random group (random_groups K > 0): the cells 0..K*g-1 (g = target_group; a peer's
 * cell is its first coordinate) are shuffled by a permutation drawn from the run and the round,
 * the same on every peer, and dealt into K groups of g. With g = 2, a random perfect matching
 * each round: pairwise gossip. */
static uint32_t random_group(const tern_swarm *sw, const swarm_match_opts *o) {
  uint32_t cells = (uint32_t)o->random_groups * (uint32_t)o->target_group;
  uint8_t seed[32], buf[36];
  memcpy(buf, sw->run_hash, 32);
  core_put32(buf + 32, sw->round);
  crypto_generichash(seed, sizeof seed, buf, sizeof buf, (const uint8_t *)"tern-swarm-deal", 15);
  uint32_t *perm = malloc(cells * sizeof *perm);
  uint64_t *draw = malloc(cells * sizeof *draw);
  uint32_t at = 0;
  if (perm && draw) {
    randombytes_buf_deterministic(draw, cells * sizeof *draw, seed);
    for (uint32_t i = 0; i < cells; i++)
      perm[i] = i;
    for (uint32_t i = cells - 1; i > 0; i--) { /* Fisher-Yates */
      uint32_t j = (uint32_t)(draw[i] % (i + 1)), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    while (at < cells && perm[at] != (uint32_t)sw->coords[0])
      at++;
  }
  free(perm);
  free(draw);
  return at / (uint32_t)o->target_group;
}

/* This round's key (a grid line or a random group) and the options for matching on it. */
static void round_group(tern_swarm *sw, const swarm_match_opts *o, uint8_t gkey[32],
                        swarm_match_opts *line) {
  *line = *o;
  if (o->random_groups > 0) {
    round_key(sw, sw->round, 1 + random_group(sw, o), gkey);
    return;
  }
  swarm_group_key(sw, sw->round, gkey);
  /* A line holds one peer per cell of its axis: once all are in, nobody else can come. */
  int cells = sw->grid[sw->round % (uint32_t)sw->ndims];
  if (cells > 0) line->target_group = CORE_MIN(line->target_group, cells);
}

/* Whether m answers that it is alive (alive_ask_s): a dead peer refuses at once, a
 * stalled one (SIGSTOP: its kernel still accepts) stays silent. */
bool swarm_peer_answers(tern_swarm *sw, const swarm_member *m) {
  uint32_t open;
  return round_state(sw, m, sw->round, 0, alive_ask_s(sw), &open) != ROUND_SILENT;
}

static bool answers(tern_swarm *sw, const swarm_member *m, const char *why) {
  if (swarm_peer_answers(sw, m)) return true;
  CORE_INFO("swarm: round %u: line member %016llx %s and does not answer; not waited for again",
            sw->round, (unsigned long long)m->id, why);
  return false;
}

/* The peers of this peer's line on the axis, for next time: those of the group it formed there,
 * and those it saw there or last time that are not in it but answer that they are alive (a
 * slower trainer, a peer that lost time elsewhere: waiting a settling time for it keeps it in
 * step, as the catch-up test shows). One that does not answer (dead: refused at once; stalled:
 * alive_ask_s) is not waited for again: a dead member costs one deadline, not one per
 * round. Seen is not enough: a peer killed after writing its record was seen, never joined, and
 * was expected again, a second slow round after a kill (bench/swarm/pace.sh). */
static void keep_line(tern_swarm *sw, int axis, swarm_member *seen_m, int nseen,
                      const swarm_member *group, int ngroup) {
  swarm_member keep[SWARM_MAX_GROUP];
  int n = 0;
  for (int i = 0; i < nseen; i++)
    if (seen_m[i].id == sw->id || in_members(group, ngroup, seen_m[i].id) ||
        answers(sw, &seen_m[i], "did not join"))
      keep[n++] = seen_m[i];
  for (int i = 0; i < sw->line_seen[axis] && n < SWARM_MAX_GROUP; i++) {
    const swarm_member *m = &sw->line[axis][i];
    if (m->id == sw->id || in_members(seen_m, nseen, m->id) || swarm_departed(sw, m->id)) continue;
    if (answers(sw, m, "did not come")) keep[n++] = *m;
  }
  memcpy(sw->line[axis], keep, (size_t)n * sizeof *keep);
  sw->line_seen[axis] = n;
  sw->line_known[axis] = true;
  sw->line_hellos[axis] = sw->read_hellos;
}

void swarm_line_drop_failed(tern_swarm *sw, int axis, const uint64_t *failed, int nfailed) {
  if (axis < 0 || axis >= sw->ndims) return;
  int n = 0;
  for (int i = 0; i < sw->line_seen[axis]; i++) {
    const swarm_member *m = &sw->line[axis][i];
    bool failed_here = false;
    for (int j = 0; j < nfailed; j++)
      failed_here |= failed[j] == m->id;
    if (!failed_here || answers(sw, m, "failed its all-reduce")) sw->line[axis][n++] = *m;
  }
  sw->line_seen[axis] = n;
}

/* Where a late peer goes: the round the others are matching in now (`open`), where they wait a
 * settling time for the line members they know to be alive (keep_line), but past the axes whose
 * line it was alone on last time, where nobody would come (a grid with holes: it waits for them
 * on the next line it shares with someone). Never past the run's last round. */
static uint32_t round_ahead(const tern_swarm *sw, uint32_t open) {
  uint32_t r = open;
  for (int k = 1; k < sw->ndims; k++, r++) {
    uint32_t a = r % (uint32_t)sw->ndims;
    if (!sw->line_known[a] || sw->line_seen[a] != 1) break;
  }
  return CORE_MIN(r, sw->last_round);
}

/* The key this peer matches on now (NULL: none), for the listener's answer to a line-mate of
 * last time that asks on another line (listen.c, turn_away_off_line). */
static void matching_on(tern_swarm *sw, const uint8_t *gkey) {
  pthread_mutex_lock(&sw->mu);
  sw->match_round = sw->round;
  sw->match_tag = gkey ? core_get64(gkey) : 0;
  pthread_mutex_unlock(&sw->mu);
}

/* Placed by region, in a region round, with no other peer of its region left on its line (its
 * partners died or went silent, or it was alone there): nothing to average inside the region,
 * and it skips the pool. The pool would pair it with other regions' lonely peers, whom it meets
 * in the next, cross-region round anyway (alone, it takes place 0 there: region.c); it cost a
 * settling time alone or a pool group that adopted its latest member's round, and in the WAN
 * benchmark's kill run the four survivors, one per region, fell out of step in it and met two by
 * two, never all four (docs/SWARM.md, "One survivor per region"). */
static bool region_of_one(const tern_swarm *sw, int axis) {
  return sw->regional && axis == 0 && sw->line_known[0] && sw->line_seen[0] == 1;
}

tern_status swarm_match(tern_swarm *sw, const swarm_match_opts *o, swarm_member *group, int *n,
                        uint64_t *tag, bool *pooled, core_err *err) {
  uint8_t gkey[32];
  swarm_match_opts line;
  bool late = false;
  tern_status rc = TERN_OK;
  int nseen = 0, axis = 0;
  swarm_member seen_m[SWARM_MAX_GROUP];
  /* A peer that said hello has joined the swarm since: how many are on which line is news again
   * (the first peer, alone while the others start, would otherwise glance at its line and be
   * gone each round as they came); who was there is kept, for keep_line. On a grid, since the
   * last call: the settling time that the bootstrap peer then waits on its next lines is what
   * lets a peer that started last catch up (7 peers on 3x3 with no training step: its column
   * ran all 16 rounds in 0.35 s after it started, and without this wait it never met them).
   * Placed by region, since the line was read: there the bootstrap peer's wait in round 2, with
   * its region partner there, made its region a settling time late for round 3, where the other
   * regions wait exactly that long before closing on 3 of 4 (docs/SWARM.md, "Regions"). */
  unsigned heard = hellos_heard(sw);
  sw->nsilent = 0;
  sw->alive_ask_s = settle_s(o);
  for (int a = 0; a < sw->ndims; a++)
    if (sw->regional ? sw->line_hellos[a] != heard : heard != sw->hellos_known)
      sw->line_known[a] = false;
  if (sw->regional ? sw->pool_hellos != heard : heard != sw->hellos_known) sw->pool_seen = 0;
  sw->hellos_known = heard;
  /* Told "too late" (the others had closed their group: this peer lost time to a dead member,
   * or trains more slowly), it jumps ahead of them (round_ahead) and matches again at once:
   * once per call, so that a call takes at most three matching times. */
  for (int attempt = 0; attempt < 2; attempt++) {
    if (attempt > 0) {
      if (rc != TERN_OK || *n > 1 || !late || sw->catch_up <= sw->round) break;
      uint32_t next = round_ahead(sw, sw->catch_up);
      CORE_INFO("swarm: round %u: late; the others are at round %u; waiting for them in round %u",
                sw->round, sw->catch_up, next);
      sw->round = next;
      pthread_mutex_lock(&sw->mu);
      sw->closed_rounds = sw->round; /* the rounds skipped are closed here too */
      pthread_mutex_unlock(&sw->mu);
    }
    round_group(sw, o, gkey, &line);
    axis = (int)(sw->round % (uint32_t)sw->ndims);

    pthread_mutex_lock(&sw->mu);
    uint64_t late_id = sw->line_late[axis];
    sw->line_late[axis] = 0;
    pthread_mutex_unlock(&sw->mu);
    bool missed = late_id != 0;
    for (int i = 0; i < sw->line_seen[axis]; i++)
      missed &= sw->line[axis][i].id != late_id;
    /* A peer of this line that came after it had closed last time (swarm_note_late_join) is
     * expected too: waiting for it once is what a late peer needs to be back in step. */
    line.expect = o->random_groups > 0 || !sw->line_known[axis] ? 0 : sw->line_seen[axis] + missed;
    swarm_reject_stale(sw, sw->round, false);
    matching_on(sw, gkey);
    rc = match_on(sw, &line, gkey, false, o->match_timeout, group, n, tag, &late, seen_m, &nseen,
                  err);
    /* Before a jump too: where it jumps to depends on the lines it was alone on (round_ahead). */
    if (o->random_groups == 0) keep_line(sw, axis, seen_m, nseen, group, *n);
  }
  *pooled = false;
  /* Alone and not late: its partners are dead or gone. A fixed grid would leave it alone in
   * every round on this axis, and survivors whose lines all died would never average again.
   * The lonely peers of a round meet in its pool instead, with a second matching time; on a
   * full, healthy grid nobody is lonely and the grid's d-round exactness stands. Late, the
   * pool would only cost it more time: its line is alive and ahead of it. In the pool it
   * ignores the others of its last group when that all-reduce was whole: it holds their
   * average, and averaging again with them changes nothing. Peers that averaged together reach
   * the next round, and its pool, together: before this they met there again first (a row of
   * the 3x3 grid under TSan) while the peers they had not met came seconds later. */
  if (rc == TERN_OK && *n == 1 && !late && !region_of_one(sw, axis)) {
    CORE_INFO("swarm: round %u: alone on its line; trying the pool", sw->round);
    swarm_match_opts pool = *o;
    /* Met k there last time: as soon as k are in; alone there: a glance (a peer alone on its
     * row of a 3x3 grid with 7 peers, which nobody ever meets in the pool, otherwise fell behind
     * its column by a settling time every other round); not known: a settling time. */
    pool.expect = sw->pool_seen;
    swarm_pool_key(sw, gkey);
    if (!sw->pool_watch) sw->pool_watch = swarm_dht_watch(sw, gkey);
    pthread_mutex_lock(&sw->mu);
    sw->in_pool = true;
    pthread_mutex_unlock(&sw->mu);
    matching_on(sw, gkey);
    rc = match_on(sw, &pool, gkey, true, o->match_timeout, group, n, tag, &late, NULL, &nseen, err);
    leave_pool(sw, gkey);
    sw->pool_seen = nseen;
    sw->pool_hellos = sw->read_hellos;
    *pooled = true;
  }
  matching_on(sw, NULL);
  pthread_mutex_lock(&sw->mu);
  sw->closed_rounds = sw->round + 1;
  pthread_mutex_unlock(&sw->mu);
  swarm_reject_stale(sw, sw->round, true);
  return rc;
}

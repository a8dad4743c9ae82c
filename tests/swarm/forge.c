/* forge.c: a hostile neighbour for the swarm tests. It joins the DHT of a run (bootstrapped from
 * the given peer) and writes, under the group keys of the first rounds, records that must all be
 * refused: garbage, an oversized value, a record without a MAC, one with a MAC under another key,
 * and one with a good MAC replayed into another round. All but the other key's are written
 * through a node holding the key (one that could be an insider's): a node with another key is in
 * another DHT network and writes elsewhere (secure.c), so its record never reaches the peers.
 * Then it opens TCP connections to the peer
 * and sends garbage, an HTTP request, a hello from another run, a hello without the key, and,
 * having the key, a join and a part with absurd lengths. Prints how many of each it sent.
 *
 * usage: forge PEER_HOST:PORT RUN_ID KEY ROUNDS
 */
#include "swarm/swarm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void raw(const swarm_member *to, const void *buf, size_t n) {
  int fd;
  core_err err = {0};
  if (net_connect(to->host, to->port, core_deadline_after(2), &fd, &err) != TERN_OK) return;
  net_write_all(fd, buf, n, core_deadline_after(2), "peer", &err);
  close(fd);
}

/* A keyed connection that sends one header claiming len bytes. */
static void absurd(tern_swarm *sw, const swarm_member *to, uint8_t type, uint64_t len) {
  int fd;
  core_err err = {0};
  if (swarm_dial(sw, to, core_deadline_after(2), &fd, &err) != TERN_OK) {
    fprintf(stderr, "forge: dial: %s\n", err.msg);
    return;
  }
  swarm_hdr h = {.type = type, .sender = 1, .len = len};
  uint8_t b[SWARM_HDR_LEN];
  swarm_hdr_encode(&h, b);
  net_write_all(fd, b, sizeof b, core_deadline_after(2), "peer", &err);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  const char *boot[] = {argv[1], NULL};
  int rounds = atoi(argv[4]);
  tern_swarm_options wrong = {.listen = "127.0.0.1:0", .run_id = argv[2], .key = "not the key"};
  memcpy((void *)wrong.bootstrap, boot, sizeof boot);
  tern_swarm *forger, *insider;
  if (tern_swarm_join(&forger, &wrong) != TERN_OK) return 1;
  tern_swarm_options right = wrong;
  right.key = argv[3];
  if (tern_swarm_join(&insider, &right) != TERN_OK) return 1;
  usleep(300000); /* let the DHT nodes meet */
  int records = 0;
  for (int r = 0; r < rounds; r++) {
    uint8_t gkey[32], other[32], rec[SWARM_RECORD_MAX], big[1000];
    swarm_group_key(forger, (uint32_t)r, gkey);
    swarm_group_key(forger, (uint32_t)r + 1000, other);
    swarm_member m = forger->self;
    memset(big, 0x41, sizeof big);
    swarm_dht_put(insider, gkey, big, 7), records++;          /* garbage */
    swarm_dht_put(insider, gkey, big, sizeof big), records++; /* oversized */
    swarm_dht_put(insider, gkey, rec,
                  swarm_record_encode(&m, (uint32_t)r, 0, 1000, gkey, NULL, rec)),
        records++; /* no MAC */
    swarm_dht_put(forger, gkey, rec,
                  swarm_record_encode(&m, (uint32_t)r, 0, 1000, gkey, forger->key, rec)),
        records++; /* another key's MAC */
    size_t n =
        swarm_record_encode(&insider->self, (uint32_t)r + 1000, 0, 1000, other, insider->key, rec);
    swarm_dht_put(insider, gkey, rec, n), records++; /* good MAC, wrong round: a replay */
  }
  swarm_member to = {.bw = 1};
  core_err err = {0};
  if (net_parse_addr(argv[1], to.host, sizeof to.host, &to.port, false, &err) != TERN_OK) return 1;
  uint8_t junk[256];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(i * 37 + 11);
  const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  raw(&to, junk, sizeof junk);
  raw(&to, http, sizeof http - 1);
  net_hello h = {.role = NET_ROLE_PEER, .rank = -1, .nstreams = 1};
  uint8_t hello[NET_HELLO_LEN];
  net_hello_encode(&h, hello); /* another run, no key */
  raw(&to, hello, sizeof hello);
  absurd(forger, &to, SWARM_JOIN, 10); /* the right run with another key: refused at the MAC */
  absurd(insider, &to, SWARM_JOIN, 1ull << 40); /* control message of 1 TiB */
  absurd(insider, &to, SWARM_PART, 1ull << 62); /* data past any bound */
  absurd(insider, &to, SWARM_STATE, 5);         /* a type no peer sends first */
  printf("forge: %d forged records, 7 hostile connections\n", records);
  fflush(stdout);
  sleep(2); /* keep the DHT node up while the peers read */
  tern_swarm_leave(insider);
  tern_swarm_leave(forger);
  return 0;
}

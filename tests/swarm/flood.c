/* flood.c: a process without the key that floods a keyed swarm, for tests/swarm/flood.sh.
 *
 * It runs a DHT node of its own bootstrapped from the given peer, on the run id it knows, and
 * writes RECORDS well-formed keyless records under the group key of each of the first ROUNDS
 * rounds: where the records of a swarm whose DHT keys come from the run id alone are (a flood
 * of 1000 per key cut full groups from 5 of 8 rounds to 1). Then it opens CONNS connections to
 * the peer from 127.0.0.2 (another loopback address than the peers', so that the peer can tell
 * it apart), each sending a hello of the run without the key. Prints what it sent.
 *
 * usage: flood PEER_HOST:PORT RUN_ID ROUNDS RECORDS CONNS
 */
#include "swarm/swarm.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool hello_from(const char *src, const swarm_member *to, const uint8_t *hello) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  struct timeval tv = {.tv_sec = 1};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in me = {.sin_family = AF_INET},
                     peer = {.sin_family = AF_INET, .sin_port = htons((uint16_t)to->port)};
  inet_pton(AF_INET, src, &me.sin_addr);
  inet_pton(AF_INET, to->host, &peer.sin_addr);
  bool ok = bind(fd, (struct sockaddr *)&me, sizeof me) == 0 &&
            connect(fd, (struct sockaddr *)&peer, sizeof peer) == 0 &&
            send(fd, hello, NET_HELLO_LEN, MSG_NOSIGNAL) == NET_HELLO_LEN;
  close(fd);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 6) return 2;
  const char *boot[] = {argv[1], NULL};
  int rounds = atoi(argv[3]), records = atoi(argv[4]), conns = atoi(argv[5]);
  tern_swarm_options o = {.listen = "127.0.0.1:0", .run_id = argv[2]};
  memcpy((void *)o.bootstrap, boot, sizeof boot);
  tern_swarm *sw;
  if (tern_swarm_join(&sw, &o) != TERN_OK) {
    fprintf(stderr, "flood: join: %s\n", tern_swarm_last_error(NULL));
    return 1;
  }
  usleep(300000); /* let its DHT node try to meet the peer's */
  int put = 0;
  for (int r = 0; r < rounds; r++) {
    uint8_t gkey[32], rec[SWARM_RECORD_MAX];
    swarm_group_key(sw, (uint32_t)r, gkey);
    for (int i = 0; i < records; i++, put++) {
      swarm_member m = sw->self;
      m.id = (uint64_t)put + 1;
      swarm_dht_put(sw, gkey, rec, swarm_record_encode(&m, (uint32_t)r, 0, 1000, gkey, NULL, rec));
    }
  }
  swarm_member to = {.bw = 1};
  core_err err = {0};
  if (net_parse_addr(argv[1], to.host, sizeof to.host, &to.port, false, &err) != TERN_OK) return 1;
  net_hello h = {.role = NET_ROLE_PEER, .rank = -1, .nstreams = 1};
  memcpy(h.run_id, sw->run_id, 16);
  uint8_t hello[NET_HELLO_LEN];
  net_hello_encode(&h, hello);
  int sent = 0;
  for (int i = 0; i < conns; i++)
    sent += hello_from("127.0.0.2", &to, hello);
  printf("flood: %d records, %d of %d connections made\n", put, sent, conns);
  fflush(stdout);
  sleep(1); /* keep the DHT node up while the peers read */
  tern_swarm_leave(sw);
  return 0;
}

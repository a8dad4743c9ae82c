/* tamper.c: a hostile process for tests/swarm/tamper.sh that writes into keyed connections what
 * an attacker on the path could: it holds the key (so that it can open connections and record
 * genuine sealed messages, as a tap would), then sends the peer
 *   - a hello recorded on one connection, replayed on a fresh one;
 *   - a leave in the name of PARTNER (a member of the peer's group) with one bit of its tag
 *     flipped, and another with its header's sender changed after sealing;
 *   - a leave in the name of PARTNER in clear, without a tag.
 * Each must be refused (seal.c); had a leave been taken, the peer would drop PARTNER.
 *
 * usage: tamper PEER_HOST:PORT RUN_ID KEY PARTNER_ID_HEX
 */
#include "swarm/swarm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Dials to, sends the frame of h (sealed on that connection), after change(frame) if given. */
static void send_frame(tern_swarm *sw, const swarm_member *to, const swarm_hdr *h,
                       const void *payload, void (*change)(uint8_t *, size_t), uint8_t **keep,
                       size_t *keep_len) {
  int fd;
  core_err err = {0};
  if (swarm_dial(sw, to, core_deadline_after(2), &fd, &err) != TERN_OK) {
    fprintf(stderr, "tamper: dial: %s\n", err.msg);
    exit(1);
  }
  uint8_t *f;
  size_t len;
  if (swarm_seal_frame(fd, h, payload, &f, &len, &err) != TERN_OK) exit(1);
  if (change) change(f, len);
  net_write_all(fd, f, len, core_deadline_after(2), "peer", &err);
  usleep(100000); /* let the peer read it before the close */
  close(fd);
  if (keep) {
    *keep = f;
    *keep_len = len;
  } else {
    free(f);
  }
}

static void flip_tag(uint8_t *f, size_t len) {
  f[len - 1] ^= 1;
}
static void change_sender(uint8_t *f, size_t len) {
  (void)len;
  f[16] ^= 1;
}

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  const char *boot[] = {argv[1], NULL};
  uint64_t partner = strtoull(argv[4], NULL, 16);
  tern_swarm_options o = {.listen = "127.0.0.1:0", .run_id = argv[2], .key = argv[3]};
  memcpy((void *)o.bootstrap, boot, sizeof boot);
  tern_swarm *sw;
  if (tern_swarm_join(&sw, &o) != TERN_OK) return 1;
  swarm_member to = {.bw = 1};
  core_err err = {0};
  if (net_parse_addr(argv[1], to.host, sizeof to.host, &to.port, false, &err) != TERN_OK) return 1;
  uint8_t rec[19 + SWARM_HOST_LEN], *recorded;
  size_t recorded_len;
  swarm_hdr hello = {
      .type = SWARM_HELLO, .sender = sw->id, .len = swarm_member_encode(&sw->self, rec)};
  send_frame(sw, &to, &hello, rec, NULL, &recorded, &recorded_len); /* genuine */
  int fd;
  if (swarm_dial(sw, &to, core_deadline_after(2), &fd, &err) != TERN_OK) return 1;
  net_write_all(fd, recorded, recorded_len, core_deadline_after(2), "peer", &err); /* replayed */
  usleep(100000);
  close(fd);
  free(recorded);
  swarm_hdr leave = {.type = SWARM_LEAVE, .sender = partner};
  send_frame(sw, &to, &leave, NULL, flip_tag, NULL, NULL);
  send_frame(sw, &to, &leave, NULL, change_sender, NULL, NULL);
  if (swarm_dial(sw, &to, core_deadline_after(2), &fd, &err) != TERN_OK) return 1;
  uint8_t plain[SWARM_HDR_LEN];
  swarm_hdr_encode(&leave, plain);
  net_write_all(fd, plain, sizeof plain, core_deadline_after(2), "peer", &err); /* no tag */
  usleep(100000);
  close(fd);
  printf("tamper: 1 replayed, 2 tampered, 1 unsealed message sent\n");
  fflush(stdout);
  tern_swarm_leave(sw);
  return 0;
}

/* fuzz_frame.c: the bytes a peer sends on a data connection. The input is what arrives on a TCP
 * stream; it reaches both the frame decoder on its own and a live TCP channel with receives
 * posted (plain and reducing, of a few sizes), which must either finish, or fail with a clean
 * error, and never touch memory outside the receive buffers. */
#include "net/transport.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void decode_alone(const uint8_t *data, size_t size) {
  if (size < NET_FRAME_LEN) return;
  net_frame f;
  core_err err = {0};
  if (net_frame_decode(data, &f, "fuzz", &err) == TERN_OK) {
    net_msg_hdr want = {
        .kind = 0, .dtype = TERN_F32, .op = TERN_SUM, .seq = 1, .count = 16, .bytes = 64};
    core_err_clear(&err);
    net_msg_match(&want, &f.msg, 1, &err);
  }
}

static void through_a_channel(const uint8_t *data, size_t size) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) return;
  /* the feeding side is filled once; a unix socket holds far more than a fuzz input */
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(sv[0], data + off, size - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(sv[0]);
  net_tcp_chan ch;
  if (net_tcp_chan_init(&ch, 1, &sv[1], 1, "fuzz", NULL) != TERN_OK) {
    close(sv[1]);
    return;
  }
  static float dst[3][4096], other[4096];
  net_xfer xs[3];
  static const uint64_t bytes[3] = {64, 0, 16384};
  for (int i = 0; i < 3; i++) {
    xs[i] = (net_xfer){.hdr = {.kind = 0,
                               .dtype = TERN_F32,
                               .op = TERN_SUM,
                               .seq = 1,
                               .count = bytes[i] / 4,
                               .bytes = bytes[i]},
                       .peer = 1,
                       .reduce = i == 2,
                       .flow = NET_FLOW_EXCHANGE | NET_FLOW_REDUCE,
                       .src = (char *)other,
                       .dst = (char *)dst[i]};
    net_tcp_post(&ch, &xs[i], NULL);
  }
  for (int spins = 0; spins < 64; spins++) {
    bool moved = false;
    core_err err = {0};
    if (net_tcp_progress(&ch, &moved, &err) != TERN_OK || !moved) break;
  }
  net_tcp_chan_close(&ch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  decode_alone(data, size);
  through_a_channel(data, size);
  return 0;
}

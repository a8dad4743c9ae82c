/* fuzz_hello.c: libFuzzer over everything a peer's first bytes reach: net_hello_decode, then the
 * handshake state machine reading the input from a socketpair.
 *
 * The first input byte picks this side: bits 0-1 its role (rank, store client, store server),
 * bit 2 whether it knows a run id, bit 3 whether it holds a key; the rest is what the peer
 * sends, after which the peer hangs up. The handshake must end (done or an error) within a few
 * steps and never read past its own bytes; ASan and UBSan watch every access.
 */
#include "net/net.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fuzz_key[32] = {'f', 'u', 'z', 'z'};

static void drive(uint8_t mode, const uint8_t *data, size_t size) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return;
  net_hello mine = {.role = (uint8_t)(1 + (mode & 3) % 3), .rank = -1, .nstreams = 1};
  if (mode & 4) memset(mine.run_id, 0x5a, sizeof mine.run_id);
  net_handshake hs;
  net_handshake_start(&hs, sv[0], &mine, (mode & 8) ? fuzz_key : NULL);
  /* a socketpair holds far more than a handshake: 4 KiB always goes in without blocking */
  size_t n = size < 4096 ? size : 4096;
  if (n > 0 && write(sv[1], data, n) != (ssize_t)n) goto done;
  shutdown(sv[1], SHUT_WR);
  for (int i = 0; i < 16; i++) {
    bool finished = false;
    if (net_handshake_step(&hs, &finished, NULL) != TERN_OK || finished) break;
  }
done:
  close(sv[0]);
  close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= NET_HELLO_LEN) {
    net_hello h;
    net_hello_decode(data, &h, "fuzz", NULL);
  }
  if (size >= 1) drive(data[0], data + 1, size - 1);
  return 0;
}

/* fuzz_store.c: libFuzzer over the store's protocol: store_msg_decode on the input, then a live
 * store server fed the input by a client.
 *
 * The first input byte picks the client: bit 0 set sends the input raw where the handshake
 * belongs; clear, a proper handshake comes first, as a tool (bits 1-2 == 0) or as rank
 * (bits 1-2) - 1, and the input follows as frames. The client then shuts its side and waits for
 * the server to close the connection: whatever the bytes were, the server must end it within
 * the wait, without a crash, a leak or a sanitizer report. A fresh server per input keeps each
 * run independent of the last.
 */
#include "comm/store.h"
#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setenv("TERN_DEBUG", "NONE", 1); /* each refused input would log a WARN */
  core_config_reload();
  return 0;
}

/* Reads until the server closes; aborts (a finding) when it does not within 5 s. */
static void until_closed(int fd) {
  uint64_t deadline = core_deadline_after(5);
  for (;;) {
    char buf[4096];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno == ECONNRESET)) return;
    if (r > 0) continue;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, core_ms_left(deadline, 1000)) == 0 && core_now_ns() >= deadline) abort();
  }
}

static void feed_server(uint8_t mode, const uint8_t *data, size_t size) {
  static const uint8_t run_id[16] = {3};
  store_server *s;
  if (store_server_start(&s, "127.0.0.1", 0, 3, run_id, NULL, NULL) != TERN_OK) return;
  char host[NET_HOST_LEN];
  int port, fd = -1;
  if (net_parse_addr(store_server_addr(s), host, sizeof host, &port, false, NULL) != TERN_OK ||
      net_connect(host, port, core_deadline_after(5), &fd, NULL) != TERN_OK)
    goto done;
  if (!(mode & 1)) {
    net_hello mine = {
        .role = NET_ROLE_STORE_CLIENT, .rank = ((mode >> 1) & 3) - 1, .size = 3, .nstreams = 1};
    net_hello theirs;
    if (net_handshake_run(fd, &mine, &theirs, NULL, core_deadline_after(5), NULL) != TERN_OK)
      goto done;
  }
  /* the server may close before taking it all: a failed write is a normal end */
  net_write_all(fd, data, size, core_deadline_after(5), "store", NULL);
  shutdown(fd, SHUT_WR);
  until_closed(fd);
done:
  if (fd >= 0) close(fd);
  store_server_stop(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  store_msg m;
  if (size > 4) store_msg_decode(data + 4, size - 4, &m, "fuzz", NULL);
  if (size >= 1) feed_server(data[0], data + 1, size - 1);
  return 0;
}

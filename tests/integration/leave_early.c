/* leave_early.c: a rank that has sent its last message and left is not a lost peer.
 *
 *   leave_early p2p        rank 1 sends 256 floats to rank 0 and exits
 *   leave_early broadcast  rank 1, the root, broadcasts 256 floats and exits
 * Two ranks. Rank 0 tells rank 1 its pid and starts waiting for the data; once it sleeps in that
 * wait, rank 1 stops it (SIGSTOP), sends, and exits; a helper process rank 1 leaves behind
 * resumes rank 0 (SIGCONT) only when rank 1 is gone. So rank 0 wakes to find both the data and
 * a peer that has exited, every time: it must take the data, not report TERN_ERR_PEER_LOST
 * (what a peer wrote before it left is in rank 0's segment or socket). Rank 0 prints "PASS" or
 * "FAIL".
 */
#include "itest.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 256
#define ASLEEP_US 200000 /* rank 0 is asleep in its wait well before this */
#define GONE_WAIT_S 10

/* In a child that outlives this process: resume pid once parent no longer exists. */
static void resume_when_gone(pid_t pid, pid_t parent) {
  if (fork() != 0) return;
  for (int i = 0; i < GONE_WAIT_S * 100 && kill(parent, 0) == 0; i++)
    usleep(10000);
  kill(pid, SIGCONT);
  _exit(0);
}

/* Rank 1: the last message, sent while rank 0 is stopped. */
static int send_and_leave(tern_comm *c, bool bcast) {
  int32_t pid;
  tern_status rc = tern_recv(c, &pid, 1, TERN_I32, 0);
  if (rc != TERN_OK) return itest_fail(c, "receiving rank 0's pid", rc);
  float buf[COUNT];
  for (int i = 0; i < COUNT; i++)
    buf[i] = (float)(1000 + i);
  usleep(ASLEEP_US);
  kill(pid, SIGSTOP);
  rc = bcast ? tern_broadcast(c, buf, buf, COUNT, TERN_F32, 1)
             : tern_send(c, buf, COUNT, TERN_F32, 0);
  resume_when_gone(pid, getpid());
  return rc == TERN_OK ? 0 : itest_fail(c, bcast ? "broadcast at the root" : "send", rc);
}

static int wait_for_it(tern_comm *c, bool bcast) {
  int32_t pid = getpid();
  tern_status rc = tern_send(c, &pid, 1, TERN_I32, 1);
  if (rc != TERN_OK) return itest_fail(c, "sending the pid", rc);
  float buf[COUNT] = {0};
  rc = bcast ? tern_broadcast(c, buf, buf, COUNT, TERN_F32, 1)
             : tern_recv(c, buf, COUNT, TERN_F32, 1);
  if (rc != TERN_OK) return itest_fail(c, "waiting for the last message of a rank that left", rc);
  for (int i = 0; i < COUNT; i++)
    if (buf[i] != (float)(1000 + i)) {
      printf("FAIL rank 0: element %d is %g\n", i, buf[i]);
      return 1;
    }
  printf("PASS rank 0: the %s of a rank that had left arrived whole\n",
         bcast ? "broadcast" : "last message");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "p2p") && strcmp(argv[1], "broadcast"))) {
    fprintf(stderr, "usage: leave_early p2p|broadcast (2 ranks)\n");
    return 2;
  }
  bool bcast = strcmp(argv[1], "broadcast") == 0;
  tern_comm *c = itest_init();
  if (c == NULL) return 1;
  int code = tern_comm_size(c) != 2   ? 2
             : tern_comm_rank(c) == 0 ? wait_for_it(c, bcast)
                                      : send_and_leave(c, bcast);
  tern_comm_destroy(c);
  return code;
}

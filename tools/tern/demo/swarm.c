/* demo/swarm.c: `tern demo`'s second phase: the same model trained by a swarm of peers that
 * average their weights in groups through tern_swarm_average (lib/digits/swarm_train.c),
 * while one peer is killed and a new one joins mid-run.
 *
 * The parent forks the peers (it runs no thread by then: phase 1's store has stopped), each a
 * process of its own with a pipe back: one line per round ("R round acc loss group failed
 * sent"), and "A host:port" once it listens. Peer 0 listens first; the others bootstrap from it,
 * on 127.0.0.1 only. When peer 0 reports a third of the rounds, the parent SIGKILLs the last
 * peer, whichever group it is in; at half the rounds it starts a new peer that bootstraps from
 * every live one, downloads the current weights from one of them, takes the dead peer's place
 * on the grid and shard, and trains the rounds that are left. The phase passes when every live
 * peer ends above the accuracy asked, within a deadline; a peer that hangs is killed and named.
 */
#include "tern/cmd.h"

#include "core/core.h"
#include "digits/swarm_train.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SWARM_PEERS 4 /* a 2 x 2 Moshpit grid */
#define SWARM_SLOTS (SWARM_PEERS + 1)
#define SWARM_DEADLINE_S 90.0

typedef struct peer_slot {
  pid_t pid;
  int fd;   /* the read end of its pipe; -1 once closed */
  int grid; /* its place: 0..SWARM_PEERS-1 (shard and coordinates) */
  char addr[64];
  char line[256];
  size_t len;
  int round; /* averages it took */
  int at;    /* the swarm's round it has reached, 1-based (a late peer jumps ahead) */
  double acc;
  int group, failed;
  unsigned long long sent;
  bool done, killed;
} peer_slot;

typedef struct swarm_demo {
  const demo_swarm_options *o;
  peer_slot p[SWARM_SLOTS];
  int np;
  int killed_at, joined_at; /* peer 0's round when it happened; 0: not yet */
  int rounds_with_loss;     /* rounds in which some peer's group lost a member */
  char run_id[64];
  bool tty;
} swarm_demo;

/* ---- a peer (in its own process) ----------------------------------------------------------- */

static void peer_progress(void *arg, const swarm_train_progress *p) {
  FILE *out = arg;
  fprintf(out, "R %d %.4f %.4f %d %d %llu %u\n", p->round, p->test_acc, p->loss, p->avg.group_size,
          p->avg.failed_count, p->avg.bytes_sent, p->avg.round + 1);
  fflush(out);
}

/* The peer at place grid; bootstrap lists the addresses of live peers (none for peer 0). */
static int peer_main(const swarm_demo *s, int grid, const char *const *bootstrap, int nboot,
                     int rounds, bool join_running, FILE *out) {
  tern_swarm_options so = {
      .listen = "127.0.0.1:0", .run_id = s->run_id, .ndims = 2, .grid = {2, 2}};
  so.coords[0] = grid % 2;
  so.coords[1] = grid / 2;
  for (int i = 0; i < nboot && i < TERN_SWARM_MAX_BOOTSTRAP - 1; i++)
    so.bootstrap[i] = bootstrap[i];
  tern_swarm *sw;
  tern_status st = tern_swarm_join(&sw, &so);
  if (st != TERN_OK) {
    fprintf(stderr, "tern demo: swarm peer %d: joining: %s (%s)\n", grid, tern_status_str(st),
            tern_swarm_last_error(NULL));
    return 1;
  }
  fprintf(out, "A %s\n", tern_swarm_address(sw));
  fflush(out);
  swarm_train_config cfg;
  swarm_train_config_default(&cfg);
  cfg.hidden = s->o->hidden;
  if (s->o->data) cfg.data = s->o->data;
  cfg.rounds = rounds;
  cfg.shard = grid;
  cfg.shards = SWARM_PEERS;
  cfg.join_running = join_running;
  /* The run's rounds: a peer stops at the swarm's last one, however many it jumped. */
  cfg.avg = (tern_swarm_average_options){
      .min_group = 2, .match_timeout = 2, .average_timeout = 3, .rounds = s->o->rounds};
  cfg.progress = peer_progress;
  cfg.arg = out;
  char err[512];
  swarm_train_progress last;
  int rc = swarm_train_run(sw, &cfg, &last, err, sizeof err);
  if (rc != 0) fprintf(stderr, "tern demo: swarm peer %d: %s\n", grid, err);
  tern_swarm_leave(sw);
  return rc != 0;
}

/* Forks the peer of slot k; its stdout is a pipe back to the parent. */
static bool start_peer(swarm_demo *s, int k, int grid, int rounds, bool join_running) {
  const char *boot[SWARM_SLOTS];
  int nboot = 0;
  for (int i = 0; i < s->np; i++)
    if (!s->p[i].killed && !s->p[i].done && s->p[i].addr[0]) boot[nboot++] = s->p[i].addr;
  int fds[2];
  if (pipe(fds) != 0) return false;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    for (int i = 0; i < s->np; i++)
      if (s->p[i].fd >= 0) close(s->p[i].fd);
    FILE *out = fdopen(fds[1], "w");
    _exit(out ? peer_main(s, grid, boot, nboot, rounds, join_running, out) : 1);
  }
  close(fds[1]);
  s->p[k] = (peer_slot){.pid = pid, .fd = fds[0], .grid = grid};
  if (k >= s->np) s->np = k + 1;
  return true;
}

/* ---- the parent ---------------------------------------------------------------------------- */

static void draw(const swarm_demo *s) {
  int alive = 0, groups = 0;
  double acc = 0;
  for (int i = 0; i < s->np; i++)
    if (!s->p[i].killed && s->p[i].round > 0) alive++, acc += s->p[i].acc;
  for (int i = 0; i < s->np; i++)
    groups = s->p[i].group > groups ? s->p[i].group : groups;
  printf("%s  round %3d/%d  %d peers  held-out %5.1f%% (mean)  largest group %d%s%s%s",
         s->tty ? "\r" : "", s->p[0].at, s->o->rounds, alive, alive ? 100 * acc / alive : 0.0,
         groups, s->killed_at ? "  | peer 3 killed" : "", s->joined_at ? ", peer 4 joined" : "",
         s->tty ? "   " : "\n");
  fflush(stdout);
}

/* One line from peer k. Returns true when the line changed what the progress line shows. */
static bool take_line(swarm_demo *s, peer_slot *p, const char *line) {
  if (line[0] == 'A') {
    size_t len = strcspn(line + 2, "\n");
    if (len < sizeof p->addr) memcpy(p->addr, line + 2, len), p->addr[len] = '\0';
    return false;
  }
  double loss;
  if (sscanf(line, "R %d %lf %lf %d %d %llu %d", &p->round, &p->acc, &loss, &p->group, &p->failed,
             &p->sent, &p->at) != 7)
    return false;
  s->rounds_with_loss += p->failed > 0;
  return p == &s->p[0];
}

/* Reads what the peers wrote, for up to ms milliseconds. */
static void read_peers(swarm_demo *s, int ms) {
  struct pollfd pfd[SWARM_SLOTS];
  int who[SWARM_SLOTS], n = 0;
  for (int i = 0; i < s->np; i++)
    if (s->p[i].fd >= 0) pfd[n] = (struct pollfd){.fd = s->p[i].fd, .events = POLLIN}, who[n++] = i;
  if (n == 0 || poll(pfd, (nfds_t)n, ms) <= 0) return;
  for (int j = 0; j < n; j++) {
    peer_slot *p = &s->p[who[j]];
    if (!(pfd[j].revents & (POLLIN | POLLHUP))) continue;
    ssize_t got = read(p->fd, p->line + p->len, sizeof p->line - 1 - p->len);
    if (got <= 0) {
      close(p->fd);
      p->fd = -1;
      continue;
    }
    p->len += (size_t)got;
    p->line[p->len] = '\0';
    char *nl;
    bool redraw = false;
    while ((nl = strchr(p->line, '\n')) != NULL) {
      char one[sizeof p->line]; /* take_line writes into *p */
      *nl = '\0';
      snprintf(one, sizeof one, "%s", p->line);
      redraw |= take_line(s, p, one);
      p->len -= (size_t)(nl + 1 - p->line);
      memmove(p->line, nl + 1, p->len + 1);
    }
    if (p->len == sizeof p->line - 1) p->len = 0; /* a line too long to be one of ours */
    if (redraw) draw(s);
  }
}

/* Reaps the peers that have exited; false when one failed. */
static bool reap(swarm_demo *s, bool *all_done) {
  bool ok = true;
  *all_done = true;
  for (int i = 0; i < s->np; i++) {
    peer_slot *p = &s->p[i];
    int ws;
    if (!p->done && p->pid > 0 && waitpid(p->pid, &ws, WNOHANG) == p->pid) {
      p->done = true;
      if (!p->killed && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
        fprintf(stderr, "\ntern demo: swarm peer %d failed (%s %d)\n", i,
                WIFEXITED(ws) ? "exit code" : "signal",
                WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
        ok = false;
      }
    }
    *all_done &= p->done && p->fd < 0;
  }
  return ok;
}

/* The kill at a third of the rounds, the join at half. */
static bool churn(swarm_demo *s) {
  int r = s->p[0].at;
  if (!s->killed_at && r >= s->o->rounds / 3) {
    kill(s->p[SWARM_PEERS - 1].pid, SIGKILL);
    s->p[SWARM_PEERS - 1].killed = true;
    s->killed_at = r;
    draw(s);
  }
  if (s->killed_at && !s->joined_at && r >= s->o->rounds / 2) {
    s->joined_at = r;
    if (!start_peer(s, SWARM_PEERS, SWARM_PEERS - 1, s->o->rounds - r, true)) return false;
    draw(s);
  }
  return true;
}

static void end_all(swarm_demo *s) {
  for (int i = 0; i < s->np; i++)
    if (!s->p[i].done && s->p[i].pid > 0) {
      kill(s->p[i].pid, SIGKILL);
      waitpid(s->p[i].pid, NULL, 0);
      s->p[i].done = true;
    }
  for (int i = 0; i < s->np; i++)
    if (s->p[i].fd >= 0) close(s->p[i].fd), s->p[i].fd = -1;
}

static int summarise(const swarm_demo *s, double seconds) {
  printf("\nphase 2 done: %d rounds in %.2f s; peer 3 killed at round %d, peer 4 joined at round "
         "%d\n",
         s->o->rounds, seconds, s->killed_at, s->joined_at);
  printf("  %d peer-rounds lost a group member and finished without it\n", s->rounds_with_loss);
  int below = 0;
  for (int i = 0; i < s->np; i++) {
    const peer_slot *p = &s->p[i];
    if (p->killed) continue;
    printf("  peer %d (shard %d): %d rounds, held-out accuracy %.1f%%, last group of %d, %llu "
           "bytes sent in its last round\n",
           i, p->grid, p->round, 100 * p->acc, p->group, p->sent);
    below += p->acc < s->o->min_accuracy;
  }
  if (below)
    fprintf(stderr, "tern demo: %d peers ended below %.0f%% held-out accuracy\n", below,
            100 * s->o->min_accuracy);
  return below ? 1 : 0;
}

int demo_swarm(const demo_swarm_options *o) {
  swarm_demo s = {.o = o, .tty = isatty(STDOUT_FILENO)};
  snprintf(s.run_id, sizeof s.run_id, "tern-demo-%d", (int)getpid());
  sigset_t set; /* phase 1's `tern run` left these blocked for its signalfd */
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  printf("\nphase 2: %d peers on a 2 x 2 Moshpit grid, local SGD on their own shards, weights "
         "averaged in groups by tern_swarm_average; one peer is killed, a new one joins\n",
         SWARM_PEERS);
  fflush(stdout);
  double t0 = (double)core_now_ns() * 1e-9, elapsed = 0;
  bool ok = start_peer(&s, 0, 0, o->rounds, false), all_done = false;
  while (ok && !s.p[0].addr[0] && s.p[0].fd >= 0 && (elapsed = core_now_ns() * 1e-9 - t0) < 10)
    read_peers(&s, 100);
  for (int k = 1; ok && k < SWARM_PEERS; k++)
    ok = s.p[0].addr[0] && start_peer(&s, k, k, o->rounds, false);
  while (ok && !all_done && (elapsed = core_now_ns() * 1e-9 - t0) < SWARM_DEADLINE_S) {
    read_peers(&s, 100);
    ok = churn(&s) && reap(&s, &all_done);
  }
  if (ok && !all_done) {
    fprintf(stderr, "\ntern demo: the swarm did not finish in %.0f s; its peers are ended\n",
            SWARM_DEADLINE_S);
    ok = false;
  }
  end_all(&s);
  return ok ? summarise(&s, elapsed) : 1;
}

/* demo.c: `tern demo`, the main job: ranks on this host train a real model with tern, with a
 * live progress line, and the run ends with a summary and where to look next.
 *
 * The demo is a list of phases, each a function the parent runs in turn, so that a phase may
 * start its processes its own way. Phase 1, "collectives", starts -n ranks through `tern run`
 * (run.c, in this process) of this same program as `tern demo --rank ...`; each rank trains the
 * digits MLP of lib/digits/ (train.c: its shard of every batch, gradients summed by one
 * tern_allreduce per step), and rank 0 draws the progress line: epoch, loss, held-out accuracy,
 * samples per second, the bytes every rank has sent so far (one all-reduce of the counters at
 * each epoch's end) and the algorithm the last gradient all-reduce ran (tern_comm_traffic and
 * tern_comm_last_algorithm: the demo reaches tern through tern.h alone, and core for parsing its
 * flags, its configuration and the clock).
 * On a terminal the line is redrawn in place; otherwise each epoch is a line of its own.
 * Phase 2, "swarm" (demo/swarm.c), trains the same model by swarm averaging, with a peer killed
 * and a new one joining mid-run.
 */
#include "tern/cmd.h"

#include "core/core.h"
#include "digits/train.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO_RANKS 4
#define DEMO_EPOCHS 40
#define DEMO_HIDDEN 256 /* 19,210 parameters: a 77 KB gradient, a few ms of compute per step */
#define DEMO_SWARM_ROUNDS 30
/* phase 1 reaches about 97%; local SGD on a quarter of the data each, less */
#define DEMO_SWARM_ACCURACY 0.90

typedef struct demo {
  int n, epochs, hidden, rounds;
  const char *only; /* run this phase alone; NULL: all */
  const char *data;
  bool tty;
  uint64_t sent_all;     /* bytes sent by all ranks, as of the last epoch's end */
  const char *grad_algo; /* what the last gradient all-reduce ran (the held-out scores and the
                            counters are all-reduced too, but are a few bytes) */
  tern_status counters_rc;
} demo;

static void usage(FILE *out) {
  fprintf(out,
          "usage: tern demo [-n RANKS] [--epochs E] [--hidden H] [--transport shm|tcp] "
          "[--rounds R] [--only collectives|swarm] [--data FILE]\n\n"
          "Trains a %d-H-%d MLP on scikit-learn's handwritten digits, twice: by data-parallel "
          "SGD over\ntern's collectives (%d ranks on this host by default, %d epochs), then by "
          "a swarm of 4 peers\naveraging in groups (%d rounds; one peer killed, one joining). "
          "H = %d. docs/DEMO.md explains the run.\n",
          64, 10, DEMO_RANKS, DEMO_EPOCHS, DEMO_SWARM_ROUNDS, DEMO_HIDDEN);
}

static void human_bytes(double b, char *out, size_t cap) {
  static const char *units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4)
    b /= 1000, u++;
  snprintf(out, cap, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
}

/* The ranks are all on this host: shared memory unless TERN_TRANSPORT asks for TCP. */
static const char *transport_name(void) {
  return core_config_get()->transport == CORE_TRANSPORT_TCP ? "tcp" : "shm";
}

/* ---- a rank ------------------------------------------------------------------------------ */

/* Every rank, at each epoch's end: the bytes all ranks have sent. A collective inside the
 * callback is sound because every rank calls back at the same points. */
static void gather_sent(demo *d, tern_comm *c) {
  uint64_t mine = 0, received = 0;
  tern_status rc = tern_comm_traffic(c, &mine, &received);
  int64_t sent = (int64_t)mine;
  if (rc == TERN_OK) rc = tern_allreduce(c, &sent, &sent, 1, TERN_I64, TERN_SUM);
  if (rc != TERN_OK)
    d->counters_rc = rc; /* the next step fails on it and says why */
  else
    d->sent_all = (uint64_t)sent;
}

static void on_progress(void *arg, tern_comm *c, const train_progress *p) {
  demo *d = arg;
  if (!p->epoch_end) {
    d->grad_algo = tern_comm_last_algorithm(c, "allreduce");
    return;
  }
  gather_sent(d, c);
  if (tern_comm_rank(c) != 0) return;
  char moved[32];
  human_bytes((double)d->sent_all, moved, sizeof moved);
  printf("%s  epoch %3d/%d  loss %.4f  held-out %5.1f%%  %8.0f samples/s  %9s moved  "
         "allreduce %s/%s%s",
         d->tty ? "\r" : "", p->epoch, p->epochs, p->loss, 100 * p->test_acc,
         (double)p->samples / p->seconds, moved, d->grad_algo, transport_name(),
         d->tty && p->epoch < p->epochs ? "" : "\n");
  fflush(stdout);
}

static void summary(const demo *d, tern_comm *c, const train_result *res) {
  int n = tern_comm_size(c);
  char moved[32], grad[32];
  human_bytes((double)d->sent_all, moved, sizeof moved);
  human_bytes((double)res->nparams * sizeof(float), grad, sizeof grad);
  printf("\nphase 1 done: %d ranks, %d epochs in %.2f s, %.0f samples/s\n", n, res->last.epochs,
         res->last.seconds, (double)res->last.samples / res->last.seconds);
  printf("  held-out accuracy %.1f%% on %zu images never trained on (loss %.4f)\n",
         100 * res->last.test_acc, res->ntest, res->last.test_loss);
  printf("  weights %s on all %d ranks (rank 0's broadcast, compared byte for byte): fnv1a "
         "%016llx\n",
         res->identical ? "bit-identical" : "DIFFERENT", n, (unsigned long long)res->weights_hash);
  printf("  %d gradient all-reduces of %s (%s over %s), %s sent by all ranks together\n",
         res->steps, grad, d->grad_algo, transport_name(), moved);
}

static int rank_main(demo *d) {
  tern_comm *c;
  tern_status st = tern_comm_init_env(&c);
  if (st != TERN_OK) {
    fprintf(stderr, "tern demo: joining the group: %s (%s)\n", tern_status_str(st),
            tern_comm_last_error(NULL));
    return 1;
  }
  train_config cfg;
  train_config_default(&cfg);
  cfg.epochs = d->epochs;
  cfg.hidden = d->hidden;
  if (d->data) cfg.data = d->data;
  cfg.progress = on_progress;
  cfg.arg = d;
  d->tty = isatty(STDOUT_FILENO);
  char err[1024];
  train_result res;
  int rc = train_run(c, &cfg, &res, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "tern demo: rank %d: %s\n", tern_comm_rank(c), err);
  else if (tern_comm_rank(c) == 0)
    summary(d, c, &res);
  tern_comm_destroy(c);
  return rc != 0 ? 1 : res.identical ? 0 : 3;
}

/* ---- the phases -------------------------------------------------------------------------- */

/* Phase 1: `tern run -n N -- <this program> demo --rank <the options>`. */
static int phase_collectives(demo *d) {
  char self[PATH_MAX], n[16], epochs[16], hidden[16];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, "tern demo: cannot find this program (/proc/self/exe)\n");
    return 1;
  }
  self[len] = '\0';
  snprintf(n, sizeof n, "%d", d->n);
  snprintf(epochs, sizeof epochs, "%d", d->epochs);
  snprintf(hidden, sizeof hidden, "%d", d->hidden);
  char *argv[16];
  int argc = 0;
  char *fixed[] = {"run",    "-n",       n,      "--",       self,  "demo",
                   "--rank", "--epochs", epochs, "--hidden", hidden};
  for (size_t i = 0; i < CORE_ARRAY_LEN(fixed); i++)
    argv[argc++] = fixed[i];
  if (d->data) argv[argc++] = "--data", argv[argc++] = (char *)d->data;
  argv[argc] = NULL;
  printf("phase 1: %d ranks on this host, data-parallel SGD, gradients summed by "
         "tern_allreduce over %s\n",
         d->n, transport_name());
  fflush(stdout);
  return cmd_run(argc, argv);
}

/* Phase 2: swarm averaging, a peer killed and a new one joining (demo/swarm.c). */
static int phase_swarm(demo *d) {
  demo_swarm_options o = {.rounds = d->rounds,
                          .hidden = d->hidden,
                          .data = d->data,
                          .min_accuracy = DEMO_SWARM_ACCURACY};
  return demo_swarm(&o);
}

static const struct {
  const char *name;
  int (*run)(demo *);
} phases[] = {
    {"collectives", phase_collectives},
    {"swarm", phase_swarm},
};

static int parse(demo *d, int argc, char **argv, bool *is_rank) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long x;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--rank")) {
      *is_rank = true;
      continue;
    } else if (v == NULL) {
      return cmd_usage_error("demo", "%s wants a value (tern demo --help)", a);
    } else if (!strcmp(a, "-n") && core_parse_int(v, 1, 64, &x)) {
      d->n = (int)x;
    } else if (!strcmp(a, "--epochs") && core_parse_int(v, 1, 10000, &x)) {
      d->epochs = (int)x;
    } else if (!strcmp(a, "--hidden") && core_parse_int(v, 1, 4096, &x)) {
      d->hidden = (int)x;
    } else if (!strcmp(a, "--rounds") && core_parse_int(v, 6, 10000, &x)) {
      d->rounds = (int)x;
    } else if (!strcmp(a, "--transport") && (!strcmp(v, "shm") || !strcmp(v, "tcp"))) {
      setenv("TERN_TRANSPORT", v, 1); /* the ranks inherit it */
      core_config_reload();
    } else if (!strcmp(a, "--only") && (!strcmp(v, "collectives") || !strcmp(v, "swarm"))) {
      d->only = v;
    } else if (!strcmp(a, "--data")) {
      d->data = v;
    } else {
      return cmd_usage_error("demo",
                             "%s '%s': not an option or not a value it takes "
                             "(tern demo --help)",
                             a, v);
    }
    i++;
  }
  return -1;
}

int cmd_demo(int argc, char **argv) {
  demo d = {.n = DEMO_RANKS,
            .epochs = DEMO_EPOCHS,
            .hidden = DEMO_HIDDEN,
            .rounds = DEMO_SWARM_ROUNDS,
            .grad_algo = ""};
  bool is_rank = false;
  int rc = parse(&d, argc, argv, &is_rank);
  if (rc >= 0) return rc;
  if (is_rank) return rank_main(&d);
  printf("tern demo: a 64-%d-10 MLP learns scikit-learn's handwritten digits (1797 images of "
         "8x8 pixels)\n",
         d.hidden);
  uint64_t t0 = core_now_ns();
  for (size_t i = 0; i < CORE_ARRAY_LEN(phases); i++)
    if ((d.only == NULL || !strcmp(d.only, phases[i].name)) && (rc = phases[i].run(&d)) != 0) {
      fprintf(stderr, "tern demo: phase %s failed (exit code %d)\n", phases[i].name, rc);
      return rc;
    }
  printf("\ntern demo: all done in %.2f s.\n"
         "next: docs/DEMO.md explains this run line by line;\n"
         "      tern run -n 4 -- build/examples/train/tern_train  trains the same model from the "
         "example you can copy;\n"
         "      docs/PYTORCH.md puts tern under PyTorch's DDP; tern bench allreduce measures the "
         "transport.\n",
         (double)(core_now_ns() - t0) * 1e-9);
  return 0;
}

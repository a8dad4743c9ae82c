/* main.c: tern_train, the example a user copies: data-parallel training of a small MLP on the
 * handwritten digits, gradients all-reduced with tern.
 *
 *   tern run -n 4 -- build/examples/train/tern_train [--epochs E] [--hidden H] [--batch B]
 *                                                    [--lr LR] [--seed S] [--data FILE]
 *
 * It joins the group from the environment (tern run, torchrun, Open MPI, MPICH or Slurm), trains
 * (train.c), and prints on rank 0 one line per epoch and the held-out accuracy, and on every rank
 * the hash of its final weights. Exit codes: 0 when the weights are bit-identical on every rank,
 * 3 when they are not, 1 on an error, 2 on a usage error.
 */
#include "digits/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
  fprintf(stderr, "usage: tern_train [--epochs E] [--hidden H] [--batch B] [--lr LR] [--seed S]"
                  " [--data FILE]\n(run it under `tern run -n N --`)\n");
  return 2;
}

static int parse(int argc, char **argv, train_config *cfg) {
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (v == NULL) return usage();
    if (!strcmp(a, "--data")) {
      cfg->data = v;
      continue;
    }
    if (!strcmp(a, "--epochs"))
      cfg->epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--hidden"))
      cfg->hidden = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--batch"))
      cfg->batch = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--lr"))
      cfg->lr = strtof(v, &end);
    else if (!strcmp(a, "--seed"))
      cfg->seed = strtoull(v, &end, 10);
    else
      return usage();
    if (end == v || *end != '\0') {
      fprintf(stderr, "tern_train: %s '%s': not a number\n", a, v);
      return 2;
    }
  }
  return 0;
}

static void on_progress(void *arg, tern_comm *c, const train_progress *p) {
  (void)arg;
  if (!p->epoch_end || tern_comm_rank(c) != 0) return;
  printf("epoch %3d/%d  loss %.4f  train %5.1f%%  held-out %5.1f%%  %.2f s\n", p->epoch, p->epochs,
         p->loss, 100 * p->train_acc, 100 * p->test_acc, p->seconds);
  fflush(stdout);
}

int main(int argc, char **argv) {
  train_config cfg;
  train_config_default(&cfg);
  cfg.progress = on_progress;
  int rc = parse(argc, argv, &cfg);
  if (rc != 0) return rc;
  tern_comm *c;
  tern_status st = tern_comm_init_env(&c);
  if (st != TERN_OK) {
    fprintf(stderr, "tern_train: joining the group: %s (%s)\n", tern_status_str(st),
            tern_comm_last_error(NULL));
    return 1;
  }
  char err[1024];
  train_result res;
  if (train_run(c, &cfg, &res, err, sizeof err) != 0) {
    fprintf(stderr, "tern_train: rank %d: %s\n", tern_comm_rank(c), err);
    tern_comm_destroy(c);
    return 1;
  }
  int rank = tern_comm_rank(c), n = tern_comm_size(c);
  if (rank == 0)
    printf("held-out accuracy %.1f%% (%zu images) after %d epochs on %d rank%s; weights %s\n",
           100 * res.last.test_acc, res.ntest, res.last.epochs, n, n == 1 ? "" : "s",
           res.identical ? "bit-identical on every rank" : "DIFFER between ranks");
  printf("rank %d weights fnv1a %016llx (%zu floats)\n", rank, (unsigned long long)res.weights_hash,
         res.nparams);
  tern_comm_destroy(c);
  return res.identical ? 0 : 3;
}

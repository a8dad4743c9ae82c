/* select_learned_table.c: the learned selector's weights, written by bench/scale/train.py
 * from bench/scale/results/sweep.csv (the simulated sweep of docs/SCALE.md: a flat cluster of
 * 8-rank hosts, 25 GB/s 2 us NICs, 8 to 4096 ranks, 1 KiB to 64 MiB). Do not edit: run
 * `make -C bench/scale` (or train.py) again. Held-out accuracy: 51 of 52 cells (98.1%) within 5% of the best, worst 1.10x; training cells 97.6%.
 */
#include "coll/select_learned.h"

static const coll_learned_row rows[] = {
    {COLL_ALLGATHER, COLL_ALGO_BRUCK, COLL_ALGO_RING, {1.52817e-06, 7.32865e-11, 0, 0, 2.01123e-06, 2.9109e-10, 0, 0}},
    {COLL_ALLGATHER, COLL_ALGO_DIRECT, COLL_ALGO_RING, {1.30826e-05, 9.90228e-12, 0, 0, 9.64084e-07, 1.82411e-10, 0, 1.75785e-06}},
    {COLL_ALLGATHER, COLL_ALGO_HIER, COLL_ALGO_RHD, {1.86208e-06, 7.37639e-11, 0, 0, 1.69873e-06, 3.10439e-10, 0, 0}},
    {COLL_ALLGATHER, COLL_ALGO_HIER, COLL_ALGO_RING, {1.77655e-06, 7.01365e-11, 0, 0, 1.96804e-06, 3.61738e-10, 0, 0}},
    {COLL_ALLGATHER, COLL_ALGO_RHD, COLL_ALGO_RING, {1.65319e-06, 7.20932e-11, 0, 0, 2.23747e-06, 3.18529e-10, 0, 0}},
    {COLL_ALLGATHER, COLL_ALGO_RING, COLL_ALGO_RING, {1.60374e-06, 7.10995e-11, 0, 0, 1.9115e-06, 6.60988e-11, 0, 0}},
    {COLL_ALLGATHER, COLL_ALGO_TREE, COLL_ALGO_RING, {7.28295e-07, 7.74382e-11, 0, 0, 2.06296e-06, 4.08283e-11, 0, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_DIRECT, COLL_ALGO_RING, {1.37789e-05, 0, 1.31161e-10, 0, 0, 2.06969e-10, 0, 1.44608e-06}},
    {COLL_ALLREDUCE, COLL_ALGO_HIER, COLL_ALGO_RHD, {1.87886e-06, 9.46009e-11, 0, 0, 2.0079e-06, 3.46344e-10, 0, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_HIER, COLL_ALGO_RING, {1.84159e-06, 9.47291e-11, 0, 0, 2.09314e-06, 3.49099e-10, 0, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_RD, COLL_ALGO_RING, {2e-06, 1.23457e-10, 0, 0, 2e-06, 3.2e-10, 0, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_RHD, COLL_ALGO_RING, {1.9071e-06, 9.70055e-11, 0, 0, 2.04909e-06, 3.19369e-10, 0, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_RING, COLL_ALGO_RING, {1.88588e-06, 9.58942e-11, 0, 0, 1.97582e-06, 0, 1.89575e-10, 0}},
    {COLL_ALLREDUCE, COLL_ALGO_TREE, COLL_ALGO_RING, {9.03148e-07, 1.0032e-10, 0, 0, 1.80065e-06, 0, 1.60294e-10, 0}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_DIRECT, COLL_ALGO_RING, {1.38004e-05, 1.29837e-10, 0, 0, 0, 3.08363e-10, 0, 1.86361e-06}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_HIER, COLL_ALGO_RHD, {2e-06, 1.23457e-10, 0, 0, 2e-06, 3.2e-10, 0, 0}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_HIER, COLL_ALGO_RING, {2e-06, 1.23457e-10, 0, 0, 2e-06, 3.2e-10, 0, 0}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_RHD, COLL_ALGO_RING, {2e-06, 1.23457e-10, 0, 0, 2e-06, 3.2e-10, 0, 0}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_RING, COLL_ALGO_RING, {2e-06, 1.23457e-10, 0, 0, 2e-06, 1.23457e-10, 0, 0}},
    {COLL_REDUCE_SCATTER, COLL_ALGO_TREE, COLL_ALGO_RING, {9.68332e-07, 2.62887e-11, 1.09587e-10, 0, 1.78723e-06, 0, 1.21625e-10, 0}},
};

const coll_learned_model coll_learned_cluster = {
    .rph = 8, .rows = rows, .nrows = sizeof rows / sizeof rows[0]};

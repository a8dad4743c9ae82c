/* profile.c: the built-in profiles: the cost model's constants for each way ranks reach each
 * other, named, each with the measurements it comes from (as NCCL's tuning tables are labelled
 * by hardware). `tern tune` measures a host and its tuning file overrides them (tuning.h).
 *
 * shm and tcp come from the project's reference VM (2 vCPUs, Debian 12;
 * ../shared/peers/BASELINES.md):
 *  - shm alpha 0.34 us: Open MPI's shared-memory allreduce of 8 B at n = 2, one exchange;
 *  - shm beta 1/12.45 GB/s: one thread's memcpy, 1 GiB working set (a message is one copy);
 *  - gamma 1/8.10 GB/s: one thread's float32 sum-reduce, 1 GiB (8-12 GB/s by working set);
 *  - tcp alpha 4.55 us: Open MPI over TCP loopback, 8 B at n = 2 (about 4 us above shm);
 *  - tcp beta 1/3 GB/s: the middle of the 2-4 GB/s loopback carries (ompi-tcp's busbw is 3.88
 *    GB/s at 1 MiB, 1.82 at 16 MiB);
 *  - o = alpha / 2 on both: the measured exchange is one send and one receive per rank, so a
 *    message costs at most half of it to post and match.
 * The crowded ones (more ranks than CPUs on the host) add what docs/perf/select.md fitted on the
 * same VM, named at each.
 */
#include "coll/sched.h"

const coll_net_model coll_model_shm = {.alpha = 0.34e-6,
                                       .beta = 1 / 12.45e9,
                                       .gamma = 1 / 8.10e9,
                                       .o = 0.17e-6,
                                       .one_host = true,
                                       .reduce_in_place = true};
/* msg_cpu 0.5 us and turn 4 us: fitted to every algorithm of broadcast, reduce, allreduce and
 * allgather at n = 4, 8 and 16 on 2 cores (docs/perf/select.md, "Turns on a crowded host");
 * handoff 10 us: "The crowded chain" */
const coll_net_model coll_model_shm_crowded = {.alpha = 0.34e-6,
                                               .beta = 1 / 12.45e9,
                                               .gamma = 1 / 8.10e9,
                                               .o = 0.17e-6,
                                               .crowded = true,
                                               .handoff = 10e-6,
                                               .msg_cpu = 0.5e-6,
                                               .turn = 4e-6,
                                               .one_host = true,
                                               .reduce_in_place = true};
const coll_net_model coll_model_tcp = {
    .alpha = 4.55e-6, .beta = 1 / 3.0e9, .gamma = 1 / 8.10e9, .o = 2.275e-6};
/* msg_cpu 12.4 us: fitted to the ring and the tree of allreduce at n = 8 on 2 cores
 * (docs/perf/select.md, "The host's work") */
const coll_net_model coll_model_tcp_crowded = {.alpha = 4.55e-6,
                                               .beta = 1 / 3.0e9,
                                               .gamma = 1 / 8.10e9,
                                               .o = 2.275e-6,
                                               .crowded = true,
                                               .msg_cpu = 12.4e-6};

coll_net_model coll_model_for(bool tcp, bool one_host, bool crowded, int cpus) {
  coll_net_model m = crowded ? (tcp ? coll_model_tcp_crowded : coll_model_shm_crowded)
                             : (tcp ? coll_model_tcp : coll_model_shm);
  if (crowded) m.cpus = cpus;
  m.one_host = m.one_host || one_host; /* TCP over loopback */
  return m;
}

coll_net_model coll_model_of_site(const coll_site *w) {
  return coll_model_for(w->tr == COLL_TR_TCP, w->one_host, w->crowded, w->cpus);
}

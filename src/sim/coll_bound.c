/* coll_bound.c: lower bounds on a job's simulated time, from its plans alone.
 *
 * Two things no simulation can beat: a rank's local work (a phase ends no sooner than the work
 * it does, sim_plan's cpu, whether the rank has a core of its own or shares one), and a host's
 * NIC (every byte a host sends to, or receives from, another host crosses its link of nic_bw
 * each way, at best at full speed the whole time). The bound is the larger of the most work of
 * any rank and the most bytes of any host's busier direction over nic_bw. A sweep uses it to
 * show, without paying for the simulation, that an algorithm cannot come near the best of a cell
 * (a ring of 4096 ranks sends 33 million messages; direct's single phase, n^2 flows at once).
 */
#include "sim/coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tern_status sim_bounds_init(sim_bounds *b, const sim_platform *p) {
  b->p = p;
  b->out = calloc((size_t)p->hosts, sizeof *b->out);
  b->in = calloc((size_t)p->hosts, sizeof *b->in);
  if (b->out == NULL || b->in == NULL) {
    sim_bounds_free(b);
    return TERN_ERR_NOMEM;
  }
  sim_bounds_reset(b);
  return TERN_OK;
}

void sim_bounds_free(sim_bounds *b) {
  free(b->out);
  free(b->in);
  b->out = b->in = NULL;
}

void sim_bounds_reset(sim_bounds *b) {
  b->cpu = 0;
  memset(b->out, 0, (size_t)b->p->hosts * sizeof *b->out);
  memset(b->in, 0, (size_t)b->p->hosts * sizeof *b->in);
}

void sim_bounds_add(sim_bounds *b, int rank, const sim_plan *pl) {
  int rph = b->p->ranks_per_host, host = rank / rph;
  double cpu = 0;
  for (size_t i = 0; i < pl->nphases; i++) {
    const sim_phase *ph = &pl->phases[i];
    cpu += ph->cpu * ph->repeat;
    for (uint32_t k = 0; k < ph->nmsgs; k++) {
      const sim_msg *m = &pl->msgs[ph->first + k];
      if (m->peer / rph == host) continue;
      double bytes = (double)m->bytes * ph->repeat;
      if (m->send)
        b->out[host] += bytes;
      else
        b->in[host] += bytes;
    }
  }
  b->cpu = CORE_MAX(b->cpu, cpu);
}

double sim_bounds_get(const sim_bounds *b) {
  double most = 0;
  for (int h = 0; h < b->p->hosts; h++)
    most = CORE_MAX(most, CORE_MAX(b->out[h], b->in[h]));
  return CORE_MAX(b->cpu, most / (b->p->nic_bw * b->p->nics));
}

tern_status sim_coll_bound(const sim_platform *p, sim_coll_job *jobs, size_t njobs, core_err *err) {
  coll_sched s;
  sim_plan pl;
  sim_bounds b = {0};
  coll_sched_init(&s);
  sim_plan_init(&pl);
  tern_status rc = sim_platform_check(p, err);
  if (rc == TERN_OK && sim_bounds_init(&b, p) != TERN_OK)
    rc = core_err_set(err, TERN_ERR_NOMEM, "no memory for the bounds of %d hosts", p->hosts);
  int n = sim_platform_ranks(p);
  for (size_t j = 0; j < njobs && rc == TERN_OK; j++) {
    sim_coll_job *job = &jobs[j];
    job->status = TERN_OK, job->time = NAN, job->messages = 0;
    sim_bounds_reset(&b);
    for (int r = 0; r < n && job->status == TERN_OK; r++) {
      coll_args a = sim_coll_args(p, job, r);
      job->status = coll_build(&s, &a, job->algo);
      if (job->status == TERN_OK) job->status = sim_plan_build(&pl, &s, job->elem_size, p);
      if (job->status == TERN_OK) sim_bounds_add(&b, r, &pl);
    }
    job->bound = sim_bounds_get(&b);
    if (job->status == TERN_ERR_NOMEM)
      rc = core_err_set(err, TERN_ERR_NOMEM, "no memory for the plans of job %zu", j);
  }
  sim_bounds_free(&b);
  sim_plan_free(&pl);
  coll_sched_free(&s);
  return rc;
}

/* plan_json.c: a placement as data: JSON for files, and a short text of its layer split for
 * tables. Stages are numbered in pipeline order across the whole chain. The pipeline JSON holds
 * every figure the time model priced (each stage's forward and backward seconds per
 * micro-batch, each hop's bytes, bandwidth share and latency), so the prediction can be replayed
 * from the file alone.
 */
#include "plan/plan.h"

#include <stdio.h>

static int first_stage(const plan_placement *p, int seg) {
  int first = 0;
  for (int s = 0; s < seg; s++)
    first += p->seg[s].gpus;
  return first;
}

json_t *plan_placement_json(const plan_cluster *c, const plan_placement *p) {
  json_t *segs = json_array();
  for (int s = 0; s < p->nseg; s++) {
    int first = first_stage(p, s);
    json_t *layers = json_array();
    for (int i = 0; i < p->seg[s].gpus; i++)
      json_array_append_new(layers, json_integer(p->layers[first + i]));
    json_array_append_new(segs, json_pack("{s:s, s:i, s:i, s:i, s:o}", "region",
                                          c->regions[p->seg[s].region].name, "gpus", p->seg[s].gpus,
                                          "first_stage", first, "last_stage",
                                          first + p->seg[s].gpus - 1, "layers", layers));
  }
  return json_pack("{s:i, s:i, s:o}", "stages", p->stages, "replicas", plan_replicas(p), "regions",
                   segs);
}

json_t *plan_pipeline_json(const plan_cluster *c, const plan_job *j, const plan_placement *p,
                           const int *sharers) {
  static _Thread_local double fb[PLAN_MAX_STAGES], lat[PLAN_MAX_STAGES], beta[PLAN_MAX_STAGES];
  int S = plan_pipeline_times(c, j, p, NULL, 0, fb, lat, beta);
  for (int s = 1; s < p->nseg && sharers; s++) /* a link's share: the jobs on it at the start */
    beta[first_stage(p, s) - 1] *= CORE_MAX(sharers[s], 1);
  double bytes = plan_job_boundary_bytes(j);
  json_t *stages = json_array(), *hops = json_array();
  for (int i = 0; i < S; i++) {
    json_array_append_new(stages, json_pack("{s:i, s:f, s:f}", "layers", p->layers[i], "fwd_s",
                                            fb[i] / 3, "bwd_s", 2 * fb[i] / 3));
    if (i + 1 < S)
      json_array_append_new(hops,
                            json_pack("{s:i, s:i, s:f, s:f, s:f, s:f}", "from_stage", i, "to_stage",
                                      i + 1, "bytes", bytes, "bandwidth_Bps", bytes / beta[i],
                                      "latency_s", lat[i], "transfer_s", beta[i]));
  }
  /* DP x PP: microbatches is each copy's; iteration_s its pipeline plus allreduce_s (dp.c) */
  int m = plan_dp_microbatches(j, p);
  double allreduce = plan_dp_allreduce_s(c, j, p);
  return json_pack("{s:s, s:i, s:i, s:f, s:f, s:o, s:o}", "schedule", "1F1B", "replicas",
                   plan_replicas(p), "microbatches", m, "allreduce_s", allreduce, "iteration_s",
                   plan_schedule_time(PLAN_1F1B, S, m, fb, lat, beta) + allreduce, "stages", stages,
                   "hops", hops);
}

void plan_layers_text(const plan_placement *p, int seg, char *out, size_t cap) {
  int first = first_stage(p, seg), end = first + p->seg[seg].gpus;
  size_t used = 0;
  out[0] = '\0';
  for (int i = first; i < end && used < cap;) {
    int run = 1;
    while (i + run < end && p->layers[i + run] == p->layers[i])
      run++;
    int n = snprintf(out + used, cap - used, "%s%dx%d", used ? " " : "", run, p->layers[i]);
    used += n > 0 ? (size_t)n : 0;
    i += run;
  }
}

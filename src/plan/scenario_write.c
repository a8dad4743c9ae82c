/* scenario_write.c: a scenario back to JSON, in the format scenario.c reads (file units: Gbit/s,
 * ms, GB, billions of parameters), so generated variants are plain files anyone can read, edit
 * and feed back to `tern plan` and `tern sim plan`.
 */
#include "plan/plan.h"

#include <jansson.h>

#define GIB 1073741824.0

static json_t *types_json(const plan_cluster *c) {
  json_t *o = json_object();
  for (int t = 0; t < c->ntypes; t++)
    json_object_set_new(o, c->types[t].name,
                        json_pack("{s:f, s:f, s:f}", "peak_tflops", c->types[t].peak_flops / 1e12,
                                  "power_w", c->types[t].power_w, "memory_gb",
                                  c->types[t].memory_bytes / GIB));
  return o;
}

static json_t *price_json(const plan_region *r) {
  bool flat = true;
  for (int h = 1; h < 24; h++)
    flat = flat && r->price[h] == r->price[0];
  if (flat) return json_real(r->price[0]);
  json_t *a = json_array();
  for (int h = 0; h < 24; h++)
    json_array_append_new(a, json_real(r->price[h]));
  return a;
}

static json_t *regions_json(const plan_cluster *c) {
  json_t *a = json_array();
  for (int i = 0; i < c->nregions; i++) {
    const plan_region *r = &c->regions[i];
    json_array_append_new(a,
                          json_pack("{s:s, s:s, s:i, s:o, s:f}", "name", r->name, "gpu",
                                    c->types[r->type].name, "gpus", r->gpus, "price_usd_per_kwh",
                                    price_json(r), "intra_bandwidth_gbps", r->intra_Bps * 8 / 1e9));
  }
  return a;
}

static json_t *links_json(const plan_cluster *c) {
  json_t *a = json_array();
  for (int i = 0; i < c->nregions; i++)
    for (int k = i + 1; k < c->nregions; k++) {
      const plan_link *l = plan_link_at(c, i, k);
      if (l->Bps <= 0) continue;
      json_array_append_new(a, json_pack("{s:s, s:s, s:f, s:f}", "a", c->regions[i].name, "b",
                                         c->regions[k].name, "latency_ms", l->latency_s * 1e3,
                                         "bandwidth_gbps", l->Bps * 8 / 1e9));
    }
  return a;
}

/* Only what the file set would be exact, but the defaults read back the same. */
static json_t *objective_json(const plan_objective *ob) {
  json_t *o = json_pack("{s:f, s:f}", "weight_jct", ob->w_jct, "weight_cost", ob->w_cost);
  if (o && ob->deadline_s > 0)
    json_object_set_new(o, "deadline_h", json_real(ob->deadline_s / 3600));
  if (o && ob->budget_usd > 0) json_object_set_new(o, "budget_usd", json_real(ob->budget_usd));
  return o;
}

static json_t *jobs_json(const plan_scenario *s) {
  json_t *a = json_array();
  for (int i = 0; i < s->njobs; i++) {
    const plan_job *j = &s->jobs[i];
    json_t *o =
        json_pack("{s:s, s:f, s:i, s:i, s:f, s:f, s:i, s:i, s:i, s:i}", "name", j->name, "params_b",
                  j->params / 1e9, "layers", j->layers, "hidden", j->hidden, "arrival_s",
                  j->arrival_s, "tokens", j->tokens, "seq_len", j->seq_len, "microbatch_sequences",
                  j->mb_seqs, "microbatches", j->microbatches, "dtype_bytes", j->dtype_bytes);
    if (o && j->objective.given) json_object_set_new(o, "objective", objective_json(&j->objective));
    json_array_append_new(a, o);
  }
  return a;
}

tern_status plan_scenario_write(const plan_scenario *s, FILE *out, core_err *err) {
  const plan_cluster *c = &s->c;
  json_t *root = json_pack("{s:s, s:o, s:o, s:o, s:o, s:{s:f, s:f, s:f}}", "description", s->source,
                           "gpu_types", types_json(c), "regions", regions_json(c), "links",
                           links_json(c), "jobs", jobs_json(s), "assumptions", "mfu", c->mfu, "pue",
                           c->pue, "memory_usable_fraction", c->mem_fraction);
  if (root == NULL) return core_err_set(err, TERN_ERR_NOMEM, "building the scenario's JSON");
  int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
  json_decref(root);
  if (rc != 0 || fputc('\n', out) == EOF)
    return core_err_set(err, TERN_ERR_SYSTEM, "writing the scenario failed");
  return TERN_OK;
}

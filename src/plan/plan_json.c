/* plan_json.c: a placement as data: JSON for files, and a short text of its layer split for
 * tables. Stages are numbered in pipeline order across the whole chain.
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
  return json_pack("{s:i, s:o}", "stages", p->stages, "regions", segs);
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

/* cluster.c: the cluster model: regions of GPUs, their prices by the hour, the links between
 * them.
 *
 * A region is one pool of one GPU type behind one electricity price that may change by UTC hour
 * (24 values; a flat price is 24 equal ones). Links form a dense matrix: a pipeline chain hops
 * only over direct links, and a zero bandwidth means there is none.
 */
#include "plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double plan_price_at(const plan_region *r, double t) {
  double h = fmod(floor(t / 3600.0), 24.0);
  if (h < 0) h += 24.0;
  return r->price[(int)h];
}

int plan_region_find(const plan_cluster *c, const char *name) {
  for (int i = 0; i < c->nregions; i++)
    if (strcmp(c->regions[i].name, name) == 0) return i;
  return -1;
}

int plan_cluster_total_gpus(const plan_cluster *c) {
  int n = 0;
  for (int i = 0; i < c->nregions; i++)
    n += c->regions[i].gpus;
  return n;
}

tern_status plan_cluster_alloc(plan_cluster *c, int nregions, core_err *err) {
  if (nregions < 1 || nregions > PLAN_MAX_REGIONS)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%d regions: between 1 and %d are supported",
                        nregions, PLAN_MAX_REGIONS);
  c->nregions = nregions;
  c->regions = calloc((size_t)nregions, sizeof *c->regions);
  c->links = calloc((size_t)nregions * (size_t)nregions, sizeof *c->links);
  if (c->regions == NULL || c->links == NULL) {
    plan_cluster_free(c);
    return core_err_set(err, TERN_ERR_NOMEM, "cluster of %d regions", nregions);
  }
  return TERN_OK;
}

void plan_cluster_free(plan_cluster *c) {
  free(c->regions);
  free(c->links);
  c->regions = NULL;
  c->links = NULL;
  c->nregions = 0;
}

tern_status plan_cluster_copy(plan_cluster *dst, const plan_cluster *src, core_err *err) {
  *dst = *src;
  dst->regions = NULL;
  dst->links = NULL;
  tern_status st = plan_cluster_alloc(dst, src->nregions, err);
  if (st != TERN_OK) return st;
  memcpy(dst->regions, src->regions, (size_t)src->nregions * sizeof *src->regions);
  memcpy(dst->links, src->links,
         (size_t)src->nregions * (size_t)src->nregions * sizeof *src->links);
  return TERN_OK;
}

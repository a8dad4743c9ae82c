/* coll_geo.c: reads a geo fixture: regions and, for every pair of them, the one-way latency and
 * the bandwidth of one flow (as /work/shared/fixtures/aws-10-regions.json gives them, after Yuan
 * et al., NeurIPS 2022). The file is input from outside: every field is checked, a pair given
 * twice or left out is an error, and each error names the file and what is wrong where.
 */
#include "sim/coll.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static int region_index(const sim_geo *g, const char *name) {
  for (int i = 0; name != NULL && i < g->nregions; i++)
    if (strcmp(g->names[i], name) == 0) return i;
  return -1;
}

static tern_status read_regions(const char *path, json_t *regions, sim_geo *g, core_err *err) {
  size_t n = json_array_size(regions);
  if (!json_is_array(regions) || n < 1 || n > SIM_GEO_MAX_REGIONS)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s: \"regions\" must be an array of 1 to %d "
                        "names",
                        path, SIM_GEO_MAX_REGIONS);
  g->nregions = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = json_string_value(json_array_get(regions, i));
    if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof g->names[0] ||
        region_index(g, name) >= 0)
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "%s: region %zu is not a new name of 1 to "
                          "%zu characters",
                          path, i, sizeof g->names[0] - 1);
    strcpy(g->names[g->nregions++], name);
  }
  return TERN_OK;
}

static tern_status read_link(const char *path, size_t i, json_t *link, sim_geo *g, core_err *err) {
  int a = region_index(g, json_string_value(json_object_get(link, "a")));
  int b = region_index(g, json_string_value(json_object_get(link, "b")));
  json_t *lat = json_object_get(link, "latency_ms"), *bw = json_object_get(link, "bandwidth_gbps");
  double ms = json_number_value(lat), gbps = json_number_value(bw);
  if (a < 0 || b < 0 || a == b)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s: link %zu: \"a\" and \"b\" must name two "
                        "different regions",
                        path, i);
  if (!json_is_number(lat) || !json_is_number(bw) || !isfinite(ms) || ms < 0 || ms > 1e5 ||
      !isfinite(gbps) || gbps <= 0 || gbps > 1e5)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s: link %zu (%s-%s): latency_ms must be in "
                        "[0, 1e5] and bandwidth_gbps in (0, 1e5]",
                        path, i, g->names[a], g->names[b]);
  if (g->bw[a][b] > 0)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%s: link %zu: %s-%s is given twice", path, i,
                        g->names[a], g->names[b]);
  g->lat[a][b] = g->lat[b][a] = ms * 1e-3;
  g->bw[a][b] = g->bw[b][a] = gbps * 1e9 / 8;
  return TERN_OK;
}

tern_status sim_geo_load(const char *path, sim_geo *g, core_err *err) {
  memset(g, 0, sizeof *g);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (root == NULL)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                        jerr.text);
  json_t *links = json_object_get(root, "links");
  tern_status rc = read_regions(path, json_object_get(root, "regions"), g, err);
  if (rc != TERN_OK) goto fail;
  if (!json_is_array(links)) {
    rc = core_err_set(err, TERN_ERR_INVALID_ARG, "%s: \"links\" must be an array", path);
    goto fail;
  }
  for (size_t i = 0; i < json_array_size(links) && rc == TERN_OK; i++)
    rc = read_link(path, i, json_array_get(links, i), g, err);
  for (int a = 0; a < g->nregions && rc == TERN_OK; a++)
    for (int b = a + 1; b < g->nregions && rc == TERN_OK; b++)
      if (g->bw[a][b] == 0)
        rc = core_err_set(err, TERN_ERR_INVALID_ARG, "%s: no link between %s and %s", path,
                          g->names[a], g->names[b]);
fail:
  json_decref(root);
  return rc;
}

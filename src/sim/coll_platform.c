/* coll_platform.c: a simulated platform: its defaults, its checks, and its SimGrid XML.
 *
 * Every topology is SimGrid's <cluster>: each host's NIC is a pair of private links (up and
 * down, SPLITDUPLEX, of all its NICs' rate) and its ranks talk over a private loopback link at
 * shared-memory speed. A flat cluster has no backbone, so two hosts' route is the sender's up
 * link and the receiver's down link; a fat tree or dragonfly adds its switches, every link of
 * it at a host's rate. (A flow between hosts is held to one NIC's rate by the actors, coll.h.)
 * The adaptively routed dragonfly is SimGrid's fat tree of two levels: hosts under their
 * group's switch, each group switch with U links up to U core switches, so that a group's
 * traffic to others shares all its global links, as Slingshot's adaptive routing spreads it
 * (SimGrid's own dragonfly routes minimally: one pair of groups gets only the links between
 * them). nic_lat is the one-way latency on the longest route between two hosts, so
 * each link gets nic_lat over the links of that route. A geo platform is one flat cluster per
 * region (hosts split in order) under a zone that routes each pair of regions over its own
 * link, with the fixture's latency and per-flow bandwidth (FATPIPE: the fixture measures one
 * flow, and flows do not divide it).
 *
 * Host speed is 1 Gflop/s and local work is written in nanoseconds, so the work amounts stay far
 * above SimGrid's precision (1e-9 of a flop) however short they are.
 *
 * SimGrid aborts on a platform it cannot build (a fat tree whose leaves are not the hosts), so
 * sim_platform_check refuses everything SimGrid would, with a message that says what.
 */
#include "sim/coll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bounds: more ranks than this makes a sweep of hours (SimGrid moves about 1.5e5 messages a
 * second here, and a ring of n ranks sends 2 n (n-1)). */
#define MAX_RANKS 65536
#define MAX_LEVELS 8

void sim_platform_cluster(sim_platform *p, int hosts, int rph) {
  memset(p, 0, sizeof *p);
  p->topo = SIM_TOPO_FLAT;
  p->hosts = hosts;
  p->ranks_per_host = rph;
  p->cores = rph;
  p->nic_bw = 25e9;
  p->nics = 1;
  p->nic_lat = 2e-6;
  p->shm_bw = 1 / coll_model_shm.beta;
  p->shm_lat = coll_model_shm.alpha;
  p->msg_cpu = 1e-6; /* coll.h says which of these are measured and which assumed */
  p->reduce_cpu = coll_model_shm.gamma;
}

void sim_platform_frontier(sim_platform *p, int hosts) {
  sim_platform_cluster(p, hosts, 8);
  p->nics = 4;
  p->shm_bw = 50e9;
  p->shm_lat = 2e-6;
  p->reduce_cpu = 1 / 500e9;
  p->copy_cpu = 1 / 800e9;
}

int sim_platform_ranks(const sim_platform *p) {
  return p->hosts * p->ranks_per_host;
}

/* Parses "a;b,c;..." into groups of ints: groups[g] has counts[g] values. */
static bool parse_groups(const char *s, int groups[][MAX_LEVELS], int *counts, int max_groups,
                         int *ngroups) {
  int g = 0, k = 0;
  for (const char *c = s;;) {
    char *end;
    long v = strtol(c, &end, 10);
    if (end == c || v < 1 || v > MAX_RANKS || g >= max_groups || k >= MAX_LEVELS) return false;
    groups[g][k++] = (int)v;
    if (*end == ',') {
      c = end + 1;
    } else if (*end == ';' || *end == '\0') {
      counts[g++] = k, k = 0;
      if (*end == '\0') break;
      c = end + 1;
    } else {
      return false;
    }
  }
  *ngroups = g;
  return true;
}

/* Fat tree "L;d1,..,dL;u1,..,uL;c1,..,cL": the leaves are the product of the down counts. Sets
 * *links to the longest route's links (2 L). */
static tern_status check_fat_tree(const sim_platform *p, int *links, core_err *err) {
  int v[4][MAX_LEVELS], n[4], ng;
  if (!parse_groups(p->topo_params, v, n, 4, &ng) || ng != 4 || n[0] != 1 || v[0][0] > MAX_LEVELS)
    goto fail;
  int levels = v[0][0];
  long leaves = 1;
  for (int g = 1; g < 4; g++)
    if (n[g] != levels) goto fail;
  for (int l = 0; l < levels; l++)
    leaves *= v[1][l];
  if (leaves != p->hosts)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "fat tree '%s' has %ld leaves, the platform %d hosts", p->topo_params,
                        leaves, p->hosts);
  *links = 2 * levels;
  return TERN_OK;
fail:
  return core_err_set(err, TERN_ERR_INVALID_ARG,
                      "fat tree parameters '%s' are not 'L;d1,..,dL;u1,..,uL;c1,..,cL'",
                      p->topo_params);
}

/* Adaptive dragonfly "G,U": G hosts a group (dividing the hosts), U >= 1 global links a group.
 * The longest route: host, group switch, core switch, group switch, host. */
static tern_status check_dragonfly(const sim_platform *p, int *links, core_err *err) {
  int v[1][MAX_LEVELS], n[1], ng;
  if (!parse_groups(p->topo_params, v, n, 1, &ng) || ng != 1 || n[0] != 2)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "dragonfly parameters '%s' are not 'hosts a group,global links a group'",
                        p->topo_params);
  if (p->hosts % v[0][0])
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "dragonfly '%s': groups of %d hosts do not divide the platform's %d",
                        p->topo_params, v[0][0], p->hosts);
  *links = 4;
  return TERN_OK;
}

/* SimGrid's dragonfly "g,l;c,l;r,l;n": g c r n hosts. The longest route: host, router, up to two
 * hops within a chassis and two between chassis on each side of one global link, router, host. */
static tern_status check_dragonfly_minimal(const sim_platform *p, int *links, core_err *err) {
  int v[4][MAX_LEVELS], n[4], ng;
  if (!parse_groups(p->topo_params, v, n, 4, &ng) || ng != 4 || n[0] != 2 || n[1] != 2 ||
      n[2] != 2 || n[3] != 1)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "dragonfly parameters '%s' are not 'groups,links;chassis,links;"
                        "routers,links;nodes'",
                        p->topo_params);
  long hosts = (long)v[0][0] * v[1][0] * v[2][0] * v[3][0];
  /* SimGrid's DragonflyZone joins group g to the others through router g of a chassis
   * (generate_links, get_local_route): more groups than routers a chassis route through
   * routers that do not exist, and SimGrid crashes */
  if (v[0][0] > v[2][0])
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "dragonfly '%s' has %d groups but %d routers a chassis: SimGrid links "
                        "group g through router g, so groups may not outnumber routers",
                        p->topo_params, v[0][0], v[2][0]);
  if (hosts != p->hosts)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "dragonfly '%s' has %ld hosts, the platform %d",
                        p->topo_params, hosts, p->hosts);
  *links = 7;
  return TERN_OK;
}

static bool positive(double x) {
  return isfinite(x) && x > 0;
}
static bool nonneg(double x) {
  return isfinite(x) && x >= 0;
}

/* The most groups of routers (g chassis c routers r, g c r = routers) SimGrid's dragonfly can
 * route (g <= r, check_dragonfly_minimal), with 4 chassis a group where the routers allow, else 2,
 * else 1. */
static void dragonfly_shape(int routers, int *g, int *c, int *r) {
  for (int groups = routers; groups >= 1; groups--) {
    if (routers % groups) continue;
    for (int chassis = 4; chassis >= 1; chassis /= 2) {
      int per = routers / groups;
      if (per % chassis || per / chassis < groups) continue;
      *g = groups, *c = chassis, *r = per / chassis;
      return;
    }
  }
}

/* Frontier's dragonfly groups (HPE's figures, as G. Lockwood's notes on Frontier give them): a
 * cabinet of 128 nodes, 4 NICs each, on 32 switches; 4 links of 200 Gb/s to each of the other
 * 73 groups. A group injects 512 x 200 Gb/s = 102.4 Tb/s and its global links carry 58.4 Tb/s. */
#define FRONTIER_GROUP_HOSTS 128
#define FRONTIER_GLOBAL_SHARE (58.4 / 102.4)

/* The parameters for a topology given none: a two-level fat tree of full bisection (leaf
 * switches of up to 16 hosts, each with as many links up as hosts down); an adaptive dragonfly
 * of Frontier's groups (the most hosts up to 128 that divide the platform's, with global links
 * of a host's rate carrying 57% of what they inject: 2048 ranks of 8 a host make 2 groups of
 * 128 hosts with 73 links each); or SimGrid's dragonfly of 2 hosts a router (1 when the hosts
 * are odd) in as many groups as SimGrid can route (dragonfly_shape): 512 ranks of 8 a host make
 * 4 groups of 2 chassis x 4 routers x 2 hosts, 2048 ranks 8 groups of 2 x 8 x 2. */
static void default_params(const sim_platform *p, char *out, size_t len) {
  if (p->topo == SIM_TOPO_FAT_TREE) {
    int leaf = 16;
    while (p->hosts % leaf)
      leaf--;
    snprintf(out, len, "2;%d,%d;1,%d;1,1", leaf, p->hosts / leaf, leaf);
  } else if (p->topo == SIM_TOPO_DRAGONFLY) {
    int group = FRONTIER_GROUP_HOSTS;
    while (p->hosts % group)
      group--;
    snprintf(out, len, "%d,%d", group, (int)CORE_MAX(1, lround(group * FRONTIER_GLOBAL_SHARE)));
  } else if (p->topo == SIM_TOPO_DRAGONFLY_MINIMAL) {
    int nodes = p->hosts % 2 ? 1 : 2, routers = p->hosts / nodes, groups = 1, chassis = 1;
    dragonfly_shape(p->hosts / nodes, &groups, &chassis, &routers);
    snprintf(out, len, "%d,2;%d,2;%d,1;%d", groups, chassis, routers, nodes);
  }
}

void sim_platform_fill_topo(sim_platform *p) {
  if (p->topo_params[0] == '\0') default_params(p, p->topo_params, sizeof p->topo_params);
}

/* The links on the longest route between two hosts (1 for geo: its regions' own NICs aside). */
static tern_status route_links(const sim_platform *p, int *links, core_err *err) {
  *links = 2;
  switch (p->topo) {
  case SIM_TOPO_FLAT:
  case SIM_TOPO_GEO:
    return TERN_OK;
  case SIM_TOPO_FAT_TREE:
    return check_fat_tree(p, links, err);
  case SIM_TOPO_DRAGONFLY:
    return check_dragonfly(p, links, err);
  case SIM_TOPO_DRAGONFLY_MINIMAL:
    return check_dragonfly_minimal(p, links, err);
  }
  return core_err_set(err, TERN_ERR_INVALID_ARG, "unknown topology %d", (int)p->topo);
}

double sim_platform_msg_cost(const sim_platform *p, double bytes) {
  if (p->ncost == 0) return p->msg_cpu + p->byte_cpu * bytes;
  if (p->ncost == 1) return p->cost_s[0];
  int i = 1;
  while (i < p->ncost - 1 && bytes > p->cost_bytes[i])
    i++;
  double x0 = p->cost_bytes[i - 1], x1 = p->cost_bytes[i], y0 = p->cost_s[i - 1], y1 = p->cost_s[i];
  double y = y0 + (y1 - y0) * (bytes - x0) / (x1 - x0);
  return y > 0 ? y : 0;
}

static tern_status check_costs(const sim_platform *p, core_err *err) {
  if (p->ncost < 0 || p->ncost > SIM_COST_POINTS)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%d message costs (at most %d)", p->ncost,
                        SIM_COST_POINTS);
  for (int i = 0; i < p->ncost; i++)
    if (!nonneg(p->cost_bytes[i]) || !nonneg(p->cost_s[i]) ||
        (i > 0 && p->cost_bytes[i] <= p->cost_bytes[i - 1]))
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "message cost %d (%g B, %g s): sizes must "
                          "ascend and costs be >= 0",
                          i, p->cost_bytes[i], p->cost_s[i]);
  return TERN_OK;
}

tern_status sim_platform_check(const sim_platform *p, core_err *err) {
  if (p->hosts < 1 || p->ranks_per_host < 1 || p->hosts > MAX_RANKS / p->ranks_per_host)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%d hosts x %d ranks: need at least 1 of each and at most %d ranks",
                        p->hosts, p->ranks_per_host, MAX_RANKS);
  if (p->nics < 1 || p->nics > 64)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%d NICs a host (1 to 64)", p->nics);
  /* fewer than 4 repeats played let one wait for a sleeping peer set a run's period: a ring
   * of 256 ranks on a fat tree came out 10 to 50 times too slow with 2 or 3 (docs/SCALE.md) */
  if (p->steady != 0 && (p->steady < 4 || p->steady > 1 << 20))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "steady after %d repeats: 0 (off) or 4 to %d",
                        p->steady, 1 << 20);
  if (p->cores < 1 || p->cores > 4096)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "%d cores per host (1 to 4096)", p->cores);
  if (!positive(p->nic_bw) || !positive(p->shm_bw) || !nonneg(p->nic_lat) || !nonneg(p->shm_lat))
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "bandwidths must be > 0 and latencies >= 0 (NIC %g B/s %g s, shared "
                        "memory %g B/s %g s)",
                        p->nic_bw, p->nic_lat, p->shm_bw, p->shm_lat);
  if (!nonneg(p->msg_cpu) || !nonneg(p->byte_cpu) || !nonneg(p->reduce_cpu) ||
      !nonneg(p->copy_cpu) || !nonneg(p->tcp_window))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "CPU costs and the TCP window must be >= 0");
  if (p->topo == SIM_TOPO_GEO && p->geo_file[0] == '\0')
    return core_err_set(err, TERN_ERR_INVALID_ARG, "a geo platform needs a fixture file");
  int links;
  tern_status rc = check_costs(p, err);
  return rc != TERN_OK ? rc : route_links(p, &links, err);
}

/* ---- XML ---------------------------------------------------------------------------------- */

static void write_cluster(const sim_platform *p, FILE *out, const char *id, int first, int last,
                          double link_lat, const char *extra) {
  fprintf(out,
          "  <cluster id=\"%s\" prefix=\"h\" radical=\"%d-%d\" suffix=\"\" speed=\"1Gf\" "
          "core=\"%d\" bw=\"%.17gBps\" lat=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\" "
          "loopback_bw=\"%.17gBps\" loopback_lat=\"%.17gs\"%s/>\n",
          id, first, last, p->cores, p->nic_bw * p->nics, link_lat, p->shm_bw, p->shm_lat, extra);
}

static tern_status write_geo(const sim_platform *p, FILE *out, core_err *err) {
  sim_geo *g = malloc(sizeof *g);
  if (g == NULL) return core_err_set(err, TERN_ERR_NOMEM, "no memory for the geo fixture");
  tern_status rc = sim_geo_load(p->geo_file, g, err);
  if (rc != TERN_OK) goto fail;
  int nr = p->regions > 0 ? p->regions : g->nregions;
  if (nr > g->nregions || nr > p->hosts) {
    rc = core_err_set(err, TERN_ERR_INVALID_ARG,
                      "%d regions asked, %s has %d and the platform %d "
                      "hosts",
                      nr, p->geo_file, g->nregions, p->hosts);
    goto fail;
  }
  for (int r = 0; r < nr; r++) {
    char id[48], extra[64];
    snprintf(id, sizeof id, "r%d", r);
    snprintf(extra, sizeof extra, " router_id=\"gw%d\"", r);
    int first = (int)((long)r * p->hosts / nr), last = (int)((long)(r + 1) * p->hosts / nr) - 1;
    fprintf(out, "  <!-- region %d: %s -->\n", r, g->names[r]);
    write_cluster(p, out, id, first, last, p->nic_lat / 2, extra);
  }
  /* SimGrid's DTD wants a zone's links before its routes. */
  for (int a = 0; a < nr; a++)
    for (int b = a + 1; b < nr; b++)
      fprintf(out,
              "  <link id=\"geo%d_%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" "
              "sharing_policy=\"FATPIPE\"/>\n",
              a, b, g->bw[a][b], g->lat[a][b]);
  for (int a = 0; a < nr; a++)
    for (int b = a + 1; b < nr; b++)
      fprintf(out,
              "  <zoneRoute src=\"r%d\" dst=\"r%d\" gw_src=\"gw%d\" gw_dst=\"gw%d\">"
              "<link_ctn id=\"geo%d_%d\"/></zoneRoute>\n",
              a, b, a, b, a, b);
fail:
  free(g);
  return rc;
}

tern_status sim_platform_write_xml(const sim_platform *p, FILE *out, core_err *err) {
  int links;
  tern_status rc = sim_platform_check(p, err);
  if (rc != TERN_OK || (rc = route_links(p, &links, err)) != TERN_OK) return rc;
  fprintf(out, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
               "<zone id=\"world\" routing=\"Full\">\n");
  char extra[sizeof p->topo_params + 64] = "";
  switch (p->topo) {
  case SIM_TOPO_GEO:
    rc = write_geo(p, out, err);
    break;
  case SIM_TOPO_DRAGONFLY: {
    int group = atoi(p->topo_params), up = atoi(strchr(p->topo_params, ',') + 1);
    snprintf(extra, sizeof extra, " topology=\"FAT_TREE\" topo_parameters=\"2;%d,%d;1,%d;1,1\"",
             group, p->hosts / group, up);
    write_cluster(p, out, "c", 0, p->hosts - 1, p->nic_lat / links, extra);
    break;
  }
  case SIM_TOPO_FAT_TREE:
  case SIM_TOPO_DRAGONFLY_MINIMAL:
    snprintf(extra, sizeof extra, " topology=\"%s\" topo_parameters=\"%s\"",
             p->topo == SIM_TOPO_FAT_TREE ? "FAT_TREE" : "DRAGONFLY", p->topo_params);
    /* fall through */
  case SIM_TOPO_FLAT:
    write_cluster(p, out, "c", 0, p->hosts - 1, p->nic_lat / links, extra);
    break;
  }
  fprintf(out, "</zone>\n</platform>\n");
  if (rc == TERN_OK && ferror(out))
    rc = core_err_set(err, TERN_ERR_SYSTEM, "writing the platform file failed");
  return rc;
}

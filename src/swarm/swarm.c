/* swarm.c: the public tern_swarm_* calls: join (listener + DHT), state download, one round of
 * averaging (match, then butterfly), leave.
 */
#include "swarm/swarm.h"

#include "compress/compress.h"
#include "core/bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static core_err join_err; /* the last failed join, for tern_swarm_last_error(NULL) */

static tern_status check_options(const tern_swarm_options *o, core_err *err) {
  if (!o || !o->listen || !o->run_id || !*o->run_id)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "tern_swarm_join needs listen and run_id");
  if (o->region && !swarm_region_name_ok(o->region))
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "region '%s': 1 to %d characters of letters, digits, '.', '_', '-'",
                        o->region, SWARM_REGION_LEN - 1);
  int nd = o->region ? 2 : o->ndims ? o->ndims : 1;
  if (nd < 1 || nd > TERN_SWARM_MAX_DIMS)
    return core_err_set(err, TERN_ERR_INVALID_ARG, "ndims %d is not in 1..%d", o->ndims,
                        TERN_SWARM_MAX_DIMS);
  for (int i = 0; i < nd && !o->region; i++) {
    if (o->coords[i] < 0)
      return core_err_set(err, TERN_ERR_INVALID_ARG, "coordinate %d is %d (< 0)", i, o->coords[i]);
    if (o->grid[i] < 0 || (o->grid[i] > 0 && o->coords[i] >= o->grid[i]))
      return core_err_set(err, TERN_ERR_INVALID_ARG,
                          "coordinate %d is %d, outside the grid's size %d on that axis", i,
                          o->coords[i], o->grid[i]);
  }
  if (o->bandwidth < 0 || !isfinite(o->bandwidth))
    return core_err_set(err, TERN_ERR_INVALID_ARG, "bandwidth %g", o->bandwidth);
  return TERN_OK;
}

/* Introduces this peer to its bootstrap peers (see SWARM_HELLO in listen.c); best effort. */
static void say_hello(tern_swarm *sw) {
  uint8_t buf[SWARM_MEMBER_MAX];
  swarm_hdr h = {.type = SWARM_HELLO, .sender = sw->id, .len = swarm_member_encode(&sw->self, buf)};
  for (int i = 0; i < sw->nbootstrap; i++) {
    swarm_member m = {.bw = 1};
    core_err err = {0};
    int fd = -1;
    uint64_t deadline = core_deadline_after(2);
    if (net_parse_addr(sw->bootstrap[i], m.host, sizeof m.host, &m.port, false, &err) == TERN_OK &&
        swarm_dial(sw, &m, deadline, &fd, &err) == TERN_OK)
      swarm_send(fd, &h, buf, deadline, sw->bootstrap[i], &err);
    if (err.msg[0]) CORE_INFO("swarm: no hello to %s: %s", sw->bootstrap[i], err.msg);
    if (fd >= 0) close(fd);
  }
}

void swarm_identity(tern_swarm *sw, const char *run_id, const char *key) {
  crypto_generichash(sw->run_hash, 32, (const uint8_t *)run_id, strlen(run_id),
                     (const uint8_t *)"tern-swarm-run", 14);
  memcpy(sw->run_id, sw->run_hash, 16);
  if (key) {
    crypto_generichash(sw->key, 32, (const uint8_t *)key, strlen(key),
                       (const uint8_t *)"tern-key-v1", 11);
    sw->keyed = true;
  } else if (core_config_get()->have_key) {
    memcpy(sw->key, core_config_get()->key, 32);
    sw->keyed = true;
  }
}

static tern_status setup(tern_swarm *sw, const tern_swarm_options *o, core_err *err) {
  char host[NET_HOST_LEN];
  int port;
  tern_status rc = net_parse_addr(o->listen, host, sizeof host, &port, true, err);
  if (rc != TERN_OK) return rc;
  if (strlen(host) >= SWARM_HOST_LEN || !*host)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "listen host '%s': give an address peers can "
                        "reach (at most %d characters)",
                        host, SWARM_HOST_LEN - 1);
  for (int i = 0; i < TERN_SWARM_MAX_BOOTSTRAP && o->bootstrap[i]; i++)
    snprintf(sw->bootstrap[sw->nbootstrap++], sizeof sw->bootstrap[0], "%s", o->bootstrap[i]);
  swarm_identity(sw, o->run_id, o->key);
  uint8_t pool[32];
  swarm_pool_key(sw, pool);
  sw->pool_tag = core_get64(pool);
  rc = swarm_check_exposure(host, (const char(*)[NET_HOST_LEN + 8]) sw->bootstrap, sw->nbootstrap,
                            sw->keyed, o->insecure != 0, err);
  if (rc != TERN_OK) return rc;
  sw->ndims = o->ndims ? o->ndims : 1;
  memcpy(sw->coords, o->coords, sizeof sw->coords);
  memcpy(sw->grid, o->grid, sizeof sw->grid);
  if (o->region) rc = swarm_region_place(sw, o->region, err);
  if (rc != TERN_OK) return rc;
  sw->measure_bw = o->region && o->bandwidth == 0; /* probe.c */
  randombytes_buf(&sw->id, sizeof sw->id);
  /* TCP and UDP share the port number; with port 0 the kernel picks a free TCP port, whose UDP
   * twin may be taken: then try another. */
  int want = port;
  for (int attempt = 0;; attempt++) {
    port = want;
    rc = net_listen(host, port, &sw->listen_fd, &port, err);
    if (rc != TERN_OK) return rc;
    rc = swarm_dht_start(sw, port, err);
    if (rc == TERN_OK || want != 0 || attempt == 20) break;
    CORE_INFO("swarm: %s; trying another port", err->msg);
    core_err_clear(err);
    swarm_dht_stop(sw);
    close(sw->listen_fd);
    sw->listen_fd = -1;
  }
  if (rc != TERN_OK) return rc;
  sw->self =
      (swarm_member){.id = sw->id, .port = port, .bw = o->bandwidth > 0 ? o->bandwidth : 1e9};
  snprintf(sw->self.host, sizeof sw->self.host, "%s", host);
  snprintf(sw->addr, sizeof sw->addr, "%s:%d", host, port);
  rc = swarm_listener_start(sw, err);
  if (rc == TERN_OK) say_hello(sw);
  return rc;
}

tern_swarm *swarm_new(void) {
  tern_swarm *sw = calloc(1, sizeof *sw);
  if (!sw) return NULL;
  sw->listen_fd = sw->wake[0] = sw->wake[1] = -1;
  sw->last_round = UINT32_MAX;
  pthread_mutex_init(&sw->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&sw->cv, &ca);
  pthread_condattr_destroy(&ca);
  return sw;
}

tern_status tern_swarm_join(tern_swarm **out, const tern_swarm_options *o) {
  if (!out) return TERN_ERR_INVALID_ARG;
  *out = NULL;
  core_err_clear(&join_err);
  if (sodium_init() < 0) return core_err_set(&join_err, TERN_ERR_SYSTEM, "libsodium");
  tern_status rc = check_options(o, &join_err);
  if (rc != TERN_OK) return rc;
  tern_swarm *sw = swarm_new();
  if (!sw) return core_err_set(&join_err, TERN_ERR_NOMEM, "tern_swarm_join");
  rc = setup(sw, o, &join_err);
  if (rc != TERN_OK) {
    CORE_WARN("swarm: join failed: %s", join_err.msg);
    tern_swarm_leave(sw);
    return rc;
  }
  CORE_INFO("swarm: peer %016llx listens on %s", (unsigned long long)sw->id, sw->addr);
  *out = sw;
  return TERN_OK;
}

unsigned long long tern_swarm_id(const tern_swarm *sw) {
  return sw ? sw->id : 0;
}

const char *tern_swarm_address(const tern_swarm *sw) {
  return sw ? sw->addr : "";
}

const char *tern_swarm_last_error(const tern_swarm *sw) {
  return sw ? sw->err.msg : join_err.msg;
}

/* Asks one live peer for its state. */
static tern_status fetch_from(tern_swarm *sw, const char *addr, float *values, size_t count,
                              uint64_t deadline, core_err *err) {
  swarm_member m = {.bw = 1};
  tern_status rc = net_parse_addr(addr, m.host, sizeof m.host, &m.port, false, err);
  int fd = -1;
  if (rc == TERN_OK) rc = swarm_dial(sw, &m, deadline, &fd, err);
  swarm_hdr h = {.type = SWARM_STATE_REQ, .sender = sw->id};
  if (rc == TERN_OK) rc = swarm_send(fd, &h, NULL, deadline, addr, err);
  if (rc == TERN_OK) rc = swarm_recv_hdr(fd, &h, deadline, addr, err);
  if (rc == TERN_OK && (h.type != SWARM_STATE || h.len != 8 + 4 * (uint64_t)count))
    rc = core_err_set(err, TERN_ERR_PEER_LOST,
                      "%s has no state of %zu values (it sent a %s of "
                      "%llu bytes)",
                      addr, count, swarm_type_name(h.type), (unsigned long long)h.len);
  uint8_t *payload = rc == TERN_OK ? malloc(h.len) : NULL;
  if (rc == TERN_OK && !payload)
    rc = core_err_set(err, TERN_ERR_NOMEM, "a state of %zu values", count);
  if (rc == TERN_OK) rc = swarm_recv_payload(fd, payload, h.len, deadline, addr, err);
  uint64_t n = rc == TERN_OK ? core_get64(payload) : 0;
  if (rc == TERN_OK && n != count)
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "%s sent %llu values for %zu", addr,
                      (unsigned long long)n, count);
  if (rc == TERN_OK) memcpy(values, payload + 8, 4 * count); /* little-endian, as listen.c sends */
  free(payload);
  if (rc == TERN_OK && !swarm_values_finite(values, count))
    rc = core_err_set(err, TERN_ERR_PROTOCOL, "%s sent a state with non-finite values: refused",
                      addr);
  if (rc == TERN_OK) sw->round = h.round;
  if (fd >= 0) close(fd);
  return rc;
}

tern_status tern_swarm_download_state(tern_swarm *sw, float *values, size_t count,
                                      double timeout_s) {
  if (!sw || !values || !count) return TERN_ERR_INVALID_ARG;
  core_err_clear(&sw->err);
  uint64_t deadline = core_deadline_after(timeout_s > 0 ? timeout_s : 10);
  for (int i = 0; i < sw->nbootstrap; i++) {
    core_err e = {0};
    if (fetch_from(sw, sw->bootstrap[i], values, count, deadline, &e) == TERN_OK) {
      CORE_INFO("swarm: state of round %u from %s", sw->round, sw->bootstrap[i]);
      return TERN_OK;
    }
    CORE_INFO("swarm: no state from %s: %s", sw->bootstrap[i], e.msg);
    core_err_clear(&sw->err);
    core_err_set(&sw->err, TERN_ERR_PEER_LOST, "no bootstrap peer gave a state; last: %s", e.msg);
  }
  return sw->nbootstrap ? TERN_ERR_PEER_LOST
                        : core_err_set(&sw->err, TERN_ERR_INVALID_ARG, "no bootstrap address");
}

static bool keep_state(tern_swarm *sw, const float *values, size_t count) {
  pthread_mutex_lock(&sw->mu);
  if (sw->state_count != count) {
    float *s = realloc(sw->state, count * sizeof *s);
    if (s) {
      sw->state = s;
      sw->state_count = count;
    }
  }
  if (sw->state_count == count) {
    memcpy(sw->state, values, count * sizeof *values);
    sw->state_round = sw->round;
    sw->has_state = true;
  }
  bool kept = sw->state_count == count;
  pthread_mutex_unlock(&sw->mu);
  return kept;
}

tern_status tern_swarm_serve_state(tern_swarm *sw, const float *values, size_t count) {
  if (!sw) return TERN_ERR_INVALID_ARG;
  core_err_clear(&sw->err);
  if (!values || !count)
    return core_err_set(&sw->err, TERN_ERR_INVALID_ARG, "tern_swarm_serve_state: no values");
  if (!keep_state(sw, values, count))
    return core_err_set(&sw->err, TERN_ERR_NOMEM, "a state of %zu values", count);
  return TERN_OK;
}

tern_status tern_swarm_average(tern_swarm *sw, float *values, size_t count, double *weight,
                               const tern_swarm_average_options *opt, tern_swarm_report *report) {
  if (!sw) return TERN_ERR_INVALID_ARG;
  core_err_clear(&sw->err);
  tern_swarm_average_options o = opt ? *opt : (tern_swarm_average_options){0};
  if (!values || !count || !weight || !isfinite(*weight) || *weight <= 0 ||
      !compress_valid(o.compress) || o.min_group < 0 || o.target_group < 0 || o.match_timeout < 0 ||
      o.average_timeout < 0 || o.random_groups < 0 || o.rounds < 0 || !(o.clip >= 0) ||
      !isfinite(o.clip))
    return core_err_set(&sw->err, TERN_ERR_INVALID_ARG,
                        "tern_swarm_average: values, count > 0, a weight > 0 and valid options");
  if (o.random_groups > 0 && sw->regional)
    return core_err_set(&sw->err, TERN_ERR_INVALID_ARG,
                        "random_groups and a region: the region places the peer on its grid");
  if (o.random_groups > 0 &&
      (o.target_group < 1 || o.random_groups > 1 << 16 || o.target_group > SWARM_MAX_GROUP ||
       sw->coords[0] >= o.random_groups * o.target_group))
    return core_err_set(&sw->err, TERN_ERR_INVALID_ARG,
                        "random_groups %d needs target_group (1..%d) and a first coordinate "
                        "below random_groups x target_group (it is %d)",
                        o.random_groups, SWARM_MAX_GROUP, sw->coords[0]);
  swarm_match_opts mo = {.min_group = o.min_group ? o.min_group : 2,
                         .target_group = o.target_group ? o.target_group : SWARM_MAX_GROUP,
                         .match_timeout = o.match_timeout > 0 ? o.match_timeout : 5,
                         .random_groups = o.random_groups};
  mo.target_group = CORE_MIN(mo.target_group, SWARM_MAX_GROUP);
  sw->last_round = o.rounds > 0 ? (uint32_t)o.rounds - 1 : UINT32_MAX;
  sw->clip = o.clip;
  swarm_probe_refresh(sw);
  tern_swarm_report r = {.round = sw->round, .weight_before = *weight};
  uint64_t t0 = core_now_ns();
  swarm_member *group = sw->last_group;
  int n = 1;
  uint64_t tag = 0;
  bool pooled = false;
  swarm_half half;
  swarm_half_begin(sw, values, count, *weight, swarm_region_codec(sw, sw->round, o.compress),
                   &half);
  tern_status rc = swarm_match(sw, &mo, group, &n, &tag, &pooled, &sw->err);
  uint64_t t1 = core_now_ns();
  r.round = sw->round; /* a late peer may have jumped ahead (match.c) */
  swarm_avg_result res = {.parts_updated = 1, .weight_after = *weight};
  double average_timeout = o.average_timeout > 0 ? o.average_timeout : 10;
  swarm_half_choose(sw, group, rc == TERN_OK ? n : 0, count, &half); /* 0: failed, takes none */
  if (rc == TERN_OK && n > 1) {
    /* a line carrying halves averages its slice only (never after a jump, so with the codec it
     * offered under); a peer that jumped ahead takes its new round's codec */
    bool slice = half.slice >= 0;
    rc = swarm_butterfly(
        sw, group, n, tag, slice ? values + half.lo : values, slice ? half.len : count, *weight,
        swarm_region_codec(sw, sw->round, o.compress), average_timeout, &res, &sw->err);
  }
  if (rc == TERN_OK)
    swarm_half_end(sw, &half, values, count, &res.weight_after, mo.match_timeout + average_timeout,
                   &res);
  sw->last_group_n = n;
  if (!pooled && mo.random_groups == 0 && res.failed_count > 0)
    swarm_line_drop_failed(sw, (int)(sw->round % (uint32_t)sw->ndims), res.failed,
                           res.failed_count);
  swarm_half_after_round(sw, sw->round, group, n, pooled, &res, values, count,
                         rc == TERN_OK ? res.weight_after : *weight);
  swarm_region_after_round(sw, sw->round, group, n, pooled);
  sw->npartners = 0;
  if (rc == TERN_OK && n > 1 && res.failed_count == 0 && res.parts_updated == n)
    for (int i = 0; i < n; i++)
      if (group[i].id != sw->id) sw->partners[sw->npartners++] = group[i].id;
  r.group_size = n;
  r.pooled = pooled;
  r.failed_count = res.failed_count;
  memcpy(r.failed, res.failed, sizeof r.failed);
  r.parts_updated = res.parts_updated;
  r.weight_after = res.weight_after;
  r.bytes_sent = res.sent;
  r.bytes_received = res.received;
  r.seconds_matching = (double)(t1 - t0) / 1e9;
  r.seconds_averaging = (double)(core_now_ns() - t1) / 1e9;
  if (rc == TERN_OK) *weight = res.weight_after;
  /* Late again after a jump: the next call starts where the others were (match.c). */
  sw->round = CORE_MAX(sw->round + 1, sw->catch_up);
  keep_state(sw, values, count);
  if (report) *report = r;
  return rc;
}

/* Tells the members of the last group, briefly, that this peer is gone. */
static void tell_leaving(tern_swarm *sw) {
  for (int i = 0; i < sw->last_group_n; i++) {
    if (sw->last_group[i].id == sw->id) continue;
    core_err err = {0};
    int fd = -1;
    uint64_t deadline = core_deadline_after(1);
    swarm_hdr h = {.type = SWARM_LEAVE, .round = sw->round, .sender = sw->id};
    if (swarm_dial(sw, &sw->last_group[i], deadline, &fd, &err) == TERN_OK)
      swarm_send(fd, &h, NULL, deadline, "a group member", &err);
    if (fd >= 0) close(fd);
  }
}

void tern_swarm_leave(tern_swarm *sw) {
  if (!sw) return;
  if (sw->thread_started) tell_leaving(sw);
  swarm_listener_stop(sw);
  /* probe answers in flight use sw; each ends by its own deadline (probe.c) */
  for (uint64_t until = core_deadline_after(5);
       atomic_load(&sw->probes_serving) > 0 && core_now_ns() < until;)
    usleep(10000);
  swarm_dht_stop(sw);
  if (sw->listen_fd >= 0) close(sw->listen_fd);
  swarm_held_free(sw);
  free(sw->ef_mass);
  free(sw->state);
  pthread_cond_destroy(&sw->cv);
  pthread_mutex_destroy(&sw->mu);
  free(sw);
}

#ifdef TERN_FAILPOINTS
bool swarm_fault(const char *name) {
  const char *f = getenv("TERN_SWARM_FAULT"), *once = getenv("TERN_SWARM_FAULT_ONCE");
  if (!f || strcmp(f, name) != 0) return false;
  if (!once) return true;
  int fd = open(once, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) return false;
  close(fd);
  return true;
}

void swarm_fault_exit(void) {
  _exit(9);
}
#endif

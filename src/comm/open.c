/* open.c: joining the group and leaving it.
 *
 * Start-up, every step bounded by one deadline (TERN_TIMEOUT from the start):
 *   1. serve the store if this rank is to (rank 0 under torchrun-style variables), connect to
 *      it, learn the run id;
 *   2. listen on a TCP port on the interface that reaches the store, and publish a record:
 *      address, port, host identity (hostname and boot id), pid;
 *   3. read every rank's record; a peer with this host's identity is reached by shared memory
 *      (unless TERN_TRANSPORT=tcp), any other by TCP;
 *   4. connect (connect.c, shm_setup.c), then meet at a barrier in the store, after which every
 *      segment has been opened by everyone who needs it and its name can be removed;
 *   5. on each host, time single copy against the rings (shm_calibrate.c).
 * Store keys carry a generation, so a program that opens communicators one after another on the
 * same store never reads the previous one's records.
 */
#include "comm/comm.h"

#include <errno.h>
#include <sched.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RECORD_LEN 512

static void host_identity(char *out, size_t len) {
  char host[64] = "?", boot[64] = "?";
  gethostname(host, sizeof host - 1);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (fscanf(f, "%63s", boot) != 1) strcpy(boot, "?");
    fclose(f);
  }
  snprintf(out, len, "%s/%s", host, boot);
}

/* The CPUs this host's ranks share: TERN_HOST_CPUS when a launcher that binds each rank to one
 * CPU says so (tern run), else this process's affinity mask. */
static int online_cpus(void) {
  if (core_config_get()->host_cpus > 0) return core_config_get()->host_cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Parses a peer's record; the store is shared with every rank, so it is checked like any input. */
static tern_status parse_record(tern_comm *c, int r, const char *rec, size_t len) {
  comm_peer *p = &c->peers[r];
  char ip[64], host[sizeof p->host];
  int port, pid;
  char text[RECORD_LEN]; /* the value is bytes: terminate it before scanning */
  bool fits = len > 0 && len < RECORD_LEN && memchr(rec, '\0', len) == NULL;
  if (fits) memcpy(text, rec, len), text[len] = '\0';
  if (!fits || sscanf(text, "v1 %63s %d %63s %d", ip, &port, host, &pid) != 4 || port < 1 ||
      port > 65535 || pid < 1)
    return core_err_set(&c->err, TERN_ERR_PROTOCOL,
                        "rank %d published a malformed record in the store: '%.*s'", r,
                        (int)CORE_MIN(len, 200), rec);
  snprintf(p->addr, sizeof p->addr, "%s:%d", ip, port);
  snprintf(p->host, sizeof p->host, "%s", host);
  p->pid = pid;
  snprintf(p->what, sizeof p->what, "rank %d (%s)", r, p->addr);
  return TERN_OK;
}

static tern_status choose_links(tern_comm *c);

/* The address peers reach this rank at: that of the interface TERN_SOCKET_IFNAME selects
 * (net/ifname.c), else that of the one that reaches the store. */
static tern_status listen_address(tern_comm *c, char *ip, size_t len) {
  const char *spec = core_config_get()->socket_ifname;
  if (spec[0]) {
    char ifname[64];
    tern_status rc = net_ifname_addr(spec, ip, len, ifname, sizeof ifname, &c->err);
    if (rc == TERN_OK) CORE_INFO("TCP on %s (%s: TERN_SOCKET_IFNAME='%s')", ip, ifname, spec);
    return rc;
  }
  net_local_addr(store_fd(c->store), ip, len);
  char *colon = strrchr(ip, ':');
  if (colon) *colon = '\0';
  return TERN_OK;
}

static tern_status publish_and_gather(tern_comm *c, const char *gen, uint64_t deadline) {
  char ip[64];
  tern_status rc = listen_address(c, ip, sizeof ip);
  if (rc != TERN_OK) return rc;
  int port = 0;
  rc = net_listen(ip, 0, &c->listen_fd, &port, &c->err);
  if (rc != TERN_OK) return rc;

  char me[64], key[64], rec[RECORD_LEN];
  host_identity(me, sizeof me);
  int n = snprintf(rec, sizeof rec, "v1 %s %d %s %d", ip, port, me, (int)getpid());
  snprintf(key, sizeof key, "%s/rank/%d", gen, c->rank);
  if ((rc = store_set(c->store, key, rec, (size_t)n, &c->err)) != TERN_OK) return rc;

  for (int r = 0; r < c->size; r++) {
    void *val = NULL;
    size_t len = 0;
    snprintf(key, sizeof key, "%s/rank/%d", gen, r);
    if ((rc = store_get(c->store, key, &val, &len, deadline, &c->err)) != TERN_OK) return rc;
    rc = parse_record(c, r, val, len);
    free(val);
    if (rc != TERN_OK) return rc;
    c->peers[r].rank = r;
    c->peers[r].pidfd = -1;
  }
  return choose_links(c);
}

/* TERN_HOSTS=H cuts the ranks into H pretend hosts of contiguous ranks, so that tests on one
 * machine exercise shared memory within a host and TCP across. */
static int pretend_host(const tern_comm *c, int r) {
  int h = core_config_get()->pretend_hosts;
  return h > 0 ? (int)((long)r * h / c->size) : 0;
}

static bool same_host(const tern_comm *c, int a, int b) {
  return strcmp(c->peers[a].host, c->peers[b].host) == 0 &&
         pretend_host(c, a) == pretend_host(c, b);
}

/* Ranks per host when every host holds the same number of contiguous ranks (what hier needs),
 * else 0. */
static int hosts_layout(const tern_comm *c) {
  int ppn = 1;
  while (ppn < c->size && same_host(c, 0, ppn))
    ppn++;
  if (c->size % ppn != 0) return 0;
  for (int r = 1; r < c->size; r++)
    if (same_host(c, r, r - 1) != (r % ppn != 0)) return 0;
  return ppn;
}

/* Shared memory to the peers on this (pretend) host unless TERN_TRANSPORT=tcp, TCP to the rest. */
static tern_status choose_links(tern_comm *c) {
  const core_config *cfg = core_config_get();
  if (cfg->pretend_hosts > c->size)
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG, "TERN_HOSTS=%d, but the job has %d ranks",
                        cfg->pretend_hosts, c->size);
  int cpu_local = 0;
  for (int r = 0; r < c->size; r++) {
    comm_peer *p = &c->peers[r];
    bool local = same_host(c, r, c->rank);
    cpu_local += strcmp(p->host, c->peers[c->rank].host) == 0;
    if (r == c->rank)
      p->link = COMM_LINK_SELF;
    else if (local && cfg->transport != CORE_TRANSPORT_TCP)
      p->link = COMM_LINK_SHM;
    else
      p->link = COMM_LINK_TCP;
    if (p->link == COMM_LINK_TCP && cfg->transport == CORE_TRANSPORT_SHM)
      return core_err_set(&c->err, TERN_ERR_INVALID_ARG,
                          "TERN_TRANSPORT=shm, but %s is on another host (%s%s)", p->what, p->host,
                          cfg->pretend_hosts ? ", or another TERN_HOSTS host" : "");
    if (local) {
      if (r < c->rank) c->local_rank++;
      c->local_size++;
    }
  }
  c->ppn = hosts_layout(c);
  if ((c->host_id = calloc((unsigned)c->size, sizeof(int))) == NULL)
    return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for the hosts of %d ranks", c->size);
  c->nhosts = 0;
  for (int r = 0; r < c->size; r++) {
    c->host_id[r] = r;
    for (int q = 0; q < r && c->host_id[r] == r; q++)
      if (same_host(c, q, r)) c->host_id[r] = q;
    c->nhosts += c->host_id[r] == r;
  }
  c->host_cpus = online_cpus();
  c->oversubscribed = cpu_local > c->host_cpus;
  return TERN_OK;
}

/* Everyone has connected and opened what they need: meet, so that names can be removed. */
static tern_status barrier(tern_comm *c, const char *gen, uint64_t deadline) {
  char key[64];
  int64_t arrived = 0;
  snprintf(key, sizeof key, "%s/ready", gen);
  tern_status rc = store_add(c->store, key, 1, &arrived, &c->err);
  snprintf(key, sizeof key, "%s/go", gen);
  if (rc == TERN_OK && arrived == c->size) rc = store_set(c->store, key, "1", 1, &c->err);
  void *val = NULL;
  size_t len;
  if (rc == TERN_OK) rc = store_get(c->store, key, &val, &len, deadline, &c->err);
  free(val);
  return rc;
}

static tern_status start_store(tern_comm *c, const char *store_addr, bool serve_store,
                               uint64_t deadline, char *gen, size_t gen_len) {
  const core_config *cfg = core_config_get();
  const uint8_t *key = cfg->have_key ? cfg->key : NULL;
  tern_status rc;
  if (serve_store) {
    char host[NET_HOST_LEN];
    int port;
    uint8_t run_id[16];
    randombytes_buf(run_id, sizeof run_id);
    rc = net_parse_addr(store_addr, host, sizeof host, &port, false, &c->err);
    if (rc != TERN_OK) return rc;
    core_err serve_err = {0};
    /* somebody already serves there, or the address is not this host's: be a client */
    /* every interface, as torchrun's store does: MASTER_ADDR may name this host by a name that
     * resolves to a loopback address here (Debian maps the hostname to 127.0.1.1) */
    if (store_server_start(&c->server, "", port, c->size, run_id, key, &serve_err) != TERN_OK)
      CORE_DEBUG("not serving the store at %s (%s): connecting to it", store_addr, serve_err.msg);
  }
  rc = store_connect(&c->store, store_addr, c->rank, c->size, key, deadline, &c->err);
  if (rc != TERN_OK) return rc;
  memcpy(c->run_id, store_run_id(c->store), sizeof c->run_id);
  int64_t generation = 0;
  char key_name[64];
  snprintf(key_name, sizeof key_name, "gen/%d", c->rank);
  rc = store_add(c->store, key_name, 1, &generation, &c->err);
  snprintf(gen, gen_len, "c%lld", (long long)generation);
  return rc;
}

tern_status comm_open(tern_comm *c, int rank, int size, const char *store_addr, bool serve_store) {
  const core_config *cfg = core_config_get();
  c->rank = rank;
  c->size = size;
  c->listen_fd = c->abort_fd = -1;
  c->timeout_s = cfg->timeout_s;
  c->nstreams = cfg->tcp_streams;
  core_log_set_rank(rank);
  if (cfg->config_error[0])
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG, "bad environment: %s", cfg->config_error);
  if (size < 1 || rank < 0 || rank >= size)
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG, "rank %d of size %d: need 0 <= rank < size",
                        rank, size);
  if (store_addr == NULL || store_addr[0] == '\0')
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG, "no store address (host:port) was given");
  uint64_t deadline = core_deadline_after(c->timeout_s);
  char gen[32];
  tern_status rc = TERN_OK;
  c->peers = calloc((size_t)size, sizeof *c->peers);
  c->active = calloc((size_t)size, sizeof *c->active);
  c->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->peers == NULL || c->active == NULL || c->abort_fd < 0) {
    rc = core_err_set(&c->err, TERN_ERR_NOMEM, "no memory or eventfd for a communicator of %d",
                      size);
    goto fail;
  }
  for (int r = 0; r < size; r++)
    c->peers[r].pidfd = -1;
  if ((rc = start_store(c, store_addr, serve_store, deadline, gen, sizeof gen)) != TERN_OK)
    goto fail;
  snprintf(c->gen, sizeof c->gen, "%s", gen);
  if ((rc = publish_and_gather(c, gen, deadline)) != TERN_OK) goto fail;
  if ((rc = comm_connect_tcp(c, deadline)) != TERN_OK) goto fail;
  if ((rc = comm_setup_shm(c, gen, deadline)) != TERN_OK) goto fail;
  if ((rc = barrier(c, gen, deadline)) != TERN_OK) goto fail;
  net_shm_seg_unlink(c->seg);
  if ((rc = comm_calibrate_shm(c, gen, deadline)) != TERN_OK) goto fail;

  int nshm = 0;
  for (int r = 0; r < size; r++)
    nshm += c->peers[r].link == COMM_LINK_SHM;
  c->any_tcp = nshm < size - 1;
  CORE_INFO("rank %d of %d up: %d peers on shared memory, %d over TCP (%d streams each)%s%s", rank,
            size, nshm, size - 1 - nshm, c->nstreams,
            c->oversubscribed ? ", host oversubscribed: waits yield at once" : "",
            cfg->have_key ? ", authenticated" : "");
  return TERN_OK;
fail:
  comm_close(c);
  return rc;
}

/* Tells the peers that this rank is done with the communicator (state: NET_SHM_ABORTED when it
 * gave up, NET_SHM_CLOSED when it closed cleanly); safe from any thread. */
static void shut_links(tern_comm *c, uint32_t state) {
  if (c->seg) {
    atomic_store(net_shm_seg_state(c->seg), state);
    net_shm_ring_bell(net_shm_seg_bell(c->seg), net_shm_seg_sleeping(c->seg));
  }
  for (int r = 0; r < c->size; r++) {
    comm_peer *p = &c->peers[r];
    if (p->link == COMM_LINK_TCP)
      net_tcp_shutdown(&p->tcp);
    else if (p->link == COMM_LINK_SHM && p->seg)
      net_shm_ring_bell(net_shm_seg_bell(p->seg), net_shm_seg_sleeping(p->seg));
  }
}

void comm_abort(tern_comm *c) {
  if (atomic_exchange(&c->aborted, true)) return;
  uint64_t one = 1;
  ssize_t w = write(c->abort_fd, &one, sizeof one);
  (void)w; /* an eventfd write only fails when the counter would overflow */
  shut_links(c, NET_SHM_ABORTED);
}

tern_status comm_break(tern_comm *c, tern_status rc) {
  if (c->broken == TERN_OK) {
    c->broken = rc;
    shut_links(c, NET_SHM_ABORTED);
    for (int r = 0; c->peers && r < c->size; r++)
      if (c->peers[r].link == COMM_LINK_SHM) net_shm_chan_quiesce(&c->peers[r].shm);
  }
  return rc;
}

void comm_close(tern_comm *c) {
  bool clean = c->broken == TERN_OK && !atomic_load(&c->aborted);
  if (clean && c->peers) shut_links(c, NET_SHM_CLOSED); /* wakes a peer that waits for us */
  if (c->peers) {
    for (int r = 0; r < c->size; r++) {
      comm_peer *p = &c->peers[r];
      if (p->link == COMM_LINK_TCP) net_tcp_chan_close(&p->tcp);
      if (p->link == COMM_LINK_SHM) net_shm_chan_close(&p->shm);
      net_shm_seg_close(p->seg);
      if (p->pidfd >= 0) close(p->pidfd);
    }
  }
  net_shm_seg_close(c->seg);
  store_close(c->store, clean);
  if (c->server) {
    /* the store must outlive every rank's use of it: wait for the others' goodbyes */
    core_err ignored = {0};
    if (clean && store_server_wait_all_left(c->server, c->timeout_s, &ignored) != TERN_OK)
      CORE_WARN("closing the store before every rank left: %s", ignored.msg);
    store_server_stop(c->server);
  }
  if (c->listen_fd >= 0) close(c->listen_fd);
  if (c->abort_fd >= 0) close(c->abort_fd);
  free(c->peers);
  free(c->active);
  free(c->host_id);
  c->host_id = NULL;
  c->peers = NULL;
  c->active = NULL;
  c->store = NULL;
  c->server = NULL;
  c->seg = NULL;
  c->listen_fd = c->abort_fd = -1;
}

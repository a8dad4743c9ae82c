/* shm_setup.c: shared memory with the peers on this host.
 *
 * This rank creates its segment with one inbound ring per local peer, publishes its name and
 * the address of its CMA probe word, then opens each local peer's segment. Ring numbering needs
 * no negotiation: in the segment of rank o, the ring written by rank w is w's position among o's
 * local peers in rank order, which every rank computes the same way from the records.
 * A pidfd per local peer lets a wait notice at once that the peer it waits for has died.
 */
#include "comm/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ring_index(const tern_comm *c, int owner, int writer) {
  int idx = 0;
  for (int q = 0; q < writer; q++)
    if (q != owner && (c->peers[q].link == COMM_LINK_SHM || q == c->rank)) idx++;
  return idx;
}

static tern_status open_peer(tern_comm *c, int r, const char *gen, uint64_t deadline) {
  comm_peer *p = &c->peers[r];
  char key[64], name[128];
  unsigned long long probe;
  void *val = NULL;
  size_t len = 0;
  snprintf(key, sizeof key, "%s/shm/%d", gen, r);
  tern_status rc = store_get(c->store, key, &val, &len, deadline, &c->err);
  if (rc != TERN_OK) return rc;
  char text[200];
  bool ok = len > 0 && len < sizeof text && memchr(val, '\0', len) == NULL;
  if (ok) memcpy(text, val, len), text[len] = '\0';
  ok = ok && sscanf(text, "v1 %127s %llx", name, &probe) == 2 && strncmp(name, "/tern-", 6) == 0;
  free(val);
  if (!ok)
    return core_err_set(&c->err, TERN_ERR_PROTOCOL, "%s published a malformed shm record", p->what);
  if ((rc = net_shm_seg_open(&p->seg, name, c->run_id, r, &c->err)) != TERN_OK) return rc;
  net_shm_ring *in = net_shm_seg_ring(c->seg, ring_index(c, c->rank, r));
  net_shm_ring *out = net_shm_seg_ring(p->seg, ring_index(c, r, c->rank));
  if (in == NULL || out == NULL)
    return core_err_set(&c->err, TERN_ERR_PROTOCOL, "%s's segment has no ring for rank %d", p->what,
                        c->rank);
  net_shm_chan_init(&p->shm, r, p->pid, in, out, p->seg, p->what);
  /* Single copy needs the reader running while the sender waits for it. When ranks outnumber
   * the CPUs, the rings' buffering, which lets a sender go on without its reader, is worth more
   * than the copy saved until messages are large (net/shm.c); and whether single copy is kept
   * at all, crowded or not, the start-up timing decides (comm/shm_calibrate.c). */
  int cma = core_config_get()->shm_cma;
  if (cma != 0) net_shm_chan_probe_cma(&p->shm, probe);
  if (cma < 0 && c->oversubscribed)
    p->shm.cma_floor = p->shm.cma_floor_exchange = NET_CMA_CROWDED_MIN;
  /* a shared copy puts a waiting sender's core to work: there is none spare when crowded */
  p->shm.share = p->shm.cma && !c->oversubscribed;
  p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
  CORE_DEBUG("%s on shared memory, %s", p->what,
             p->shm.cma ? "single copy (CMA)" : "copied through slots (no CMA)");
  return TERN_OK;
}

tern_status comm_setup_shm(tern_comm *c, const char *gen, uint64_t deadline) {
  int nlocal = 0;
  for (int r = 0; r < c->size; r++)
    nlocal += c->peers[r].link == COMM_LINK_SHM;
  if (nlocal == 0) return TERN_OK;
  char name[128], key[64], rec[200];
  int n = snprintf(name, sizeof name, "/tern-");
  for (int i = 0; i < 8; i++)
    n += snprintf(name + n, sizeof name - (size_t)n, "%02x", c->run_id[i]);
  snprintf(name + n, sizeof name - (size_t)n, "-%s-%d", gen, c->rank);
  tern_status rc = net_shm_seg_create(&c->seg, name, c->run_id, c->rank, nlocal, &c->err);
  if (rc != TERN_OK) return rc;
  int len = snprintf(rec, sizeof rec, "v1 %s %llx", name,
                     (unsigned long long)net_shm_seg_probe_addr(c->seg));
  snprintf(key, sizeof key, "%s/shm/%d", gen, c->rank);
  if ((rc = store_set(c->store, key, rec, (size_t)len, &c->err)) != TERN_OK) return rc;
  for (int r = 0; r < c->size && rc == TERN_OK; r++)
    if (c->peers[r].link == COMM_LINK_SHM) rc = open_peer(c, r, gen, deadline);
  return rc;
}

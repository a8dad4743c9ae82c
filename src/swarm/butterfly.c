/* butterfly.c: the all-reduce inside a group.
 *
 * Member j reduces part j of the vector, [off[j], off[j+1]), whose length follows its declared
 * bandwidth. Every member sends part j of value to member j with its weight w (one thread per
 * member it sends to, each with the round's deadline); member j adds up w * value over the
 * contributions that arrived by the reduce deadline, divides by their total weight W, and sends
 * the averaged part back with W and the set S of contributors (a 64-bit mask).
 *
 * Order on each link: member i sends j its contribution to part j, then (once part i is
 * reduced) the result of part i, over the same path. Both at once would share the link, and the
 * reducer j, which cannot answer anyone before all its contributions are in, would wait for ours
 * at half speed. So j tells i as soon as i's contribution is in (SWARM_PART_IN), and i holds
 * its result for j back until then. On the WAN benchmark (bench/swarm), a group of 4 across
 * regions averaged in 9.2 to 10.9 s against 7.5 s of bytes on its slowest link; in 7.3 to 9.9 s
 * in this order.
 *
 * Consistency when members fail: a part comes back only to the members in its S, and every
 * member of S gets the same bytes (the reducer keeps the decoded copy of what it sends). A
 * member whose part did not reach the reducer in time keeps its own values for that part, and
 * so does everyone when the reducer itself died: nothing is counted twice. The weight mass of
 * part j, W, is shared equally by the members of S, so this peer's new weight is the mean, over
 * parts and by length, of W_j / |S_j| (or of its own w where the part was not updated).
 */
#include "swarm/swarm.h"

#include "compress/compress.h"
#include "core/bytes.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void swarm_parts(const swarm_member *group, int n, size_t count, size_t *off) {
  double bw[SWARM_MAX_GROUP], sorted[SWARM_MAX_GROUP] = {0}, total = 0, cum = 0;
  for (int j = 0; j < n; j++)
    sorted[j] = group[j].bw;
  qsort(sorted, (size_t)n, sizeof *sorted, by_value);
  double median = n ? sorted[n / 2] : 1;
  for (int j = 0; j < n; j++) {
    bw[j] =
        CORE_MIN(CORE_MAX(group[j].bw, median / SWARM_PARTS_SPREAD), median * SWARM_PARTS_SPREAD);
    total += bw[j];
  }
  off[0] = 0;
  for (int j = 0; j < n; j++) {
    cum += bw[j];
    off[j + 1] = j == n - 1 ? count : (size_t)((double)count * (cum / total));
    if (off[j + 1] < off[j]) off[j + 1] = off[j];
  }
}

/* One member this peer sends its part to and hears back from. */
typedef struct job {
  tern_swarm *sw;
  const swarm_member *m;
  int part, me;
  uint64_t tag;
  const float *src;
  size_t len;
  double weight;
  tern_compress codec;
  uint64_t deadline;
  pthread_t thread;
  bool started, ok, part_sent;
  atomic_bool gone;    /* this member failed us before the end: its own part will not come either */
  atomic_bool part_in; /* the member has our whole part (or never will): our result may go */
  float *out;
  double W;
  uint64_t mask;
  unsigned long long sent, received;
  /* int8ef (compress/ef.c): our reference (codes of our own part) goes to the member, its
   * reference for its part comes back; mass is our residual on its part, mass_after what it
   * becomes once our contribution counts. */
  const uint8_t *ref_mine;
  size_t ref_mine_len;
  int me_part;
  atomic_bool ref_failed; /* our reference could not go: the member is gone or broken */
  float *ref;
  const float *mass;
  float *mass_after;
  core_err err;
} job;

/* ---- int8ef: the references (see the top of compress/ef.c) ------------------------------ */

typedef struct ref_want {
  uint32_t round;
  uint64_t tag, sender;
  int part;
} ref_want;

static bool is_ref(const swarm_conn *c, void *arg) {
  const ref_want *w = arg;
  return c->hdr.type == SWARM_REF && c->hdr.round == w->round && c->hdr.tag == w->tag &&
         c->hdr.sender == w->sender && c->hdr.part == w->part;
}

/* Sends our reference to the member on a connection of its own; a thread, because both ends
 * send theirs at once and a large one waits for the other end to read it. */
static void *send_ref(void *arg) {
  job *j = arg;
  char what[128];
  snprintf(what, sizeof what, "peer %016llx (%s:%d)", (unsigned long long)j->m->id, j->m->host,
           j->m->port);
  swarm_hdr h = {.type = SWARM_REF,
                 .codec = TERN_COMPRESS_INT8EF,
                 .part = (uint16_t)j->me_part,
                 .round = j->sw->round,
                 .sender = j->sw->id,
                 .tag = j->tag,
                 .len = j->ref_mine_len};
  core_err err = {0};
  int fd = -1;
  if (swarm_dial_refused(j->sw, j->m, j->deadline, SWARM_REFUSED_DEAD_SECONDS, &fd, &err) ==
          TERN_OK &&
      swarm_send(fd, &h, j->ref_mine, j->deadline, what, &err) == TERN_OK)
    j->sent += SWARM_HDR_LEN + h.len;
  if (err.msg[0]) {
    CORE_INFO("swarm: round %u: reference to %s: %s", j->sw->round, what, err.msg);
    atomic_store(&j->ref_failed, true);
  }
  if (fd >= 0) close(fd);
  return NULL;
}

/* Our reference out, the member's in (j->ref, len floats). */
static tern_status swap_refs(job *j, const char *what) {
  pthread_t th;
  bool started = pthread_create(&th, NULL, send_ref, j) == 0;
  if (!started) send_ref(j);
  size_t clen = compress_size(TERN_COMPRESS_INT8, j->len);
  ref_want w = {j->sw->round, j->tag, j->m->id, j->part};
  swarm_conn c = {.fd = -1};
  uint8_t *codes = malloc(CORE_MAX(clen, 1));
  j->ref = malloc(CORE_MAX(j->len, 1) * sizeof(float));
  tern_status rc = codes && j->ref ? TERN_OK : core_err_set(&j->err, TERN_ERR_NOMEM, "a reference");
  /* A member we cannot send to (refused, reset: dead) sends us nothing either: stop waiting
   * then, a tenth of a second at most after, not at the deadline. */
  bool took = false;
  while (rc == TERN_OK && !took && !atomic_load(&j->ref_failed) && core_now_ns() < j->deadline)
    took = swarm_queue_take(j->sw, is_ref, &w, CORE_MIN(j->deadline, core_now_ns() + 100000000ull),
                            &c);
  if (rc == TERN_OK && !took)
    rc = core_err_set(&j->err, TERN_ERR_PEER_LOST, "%s sent no reference for part %d", what,
                      j->part);
  if (rc == TERN_OK && c.hdr.len != clen)
    rc = core_err_set(&j->err, TERN_ERR_PROTOCOL, "%s sent a reference of %llu bytes for %zu", what,
                      (unsigned long long)c.hdr.len, clen);
  if (rc == TERN_OK) rc = swarm_recv_payload(c.fd, codes, clen, j->deadline, what, &j->err);
  if (rc == TERN_OK) rc = compress_decode(TERN_COMPRESS_INT8, codes, clen, j->len, j->ref, &j->err);
  if (rc == TERN_OK) j->received += SWARM_HDR_LEN + clen;
  swarm_conn_close(&c);
  free(codes);
  if (started) pthread_join(th, NULL);
  return rc;
}

/* Our contribution's codes (out) and the residual it leaves (j->mass_after). */
static tern_status encode_ef(job *j, uint8_t *out) {
  float *sent = malloc(CORE_MAX(j->len, 1) * sizeof *sent);
  float *tmp = malloc(CORE_MAX(j->len, 1) * sizeof *tmp);
  j->mass_after = malloc(CORE_MAX(j->len, 1) * sizeof *j->mass_after);
  tern_status rc = sent && tmp && j->mass_after
                       ? TERN_OK
                       : core_err_set(&j->err, TERN_ERR_NOMEM, "part %d", j->part);
  if (rc == TERN_OK) {
    compress_ef_encode(j->src, j->mass, j->weight, j->ref, j->len, out, sent, tmp);
    compress_ef_residual(j->src, j->mass, j->weight, sent, j->len, j->mass_after);
  }
  free(sent);
  free(tmp);
  return rc;
}

/* An f32 round after int8ef ones delivers our residual on the part whole: we send x + mass / w,
 * and nothing stays behind (mass_after zero). */
static tern_status encode_f32_with_residual(job *j, uint8_t *out) {
  float *tmp = malloc(CORE_MAX(j->len, 1) * sizeof *tmp);
  j->mass_after = calloc(CORE_MAX(j->len, 1), sizeof *j->mass_after);
  tern_status rc =
      tmp && j->mass_after ? TERN_OK : core_err_set(&j->err, TERN_ERR_NOMEM, "part %d", j->part);
  for (size_t k = 0; rc == TERN_OK && k < j->len; k++)
    tmp[k] = (float)((double)j->src[k] + (double)j->mass[k] / j->weight);
  if (rc == TERN_OK) compress_encode(TERN_COMPRESS_NONE, tmp, j->len, out);
  free(tmp);
  return rc;
}

static tern_status job_run(job *j, char *what, int *fd) {
  size_t clen = compress_size(j->codec, j->len);
  uint8_t *buf = malloc(CORE_MAX(8 + clen, 16 + clen));
  j->out = malloc(CORE_MAX(j->len, 1) * sizeof(float));
  if (!buf || !j->out) {
    free(buf);
    return core_err_set(&j->err, TERN_ERR_NOMEM, "part %d", j->part);
  }
  core_put_f64(buf, j->weight);
  bool ef = j->codec == TERN_COMPRESS_INT8EF;
  tern_status rc = ef ? swap_refs(j, what) : TERN_OK;
  if (rc == TERN_OK && ef) rc = encode_ef(j, buf + 8);
  if (!ef && j->mass) rc = encode_f32_with_residual(j, buf + 8); /* mass: only with f32 */
  if (!ef && !j->mass) compress_encode(j->codec, j->src, j->len, buf + 8);
  if (rc != TERN_OK) {
    free(buf);
    return rc;
  }
  swarm_hdr h = {.type = SWARM_PART,
                 .codec = (uint8_t)j->codec,
                 .part = (uint16_t)j->part,
                 .round = j->sw->round,
                 .sender = j->sw->id,
                 .tag = j->tag,
                 .len = 8 + clen};
  /* A member of the group listens: a refusal is its death (SWARM_REFUSED_DEAD_SECONDS), and the
   * part's reduce stops waiting for it; retried a quarter of a second, it held up the round of a
   * kill that long (bench/swarm/pace.sh). */
  rc = swarm_dial_refused(j->sw, j->m, j->deadline, SWARM_REFUSED_DEAD_SECONDS, fd, &j->err);
  if (rc == TERN_OK) rc = swarm_send(*fd, &h, buf, j->deadline, what, &j->err);
  if (rc == TERN_OK) j->sent += SWARM_HDR_LEN + h.len;
  j->part_sent = rc == TERN_OK;
  CORE_DEBUG("swarm: round %u: part %d (%zu values) handed to %s", j->sw->round, j->part, j->len,
             what);
  if (rc == TERN_OK) rc = swarm_recv_hdr(*fd, &h, j->deadline, what, &j->err);
  if (rc == TERN_OK && h.type == SWARM_PART_IN && h.tag == j->tag && h.part == j->part &&
      h.len == 0) {
    atomic_store(&j->part_in, true);
    CORE_DEBUG("swarm: round %u: part %d is in at %s", j->sw->round, j->part, what);
    rc = swarm_recv_hdr(*fd, &h, j->deadline, what, &j->err);
  }
  if (rc == TERN_OK && (h.type != SWARM_RESULT || h.tag != j->tag || h.part != j->part ||
                        h.codec != j->codec || h.len != 16 + clen))
    rc = core_err_set(&j->err, TERN_ERR_PROTOCOL, "%s answered a %s of %llu bytes", what,
                      swarm_type_name(h.type), (unsigned long long)h.len);
  if (rc == TERN_OK) rc = swarm_recv_payload(*fd, buf, h.len, j->deadline, what, &j->err);
  if (rc == TERN_OK) {
    j->received += SWARM_HDR_LEN + h.len;
    j->W = core_get_f64(buf);
    j->mask = core_get64(buf + 8);
    if (!isfinite(j->W) || j->W <= 0 || !(j->mask >> j->me & 1))
      rc = core_err_set(&j->err, TERN_ERR_PROTOCOL, "%s sent weight %g, mask %llx", what, j->W,
                        (unsigned long long)j->mask);
  }
  if (rc == TERN_OK)
    rc = ef ? compress_ef_decode(buf + 16, clen, j->ref, j->len, j->out, &j->err)
            : compress_decode(j->codec, buf + 16, clen, j->len, j->out, &j->err);
  if (rc == TERN_OK && !swarm_values_finite(j->out, j->len))
    rc = core_err_set(&j->err, TERN_ERR_PROTOCOL,
                      "%s sent a result with non-finite values: "
                      "refused",
                      what);
  if (rc == TERN_OK)
    CORE_DEBUG("swarm: round %u: part %d's result from %s", j->sw->round, j->part, what);
  free(buf);
  return rc;
}

static void *job_main(void *arg) {
  job *j = arg;
  char what[128];
  snprintf(what, sizeof what, "peer %016llx (%s:%d)", (unsigned long long)j->m->id, j->m->host,
           j->m->port);
  int fd = -1;
  j->ok = job_run(j, what, &fd) == TERN_OK;
  if (fd >= 0) close(fd);
  /* Refused, closed or garbled before the deadline: the member is dead or broken, and the
   * reduce of our own part stops waiting for it (gather) instead of sitting out the timeout. */
  if (!j->ok) atomic_store(&j->gone, true);
  atomic_store(&j->part_in, true); /* whatever happened, nothing of ours is on the way now */
  /* Members whose reducer dies may ask for this part (repair.c); j->out stays valid, owned by
   * the held table, until this peer's next all-reduce. */
  swarm_held_set(j->sw, j->part, j->W, j->mask, j->ok ? j->out : NULL, j->len);
  if (!j->ok) free(j->out);
  j->out = NULL;
  if (!j->ok) CORE_INFO("swarm: round %u: part %d: %s", j->sw->round, j->part, j->err.msg);
  return NULL;
}

/* A contribution to this peer's part, read in the poll loop. */
typedef struct contrib {
  int fd;
  uint8_t *buf;
  size_t len, done;
  bool complete;
} contrib;

typedef struct part_want {
  uint32_t round;
  uint64_t tag;
  int part;
  const swarm_member *group;
  int n;
  const contrib *have;
  const job *jobs; /* jobs[i].gone: member i will not send */
} part_want;

static bool is_part(const swarm_conn *c, void *arg) {
  const part_want *w = arg;
  if (c->hdr.type != SWARM_PART || c->hdr.round != w->round || c->hdr.tag != w->tag ||
      c->hdr.part != w->part)
    return false;
  for (int i = 0; i < w->n; i++)
    if (w->group[i].id == c->hdr.sender) return w->have[i].fd < 0 && !w->have[i].complete;
  return false;
}

/* Registers a queued part connection: the header must announce exactly our part's bytes. */
static void take_part(const part_want *w, contrib *have, swarm_conn *c, size_t expect,
                      tern_compress codec) {
  int i = 0;
  while (w->group[i].id != c->hdr.sender)
    i++;
  size_t tag = swarm_seal_overhead(c->fd); /* keyed: the data's tag follows it (seal.c) */
  if (c->hdr.len != expect || c->hdr.codec != codec || !(have[i].buf = malloc(expect + tag))) {
    CORE_WARN("swarm: round %u: %s sent a part of %llu bytes in codec %u (expected %zu in %u): "
              "dropped",
              w->round, c->from, (unsigned long long)c->hdr.len, c->hdr.codec, expect, codec);
    swarm_conn_close(c);
    return;
  }
  have[i].fd = c->fd;
  have[i].len = expect + tag;
  c->fd = -1;
  swarm_conn_close(c);
}

/* The contributions still to come: neither complete, nor from a member known gone with none
 * of its bytes on the way. */
static int awaited(const part_want *w, const contrib *have) {
  int k = 0;
  for (int i = 0; i < w->n; i++)
    k += !have[i].complete && (have[i].fd >= 0 || !atomic_load(&w->jobs[i].gone));
  return k;
}

/* Tells a contributor that its whole part is in, so that it sends us its own result now (see
 * the top of the file). A contributor that does not hear it sends its result regardless, later. */
static void tell_part_in(tern_swarm *sw, const part_want *w, int fd, uint64_t deadline) {
  swarm_hdr h = {.type = SWARM_PART_IN,
                 .part = (uint16_t)w->part,
                 .round = w->round,
                 .sender = sw->id,
                 .tag = w->tag};
  core_err err = {0};
  swarm_send(fd, &h, NULL, CORE_MIN(deadline, core_deadline_after(1)), "a contributor", &err);
}

/* Reads the contributions to part `me` until all arrived (or their senders are gone) or the
 * deadline. */
static void gather(tern_swarm *sw, part_want *w, contrib *have, size_t expect, tern_compress codec,
                   uint64_t deadline, unsigned long long *received) {
  int n = w->n;
  while (awaited(w, have) > 0 && core_now_ns() < deadline) {
    swarm_conn c;
    int open = 0;
    for (int i = 0; i < n; i++)
      open += have[i].fd >= 0 && !have[i].complete;
    /* Nothing to read yet: sleep on the queue (a hundredth of a second at a time, to see
     * members the send threads found gone: with a tenth, a member killed before it sent its
     * part held the round that long, bench/swarm/pace.sh); else glance at it and poll the
     * sockets. */
    uint64_t nap = CORE_MIN(deadline, core_now_ns() + 10000000ull);
    while (swarm_queue_take(sw, is_part, w, open ? 0 : nap, &c)) {
      take_part(w, have, &c, expect, codec);
      open++;
    }
    struct pollfd fds[SWARM_MAX_GROUP];
    int who[SWARM_MAX_GROUP], k = 0;
    for (int i = 0; i < n; i++)
      if (have[i].fd >= 0 && !have[i].complete) { /* a complete one waits for its result */
        who[k] = i;
        fds[k++] = (struct pollfd){.fd = have[i].fd, .events = POLLIN};
      }
    if (k == 0) continue;
    if (poll(fds, (nfds_t)k, core_ms_left(deadline, 5)) <= 0) continue;
    for (int q = 0; q < k; q++) {
      contrib *h = &have[who[q]];
      if (!fds[q].revents) continue;
      ssize_t r = read(h->fd, h->buf + h->done, h->len - h->done);
      if (r > 0) h->done += (size_t)r;
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        close(h->fd); /* the contributor died mid-part: its part is not counted */
        h->fd = -1;
        free(h->buf);
        h->buf = NULL;
        h->done = 0;
        continue;
      }
      if (h->done == h->len) {
        core_err err = {0};
        size_t tag = swarm_seal_overhead(h->fd);
        if (swarm_seal_open(h->fd, h->buf, h->len - tag, h->buf + h->len - tag, "a contributor",
                            &err) != TERN_OK) {
          CORE_WARN("swarm: round %u: peer %016llx (%s:%d): %s", w->round,
                    (unsigned long long)w->group[who[q]].id, w->group[who[q]].host,
                    w->group[who[q]].port, err.msg);
          close(h->fd); /* not counted, as a contributor that died mid-part */
          h->fd = -1;
          free(h->buf);
          h->buf = NULL;
          h->done = 0;
          continue;
        }
        h->complete = true;
        *received += SWARM_HDR_LEN + h->len;
        tell_part_in(sw, w, h->fd, deadline);
      }
    }
  }
}

/* A contributor whose result wait ran out closes its connection before it asks us for the
 * result (repair.c): one gone by the time we decide is left out of S, so that it keeps its own
 * values exactly when the others do not count them. It sends nothing after its part, so a
 * readable end or an error on the socket means it hung up. */
static void drop_hung_up(const part_want *w, contrib *have) {
  for (int i = 0; i < w->n; i++) {
    if (have[i].fd < 0 || !have[i].complete) continue;
    char b;
    ssize_t r = recv(have[i].fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      CORE_INFO("swarm: round %u: peer %016llx gave up on part %d before it was reduced: left "
                "out",
                w->round, (unsigned long long)w->group[i].id, w->part);
      have[i].complete = false;
    }
  }
}

/* exit-mid-results (tests/swarm/reducer_dies.sh): a reducer that has two or more results to
 * send dies right after the first is out, which is where a crash leaves its part updated for
 * some members and not for others (repair.c). */
static bool fault_exit_mid_results(const contrib *have, int n) {
  int to = 0;
  for (int i = 0; i < n; i++)
    to += have[i].fd >= 0 && have[i].complete;
  return to >= 2 && swarm_fault("exit-mid-results");
}

/* Sends result (len bytes) on every complete contribution's socket, concurrently, by deadline;
 * to each member once it has our own part for it (jobs[i].part_in), or at hold_until
 * regardless: the hold only shares the link, and a member of S must get its result. */
static void scatter(contrib *have, int n, const job *jobs, const swarm_hdr *h,
                    const uint8_t *result, uint64_t hold_until, uint64_t deadline,
                    unsigned long long *sent) {
  bool die = fault_exit_mid_results(have, n);
  /* One frame per member: on a keyed swarm each connection seals its own (seal.c). */
  uint8_t *frame[SWARM_MAX_GROUP] = {0};
  size_t total[SWARM_MAX_GROUP] = {0};
  for (int i = 0; i < n; i++) {
    have[i].done = 0;
    core_err err = {0};
    if (have[i].fd >= 0 && have[i].complete &&
        swarm_seal_frame(have[i].fd, h, result, &frame[i], &total[i], &err) != TERN_OK)
      have[i].complete = false; /* no memory: it keeps its own values for this part */
  }
  for (;;) {
    struct pollfd fds[SWARM_MAX_GROUP];
    int who[SWARM_MAX_GROUP], k = 0, held = 0;
    for (int i = 0; i < n; i++) {
      if (have[i].fd < 0 || !have[i].complete || have[i].done >= total[i]) continue;
      if (!atomic_load(&jobs[i].part_in) && core_now_ns() < hold_until) {
        held++;
        continue;
      }
      who[k] = i;
      fds[k++] = (struct pollfd){.fd = have[i].fd, .events = POLLOUT};
    }
    if ((k == 0 && held == 0) || core_now_ns() >= deadline) break;
    /* Held results: look again at the flags every 10 ms. */
    if (poll(fds, (nfds_t)k, core_ms_left(deadline, held ? 10 : 100)) <= 0) continue;
    for (int q = 0; q < k; q++) {
      contrib *c = &have[who[q]];
      size_t all = total[who[q]];
      if (!fds[q].revents) continue;
      ssize_t r = send(c->fd, frame[who[q]] + c->done, all - c->done, MSG_NOSIGNAL);
      if (r > 0) {
        c->done += (size_t)r;
        if (c->done == all) *sent += all;
        if (c->done == all && die) swarm_fault_exit();
      } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
        c->complete = false; /* it will not hear back; it keeps its own values for this part */
      }
    }
  }
  for (int i = 0; i < n; i++)
    free(frame[i]);
}

/* This peer's own part: gather, average, send back. Returns the part's weight and mask. */
static tern_status reduce_own(tern_swarm *sw, const swarm_member *g, int n, int me, uint64_t tag,
                              float *part, size_t len, double w, tern_compress codec,
                              uint64_t reduce_deadline, uint64_t hold_until, uint64_t send_deadline,
                              const job *jobs, const float *ref_me, float *mass_me,
                              swarm_avg_result *res, double *W_out, uint64_t *mask_out,
                              bool *got_from) {
  size_t clen = compress_size(codec, len);
  contrib have[SWARM_MAX_GROUP];
  for (int i = 0; i < n; i++)
    have[i] = (contrib){.fd = -1};
  have[me].complete = true;
  part_want pw = {sw->round, tag, me, g, n, have, jobs};
  gather(sw, &pw, have, 8 + clen, codec, reduce_deadline, &res->received);
  drop_hung_up(&pw, have);
  CORE_DEBUG("swarm: round %u: own part %d gathered", sw->round, me);
  double *acc = calloc(CORE_MAX(len, 1), sizeof *acc);
  float *tmp = malloc(CORE_MAX(len, 1) * sizeof *tmp);
  uint8_t *out = malloc(16 + clen);
  /* CenteredClip (clip.c) needs every contribution at once: row i is member i's */
  float *rows = sw->clip > 0 ? malloc((size_t)n * CORE_MAX(len, 1) * sizeof *rows) : NULL;
  const float *clipped[SWARM_MAX_GROUP];
  int nclipped = 0;
  tern_status rc = acc && tmp && out && (rows || !(sw->clip > 0)) ? TERN_OK : TERN_ERR_NOMEM;
  /* int8ef: our own contribution is exact, our residual on this part included */
  for (size_t k = 0; rows && mass_me && k < len; k++)
    rows[(size_t)me * len + k] = part[k] + (float)((double)mass_me[k] / w);
  if (rows) {
    if (!mass_me) memcpy(rows + (size_t)me * len, part, len * sizeof *part);
    clipped[nclipped++] = rows + (size_t)me * len;
  }
  double W = w;
  uint64_t mask = 1ull << me;
  for (size_t k = 0; rc == TERN_OK && k < len; k++)
    acc[k] = w * (double)part[k] + (mass_me ? (double)mass_me[k] : 0);
  for (int i = 0; rc == TERN_OK && i < n; i++) {
    if (i == me || !have[i].complete) continue;
    double wi = core_get_f64(have[i].buf);
    core_err err = {0};
    if (!isfinite(wi) || wi < 0 ||
        (ref_me ? compress_ef_decode(have[i].buf + 8, clen, ref_me, len, tmp, &err)
                : compress_decode(codec, have[i].buf + 8, clen, len, tmp, &err)) != TERN_OK) {
      CORE_WARN("swarm: round %u: peer %016llx sent weight %g or bad data: dropped %s", sw->round,
                (unsigned long long)g[i].id, wi, err.msg);
      have[i].complete = false;
      continue;
    }
    if (!swarm_values_finite(tmp, len)) {
      CORE_WARN("swarm: round %u: peer %016llx (%s:%d) sent non-finite values: refused", sw->round,
                (unsigned long long)g[i].id, g[i].host, g[i].port);
      have[i].complete = false;
      continue;
    }
    if (rows) {
      memcpy(rows + (size_t)i * len, tmp, len * sizeof *tmp);
      clipped[nclipped++] = rows + (size_t)i * len;
    }
    for (size_t k = 0; k < len; k++)
      acc[k] += wi * (double)tmp[k];
    W += wi;
    mask |= 1ull << i;
  }
  for (int i = 0; i < n; i++)
    got_from[i] = have[i].complete;
  if (rc == TERN_OK && W > 0) {
    for (size_t k = 0; k < len; k++)
      tmp[k] = (float)(acc[k] / W);
    if (rows) rc = swarm_centered_clip(clipped, nclipped, len, sw->clip, tmp);
  }
  if (rc == TERN_OK && W > 0) {
    core_put_f64(out, W);
    core_put64(out + 8, mask);
    if (ref_me) { /* int8ef: what the codes miss stays here as residual (compress/ef.c) */
      float *scratch = malloc(CORE_MAX(len, 1) * sizeof *scratch);
      rc = scratch ? TERN_OK : TERN_ERR_NOMEM;
      if (scratch) compress_ef_encode(tmp, NULL, 1, ref_me, len, out + 16, part, scratch);
      for (size_t k = 0; scratch && k < len; k++)
        mass_me[k] = (float)(W * ((double)tmp[k] - (double)part[k]));
      free(scratch);
    } else {
      compress_encode(codec, tmp, len, out + 16);
      compress_decode(codec, out + 16, clen, len, part, NULL); /* hold what the others get */
      for (size_t k = 0; mass_me && k < len; k++) /* f32: the residual went out whole */
        mass_me[k] = 0;
    }
  }
  if (rc == TERN_OK && W > 0) {
    /* The decision, for a member of S whose result does not come to ask for (repair.c). */
    float *copy = malloc(CORE_MAX(len, 1) * sizeof *copy);
    if (copy) memcpy(copy, part, len * sizeof *part);
    swarm_held_set(sw, me, W, mask, copy, len);
    /* late-results (tests/swarm/slow_member.sh): the results leave only after the members' wait
     * for them (the whole timeout T; hold_until and send_deadline are 5T/8 and 3T/4) ran out. */
    if (swarm_fault("late-results"))
      core_sleep_ms(core_ms_left(send_deadline + 3 * (send_deadline - hold_until), 600000));
    swarm_hdr h = {.type = SWARM_RESULT,
                   .codec = (uint8_t)codec,
                   .part = (uint16_t)me,
                   .round = sw->round,
                   .sender = sw->id,
                   .tag = tag,
                   .len = 16 + clen};
    have[me].complete = false;
    scatter(have, n, jobs, &h, out, hold_until, send_deadline, &res->sent);
    CORE_DEBUG("swarm: round %u: own part %d's results sent", sw->round, me);
  } else {
    swarm_held_set(sw, me, 0, 0, NULL, 0); /* no result: askers keep their own values */
  }
  for (int i = 0; i < n; i++) {
    if (have[i].fd >= 0) close(have[i].fd);
    free(have[i].buf);
  }
  free(acc);
  free(tmp);
  free(out);
  free(rows);
  *W_out = W;
  *mask_out = mask;
  return rc;
}

/* Part j's reducer took our part and never answered: maybe it answered others before dying.
 * Adopts their copy (repair.c) into dst and the job's W and mask; false: nobody has it. */
static bool repair_part(tern_swarm *sw, const swarm_member *g, int n, int me, int j, uint64_t tag,
                        float *dst, size_t len, job *jb, uint64_t deadline) {
  float *got = malloc(CORE_MAX(len, 1) * sizeof *got);
  if (!got || !swarm_repair(sw, g, n, me, j, tag, got, len, &jb->W, &jb->mask, deadline)) {
    free(got);
    return false;
  }
  memcpy(dst, got, len * sizeof *got);
  swarm_held_set(sw, j, jb->W, jb->mask, got, len); /* for the members who ask us in turn */
  return true;
}

/* int8ef: our reference (the codes of our own part, and their values) and the residual. */
typedef struct ef_refs {
  uint8_t *codes;
  size_t codes_len;
  float *ref;
} ef_refs;

static tern_status ef_begin(tern_swarm *sw, ef_refs *ef, const float *part, size_t len,
                            size_t count) {
  if (sw->ef_count != count) { /* another vector: no residual carries over */
    free(sw->ef_mass);
    sw->ef_mass = calloc(count, sizeof *sw->ef_mass);
    sw->ef_count = sw->ef_mass ? count : 0;
  }
  ef->codes_len = compress_size(TERN_COMPRESS_INT8, len);
  ef->codes = malloc(CORE_MAX(ef->codes_len, 1));
  ef->ref = malloc(CORE_MAX(len, 1) * sizeof *ef->ref);
  if (!sw->ef_mass || !ef->codes || !ef->ref) {
    free(ef->codes);
    free(ef->ref);
    *ef = (ef_refs){0};
    return TERN_ERR_NOMEM;
  }
  compress_ef_reference(part, len, ef->codes, ef->ref);
  return TERN_OK;
}

static int popcount64(uint64_t x) {
  int c = 0;
  for (; x; x &= x - 1)
    c++;
  return c;
}

tern_status swarm_butterfly(tern_swarm *sw, const swarm_member *g, int n, uint64_t tag,
                            float *values, size_t count, double weight, tern_compress codec,
                            double timeout_s, swarm_avg_result *res, core_err *err) {
  size_t off[SWARM_MAX_GROUP + 1];
  swarm_parts(g, n, count, off);
  int me = 0;
  while (g[me].id != sw->id)
    me++;
  /* exit-after-match (tests/swarm/member_dies.sh): dies in a group, before sending a byte. */
  if (swarm_fault("exit-after-match")) swarm_fault_exit();
  /* Written (one write) before any byte of this round goes out: tests/swarm/grid_churn.sh tells
   * from it whether a SIGSTOP landed between two rounds or in one. */
  CORE_DEBUG("swarm: round %u: parts go out to a group of %d", sw->round, n);
  uint64_t t0 = core_now_ns(), T = (uint64_t)(timeout_s * 1e9);
  job *jobs = calloc((size_t)n, sizeof *jobs);
  if (!jobs) return core_err_set(err, TERN_ERR_NOMEM, "all-reduce of %zu values", count);
  ef_refs ef = {0};
  if (codec == TERN_COMPRESS_INT8EF &&
      ef_begin(sw, &ef, values + off[me], off[me + 1] - off[me], count) != TERN_OK) {
    free(jobs);
    return core_err_set(err, TERN_ERR_NOMEM, "int8ef of %zu values", count);
  }
  /* the residual of earlier int8ef rounds: int8ef carries it on, an f32 round delivers it whole,
   * other codecs leave it for the next int8ef round */
  float *mass = ef.ref || (codec == TERN_COMPRESS_NONE && sw->ef_mass && sw->ef_count == count)
                    ? sw->ef_mass
                    : NULL;
  swarm_held_begin(sw, sw->round, tag, n);
  for (int j = 0; j < n; j++) {
    if (j == me) continue;
    jobs[j] = (job){.sw = sw,
                    .m = &g[j],
                    .part = j,
                    .me = me,
                    .tag = tag,
                    .src = values + off[j],
                    .len = off[j + 1] - off[j],
                    .weight = weight,
                    .codec = codec,
                    .deadline = t0 + T,
                    .ref_mine = ef.codes,
                    .ref_mine_len = ef.codes_len,
                    .me_part = me,
                    .mass = mass ? mass + off[j] : NULL};
    jobs[j].started = pthread_create(&jobs[j].thread, NULL, job_main, &jobs[j]) == 0;
    if (!jobs[j].started) atomic_store(&jobs[j].part_in, true);
  }
  double Wme = weight;
  uint64_t mask_me = 1ull << me;
  bool got_from[SWARM_MAX_GROUP];
  /* Parts must all be in by half the time; results go back by three quarters (held ones from
   * five eighths on regardless); the senders wait for their results until the end, and a
   * sender whose result did not come asks for it (repair.c). */
  tern_status rc = reduce_own(sw, g, n, me, tag, values + off[me], off[me + 1] - off[me], weight,
                              codec, t0 + T / 2, t0 + T / 8 * 5, t0 + T / 4 * 3, jobs, ef.ref,
                              mass ? mass + off[me] : NULL, res, &Wme, &mask_me, got_from);
  double wsum = count
                    ? (double)(off[me + 1] - off[me]) / (double)count * (Wme / popcount64(mask_me))
                    : weight;
  res->parts_updated = 1;
  for (int j = 0; j < n; j++) {
    if (j == me) continue;
    size_t len = off[j + 1] - off[j];
    if (jobs[j].started) pthread_join(jobs[j].thread, NULL);
    bool ok = jobs[j].started && jobs[j].ok;
    if (ok) {
      pthread_mutex_lock(&sw->mu); /* the held table owns the result now */
      memcpy(values + off[j], sw->held.values[j], len * sizeof(float));
      pthread_mutex_unlock(&sw->mu);
    } else if (jobs[j].part_sent) {
      ok = repair_part(sw, g, n, me, j, tag, values + off[j], len, &jobs[j],
                       core_deadline_after(timeout_s / 4));
    }
    if (ok && jobs[j].mass_after) /* our contribution counted: its residual is what stays */
      memcpy(sw->ef_mass + off[j], jobs[j].mass_after, len * sizeof(float));
    free(jobs[j].mass_after);
    free(jobs[j].ref);
    if (count)
      wsum += (double)len / (double)count * (ok ? jobs[j].W / popcount64(jobs[j].mask) : weight);
    res->parts_updated += ok;
    res->sent += jobs[j].sent;
    res->received += jobs[j].received;
    if ((!ok || !got_from[j] || !jobs[j].ok) && res->failed_count < TERN_SWARM_MAX_FAILED)
      res->failed[res->failed_count++] = g[j].id;
  }
  free(jobs);
  free(ef.codes);
  free(ef.ref);
  res->weight_after = wsum;
  if (rc != TERN_OK) return core_err_set(err, rc, "all-reduce of %zu values", count);
  return TERN_OK;
}

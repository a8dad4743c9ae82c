/* engine.c: requests, their queue, and the progress thread.
 *
 * Operations run one at a time, in the order they were issued (that is how every rank agrees on
 * what each message belongs to), except that consecutive point-to-point requests run together,
 * those issued while they run included (run_p2p).
 * Whoever holds run_lock runs the queue: the progress thread, or a caller in tern_wait or a
 * blocking call that finds the thread idle. A nonblocking request is left to its caller for a
 * while first: the progress thread is woken by a timer, GRACE_NS after a submission that found
 * it unset, not at once. A caller that waits at once (torch.distributed's synchronous calls are
 * a nonblocking call and its wait) then runs the request itself on its own thread, as a
 * blocking call would, instead of sleeping until the thread has run it: at 2 and 4 ranks on 2
 * cores that handoff cost 20-35 us a call (docs/PYTORCH.md, "Speed"). A caller that computes
 * meanwhile has its request started at most GRACE_NS (plus the timer's slack) later. The timer
 * is set once per expiry, not per submission: setting it is a system call of about 3 us on a
 * virtual machine, where an eventfd write that wakes the thread costs more. A blocking call on an
 * idle communicator never meets the thread at all: it runs on the caller's thread from the engine's
 * own warm request (no handoff, no allocation). The same poll that the thread sleeps in also
 * watches the listening port, to refuse strays.
 *
 * Locks: `lock` guards the queue and request states and is held only briefly; run_lock is held
 * while running operations, and guards what only the runner touches (the collective count, the
 * inline request, the executor's caches). Never take `lock` and then wait for run_lock.
 *
 * The runner (engine.h) does collectives: the engine gives it the request and its state, and
 * knows nothing else of them.
 *
 * A collective gets its number (coll_seq) when it starts to run, not when it is issued: they run
 * one at a time in issue order, so the numbers are the same, and the blocking call on an idle
 * communicator needs no `lock` at all: it takes run_lock, sees the queue empty (qlen is atomic
 * for this look) and runs. That is two atomic operations a call instead of four (two mutexes
 * taken and released), about 120 instructions of an 8-byte call's 1500 (callgrind).
 */
#include "comm/engine.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define POOL (TERN_MAX_OUTSTANDING + 1) /* + 1 for a blocking call queued behind them */
/* Long enough that a run of synchronous calls wakes the thread about once a millisecond, not once
 * a call or two: where ranks outnumber the cores, each wake-up preempts a rank the others wait
 * for (docs/PYTORCH.md, "Speed": at 100 us the backend's call cost 3x as much at n = 4). */
#define GRACE_NS 1000000

struct comm_engine {
  pthread_mutex_t lock;
  pthread_cond_t done_cond;
  pthread_mutex_t run_lock;
  tern_request pool[POOL];
  tern_request *queue[POOL]; /* issued, not yet finished, in issue order */
  int qhead;
  _Atomic int qlen;        /* written under `lock`; read without it by the idle blocking call */
  tern_request inline_req; /* blocking calls on an idle communicator */
  uint32_t coll_seq;       /* under run_lock */
  pthread_t thread;
  int wake_fd;  /* eventfd: stop */
  int timer_fd; /* timerfd: a submitted request's grace is over */
  _Atomic bool timer_set;
  bool stop;
  const comm_runner *runner;
  void *state; /* the runner's */
};

void *comm_engine_runner_state(const tern_comm *c) {
  return c->engine->state;
}

static tern_status run_coll(tern_comm *c, tern_request *r) {
  return c->engine->runner->run(c, r);
}

/* Copies what a request asks into a slot, keeping the slot's warm storage. */
static void load(tern_request *slot, const tern_request *proto) {
  net_xfer *xfers = slot->xfers;
  size_t cap = slot->xfers_cap;
  *slot = *proto;
  slot->xfers = xfers;
  slot->xfers_cap = cap;
  slot->done = false;
  slot->in_use = true;
  slot->status = TERN_OK;
}

/* Takes the queue's entry at place j (from its head) out of it, under `lock`. */
static void dequeue_at(comm_engine *e, int j) {
  for (int k = j; k + 1 < e->qlen; k++)
    e->queue[(e->qhead + k) % POOL] = e->queue[(e->qhead + k + 1) % POOL];
  e->qlen--;
}

/* Ends those of the first `posted` queue entries (posted point-to-point requests) whose transfer
 * is complete, or all of them with rc when rc is a failure; they leave the queue at once, so
 * that their callers may reuse them. Returns how many stay posted; *oldest, the transfer of the
 * first of them. */
static int retire_p2p(tern_comm *c, int posted, tern_status rc, const net_xfer **oldest) {
  comm_engine *e = c->engine;
  bool any = false;
  pthread_mutex_lock(&e->lock);
  for (int j = 0; j < posted;) {
    tern_request *r = e->queue[(e->qhead + j) % POOL];
    if (rc == TERN_OK && !r->xfers[0].complete) {
      j++;
      continue;
    }
    r->status = rc;
    r->done = true;
    dequeue_at(e, j);
    posted--;
    any = true;
  }
  if (any) pthread_cond_broadcast(&e->done_cond);
  *oldest = posted ? &e->queue[e->qhead]->xfers[0] : NULL;
  pthread_mutex_unlock(&e->lock);
  return posted;
}

/* Posts the point-to-point requests queued behind the first *posted entries, up to the next
 * collective; they may have been issued while the posted ones ran. */
static tern_status post_issued_p2p(tern_comm *c, int *posted, bool *moved) {
  comm_engine *e = c->engine;
  while (*posted < atomic_load(&e->qlen)) {
    pthread_mutex_lock(&e->lock);
    tern_request *r = e->queue[(e->qhead + *posted) % POOL];
    pthread_mutex_unlock(&e->lock);
    if (r->type == COMM_REQ_COLL) break;
    ++*posted; /* before it is posted: a request that fails to post ends with the others */
    *moved = true;
    tern_status rc = comm_p2p_post(c, r);
    if (rc != TERN_OK) return rc;
  }
  return TERN_OK;
}

/* Gives the posted receives from any source that have no sender yet the peers that now have a
 * send for this rank, in issue order; c->any_source says whether some still wait. */
static tern_status match_any_p2p(tern_comm *c, int posted, bool *moved) {
  comm_engine *e = c->engine;
  bool waiting = false;
  for (int j = 0; j < posted; j++) {
    pthread_mutex_lock(&e->lock);
    tern_request *r = e->queue[(e->qhead + j) % POOL];
    pthread_mutex_unlock(&e->lock);
    bool matched = false;
    tern_status rc = waiting ? TERN_OK : comm_p2p_match(c, r, &matched);
    if (rc != TERN_OK) return rc;
    *moved |= matched;
    waiting |= r->peer == COMM_ANY_PEER; /* the later ones wait behind it */
  }
  c->any_source = waiting;
  return TERN_OK;
}

/* Runs the point-to-point requests at the queue's head, and those issued behind them while they
 * run, all in flight at once; each ends as its transfer completes. In MPI's terms: isend and
 * irecv do not block each other. Running only those queued when the run began deadlocked a swap:
 * the progress thread could start a rank's isend alone before the caller had issued its irecv,
 * and a send that completes only once its receiver has taken it (a single-copy shared-memory
 * message, or one larger than the ring or the socket buffers hold) then waited for a peer whose
 * isend waited the same way, each receive queued behind its rank's send (docs/API.md,
 * "Nonblocking twins"). */
static void run_p2p(tern_comm *c) {
  bool fresh = comm_op_fresh(c);
  int posted = 0;
  const net_xfer *oldest;
  comm_idle_state idle;
  comm_idle_reset(&idle);
  tern_status rc = TERN_OK; /* on a broken communicator, the first post fails (and ends) */
  while (rc == TERN_OK) {
    bool moved = false;
    if ((rc = post_issued_p2p(c, &posted, &moved)) != TERN_OK ||
        (rc = comm_progress(c, &moved)) != TERN_OK ||
        (rc = match_any_p2p(c, posted, &moved)) != TERN_OK)
      break;
    /* after every pass, not only one that moved: the wait's own looks (comm_idle's last look
     * before it sleeps) complete transfers too */
    if ((posted = retire_p2p(c, posted, TERN_OK, &oldest)) == 0) return;
    if (moved)
      comm_idle_reset(&idle);
    else
      rc = comm_idle(c, &idle, oldest);
  }
  atomic_store(&c->arg_err_last, false);
  c->any_source = false;
  retire_p2p(c, posted, comm_p2p_failed(c, rc, fresh, posted), &oldest);
}

/* Runs the request at the queue's head (and the point-to-point ones behind it). Called with
 * run_lock held and `lock` not held. Returns false when the queue is empty. */
static bool run_head(tern_comm *c) {
  comm_engine *e = c->engine;
  pthread_mutex_lock(&e->lock);
  if (e->qlen == 0) {
    pthread_mutex_unlock(&e->lock);
    return false;
  }
  tern_request *r = e->queue[e->qhead];
  if (r->type != COMM_REQ_COLL) {
    pthread_mutex_unlock(&e->lock);
    run_p2p(c);
    return true;
  }
  r->seq = e->coll_seq++;
  pthread_mutex_unlock(&e->lock);

  tern_status rc = run_coll(c, r);
  if (rc != TERN_OK) atomic_store(&c->arg_err_last, false);
  pthread_mutex_lock(&e->lock);
  r->status = rc;
  r->done = true;
  e->qhead = (e->qhead + 1) % POOL;
  e->qlen--;
  pthread_cond_broadcast(&e->done_cond);
  pthread_mutex_unlock(&e->lock);
  return true;
}

static void run_queue(tern_comm *c) {
  while (run_head(c)) {
  }
}

/* Sets the progress thread's timer ns ahead, unless it is set already. */
static void set_timer(comm_engine *e, uint64_t ns) {
  struct itimerspec t = {
      .it_value = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)}};
  uint64_t one = 1;
  if (!atomic_exchange(&e->timer_set, true) && timerfd_settime(e->timer_fd, 0, &t, NULL) < 0) {
    atomic_store(&e->timer_set, false); /* no timer: the thread is woken now instead */
    if (write(e->wake_fd, &one, sizeof one) < 0)
      CORE_WARN("waking the progress thread failed: %s", strerror(errno));
  }
}

/* How much longer the queue's head is left to its caller: 0 when its grace is over (or the
 * queue is empty, or the head is a blocking call queued behind others). The thread takes no
 * request a caller may be about to wait for: a caller that found its request taken would sleep
 * until the thread had run it, the handoff the grace avoids. */
static uint64_t head_grace_left(comm_engine *e) {
  pthread_mutex_lock(&e->lock);
  uint64_t at = e->qlen ? e->queue[e->qhead]->submitted_ns : 0, now = core_now_ns();
  pthread_mutex_unlock(&e->lock);
  return at && now - at < GRACE_NS ? GRACE_NS - (now - at) : 0;
}

static void *progress_thread(void *arg) {
  tern_comm *c = arg;
  comm_engine *e = c->engine;
  for (;;) {
    struct pollfd fds[3] = {{.fd = e->wake_fd, .events = POLLIN},
                            {.fd = e->timer_fd, .events = POLLIN},
                            {.fd = c->listen_fd, .events = POLLIN}};
    int n = poll(fds, c->listen_fd >= 0 ? 3 : 2, -1);
    if (n < 0 && errno != EINTR) break;
    uint64_t v;
    if (fds[0].revents && read(e->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN) break;
    if (fds[1].revents && read(e->timer_fd, &v, sizeof v) < 0 && errno != EAGAIN) break;
    /* unset before the queue is looked at: a submission that still saw it set is in the queue */
    if (fds[1].revents) atomic_store(&e->timer_set, false);
    pthread_mutex_lock(&e->lock);
    bool stop = e->stop;
    pthread_mutex_unlock(&e->lock);
    if (stop) break;
    bool timer = fds[1].revents != 0;
    uint64_t left = timer ? head_grace_left(e) : 0;
    if (left) {
      set_timer(e, left);
      continue; /* a stray connection is still there at the next poll */
    }
    /* a caller running the queue on its own thread has it: look again later, rather than wait
     * for the lock and then take the request that caller issues next */
    if (timer ? pthread_mutex_trylock(&e->run_lock) != 0 : pthread_mutex_lock(&e->run_lock) != 0) {
      set_timer(e, GRACE_NS);
      continue;
    }
    if (fds[2].revents) comm_refuse_strays(c);
    run_queue(c);
    pthread_mutex_unlock(&e->run_lock);
    pthread_mutex_lock(&e->lock);
    pthread_cond_broadcast(&e->done_cond); /* waiters that lost the race for run_lock retry */
    pthread_mutex_unlock(&e->lock);
  }
  return NULL;
}

/* Waits until r is done, running the queue whenever nobody else is. */
static tern_status wait_done(tern_comm *c, tern_request *r) {
  comm_engine *e = c->engine;
  pthread_mutex_lock(&e->lock);
  while (!r->done) {
    if (pthread_mutex_trylock(&e->run_lock) == 0) {
      pthread_mutex_unlock(&e->lock);
      for (;;) {
        pthread_mutex_lock(&e->lock);
        bool done = r->done;
        pthread_mutex_unlock(&e->lock);
        if (done || !run_head(c)) break;
      }
      pthread_mutex_unlock(&e->run_lock);
      pthread_mutex_lock(&e->lock);
      continue;
    }
    pthread_cond_wait(&e->done_cond, &e->lock);
  }
  tern_status rc = r->status;
  r->in_use = false;
  pthread_mutex_unlock(&e->lock);
  return rc;
}

static tern_request *enqueue(tern_comm *c, const tern_request *proto) {
  comm_engine *e = c->engine;
  tern_request *slot = NULL;
  for (int i = 0; i < POOL && slot == NULL; i++)
    if (!e->pool[i].in_use) slot = &e->pool[i];
  if (slot == NULL || e->qlen == POOL) return NULL;
  load(slot, proto);
  e->queue[(e->qhead + e->qlen) % POOL] = slot;
  e->qlen++;
  return slot;
}

tern_status comm_engine_run_blocking(tern_comm *c, const tern_request *proto) {
  comm_engine *e = c->engine;
  if (atomic_load(&e->qlen) == 0 && pthread_mutex_trylock(&e->run_lock) == 0) {
    if (atomic_load(&e->qlen) == 0) { /* again: a request queued since then runs first */
      tern_request *r = &e->inline_req;
      load(r, proto);
      if (r->type == COMM_REQ_COLL) r->seq = e->coll_seq++;
      tern_status rc = r->type == COMM_REQ_COLL ? run_coll(c, r) : comm_p2p_run(c, r);
      if (rc != TERN_OK) atomic_store(&c->arg_err_last, false);
      r->in_use = false;
      pthread_mutex_unlock(&e->run_lock);
      return rc;
    }
    pthread_mutex_unlock(&e->run_lock);
  }
  pthread_mutex_lock(&e->lock);
  tern_request *r = enqueue(c, proto);
  pthread_mutex_unlock(&e->lock);
  if (r == NULL)
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG, "more than %d requests outstanding",
                        TERN_MAX_OUTSTANDING);
  return wait_done(c, r);
}

tern_status comm_engine_submit(tern_comm *c, const tern_request *proto, tern_request **out) {
  comm_engine *e = c->engine;
  pthread_mutex_lock(&e->lock);
  int outstanding = 0;
  for (int i = 0; i < POOL; i++)
    outstanding += e->pool[i].in_use;
  tern_request *r = outstanding < TERN_MAX_OUTSTANDING ? enqueue(c, proto) : NULL;
  if (r != NULL) r->submitted_ns = core_now_ns();
  pthread_mutex_unlock(&e->lock);
  if (r == NULL)
    return core_err_set(&c->err, TERN_ERR_INVALID_ARG,
                        "more than %d requests outstanding: wait for some first",
                        TERN_MAX_OUTSTANDING);
  set_timer(e, GRACE_NS);
  /* a runner asleep on the doorbell in run_p2p posts this request as soon as it sees it */
  if (c->seg) net_shm_ring_bell(net_shm_seg_bell(c->seg), net_shm_seg_sleeping(c->seg));
  *out = r;
  return TERN_OK;
}

tern_status tern_wait(tern_request *req) {
  if (req == NULL) return TERN_ERR_INVALID_ARG;
  return wait_done(req->comm, req);
}

tern_status tern_test(tern_request *req, int *done) {
  if (req == NULL || done == NULL) return TERN_ERR_INVALID_ARG;
  comm_engine *e = req->comm->engine;
  pthread_mutex_lock(&e->lock);
  bool finished = req->done;
  tern_status rc = TERN_OK;
  if (finished) {
    rc = req->status;
    req->in_use = false;
  }
  pthread_mutex_unlock(&e->lock);
  *done = finished;
  return rc;
}

tern_status comm_engine_start(tern_comm *c, const comm_runner *runner) {
  comm_engine *e = calloc(1, sizeof *e);
  if (e == NULL) return core_err_set(&c->err, TERN_ERR_NOMEM, "no memory for the engine");
  tern_status rc = runner->start(c, &e->state);
  if (rc != TERN_OK) {
    free(e);
    return rc;
  }
  e->runner = runner;
  pthread_mutex_init(&e->lock, NULL);
  pthread_mutex_init(&e->run_lock, NULL);
  pthread_cond_init(&e->done_cond, NULL);
  e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  e->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  c->engine = e;
  if (e->wake_fd < 0 || e->timer_fd < 0 ||
      pthread_create(&e->thread, NULL, progress_thread, c) != 0) {
    rc = core_err_errno(&c->err, errno, "starting the progress thread");
    if (e->wake_fd >= 0) close(e->wake_fd);
    if (e->timer_fd >= 0) close(e->timer_fd);
    e->wake_fd = e->timer_fd = -1;
    e->stop = true; /* no thread to join */
    comm_engine_stop(c);
    return rc;
  }
  return TERN_OK;
}

bool comm_engine_busy(tern_comm *c) {
  comm_engine *e = c->engine;
  if (e == NULL) return false;
  pthread_mutex_lock(&e->lock);
  bool busy = e->qlen > 0;
  pthread_mutex_unlock(&e->lock);
  return busy;
}

void comm_engine_wake_all(tern_comm *c) {
  comm_engine *e = c->engine;
  if (e == NULL) return;
  pthread_mutex_lock(&e->lock);
  pthread_cond_broadcast(&e->done_cond);
  pthread_mutex_unlock(&e->lock);
}

void comm_engine_stop(tern_comm *c) {
  comm_engine *e = c->engine;
  if (e == NULL) return;
  pthread_mutex_lock(&e->lock);
  bool joinable = !e->stop;
  e->stop = true;
  pthread_mutex_unlock(&e->lock);
  if (joinable) {
    uint64_t one = 1;
    if (write(e->wake_fd, &one, sizeof one) < 0) CORE_WARN("waking the progress thread failed");
    pthread_join(e->thread, NULL);
  }
  for (int i = 0; i < POOL; i++)
    free(e->pool[i].xfers);
  free(e->inline_req.xfers);
  e->runner->stop(e->state);
  if (e->wake_fd >= 0) close(e->wake_fd);
  if (e->timer_fd >= 0) close(e->timer_fd);
  pthread_mutex_destroy(&e->lock);
  pthread_mutex_destroy(&e->run_lock);
  pthread_cond_destroy(&e->done_cond);
  free(e);
  c->engine = NULL;
}

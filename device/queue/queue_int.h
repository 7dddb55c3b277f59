/*
 * device/queue/queue_int.h - what the queue module's files share: queue.c
 * (service, sessions, queue pairs, arena access), queue_poll.c (pollers,
 * fetching SQEs), sqe.c (validating an SQE into a command, sqe.h) and
 * queue_done.c (results, completions, the notifier). Not for other
 * modules.
 */
#ifndef CISC_DEVICE_QUEUE_INT_H
#define CISC_DEVICE_QUEUE_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "common/spin.h"
#include "device/engine/engine.h"
#include "device/queue/queue.h"
#include "proto/wire.h"

#define QP_FETCH_BATCH 64u         /* SQEs per queue per sweep (fairness) */

struct qp_poller;
struct qp_session;

struct qp {
    struct qp_session *sess;
    struct qp_poller *poller;
    struct qp *next;               /* session's list (session lock) */
    struct qp *pnext;              /* poller's incoming or doomed list (poller lock) */
    /* the poller's hand-over (poller lock) */
    bool adopted;                  /* in the poller thread's array */
    bool doomed;                   /* removal asked: on the doomed list */
    bool dropped;                  /* the poller let go of it (invariant 4) */
    /* the poller thread's own: where qp sits in its array, and its sleep */
    unsigned pidx;
    uint32_t bell;                 /* sq_doorbell read when qp went to sleep */
    bool armed;                    /* a futex wait on its doorbell is in p->bells */
    uint64_t busy_ns;              /* when a sweep last found work on it */
    uint32_t id;
    uint32_t sched_id;             /* the scheduler's queue number, unique in the device */
    uint8_t *map;
    size_t map_size;
    struct wire_qp_hdr *hdr;
    const struct wire_sqe *sq;
    struct wire_cqe *cq;
    struct qp_arena arena;
    uint32_t sq_entries, cq_entries;
    /* the poller's (private copies, invariant 5) */
    uint32_t sq_head;
    uint32_t fetched_to;           /* sq_head, for others (atomic): qp_drain_published */
    uint32_t sq_flags;
    bool dead;
    bool charged;                  /* charge counted against the session's uid */
    uint64_t charge;               /* arena bytes */
    /* completions */
    pthread_mutex_t cq_lock;       /* protects cq_tail's updates, the CQ ring, inflight's decrement */
    pthread_cond_t drained;        /* inflight reached 0 (with cq_lock) */
    uint32_t cq_tail;              /* written under cq_lock, read atomically by the poller */
    uint32_t inflight;             /* fetched, CQE not posted; atomic */
    uint64_t done_ns;              /* when a completion was last posted; atomic */
    bool ring_on_done;             /* the poller slept with commands in flight: the next
                                      completion rings the doorbell; atomic */
};

struct ckey_table;

struct qp_session {
    struct qp_service *svc;
    struct qp_session *next;       /* service's list (service lock) */
    struct eng_cred cred;
    struct hdl_table *hdl;
    struct ckey_table *keys;       /* encryption keys for CISC steps (compute/keys.h) */
    pthread_mutex_t lock;          /* protects qps, nqps, next_id */
    struct qp *qps;
    unsigned nqps;
    uint32_t next_id;
};

/* A poller's io_uring of futex waits (queue_bells.c). */
struct qp_bells {
    int fd;                        /* -1: none (futex_waitv and scans instead) */
    void *ring;
    size_t sqsz, sqesz;
    struct io_uring_sqe *sqes;
    unsigned *sq_head, *sq_tail, *sq_array, sq_mask;
    unsigned *cq_head, *cq_tail, cq_mask;
    struct io_uring_cqe *cqes;
    unsigned queued;               /* SQEs not yet submitted */
};

/* Tags of a poller's io_uring completions besides a queue's address. */
#define QP_BELL_TAG_WAKE   0u      /* the poller's wake word */
#define QP_BELL_TAG_CANCEL 1u      /* a cancellation's own completion */

struct qp_poller {
    struct qp_service *svc;
    unsigned idx;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;          /* protects incoming, doomed, n, gen, seen,
                                      stop, spare, nq and capq (invariant 6) */
    pthread_cond_t acked;          /* seen caught up with gen: incoming adopted,
                                      doomed dropped */
    struct qp *incoming;           /* added, not yet in the array */
    struct qp *doomed;             /* removal asked, still in the array */
    unsigned n;                    /* queues served: incoming + array */
    uint32_t gen;                  /* bumped on every hand-over and on stop */
    uint32_t seen;                 /* the gen the thread works with (lock) */
    bool stop;
    uint32_t wake;                 /* private futex word: bumped to wake the thread */
    /* The thread's array of its queues: [0, nactive) active (swept every
     * round), [nactive, nq) asleep (NEED_WAKEUP set, woken by their
     * doorbells), the most recently asleep first. Entries move only in
     * the thread; nq and capq change only under lock. */
    struct qp **q;
    unsigned nq, nactive, capq;
    struct qp **spare;             /* room for n when q has none: made by
                                      qp_poller_add, taken by the thread */
    unsigned capspare;
    uint64_t scan_ns, scan_at;     /* the asleep queues no futex_waitv watches:
                                      checked every scan_ns, next at scan_at */
    struct qp_bells bells;         /* when it works, every asleep queue is watched */
    uint64_t spin_ns;              /* poll_us: how long an active queue spins idle */
    uint64_t window;               /* this round's: spin_ns, less on a contended host */
    struct spin_gov gov;           /* decides window (common/spin.h) */
    bool wake_armed;               /* bells waits on the wake word */
};

struct qp_cmd {
    struct eng_cmd c;              /* first: the engine's command */
    struct qp *qp;
    struct qp_cmd *next;           /* dispatch batch, notifier list */
    uint64_t user_data;
    uint8_t wop;                   /* enum wire_op */
    uint64_t res_off;              /* result area in the arena (STAT, READDIR) */
    uint32_t res_len;
    uint32_t rd_used;              /* READDIR: bytes written */
    uint64_t rd_next;              /* READDIR: cookie after the last entry written */
    bool rd_small;                 /* READDIR: the first entry did not fit */
    struct wire_cqe cqe;           /* built by qp_finish */
    struct eng_chg chg;
    struct eng_cisc *cisc;         /* CISC: the decoded vector, released with the command */
    char paths[];                  /* private copies of the paths */
};

/* What one uid holds over all its sessions (queue.h's per-uid limits). */
struct qp_uid {
    struct qp_uid *next;
    uint32_t uid;
    unsigned queues;
    uint64_t arena;                /* bytes */
    bool warned;                   /* a refusal was logged */
};

struct qp_service {
    struct engine *eng;
    unsigned npollers, poll_us;
    struct qp_poller pollers[QP_MAX_POLLERS];
    pthread_mutex_t lock;          /* protects sessions, uids */
    struct qp_session *sessions;
    struct qp_uid *uids;           /* uids holding queues (root is not counted) */
    /* the notifier: completions that first invalidate the FUSE caches */
    pthread_t notifier;
    bool notifier_started;
    pthread_mutex_t nlock;         /* protects nhead, ntail, nstop */
    pthread_cond_t ncond;
    struct qp_cmd *nhead, **ntail;
    bool nstop;
    /* counters (atomic) */
    uint64_t fetched, refused, completed, invalidated, dead, sleeps, contended, done_rings;
    uint64_t nsessions, nqueues;
};

/* queue.c */
#ifndef NDEBUG
/* Checks qp's ring state, what only the device writes (its private
 * copies; wire.h's layout; queue.h invariants 2, 3 and 5), from assert():
 * called by qp's poller, or by whoever holds qp once no poller has it,
 * never with cq_lock held (it takes it). O(1). Returns true. */
bool qp_check(struct qp *qp);
#endif

/* queue_poll.c */
int qp_poller_start(struct qp_poller *p);
void qp_poller_stop(struct qp_poller *p);
/* Has poller p serve qp (sets qp->poller) from its next round, without
 * waiting for it. Returns 0, or -ENOMEM when the poller has no room for
 * one more queue (invariant 6): qp is then not polled. */
int qp_poller_add(struct qp_poller *p, struct qp *qp);
/* Asks p to stop serving qp at its next round and returns at once, so
 * that many queues go in one round (qp_poller_wait_dropped waits). */
void qp_poller_drop(struct qp_poller *p, struct qp *qp);
/* Waits until p let go of qp (asked by qp_poller_drop): from then on
 * the poller never touches qp. */
void qp_poller_wait_dropped(struct qp_poller *p, struct qp *qp);

/* queue_bells.c */
/* Opens b (Linux 6.7's io_uring futex waits). Returns 0, or -errno when
 * the kernel or its settings do not allow it (b->fd is then -1). */
int qp_bells_open(struct qp_bells *b);
void qp_bells_close(struct qp_bells *b);
/* Queues a wait for *word to change from val (a shared futex unless
 * private); its completion carries tag. Returns 0 or -errno. */
int qp_bells_arm(struct qp_bells *b, uint32_t *word, uint32_t val, bool private, uint64_t tag);
/* Queues the cancellation of the wait tagged tag (its completion then
 * comes with -ECANCELED, unless it had completed). Returns 0 or -errno. */
int qp_bells_cancel(struct qp_bells *b, uint64_t tag);
/* Submits what is queued. Returns 0 or -errno. */
int qp_bells_submit(struct qp_bells *b);
/* Submits what is queued and sleeps until a completion is there. */
int qp_bells_wait(struct qp_bells *b);
/* Calls fn(arg, tag, res) for each completion there. Returns how many. */
unsigned qp_bells_reap(struct qp_bells *b, void (*fn)(void *, uint64_t, int32_t), void *arg);

/* queue_done.c */
/* READDIR output (struct eng_cmd's fill for a queue command): one struct
 * wire_dirent record per entry, written with one copy into the result
 * area. Returns 1 when full. */
int qp_fill_dirent(void *arg, const struct sfs_dirent *de, const struct sfs_attr *attr);
/* Posts an error completion for an SQE refused before it became a command. */
void qp_post_error(struct qp *qp, uint64_t user_data, int err);
/* The engine's done() for queue commands. */
void qp_cmd_done(struct eng_cmd *c);
int qp_notifier_start(struct qp_service *svc);
void qp_notifier_stop(struct qp_service *svc);
/* Marks qp dead and wakes its client (garbage indices, or destruction). */
void qp_kill(struct qp *qp);
/* Wakes the client threads waiting on qp's CQ. */
void qp_wake_client(struct qp *qp);
/* Wakes qp's poller as the client's doorbell does. */
void qp_ring_poller(struct qp *qp);

/* Futex helpers on shared (not process-private) words. */
void qp_futex_wake_shared(uint32_t *addr);

#endif

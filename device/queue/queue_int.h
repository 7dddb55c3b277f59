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
    struct qp *pnext;              /* poller's list (poller lock) */
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
    uint32_t sq_flags;
    bool dead;
    /* completions */
    pthread_mutex_t cq_lock;       /* protects cq_tail's updates, the CQ ring, inflight's decrement */
    pthread_cond_t drained;        /* inflight reached 0 (with cq_lock) */
    uint32_t cq_tail;              /* written under cq_lock, read atomically by the poller */
    uint32_t inflight;             /* fetched, CQE not posted; atomic */
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

/* A queue in a poller's private copy of its list, with the doorbell
 * value read before the poller last announced sleep. */
struct qp_watch {
    struct qp *qp;
    uint32_t bell;
};

struct qp_poller {
    struct qp_service *svc;
    unsigned idx;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;          /* protects list, n, gen, stop, spare, and
                                      snap's capacity (queue.h invariant 6) */
    pthread_cond_t acked;          /* seen caught up with gen */
    struct qp *list;
    unsigned n;
    uint32_t gen;                  /* bumped on every change of list / stop */
    uint32_t seen;                 /* the gen the thread works with (lock) */
    bool stop;
    uint32_t wake;                 /* private futex word: bumped to wake the thread */
    struct qp_watch *snap;         /* the thread's copy of list (read unlocked by
                                      the thread, replaced only under lock) */
    unsigned nsnap, capsnap;
    struct qp_watch *spare;        /* room for n when snap has none: made by
                                      qp_poller_add, taken by the thread */
    unsigned capspare;
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

struct qp_service {
    struct engine *eng;
    unsigned npollers, poll_us;
    struct qp_poller pollers[QP_MAX_POLLERS];
    pthread_mutex_t lock;          /* protects sessions */
    struct qp_session *sessions;
    /* the notifier: completions that first invalidate the FUSE caches */
    pthread_t notifier;
    bool notifier_started;
    pthread_mutex_t nlock;         /* protects nhead, ntail, nstop */
    pthread_cond_t ncond;
    struct qp_cmd *nhead, **ntail;
    bool nstop;
    /* counters (atomic) */
    uint64_t fetched, refused, completed, invalidated, dead, sleeps;
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
/* Has poller p serve qp (sets qp->poller). Returns 0, or -ENOMEM when
 * the poller has no room for one more queue (invariant 6): qp is then
 * not polled. */
int qp_poller_add(struct qp_poller *p, struct qp *qp);
/* Stops serving qp; once it returns the poller no longer touches qp. */
void qp_poller_remove(struct qp_poller *p, struct qp *qp);

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

/* Futex helpers on shared (not process-private) words. */
void qp_futex_wake_shared(uint32_t *addr);

#endif

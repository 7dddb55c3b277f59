/*
 * device/queue/queue.h - the device side of libcisc's queue pairs (proto/wire.h):
 * sessions, shared-memory queue pairs, the pollers that fetch commands
 * from them, validation into private engine commands, and completions.
 *
 * Sessions. One per control-socket connection that asks for queues. It
 * holds the client's credentials (SO_PEERCRED + SO_PEERGROUPS, from the
 * kernel only), its own table of file handles (so no client can use
 * another's handles), its encryption keys and its queue pairs. Destroying the session (the
 * connection ended) destroys its queues and closes its handles.
 *
 * Queue pairs. A memfd, sealed against shrinking and growing (a client
 * that truncates it cannot make the device fault), mapped by both sides.
 * Decoding an SQE into a command is sqe.h's job.
 *
 * Pollers. `pollers` threads each serve a share of the queue pairs. A
 * poller sweeps its active queues: for each it reads sq_tail once, fetches at
 * most what the CQ has room for (and never more than sq_entries: bounded
 * work per poll, whatever the indices say), charges one link crossing for
 * the batch, copies each SQE once into private memory, validates it into
 * an engine command and releases the slots (sq_head). After the sweep it
 * hands the commands to the engine's one scheduler: large ones (64 KiB
 * of data or more), fsyncs and programs go to the queue of the device
 * cores (so a batch spreads over free cores); small ones may run at once
 * on the poller in a free core's slot (direct dispatch: a small command
 * costs less than waking a core), but not on slow device cores
 * (--core-speed > 1), where a command holds its core for its modelled
 * time and the poller would fetch nothing meanwhile (queue_poll.c). Every
 * command therefore runs in a core slot, counted in the scheduler's and
 * the engine's statistics.
 *
 * Active set. A queue with nothing to fetch for poll_us since its last
 * fetch or completion goes to sleep on its own (after a brief spin
 * instead while the host is contended: a poller that finds it was
 * descheduled while spinning holds off, common/spin.h; CISC_QP_NO_HOLDOFF
 * in the device's environment turns that off, for tests), and so does one
 * whose only work is commands in flight on the device cores: its client
 * waits for them, and spinning would take a CPU from the cores running
 * them; the first of their completions rings the queue's doorbell
 * (queue_done.c), so that the poller spins again for the client's next
 * submission. The poller announces a sleep (WIRE_SQ_NEED_WAKEUP),
 * rechecks, and stops sweeping the queue; from then on its client rings
 * its doorbell after each submission. So a sweep costs the active queues
 * only, whatever the number of idle ones. Each asleep queue has a futex wait on its
 * doorbell in the poller's io_uring (IORING_OP_FUTEX_WAIT, Linux 6.7,
 * queue_bells.c), which completes when its client rings: with no active
 * queue the poller sleeps in io_uring_enter, also woken by its wake word,
 * and an idle queue costs nothing at all. Where the kernel lacks that (or
 * io_uring is disabled, or CISC_QP_NO_URING is in the device's
 * environment: for tests), the poller sleeps on the doorbells of the most
 * recently asleep queues at once (futex_waitv, up to 127) and checks the
 * others (one load of the doorbell each) every 1 to 8 ms; with a kernel
 * older than 5.16 it naps 1 ms at a time. A queue whose doorbell rang
 * becomes active again. A queue's wait is cancelled, and its completion
 * reaped, before its poller lets go of it (invariant 4).
 *
 * Adding and removing. Queues reach a poller through hand-over lists
 * under its lock; the thread takes them at the top of its next round.
 * Nobody waits for a round to add a queue; removing one waits for one
 * round, and a session that ends hands all its queues over first and
 * then waits, so that its queues go in one round, not one round each.
 *
 * Limits. A session holds at most QP_MAX_PER_SESSION queues; a uid other
 * than root at most QP_UID_MAX_QUEUES over all its sessions and
 * QP_UID_MAX_ARENA bytes of arenas (-EDQUOT, logged once while it holds
 * queues).
 *
 * Completions. When a command completes on a device core, the queue
 * writes its results into the arena ranges the command named, charges one
 * link crossing, writes the CQE and publishes cq_tail (under the queue's
 * CQ lock: many cores may complete commands of one queue), then wakes
 * the client if it waits. A command that changed something the FUSE
 * mount's kernel caches first goes through the notifier thread, which
 * invalidates those caches (never from a device core or a FUSE thread:
 * the kernel may hold locks that wait for a device core), then posts.
 *
 * Arena access for executors (CISC steps): struct qp_arena and the
 * qp_arena_* functions below are the only way device code touches a
 * client's arena; every access is bounds-checked (offset + length inside
 * the arena, no overflow). Data in the arena may change under the device
 * at any time: an executor that needs a value twice copies it once.
 *
 * Lock order: session lock -> poller lock; the CQ lock and notifier lock
 * are leaves; the service lock is never held with the session or a
 * poller lock. Device cores never take the session or poller locks.
 *
 * Invariants:
 *   1. Each SQE is read from shared memory exactly once (one memcpy into
 *      a private copy); every field is validated before use.
 *   2. Each fetched SQE gets exactly one CQE, unless its queue died.
 *   3. Completions not yet posted + CQEs not yet consumed <= cq_entries.
 *   4. A queue is freed only after its poller dropped it (took it out
 *      of its array at a round's start; it never touches it again) and
 *      every command fetched from it has completed.
 *   5. The device never reads back what only it writes (sq_head, cq_tail,
 *      sq_flags): it keeps private copies.
 *   6. Every queue handed to a poller is polled: the poller's private
 *      array has room for all of them, made when a queue is added
 *      (qp_create fails with -ENOMEM otherwise), so the poller never
 *      allocates, and its sleep needs no memory either. In the array
 *      each queue is active (swept) or asleep (NEED_WAKEUP published,
 *      its doorbell watched or scanned).
 *   7. A command a client published before its session ended is fetched
 *      and run, even if the client died right after publishing: the
 *      session's end first rings each queue's poller and waits until its
 *      fetches reach the tail it read (unless the queue dies, or its CQ,
 *      which the client no longer empties, has had no room for 50 ms). So
 *      a submission, not its completion, is what survives the client.
 *   8. A session on the service's list is whole: it leaves the list
 *      (under the service lock) before its handle table and keys are
 *      freed, so the statistics' walk of the list (a `cisc status`
 *      answered while sessions end) never reads a freed table.
 *
 * Debug and sanitizer builds check 2 and 3 (as counts of the private
 * copies: sq_head - cq_tail = commands in flight <= cq_entries), 4, 5's
 * private flags, 6 and wire.h's ring layout at each state change
 * (qp_check in queue.c, poller_check and array_check in queue_poll.c). Shared memory is
 * never asserted on: the client may write anything there.
 */
#ifndef CISC_DEVICE_QUEUE_H
#define CISC_DEVICE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct eng_cred;

/* ---- arena access for executors ------------------------------------ */

/* A client's arena as the device sees it. */
struct qp_arena {
    uint8_t *base;
    uint64_t size;
};

/* True if [off, off + len) lies inside the arena (len 0 included). */
static inline bool qp_arena_ok(const struct qp_arena *a, uint64_t off, uint64_t len)
{
    return off <= a->size && len <= a->size - off;
}

/* Pointer to [off, off + len) of the arena, or NULL when out of range. The
 * bytes are shared with the client: read each one once, or copy. */
static inline void *qp_arena_ptr(const struct qp_arena *a, uint64_t off, uint64_t len)
{
    return qp_arena_ok(a, off, len) ? a->base + off : NULL;
}

/* Copies len bytes from src into the arena at off. Returns 0 or -EFAULT. */
int qp_arena_write(const struct qp_arena *a, uint64_t off, const void *src, uint64_t len);

/* ---- the service ---------------------------------------------------- */

#define QP_DEFAULT_POLL_US   50u
#define QP_DEFAULT_POLLERS   1u
#define QP_MAX_POLLERS       16u
#define QP_MAX_PER_SESSION   64u
#define QP_MAX_HANDLES       65536u   /* open handles per session */
#define QP_MAX_SQ_ENTRIES    4096u
#define QP_MIN_ARENA         (64u << 10)
#define QP_MAX_ARENA         (1ull << 30)
/* Per uid over all its sessions (root is not limited): a client cannot
 * take the device's memory or its pollers' attention for itself. */
#define QP_UID_MAX_QUEUES    256u
#define QP_UID_MAX_ARENA     (4ull << 30)   /* bytes of arenas */

struct qp_config {
    unsigned pollers;         /* 0 = QP_DEFAULT_POLLERS */
    unsigned poll_us;         /* spin before sleeping; 0 = sleep at once */
};

struct qp_stats {
    unsigned pollers, poll_us;
    uint64_t sessions, queues;        /* live now */
    uint64_t handles;                 /* open in all sessions now */
    uint64_t fetched;                 /* SQEs copied */
    uint64_t refused;                 /* SQEs that failed validation */
    uint64_t completed;               /* CQEs posted */
    uint64_t invalidated;             /* completions that went through the notifier */
    uint64_t dead;                    /* queues stopped for garbage indices */
    uint64_t sleeps;                  /* times a poller went to sleep */
    uint64_t contended;               /* times a poller found it had been descheduled
                                         while spinning (common/spin.h) */
    uint64_t done_rings;              /* completions that rang their queue's doorbell
                                         (its poller slept while they were in flight) */
};

struct qp_service;
struct qp_session;

/* Starts the pollers and the notifier for engine e (not owned).
 * Returns 0 and sets *out, or -errno. */
int qp_service_create(struct engine *e, const struct qp_config *cfg, struct qp_service **out);

/* Destroys every session still open (queues, handles), stops the
 * threads, frees svc. Call before eng_destroy. */
void qp_service_destroy(struct qp_service *svc);

/* Copies the counters. */
void qp_service_stats(struct qp_service *svc, struct qp_stats *st);

/* Opens a session for a client with credentials cred (from the kernel).
 * Returns 0 and sets *out, or -errno. */
int qp_session_create(struct qp_service *svc, const struct eng_cred *cred,
                      struct qp_session **out);

/* Destroys the session's queues (all handed to their pollers at once,
 * then waiting for their commands), closes its handles and frees it. */
void qp_session_destroy(struct qp_session *s);

/* The credentials a session acts with. */
const struct eng_cred *qp_session_cred(const struct qp_session *s);

/* The session's encryption-key registry (device/compute/keys.h), for the
 * CTL_KEY_ADD / CTL_KEY_REMOVE requests of its connection. */
struct ckey_table;
struct ckey_table *qp_session_keys(struct qp_session *s);

/* Queue geometry requested by a client (0 = default). */
struct qp_geom {
    uint32_t sq_entries, cq_entries;
    uint64_t arena_size;
};

/* Creates a queue pair in session s. On success *memfd is a descriptor of
 * the shared region for the client (the caller sends it and closes it)
 * and *id the queue's id. Returns 0 or -errno (-EINVAL: geometry out of
 * range, -EMFILE: QP_MAX_PER_SESSION reached, -EDQUOT: the session's uid
 * holds QP_UID_MAX_QUEUES queues or would exceed QP_UID_MAX_ARENA bytes
 * of arenas, -ENOMEM). */
int qp_create(struct qp_session *s, const struct qp_geom *g, int *memfd, uint32_t *id);

/* Destroys queue `id` of session s after its commands completed.
 * Returns 0 or -ENOENT. */
int qp_destroy(struct qp_session *s, uint32_t id);

#ifdef __cplusplus
}
#endif

#endif

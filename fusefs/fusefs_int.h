/*
 * fusefs/fusefs_int.h - shared by fusefs.c (session, mount, loop) and
 * fusefs_ops.c (one handler per FUSE operation). Not for other modules.
 */
#ifndef CISC_FUSEFS_INT_H
#define CISC_FUSEFS_INT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "fusefs/fusefs.h"

#define FUSEFS_KNOWN_STRIPES 64u
#define FUSEFS_KNOWN_BUCKETS 256u

struct known_stripe;
struct fusefs_loop;
struct fusefs_delay;
struct fusefs_wback;

struct fusefs {
    struct engine *eng;
    struct known_stripe *known;   /* inodes the kernel holds (known.c) */
    bool watching;                /* registered with the engine (eng_set_watch) */
    struct fusefs_loop *loop;     /* pinned workers, while looping (lock) */
    struct fuse_session *se;
    char *mountpoint;
    pthread_t loop_thread;        /* the thread in fusefs_loop */
    bool looping;                 /* protected by lock */
    pthread_mutex_t lock;
    bool ra_done;                 /* fusefs_raise_readahead ran */
    bool tenant_pid;              /* tenants are processes: requests carry the tgid */
    uint64_t page;                /* the kernel's page size (set at INIT) */
    bool killpriv_v2;             /* the kernel offers FUSE_HANDLE_KILLPRIV_V2 (set at INIT) */
    bool init_replied;            /* __atomic: the INIT reply went out (killpriv.c) */
    struct fusefs_delay *delay;   /* held replies (fusefs_delay.c), once one was held */
    bool writeback;               /* asked for the kernel's writeback cache (fusefs.h 5) */
    struct fusefs_wback *wb;      /* files open for writing (wback.c) */
};

/* Attributes in the kernel's shape (fusefs_ops.c). */
void fusefs_to_stat(const struct sfs_attr *a, struct stat *st);

/* Routes the session's /dev/fuse I/O through killpriv.c, which adds
 * FUSE_HANDLE_KILLPRIV_V2 to the INIT reply (libfuse 3.14 cannot ask for
 * it). Call after fuse_session_mount. Returns 0 or -EIO. */
int fusefs_killpriv_io(struct fusefs *f);

/* O_TMPFILE (tmpfile.c): renames a FUSE_TMPFILE request just read (n
 * bytes at buf) to FUSE_CREATE, in place; other requests are untouched. */
void fusefs_tmpfile_request(void *buf, size_t n);

/* True for the name of a create that fusefs_tmpfile_request renamed. */
bool fusefs_tmpfile_name(const char *name);

/* The process (thread group) of thread tid, for tenants that are pids
 * (tgid.c); tid itself if it cannot be told. */
uint32_t fusefs_tgid(uint32_t tid);

/* Lets the kernel read ahead FUSEFS_MAX_IO per request instead of its
 * 128 KiB default: writes /sys/class/bdi/MAJ:MIN/read_ahead_kb (root
 * only, best effort). INIT resets the value to what the kernel proposed,
 * so this runs once, on the first request after INIT. */
void fusefs_raise_readahead(struct fusefs *f);

/*
 * The session loop (fusefs_loop.c). Workers pinned per CPU the process may
 * use, LOOP_PER_CPU of them per CPU, read /dev/fuse (non-blocking) after
 * waiting for it with poll(). A new request wakes every polling worker;
 * the one on the requester's CPU, which runs as soon as the requester
 * sleeps, usually takes it. So that a request wakes as few threads as
 * possible, only one worker per CPU polls (the CPU's polling role); the
 * others park on a futex. While a single requester makes all requests,
 * a poller that reads few of them (its CPU runs no client, it only wins
 * races against the requester's own poller) naps for LOOP_NAP_MS,
 * keeping the role, so that requests stop waking its idle CPU.
 *
 * Invariants:
 *   1. Every request is read by exactly one worker (the kernel hands each
 *      read one request) and replied by whoever runs it (fusefs_ops.c).
 *   2. At most one worker of a CPU holds its polling role. A worker that
 *      starts a request that may run long (large data, sync, truncate)
 *      first gives the role up and wakes a parked worker of its CPU, so
 *      the CPU keeps a poller; when done, it parks if the role is taken.
 *      Parking, napping and polling all end within LOOP_PARK_MS /
 *      LOOP_NAP_MS / LOOP_POLL_MS, so no request waits longer than that
 *      for lack of a poller on its CPU (another CPU's poller serves it).
 *   3. Stop (fusefs_loop_stop, unmount, a read error) wakes every worker:
 *      the exit eventfd for pollers, the futexes for parked ones.
 */
struct fusefs_loop;

/* Prepares the pinned loop: -EOPNOTSUPP when the process may use one CPU
 * or more than the loop pins (libfuse's own loop is used then), or
 * -errno. Sets /dev/fuse non-blocking. */
int fusefs_loop_create(struct fusefs *f, struct fusefs_loop **out);

/* Runs the workers until stop or unmount. Returns 0 or -errno. */
int fusefs_loop_pinned(struct fusefs *f, struct fusefs_loop *l);

/* Asks every worker to return; callable from any thread. */
void fusefs_loop_stop(struct fusefs_loop *l);

void fusefs_loop_destroy(struct fusefs_loop *l);

/* True on a worker of the pinned loop, the only threads that may reply
 * with splice (libfuse's per-thread pipe is freed at thread exit, and
 * device cores outlive the session). */
bool fusefs_loop_can_splice(void);

extern const struct fuse_lowlevel_ops fusefs_ops;

/*
 * Replies held for the flash model (fusefs_delay.c, which states the
 * invariants): a command's media completion time is stamped on the device
 * core that ran it; a reply whose time has not come goes to a timer queue.
 */
struct fusefs_held {
    uint64_t at_ns;                       /* due (CLOCK_MONOTONIC) */
    void (*fire)(struct fusefs_held *h);  /* sends the reply, frees what it must */
};

/* On the core that ran the command, when it is done: takes the thread's
 * media stamp; if it lies ahead, queues h (fire set by the caller) to fire
 * then and returns true; else false, and the caller replies now.
 * submit_ns: when the request was submitted (for the counters). */
bool fusefs_delay_hold(struct fusefs *f, struct fusefs_held *h, uint64_t submit_ns);

/* fusefs_delay_hold with the stamp at_ns taken already (0: none). */
bool fusefs_delay_hold_at(struct fusefs *f, struct fusefs_held *h, uint64_t submit_ns,
                          uint64_t at_ns);

/* True when the calling thread's command has media time still to come, so
 * its reply will be held: a READ then copies its bytes (fusefs_delay_copy)
 * instead of splicing them now. */
bool fusefs_delay_pending(void);

/* Copies a READ's pieces (total bytes) into a new buffer *out. Returns the
 * bytes copied or -errno. */
int fusefs_delay_copy(const struct sfs_seg *segs, unsigned n, size_t total, char **out);

/* eng_call that also takes the command's media stamp on the device core. */
struct fusefs_call {
    struct eng_cmd c;             /* first */
    uint64_t at_ns;               /* out: the stamp (0: none) */
    uint32_t state;               /* completion word (common/done.h) */
};
int64_t fusefs_delay_call(struct engine *e, struct fusefs_call *k);

/* Replies n (bytes written, or -errno) to a WRITE run by fusefs_delay_call,
 * held until k's stamp. */
void fusefs_delay_reply_write(struct fusefs *f, fuse_req_t req, int64_t n,
                              const struct fusefs_call *k);

/* Sends every held reply now and stops the timer (before the session is
 * destroyed). */
void fusefs_delay_fini(struct fusefs *f);

/* known.c: the kernel's lookup references, counted, and the engine watch
 * (eng_set_watch) that invalidates the kernel's caches when another door
 * changes something the kernel may cache. */
int fusefs_known_init(struct fusefs *f);
void fusefs_known_fini(struct fusefs *f);
void fusefs_known_add(struct fusefs *f, uint64_t ino);
void fusefs_known_sub(struct fusefs *f, uint64_t ino, uint64_t n);
void fusefs_watch(struct fusefs *f, bool on);

/* wback.c: the writeback cache's coherence with the other doors (see its
 * header comment for the invariants). open/release count a file open for
 * writing on the mount; call open before the OPEN or CREATE reply goes
 * (it returns 0 or -ENOMEM: then fail the open, the file is not counted). */
int fusefs_wback_init(struct fusefs *f);
void fusefs_wback_fini(struct fusefs *f);
bool fusefs_wback_writable(int flags);
int fusefs_wback_open(struct fusefs *f, uint64_t ino);
void fusefs_wback_release(struct fusefs *f, uint64_t ino);
/* The eng_watch writeback hook (arg: the struct fusefs): holds every file
 * open for writing on the mount for a batch of ncmds commands, its dirty
 * pages written back first (wback.c, invariant 2). Blocks until then
 * (never call it on a FUSE worker or a device core). Returns the hold to
 * give back once per command with fusefs_wback_unhold, or NULL. */
void *fusefs_wback_hold(void *arg, unsigned ncmds);
/* Gives back one command's share of hold; the last one releases it.
 * Never blocks. */
void fusefs_wback_unhold(void *arg, void *hold);
/* True if a SETATTR of ino from thread tid is a hold's: it is kept (req
 * answered when the hold is released). */
bool fusefs_wback_park(struct fusefs *f, uint64_t ino, uint32_t tid, fuse_req_t req);
/* Raises the kernel's size of ino to at least size (another door grew it). */
void fusefs_wback_grown(struct fusefs *f, uint64_t ino, uint64_t size);

/* Makes the kernel take the device's size of ino, which may be lower than
 * the kernel's (wback.c, invariant 3). Blocks (a truncate(2) on the mount
 * that the FUSE workers serve): not on a FUSE worker or a device core, and
 * holding no lock they may need. Returns 0 (also when the kernel holds no
 * inode ino) or -errno. */
int fusefs_wback_resize(struct fusefs *f, uint64_t ino);

/* True if a SETATTR of ino from thread tid comes from fusefs_wback_resize:
 * answer it with the device's attributes and change nothing. */
bool fusefs_wback_resizing(struct fusefs *f, uint64_t ino, uint32_t tid);

#endif

/*
 * integrations/preload/preload.h - libcisc-preload.so, the library `cisc exec
 * MOUNTPOINT -- COMMAND` preloads: it serves COMMAND's file calls on paths
 * under MOUNTPOINT through libcisc queue pairs instead of system calls, and
 * merges concurrent writes into fused ops (AutoMerge, FusionFS §4.3.4).
 * Private to this directory.
 *
 * Model. A *served* descriptor is a number the kernel really owns (the
 * reserve: an O_PATH descriptor of the mount's root, dup'ed with the
 * caller's O_CLOEXEC) mapped, in the table pl_fds, to an open file
 * description (struct pl_ofd: a libcisc handle, the position, the flags).
 * dup/dup2/dup3/F_DUPFD dup the reserve and share the ofd, as the kernel
 * shares a file description. A call the library does not serve on a
 * served descriptor (mmap, locks, ioctl, exec, fork, fd passing ...)
 * first *demotes* it: the file is opened through the FUSE mount with the
 * same flags and position and dup2'ed over every number sharing the ofd,
 * the handle is closed, and from then on the kernel serves it. Paths the
 * library does not serve (outside the mount, with "..", O_PATH,
 * O_DIRECTORY, O_TMPFILE ...) go to the kernel: both doors reach the same
 * device, so the views stay coherent.
 *
 * Invariants:
 *   1. pl_fds[n] != NULL only while n is a kernel descriptor this process
 *      holds (the reserve), so numbers never collide with the kernel's.
 *   2. An ofd's refs = the table entries naming it + calls in progress on
 *      it; its handle is closed when refs reaches 0. ofds are never freed
 *      (type-stable memory): a caller that loaded a stale pointer takes a
 *      ref and then re-checks the table (pl_fd_get).
 *   3. pl_fds and the ofd free list change only under pl.lock; positions
 *      under ofd->pos_lock; the AutoMerge queue under ofd->mq_lock.
 *   4. Every call into libcisc runs with its thread's own queue (a queue
 *      per thread; past PL_OWN_QUEUES threads, one shared queue held
 *      under its lock from pl_enter to pl_leave), with signals blocked
 *      when the program has handlers, so a handler never re-enters a
 *      queue; a fork child drops the parent's session
 *      (cisc_session_forget) and opens its own.
 * Invariants 1 and 2 are checked (assert) whenever an entry is set.
 *   5. A merged op completes every call it carries before any of them
 *      returns; when a merged op fails, its calls are re-run one by one,
 *      in order, so each reports its own error (AutoMerge never changes
 *      what a call observes).
 */
#ifndef CISC_PRELOAD_H
#define CISC_PRELOAD_H

#undef _FILE_OFFSET_BITS   /* this library defines both open and open64 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <cisc/cisc.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PL_EXPORT __attribute__((visibility("default")))
#define PL_FD_MAX 65536            /* served descriptors are below this */
#define PL_MERGE_MAX_LEN (64u << 10) /* larger writes are never merged */
#define PL_MERGE_MAX_OPS 32          /* calls one merged op carries */
#define PL_KERNEL (-0x7fffffff - 1)  /* pl_open_served: "not served, ask the kernel" */

/* One write-side call waiting in an ofd's AutoMerge queue. */
struct pl_mop {
    int kind;                      /* PL_MOP_* */
    const void *buf;
    size_t len;
    uint64_t off;                  /* WRITE: where */
    int64_t res;                   /* bytes, 0, or -errno */
    uint64_t at;                   /* APPEND: offset the data landed at */
    bool sync;                     /* WRITE/APPEND: make it durable in the same op */
    int64_t sync_res;              /* with sync: the sync's result (1: did not run) */
    bool done;
    bool taken;                    /* in a leader's batch (under mq_lock) */
    struct pl_mop *next;
};

enum { PL_MOP_WRITE, PL_MOP_APPEND, PL_MOP_FSYNC };

/* An open file description served by libcisc. */
struct pl_ofd {
    uint64_t fh;                   /* libcisc handle (session pl.s) */
    int flags;                     /* open flags (O_ACCMODE, O_APPEND, O_SYNC ...) */
    int refs;                      /* invariant 2; atomic */
    bool live;                     /* handle open (false on the free list) */
    char *path;                    /* mount-relative path at open (for demotion) */
    pthread_mutex_t pos_lock;
    uint64_t pos;                  /* under pos_lock */
    pthread_mutex_t mq_lock;
    pthread_cond_t mq_cond;
    struct pl_mop *mq_head, **mq_tail;   /* pending calls, under mq_lock */
    int mq_leaders;                /* threads submitting a batch now */
    bool mq_spinner;               /* a waiting caller is spinning (not sleeping) */
    /* write-then-fsync prediction (pl_merge.c), all atomic: */
    uint64_t wgen;                 /* write-side calls started on this ofd */
    uint64_t wgen_fsync;           /* wgen when fsync was last called */
    uint64_t synced_gen;           /* wgen made durable by a write + sync op */
    int streak;                    /* fsyncs in a row that followed a write */
    struct pl_ofd *free_next;
};

/* Process-wide state. */
struct pl_state {
    bool on;                       /* CISC_EXEC_MOUNT set and valid */
    char mnt[4096];                /* the mount point, absolute, no trailing / */
    size_t mnt_len;
    dev_t mnt_dev;                 /* st_dev the mount reports */
    int root_fd;                   /* O_PATH of the mount root (the reserves' source) */
    bool merge;                    /* AutoMerge on (CISC_EXEC_MERGE != 0) */
    int merge_inflight;            /* merged ops of one ofd in flight at most */
    bool handlers;                 /* the program installed a signal handler */
    mode_t umask;
    pthread_mutex_t lock;          /* invariant 3 */
    struct cisc_session *s;        /* opened lazily; NULL after fork until used */
    unsigned gen;                  /* bumped in a fork child: queues of older gens are dead */
    struct pl_ofd *free_ofds;
    int fd_hi;                     /* highest descriptor ever served (bounds table scans) */
    blksize_t blksize;             /* st_blksize the mount reports */
    char cwd[4096];                /* cached getcwd (chdir/fchdir keep it) */
    struct {                       /* CISC_EXEC_STATS=1 prints them at exit */
        _Atomic unsigned long long opens, merged_ops, merged_calls, solo_calls, demotions,
            fsyncs_merged;
    } st;
};

extern struct pl_state pl;
extern struct pl_ofd *_Atomic pl_fds[PL_FD_MAX];

/* ---- core (pl_core.c) ------------------------------------------------ */

/* Resolves the next definition of a libc symbol (dlsym RTLD_NEXT). */
void *pl_dlnext(const char *name);
/* *slot, resolved on first use (a race only resolves it twice). */
void *pl_real(void **slot, const char *name);
#define PL_REAL(name) ((__typeof__(real_##name))pl_real((void **)&real_##name, #name))

/* The calling thread's queue (created on first use), or NULL with *err
 * set (the device is gone, queue limits ...). */
struct cisc_queue *pl_queue(int *err);

/* Brackets every libcisc call (invariant 4): blocks signals if needed. */
void pl_enter(sigset_t *old);
void pl_leave(const sigset_t *old);

/* If path (relative to dirfd as openat takes it) names something the
 * library serves, writes its device path ("/a/b") into out and returns
 * true. */
bool pl_path(int dirfd, const char *path, char *out, size_t size);

/* Whether the caller's path is "" (readable and empty). */
bool pl_empty(const char *path);
/* Whether fd is served now (a hint: it may change at once). */
bool pl_served(int fd);
/* The ofd served at fd with a ref taken, or NULL (a kernel descriptor). */
struct pl_ofd *pl_fd_get(int fd);
/* Drops a ref; the last one closes the handle. Returns 0 or the close's -errno. */
int pl_ofd_put(struct pl_ofd *o);
/* A new ofd for handle fh (refs 1), or NULL. */
struct pl_ofd *pl_ofd_new(uint64_t fh, int flags, const char *path);
/* Maps fd to o (takes a ref). Under pl.lock. */
void pl_fd_set(int fd, struct pl_ofd *o);
/* Removes fd from the table; returns its ofd (the caller puts it) or NULL. */
struct pl_ofd *pl_fd_take(int fd);
/* A kernel descriptor number for a new served fd (cloexec as asked). */
int pl_reserve(bool cloexec);
/* Sets errno from a -errno result and returns -1, or returns r. */
long pl_ret(long r);

/* ---- demotion (pl_kernel.c) ------------------------------------------ */

/* Opens o's file through the mount as o describes it (flags, position)
 * and checks it is the same file. Returns a kernel fd (the caller closes
 * it) or -errno. */
int pl_reopen(struct pl_ofd *o);
/* Hands every descriptor sharing fd's ofd to the kernel (see the model
 * above). Returns 0 or -errno; a kernel descriptor gives 0. */
int pl_demote_fd(int fd);
/* Demotes every served descriptor (all, or those without FD_CLOEXEC). */
void pl_demote_all(bool keep_cloexec);

/* ---- AutoMerge (pl_merge.c) ------------------------------------------ */

/* Runs one write-side call on o, merged with other threads' pending calls
 * on o when AutoMerge is on. Returns its result (bytes, 0, or -errno);
 * APPEND sets *at. */
int64_t pl_merge_call(struct pl_ofd *o, struct pl_mop *m);

/* write(2)/pwrite(2) of a served ofd through AutoMerge, with its sync in
 * the same op when the ofd is O_SYNC/O_DSYNC or the program has been
 * following each write with fsync. Returns bytes or -errno; *at (may be
 * NULL) gets where the data landed. */
int64_t pl_merge_write(struct pl_ofd *o, const void *buf, size_t len, uint64_t off,
                       uint64_t *at);

/* fsync/fdatasync of a served ofd: answered at once when a write + sync
 * op already made this ofd's last write durable and nothing was written
 * through it since; else an FSYNC (merged with other threads' calls). */
int64_t pl_merge_fsync(struct pl_ofd *o, bool datasync);

/* Copies between the caller's memory and ours, -EFAULT instead of a
 * fault for a bad pointer (process_vm_readv/writev on this process). */
int pl_copy_in(void *dst, const void *src, size_t len);
int pl_copy_out(void *dst, const void *src, size_t len);
/* pread of a handle into the caller's buffer through arena space, in
 * pieces of 1 MiB. Returns bytes read or -errno. */
int64_t pl_data_pread(struct cisc_queue *q, uint64_t fh, void *buf, size_t len, uint64_t off);

/* ---- served calls used across files ---------------------------------- */

int pl_open_served(const char *dpath, int flags, mode_t mode);
ssize_t pl_read(int fd, void *buf, size_t len);
ssize_t pl_write(int fd, const void *buf, size_t len);
off_t pl_lseek(int fd, off_t off, int whence);
int pl_close(int fd);

#endif

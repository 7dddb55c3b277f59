/*
 * device/engine/engine.h - the device's one command format and the engine that
 * executes it on the device cores.
 *
 * Every operation, whichever door it came through (the FUSE front end or a
 * libcisc queue pair; the control socket submits none), becomes a struct
 * eng_cmd: an opcode, the caller's credentials (always from the kernel:
 * the FUSE request context or SO_PEERCRED), operands, and room for the
 * result. The door submits it; the scheduler hands it to a device core;
 * the engine checks POSIX permissions for the caller, calls StorageFS,
 * records statistics and completes the command. One permission check, one
 * journal, one scheduler, one set of statistics.
 *
 * A command is a plain struct with no hidden state the submitter must
 * set up beyond eng_cmd_init(), so a shared-memory decoder can fill one
 * after validating a client's request. ENG_OP_CISC runs a vector of steps
 * that pass buffers along (FusionFS §4.3), decoded and validated
 * beforehand by fop_decode() (device/engine/fused/fused.h); ENG_OP_CISC_PART is the
 * engine's own: a share of an op's independent steps run on another core.
 *
 * Operand use per op (unlisted fields are ignored):
 *   LOOKUP      ino=dir name                    -> attr, takes 1 reference
 *   FORGET      ino len=count                   drops `len` references
 *   GETATTR     ino                             -> attr
 *   SETATTR     ino sattr valid [fh]            -> attr (fh: truncate via open file)
 *   READLINK    ino out size                    -> ret=length
 *   MKNOD       ino=dir name mode rdev          -> attr, 1 reference
 *   MKDIR       ino=dir name mode               -> attr, 1 reference
 *   SYMLINK     ino=dir name in=target          -> attr, 1 reference
 *   LINK        ino ino2=newdir name=newname    -> attr, 1 reference
 *   UNLINK      ino=dir name
 *   RMDIR       ino=dir name
 *   RENAME      ino=dir name ino2=newdir name2 flags=ENG_RENAME_*
 *   OPEN        ino flags=O_*                   -> fh
 *   CREATE      ino=dir name mode flags=O_*     -> attr, fh, 1 reference
 *   TMPFILE     ino=dir mode flags=O_*          -> attr, fh, 1 reference (an
 *                                                  unnamed file: sfs_tmpfile)
 *   READ        fh off out size [map map_arg]   -> ret=bytes (map: zero-copy)
 *   WRITE       fh off in size flags=ENG_WRITE_* -> ret=bytes
 *   FLUSH       fh
 *   RELEASE     fh                              (also RELEASEDIR)
 *   FSYNC       fh flags=datasync               (also FSYNCDIR)
 *   OPENDIR     ino                             -> fh
 *   READDIR     fh off=cookie fill fill_arg plus -> entries via fill
 *   STATFS                                      -> st
 *   SETXATTR    ino name in size flags=ENG_XATTR_*
 *   GETXATTR    ino name out size               -> ret=size
 *   LISTXATTR   ino out size                    -> ret=size
 *   REMOVEXATTR ino name
 *   ACCESS      ino mode=R_OK|W_OK|X_OK|F_OK
 *   FALLOCATE   fh flags=FALLOC_FL_* off len
 *   LSEEK       fh off flags=SEEK_DATA|SEEK_HOLE -> ret=offset
 *   COPY_RANGE  fh off fh2 off2 len             -> ret=bytes
 *   SYNC                                        whole file system durable
 *   CISC        cisc=decoded vector             -> ret=status, cisc->res
 *   CISC_PART   (internal: submitted by CISC to spread independent steps)
 *
 * A CISC command from a libcisc queue carries the vector its door
 * decoded (fop_decode, from the door's one private copy of the client's
 * steps), the session's handle table (hdl: F_FH steps use the session's
 * handles) and chg (the executor records what it changed).
 *
 * The libcisc door (engine_path.c) names files by path and uses the
 * submitting session's handle table (cmd->hdl); paths are resolved from
 * the root by path_walk (device/engine/path.h) with search permission checked on
 * every directory:
 *   NOP                                         -> 0 (a round trip)
 *   OPEN_PATH   path flags=O_* mode             -> fh (O_CREAT/EXCL/TRUNC/APPEND,
 *                                                  O_DIRECTORY, O_NOFOLLOW)
 *   STAT_PATH   path                            -> attr (symlinks followed)
 *   FSTAT       fh                              -> attr
 *   UNLINK_PATH path
 *   MKDIR_PATH  path mode
 *   RMDIR_PATH  path
 *   RENAME_PATH path path2 flags=ENG_RENAME_*
 *   READDIR_PATH path off=cookie fill fill_arg  -> entries via fill
 *   APPEND      fh in size                      -> ret=bytes, out_off=offset written
 *   FTRUNCATE   fh off=size                     (fh open for writing, else -EINVAL)
 *   GETXATTR_PATH    path name out size         -> ret=size (as GETXATTR)
 *   SETXATTR_PATH    path name in size flags    (as SETXATTR)
 *   LISTXATTR_PATH   path out size              -> ret=size (as LISTXATTR)
 *   REMOVEXATTR_PATH path name                  (as REMOVEXATTR)
 *     (the path's symlinks followed, as getxattr(2); the inode-based op's
 *      permission checks, with the session's credentials)
 * Commands with cmd->chg set record what they changed (inodes, entries)
 * for the watcher (the FUSE front end's kernel caches): see eng_set_watch.
 *
 * Invariants:
 *   1. Each submitted command completes exactly once: done(cmd) is called
 *      in a device core's slot (maybe by the submitting thread itself,
 *      with direct dispatch, before eng_submit returns), or an eng_call()
 *      waiter is woken.
 *   2. Permission checks use only cmd->cred; uid 0 has the POSIX root
 *      overrides (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN).
 *   3. Every reference the engine hands out (LOOKUP, MKNOD, MKDIR,
 *      SYMLINK, LINK, CREATE, TMPFILE, READDIR plus) is an sfs_iget reference the
 *      door returns with FORGET (those still held at shutdown are dropped
 *      by sfs_unmount); every open handle holds one more until RELEASE
 *      or eng_destroy.
 *   4. Handles are validated on every use; a stale or foreign handle is
 *      -EBADF, never a crash.
 *   5. Buffers (name, in, out) belong to the submitter and must stay valid
 *      until completion; the engine never keeps them afterwards.
 *   6. A read-only engine (eng_config.read_only) refuses, with -EROFS and
 *      before it runs, every command that would change the file system:
 *      eng_cmd_mutates() is the one rule, applied at dispatch whatever the
 *      door, so no door keeps its own list.
 */
#ifndef CISC_DEVICE_ENGINE_H
#define CISC_DEVICE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {   /* also for the StorageFS header included here */
#endif

#include "device/sched/sched.h"
#include "device/storagefs/storagefs.h"

/* X(NAME, name): the opcodes, in the order `cisc status` lists them. */
#define ENG_OPS(X) \
    X(LOOKUP, lookup) X(FORGET, forget) X(GETATTR, getattr) X(SETATTR, setattr) \
    X(READLINK, readlink) X(MKNOD, mknod) X(MKDIR, mkdir) X(SYMLINK, symlink) \
    X(LINK, link) X(UNLINK, unlink) X(RMDIR, rmdir) X(RENAME, rename) \
    X(OPEN, open) X(CREATE, create) X(READ, read) X(WRITE, write) X(FLUSH, flush) \
    X(RELEASE, release) X(FSYNC, fsync) X(OPENDIR, opendir) X(READDIR, readdir) \
    X(RELEASEDIR, releasedir) X(FSYNCDIR, fsyncdir) X(STATFS, statfs) \
    X(SETXATTR, setxattr) X(GETXATTR, getxattr) X(LISTXATTR, listxattr) \
    X(REMOVEXATTR, removexattr) X(ACCESS, access) X(FALLOCATE, fallocate) \
    X(LSEEK, lseek) X(COPY_RANGE, copy_range) X(SYNC, sync) X(CISC, cisc) \
    X(CISC_PART, cisc_part) \
    X(NOP, nop) X(OPEN_PATH, open_path) X(STAT_PATH, stat_path) X(FSTAT, fstat) \
    X(UNLINK_PATH, unlink_path) X(MKDIR_PATH, mkdir_path) X(RMDIR_PATH, rmdir_path) \
    X(RENAME_PATH, rename_path) X(READDIR_PATH, readdir_path) X(APPEND, append) \
    X(FTRUNCATE, ftruncate) X(TMPFILE, tmpfile) X(GETXATTR_PATH, getxattr_path) \
    X(SETXATTR_PATH, setxattr_path) X(LISTXATTR_PATH, listxattr_path) \
    X(REMOVEXATTR_PATH, removexattr_path)

enum eng_op {
#define X(N, n) ENG_OP_##N,
    ENG_OPS(X)
#undef X
    ENG_OP_COUNT
};

/* Name of an opcode ("read"), or "?" when out of range. */
const char *eng_op_name(unsigned op);

#define ENG_RENAME_NOREPLACE (1u << 0)
#define ENG_RENAME_EXCHANGE  (1u << 1)
#define ENG_XATTR_CREATE     (1u << 0)
#define ENG_XATTR_REPLACE    (1u << 1)
/* WRITE from the FUSE door (device/engine/lease.h): a piece of one write(2),
 * which the kernel sends while no other write(2) on the inode goes on
 * through the mount; MORE: the write(2) may go on after this piece, so an
 * O_APPEND write keeps the end of the file until its next piece. */
#define ENG_WRITE_ORDERED    (1u << 0)
#define ENG_WRITE_MORE       (1u << 1)

#define ENG_GROUPS_MAX 64u

/* Supplementary groups are fetched only when a check needs them (reading
 * them costs a /proc read for FUSE); fn fills up to max, returns the count
 * or -errno. */
typedef int (*eng_groups_fn)(void *arg, uint32_t *groups, unsigned max);

struct eng_cred {
    uint32_t uid, gid;
    int32_t pid;
    int32_t ngroups;                 /* -1: not fetched yet (see groups_fn) */
    uint32_t groups[ENG_GROUPS_MAX];
    eng_groups_fn groups_fn;         /* NULL: no supplementary groups */
    void *groups_arg;
    struct sfs *acl_fs;              /* whose ACLs perm_check reads: set by the
                                        engine when the command runs (NULL:
                                        mode bits only) */
};

/* READDIR output: called once per entry, attr non-NULL for readdirplus
 * (then the entry carries one reference unless it is "." or ".."), except
 * for an entry whose inode could not be read (corrupt): readdirplus lists
 * it with attr NULL and no reference. Returns nonzero when the entry did
 * not fit: the engine stops and takes the reference back. */
typedef int (*eng_fill_fn)(void *arg, const struct sfs_dirent *de,
                           const struct sfs_attr *attr);

struct eng_cmd;
struct eng_cisc;
typedef void (*eng_done_fn)(struct eng_cmd *cmd);

/* What a command changed, for a watcher's caches (see eng_set_watch). The
 * door owns the first record (zeroed) and frees the rest with
 * eng_chg_release(). */
#define ENG_CHG_INODES  4u
#define ENG_CHG_ENTRIES 2u

struct eng_chg {
    struct eng_chg *next;         /* more records when this one is full (heap) */
    unsigned ninodes, nentries;
    struct {
        uint64_t ino;
        int64_t off, len;         /* data range changed; off < 0: attributes only */
    } inode[ENG_CHG_INODES];
    struct {
        uint64_t parent;
        char name[SFS_NAME_MAX + 1];
    } entry[ENG_CHG_ENTRIES];
};

struct hdl_table;

struct eng_cmd {
    struct sched_item item;   /* scheduler link; tenant = cred.uid (or pid) */
    uint32_t op;              /* enum eng_op */
    struct eng_cred cred;
    /* operands (see the table in the header comment) */
    uint64_t ino, ino2;
    uint64_t fh, fh2;
    const char *name, *name2;
    uint32_t mode, flags;
    uint32_t umask;           /* MKNOD/MKDIR/CREATE: cleared from mode unless the
                                 parent has a default ACL (FUSE's DONT_MASK) */
    uint64_t rdev;
    uint64_t off, off2, len;
    const void *in;
    void *out;
    size_t size;
    struct sfs_attr sattr;    /* SETATTR: new values ... */
    unsigned valid;           /* ... selected by SFS_SET_* bits */
    eng_fill_fn fill;         /* READDIR */
    void *fill_arg;
    bool plus;                /* READDIR: readdirplus */
    sfs_map_fn map;           /* READ: non-NULL = zero-copy, out unused: the */
    void *map_arg;            /*   pieces go to map (see sfs_read_map) */
    struct eng_cisc *cisc;    /* CISC: the decoded vector (results in it) */
    uint64_t mem_held;        /* CISC: device memory it reserved, given back when it
                                 leaves its core (engine.c run, after the model's
                                 sleep: a slow core holds an op's buffers that long) */
    void *part;               /* CISC_PART: the shared work (exec.c) */
    /* libcisc door */
    const char *path, *path2; /* *_PATH ops */
    struct hdl_table *hdl;    /* the session's handles; NULL = the engine's (FUSE) */
    struct eng_chg *chg;      /* non-NULL: record changes here */
    void *hold;               /* the watcher's hold on its batch (eng_submit_batch),
                                 given back by eng_cmd_posted */
    /* results */
    int64_t ret;              /* 0, a count/offset, or -errno */
    struct sfs_attr attr;
    struct sfs_statfs st;
    uint64_t out_fh;
    uint64_t out_off;         /* APPEND: where the data landed */
    /* completion: done() on the device core, or eng_call()'s wait */
    eng_done_fn done;
    void *priv;
    uint32_t state;           /* eng_call's completion word (common/done.h) */
};

struct engine;
struct progs;

/* The floor on one fused op's work, which holds under every scheduling
 * policy (a policy's own limits may only be tighter):
 *   - device time: an op that has executed for op_time_ms (device time:
 *     host time scaled by the device model's core speed) fails with
 *     -ETIME at its next step or block boundary;
 *   - instructions: a bpf step runs at most ENG_STEP_BUDGETS times the
 *     per-invocation budget (progs.h, --prog-budget), summed over its
 *     blocks, and an op's bpf steps ENG_OP_BUDGETS times it; past that
 *     the step fails with -ETIME, as one block does past its budget.
 * Generous for honest use (a 64 MiB step in 4 KiB blocks is 16384
 * invocations, far below the budget each), they stop the worst case (the
 * budget in every block of a large input in tiny blocks) in seconds, not
 * days. A failed op is rolled back like any other. */
#define ENG_OP_TIME_MS_DEFAULT 30000u
#define ENG_STEP_BUDGETS       4096u
#define ENG_OP_BUDGETS         (4u * ENG_STEP_BUDGETS)

struct eng_config {
    unsigned cores;           /* device cores, 1..SCHED_MAX_CORES */
    const char *sched;        /* policy name (sched.h: fifo, rr, cfs, cfs-cpu, drf) */
    bool trace;               /* log every command to stderr (off by default) */
    bool direct;              /* scheduler direct dispatch (sched.h) */
    uint64_t dev_ram;         /* device memory budget for CISC buffers; 0 = 2 GiB */
    bool tenant_pid;          /* a tenant is the caller's pid (default: its uid) */
    uint32_t max_queues;      /* queue pairs per tenant; 0 = no cap */
    struct progs *progs;      /* eBPF program registry for bpf steps (not owned); NULL = none */
    uint64_t lease_wait_ns;   /* longest an append waits for a mount write(2)
                                 (lease.h); 0 = LEASE_WAIT_NS (1 s) */
    uint64_t op_time_ms;      /* device-time ceiling of one fused op (above);
                                 0 = ENG_OP_TIME_MS_DEFAULT */
    unsigned tx;              /* default transaction mode of fused ops: enum wire_tx,
                                 WIRE_TX_DEFAULT = macro (fused.h) */
    bool read_only;           /* refuse every mutation with -EROFS (eng_read_only) */
    uint64_t tx_log_max;      /* autorec's log space; 0 = ENG_TX_LOG_MAX_DEFAULT */
    uint64_t tx_log_entry;    /* autorec's inline log entry; 0 = ENG_TX_LOG_ENTRY_DEFAULT */
};

#define ENG_TX_LOG_MAX_DEFAULT   (256ull << 20)   /* --tx-log-max (fused/oplog.h) */
#define ENG_TX_LOG_ENTRY_DEFAULT 4096ull          /* --tx-log-entry */

/* Starts the engine on a mounted StorageFS (not owned: the caller unmounts
 * it after eng_destroy). Returns 0 and sets *out, or -errno (-EINVAL for an
 * unknown scheduler or core count). */
int eng_create(struct sfs *fs, const struct eng_config *cfg, struct engine **out);

/* Runs every queued command, stops the cores, releases every handle still
 * open and every reference handed out, and frees the engine. */
void eng_destroy(struct engine *e);

/* Commands waiting now for a mount write(2) to end (lease.h). */
uint64_t eng_parked(struct engine *e);

/* Waits until every command submitted so far has completed (its done()
 * has returned). The caller stops its own submissions first: a door that
 * replies from done() drains before it tears down its session. Commands
 * parked on an append lease (lease.h) are not waited for: they complete
 * when the lease ends, within lease_wait_ns; a write with
 * ENG_WRITE_ORDERED (all the FUSE door's) never parks. */
void eng_drain(struct engine *e);

/* Whether cmd asks to change the file system (the read-only rule,
 * invariant 6): namespace, data, attribute and xattr changes; opening
 * for writing, truncating or creating; a fused op with such a step (*step
 * set to the first, when step is non-NULL). */
bool eng_cmd_mutates(const struct eng_cmd *cmd, unsigned *step);

/* True when e was created read-only. */
bool eng_read_only(const struct engine *e);

/* Zeroes cmd and sets its opcode and credentials. */
void eng_cmd_init(struct eng_cmd *cmd, unsigned op, const struct eng_cred *cred);

/* Queues cmd; cmd->done(cmd) runs on a device core when it completes.
 * Returns 0, or -errno if it was not queued (done is then not called). */
int eng_submit(struct engine *e, struct eng_cmd *cmd);

/* Like eng_submit, but never runs cmd on the calling thread (no direct
 * dispatch): a device core handing work to other cores, a poller handing
 * over a command that is large or may run long. Returns 0 or -errno
 * (done is then not called). */
int eng_submit_handoff(struct engine *e, struct eng_cmd *cmd);

/* Makes every fused op that is running or yet to run stop at its next
 * block or step boundary with -ECANCELED, rolled back like any failed op
 * (shutdown: `cisc down`, SIGTERM). Other commands are not affected.
 * Irreversible; safe from any thread. */
void eng_cancel(struct engine *e);

#define ENG_BATCH_MAX 64u

/* Queues n (<= ENG_BATCH_MAX) commands at once: err[i] is each one's
 * eng_submit result (done is not called for one that failed). Then the
 * calling thread runs, in free core slots, each command the scheduler's
 * policy picks next while mine(c) accepts it (a poller's small commands),
 * and the device cores take the rest: no command jumps the policy.
 * First it lets a watcher with a writeback cache hand its dirty data over
 * and hold it back until the batch is done (eng_watch_writeback): it may
 * block, so call it holding no lock a FUSE request may need; then call
 * eng_cmd_posted for each command once its completion is posted. */
void eng_submit_batch(struct engine *e, struct eng_cmd **cmds, unsigned n, int *err,
                      bool (*mine)(const struct eng_cmd *c));

/* Queues cmd and waits for it. Returns cmd->ret. */
int64_t eng_call(struct engine *e, struct eng_cmd *cmd);

/* Statistics: per-op summaries, and the scheduler's. */
struct stats;
const struct stats *eng_stats(struct engine *e);
void eng_sched_stats(struct engine *e, struct sched_stats *st);

/* The tenant cred belongs to: its uid, or its pid under tenant_pid. */
uint32_t eng_tenant(const struct engine *e, const struct eng_cred *cred);

/* True if tenants are processes (tenant_pid): a door that knows only a
 * thread id (the FUSE mount) passes its process's id in cred.pid. */
bool eng_tenant_is_pid(const struct engine *e);

/* Per-tenant scheduler statistics (sched_tenant_stats). */
unsigned eng_tenant_stats(struct engine *e, struct sched_tenant_stats *out, unsigned max);

/* The scheduler's report of tenants and queues (sched_report). */
ssize_t eng_sched_report(struct engine *e, char *buf, size_t size);

/* Sets a tenant's scheduling weight. Returns 0 or -EINVAL / -ENOMEM. */
int eng_tenant_weight(struct engine *e, uint32_t tenant, uint32_t weight);

/* A door opens a queue for cred's tenant: -EDQUOT when the tenant has
 * max_queues open. eng_queue_close undoes one successful open. */
int eng_queue_open(struct engine *e, const struct eng_cred *cred);
void eng_queue_close(struct engine *e, const struct eng_cred *cred);

/* Number of handles open now (for status). */
uint64_t eng_open_handles(struct engine *e);

/* The default transaction mode of fused ops (enum wire_tx, never
 * WIRE_TX_DEFAULT) and its name ("macro", "micro", "autorec"). */
unsigned eng_tx_mode(struct engine *e);
const char *eng_tx_name(unsigned tx);

/* Closes every handle of table t (a session's), dropping the references
 * they hold. No command using t may be in flight. */
void eng_release_handles(struct engine *e, struct hdl_table *t);

/* A door that caches what the engine serves (the FUSE front end: the
 * kernel's dentry, attribute and page caches) watches changes made
 * through other doors. known() answers fast, from any thread, whether the
 * door may cache inode ino; the inval_* calls may block (they talk to the
 * kernel) and are made only through eng_chg_flush, never on a device
 * core. A door whose cache may hold changes the engine has not seen yet
 * (the kernel's writeback cache: dirty pages) also sets writeback: it
 * makes the cache hand them over (blocking) and is called before every
 * batch of ncmds commands of another door runs (eng_submit_batch), on the
 * submitting thread, holding no engine lock. It may return a hold (the
 * door's own writers kept waiting while the batch runs), which the engine
 * gives back through unhold once per command of the batch, after that
 * command's completion is posted (eng_cmd_posted; any thread, possibly a
 * device core: unhold must not block). */
struct eng_watch {
    bool (*known)(void *arg, uint64_t ino);
    void (*inval_inode)(void *arg, uint64_t ino, int64_t off, int64_t len);
    void (*inval_entry)(void *arg, uint64_t parent, const char *name);
    void *arg;
    void *(*writeback)(void *arg, unsigned ncmds);   /* NULL: the door caches no changes */
    void (*unhold)(void *arg, void *hold);
};

/* Sets (w copied) or clears (NULL) the watcher; returns after any call
 * into the previous watcher has finished. */
void eng_set_watch(struct engine *e, const struct eng_watch *w);

/* Calls the watcher's writeback, if it has one (see struct eng_watch), for
 * a batch of ncmds commands. Returns its hold or NULL. */
void *eng_watch_writeback(struct engine *e, unsigned ncmds);

/* A door that submitted c with eng_submit_batch calls this once it has
 * posted c's completion: gives back c's share of the watcher's hold. Does
 * not block. */
void eng_cmd_posted(struct engine *e, struct eng_cmd *c);

/* True if chg touches something the watcher may cache (cheap). */
bool eng_chg_pending(struct engine *e, const struct eng_chg *chg);

/* Sends the invalidations for chg to the watcher (blocking; not on a
 * device core). */
void eng_chg_flush(struct engine *e, const struct eng_chg *chg);

/* Frees the records chained to chg (not chg itself) and empties it. */
void eng_chg_release(struct eng_chg *chg);

/* Record into c->chg (no-op when NULL) that inode ino changed: its data in
 * [off, off + len) (len 0: to the end), or only its attributes (off < 0).
 * For executors of commands that change files (CISC steps). */
void eng_chg_inode(struct eng_cmd *c, uint64_t ino, int64_t off, int64_t len);

/* Record into c->chg that entry `name` of directory parent changed
 * (created, removed, renamed); the directory's attributes too. */
void eng_chg_entry(struct eng_cmd *c, uint64_t parent, const char *name);

#ifdef __cplusplus
}
#endif

#endif

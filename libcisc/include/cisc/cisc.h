/*
 * cisc/cisc.h - libcisc, the client library of a ciscfs device.
 *
 * A running device (`cisc up IMAGE MOUNTPOINT`) serves its file system two
 * ways: the FUSE mount, and this library, which talks to the device
 * directly over shared-memory queue pairs, with no system call per
 * operation. Both doors go to the same engine, so a change made through
 * one is visible through the other at once.
 *
 *   struct cisc_session *s;   cisc_session_open("/mnt/cisc", &s)
 *   struct cisc_queue *q;     cisc_queue_create(s, &q)     (one per thread)
 *   uint64_t fh;              cisc_open(q, "dir/file", O_RDWR | O_CREAT, 0644, &fh)
 *                             cisc_pwrite(q, fh, buf, len, 0) ...
 *                             cisc_close(q, fh)
 *                             cisc_queue_destroy(q); cisc_session_close(s)
 *
 * Sessions. A session is one connection to the device's control socket.
 * The device identifies the caller by the credentials the kernel gives
 * for that connection (SO_PEERCRED: uid, gid, pid, and the supplementary
 * groups) at cisc_session_open; every operation in the session is
 * checked against them, like a system call of that process. A process
 * that changes its uid afterwards keeps the old identity on its old
 * sessions and gets the new one on a new session. File handles belong to
 * their session: another session cannot use them, and closing the
 * session (or the process dying) closes them all.
 *
 * A session does not survive fork(): a child process opens its own (and
 * gets its own credentials).
 *
 * Queues. A queue pair is a region of memory shared with the device: a
 * submission ring, a completion ring and a data arena. A session may have
 * many; the normal use is one per thread. A queue is not thread-safe: one
 * thread at a time uses it (the session itself is thread-safe).
 *
 * Buffers. Data moves between the application and the device only through
 * the arena. cisc_buf_alloc() returns arena memory: reads and writes on
 * such buffers are zero-copy. Any other buffer works too; the library then
 * copies through temporary arena space.
 *
 * Paths name files inside the device's file system, relative to its root:
 * "a/b" and "/a/b" both mean MOUNTPOINT/a/b, whatever the process's
 * current directory (the device has none; `cisc run` takes a relative
 * path from the current directory, which must then be inside the mount,
 * and turns it into this form). ".." stops at the root, and
 * symlink targets are resolved inside the file system (an absolute target
 * from its root). Every directory on the way needs search permission.
 *
 * Errors. Every call returns 0, a non-negative count, or a negative errno
 * (-ENOENT, -EACCES ...), the value the matching POSIX call would set in
 * errno; errno itself is not used. -ENOTCONN means the device went away.
 * cisc_strerror() gives the message, with libcisc's own meaning for the
 * values it uses specially (-ENODEV: not a ciscfs mount point, -E2BIG: a
 * step over the device's size limit ...).
 *
 * Limits. One fused op holds at most CISC_VEC_MAX (64) steps naming at
 * most CISC_VEC_MAX_FH (16) session handles; a path is at most 4095
 * bytes. In the device, one step's output (and a READ step's length) is
 * at most 64 MiB and all of one op's buffers at most 256 MiB, less when
 * the device was started with a smaller --device-ram; a program object
 * is at most 16 MiB and a program block at most 64 MiB. cisc_limits()
 * returns the values of a running device; a step over them fails with
 * -E2BIG.
 *
 * Fused (CISC) operations - one command that opens, reads, computes,
 * writes and closes inside the device - are declared in <cisc/fused.h>,
 * included at the end of this header.
 */
#ifndef CISC_CISC_H
#define CISC_CISC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CISC_API __attribute__((visibility("default")))

struct cisc_session;
struct cisc_queue;

/* ---- sessions ------------------------------------------------------- */

/* Connects to the device serving `mountpoint` (an existing directory on
 * which a ciscfs device is mounted; relative paths are taken from the
 * current directory). The caller's credentials are recorded by the device
 * now. On success *out is a new session the caller owns and frees with
 * cisc_session_close().
 * Returns 0, or -errno: -ENOENT (no such directory), -ENODEV (it is not
 * a ciscfs mount point: no device serves it), -ECONNREFUSED (a ciscfs
 * mount whose device no longer answers), -ENAMETOOLONG, -ENOMEM. */
CISC_API int cisc_session_open(const char *mountpoint, struct cisc_session **out);

/* Closes the session: destroys its queues still open (their buffers and
 * pointers become invalid) and the device closes every file handle the
 * session still has. Requires that no other thread uses the session or
 * its queues. s may be NULL. */
CISC_API void cisc_session_close(struct cisc_session *s);

/* For the child of fork(): releases this process's copy of a session
 * inherited from the parent (its queues' memory and its socket), without
 * a word to the device, so that the parent's session, handles and queues
 * are untouched and the child holds nothing of them. Pointers into the
 * session's queues become invalid. Call it in the child only, before any
 * other thread exists. s may be NULL. */
CISC_API void cisc_session_forget(struct cisc_session *s);

/* The credentials the device recorded for the session. Returns 0 or
 * -errno. Any pointer may be NULL. */
CISC_API int cisc_session_creds(struct cisc_session *s, uint32_t *uid, uint32_t *gid,
                                int32_t *pid);

/* ---- queues --------------------------------------------------------- */

/* Queue geometry for cisc_queue_create_params(); 0 means the default.
 * Entry counts are rounded up to powers of two; the arena size is rounded
 * up to a power of two from 64 KiB to 1 GiB. */
struct cisc_queue_params {
    uint32_t sq_entries;      /* submission slots, default 128, at most 4096 */
    uint32_t cq_entries;      /* completion slots, default 2 * sq_entries */
    uint64_t arena_size;      /* data arena bytes, default 8 MiB */
    uint32_t spin_ns;         /* busy-poll a completion this long before
                                 sleeping on it; default 20000, 0 = default */
    uint32_t flags;           /* CISC_QUEUE_* */
};

/* Wait for completions by busy-polling only (never sleep): lowest latency,
 * one host core per waiting thread. */
#define CISC_QUEUE_BUSY_POLL (1u << 0)

/* Creates a queue pair with default geometry in session s. The queue
 * belongs to s (cisc_session_close destroys it too) and is used by one
 * thread at a time. Returns 0 and sets *out, or -errno (-EMFILE: the
 * device's limit of queues per session; -EDQUOT: the limit of queues or
 * arena bytes per user over all its sessions, root excepted, or of queues
 * per tenant (cisc up --max-queues-per-tenant); -ENOMEM). */
CISC_API int cisc_queue_create(struct cisc_session *s, struct cisc_queue **out);

/* Same with explicit geometry (p may be NULL for the defaults).
 * Returns 0 and sets *out, or -errno (-EINVAL: a size out of range). */
CISC_API int cisc_queue_create_params(struct cisc_session *s,
                                      const struct cisc_queue_params *p,
                                      struct cisc_queue **out);

/* Waits for the queue's commands in flight, then destroys it and unmaps
 * its memory: arena buffers from it become invalid. q may be NULL. */
CISC_API void cisc_queue_destroy(struct cisc_queue *q);

/* The device's id of the queue pair (shown in device statistics). */
CISC_API uint32_t cisc_queue_id(const struct cisc_queue *q);

/* How many of the queue's completions so far said that garbage collection
 * was running on the flash die that served their command (a device with
 * `cisc up --media flash`; always 0 otherwise). A GC-aware host cache
 * reads it around a call. */
CISC_API uint64_t cisc_queue_gc_completions(const struct cisc_queue *q);

/* ---- arena buffers -------------------------------------------------- */

/* Allocates size bytes (1 .. arena size) of the queue's arena, aligned to
 * 64 bytes, for zero-copy I/O. The buffer belongs to the caller until
 * cisc_buf_free(); it dies with the queue. Returns 0 and sets *buf, or
 * -EINVAL (size 0) / -ENOMEM (arena exhausted or fragmented). */
CISC_API int cisc_buf_alloc(struct cisc_queue *q, size_t size, void **buf);

/* Returns a buffer from cisc_buf_alloc() on the same queue. NULL is
 * ignored; any other pointer is a programming error (ignored, never
 * corrupting the arena). */
CISC_API void cisc_buf_free(struct cisc_queue *q, void *buf);

/* ---- files (RISC operations) ---------------------------------------- */

/* Opens (flags O_RDONLY / O_WRONLY / O_RDWR, plus O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW; others are ignored) the file
 * at path, creating it with permission bits `mode` when O_CREAT is set and
 * it is missing (no umask applies: mode is used as given).
 * The handle *fh belongs to the session until cisc_close(); its file
 * position starts at 0 (used by cisc_read / cisc_write). O_APPEND handles
 * write at the end, atomically. Returns 0 and sets *fh, or -errno
 * (-ENOENT, -EEXIST, -EACCES, -EISDIR, -ENOTDIR, -ELOOP, -ENAMETOOLONG,
 * -ENOSPC ...). */
CISC_API int cisc_open(struct cisc_queue *q, const char *path, int flags, mode_t mode,
                       uint64_t *fh);

/* Closes handle fh of this session. Returns 0 or -EBADF. */
CISC_API int cisc_close(struct cisc_queue *q, uint64_t fh);

/* Reads up to len bytes at the handle's position and advances it.
 * Returns the bytes read (0 at end of file) or -errno (-EBADF: not open
 * for reading, -EISDIR). */
CISC_API ssize_t cisc_read(struct cisc_queue *q, uint64_t fh, void *buf, size_t len);

/* Reads up to len bytes at offset off; the position does not move.
 * Returns the bytes read or -errno. */
CISC_API ssize_t cisc_pread(struct cisc_queue *q, uint64_t fh, void *buf, size_t len,
                            uint64_t off);

/* Writes len bytes at the handle's position (at the end for O_APPEND
 * handles) and advances it. Returns the bytes written or -errno (-EBADF:
 * not open for writing, -ENOSPC, -EFBIG). */
CISC_API ssize_t cisc_write(struct cisc_queue *q, uint64_t fh, const void *buf, size_t len);

/* Writes len bytes at offset off (O_APPEND handles: at the end, as
 * pwrite(2) does on Linux); the position does not move.
 * Returns the bytes written or -errno. */
CISC_API ssize_t cisc_pwrite(struct cisc_queue *q, uint64_t fh, const void *buf,
                             size_t len, uint64_t off);

/* Appends len bytes at the end of the file, atomically with respect to
 * every other writer (any session, the mount), whatever the handle's
 * flags. *off (may be NULL) receives the offset where the data landed.
 * len must fit in the arena when buf is not an arena buffer.
 * Returns the bytes written or -errno. */
CISC_API ssize_t cisc_append(struct cisc_queue *q, uint64_t fh, const void *buf, size_t len,
                             uint64_t *off);

/* Sets the size of the file open as fh (which must be open for writing:
 * -EINVAL otherwise, like ftruncate(2)). Returns 0 or -errno. */
CISC_API int cisc_truncate(struct cisc_queue *q, uint64_t fh, uint64_t size);

/* Makes the file's data (and metadata unless datasync) durable.
 * Returns 0 or -errno. */
CISC_API int cisc_fsync(struct cisc_queue *q, uint64_t fh, int datasync);

/* Attributes of the file at path (symlinks followed). st_dev is 0.
 * Returns 0 or -errno. */
CISC_API int cisc_stat(struct cisc_queue *q, const char *path, struct stat *st);

/* Attributes of the open file fh. Returns 0 or -errno. */
CISC_API int cisc_fstat(struct cisc_queue *q, uint64_t fh, struct stat *st);

/* Removes a name that is not a directory. Returns 0 or -errno (-EISDIR,
 * -ENOENT, -EACCES, -EPERM for sticky directories ...). */
CISC_API int cisc_unlink(struct cisc_queue *q, const char *path);

/* Creates a directory. Returns 0 or -errno (-EEXIST ...). */
CISC_API int cisc_mkdir(struct cisc_queue *q, const char *path, mode_t mode);

/* Removes an empty directory. Returns 0 or -errno (-ENOTEMPTY ...). */
CISC_API int cisc_rmdir(struct cisc_queue *q, const char *path);

/* Renames oldpath to newpath; flags 0 or RENAME_NOREPLACE or
 * RENAME_EXCHANGE (<linux/fs.h> values). Returns 0 or -errno. */
CISC_API int cisc_rename(struct cisc_queue *q, const char *oldpath, const char *newpath,
                         unsigned flags);

/* Space of the open file fh (open for writing), as fallocate(2): mode 0
 * or FALLOC_FL_KEEP_SIZE preallocates [off, off+len) (reads as zeros);
 * FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE deallocates it;
 * FALLOC_FL_ZERO_RANGE zeroes it; FALLOC_FL_COLLAPSE_RANGE removes it and
 * moves the rest of the file down (the size shrinks by len);
 * FALLOC_FL_INSERT_RANGE opens a hole of len bytes at off, moving the
 * rest up (<linux/falloc.h> values). Collapse and insert take offsets and
 * lengths in multiples of 4096 bytes, a collapsed range must end before
 * the end of the file and an inserted one start before it (-EINVAL
 * otherwise, as Linux); each is all or nothing, even across a crash, and
 * -E2BIG when too many extents follow off for one journal transaction.
 * (Through the mount, Linux's FUSE client refuses the last two modes
 * with EOPNOTSUPP before asking the device: libcisc is their door.)
 * Returns 0 or -errno (-EBADF: fh not open for writing). */
CISC_API int cisc_fallocate(struct cisc_queue *q, uint64_t fh, int mode, uint64_t off,
                            uint64_t len);

/* Extended attributes of the file at path (symlinks followed), as
 * getxattr(2), setxattr(2), listxattr(2) and removexattr(2): names carry
 * their namespace ("user.", "trusted." for root, "security.", and the
 * POSIX ACLs "system.posix_acl_access" / "system.posix_acl_default" in
 * Linux's xattr form, which the device validates and keeps in step with
 * the mode); other namespaces are -EOPNOTSUPP. The device checks each
 * call with the session's credentials as the kernel would: reading
 * "user." needs read permission, changing it write permission (regular
 * files and directories only), "trusted." is root's, "security." may be
 * read by anyone and changed by root, ACLs read by anyone and changed by
 * the owner or root (-EPERM otherwise), and a path needs search
 * permission on every directory. Values are at most 65536
 * bytes (-E2BIG), names 1..255 bytes (-ERANGE).
 *
 * cisc_getxattr copies the value into value (size bytes of room) and
 * returns its size; size 0 returns the size only; -ERANGE when it does
 * not fit, -ENODATA when there is no such attribute. */
CISC_API ssize_t cisc_getxattr(struct cisc_queue *q, const char *path, const char *name,
                               void *value, size_t size);

/* Sets attribute name of path to size bytes of value (names, limits
 * and permissions: cisc_getxattr); flags 0,
 * XATTR_CREATE (-EEXIST if present) or XATTR_REPLACE (-ENODATA if
 * absent), <sys/xattr.h> values. Returns 0 or -errno (-EINVAL for a
 * malformed ACL). */
CISC_API int cisc_setxattr(struct cisc_queue *q, const char *path, const char *name,
                           const void *value, size_t size, int flags);

/* The names of path's attributes, each NUL-terminated, into list (size
 * bytes of room); "trusted." names only for root (permissions:
 * cisc_getxattr). Returns the bytes of
 * the whole list (size 0: the size only), or -errno (-ERANGE: too small). */
CISC_API ssize_t cisc_listxattr(struct cisc_queue *q, const char *path, char *list,
                                size_t size);

/* Removes attribute name of path (permissions as for changing it:
 * cisc_getxattr). Returns 0 or -errno (-ENODATA if absent). */
CISC_API int cisc_removexattr(struct cisc_queue *q, const char *path, const char *name);

/* One directory entry, valid only during the callback. */
struct cisc_dirent {
    uint64_t ino;
    unsigned type;            /* DT_REG, DT_DIR, ... */
    const char *name;         /* NUL-terminated */
};

/* Called per entry; return nonzero to stop the listing. */
typedef int (*cisc_dirent_fn)(void *arg, const struct cisc_dirent *de);

/* Lists the directory at path ("." and ".." first), calling fn for each
 * entry. Needs read permission on it. Returns 0 (also when fn stopped)
 * or -errno (-ENOTDIR ...). */
CISC_API int cisc_readdir(struct cisc_queue *q, const char *path, cisc_dirent_fn fn,
                          void *arg);

/* One round trip to the device that does nothing (for measurements).
 * Returns 0 or -errno. */
CISC_API int cisc_nop(struct cisc_queue *q);

/* ---- errors and limits ---------------------------------------------- */

/* The message for err, a libcisc return value (negative errno; a
 * positive one is taken as its negation). Values libcisc gives a meaning
 * of its own get that meaning (-ENODEV from cisc_session_open: "not a
 * ciscfs mount point", -E2BIG: over the device's per-step or per-op size
 * limit, -ETIME: a program's instruction budget or the op's time limit,
 * -ENOTCONN: the device went away ...); others get strerror's text. The
 * string is static: never freed, never changed. */
CISC_API const char *cisc_strerror(int err);

/* The size limits of one fused op on the device of session s. */
struct cisc_limits {
    uint32_t steps;           /* steps per op: CISC_VEC_MAX (64) */
    uint32_t handles;         /* session handles one op may name: CISC_VEC_MAX_FH (16) */
    uint32_t path_bytes;      /* longest path, without its NUL: 4095 */
    uint64_t step_bytes;      /* one step's output, and a READ step's length:
                                 64 MiB, or less with a small cisc up --device-ram */
    uint64_t op_bytes;        /* all of one op's device buffers: 256 MiB or less */
    uint64_t prog_object_bytes; /* largest eBPF object cisc_prog_load takes: 16 MiB */
    uint32_t prog_block_bytes;  /* largest block_size of a program step: 64 MiB */
};

/* Fills *out with the limits of the device serving s (a step over them
 * fails with -E2BIG). Returns 0 or -errno. */
CISC_API int cisc_limits(struct cisc_session *s, struct cisc_limits *out);

#ifdef __cplusplus
}
#endif

#include <cisc/fused.h>
#include <cisc/progs.h>

#endif

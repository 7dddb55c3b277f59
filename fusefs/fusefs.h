/*
 * fusefs/fusefs.h - the FUSE front end: a libfuse low-level session whose
 * every request becomes one engine command (device/engine/engine.h).
 *
 * The front end is a client of the device like any other door: it fills
 * the command with the caller's uid, gid and pid from the FUSE request
 * (supplementary groups on demand via fuse_req_getgroups), submits it,
 * waits for its completion on the device core and replies. Inode numbers
 * are StorageFS inode numbers (FUSE_ROOT_ID == SFS_ROOT_INO).
 *
 * Mount: default_permissions (the kernel checks, and the device checks
 * again; with FUSE_POSIX_ACL the kernel evaluates POSIX ACLs too, read
 * through GETXATTR and cached, and leaves the umask to the device:
 * DONT_MASK), allow_other when started by root, auto_unmount (a killed device
 * leaves no dead mount), max_write 1 MiB, max_read 256 KiB, subtype "ciscfs".
 * The kernel leaves removing set-id bits and file capabilities on write,
 * truncate and chown to the device (FUSE_HANDLE_KILLPRIV_V2, added to the
 * INIT reply by killpriv.c), which the engine does for every door; so a
 * write is one request, not a GETXATTR probe and the write.
 * POSIX and flock locks are left to the kernel, which keeps them per inode
 * for every process using the mount: correct as long as the FUSE mount is
 * the only door that locks (libcisc does not lock).
 *
 * Invariants:
 *   1. Every request is answered exactly once.
 *   2. Every reference the kernel holds (lookup count) is one engine
 *      reference: each entry reply takes one, FORGET returns them, and a
 *      failed reply gives its reference back at once.
 *   3. Kernel caches (entry, attribute, negative entry, page cache) are
 *      trusted for FUSEFS_TIMEOUT seconds; changes made through the
 *      libcisc door invalidate them (known.c registers an engine watch:
 *      fuse_lowlevel_notify_inval_inode/_entry, sent from the queue
 *      service's notifier thread before the change's completion is
 *      posted), so they are visible through the mount at once.
 *   4. Replies are sent by the device core that ran the command; before
 *      the session is destroyed the owner calls eng_drain().
 *   5. With the writeback cache (fusefs_opts.writeback, off by default) the
 *      kernel keeps written data as dirty pages; while a batch of another
 *      door's commands runs, every file open for writing on the mount is
 *      held: its dirty pages written back first and the kernel's inode
 *      lock kept until the batch's completions are posted (wback.c,
 *      through the engine's eng_watch.writeback and unhold). After another
 *      door grew a file the kernel's size of it is raised; after another
 *      door truncated it the kernel truncates its inode to the device's
 *      size. Not covered: writes through shared mappings during a batch
 *      (as without the writeback cache); see docs/MOUNT.md.
 */
#ifndef CISC_FUSEFS_H
#define CISC_FUSEFS_H

#include <stdbool.h>

#include "device/engine/engine.h"

#define FUSEFS_TIMEOUT 10.0
#define FUSEFS_MAX_IO  (1u << 20)   /* largest write request */
/* Largest read request. Read replies are spliced from the image file
 * through a pipe, which holds at most 1 MiB (256 pages) unless the
 * process may exceed /proc/sys/fs/pipe-max-size; the reply header takes a
 * page, so a 1 MiB reply could never be spliced. 256 KiB also lets the
 * kernel's read-ahead keep several requests in flight (measured best of
 * 128 KiB .. 1 MiB). */
#define FUSEFS_MAX_READ (1u << 18)

struct fusefs;

struct fusefs_opts {
    const char *mountpoint;
    const char *fsname;       /* shown in /proc/mounts (the image path) */
    const char *extra;        /* more -o options, or NULL */
    bool allow_other;
    unsigned max_threads;     /* FUSE threads; 0 = default */
    bool writeback;           /* the kernel's writeback cache (invariant 5) */
};

/* Creates the session and mounts it. Returns 0 and sets *out, or -errno
 * with a reason in err. */
int fusefs_mount(struct engine *eng, const struct fusefs_opts *o, struct fusefs **out,
                 char *err, size_t errlen);

/* Serves requests on the calling thread (plus FUSE worker threads) until
 * the mount goes away, SIGTERM/SIGINT/SIGHUP arrive, or fusefs_exit().
 * Returns 0 or -errno. */
int fusefs_loop(struct fusefs *f);

/* Asks the loop to return; callable from any thread. */
void fusefs_exit(struct fusefs *f);

/* Unmounts (if still mounted) and frees. */
void fusefs_destroy(struct fusefs *f);

#endif

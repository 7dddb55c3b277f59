/*
 * device/storagefs/storagefs.h - StorageFS, the journaling file system
 * inside the device image. The only header the rest of the device uses.
 *
 * StorageFS is inode-addressed (like the FUSE low-level API): every call
 * names files by inode number, and directory entries by (parent inode,
 * name). It knows nothing about FUSE, queues or credentials: permission
 * checks belong to the device engine; StorageFS only records the owner it
 * is given for new inodes.
 *
 * Invariants:
 *   1. Every metadata change belongs to a journal transaction; after a
 *      crash, the image replays to the state of some prefix of committed
 *      transactions (never a partial one).
 *   2. Ordered mode: data blocks are written before the transaction that
 *      makes them reachable commits; a crash never exposes stale or
 *      garbage blocks inside a file. Overwrites of existing data go in
 *      place, except inside a data-journaled transaction
 *      (SFS_TXN_DATA_JOURNAL), where they commit with it.
 *   3. When sfs_fsync(ino) or sfs_sync() returns 0, everything done to
 *      that inode (resp. the whole file system) before the call is durable.
 *   4. Operations on different inodes run in parallel (per-inode locks;
 *      allocator and journal locks are held only briefly). Operations that
 *      touch several inodes lock them in ascending inode order.
 *   5. Every error is a negative errno. Corruption found in the image is
 *      -EUCLEAN, reported through CISC_CORRUPT with the block number; a
 *      corrupt block is never used.
 *   6. An inode whose link count drops to zero lives on while references
 *      (sfs_iget) are held; it is freed at the last sfs_iput, or at the
 *      next mount if the device crashed first (orphan list).
 *
 * Transactions: every mutating call takes a `struct sfs_txn *`. NULL means
 * "a transaction of its own" (the usual case). A caller that needs several
 * calls to commit together (a fused CISC op, MacroTx) opens one with
 * sfs_txn_begin(), passes it to each call, and ends it with
 * sfs_txn_commit() or sfs_txn_abort(); sfs_txn_begin_flags() with
 * SFS_TXN_DATA_JOURNAL makes its data overwrites atomic with it too
 * (data journaling). The on-image transaction header
 * carries a type and a per-step commit bitmap, reserved for the per-step
 * transactions (MicroTx) of a later issue.
 */
#ifndef CISC_DEVICE_STORAGEFS_H
#define CISC_DEVICE_STORAGEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "device/media/media.h"

#define SFS_BLOCK_SIZE   4096u
#define SFS_ROOT_INO     1u
#define SFS_NAME_MAX     255u
#define SFS_SYMLINK_MAX  4095u
#define SFS_XATTR_NAME_MAX  255u
#define SFS_XATTR_SIZE_MAX  65536u   /* one value */

struct sfs;       /* a mounted file system */
struct sfs_inode; /* an in-memory inode, held by sfs_iget_ino */
struct sfs_txn;   /* an open transaction */

/* ---- creating and mounting ---------------------------------------- */

struct sfs_mkfs_opts {
    uint64_t size_bytes;      /* file system size; 0 = all of m (which the CLI
                                 creates at 1 GiB by default) */
    uint64_t inodes;          /* usable inodes; 0 = one per 16 KiB of space */
    uint32_t journal_blocks;  /* 0 = choose from the size */
    const uint8_t *uuid;      /* 16 bytes, or NULL for a random one */
    uint32_t root_uid, root_gid;  /* owner of the root directory */
};

/* Writes a fresh StorageFS onto m (whose nblocks is the image size).
 * Returns 0 or -errno (-ENOSPC: m too small for the request). */
int sfs_mkfs(struct media *m, const struct sfs_mkfs_opts *opts);

struct sfs_mount_opts {
    bool read_only;              /* no journal replay, no writes at all */
    uint32_t commit_interval_ms; /* background commit period; 0 = 1000 */
    bool defer_writes;           /* read-write, but read-only until
                                    sfs_mount_finish (ignored with read_only) */
};

/* Mounts the file system on m: validates the superblock, the journal, the
 * bitmaps, the root inode and its directory index, then (read-write)
 * replays the journal, marks the image mounted and processes the orphan
 * list. Nothing is written before everything is validated. With
 * defer_writes the writing part waits for sfs_mount_finish: until then
 * the file system reads as replayed but refuses changes (-EROFS), so the
 * caller can check what it needs of the image before the first write.
 * On success the sfs owns m (closed by sfs_unmount). On failure m is left
 * open and untouched beyond reads if validation failed. Returns 0 or
 * -errno (-EUCLEAN for corruption, with a message in cisc_corrupt_last()). */
int sfs_mount(struct media *m, const struct sfs_mount_opts *opts, struct sfs **out);

/* Completes a mount made with defer_writes: the journal replayed onto the
 * image, the image marked mounted, the orphans freed; the file system is
 * read-write from then on. Returns 0 (also when nothing was deferred) or
 * -errno; on failure it stays read-only and must be unmounted. */
int sfs_mount_finish(struct sfs *fs);

/* Commits, checkpoints the journal, marks the image clean and frees
 * everything, including the media. Returns 0 or -errno (the sfs is freed
 * either way). */
int sfs_unmount(struct sfs *fs);

/* ---- attributes --------------------------------------------------- */

struct sfs_attr {
    uint64_t ino;
    uint64_t generation;
    uint32_t mode;            /* type and permission bits, as st_mode */
    uint32_t nlink;
    uint32_t uid, gid;
    uint64_t rdev;
    uint64_t size;
    uint64_t blocks;          /* allocated space in 512-byte units */
    struct timespec atime, mtime, ctime, btime;
};

/* Bits for sfs_setattr()'s `valid`. */
#define SFS_SET_MODE       (1u << 0)
#define SFS_SET_UID        (1u << 1)
#define SFS_SET_GID        (1u << 2)
#define SFS_SET_SIZE       (1u << 3)
#define SFS_SET_ATIME      (1u << 4)
#define SFS_SET_MTIME      (1u << 5)
#define SFS_SET_ATIME_NOW  (1u << 6)
#define SFS_SET_MTIME_NOW  (1u << 7)
#define SFS_SET_CTIME      (1u << 8)

/* Looks up name in directory dir; fills *attr. -ENOENT when absent,
 * -ENOTDIR when dir is not a directory. */
int sfs_lookup(struct sfs *fs, uint64_t dir, const char *name, struct sfs_attr *attr);

/* Fills *attr for inode ino. -ENOENT if ino is not in use, -EUCLEAN if
 * its inode is corrupt. (Directories report their entry count as size.) */
int sfs_getattr(struct sfs *fs, uint64_t ino, struct sfs_attr *attr);

/* Changes the attributes selected by `valid` from *in; ctime is updated
 * on every change. A size change truncates or extends (holes). Fills *out
 * with the new attributes when out is non-NULL. */
int sfs_setattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino,
                const struct sfs_attr *in, unsigned valid, struct sfs_attr *out);

/* ---- namespace ---------------------------------------------------- */

/* Creates a regular file, FIFO, socket or device node (type from mode).
 * -EEXIST if name exists. Fills *attr. */
int sfs_mknod(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
              struct sfs_attr *attr);

/* Creates a directory (permission bits from mode). -EEXIST if name
 * exists, -EMLINK if dir has too many subdirectories. Fills *attr. */
int sfs_mkdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint32_t uid, uint32_t gid, struct sfs_attr *attr);

/* Creates a symlink to target (1..SFS_SYMLINK_MAX bytes; up to 256 are
 * kept inside the inode). -ENAMETOOLONG for a longer target. */
int sfs_symlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
                const char *target, uint32_t uid, uint32_t gid, struct sfs_attr *attr);

/* Hard link: new name newname in newdir for inode ino (not a directory:
 * -EPERM; no links left: -ENOENT, except an sfs_tmpfile file still
 * referenced, which gets its first name). Fills *attr (with the new
 * nlink). */
int sfs_link(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t newdir,
             const char *newname, struct sfs_attr *attr);

/* Creates an unnamed regular file (O_TMPFILE) for dir's creator: nlink 0,
 * on the orphan list from the start, default ACL inherited from dir as a
 * create would, and returned holding one sfs_iget reference (the caller
 * drops it with sfs_iput: the last one frees the file, or the next mount
 * does after a crash). Until then sfs_link may give it a name, which
 * takes it off the orphan list. mode's type must be regular (or none).
 * Fills *attr. Returns 0 or -errno (-ENOENT: dir was removed). */
int sfs_tmpfile(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, uint32_t mode,
                uint32_t uid, uint32_t gid, struct sfs_attr *attr);

/* Removes a non-directory entry. The inode survives while referenced. */
int sfs_unlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name);

/* Removes an empty directory (-ENOTEMPTY otherwise). */
int sfs_rmdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name);

#define SFS_RENAME_NOREPLACE (1u << 0)
#define SFS_RENAME_EXCHANGE  (1u << 1)

/* POSIX rename with the Linux renameat2 flags above. Refuses to move a
 * directory under itself (-EINVAL). */
int sfs_rename(struct sfs *fs, struct sfs_txn *tx, uint64_t olddir, const char *oldname,
               uint64_t newdir, const char *newname, unsigned flags);

/* Copies the symlink target (not NUL-terminated) into buf; returns its
 * length or -errno. */
ssize_t sfs_readlink(struct sfs *fs, uint64_t ino, char *buf, size_t size);

/* ---- inode references --------------------------------------------- */

/* Takes / drops a reference that keeps an unlinked inode alive (an open
 * file, a FUSE lookup count). sfs_iput frees an inode with nlink 0 when
 * the last reference goes. */
int sfs_iget(struct sfs *fs, uint64_t ino);
void sfs_iput(struct sfs *fs, uint64_t ino);

/* Held inodes: sfs_iget_ino takes the same reference as sfs_iget and
 * returns the inode itself, valid until the matching sfs_iput_ino. The
 * *_ino calls below take it instead of a number and do what the calls
 * by number do, without the cache lookup and reference count each of
 * those pays (a fused op makes several calls on each of its files). */
int sfs_iget_ino(struct sfs *fs, uint64_t ino, struct sfs_inode **out);
void sfs_iput_ino(struct sfs *fs, struct sfs_inode *ip);

/* The inode number of a held inode. */
uint64_t sfs_ino_number(const struct sfs_inode *ip);

/* sfs_getattr, sfs_setattr, sfs_read, sfs_write, sfs_fallocate on a held
 * inode. */
int sfs_getattr_ino(struct sfs *fs, struct sfs_inode *ip, struct sfs_attr *attr);
int sfs_setattr_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip,
                    const struct sfs_attr *in, unsigned valid, struct sfs_attr *out);
ssize_t sfs_read_ino(struct sfs *fs, struct sfs_inode *ip, uint64_t off, void *buf,
                     size_t len);
ssize_t sfs_write_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, uint64_t off,
                      const void *buf, size_t len);

/* sfs_write_ino of the concatenation of iov[0, iovcnt): the pieces are
 * taken where they are (no gathering copy; a block that straddles two
 * pieces is the only one put together). */
struct iovec;
ssize_t sfs_writev_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, uint64_t off,
                       const struct iovec *iov, unsigned iovcnt);
int sfs_fallocate_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip, unsigned mode,
                      uint64_t off, uint64_t len);

/* ---- data --------------------------------------------------------- */

/* Reads up to len bytes at off; returns bytes read (0 at or past EOF).
 * Holes read as zeros. Reads do not update atime (noatime); setattr
 * does. */
ssize_t sfs_read(struct sfs *fs, uint64_t ino, uint64_t off, void *buf, size_t len);

/* A piece of a file range, as sfs_read_map describes it. */
enum sfs_seg_kind {
    SFS_SEG_ZERO,             /* reads as zeros (hole, unwritten extent) */
    SFS_SEG_FD,               /* len bytes of descriptor fd at byte pos (the image) */
    SFS_SEG_MEM,              /* len bytes at mem */
};

struct sfs_seg {
    enum sfs_seg_kind kind;
    uint64_t len;
    int fd;                   /* SFS_SEG_FD */
    uint64_t pos;             /* SFS_SEG_FD */
    const void *mem;          /* SFS_SEG_MEM */
};

/* Receives the pieces of a range in file order (total bytes in all);
 * returns 0 or -errno. */
typedef int (*sfs_map_fn)(void *arg, const struct sfs_seg *segs, unsigned n, size_t total);

/* Zero-copy read: instead of copying [off, off+len) (clamped to EOF) into
 * a buffer, describes where its bytes are, mostly as ranges of the image
 * file that the caller can splice from, and calls fn once with them while
 * the file is read-locked: the pieces do not change and their blocks are
 * not reused until fn returns. fn is called with n = 0 at or past EOF,
 * and not at all when the call fails before. Media without a descriptor
 * (media_fd) get the data copied into one SFS_SEG_MEM piece. Returns the
 * bytes described, or -errno (fn's error included). */
ssize_t sfs_read_map(struct sfs *fs, uint64_t ino, uint64_t off, size_t len, sfs_map_fn fn,
                     void *arg);

/* Writes len bytes at off, extending the file as needed; returns len or
 * -errno (-ENOSPC leaves the file as it was before the call for the part
 * not written and returns the bytes written if some were). Ordered mode:
 * data written into new blocks becomes visible after a crash only with
 * the metadata that points at it; overwrites of existing blocks go in
 * place and are not atomic (as in ext4 data=ordered), unless tx is
 * data-journaled (sfs_txn_begin_flags). */
ssize_t sfs_write(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t off,
                  const void *buf, size_t len);

#define SFS_FALLOC_KEEP_SIZE  (1u << 0)
#define SFS_FALLOC_PUNCH_HOLE (1u << 1)   /* requires KEEP_SIZE, as in Linux */
#define SFS_FALLOC_ZERO_RANGE (1u << 2)
#define SFS_FALLOC_COLLAPSE_RANGE (1u << 3)
#define SFS_FALLOC_INSERT_RANGE   (1u << 4)

/* mode 0 / KEEP_SIZE: allocates blocks for the holes in [off, off+len)
 * (they read as zeros; size grows unless KEEP_SIZE). PUNCH_HOLE|KEEP_SIZE:
 * deallocates, the range reads as zeros. ZERO_RANGE: the range reads as
 * zeros and stays allocated. COLLAPSE_RANGE (alone): removes the range,
 * the data after it moves down by len, the size shrinks by len.
 * INSERT_RANGE (alone): a hole of len bytes opens at off, the data from
 * off moves up, the size grows by len. Both: block-aligned off and len,
 * collapse ending before EOF, insert starting before it (else -EINVAL,
 * as Linux); all or nothing after a crash; -E2BIG when too many extents
 * would move for one journal transaction. Other combinations:
 * -EOPNOTSUPP (-EINVAL for a shift with another flag). */
int sfs_fallocate(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, unsigned mode,
                  uint64_t off, uint64_t len);

/* Moves the data blocks of [src_off, src_off + len) of file src to
 * [dst_off, dst_off + len) of file dst without copying them (move.c):
 * src keeps its size with a hole there, dst holds the bytes and grows to
 * dst_off + len if it was smaller. Offsets and len are multiples of the
 * block size, len > 0, src != dst, both regular files; the source range
 * lies inside src and is all written data (no hole, no unwritten
 * extent, no journaled data waiting for its checkpoint), in at most 64
 * extents; the destination range is a hole and starts at or below dst's
 * size, or that size is a block multiple. One handle (inside tx when
 * given): after a crash the blocks are src's or dst's, as before or as
 * after. Returns 0 or -errno; -EINVAL (-EBUSY: journaled data; -E2BIG:
 * too many extents) changed nothing and the caller may copy instead. */
int sfs_move_blocks(struct sfs *fs, struct sfs_txn *tx, uint64_t src, uint64_t src_off,
                    uint64_t dst, uint64_t dst_off, uint64_t len);

#define SFS_SEEK_DATA 3
#define SFS_SEEK_HOLE 4

/* SEEK_DATA / SEEK_HOLE from off; returns the offset or -ENXIO. */
int64_t sfs_seek(struct sfs *fs, uint64_t ino, uint64_t off, int whence);

/* Makes the inode's data and metadata durable (datasync: metadata only if
 * needed to read the data back). */
int sfs_fsync(struct sfs *fs, uint64_t ino, bool datasync);

/* Commits every transaction and flushes the media. */
int sfs_sync(struct sfs *fs);

/* ---- directories --------------------------------------------------- */

struct sfs_dirent {
    uint64_t ino;
    uint32_t type;            /* DT_* value */
    uint64_t next_cookie;     /* pass back to continue after this entry */
    const char *name;         /* valid only during the callback */
    size_t namelen;
};

/* Returns nonzero to stop the iteration (the entry is then not consumed). */
typedef int (*sfs_dirent_fn)(void *arg, const struct sfs_dirent *de);

/* Lists dir from cookie (0 = start, which yields "." and ".." first).
 * Cookies are stable: entries present during the whole listing are
 * returned exactly once even if others are added or removed meanwhile.
 * fn runs with dir read-locked: it may call read-only functions
 * (sfs_lookup, sfs_getattr, sfs_iget) but must not change dir.
 * Returns 0 at the end or when fn stopped, or -errno. */
int sfs_readdir(struct sfs *fs, uint64_t dir, uint64_t cookie, sfs_dirent_fn fn, void *arg);

/* ---- extended attributes ------------------------------------------- */

#define SFS_XATTR_CREATE  (1u << 0)   /* fail with -EEXIST if present */
#define SFS_XATTR_REPLACE (1u << 1)   /* fail with -ENODATA if absent */
#define SFS_XATTR_KILL_SGID (1u << 2) /* access ACL: also clear S_ISGID (acl.h) */

/* Names carry their namespace prefix ("user.", "trusted.", "security.",
 * and "system." for the two POSIX ACL names, whose values are validated
 * (-EINVAL) and kept in step with the mode: acl.h); others are
 * -EOPNOTSUPP. The first "security." attribute, and the first ACL, mark
 * the image with an incompatible feature (docs/FORMAT.md). */
int sfs_setxattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name,
                 const void *value, size_t size, unsigned flags);

/* Returns the value size; with size 0 only the size. -ERANGE if too
 * small, -ENODATA if absent. */
ssize_t sfs_getxattr(struct sfs *fs, uint64_t ino, const char *name, void *value,
                     size_t size);

/* NUL-separated names; same size conventions as getxattr. */
ssize_t sfs_listxattr(struct sfs *fs, uint64_t ino, char *list, size_t size);

/* Removes an attribute; -ENODATA if absent. */
int sfs_removexattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name);

/* ---- whole file system -------------------------------------------- */

struct sfs_statfs {
    uint64_t block_size;
    uint64_t blocks, blocks_free;
    uint64_t inodes, inodes_free;
    uint32_t name_max;
};

/* Fills *st: sizes in blocks of block_size (blocks includes metadata and
 * the journal; blocks_free counts the free data blocks that file data can
 * take: the bitmaps' free blocks less the reserve kept for extent-tree
 * metadata, so df never shows room a write cannot use). Returns 0. */
int sfs_statfs(struct sfs *fs, struct sfs_statfs *st);

/* ---- transactions ---------------------------------------------------- */

/* Opens a transaction that several calls join; see the header comment.
 * Every call made with it lands in the same journal transaction, which
 * cannot commit before sfs_txn_commit: keep it short. The thread that
 * begins it must commit it, and must not call sfs_sync/sfs_fsync while
 * it is open (-EDEADLK). Calls made without tx by the same thread join
 * it too. Calls with tx fail with -ENOSPC rather than wait when the
 * journal is full. */
int sfs_txn_begin(struct sfs *fs, struct sfs_txn **out);

/* Flags for sfs_txn_begin_flags(). */
#define SFS_TXN_DATA_JOURNAL (1u << 0)
#define SFS_TXN_COMMIT_HERE  (1u << 1)

/* Like sfs_txn_begin, with flags:
 *   SFS_TXN_DATA_JOURNAL: overwrites of existing file data made under tx
 *   (sfs_write over written blocks, and the partial-block zeroing that
 *   truncation, hole punching and growing a file do) go into the journal
 *   as block images with the metadata instead of in place, so after a
 *   crash the whole transaction is present or absent (MacroTx), data
 *   included; newly allocated blocks are atomic already (ordered mode).
 *   Until the journal checkpoints them, the new blocks live in the block
 *   cache and every read sees them; while a file has such blocks, all
 *   changes to it from any caller are journaled too. A data-journaled
 *   transaction must fit in the journal: a call that would take it past
 *   the journal's room fails with -ENOSPC (a 1 GiB image has 32 MiB).
 *   SFS_TXN_COMMIT_HERE: a durable sfs_txn_commit writes the commit in
 *   the calling thread when no commit is under way (jnl_sync_here), for
 *   a caller that commits durably many times in a row (a MicroTx op's
 *   steps).
 * Returns 0 or -errno (-EINVAL: unknown flags). */
int sfs_txn_begin_flags(struct sfs *fs, unsigned flags, struct sfs_txn **out);

/* Commits it (durable only after sfs_sync/fsync unless `durable`). */
int sfs_txn_commit(struct sfs_txn *tx, bool durable);

/* Discards everything done under tx; the file system is as before
 * sfs_txn_begin. Returns 0 or -errno (-EOPNOTSUPP if not supported yet;
 * tx is then still open and must be committed). */
int sfs_txn_abort(struct sfs_txn *tx);

/* ---- offline inspection (image not mounted) --------------------------- */

struct sfs_info {
    uint32_t version;
    uint8_t uuid[16];
    bool clean;                   /* unmounted cleanly */
    uint32_t mount_count;
    int64_t mkfs_time, mount_time, write_time;
    uint32_t feat_compat, feat_incompat, feat_ro_compat;
    uint64_t block_size, blocks, inodes;
    uint64_t journal_start, journal_blocks, bbitmap_start, bbitmap_blocks;
    uint64_t ibitmap_start, ibitmap_blocks, itable_start, itable_blocks, data_start;
    uint64_t blocks_free, inodes_free;  /* from the bitmaps */
    uint64_t journal_txns;        /* committed transactions awaiting replay */
    uint64_t journal_next_seq;
    char journal_note[200];       /* "" or why the journal scan ended early */
};

/* Reads the superblock, bitmaps and journal of m without writing.
 * Returns 0 or -errno (-EUCLEAN with cisc_corrupt_last() naming what is
 * wrong). */
int sfs_info(struct media *m, struct sfs_info *out);

/* Called by sfs_fsck for every problem, one precise line each. */
typedef void (*sfs_problem_fn)(void *arg, const char *msg);

struct sfs_fsck_result {
    uint64_t problems;            /* lines reported through fn */
    uint64_t files;               /* inodes in use (root included) */
    uint64_t blocks_used, blocks_total;
    uint64_t journal_txns;        /* replayed in memory before checking */
    char journal_note[200];       /* "" or how the journal scan ended */
};

/* Checks every invariant of docs/FORMAT.md on m, read-only. A journal
 * needing replay is replayed in memory (never onto the image) first.
 * Returns 0 when the check ran (res->problems says whether it is clean),
 * -EUCLEAN when not even a usable superblock was found (also reported
 * through fn), or -errno on I/O failure. */
int sfs_fsck(struct media *m, sfs_problem_fn fn, void *arg, struct sfs_fsck_result *res);

/* Grows the unmounted file system on m (m->nblocks already covers the new
 * size) to nblocks, in place: the new blocks become free data blocks.
 * The block bitmap cannot move (it is followed by the inode bitmap, the
 * inode table and data, all referenced by block number), so the limit
 * is what it covers: sfs_grow_limit's *max. Returns 0 (also when nblocks
 * is the current size), -EINVAL (smaller: shrinking is not supported),
 * -EFBIG (past the limit or past m), -EAGAIN (not cleanly unmounted, or
 * the journal needs replay: mount and unmount it first), -EUCLEAN or
 * -errno. A crash part way leaves a mountable image whose new blocks at
 * worst read as leaked to fsck (fsck --repair frees them). */
int sfs_grow(struct media *m, uint64_t nblocks);

/* The file system's size in blocks and the most sfs_grow can reach.
 * Returns 0 or -errno (-EUCLEAN: no valid superblock). */
int sfs_grow_limit(struct media *m, uint64_t *nblocks, uint64_t *max);

/* Opens the image again for sfs_repair (which mounts and checks it in
 * turn, each time on a fresh handle). Returns 0 or -errno. */
typedef int (*sfs_media_open_fn)(void *arg, struct media **out);

struct sfs_repair_result {
    struct sfs_fsck_result check; /* the first check, before any repair */
    uint64_t fixed;               /* repairs made (one line each through fn) */
    uint64_t unfixable;           /* problems repair does not fix (then nothing is changed) */
    unsigned rounds;              /* check-and-fix rounds it took */
};

/* Checks the unmounted image, and when every problem found is of a kind
 * it fixes (bitmaps against what is referenced, link counts, inodes with
 * links but no entry -> /lost+found/#INO, unlinked inodes off the orphan
 * list -> freed, entries naming free inodes -> removed, or the inode
 * marked in use again when its slot holds it, corrupt inode slots ->
 * freed, free counts), mounts it and fixes them through the journal,
 * repeating until the check is clean. Problems are reported through fn
 * as sfs_fsck does, then each repair as a line "repaired: ...". Returns
 * 0 when the image ends clean, -EUCLEAN when it holds problems repair
 * does not fix (res->unfixable; nothing was changed) or did not
 * converge, or -errno (a mount or I/O failure). */
int sfs_repair(sfs_media_open_fn open, void *oarg, sfs_problem_fn fn, void *arg,
               struct sfs_repair_result *res);

#endif

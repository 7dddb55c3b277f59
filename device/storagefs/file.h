/*
 * device/storagefs/file.h - file data: reads and writes straight between
 * the caller's buffer and the media (no data cache), truncation, hole
 * punching, preallocation, SEEK_DATA/SEEK_HOLE, and freeing an inode's
 * blocks when it dies. (The public calls are in storagefs.h.)
 *
 * Invariants:
 *   1. Ordered mode: data lands in newly allocated blocks (media write)
 *      before the extent that makes them reachable is inserted, inside
 *      the same handle, so the commit that publishes it comes after.
 *   2. Bytes past EOF inside the last block may be stale; whenever the
 *      size grows, [old size, end of that block or the new data) is
 *      zeroed first, so they never become visible.
 *   3. Newly allocated or unwritten blocks are zero-filled around the
 *      bytes written into them.
 *   4. Long operations (large truncates, big writes over many holes) run
 *      as a series of handles, each leaving a consistent file: extents
 *      past EOF are legal (preallocation), so a crash between steps is
 *      harmless.
 */
#ifndef CISC_SFS_FILE_H
#define CISC_SFS_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sfs;
struct sfs_inode;
struct sfs_txn;
struct jnl_handle;

/* Largest file size StorageFS accepts. */
#define SFS_MAX_FILE_SIZE (1ull << 60)

/* True when ip's data area holds a tree (files, dirs, long symlinks). */
bool file_has_tree(const struct sfs_inode *ip);

/* Changes ip's size (caller holds ip->rw for writing, inside h). Shrinking
 * unmaps blocks past the new EOF, at most `max` extents; returns 1 if
 * more remain (call file_trim_tail in later handles), 0, or -errno. */
int file_set_size(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                  uint64_t size, unsigned max);

/* Continues a shrink: unmaps up to `max` extents past EOF. 1 / 0 / -errno. */
int file_trim_tail(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                   unsigned max);

/* Frees everything an inode with nlink 0 and no opens owns, then the
 * inode itself, in as many handles as needed. ip must have been claimed
 * with inode_claim_reap and be referenced by the caller, who holds no
 * handle and no lock. Returns 0 or -errno. */
int file_reap(struct sfs *fs, struct sfs_inode *ip);

/* True when ip can be freed inside one small handle (few extents, no
 * xattr block). Caller holds ip->rw. */
bool file_reap_is_small(struct sfs_inode *ip);

/* Frees a small inode inside h (ip->rw held for writing). */
int file_reap_small(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip);

/* fallocate's collapse-range (collapse) or insert-range of [off,
 * off+len) of inode ino, in one handle (shift.c). Returns 0 or -errno. */
int file_shift_range(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, bool collapse,
                     uint64_t off, uint64_t len);

/* Reads file data (caller holds ip->rw): bytes read or -errno. */
ssize_t file_read_locked(struct sfs *fs, struct sfs_inode *ip, uint64_t off, void *buf,
                         size_t len);

/* Writes the first data block of a long symlink. */
int file_write_symlink(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       const char *target, size_t len);

#endif

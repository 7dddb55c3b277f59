/*
 * device/storagefs/dir.h - directories: a B+tree (btree.h) of entries
 * keyed by name hash.
 *
 * Key = bit 62 | top 46 bits of XXH3(name, seed) << 16 | collision seq.
 * Names with equal 46-bit hashes get distinct sequence numbers (the
 * smallest free one), so a key never changes while its entry exists.
 * That makes the key the readdir cookie: resuming at "first key >=
 * cookie" returns every entry present during the whole listing exactly
 * once, whatever is added or removed meanwhile. Lookup, insert and
 * delete are O(log n).
 *
 * Invariants:
 *   1. Names in one directory are unique; "." and ".." are not stored
 *      (".." is the inode's parent field).
 *   2. d.size of a directory is its number of entries.
 *   3. Callers hold the directory's rw lock (write for changes) and, for
 *      changes, a handle.
 */
#ifndef CISC_SFS_DIR_H
#define CISC_SFS_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "device/storagefs/storagefs.h"

struct sfs;
struct sfs_inode;
struct jnl_handle;

struct dir_hit {
    uint64_t key, ino;
    uint8_t type;                /* DT_* */
};

/* Cookie of the first stored entry (after "." and ".."). */
#define DIR_COOKIE_FIRST 2u

/* Checks a component name: 1..255 bytes, no '/', not "." or "..".
 * Returns 0, -ENAMETOOLONG or -EINVAL. */
int dir_name_ok(const char *name, size_t *len);

/* Finds name: 0 and *hit, -ENOENT, or -errno. */
int dir_find(struct sfs *fs, struct sfs_inode *dp, const char *name, size_t len,
             struct dir_hit *hit);

/* Adds an entry (-EEXIST if the name exists); updates d.size. */
int dir_add(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, const char *name,
            size_t len, uint64_t ino, uint8_t type);

/* Removes the entry with this key; updates d.size. */
int dir_del(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, uint64_t key);

/* Points the existing entry (key, name) at another inode. */
int dir_set(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, uint64_t key,
            const char *name, size_t len, uint64_t ino, uint8_t type);

/* Lists from cookie (see sfs_readdir). */
int dir_iterate(struct sfs *fs, struct sfs_inode *dp, uint64_t cookie, sfs_dirent_fn fn,
                void *arg);

/* DT_* type of a mode. */
uint8_t dir_type_of(uint32_t mode);

#endif

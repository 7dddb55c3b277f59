/*
 * device/storagefs/btree.h - the B+tree behind directories and extent
 * maps: 64-bit keys, variable-size values, the root inline in the inode's
 * 256-byte data area and every other node a 4 KiB metadata block.
 *
 * Algorithm: classic B+tree. Index records are (key, child) where key is
 * exactly the smallest key in the child's subtree (kept exact on every
 * insert and delete, which makes "greatest key <= k" a single descent).
 * A full node splits in two by bytes (or, when appending at the right
 * edge, moves only the new record to the new node so sequential inserts
 * leave full nodes behind); a full inline root moves its records into a
 * new block and becomes an index of one child. Deletion frees nodes that
 * become empty and pulls a lone child back into the root when it fits.
 * Every operation is O(depth) node visits plus a scan of one node.
 *
 * Invariants:
 *   1. Keys are unique and strictly increasing inside a node and across
 *      the leaves; every record of child i of an index node has a key in
 *      [key_i, key_{i+1}).
 *   2. Non-root nodes are never empty; all leaves are at level 0; the
 *      root's level is the depth of the tree.
 *   3. Every node carries the owner's inode number; a node read from the
 *      image is validated (level, owner, bounds, key order) before use.
 *   4. Changes happen inside the caller's handle with the owner's inode
 *      write-locked; lookups need the read lock.
 */
#ifndef CISC_SFS_BTREE_H
#define CISC_SFS_BTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "device/storagefs/format.h"

struct sfs;
struct sfs_inode;
struct jnl_handle;

struct bt {
    struct sfs *fs;
    struct sfs_inode *ip;        /* owner: ip->d.data holds the root */
    uint32_t magic;              /* SFS_MAGIC_EXTENT or SFS_MAGIC_DIR */
    struct jnl_handle *h;        /* NULL for lookups */
};

struct bt_rec {
    uint64_t key;
    uint16_t vlen;
    uint8_t val[SFS_DIRENT_MAX];
};

/* Writes an empty leaf root for owner into a 256-byte data area. */
void bt_root_init(uint8_t *area, uint64_t owner);

/* Record with the greatest key <= key / the smallest key >= key.
 * Returns 0, -ENOENT when there is none, or -errno (-EUCLEAN). */
int bt_find_le(struct bt *t, uint64_t key, struct bt_rec *out);
int bt_find_ge(struct bt *t, uint64_t key, struct bt_rec *out);

/* Inserts a record; -EEXIST if the key is present. */
int bt_insert(struct bt *t, uint64_t key, const void *val, uint16_t vlen);

/* Deletes the record with this key; -ENOENT if absent. */
int bt_delete(struct bt *t, uint64_t key);

/* Replaces the value of an existing record; -ENOENT if absent. */
int bt_update(struct bt *t, uint64_t key, const void *val, uint16_t vlen);

/* Depth of the tree (0: everything inline). */
unsigned bt_depth(const struct bt *t);

/* Largest record a tree of this kind stores. */
#define BT_MAX_VLEN SFS_DIRENT_MAX

#endif

/*
 * device/storagefs/sfs_int.h - the mounted file system and in-memory
 * inode, shared by the StorageFS modules (never included outside
 * device/storagefs/).
 *
 * Invariants:
 *   1. fs->sb's geometry never changes after mount; sb.orphan_head (and
 *      every inode's d.orphan_next) and sb.feat_incompat are protected by
 *      fs->orphan_mu and written to the superblock buffer inside a handle.
 *   2. An inode's `d` is protected by its rwlock `rw`: shared for readers
 *      (read, readdir, lookup, getattr), exclusive for writers. Inodes
 *      are locked in ascending inode order; cross-directory renames of
 *      directories take fs->rename_mu first (like the VFS).
 *   3. Lock order: journal handle -> fs->rename_mu -> inode rw locks ->
 *      allocator / orphan / icache locks -> journal mutex -> cache shards.
 *   4. Every mutating operation runs inside one journal handle (its own,
 *      or that of the caller's sfs_txn).
 */
#ifndef CISC_SFS_INT_H
#define CISC_SFS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/storagefs/bcache.h"
#include "device/storagefs/format.h"
#include "device/storagefs/journal.h"
#include "device/storagefs/lru.h"
#include "device/storagefs/storagefs.h"

struct sfs_alloc;
struct icache;
struct sfs_deferred;

struct sfs_inode {
    uint64_t ino;
    pthread_rwlock_t rw;
    struct sfs_dinode d;           /* on-image fields (rw; orphan_next: orphan_mu) */
    /* icache-owned (its shard's lock) */
    int refs;                      /* in-memory pins */
    int opens;                     /* sfs_iget references */
    bool reaping;                  /* someone is freeing it (nlink 0, no opens) */
    struct lru_node cache;         /* key ino; unhashed once freed; on the LRU
                                    * list while refs == 0 and opens == 0 */
    /* journal-owned */
    uint64_t tseq;                 /* running transaction it is dirty in (__atomic) */
    uint64_t jdata_seq;            /* last transaction that journaled its data
                                      (jdata.h; __atomic) */
    bool deleted;                  /* freed: its slot is zeroed at commit */
    /* made by sfs_tmpfile: sfs_link may give it a name while nlink is 0
     * and it is referenced (rw) */
    bool linkable;
    /* orphan list (orphan_mu) */
    bool orphan;
    struct sfs_inode *oprev, *onext;
    /* extent.c's cache of the extent tree's last extent (len 0: the tree
     * is empty), valid while ext_last_ok: read under rw, written only by
     * the tree's writers, which hold rw exclusively */
    bool ext_last_ok;
    struct sfs_extent ext_last;
    /* btree.c: the tree's inline root (d.data) passed check_node and has
     * not changed since (relaxed atomic: a reader under rw shared may set
     * it, every change of the root clears it under rw exclusive). A
     * struct loaded from the image starts with it clear. */
    bool root_checked;
    /* file.c's copy of the partial block it last wrote in place (tail_pblk
     * 0: none): the bytes the media holds at tail_pblk, so that the next
     * write into that block (an append continuing it) merges into the
     * copy instead of reading the block back. Used and changed under rw
     * held exclusively; dropped by every other change of the block's
     * bytes or mapping (ext_remove, jdata_write), freed when the inode
     * goes unused (shard lock, no holder left). Not compared with the
     * media even in debug builds: after a test's power cut the media
     * drops writes the copy holds (file_test's model test checks it). */
    uint64_t tail_pblk;
    uint8_t *tail;              /* SFS_BSIZE bytes, or NULL */
};

struct sfs {
    struct media *m;
    struct sfs_sb sb;
    bool rdonly;
    struct bbuf *sbb;              /* superblock buffer, pinned while mounted */
    struct bcache *bc;
    struct jnl *j;
    struct sfs_alloc *al;
    bool overlay_data;             /* read-only: replayed images overlay the data area */
    struct sfs_deferred *deferred; /* mount writes waiting for sfs_mount_finish (super.c) */
    uint64_t jdata_last;           /* newest transaction that journaled file data (__atomic) */
    struct icache *ic;
    pthread_mutex_t orphan_mu;
    struct sfs_inode orphans;      /* sentinel of the in-memory orphan list */
    pthread_mutex_t rename_mu;
    uint64_t gen_next;             /* next inode generation (__atomic) */
};

struct sfs_txn {
    struct sfs *fs;
    struct jnl_handle *h;
    bool commit_here;            /* SFS_TXN_COMMIT_HERE */
};

/* Starts the handle an operation runs in: joins tx's when tx is non-NULL
 * (extending its credits), else starts one. Returns 0 or -errno. */
int sfs_op_begin(struct sfs *fs, struct sfs_txn *tx, uint32_t credits,
                 struct jnl_handle **h);

/* Ends what sfs_op_begin started. */
void sfs_op_end(struct sfs *fs, struct jnl_handle *h);

/* Reads, verifies and checks the superblock at blk (0 or the backup).
 * Returns 0 or -EUCLEAN naming the problem, or -errno. */
int sfs_read_super(struct media *m, uint64_t blk, struct sfs_sb *sb);

/* Finishes a grow that was committed but cut short (grow.c, invariant 2):
 * marks its new blocks free and clears sb->grow_from on the image. Does
 * nothing when sb->grow_from is 0. Returns 0 or -errno. */
int sfs_grow_finish(struct media *m, struct sfs_sb *sb);

/* Sets incompatible feature `bit` in the superblock inside handle h (the
 * image starts to use what it names), once; a set bit stays. Returns 0. */
int sfs_feature_incompat_set(struct sfs *fs, struct jnl_handle *h, uint32_t bit);

/* Current time, for timestamps. */
struct timespec sfs_now(void);

/* Fills attr from ip (caller holds ip->rw). */
void sfs_fill_attr(const struct sfs_inode *ip, struct sfs_attr *attr);

/* Block number of the inode-table block holding ino. */
static inline uint64_t sfs_itable_blk(const struct sfs *fs, uint64_t ino)
{
    return fs->sb.itable_start + ino / SFS_INODES_PER_BLOCK;
}

#endif

/*
 * device/storagefs/fsck_int.h - state shared by the two halves of the
 * offline checker: fsck.c (superblock, journal, bitmaps, link counts,
 * reachability) and fsck_inode.c (each inode's trees, extents,
 * directory entries and extended attributes).
 *
 * The checker never writes: it reads through a small block cache that
 * first consults the journal images replayed in memory (jscan), so an
 * image that needs replay is checked as it will be after replay.
 *
 * Invariants:
 *   1. Every problem is reported exactly once, as one line naming the
 *      block and/or inode; a structure found corrupt is not descended
 *      into (no cascades of follow-on errors from one bad block).
 *   2. Every block reachable from an inode is claimed exactly once in
 *      `claimed`; a second claim is a problem (cross-linked block).
 */
#ifndef CISC_SFS_FSCK_INT_H
#define CISC_SFS_FSCK_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "device/storagefs/format.h"
#include "device/storagefs/jreplay.h"
#include "device/storagefs/storagefs.h"

#define FCK_CACHE 256u

/* What the passes learn about each inode number. */
struct fck_inode {
    uint32_t mode;               /* 0: free or corrupt */
    uint32_t nlink;
    uint32_t parent;             /* directories: the on-image parent field */
    uint32_t entry_parent;       /* directories: the directory naming it */
    uint32_t refs;               /* directory entries naming it */
    uint32_t subdirs;            /* directories: entries that are directories */
    uint8_t bad;                 /* allocated but unreadable: 1 I/O error, 2 corrupt slot */
    uint8_t reach;               /* 0 unknown, 1 visiting, 2 reachable, 3 not */
};

/* A directory entry naming an inode the bitmap calls free (for repair). */
struct fck_dangling {
    uint64_t dir, key, ino;
    bool restore;                /* the slot holds a valid inode of that number */
};

struct fck {
    struct media *m;
    struct sfs_sb sb;
    struct jscan js;
    bool have_js;
    sfs_problem_fn fn;
    void *arg;
    uint64_t problems;
    uint64_t fixable;            /* of them, kinds sfs_repair fixes (fck_fixable) */
    struct fck_dangling *dang;   /* entries naming free inodes */
    size_t ndang, cdang;
    uint8_t *bbm, *ibm;          /* on-image bitmaps, one bit per block / inode */
    bool *bbm_ok;                /* per block-bitmap block: it verified */
    uint8_t *claimed;            /* one bit per block: referenced by something */
    struct fck_inode *in;        /* per inode number */
    uint64_t files;
    uint64_t cache_blk[FCK_CACHE];
    uint8_t *cache;              /* FCK_CACHE blocks */
};

/* Reports one problem line (printf-style). */
void fck_problem(struct fck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports one problem of a kind sfs_repair (repair.c) fixes. */
void fck_fixable(struct fck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs every check on m into f, keeping the state for repair.c (free it
 * with fck_free). Returns as sfs_fsck. */
int fck_run(struct fck *f, struct media *m, sfs_problem_fn fn, void *arg,
            struct sfs_fsck_result *res);

/* Frees what fck_run allocated. */
void fck_free(struct fck *f);

/* Reports the last CISC_CORRUPT message without its source location. */
void fck_problem_corrupt(struct fck *f);

/* Reads block blk as it is after replay. Returns a pointer into the
 * checker's cache (valid until the next read) or NULL on I/O error
 * (already reported). */
const uint8_t *fck_read(struct fck *f, uint64_t blk);

/* Claims n blocks from start for `what` (of inode ino, 0 for none);
 * reports blocks claimed twice or marked free. Returns false when any
 * of them was already claimed (the caller must not descend into it). */
bool fck_claim(struct fck *f, uint64_t start, uint64_t n, uint64_t ino, const char *what);

bool fck_bit(const uint8_t *map, uint64_t i);

/* Pass 1: decodes allocated inode ino into f->in[ino] (reports a
 * corrupt slot). */
void fck_load_inode(struct fck *f, uint64_t ino);

/* Pass 2: checks everything inode ino owns (trees, extents, entries,
 * xattrs, block count), counting directory references into f->in. */
void fck_check_inode(struct fck *f, uint64_t ino);

#endif

/*
 * device/storagefs/jreplay.h - reading the journal ring at mount or fsck
 * time: validates the journal header, walks the committed transactions
 * from it and keeps the newest image of every block they log. Nothing is
 * written until the caller asks (jscan_apply), so a mount validates
 * everything before it writes, and fsck can replay into memory only.
 *
 * Invariants:
 *   1. A transaction counts only if its descriptors, images and commit
 *      record all carry the journal id and its sequence number, the
 *      commit record's crc32c over descriptors+images matches, and every
 *      target block lies outside the journal and the backup superblock.
 *   2. The scan stops at the first transaction that is not complete; what
 *      follows it is never used (a torn tail after a crash).
 *   3. A complete commit record over a log that fails its checksum is
 *      corruption (the log was flushed before the commit record was
 *      written); a missing commit record is an ordinary torn tail.
 */
#ifndef CISC_SFS_JREPLAY_H
#define CISC_SFS_JREPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "device/media/media.h"
#include "device/storagefs/format.h"

enum jscan_stop {
    JSCAN_END,        /* no further transaction */
    JSCAN_TORN,       /* a transaction without a valid commit record */
    JSCAN_CORRUPT,    /* a committed transaction that fails validation */
};

struct jimage {
    uint64_t blk;
    uint8_t *data;
};

struct jscan {
    struct sfs_jhdr hdr;
    uint64_t next_seq;           /* first sequence number not replayed */
    uint32_t end_pos;            /* ring position after the last one */
    uint64_t ntxn;               /* complete transactions found */
    struct jimage *img;          /* newest image per block, sorted by blk */
    size_t nimg;
    enum jscan_stop stop;
    char why[200];               /* what ended the scan (TORN / CORRUPT) */
    /* internal */
    size_t cap;
    int64_t *index;
    size_t index_cap;
};

/* Validates the journal header of sb's journal and scans the ring.
 * Returns 0 (see s->stop for how it ended), -EUCLEAN for a corrupt
 * journal header, or -errno. jscan_free(s) in every case. */
int jscan_run(struct media *m, const struct sfs_sb *sb, struct jscan *s);

/* Writes every image in place and flushes. Returns 0 or -errno. */
int jscan_apply(struct media *m, const struct jscan *s);

/* Finds the image of blk, or NULL. */
const uint8_t *jscan_find(const struct jscan *s, uint64_t blk);

void jscan_free(struct jscan *s);

#endif

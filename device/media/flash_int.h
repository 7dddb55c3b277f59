/*
 * device/media/flash_int.h - the NAND model's private structures, shared by
 * flash.c (the model) and flash_state.c (saving and restoring its state).
 * Nothing outside device/media/flash*.c includes it.
 *
 * Invariants: those of flash.h, which these structures implement.
 */
#ifndef CISC_DEVICE_FLASH_INT_H
#define CISC_DEVICE_FLASH_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "device/media/flash.h"

enum blk_state { BLK_FREE = 0, BLK_OPEN, BLK_FULL };

struct fblock {
    uint32_t valid;         /* pages still mapped */
    uint32_t erases;
    uint8_t state;          /* enum blk_state */
    uint64_t stamp;         /* write sequence when it filled (cost-benefit age) */
};

struct fdie {
    uint32_t *pool;         /* free blocks (die-local indices) */
    uint32_t nfree;
    uint32_t open;          /* die-local index of the write point, or UINT32_MAX */
    uint32_t wp;            /* next page in the open block */
    uint64_t busy_until;    /* invariant 5 */
    uint64_t busy_ns;
    uint64_t gc_until;      /* end of the latest GC on this die */
};

/* A channel arbitrates among its dies: a transfer takes the first gap
 * after it is ready, not only the end of the latest one booked (which
 * would leave the channel idle whenever a die that started later finishes
 * earlier). The last CHAN_SLOTS bookings are kept sorted by start; older
 * ones are forgotten, and nothing is booked before `floor`. */
#define CHAN_SLOTS 32

struct fchan {
    uint64_t busy_until;
    uint64_t busy_ns;
    uint64_t floor;
    uint32_t n;
    uint64_t start[CHAN_SLOTS], end[CHAN_SLOTS];
};

/* One partition: the stripes of the logical space it owns, the channels
 * c with c % partitions == its index and their dies. Its lock protects
 * those l2p entries, those dies' blocks, pages and timelines, those
 * channels and the fields below; no two partitions share any of them.
 * A claimed partition (flash_part_claim) is its owner's alone, without
 * the lock, until released. */
struct fpart {
    pthread_mutex_t mu;
    pthread_t owner;        /* invariant 7: the thread that may use *_owned */
    bool owned;             /* owner is set (claimed, or locked by flash_part_lock) */
    uint32_t next;          /* round-robin write cursor over its dies */
    uint64_t seq;           /* host writes so far (age clock) */
    uint64_t now;
    uint64_t ftl_until;     /* invariant 5: its core's FTL timeline */
    uint64_t host_reads, host_writes, trims, gc_runs, moved, erases;
    uint64_t bg_runs;       /* of gc_runs: from flash_idle */
    uint64_t ops_owned, ops_locked, ops_foreign;   /* invariant 7: who did host ops */
};

struct flash {
    struct flash_geom g;
    uint64_t nlog;          /* logical pages */
    uint32_t ndies, ppb, bpd, nparts, stripe;
    uint32_t *l2p;          /* logical -> physical page */
    uint32_t *p2l;          /* physical -> logical page */
    struct fblock *blk;     /* ndies * bpd */
    struct fdie *die;
    struct fchan *chan;
    struct fpart *part;     /* nparts; 1 = the single-lock FTL */
    void (*gate)(void *ctx, bool enter);   /* the owners' gate (flash_set_gate) */
    void *gate_ctx;
};


/* Takes every partition's lock, in index order (stats, checker, state). */
void flash_lock_all(struct flash *f);

/* Releases what flash_lock_all took. */
void flash_unlock_all(struct flash *f);

#endif

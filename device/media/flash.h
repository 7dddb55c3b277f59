/*
 * device/media/flash.h - a NAND flash model: geometry, a page-mapped FTL,
 * garbage collection, wear counters and per-die/per-channel timelines.
 *
 * The model is simulator state only. It never holds data: the bytes of
 * logical block L stay at L in the image (flash_media.h forwards them), so
 * data, durability and crash behaviour are those of the backend below. What
 * the model adds is where each logical block would live on a real drive,
 * how much extra work that causes (GC, write amplification, erases) and
 * when each operation would complete in simulated time (FEMU's approach:
 * every die and every channel has a "busy until" time; an operation starts
 * when both its die and its channel are free, so operations on one die
 * queue and operations on different dies overlap).
 *
 * Physical layout: dies are numbered die = channel * dies_per_channel + d;
 * each die owns blocks_per_die erase blocks (planes only split that count)
 * of pages_per_block pages of MEDIA_BLOCK_SIZE bytes. Host writes are
 * striped over dies round-robin, channel first (die 0 of channel 0, die 0
 * of channel 1, ...), each die appending to its one open block. GC runs
 * per die (copy-back: a migrated page is read and programmed on its own
 * die, without crossing the channel).
 *
 * Invariants (checked by flash_check() in debug and sanitizer builds):
 *   1. l2p[l] == FLASH_UNMAPPED or p2l[l2p[l]] == l: the two maps agree.
 *   2. A block's valid count equals the number of its pages p with
 *      p2l[p] != FLASH_UNMAPPED; the sum over all blocks equals the number
 *      of mapped logical blocks.
 *   3. Every block of a die is in exactly one state: free (erased, in the
 *      die's free pool), open (the die's write point), or full.
 *   4. Each die keeps at least one free block outside foreground GC, so GC
 *      always has a block to migrate into (the geometry check guarantees
 *      the spare space that makes this possible).
 *   5. Time never runs backwards on a timeline: busy-until values only
 *      grow, and every completion time is >= the time the op was issued.
 *      With t_ftl_ns set, each partition has an FTL timeline too (the core
 *      that owns it; with one partition, the single FTL lock): a host read
 *      or write first occupies it for t_ftl_ns, from max(issue, its end),
 *      and reaches its die when that is done.
 *   6. Partitions (ScalaCache 5.2): logical page l belongs to partition
 *      (l / stripe_pages) % partitions, channel c (with its dies) to
 *      partition c % partitions; a mapped l lives on a die of its own
 *      partition, so partitions share no mapping entry, block, die or
 *      channel.
 *   7. Owners (ScalaCache 5.2, flash_cores.h): a partition is claimed by
 *      one thread (flash_part_claim) or locked by one (flash_part_lock);
 *      only that thread calls the *_owned operations on the partition's
 *      pages, which take no lock. Checked (assert) at every such call in
 *      debug and sanitizer builds, and counted in every build: a host
 *      operation is counted as the owner's (no lock), as a locked one, or
 *      as foreign (a thread that is not the owner of a claimed partition
 *      touched it: a bug, flash_stats ftl_foreign).
 *
 * Thread safety: one mutex per partition, taken by whoever touches that
 * partition through flash_read/flash_write/flash_trim (with partitions =
 * 1, the single-lock FTL). Threads working on different partitions never
 * contend. Stats, the checker, state saving and flash_idle take all of
 * them, in index order, after passing the owners' gate (flash_set_gate):
 * while partitions are claimed by cores that set one, the gate parks the
 * owners (they release their partitions) until the locks are let go;
 * without a gate, call them only while no partition is claimed. The busy
 * counters (flash_die_busy_ns, flash_chan_busy_ns) are relaxed atomics,
 * read without any lock.
 */
#ifndef CISC_DEVICE_FLASH_H
#define CISC_DEVICE_FLASH_H

#include <stdbool.h>
#include <stdint.h>

#define FLASH_UNMAPPED UINT32_MAX

/* The defaults flash_geom_default() gives a zero field: the one table of
 * them (cmd/upopts.c's help text prints these). Plain literals, so that
 * they can be pasted into strings. ScalaCache Table 1 for the geometry and
 * the read and program latencies. */
#define FLASH_DEF_CHANNELS     8
#define FLASH_DEF_DIES         4
#define FLASH_DEF_PAGES        512      /* per block; halved for small images */
#define FLASH_DEF_OP_PERMILLE  70
#define FLASH_DEF_GC_FREE      2
#define FLASH_DEF_STRIPE       32       /* pages: 128 KiB */
#define FLASH_DEF_READ_NS      18000
#define FLASH_DEF_PROG_NS      35000
#define FLASH_DEF_ERASE_NS     2000000
#define FLASH_DEF_XFER_NS      4000

/* How the device's media callers reach the FTL (flash_media.h; the
 * geometry field ftl, `cisc up --flash-ftl`). */
enum flash_ftl_form {
    FLASH_FTL_LOCKS = 0,        /* the caller takes its page's partition lock */
    FLASH_FTL_CORES = 1,        /* one FTL core per partition owns it; callers hand
                                   page sub-requests to it through rings */
};

enum flash_gc_policy {
    FLASH_GC_GREEDY = 0,        /* fewest valid pages */
    FLASH_GC_COST_BENEFIT = 1,  /* max age * (1 - u) / 2u (Rosenblum & Ousterhout) */
};

/* Geometry and timing. Zero fields take defaults in flash_geom_default(). */
struct flash_geom {
    uint32_t channels;
    uint32_t dies_per_channel;
    uint32_t planes;            /* per die; blocks_per_die is a multiple */
    uint32_t blocks_per_die;
    uint32_t pages_per_block;
    uint32_t op_permille;       /* over-provisioning: spare / logical, in 1/1000 */
    uint32_t gc_free_blocks;    /* per die: foreground GC below this many free */
    uint32_t wear_delta;        /* static wear levelling when max-min erases exceed it */
    enum flash_gc_policy gc_policy;
    uint32_t partitions;        /* FTL partitions (device cores); 1 = single lock */
    uint32_t stripe_pages;      /* logical stripe owned by one partition (32: 128 KiB) */
    uint32_t members;           /* flash_media: drives in the array (0: 1) */
    enum flash_ftl_form ftl;    /* flash_media: locks (0) or cores */
    uint64_t t_read_ns;         /* array read of one page */
    uint64_t t_prog_ns;         /* program of one page */
    uint64_t t_erase_ns;        /* erase of one block */
    uint64_t t_xfer_ns;         /* one page across a channel */
    uint64_t t_ftl_ns;          /* FTL time of a host page operation on its
                                   partition's core (0: not modelled) */
};

/* Counters for `cisc status` and the benchmarks. */
struct flash_stats {
    uint64_t host_reads, host_writes, trims;   /* pages */
    uint64_t gc_runs, pages_moved, erases;
    uint64_t gc_fg_runs;        /* of gc_runs: foreground (a write waited) */
    uint64_t gc_bg_runs;        /* of gc_runs: background (flash_idle) */
    uint64_t free_blocks;       /* erased blocks in the dies' pools now */
    uint64_t mapped;            /* logical pages mapped now (valid pages) */
    uint32_t erase_min, erase_max;
    double erase_avg;
    double waf;                 /* (host_writes + pages_moved) / host_writes */
    uint64_t now_ns;            /* latest time the model has seen */
    /* Invariant 7: host page operations (reads, writes, trims of a mapped
     * or unmapped page, idle GC steps of a partition) by who did them. */
    uint64_t ftl_owned;         /* by the partition's owner, without a lock */
    uint64_t ftl_locked;        /* under the partition's lock (no owner) */
    uint64_t ftl_foreign;       /* on a claimed partition by another thread: a bug */
};

/* The outcome of one page operation. */
struct flash_io {
    uint64_t done_ns;           /* completion in simulated time */
    bool gc;                    /* GC was running on the die that served it */
};

struct flash;

/* Fills g's zero fields with the FLASH_DEF_* defaults, greedy GC, one
 * partition, one member, with blocks_per_die (and, for small images,
 * pages_per_block) scaled so that the dies hold nblocks logical pages plus
 * the spare space. */
void flash_geom_default(struct flash_geom *g, uint64_t nblocks);

/* Checks g against a medium of nblocks logical pages. Returns 0, or
 * -EINVAL with a one-line reason in err (of errlen bytes): zero or absurd
 * (> 1 s) latencies, zero counts, too few blocks per die for GC, or too
 * little physical space for nblocks plus the GC reserve. */
int flash_geom_check(const struct flash_geom *g, uint64_t nblocks, char *err,
                     unsigned errlen);

/* Creates a fresh (all erased, nothing mapped) model for nblocks logical
 * pages. g must pass flash_geom_check. Returns 0 and sets *out, or -errno. */
int flash_create(const struct flash_geom *g, uint64_t nblocks, struct flash **out);

/* Frees the model. */
void flash_destroy(struct flash *f);

/* The geometry in use (defaults filled in). */
const struct flash_geom *flash_geom(const struct flash *f);

/* The number of logical pages f models. */
uint64_t flash_nlog(const struct flash *f);

/* Reads logical page l issued at now_ns. An unmapped page (never written
 * or trimmed) is answered by the controller without touching NAND.
 * Returns its completion time and GC flag. */
struct flash_io flash_read(struct flash *f, uint64_t l, uint64_t now_ns);

/* Writes logical page l issued at now_ns: out-of-place, invalidating its
 * old page; runs foreground GC on the target die first if its free pool is
 * below the threshold (the write waits for it). */
struct flash_io flash_write(struct flash *f, uint64_t l, uint64_t now_ns);

/* Forgets logical pages [l, l + n) (TRIM): their pages become invalid and
 * GC no longer migrates them. Costs no NAND time. */
void flash_trim(struct flash *f, uint64_t l, uint64_t n);

/* ---- partitions and their owners (invariants 6 and 7) ---- */

/* The partition logical page l belongs to: (l / stripe_pages) % partitions. */
uint32_t flash_part_of(const struct flash *f, uint64_t l);

/* The number of partitions (geometry field partitions). */
uint32_t flash_partitions(const struct flash *f);

/* Makes the calling thread partition p's owner until flash_part_release:
 * from then on only it touches p, through the *_owned calls, and no lock
 * is taken. p < flash_partitions(f). */
void flash_part_claim(struct flash *f, uint32_t p);

/* Gives partition p back (the caller claimed it): later users go through
 * its lock again and see everything the owner did. */
void flash_part_release(struct flash *f, uint32_t p);

/* Takes partition p's lock and makes the caller its owner for the *_owned
 * calls until flash_part_unlock (the single-lock FTL's cores hold the one
 * lock for a batch of sub-requests). */
void flash_part_lock(struct flash *f, uint32_t p);

/* Releases what flash_part_lock took. */
void flash_part_unlock(struct flash *f, uint32_t p);

/* flash_read, flash_write and one page of flash_trim by the owner of l's
 * partition (invariant 7), without taking its lock. Same results as the
 * locked calls. */
struct flash_io flash_read_owned(struct flash *f, uint64_t l, uint64_t now_ns);
struct flash_io flash_write_owned(struct flash *f, uint64_t l, uint64_t now_ns);
void flash_trim_owned(struct flash *f, uint64_t l);

/* Background GC: each die idle at now_ns whose free pool is below twice
 * the threshold collects one victim. Returns the number of blocks erased. */
unsigned flash_idle(struct flash *f, uint64_t now_ns);

/* flash_idle of partition p's dies only, by p's owner (invariant 7),
 * without its lock. Returns the number of blocks erased. */
unsigned flash_idle_owned(struct flash *f, uint32_t p, uint64_t now_ns);

/* The owners' gate: fn(ctx, true) is called before anyone but the owners
 * takes partition locks (stats, checker, state, flash_idle), and fn(ctx,
 * false) after they are let go; flash_cores parks its partitioned cores
 * in between, so that their partitions are free to lock. NULL removes
 * it. Not thread-safe: set it while no one else uses f. */
void flash_set_gate(struct flash *f, void (*fn)(void *ctx, bool enter), void *ctx);

/* Maps logical page l as the drive would hold it had it been written
 * before this run: placed like a write, but at no time and counted
 * nowhere (after a crash, the image's written blocks rebuild the map;
 * their wear is unknown and starts at 0). */
void flash_assume_written(struct flash *f, uint64_t l);

/* Writes f's FTL state (mapping, block states, erase counts, write
 * points, counters; not the timelines, which belong to this run) to fd
 * (flash_state.c gives the format). Returns 0 or -errno. */
int flash_save(struct flash *f, int fd);

/* Loads into f, fresh from flash_create, what flash_save wrote for a
 * model of the same geometry and size, reading exactly its bytes from fd
 * (states of several models may follow each other). Returns 0, -EINVAL for state of
 * another geometry, truncated or damaged (then f is undefined: destroy
 * it), or -errno. */
int flash_load(struct flash *f, int fd);

/* Copies the counters. */
void flash_stats(struct flash *f, struct flash_stats *st);

/* Busy time of die d (or channel c) so far, in ns; 0 for an out-of-range
 * index. Utilisation = busy / now. */
uint64_t flash_die_busy_ns(struct flash *f, uint32_t d);
uint64_t flash_chan_busy_ns(struct flash *f, uint32_t c);

/* Checks invariants 1-4 and 6 of this header (O(pages)). Returns 0, or
 * -EUCLEAN when one is broken (a model bug). */
int flash_check(struct flash *f);

/* Desnoyers' analytic write amplification of greedy GC under uniform
 * random writes, for alpha = physical pages / logical pages (> 1), in the
 * large-block limit: A solves 1 - 1/A = exp(-alpha / A). */
double flash_waf_model(double alpha);

#endif

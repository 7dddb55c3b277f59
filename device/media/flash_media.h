/*
 * device/media/flash_media.h - the flash backend of the media seam: a
 * media that stores bytes in a lower media (the image file) at their
 * logical place and runs every page through the NAND model of flash.h.
 *
 * Reads and writes go to the lower media unchanged, so data, durability
 * and crash behaviour are exactly the lower media's; the model only says
 * when each page operation would complete on the drive. The pages of one
 * multi-block call are issued together (they spread over dies and
 * overlap), and the call's completion is the latest of theirs.
 *
 * Invariants:
 *   1. The bytes a caller sees are the lower media's; the model never
 *      changes or delays them (no host CPU is spent waiting).
 *   2. flash_media_deadline_take() returns, for the calling thread, the
 *      latest simulated completion time of the media calls it made since
 *      its previous take (0 if none); the queue layer turns that into the
 *      completion's arrival time.
 *   3. discard trims the model as well as punching the lower media; trim
 *      (media_trim) trims only the model.
 *   4. There is no zero-copy descriptor (media_fd is -EOPNOTSUPP), so
 *      every read goes through the model.
 *   5. Arrays (ScalaCache 5.5, geometry field members > 1): the block space
 *      is striped FLASH_ARRAY_STRIPE blocks (64 KiB) round-robin across
 *      members; block b is page (b / S / M) * S + b % S of member
 *      (b / S) % M, each member a model of its own (geometry defaulted for
 *      its share, its own FTL, GC, partitions and locks). The bytes still
 *      live in the one lower media.
 *   6. Background GC (flash_media_idle_gc): one thread per media wakes
 *      every tick; a tick in which the media saw no read or write is an
 *      idle period and runs one flash_idle step on every member (at most
 *      one block per die: bounded work). Idle is judged at the seam every
 *      I/O crosses (libcisc, FUSE, journal, checkpoint alike), not by one
 *      kind of caller. The thread sleeps between ticks (never spins), its
 *      wait doubling up to 100 ms while there is nothing to collect, and
 *      is stopped and joined by media_close.
 *   7. FTL state (flash_media_state): media_close saves every member's
 *      state to the side file (written whole, then renamed in place); the
 *      next start loads it and deletes it, so that after a crash there is
 *      none and the map is rebuilt from the image (its non-hole blocks),
 *      with wear unknown (0). Bytes never depend on it.
 *   8. A flush completes when every write issued before it has been
 *      programmed: it stamps the caller (invariant 2) with the latest
 *      write completion so far, so an fsync's reply waits for the journal
 *      commit's programs even though the commit thread issued them. Replies
 *      that do not go through the queue layer (FUSE) are held until their
 *      stamp by their door (fusefs/fusefs_delay.c), which counts them here
 *      (flash_media_reply_note).
 *   9. A flush orders the caller's later programs: the thread that
 *      flushed waited (on a real drive) for every write issued before the
 *      flush, so its next writes are issued in the model no earlier than
 *      the flush's completion (the latest of those writes' programs). So a
 *      journal's commit record, written after the flush of its log, never
 *      completes before the log's latest program, even on another die or
 *      another member of an array (the floor is per thread, across every
 *      flash media). Until the thread's next flash_media_deadline_take (a
 *      command boundary: the next command on that thread is another
 *      request, not one that waited); other threads' writes are not
 *      ordered by it.
 *  10. The FTL's form (geometry field ftl, `cisc up --flash-ftl`): locks
 *      (the default): the caller takes its page's partition lock and runs
 *      the FTL itself. Cores: every member has one FTL core per partition
 *      (flash_cores.h, untimed), which owns it; a media call hands each
 *      page to its owner through the per-core lock-free rings of a port
 *      it takes for the call, and waits for all of them (a brief spin,
 *      then a futex) before it returns, so the FTL path takes no lock and
 *      calls ordered by the host are served in that order. TRIM and
 *      background GC (an IDLE sub-request per core) go the same way;
 *      stats and the checker pass the owners' gate (flash.h); the cores
 *      stop before the state is loaded, rebuilt or saved. The model's
 *      answers (done times, GC, counters) are those of the locks form.
 */
#ifndef CISC_DEVICE_FLASH_MEDIA_H
#define CISC_DEVICE_FLASH_MEDIA_H

#include <stdbool.h>
#include <stdint.h>

#include "device/media/flash.h"
#include "device/media/media.h"

#define FLASH_ARRAY_STRIPE 16u    /* blocks: 64 KiB */
#define FLASH_MAX_MEMBERS  64u
#define FLASH_IDLE_TICK_NS 2000000ull   /* background GC: 2 ms without I/O is idle */
/* The cores form (invariant 10): ports (media calls in flight at once; more
 * wait for a port), ring entries per core and port, how long a caller
 * polls for its completions before it sleeps, and an idle core for work. */
#define FLASH_MEDIA_PORTS        64u
#define FLASH_MEDIA_RING         64u
#define FLASH_MEDIA_SPIN_NS      1000ull
#define FLASH_MEDIA_CORE_SPIN_NS 0ull

/* A clock in ns (simulated or real); ctx is the caller's. */
typedef uint64_t (*flash_clock_fn)(void *ctx);

/* Wraps lower (taking ownership of it, also on failure) in a flash model
 * of geometry g (zero fields defaulted for lower's size, or for each
 * member's share of it in an array of g->members). The clock is
 * CLOCK_MONOTONIC until flash_media_set_clock. Returns 0 and sets *out,
 * or -EINVAL with a reason in err (errlen bytes) for a bad geometry, or
 * -errno. */
int flash_media_open(struct media *lower, const struct flash_geom *g, char *err,
                     unsigned errlen, struct media **out);

/* Replaces the clock (tests use a fake one). Not thread-safe: call before
 * the media is shared. */
void flash_media_set_clock(struct media *m, flash_clock_fn fn, void *ctx);

/* The model behind m (member 0), or NULL when m is not a flash media. */
struct flash *flash_media_model(struct media *m);

/* The number of array members of m (0 when m is not a flash media). */
unsigned flash_media_members(struct media *m);

/* Member i's model, or NULL when there is none. */
struct flash *flash_media_member(struct media *m, unsigned i);

/* Where m's FTL state came from at this start. */
enum flash_state_origin {
    FLASH_STATE_FRESH = 0,      /* no state file asked for: all erased */
    FLASH_STATE_RESTORED,       /* saved at the last clean shutdown */
    FLASH_STATE_REBUILT,        /* none (a crash, or the first start): from the image */
};

/* Gives m the side file path for its FTL state (invariant 7): loads and
 * deletes it if it holds a state of m's geometry, else rebuilds the map
 * from the image; media_close saves there. Call before any I/O on m.
 * Returns 0, -EINVAL (m is not a flash media) or -errno. */
int flash_media_state(struct media *m, const char *path);

/* Where m's FTL state came from (FLASH_STATE_FRESH for another media). */
enum flash_state_origin flash_media_origin(struct media *m);

/* Starts background GC on m (invariant 6) with a tick of tick_ns. Uses
 * m's clock from another thread: call it after any flash_media_set_clock,
 * and not with a fake clock that is not thread-safe. Returns 0, -EINVAL
 * (m is not a flash media, or tick 0), -EBUSY (already started) or
 * -errno. */
int flash_media_idle_gc(struct media *m, uint64_t tick_ns);

/* Invariant 2: this thread's latest completion time since the last take;
 * *gc (if gc is not NULL) says whether GC was running on a die that
 * served one of those operations. Also ends the thread's flush ordering
 * (invariant 9). */
uint64_t flash_media_deadline_take(bool *gc);

/* This thread's pending completion time (what the next take returns), left
 * in place: a caller that must decide before the take whether its reply
 * will be held (a FUSE read copies its bytes then) peeks. */
uint64_t flash_media_deadline_peek(void);

/* Replies held until their media completion (invariant 8): counters over
 * the whole process, for `cisc status` (line flash_replies). */
struct flash_reply_stats {
    uint64_t stamped;           /* replies of commands that did modelled media I/O */
    uint64_t held;              /* of those, held: their time had not come yet */
    uint64_t held_ns;           /* total time held */
    uint64_t model_max_ns;      /* largest media completion - request submit */
};

/* Counts one stamped reply: its request was submitted at submit_ns, its
 * media completes at at_ns, and it was ready to go at now_ns (held for
 * at_ns - now_ns when that is positive). Thread-safe. */
void flash_media_reply_note(uint64_t submit_ns, uint64_t at_ns, uint64_t now_ns);

/* Copies the counters of flash_media_reply_note. */
void flash_media_reply_stats(struct flash_reply_stats *st);

#endif

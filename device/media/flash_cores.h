/*
 * device/media/flash_cores.h - the FTL's device cores (ScalaCache ATC '24,
 * 5.2): a host interface controller splits requests into page
 * sub-requests and hands each through a lock-free ring (flash_ring.h) to
 * the core that serves it; the core runs the FTL for it and hands the
 * completion back through a ring of its own.
 *
 * Two designs, the same threads and rings, the same routing (a page goes
 * to core (page / stripe) % cores, flash_part_of):
 *   partitioned   the model has one partition per core and each core
 *                 claims its own (flash_part_claim): its stripes' mapping
 *                 entries, its free blocks, its dies and channels are
 *                 touched by that core only, and the FTL path takes no
 *                 lock at all (flash_*_owned).
 *   single lock   the baseline: one partition (one FTL), which every core
 *                 serves under its one lock (flash_part_lock), held while
 *                 the core works on a batch of sub-requests.
 *
 * Device cores are slower than the host (core speed S >= 1, as `cisc up
 * --core-speed`). Each core has a timeline in device time (CLOCK_MONOTONIC,
 * the clock sub-requests are stamped with, as flash_media's): a batch of
 * sub-requests starts when the core is free and the batch's first
 * sub-request has arrived, takes S times the thread CPU time w it
 * measurably used (or, with ftl_ns set, ftl_ns per sub-request: a
 * modelled FTL cost, free of the host's noise), and the core sleeps until
 * that end before it posts the completions. The single lock has a
 * timeline too: a batch under it starts no earlier than the previous
 * holder's batch ended, and the lock is held (a real mutex) until the
 * batch's end, so batches of different cores never overlap in device
 * time, as on a device whose slow cores contend for one FTL lock. A
 * partitioned core's timeline depends on its own work only. Sleeping,
 * never spinning: four cores whose FTL time is at least 4 times its host
 * cost need at most one host CPU between them, so the scaling a small
 * host shows is the device's, not the host's. A start lags the host clock
 * by at most FLASH_CORES_LAG_MAX_NS: a host delay (a late wake-up, a
 * preempted core) up to that is absorbed by the timeline, a longer one is
 * lost time.
 *
 * The controller is one thread (the rings are single-producer): it calls
 * flash_cores_submit, flash_cores_reap and flash_cores_wait. It keeps at
 * most ring_entries sub-requests outstanding per core (submitted, not yet
 * reaped), so a core never waits for room to post a completion.
 *
 * Ports (the device, flash_media.h): with cfg.ports > 1 there are many
 * producers, the threads that call the media. Each core then has a
 * request ring and a completion ring per port; a producer takes a free
 * port for one media call (flash_cores_port_get, a lock-free claim of a
 * bit), is that port's only producer and consumer until it puts it back
 * (flash_cores_port_put, after reaping everything), and waits for its
 * completions with a brief spin, then a futex (flash_cores_port_wait).
 * A core serves the ports that are taken, in turn. Untimed cores
 * (cfg.untimed, the device) keep no timeline and never sleep for FTL
 * time: the model's own FTL timelines (t_ftl_ns, flash.h invariant 5)
 * stamp the done times, so a core's host speed changes nothing modelled.
 * The device's background GC, stats and checker go through the cores
 * too: an IDLE sub-request makes a core collect its own dies
 * (flash_idle_owned), and the owners' gate (flash_set_gate) parks the
 * partitioned cores, their partitions released, while someone else holds
 * the model's locks (flash_cores_pause).
 *
 * Invariants:
 *   1. A sub-request of page l is served by core (l / stripe_pages) %
 *      cores (partitioned: flash_part_of(l), its partition's owner), in
 *      the order the controller submitted it to that core; every
 *      sub-request is completed exactly once, with the done time and GC
 *      flag the model gave it.
 *   2. Partitioned: core i is the only thread that touches partition i
 *      while the cores run (flash.h invariant 7); no lock is taken.
 *      Single lock: a core touches the model only holding its one lock.
 *   3. Per core, outstanding sub-requests <= ring_entries.
 *   4. Idle cores and an idle controller sleep on a futex (a bell), never
 *      spin; a core's stretch is slept.
 *   5. Timelines only grow; a batch of CPU time w (n sub-requests) covers
 *      [start, start + S w) (or n ftl_ns) of its core's timeline; single
 *      lock: the batches of all cores are disjoint in device time.
 *   6. The model's stats, checker and state may be used again after
 *      flash_cores_stop (the partitions are released then); while the
 *      partitioned cores run they go through the gate: every core parks
 *      (its partition released, nothing served) between
 *      flash_cores_pause(c, true) and (c, false), one pause at a time.
 *   7. Ports: a port is taken by one producer at a time (a bit of the
 *      free mask, cleared with acquire and set with release: the next
 *      taker sees the rings as the last one left them, all empty); the
 *      cores serve only taken ports. With ports <= 1, port 0 is the one
 *      controller's for good.
 */
#ifndef CISC_DEVICE_FLASH_CORES_H
#define CISC_DEVICE_FLASH_CORES_H

#include <stdbool.h>
#include <stdint.h>

#include "device/media/flash.h"
#include "device/media/flash_ring.h"

#define FLASH_CORES_MAX               64u
#define FLASH_CORES_RING_DEFAULT      256u      /* 8 KiB a ring: ScalaCache's 4 KiB order */
#define FLASH_CORES_BATCH             64u       /* sub-requests a core takes at once */
#define FLASH_CORES_LAG_MAX_NS        20000000ull
#define FLASH_CORES_MAX_PORTS         64u       /* producers (bits of a mask) */

struct flash_cores_cfg {
    uint32_t cores;             /* 1 .. FLASH_CORES_MAX */
    bool single_lock;           /* the baseline (one partition, one lock) */
    double core_speed;          /* >= 1.0 (0: 1.0): device cores' slowdown */
    uint32_t ring_entries;      /* per ring, a power of two (0: the default) */
    uint64_t ftl_ns;            /* if set: device time per sub-request, instead
                                   of core_speed times the measured CPU time */
    uint32_t ports;             /* producers, 1 .. FLASH_CORES_MAX_PORTS (0: 1) */
    bool untimed;               /* no core timelines (the device: the model times) */
    uint64_t spin_ns;           /* an idle core polls this long before it sleeps */
};

/* Per core, for benchmarks and tests (read after flash_cores_stop). */
struct flash_core_stats {
    uint64_t served;            /* sub-requests */
    uint64_t batches;
    uint64_t cpu_ns;            /* thread CPU time serving them (sum of w) */
    uint64_t busy_ns;           /* device time they took: sum of S w (or n ftl_ns) */
    uint64_t slept_ns;          /* of that, slept until */
    uint64_t first_ns, last_ns; /* start of the first batch, end of the last */
};

struct flash_cores;

/* Starts cfg->cores core threads serving model f (which must stay alive
 * until flash_cores_stop): partitioned needs flash_partitions(f) ==
 * cores, single lock needs 1. Returns 0 and sets *out; -EINVAL with a
 * reason in err (errlen bytes) for a bad configuration; or -errno. */
int flash_cores_start(struct flash *f, const struct flash_cores_cfg *cfg, char *err,
                      unsigned errlen, struct flash_cores **out);

/* Controller: the core that serves logical page l (invariant 1). */
uint32_t flash_cores_core_of(const struct flash_cores *c, uint64_t l);

/* Controller: sub-requests core i can take now (invariant 3). */
uint32_t flash_cores_room(const struct flash_cores *c, uint32_t i);

/* Controller: hands subs[0..n) to their cores, in order, stopping at the
 * first whose core has no room. Returns how many were handed over. */
unsigned flash_cores_submit(struct flash_cores *c, const struct flash_sub *subs, unsigned n);

/* Controller: takes up to max completions from the cores into out (each
 * with done time in at_ns, flags and the core that served it). Returns
 * how many. */
unsigned flash_cores_reap(struct flash_cores *c, struct flash_sub *out, unsigned max);

/* Controller: sub-requests submitted and not yet reaped, over all cores. */
uint64_t flash_cores_outstanding(const struct flash_cores *c);

/* Controller: sleeps until a core posts completions (or 100 ms pass).
 * Returns at once when some are waiting to be reaped. */
void flash_cores_wait(struct flash_cores *c);

/* ---- ports: many producers (invariant 7) ---- */

/* Takes a free port for the caller (waiting on a futex while all are
 * taken). Returns its index. Only with cfg.ports > 1. */
unsigned flash_cores_port_get(struct flash_cores *c);

/* Puts port p back; the caller took it and reaped all it submitted. */
void flash_cores_port_put(struct flash_cores *c, unsigned p);

/* flash_cores_submit, _reap, _outstanding and _room on port p (the
 * single controller's calls are these on port 0). */
unsigned flash_cores_port_submit(struct flash_cores *c, unsigned p,
                                 const struct flash_sub *subs, unsigned n);
unsigned flash_cores_port_reap(struct flash_cores *c, unsigned p, struct flash_sub *out,
                               unsigned max);
uint64_t flash_cores_port_outstanding(const struct flash_cores *c, unsigned p);
uint32_t flash_cores_port_room(const struct flash_cores *c, unsigned p, uint32_t core);

/* Waits until port p has completions to reap: polls up to spin_ns, then
 * sleeps on the port's futex (a core rings it after posting). */
void flash_cores_port_wait(struct flash_cores *c, unsigned p, uint64_t spin_ns);

/* The owners' gate (invariant 6; flash_cores_start sets it on a
 * partitioned model): on, every core releases its partition and parks;
 * returns once all have. Off: they claim their partitions again and
 * serve. ctx is the struct flash_cores. */
void flash_cores_pause(void *ctx, bool on);

/* Stops the cores once they have served everything submitted (the
 * completions not reaped are dropped), joins them, releases the
 * partitions, copies per-core stats into st (cores entries; may be NULL)
 * and frees c. */
void flash_cores_stop(struct flash_cores *c, struct flash_core_stats *st);

#endif

/*
 * device/media/media_fault.h - a RAM medium that misbehaves on purpose, for tests.
 *
 * The medium keeps two layers: what is durable (survives a power cut) and
 * what was written since the last flush (volatile). A test arms one fault
 * and runs a workload:
 *   - fail:  write number N (1-based, counted from creation) returns an
 *            error and changes nothing; optionally every later write too;
 *   - cut:   "power is cut" after write N: writes after N are accepted but
 *            dropped; write N itself may be torn (only its first bytes
 *            land);
 * then takes a snapshot: a new, fault-free medium holding what a disk
 * would hold after losing power now. Which volatile (unflushed) blocks
 * survive is chosen by the snapshot's policy: none, all, or a random
 * subset (per block, from a seed), because a real disk may persist
 * unflushed writes in any order.
 *
 * Invariants:
 *   1. Reads see the latest accepted write (volatile over durable over
 *      zeros), exactly like a disk's cache would.
 *   2. media_flush() moves every volatile block into the durable layer;
 *      after a cut it moves nothing (the power is off).
 *   3. Discard counts as a write of zeros; media_write_part as one
 *      write (a tear keeps the first bytes of its part).
 *   4. Thread-safe (one mutex); snapshots never share memory with the
 *      source. Handles from media_fault_open_again share one disk.
 */
#ifndef CISC_DEVICE_MEDIA_FAULT_H
#define CISC_DEVICE_MEDIA_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "device/media/media.h"

/* Creates a zero-filled RAM medium of nblocks blocks (sparse: only written
 * blocks take memory). Returns 0 and sets *out, or -errno. */
int media_fault_create(uint64_t nblocks, struct media **out);

/* Takes memory for nblocks block buffers now and zeroes it, so that the
 * next nblocks writes of blocks not written before fault no fresh memory
 * in and, when they write part of a block, zero nothing (a benchmark
 * measures its writes, not the kernel zeroing new pages: a first touch
 * costs more than the write itself). Only a medium of at
 * least 1 GiB (the ones carved from slabs) keeps them; a smaller one
 * ignores the call. Returns 0 or -ENOMEM (what was taken stays). */
int media_fault_prefault(struct media *m, uint64_t nblocks);

/* Opens another handle on m's disk (same contents, same faults); the
 * disk is freed when its last handle is closed. Lets a test unmount a
 * file system (which closes its media) and mount the disk again.
 * Returns 0 and sets *out, or -errno. */
int media_fault_open_again(struct media *m, struct media **out);

/* Write number n (1-based, counting every write and discard call since
 * creation) fails with -err and is not applied. With sticky, every later
 * write and flush fails too (a dead disk). n == 0 disarms. */
void media_fault_fail_write(struct media *m, uint64_t n, int err, bool sticky);

/* Read number n (1-based) fails with -err. n == 0 disarms. */
void media_fault_fail_read(struct media *m, uint64_t n, int err);

/* Cuts power after write n: writes n+1, n+2, ... are accepted and
 * dropped, flushes do nothing. When tear_bytes < the size of write n,
 * only its first tear_bytes bytes land (a torn write). n == 0 disarms;
 * UINT64_MAX for tear_bytes means "write n lands whole". */
void media_fault_cut_after(struct media *m, uint64_t n, uint64_t tear_bytes);

/* Number of write (and discard) calls so far, including dropped ones. */
uint64_t media_fault_writes(struct media *m);

/* Number of read calls so far. */
uint64_t media_fault_reads(struct media *m);

/* True once the armed cut has happened. */
bool media_fault_is_cut(struct media *m);

/* What survives of volatile blocks in a snapshot. */
enum media_fault_keep {
    MEDIA_FAULT_KEEP_NONE,     /* only flushed data survives */
    MEDIA_FAULT_KEEP_ALL,      /* every accepted write survives */
    MEDIA_FAULT_KEEP_RANDOM,   /* each volatile block survives with p = 1/2 */
};

/* Creates a new fault-free RAM medium holding what m's disk holds after
 * losing power now: the durable layer plus the volatile blocks chosen by
 * keep (seed drives KEEP_RANDOM). Returns 0 and sets *out, or -errno. */
int media_fault_snapshot(struct media *m, enum media_fault_keep keep, uint64_t seed,
                         struct media **out);

#endif

/*
 * common/done.h - a one-shot completion word: one thread waits until
 * another says a piece of work is finished (a command run on a device
 * core, for eng_call and the mount's waiting calls).
 *
 * Most commands finish before their submitter could wait: a submitter
 * that runs the command itself (direct dispatch) finds it done when it
 * looks. Waking a futex nobody sleeps on is still a system call (about a
 * quarter of a microsecond here, a tenth of a small fused op), so the
 * waiter says that it sleeps and the finisher wakes only then.
 *
 * States of the word: DONE_RUNNING (armed) -> DONE_SLEEPING (a waiter
 * sleeps on it, or is about to) -> DONE_FINISHED; or RUNNING -> FINISHED.
 *
 * Invariants:
 *   1. done_post wakes exactly when the word was SLEEPING; a waiter sets
 *      SLEEPING before FUTEX_WAIT, and FUTEX_WAIT returns at once if the
 *      word is no longer SLEEPING, so no wake-up is lost.
 *   2. Everything the finisher wrote before done_post is visible to the
 *      waiter once done_wait returns (release/acquire on the word).
 *   3. After done_post the word may be gone (the waiter returned and
 *      freed it): done_post touches it no more after the exchange but for
 *      the wake, which only names the address (a spurious wake-up of an
 *      unrelated waiter at a reused address is harmless: every futex
 *      waiter here re-checks its word).
 */
#ifndef CISC_COMMON_DONE_H
#define CISC_COMMON_DONE_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { DONE_RUNNING = 0, DONE_SLEEPING = 1, DONE_FINISHED = 2 };

/* Arms w for one piece of work (before it can finish). */
static inline void done_arm(uint32_t *w)
{
    __atomic_store_n(w, DONE_RUNNING, __ATOMIC_RELAXED);
}

/* Marks w's work finished and wakes its waiter if one sleeps. */
static inline void done_post(uint32_t *w)
{
    /* Release: pairs with the acquire loads in done_wait (invariant 2). */
    if (__atomic_exchange_n(w, DONE_FINISHED, __ATOMIC_ACQ_REL) == DONE_SLEEPING)
        syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Returns once w's work is finished (sleeping only if it is not yet). */
static inline void done_wait(uint32_t *w)
{
    /* Acquire: pairs with the exchange in done_post. */
    uint32_t s = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    while (s != DONE_FINISHED) {
        uint32_t want = DONE_RUNNING;
        if (s == DONE_RUNNING &&
            !__atomic_compare_exchange_n(w, &want, DONE_SLEEPING, false, __ATOMIC_ACQUIRE,
                                         __ATOMIC_ACQUIRE)) {
            s = want;   /* finished meanwhile (or already sleeping) */
            continue;
        }
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, DONE_SLEEPING, NULL, NULL, 0);
        s = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    }
}

#endif

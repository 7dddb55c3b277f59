/*
 * common/spin.h - the budget of a thread that spins before it sleeps
 * (libcisc waiting for a completion, a device poller waiting for
 * submissions), cut short while the host has no CPU to spare.
 *
 * Spinning wins only when a CPU would otherwise be idle. On a host with
 * more runnable threads than CPUs a spinner takes a CPU from the thread it
 * waits for (the device core running its command, the client about to
 * submit), and the kernel's fair scheduler charges the spinner for that
 * time, so that its own later wake-ups are placed behind the others: the
 * spin makes the wait it was meant to shorten longer.
 *
 * Contention is read from the spinner's own clock. A spin loop reads the
 * clock every round, tens of nanoseconds apart; a gap of more than
 * SPIN_GAP_NS between two rounds means the thread was off its CPU while it
 * wanted to run: the kernel gave the CPU to someone else. The spinner then
 * stops at once (it sleeps), and for a hold-off its budget is
 * SPIN_BRIEF_NS, long enough for an answer already on its way, too short
 * to matter to anyone. The hold-off starts at SPIN_HOLD_MIN_NS and doubles
 * (up to SPIN_HOLD_MAX_NS) when contention comes back within one hold-off
 * of the last one ending; a calm spell brings it back to the minimum. So
 * on a host that stays loaded a spinner tries its full budget once per
 * SPIN_HOLD_MAX_NS, for as long as it takes to be preempted again.
 *
 * Invariants:
 *   1. spin_budget() never exceeds the caller's full budget; inside a
 *      hold-off it is at most SPIN_BRIEF_NS.
 *   2. A gap is measured only between two rounds of one spin: spin_rest()
 *      (called when the thread sleeps, works or makes a system call)
 *      forgets the last round, so a sleep or long work never counts as
 *      contention.
 *   3. No system call and no lock: one clock reading per round (vDSO),
 *      taken by the caller.
 */
#ifndef CISC_COMMON_SPIN_H
#define CISC_COMMON_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#define SPIN_GAP_NS      30000ull       /* a round this late: the thread was off its CPU */
#define SPIN_BRIEF_NS    5000ull        /* the budget inside a hold-off */
#define SPIN_HOLD_MIN_NS 10000000ull    /* 10 ms */
#define SPIN_HOLD_MAX_NS 1000000000ull  /* 1 s */

/* One spinner's state (one thread's, or guarded by what guards the
 * spinner). All zero is a valid start: no hold-off. */
struct spin_gov {
    uint64_t last;      /* clock at this spin's previous round; 0 = not spinning */
    uint64_t calm_at;   /* the hold-off lasts until here */
    uint64_t hold;      /* length of the last hold-off (0 = none yet) */
    uint64_t gaps;      /* times contention was seen (statistics) */
};

/* How long the spinner may spin now, given its full budget. */
static inline uint64_t spin_budget(const struct spin_gov *g, uint64_t now, uint64_t full)
{
    if (now < g->calm_at && full > SPIN_BRIEF_NS)
        return SPIN_BRIEF_NS;
    return full;
}

/* True inside a hold-off. */
static inline bool spin_held(const struct spin_gov *g, uint64_t now)
{
    return now < g->calm_at;
}

/* Starts a hold-off at now (contention seen). */
static inline void spin_hold(struct spin_gov *g, uint64_t now)
{
    g->gaps++;
    if (now < g->calm_at) {   /* inside one already: it lasts a full hold from now */
        g->calm_at = now + g->hold;
        return;
    }
    bool again = g->hold && now - g->calm_at < g->hold;   /* soon after the last one */
    uint64_t h = again ? 2 * g->hold : SPIN_HOLD_MIN_NS;
    g->hold = h < SPIN_HOLD_MAX_NS ? h : SPIN_HOLD_MAX_NS;
    g->calm_at = now + g->hold;
}

/* One round of a spin at clock now. Returns true when the thread was off
 * its CPU since the previous round: a hold-off has started and the caller
 * should stop spinning and sleep. */
static inline bool spin_round(struct spin_gov *g, uint64_t now)
{
    uint64_t last = g->last;
    g->last = now;
    if (!last || now - last <= SPIN_GAP_NS)
        return false;
    spin_hold(g, now);
    g->last = 0;
    return true;
}

/* The spin ended (the thread sleeps, works or makes a system call): the
 * next round starts a new spin (invariant 2). */
static inline void spin_rest(struct spin_gov *g)
{
    g->last = 0;
}

#endif

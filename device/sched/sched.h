/*
 * device/sched/sched.h - device cores (worker threads) and the scheduler that
 * feeds them.
 *
 * The device runs every command in one of `cores` core slots (below).
 * Which pending command a free core takes next is the policy's choice, behind
 * struct sched_policy: "fifo" now; a CFS policy (per-tenant virtual
 * runtime, FusionFS §4.5) slots in later without touching callers. The
 * policy is chosen by name when the device starts.
 *
 * The framework owns the threads, one lock and one condition variable;
 * the policy only orders items (its calls run under the lock). After a
 * core runs an item it charges the policy with the time it took.
 *
 * A device core is a slot: at most `cores` items run at once, each in its
 * own slot (whose statistics shard it uses). Worker threads fill slots
 * from the queue. With `direct` dispatch, a submitter that finds the
 * queue empty and a slot free runs the item itself in that slot, saving
 * the thread wake-up a hand-off costs; under load (anything queued, or
 * every slot busy) items queue and the policy orders them as usual.
 *
 * States: RUNNING --sched_destroy--> DRAINING --queue empty--> STOPPED.
 *
 * Invariants:
 *   1. Every item accepted by sched_submit() is run exactly once, by one
 *      core, even if sched_destroy() is called while it is queued.
 *   2. After sched_destroy() begins, sched_submit() refuses (-ESHUTDOWN).
 *   3. Lock order: the scheduler lock is a leaf; run() is called without it.
 *   4. At most `cores` items run at any time, in distinct slots; an item
 *      never waits in the queue while a slot is free and a worker idle.
 *
 * Debug and sanitizer builds check 1 (as counts: submitted = completed +
 * running + queued), the slots of 4 and the policy's queue after every
 * state change (sched_check in sched.c).
 */
#ifndef CISC_DEVICE_SCHED_H
#define CISC_DEVICE_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Embedded in whatever the caller schedules (the engine's command). */
struct sched_item {
    struct sched_item *next;   /* policy's link; owned by the scheduler while queued */
    uint32_t tenant;           /* who to be fair to (uid) */
    uint32_t queue;            /* which submission queue it came from */
    uint64_t t_submit_ns;      /* set by sched_submit (CLOCK_MONOTONIC) */
};

/* A scheduling policy. All calls are made with the scheduler lock held. */
struct sched_policy {
    const char *name;
    void *(*create)(unsigned cores);
    void (*destroy)(void *q);
    void (*push)(void *q, struct sched_item *it);
    struct sched_item *(*pop)(void *q, unsigned core);   /* NULL if empty */
    void (*charge)(void *q, const struct sched_item *it, uint64_t ns);
    /* Optional: true if q is well formed and holds `depth` items (debug
     * builds call it after every change, so it must be cheap: count at
     * most a few dozen items). */
    bool (*check)(const void *q, uint64_t depth);
};

extern const struct sched_policy sched_fifo;

/* Runs one item in core slot `core`; the item may be freed by it. */
typedef void (*sched_run_fn)(void *arg, struct sched_item *it, unsigned core);

struct sched;

#define SCHED_MAX_CORES 64u

struct sched_core_stats {
    uint64_t executed;
    uint64_t busy_ns;
};

struct sched_config {
    unsigned cores;            /* 1..SCHED_MAX_CORES */
    bool direct;               /* allow direct dispatch (see above) */
};

struct sched_stats {
    const char *policy;
    unsigned cores;
    bool direct;
    uint64_t submitted, completed;
    uint64_t direct_runs;      /* items run by their submitter */
    uint64_t depth;            /* queued, not yet taken by a core */
    uint64_t max_depth;
    unsigned busy;             /* cores running an item now */
    struct sched_core_stats core[SCHED_MAX_CORES];
};

/* Looks a policy up by name ("fifo"); NULL if unknown. */
const struct sched_policy *sched_policy_find(const char *name);

/* Starts cfg->cores worker threads that call run(arg, item, slot) for
 * each submitted item. Returns 0 and sets *out, or -errno. */
int sched_create(const struct sched_policy *pol, const struct sched_config *cfg,
                 sched_run_fn run, void *arg, struct sched **out);

/* Queues an item, or with direct dispatch may run it before returning.
 * Returns 0, or -ESHUTDOWN once sched_destroy has begun. */
int sched_submit(struct sched *s, struct sched_item *it);

/* Like sched_submit, but never runs the item on the calling thread (no
 * direct dispatch): for work a device core hands to the other cores, and
 * for the commands a queue-pair poller hands over in a batch. */
int sched_submit_handoff(struct sched *s, struct sched_item *it);

/* Copies current statistics. */
void sched_get_stats(struct sched *s, struct sched_stats *st);

/* Waits until every item submitted so far has finished running (the
 * caller makes sure no new ones arrive meanwhile). */
void sched_drain(struct sched *s);

/* Refuses new items, runs every queued one, joins the cores and frees s. */
void sched_destroy(struct sched *s);

#ifdef __cplusplus
}
#endif

#endif

/*
 * device/sched/sched.h - device cores (worker threads) and the scheduler that
 * feeds them.
 *
 * The device runs every command in one of `cores` core slots (below).
 * Which pending command a free core takes next is the policy's choice,
 * behind struct sched_policy, chosen by name when the device starts:
 *
 *   fifo     oldest first, whoever sent it.
 *   rr       round robin over queues (FusionFS's baseline): one item from
 *            each queue with work in turn.
 *   cfs      FusionFS §4.6: a free core takes the next item from the
 *            tenant with the least virtual core time, then from that
 *            tenant's queue with the least; virtual time is core time
 *            divided by the tenant's weight; a tenant or queue that
 *            becomes active starts at the current minimum (no credit
 *            saved up while idle). When device memory is the bottleneck
 *            (commands wait for memory while a core is free), the tenant
 *            with the least memory in use goes first instead (§4.6.2).
 *   cfs-cpu  cfs without the memory key (the paper's CFScpu).
 *   drf      dominant resource fairness over core time and device memory:
 *            an item that ran t ns holding m bytes costs the tenant
 *            t * max(1, m * cores / budget), i.e. its larger share of the
 *            two resources in core-time units; least first, like cfs.
 *
 * Each choice costs O(log n) in tenants and queues (heaps, heap.h).
 *
 * Memory admission (cfs and drf): a command whose device-memory
 * reservation (item.mem) does not fit beside those of the running
 * commands is not started; the policy is asked again with memory tight
 * (cfs: the tenant holding the least memory; drf: the same pick, so that
 * nothing overtakes the least dominant share, as Ghodsi et al.'s
 * progressive filling), and if that does not fit either, the cores wait
 * for a finish to free memory. So a memory-hungry tenant's commands wait
 * in their queue, not on a core, and the cores stay free for commands that
 * fit (§4.6.2). With nothing running any command may start (the engine's
 * budget then decides). cfs-cpu, the memory-blind baseline, starts its
 * choice, which then waits for memory in the engine on its core (mem_hold:
 * the core stalls, as FusionFS's CFScpu's do).
 *
 * A tenant is whoever the door says (sched_item.tenant: a uid, or a pid
 * with the device's tenant=pid); a queue is a door's submission queue
 * (libcisc queue pairs; the FUSE mount is queue 0 of each caller).
 *
 * The framework owns the threads, one lock and one condition variable,
 * and the accounts of tenants and queues (core time, memory, waiting;
 * sched_int.h); the policy only orders items (its calls run under the
 * lock). After a core runs an item it charges the policy with the time
 * the item held the core: its StorageFS work and its compute steps as the
 * core-speed model stretches them (model.h sleeps on the core).
 *
 * A device core is a slot: at most `cores` items run at once, each in its
 * own slot (whose statistics shard it uses). Worker threads fill slots
 * from the queue. With `direct` dispatch, a submitter that finds the
 * queue empty and a slot free runs the item itself in that slot, saving
 * the thread wake-up a hand-off costs: with nothing queued, that item is
 * what any policy would pick, and it is charged like any other. Under load
 * (anything queued, or every slot busy) items queue and the policy orders
 * them.
 *
 * Preemption (cfs, cfs-cpu, drf; fifo and rr never preempt). A long item
 * runs in slices: the code it runs calls sched_preempt_point() at places
 * where it may stop for a while (a fused op: every step boundary and bpf
 * block, and every DM_SLEEP_SLICE_NS of a compute step's core-speed model,
 * model.h). After SCHED_SLICE_NS on its core, a point asks the policy
 * whether its next pick, another tenant's, should go first (cfs: that
 * tenant's virtual time is less than this one's with the slice charged);
 * if so the item is parked: the slice is charged, its core slot freed for
 * a worker thread to run the other item (one is started if none is idle;
 * a worker beyond the cores' number exits once idle for worker_idle_ns),
 * and its thread waits, state and device-memory reservation kept (still
 * charged to its tenant). A parked item comes back when the policy would
 * pick it (its tenant's key against the next pick's), on whichever slot is
 * free. Only items marked preemptible are parked (the engine: macro fused
 * ops, whose changes nobody sees before their commit), and only on a
 * worker thread: a submitter running an item itself (direct dispatch, a
 * poller's small commands) has other work of its own to get back to.
 * Except at the end: once an item's work is done and its locks released,
 * all it has left is the core time the core-speed model adds (a sleep,
 * model.h), and there any item may be parked, on any thread
 * (sched_preempt_point_done), so that no door's commands hold a slow core
 * for long against the policy.
 *
 * Blocking. A parked item keeps its locks (a fused op its inode stripes).
 * So that nothing can wait for it while holding a core it needs, a running
 * item that waits for a lock or for device memory gives its core up first
 * (sched_block / sched_unblock: the engine's stripe locks and memory
 * reservations do); while any item waits for a lock, parked items resume
 * first, oldest first, whatever their key (the holder may be one of them)
 * and no item is parked. A blocked item that may go on waits for a slot
 * ahead of queued and parked ones.
 *
 * States: RUNNING --sched_destroy--> DRAINING --queue empty--> STOPPED.
 *
 * Invariants:
 *   1. Every item accepted by sched_submit() is run exactly once, by one
 *      core, even if sched_destroy() is called while it is queued.
 *   2. After sched_destroy() begins, sched_submit() refuses (-ESHUTDOWN).
 *   3. Lock order: the scheduler lock is a leaf; run() is called without it.
 *   4. At most `cores` items run on a core at any time, in distinct slots
 *      (parked and blocked items hold none); an item never waits in the
 *      queue while a slot is free, a worker idle, no blocked item claims
 *      the slot and its memory fits (see memory admission).
 *   5. Every item that runs, queued or direct, is charged to its tenant
 *      and queue with the time it held a core, once per slice (parks and
 *      blocks end slices), never for time parked or blocked.
 *   6. A tenant never has more than max_queues queues open (when set).
 *
 * Debug and sanitizer builds check 1 (as counts: submitted = completed +
 * running + queued + off core), the slots of 4, the accounts and the policy's queue
 * after every state change (sched_check in sched.c).
 */
#ifndef CISC_DEVICE_SCHED_H
#define CISC_DEVICE_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "device/sched/hist.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sched_queue;
struct sched_tenant;

/* Embedded in whatever the caller schedules (the engine's command). */
struct sched_item {
    struct sched_item *next;   /* policy's link; owned by the scheduler while queued */
    uint32_t tenant;           /* who to be fair to (uid or pid) */
    uint32_t queue;            /* which submission queue it came from */
    uint64_t mem;              /* device memory it reserves while it runs (bytes) */
    uint64_t t_submit_ns;      /* set by sched_submit (CLOCK_MONOTONIC) */
    /* the scheduler's */
    struct sched_queue *sq;    /* its queue's account (sched_int.h) */
    uint64_t vt_pre;           /* virtual time the policy charged when it started */
    uint64_t starts_at_push;   /* the device's start count when it was queued */
    uint64_t ran_ns;           /* core time charged when it left its core (parked, blocked) */
    bool preemptible;          /* the door's: its run may be parked (see Preemption) */
};

#define SCHED_WEIGHT_DEFAULT 100u
#define SCHED_WEIGHT_MIN     1u
#define SCHED_WEIGHT_MAX     10000u

/* What a policy is created for. */
struct sched_env {
    unsigned cores;
    uint64_t mem_budget;       /* device memory, bytes (> 0) */
    uint64_t wake_credit_ns;   /* cfs, drf: a tenant becoming live starts this
                                  much core time (at the default weight) below
                                  the floor (sched_create: SCHED_WAKE_CREDIT_NS) */
};

/* Linux's CFS places a waking task half its latency target (3 ms) below
 * min_vruntime: a tenant that sleeps between short commands (one at a
 * time, a client's round trip apart) runs its command without being
 * parked for one that never sleeps, and cannot bank more than this.
 * Measured with CiscSched.TheMountIsChargedToItsCallerToo (one core at
 * core speed 100, a one-op-at-a-time tenant beside a 4-process mount
 * flood; its share of the core while it had work, 3 runs each, 1 ms sleep
 * slice): no credit 0.17-0.18, 1 ms 0.38-0.46, 3 ms 0.46-0.51 (fair: 0.5). */
#define SCHED_WAKE_CREDIT_NS 3000000ull

/* A scheduling policy. All calls are made with the scheduler lock held;
 * items reach push/start/charge with it->sq set. */
struct sched_policy {
    const char *name;
    void *(*create)(const struct sched_env *env);
    void (*destroy)(void *q);
    /* Queues it. Returns 0 or -ENOMEM (then it is not queued). */
    int (*push)(void *q, struct sched_item *it);
    /* The next item to run, NULL if empty. mem_tight: commands are
     * waiting for device memory (a core is free: it is asking). */
    struct sched_item *(*pop)(void *q, bool mem_tight);
    /* What pop would return now, without taking it. */
    struct sched_item *(*peek)(void *q, bool mem_tight);
    /* Optional: it starts running (popped, or run directly unqueued). */
    void (*start)(void *q, struct sched_item *it);
    void (*charge)(void *q, const struct sched_item *it, uint64_t ns);
    /* Optional: true if q is well formed and holds `depth` items (debug
     * builds call it after every change, so it must be cheap: count at
     * most a few dozen items). */
    bool (*check)(const void *q, uint64_t depth);
    /* Optional (absent: always true): whether the idle queue account sq,
     * or with sq NULL the idle tenant t, holds nothing the policy needs,
     * so freeing it and starting afresh later changes no choice (see
     * sched_int.h, "Recycling"). */
    bool (*forgettable)(void *q, const struct sched_tenant *t, const struct sched_queue *sq);
    /* Memory admission (see the top): a command that does not fit in
     * device memory beside the running ones waits in its queue (cfs, drf).
     * Without it, the policy's choice starts and waits for memory in the
     * engine (sched_mem_wait: off its core). */
    bool mem_admit;
    /* A command that waits for device memory keeps its core meanwhile
     * (the core stalls, as under a scheduler blind to memory: FusionFS's
     * CFScpu, §5.4), while at least one other core is free of such
     * waiters; without it the waiter gives its core up (sched_block). */
    bool mem_hold;
    /* Optional, all three or none (none: never preempts; fifo, rr).
     * preempt: whether `run`, running for slice_ns since it last took
     * its core, should give the core to `cand`, the policy's next pick.
     * key: the order of a parked item against the next pick (lower
     * first; a tie goes to the parked one). slice: `it` leaves its core
     * before it finishes (parked or blocked) after ns on it: charged now,
     * and its finish charges only what follows. */
    bool (*preempt)(void *q, const struct sched_item *run, uint64_t slice_ns,
                    const struct sched_item *cand);
    uint64_t (*key)(void *q, const struct sched_item *it);
    void (*slice)(void *q, struct sched_item *it, uint64_t ns);
};

extern const struct sched_policy sched_fifo;

/* The policies' names, "fifo|rr|cfs|cfs-cpu|drf", for usage and errors. */
extern const char sched_policy_names[];

/* Runs one item in core slot `core`; the item may be freed by it. */
typedef void (*sched_run_fn)(void *arg, struct sched_item *it, unsigned core);

struct sched;

#define SCHED_MAX_CORES 64u
#define SCHED_MEM_DEFAULT (2ull << 30)   /* the device RAM knob's default */

struct sched_core_stats {
    uint64_t executed;
    uint64_t busy_ns;
};

struct sched_config {
    unsigned cores;            /* 1..SCHED_MAX_CORES */
    bool direct;               /* allow direct dispatch (see above) */
    uint64_t mem_budget;       /* device memory for the memory key and drf; 0 = 2 GiB */
    uint32_t max_queues;       /* per tenant; 0 = no cap */
    bool tenant_pid;           /* tenant ids are pids, not uids (for reports only) */
    uint64_t worker_idle_ns;   /* a worker beyond the cores' own, started for a
                                  parked or blocked item's slot, exits after this
                                  long idle; 0 = 2 s */
};

/* One tenant, for `cisc status` and `cisc top`. */
struct sched_tenant_stats {
    uint32_t id, weight;
    uint32_t queues;           /* queue pairs open now */
    uint64_t vt;               /* virtual time (policy's; 0 under fifo and rr) */
    uint64_t core_ns;          /* device-core time charged */
    double share;              /* core_ns / everyone's; drf: the dominant share */
    uint64_t mem_use, mem_peak;
    uint64_t queued, running, done;
    uint64_t throttled_ns;     /* time its items waited queued */
    uint64_t overtaken;        /* items that started while one of its own waited */
    uint64_t terminated;       /* ops stopped at the time limit */
    uint64_t preempted;        /* times one of its items was parked for another tenant */
    uint64_t backlog_ns;       /* device-core time everyone used while it had items
                                  waiting or running: its share while it wanted the
                                  device is core_ns / backlog_ns */
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
    uint64_t tenants, queues;  /* accounts held now */
    uint64_t freed_tenants, freed_queues;   /* idle accounts recycled so far */
    uint64_t preemptions;      /* items parked at a preemption point */
    uint64_t blocks;           /* items that gave their core up to wait (a lock, memory) */
    unsigned threads;          /* worker threads (cores, plus those started for parked
                                  items and not yet idle long enough to exit) */
    bool tenant_pid;           /* sched_config's */
    struct sched_core_stats core[SCHED_MAX_CORES];
};

/* Looks a policy up by name ("fifo", "cfs", ...); NULL if unknown. */
const struct sched_policy *sched_policy_find(const char *name);

/* Starts cfg->cores worker threads that call run(arg, item, slot) for
 * each submitted item. Returns 0 and sets *out, or -errno. */
int sched_create(const struct sched_policy *pol, const struct sched_config *cfg,
                 sched_run_fn run, void *arg, struct sched **out);

/* Queues an item, or with direct dispatch may run it before returning.
 * Returns 0, -ESHUTDOWN once sched_destroy has begun, or -ENOMEM. */
int sched_submit(struct sched *s, struct sched_item *it);

/* Like sched_submit, but never runs the item on the calling thread (no
 * direct dispatch): for work a device core hands to the other cores, and
 * for the commands a queue-pair poller hands over in a batch. */
int sched_submit_handoff(struct sched *s, struct sched_item *it);

/* Says whether the calling thread may run it itself (arg: the caller's). */
typedef bool (*sched_mine_fn)(void *arg, const struct sched_item *it);

/* Queues a batch of n items: err[i] gets each one's result as from
 * sched_submit (an item with err[i] != 0 was not queued and will not
 * run). Then, with direct dispatch and while a core slot is free, the
 * calling thread runs the item the policy picks next as long as mine()
 * accepts it (the shortcut
 * a queue-pair poller takes for small commands: never out of the
 * policy's order), and wakes idle cores for what is left. */
void sched_submit_batch(struct sched *s, struct sched_item **items, unsigned n, int *err,
                        sched_mine_fn mine, void *arg);

/* Copies current statistics. */
void sched_get_stats(struct sched *s, struct sched_stats *st);

/* Copies up to max tenants' statistics into out (in no order). Returns
 * how many tenants there are (may exceed max). */
unsigned sched_tenant_stats(struct sched *s, struct sched_tenant_stats *out, unsigned max);

/* One row of `cisc top`: a tenant, or one of its queues. */
struct sched_row {
    bool is_queue;
    uint32_t queue;                /* queue rows: the queue's id */
    struct sched_tenant_stats st;  /* tenant rows: all; queue rows: id (its tenant),
                                      core_ns, share, mem_use, mem_peak, queued,
                                      running, done */
    struct hist lat;               /* submit-to-finish latency of its items */
};

/* Copies up to max rows, tenants first, then queues (in no order within
 * each). Returns how many rows there are (may exceed max). */
unsigned sched_rows(struct sched *s, struct sched_row *out, unsigned max);

/* Writes the scheduler's report for `cisc top` into buf (at most size
 * bytes, NUL-terminated, whole lines only; report.c has the format).
 * Returns its length or -ENOMEM. */
ssize_t sched_report(struct sched *s, char *buf, size_t size);

/* Sets a tenant's weight (SCHED_WEIGHT_MIN..MAX; default
 * SCHED_WEIGHT_DEFAULT): its virtual time runs 1/weight as fast. Returns
 * 0, -EINVAL (out of range) or -ENOMEM. */
int sched_tenant_weight(struct sched *s, uint32_t tenant, uint32_t weight);

/* A door opens / closes a queue for tenant: open refuses with -EDQUOT when
 * the tenant has max_queues open (invariant 6). Returns 0 or -errno. */
int sched_queue_open(struct sched *s, uint32_t tenant);
void sched_queue_close(struct sched *s, uint32_t tenant);

/* The runner of `it` (running now) stopped it at its time limit: counted
 * for its tenant. */
void sched_note_terminated(struct sched *s, const struct sched_item *it);

/* The device-memory budget's waiters: +1 when a running command starts
 * waiting for memory, -1 when it stops (the same thread). While any
 * waits, memory is the bottleneck (the policy's mem_tight). The waiter
 * gives its core up meanwhile (sched_block), except under a policy with
 * mem_hold while another core stays free of such waiters (then it keeps
 * it, charged as time on the core). */
void sched_mem_wait(struct sched *s, int delta);

/* ---- Preemption and blocking (see the top) ---- */

/* A preemption point: called by the item the calling thread runs, where
 * it may be parked (anywhere else: returns at once). Cheap when there is
 * nothing to decide: one clock read, a lock at most every
 * SCHED_CHECK_NS. Returns when the item holds a core again. */
void sched_preempt_point(void);

/* A preemption point for an item whose work is done and that holds no
 * lock or state anyone waits for (the core-speed model's sleep after a
 * command's StorageFS work, model.h): unlike sched_preempt_point it may
 * park any item, preemptible or not, on any thread (a poller's or a FUSE
 * worker's own run, a micro op): all it has left is core time, and parked
 * it keeps nobody waiting but itself. Not in a nested run (the outer item
 * may hold locks): there it returns at once. */
void sched_preempt_point_done(void);

/* Sleeps ns of core time for the calling thread's item, whose work is
 * done (the core-speed model's sleep, model.h): like a run of
 * sched_preempt_point_done between short sleeps, except that the item can
 * also be parked without waking up, by a thread that queues an item the
 * policy should run instead (so a late wake-up on a busy host does not
 * keep the core). Time parked does not count: returns the core time slept
 * (ns or a little more). A plain sleep where nothing can park it. */
uint64_t sched_sleep_done(uint64_t ns);

/* The calling thread's item is about to wait for something another item
 * may hold (on_lock: a lock; else device memory): its core is given up
 * until sched_unblock. Either call is a no-op on a thread that runs no
 * item, and nested calls count once. */
void sched_block(bool on_lock);

/* The wait of sched_block is over: waits for a core again (blocked items
 * first, before any new or parked one). */
void sched_unblock(void);

/* The core slot the calling thread's item holds now (it may change when
 * the item was parked or blocked); `core` on a thread that runs none. */
unsigned sched_core_now(unsigned core);

/* Time the calling thread's item has spent off its core so far (parked
 * or blocked), ns; 0 on a thread that runs none. */
uint64_t sched_off_core_ns(void);

/* Waits until every item submitted so far has finished running (the
 * caller makes sure no new ones arrive meanwhile). */
void sched_drain(struct sched *s);

/* Refuses new items, runs every queued one, joins the cores and frees s. */
void sched_destroy(struct sched *s);

#ifdef __cplusplus
}
#endif

#endif

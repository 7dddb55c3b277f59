/*
 * device/sched/model.h - the device model's timing knobs: what makes the
 * simulator cost what a real computational storage device would.
 *
 *   link latency   added once per host<->device crossing (PCIe in
 *                  FusionFS's setup: 900 ns): a submission becomes
 *                  visible to the device one latency after it is fetched
 *                  and its completion one latency after it is posted;
 *                  both are carried by the completion's arrival time, and
 *                  only the host waits (device/queue/queue_done.c: a
 *                  device core or poller goes on at once, as a real
 *                  device's does after queuing a DMA). 0 disables it.
 *   core speed     device cores are this many times slower than the host
 *                  at everything they do (>= 1.0), in two parts:
 *                  - a compute step whose host work took t ns of its
 *                    thread's CPU time holds its core (core_speed - 1) * t
 *                    more, slept where the step ends (dm_step_begin/
 *                    dm_step_end, dm_compute_charge);
 *                  - the rest of a command's work on its core (StorageFS,
 *                    the engine's bookkeeping), measured as the thread's
 *                    CPU time between dm_meter_begin and dm_meter_end less
 *                    its compute steps', holds the core (core_speed - 1) *
 *                    that more, slept (dm_meter_end).
 *                  So a command is charged about core_speed times what it
 *                  used, whatever it did. At 1.0 neither reads a clock.
 *
 * dm_link_cross is a precise busy-wait on CLOCK_MONOTONIC: a sleep costs
 * tens of microseconds of scheduler latency and would swamp a 900 ns link.
 * Everything a slow core adds to a command is slept instead: the core slot
 * stays held (the scheduler charges the time an item holds it), but the
 * host CPU is free for the other cores' real work, so on a small host a
 * slow device shows as a busy device rather than as host CPU contention;
 * the slept time is measured, and what a sleep overshoots is paid back by
 * the thread's next sleeps. (Compute steps were spun, by the wall clock,
 * until issue 13's fourth round: on a 2-CPU host the spin took CPU from
 * the clients the device serves; docs/SCHED.md has the figures.) The
 * model is process-wide (one device per process); it is set once at
 * start-up, before any queue exists, and read without locks.
 *
 * Invariants:
 *   1. core_speed >= 1.0 and link latency <= DM_LINK_MAX_NS (dm_configure
 *      refuses anything else with -EINVAL and keeps the old model).
 *   2. dm_link_cross() never sleeps: it spins. dm_compute_charge() never
 *      spins: it sleeps, in slices of at most DM_SLEEP_SLICE_NS, each
 *      followed by a preemption point (sched.h), where the scheduler may
 *      park the item that runs it for another tenant's; its oversleep is
 *      owed back as invariant 4 says.
 *   3. An arrival time is at most DM_LINK_MAX_NS ahead of the clock.
 *   4. dm_meter_end() never spins: it sleeps (core_speed - 1) x the
 *      metered CPU time, in slices of at most DM_SLEEP_SLICE_NS, each
 *      followed by a preemption point; an outermost meter sleeps in
 *      sched_sleep_done instead, where any item may be parked, also while
 *      it sleeps (none for dm_meter_end_handed_off). What a sleep overshoots is taken
 *      off the same thread's next sleeps (at most DM_OVERSLEEP_MAX_NS
 *      carried): over the commands a thread runs, the slept total is the
 *      planned total within DM_OVERSLEEP_MAX_NS.
 *   5. A compute step's CPU time (its host work and its spin) is excluded
 *      from the meter of the thread that ran it, so it is stretched once.
 *   6. At core speed 1.0 the meter and step calls read no clock and make
 *      no system call.
 */
#ifndef CISC_DEVICE_MODEL_H
#define CISC_DEVICE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DM_DEFAULT_LINK_NS 900u
#define DM_LINK_MAX_NS     1000000u   /* 1 ms */
#define DM_CORE_SPEED_MAX  1000.0

struct dm_model {
    uint64_t link_latency_ns;
    double core_speed;            /* slowdown factor, 1.0 = as fast as the host */
};

/* Tells the CPU we are spinning (saves power, yields to a sibling thread). */
static inline void dm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Sets the process's model. Returns 0 or -EINVAL (out of range). */
int dm_configure(const struct dm_model *m);

/* The current model (defaults: 900 ns, 1.0). */
struct dm_model dm_get(void);

/* Busy-waits ns nanoseconds. */
void dm_spin_ns(uint64_t ns);

/* One host<->device crossing: busy-waits the link latency. */
void dm_link_cross(void);

/* A crossing that delays its message instead of the sender: *arrive gets
 * the low 32 bits of CLOCK_MONOTONIC ns at which it arrives. Returns
 * false (nothing to wait for) when the link latency is 0. */
bool dm_link_arrival(uint32_t *arrive);

/* The farthest ahead an arrival may be (libcisc treats later as arrived). */
#define DM_ARRIVE_MAX_NS 1000000000ull

/* As dm_link_arrival, for a message that leaves the device only when its
 * media operations complete at ready_ns (CLOCK_MONOTONIC ns; 0 = already):
 * it arrives at max(now, ready_ns) + link latency, at most
 * DM_ARRIVE_MAX_NS ahead. Returns false when that is not in the future. */
bool dm_arrival_after(uint64_t ready_ns, uint32_t *arrive);

/* Charges a compute step that ran ns_spent nanoseconds on a device core:
 * holds the core (core_speed - 1) * ns_spent more, asleep, in slices with
 * a preemption point after each (invariant 2). Returns the extra
 * nanoseconds charged. */
uint64_t dm_compute_charge(uint64_t ns_spent);

/* ---- the whole command: StorageFS work on a slow core --------------------- */

#define DM_SLEEP_SLICE_NS   200000ull    /* a preemption point at least this often */
#define DM_OVERSLEEP_MAX_NS 1000000ull   /* oversleep owed back at most (invariant 4) */

/* One command's run on its core (on the caller's stack; meters nest per
 * thread, innermost counts). */
struct dm_meter {
    struct dm_meter *prev;     /* the thread's enclosing meter */
    uint64_t cpu0;             /* thread CPU ns at begin; 0 = not metering */
    uint64_t compute_cpu;      /* CPU its compute steps used (stretched apart) */
};

/* Starts metering the calling thread's CPU time for a command it runs on
 * a device core. At core speed 1.0 it only marks m unused. */
void dm_meter_begin(struct dm_meter *m);

/* Ends m (begun on this thread): its CPU time since dm_meter_begin, less
 * its compute steps', is the measured work w; sleeps (core_speed - 1) * w
 * on the core (invariant 4). The caller's work is done and its locks are
 * released: during the sleep the scheduler may park the item it runs,
 * whatever it is (sched_sleep_done), unless an enclosing meter's
 * command goes on after it (then only where sched_preempt_point would).
 * Returns the extra nanoseconds charged (the planned sleep); *measured
 * (may be NULL) gets w. 0 and 0 at speed 1.0. */
uint64_t dm_meter_end(struct dm_meter *m, uint64_t *measured);

/* As dm_meter_end, for a command handed elsewhere before its end (the
 * engine parked it on a lease: it may run again on another core while
 * this thread sleeps): the sleep has no preemption point, so nothing
 * touches its scheduler item. Returns the extra charged. */
uint64_t dm_meter_end_handed_off(struct dm_meter *m);

/* Totals over the process since it started: measured StorageFS work and
 * the extra charged for it by dm_meter_end (for tests and benchmarks). */
void dm_meter_totals(uint64_t *measured_ns, uint64_t *extra_ns);

/* ---- one compute step -------------------------------------------------------- */

/* A compute step on a device core (on the caller's stack). */
struct dm_step {
    uint64_t cpu0;             /* thread CPU ns at begin; 0 = core speed 1.0 */
};

/* Marks the start of a compute step's host work. */
void dm_step_begin(struct dm_step *st);

/* Ends the step begun in st: charges its thread's CPU time since
 * dm_step_begin (so neither a host preemption nor time parked or blocked
 * is stretched) through dm_compute_charge, and takes its CPU time out of
 * the thread's meter (invariant 5). Returns the extra charged. */
uint64_t dm_step_end(struct dm_step *st);

#ifdef __cplusplus
}
#endif

#endif

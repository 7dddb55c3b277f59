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
 *                  for compute: a compute step that took t ns on the host
 *                  CPU is charged (core_speed - 1) * t more (>= 1.0).
 *
 * dm_link_cross and dm_compute_charge are precise busy-waits on
 * CLOCK_MONOTONIC, never sleeps: a sleep costs tens of microseconds of
 * scheduler latency and would swamp a 900 ns link. The model is process-wide (one device per process); it is
 * set once at start-up, before any queue exists, and read without locks.
 *
 * Invariants:
 *   1. core_speed >= 1.0 and link latency <= DM_LINK_MAX_NS (dm_configure
 *      refuses anything else with -EINVAL and keeps the old model).
 *   2. dm_link_cross() and dm_compute_charge() never sleep: they spin;
 *      dm_compute_charge spins in slices of DM_SPIN_SLICE_NS, each
 *      followed by a preemption point (sched.h), where the scheduler may
 *      park the item that runs it for another tenant's.
 *   3. An arrival time is at most DM_LINK_MAX_NS ahead of the clock.
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

#define DM_SPIN_SLICE_NS 100000ull   /* a preemption point at least this often */

/* Charges a compute step that ran ns_spent nanoseconds on a device core:
 * spins (core_speed - 1) * ns_spent more, in slices with a preemption
 * point after each (invariant 2). Returns the extra nanoseconds spun. */
uint64_t dm_compute_charge(uint64_t ns_spent);

#ifdef __cplusplus
}
#endif

#endif

/* device/sched/model.c - the device model's timing knobs (see model.h). */
#include "device/sched/model.h"

#include "common/clock.h"
#include "device/sched/sched.h"

#include <errno.h>
#include <sys/prctl.h>

/* Set once before any queue exists (model.h); read without locks. */
static struct dm_model model = { DM_DEFAULT_LINK_NS, 1.0 };

int dm_configure(const struct dm_model *m)
{
    if (m->link_latency_ns > DM_LINK_MAX_NS || !(m->core_speed >= 1.0) ||
        m->core_speed > DM_CORE_SPEED_MAX)
        return -EINVAL;
    model = *m;
    return 0;
}

struct dm_model dm_get(void)
{
    return model;
}

void dm_spin_ns(uint64_t ns)
{
    if (!ns)
        return;
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        dm_cpu_relax();
}

bool dm_link_arrival(uint32_t *arrive)
{
    if (!model.link_latency_ns)
        return false;
    *arrive = (uint32_t)(now_ns() + model.link_latency_ns);
    return true;
}

bool dm_arrival_after(uint64_t ready_ns, uint32_t *arrive)
{
    uint64_t now = now_ns();
    if (ready_ns <= now)
        return dm_link_arrival(arrive);
    uint64_t ahead = ready_ns - now + model.link_latency_ns;
    *arrive = (uint32_t)(now + (ahead < DM_ARRIVE_MAX_NS ? ahead : DM_ARRIVE_MAX_NS));
    return true;
}

void dm_link_cross(void)
{
    dm_spin_ns(model.link_latency_ns);
}

/* ---- StorageFS work and compute steps on a slow core (model.h, 2, 4-6) ------ */

static __thread struct dm_meter *meter;   /* the innermost meter of this thread */
static __thread uint64_t overslept;       /* slept past a plan, owed back (ns; at
                                             most DM_OVERSLEEP_MAX_NS: a host stall
                                             must not make the next commands free) */
static __thread bool slack_set;           /* this thread's timer slack is 1 ns */
static uint64_t total_measured, total_extra;   /* atomic, relaxed: statistics */

/* This thread's CPU time in ns (a system call: only at core speed > 1). */
static uint64_t thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Sleeps ns on the core in slices, after each a preemption point (see
 * meter_end for which) unless points is NONE. Each
 * slice's real length counts against the rest, and what the last one
 * overshoots (a wake-up is late by microseconds, more on a busy host) is
 * owed back: taken off this thread's next sleeps. Short sleeps, one per
 * small command, would otherwise each charge a wake-up's lateness on top
 * of the model's time, many times it for a 4 KiB write. */
enum points { POINTS_NONE, POINTS_OP, POINTS_DONE };

static void sleep_on_core(uint64_t ns, enum points points)
{
    if (!slack_set) {   /* the default 50 us slack would dwarf short sleeps */
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        slack_set = true;
    }
    uint64_t owed = overslept < ns ? overslept : ns;   /* paid back first */
    overslept -= owed;
    if (points == POINTS_DONE && ns > owed) {   /* parked meanwhile: not counted */
        uint64_t slept = sched_sleep_done(ns - owed);
        if (slept > ns - owed)
            overslept += slept - (ns - owed);
        overslept = overslept < DM_OVERSLEEP_MAX_NS ? overslept : DM_OVERSLEEP_MAX_NS;
        return;
    }
    for (uint64_t left = ns - owed; left;) {
        uint64_t n = left < DM_SLEEP_SLICE_NS ? left : DM_SLEEP_SLICE_NS;
        struct timespec ts = { 0, (long)n };
        uint64_t t0 = now_ns();
        nanosleep(&ts, NULL);   /* EINTR: what elapsed is counted below */
        uint64_t slept = now_ns() - t0;
        if (slept > left) {
            overslept += slept - left;
            overslept = overslept < DM_OVERSLEEP_MAX_NS ? overslept : DM_OVERSLEEP_MAX_NS;
        }
        left -= slept < left ? slept : left;
        if (points == POINTS_OP)
            sched_preempt_point();
    }
}

uint64_t dm_compute_charge(uint64_t ns_spent)
{
    if (model.core_speed <= 1.0)
        return 0;
    uint64_t extra = (uint64_t)((model.core_speed - 1.0) * (double)ns_spent);
    /* Held, not spun (invariant 2): in slices, each a preemption point
     * (sched.h), where the item that runs the step may be parked. */
    sleep_on_core(extra, POINTS_OP);
    return extra;
}

void dm_meter_begin(struct dm_meter *m)
{
    m->cpu0 = 0;
    if (model.core_speed <= 1.0)
        return;
    m->compute_cpu = 0;
    m->prev = meter;
    meter = m;
    m->cpu0 = thread_cpu_ns();
    m->cpu0 += !m->cpu0;   /* 0 means "not metering" */
}

/* Ends m and sleeps its extra (dm_meter_end). An innermost meter whose
 * enclosing command goes on after it sleeps at ordinary preemption
 * points (the enclosing command may hold locks); an outermost one at
 * sched_preempt_point_done (its work is done), unless handed_off. */
static uint64_t meter_end(struct dm_meter *m, uint64_t *measured, bool handed_off)
{
    if (measured)
        *measured = 0;
    if (!m->cpu0)
        return 0;
    uint64_t used = thread_cpu_ns() - m->cpu0;
    uint64_t work = used > m->compute_cpu ? used - m->compute_cpu : 0;
    meter = m->prev;
    if (meter)   /* the enclosing command did not do this work itself */
        meter->compute_cpu += used;
    uint64_t extra = (uint64_t)((model.core_speed - 1.0) * (double)work);
    __atomic_add_fetch(&total_measured, work, __ATOMIC_RELAXED);
    __atomic_add_fetch(&total_extra, extra, __ATOMIC_RELAXED);
    sleep_on_core(extra, handed_off ? POINTS_NONE : meter ? POINTS_OP : POINTS_DONE);
    if (measured)
        *measured = work;
    return extra;
}

uint64_t dm_meter_end(struct dm_meter *m, uint64_t *measured)
{
    return meter_end(m, measured, false);
}

uint64_t dm_meter_end_handed_off(struct dm_meter *m)
{
    return meter_end(m, NULL, true);
}

void dm_meter_totals(uint64_t *measured_ns, uint64_t *extra_ns)
{
    *measured_ns = __atomic_load_n(&total_measured, __ATOMIC_RELAXED);
    *extra_ns = __atomic_load_n(&total_extra, __ATOMIC_RELAXED);
}

void dm_step_begin(struct dm_step *st)
{
    st->cpu0 = 0;
    if (model.core_speed <= 1.0)
        return;
    st->cpu0 = thread_cpu_ns();
    st->cpu0 += !st->cpu0;   /* 0 means "not metering" */
}

/* The step's host work is its thread's CPU time: a host preemption of the
 * thread, or time it was parked or blocked, is not the step's and is not
 * stretched. */
uint64_t dm_step_end(struct dm_step *st)
{
    if (!st->cpu0)
        return 0;
    uint64_t ran = thread_cpu_ns() - st->cpu0;
    uint64_t extra = dm_compute_charge(ran);
    if (meter)
        meter->compute_cpu += thread_cpu_ns() - st->cpu0;
    return extra;
}

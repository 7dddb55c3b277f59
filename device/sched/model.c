/* device/sched/model.c - the device model's timing knobs (see model.h). */
#include "device/sched/model.h"

#include "common/clock.h"
#include "device/sched/sched.h"

#include <errno.h>

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

uint64_t dm_compute_charge(uint64_t ns_spent)
{
    if (model.core_speed <= 1.0)
        return 0;
    uint64_t extra = (uint64_t)((model.core_speed - 1.0) * (double)ns_spent);
    /* In slices, each a preemption point (sched.h): the item that runs
     * the step may be parked between two, and spins the rest after. */
    for (uint64_t left = extra; left;) {
        uint64_t n = left < DM_SPIN_SLICE_NS ? left : DM_SPIN_SLICE_NS;
        dm_spin_ns(n);
        left -= n;
        sched_preempt_point();
    }
    return extra;
}

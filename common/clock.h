/*
 * common/clock.h - clock readings as one 64-bit count of nanoseconds.
 *
 * Latencies, deadlines, spin budgets and the device model's link arrival
 * times all read the clock through here, so every module agrees on the
 * clock and the unit.
 * Invariants:
 *   1. now_ns() reads CLOCK_MONOTONIC: it never goes back, so differences
 *      of two readings are durations.
 *   2. Readings are tv_sec * 1e9 + tv_nsec, which fits 64 bits for ~584
 *      years of either clock.
 */
#ifndef CISC_COMMON_CLOCK_H
#define CISC_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The clock `id` in nanoseconds (CLOCK_REALTIME for wall-clock stamps). */
static inline uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds: the clock for durations and deadlines. */
static inline uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

#endif

/*
 * common/minmax.h - minimum and maximum of two 64-bit integers.
 *
 * Functions rather than MIN()/MAX() macros, so each argument is evaluated
 * once and both arguments convert to the named type: the signedness of a
 * comparison is visible at the call (min64 vs smin64), which matters in
 * the verifier's range arithmetic.
 */
#ifndef CISC_COMMON_MINMAX_H
#define CISC_COMMON_MINMAX_H

#include <stdint.h>

/* The smaller of two unsigned values. */
static inline uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The larger of two unsigned values. */
static inline uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The smaller of two signed values. */
static inline int64_t smin64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The larger of two signed values. */
static inline int64_t smax64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

#endif

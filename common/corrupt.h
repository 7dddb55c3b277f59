/*
 * common/corrupt.h - one way to report corruption.
 *
 * Image, client or program data that breaks an invariant is reported with
 * CISC_CORRUPT(fmt, ...): it records where in our source the problem was
 * detected and a message naming the object (block number, inode, ...),
 * and evaluates to -EUCLEAN so it can be returned directly:
 *
 *     if (crc != stored)
 *         return CISC_CORRUPT("block %llu: checksum mismatch", blk);
 *
 * Invariants:
 *   1. Asserts are never used for data from the image or a client.
 *   2. The last report is kept per thread, so a caller (fsck, the CLI) can
 *      print it: cisc_corrupt_last().
 */
#ifndef CISC_COMMON_CORRUPT_H
#define CISC_COMMON_CORRUPT_H

#include <errno.h>

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

/* Records a corruption report; returns -EUCLEAN. */
int cisc_corrupt_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The calling thread's last report ("" when none), e.g.
 * "block 17: checksum mismatch (device/storagefs/inode.c:212)". */
const char *cisc_corrupt_last(void);

/* The same report without where in our source it was detected ("block
 * 17: checksum mismatch"): what a user sees unless asked to be verbose. */
const char *cisc_corrupt_what(void);

/* Clears the calling thread's last report. */
void cisc_corrupt_clear(void);

#define CISC_CORRUPT(...) cisc_corrupt_report(__FILE__, __LINE__, __VA_ARGS__)

#endif

/*
 * tests/unit/storagefs/sfs_probe.h - the few internal StorageFS calls the
 * tests make, behind a C boundary: the internal headers are C, not
 * written to compile as C++ with every compiler (g++ rejected their C11
 * atomics), so only C includes them (sfs_probe.c).
 */
#ifndef CISC_TESTS_SFS_PROBE_H
#define CISC_TESTS_SFS_PROBE_H

#include <stdbool.h>

struct sfs;

#ifdef __cplusplus
extern "C" {
#endif

/* Commits and checkpoints the journal (jnl_sync_checkpoint).
 * Returns 0 or -errno. */
int sfs_probe_checkpoint(struct sfs *fs);

/* True while blocks freed by uncheckpointed transactions wait to become
 * reusable (alloc_has_pending). */
bool sfs_probe_has_pending(struct sfs *fs);

#ifdef __cplusplus
}
#endif

#endif

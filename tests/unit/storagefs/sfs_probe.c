/* tests/unit/storagefs/sfs_probe.c - see sfs_probe.h. */
#include "sfs_probe.h"

#include "device/storagefs/alloc.h"
#include "device/storagefs/journal.h"
#include "device/storagefs/sfs_int.h"

int sfs_probe_checkpoint(struct sfs *fs)
{
    return jnl_sync_checkpoint(fs->j);
}

bool sfs_probe_has_pending(struct sfs *fs)
{
    return alloc_has_pending(fs);
}

/* device/engine/sysdir.c - creating and finding the hidden system directory
 * (see sysdir.h). */
#include "device/engine/sysdir.h"

#include <errno.h>
#include <sys/stat.h>

/* Looks up dir/name, making it a 0700 root-owned directory if missing
 * and `make`. */
static int subdir(struct sfs *fs, uint64_t dir, const char *name, bool make, uint64_t *ino)
{
    struct sfs_attr a;
    int r = sfs_lookup(fs, dir, name, &a);
    if (r == -ENOENT && make) {
        r = sfs_mkdir(fs, NULL, dir, name, S_IFDIR | 0700, 0, 0, &a);
        if (r == -EEXIST)   /* made meanwhile */
            r = sfs_lookup(fs, dir, name, &a);
    }
    if (!r && !S_ISDIR(a.mode))
        r = -ENOTDIR;
    if (!r)
        *ino = a.ino;
    return r;
}

int sysdir_open(struct sfs *fs, const char *sub, uint64_t *ino)
{
    uint64_t top;
    int r = subdir(fs, SFS_ROOT_INO, SYSDIR_NAME, true, &top);
    return r ? r : subdir(fs, top, sub, true, ino);
}

int sysdir_find(struct sfs *fs, const char *sub, uint64_t *ino)
{
    uint64_t top;
    int r = subdir(fs, SFS_ROOT_INO, SYSDIR_NAME, false, &top);
    return r ? r : subdir(fs, top, sub, false, ino);
}

void sysdir_root_attr(struct sfs *fs, struct sfs_attr *a)
{
    struct sfs_attr s;
    if (a->ino == SFS_ROOT_INO && a->nlink > 2 && !sfs_lookup(fs, SFS_ROOT_INO, SYSDIR_NAME, &s) &&
        S_ISDIR(s.mode))
        a->nlink--;
}

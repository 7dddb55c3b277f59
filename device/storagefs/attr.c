/*
 * device/storagefs/attr.c - attributes and per-inode calls that are not
 * namespace changes: getattr, setattr (including truncate), readlink,
 * readdir, iget/iput and statfs.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "device/storagefs/alloc.h"
#include "device/storagefs/dir.h"
#include "device/storagefs/extent.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"
#include "device/storagefs/xattr.h"

#define TRIM_EXTENTS 8u

static struct timespec ts(int64_t s, uint32_t ns)
{
    struct timespec t = {(time_t)s, (long)ns};
    return t;
}

void sfs_fill_attr(const struct sfs_inode *ip, struct sfs_attr *a)
{
    const struct sfs_dinode *d = &ip->d;
    a->ino = ip->ino;
    a->generation = d->generation;
    a->mode = d->mode;
    a->nlink = d->nlink;
    a->uid = d->uid;
    a->gid = d->gid;
    a->rdev = d->rdev;
    a->size = d->size;
    a->blocks = d->blocks * (SFS_BSIZE / 512);
    a->atime = ts(d->atime, d->atime_ns);
    a->mtime = ts(d->mtime, d->mtime_ns);
    a->ctime = ts(d->ctime, d->ctime_ns);
    a->btime = ts(d->btime, d->btime_ns);
}

int sfs_getattr_ino(struct sfs *fs, struct sfs_inode *ip, struct sfs_attr *attr)
{
    (void)fs;
    pthread_rwlock_rdlock(&ip->rw);
    sfs_fill_attr(ip, attr);
    pthread_rwlock_unlock(&ip->rw);
    return 0;
}

int sfs_getattr(struct sfs *fs, uint64_t ino, struct sfs_attr *attr)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    sfs_getattr_ino(fs, ip, attr);
    inode_put(fs, ip);
    return 0;
}

/* ---- setattr ----------------------------------------------------------------- */

#define SET_KNOWN (SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID | SFS_SET_SIZE | SFS_SET_ATIME | \
                   SFS_SET_MTIME | SFS_SET_ATIME_NOW | SFS_SET_MTIME_NOW | SFS_SET_CTIME)

static bool nsec_ok(const struct timespec *t)
{
    return t->tv_nsec >= 0 && t->tv_nsec < 1000000000L;
}

static int check_request(const struct sfs_attr *in, unsigned valid)
{
    if (valid & ~SET_KNOWN)
        return -EINVAL;
    if (((valid & SFS_SET_ATIME) && !nsec_ok(&in->atime)) ||
        ((valid & SFS_SET_MTIME) && !nsec_ok(&in->mtime)) ||
        ((valid & SFS_SET_CTIME) && !nsec_ok(&in->ctime)))
        return -EINVAL;
    return 0;
}

static void set_time(int64_t *s, uint32_t *ns, const struct timespec *t)
{
    *s = t->tv_sec;
    *ns = (uint32_t)t->tv_nsec;
}

static void apply_times(struct sfs_dinode *d, const struct sfs_attr *in, unsigned valid,
                        const struct timespec *now)
{
    if (valid & SFS_SET_ATIME_NOW)
        set_time(&d->atime, &d->atime_ns, now);
    else if (valid & SFS_SET_ATIME)
        set_time(&d->atime, &d->atime_ns, &in->atime);
    if (valid & SFS_SET_MTIME_NOW)
        set_time(&d->mtime, &d->mtime_ns, now);
    else if (valid & SFS_SET_MTIME)
        set_time(&d->mtime, &d->mtime_ns, &in->mtime);
    else if (valid & SFS_SET_SIZE)
        set_time(&d->mtime, &d->mtime_ns, now);
    set_time(&d->ctime, &d->ctime_ns, valid & SFS_SET_CTIME ? &in->ctime : now);
}

/* Returns 1 when a shrink left extents to trim in later handles. */
static int setattr_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                          const struct sfs_attr *in, unsigned valid)
{
    struct sfs_dinode *d = &ip->d;
    int more = 0;
    if ((valid & SFS_SET_SIZE) && !S_ISREG(d->mode))
        return S_ISDIR(d->mode) ? -EISDIR : -EINVAL;
    if ((valid & SFS_SET_SIZE) && (more = file_set_size(fs, h, ip, in->size, TRIM_EXTENTS)) < 0)
        return more;
    bool perms = (valid & SFS_SET_MODE) && ((d->mode ^ in->mode) & 0777);
    if (valid & SFS_SET_MODE)
        d->mode = (d->mode & S_IFMT) | (in->mode & 07777);
    if (valid & SFS_SET_UID)
        d->uid = in->uid;
    if (valid & SFS_SET_GID)
        d->gid = in->gid;
    struct timespec now = sfs_now();
    apply_times(d, in, valid, &now);
    int r = perms ? acl_chmod_locked(fs, h, ip) : 0;   /* acl.h invariant 1 */
    if (!r)
        r = inode_dirty(h, ip);
    return r ? r : more;
}

int sfs_setattr_ino(struct sfs *fs, struct sfs_txn *tx, struct sfs_inode *ip,
                    const struct sfs_attr *in, unsigned valid, struct sfs_attr *out)
{
    int r = check_request(in, valid);
    if (r)
        return r;
    for (bool first = true;; first = false) {
        struct jnl_handle *h;
        /* + 2: a journaled tail zeroing when the size grows (jdata.h) */
        r = sfs_op_begin(fs, tx, ext_credits(ip, 2 * TRIM_EXTENTS) + 8 + 2 +
                                     ((valid & SFS_SET_MODE) ? ACL_CHMOD_CREDITS : 0), &h);
        if (r)
            break;
        pthread_rwlock_wrlock(&ip->rw);
        r = first ? setattr_locked(fs, h, ip, in, valid) : file_trim_tail(fs, h, ip, TRIM_EXTENTS);
        if (r >= 0 && out)
            sfs_fill_attr(ip, out);
        pthread_rwlock_unlock(&ip->rw);
        sfs_op_end(fs, h);
        if (r != 1)
            break;
    }
    return r;
}

int sfs_setattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino,
                const struct sfs_attr *in, unsigned valid, struct sfs_attr *out)
{
    int r = check_request(in, valid);
    struct sfs_inode *ip;
    if (r || (r = inode_get(fs, ino, &ip)) != 0)
        return r;
    r = sfs_setattr_ino(fs, tx, ip, in, valid, out);
    inode_put(fs, ip);
    return r;
}

/* ---- readlink, readdir ----------------------------------------------------- */

ssize_t sfs_readlink(struct sfs *fs, uint64_t ino, char *buf, size_t size)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    ssize_t n;
    size_t len = ip->d.size < size ? (size_t)ip->d.size : size;
    if (!S_ISLNK(ip->d.mode))
        n = -EINVAL;
    else if (ip->d.flags & SFS_IFL_INLINE_DATA)
        n = len <= SFS_IDATA_SIZE ? (memcpy(buf, ip->d.data, len), (ssize_t)len) : -EUCLEAN;
    else
        n = file_read_locked(fs, ip, 0, buf, len);
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    return n;
}

int sfs_readdir(struct sfs *fs, uint64_t dir, uint64_t cookie, sfs_dirent_fn fn, void *arg)
{
    struct sfs_inode *dp;
    int r = inode_get(fs, dir, &dp);
    if (r)
        return r;
    pthread_rwlock_rdlock(&dp->rw);
    r = S_ISDIR(dp->d.mode) ? dir_iterate(fs, dp, cookie, fn, arg) : -ENOTDIR;
    pthread_rwlock_unlock(&dp->rw);
    inode_put(fs, dp);
    return r;
}

/* ---- references -------------------------------------------------------------- */

int sfs_iget(struct sfs *fs, uint64_t ino)
{
    return inode_open(fs, ino, NULL);
}

int sfs_iget_ino(struct sfs *fs, uint64_t ino, struct sfs_inode **out)
{
    return inode_open(fs, ino, out);
}

/* Drops an sfs_iget reference of ip, which the caller keeps in memory
 * with a ref of its own; frees the inode when it was the last reference
 * to an unlinked file. */
static void iput_held(struct sfs *fs, struct sfs_inode *ip)
{
    if (inode_close(fs, ip)) {
        pthread_rwlock_rdlock(&ip->rw);
        bool dead = ip->d.nlink == 0;
        pthread_rwlock_unlock(&ip->rw);
        if (dead && !fs->rdonly && inode_claim_reap(fs, ip))
            file_reap(fs, ip);   /* on error it stays an orphan: next mount frees it */
    }
}

void sfs_iput(struct sfs *fs, uint64_t ino)
{
    struct sfs_inode *ip;
    if (inode_get(fs, ino, &ip))
        return;
    iput_held(fs, ip);
    inode_put(fs, ip);
}

void sfs_iput_ino(struct sfs *fs, struct sfs_inode *ip)
{
    if (inode_close_unless_last(fs, ip))
        return;   /* another reference keeps it: nothing to free */
    inode_hold(fs, ip);   /* our reference still keeps the struct until here */
    iput_held(fs, ip);
    inode_put(fs, ip);
}

uint64_t sfs_ino_number(const struct sfs_inode *ip)
{
    return ip->ino;
}

/* ---- statfs ------------------------------------------------------------------ */

int sfs_statfs(struct sfs *fs, struct sfs_statfs *st)
{
    st->block_size = SFS_BSIZE;
    st->blocks = fs->sb.nblocks;
    st->inodes = fs->sb.ninodes - 1;
    st->name_max = SFS_NAME_MAX;
    if (fs->al) {   /* not the metadata reserve; no lock: a fused op asks per commit */
        alloc_counts_now(fs, &st->blocks_free, &st->inodes_free);
    } else {
        st->blocks_free = fs->sb.free_blocks;
        st->inodes_free = fs->sb.free_inodes;
    }
    return 0;
}

/*
 * device/storagefs/namei.c - namespace operations: lookup, mknod, mkdir,
 * symlink, link, unlink, rmdir and rename.
 *
 * Every change starts its handle first, then write-locks the inodes it
 * touches in ascending inode order. Entries found before locking are
 * looked up again once locked; if they changed, the operation retries.
 * Cross-directory renames hold fs->rename_mu, which keeps every parent
 * pointer stable while the "not into its own subtree" check walks up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device/storagefs/dir.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"
#include "device/storagefs/xattr.h"

#define LINK_MAX_COUNT 65000u
#define CREATE_CREDITS (40u + 2 * ACL_CHMOD_CREDITS)   /* + two inherited ACLs */
#define REMOVE_CREDITS 80u
#define RENAME_CREDITS 96u
#define RETRIES 16

/* ---- locking helpers ------------------------------------------------------- */

struct lockset {
    struct sfs_inode *v[4];
    int n;
};

static void lockset_add(struct lockset *ls, struct sfs_inode *ip)
{
    if (!ip)
        return;
    for (int i = 0; i < ls->n; i++)
        if (ls->v[i] == ip)
            return;
    int i = ls->n++;
    while (i > 0 && ls->v[i - 1]->ino > ip->ino) {
        ls->v[i] = ls->v[i - 1];
        i--;
    }
    ls->v[i] = ip;
}

static void lockset_lock(struct lockset *ls)
{
    for (int i = 0; i < ls->n; i++)
        pthread_rwlock_wrlock(&ls->v[i]->rw);
}

static void lockset_unlock(struct lockset *ls)
{
    for (int i = ls->n - 1; i >= 0; i--)
        pthread_rwlock_unlock(&ls->v[i]->rw);
}

static void touch(struct sfs_inode *ip, bool mtime)
{
    struct timespec now = sfs_now();
    ip->d.ctime = now.tv_sec;
    ip->d.ctime_ns = (uint32_t)now.tv_nsec;
    if (mtime) {
        ip->d.mtime = now.tv_sec;
        ip->d.mtime_ns = (uint32_t)now.tv_nsec;
    }
}

static void put_all(struct sfs *fs, struct sfs_inode **v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i])
            inode_put(fs, v[i]);
}

/* Looks name up in dir under its read lock. */
static int find_entry(struct sfs *fs, struct sfs_inode *dp, const char *name, size_t len,
                      struct dir_hit *hit)
{
    pthread_rwlock_rdlock(&dp->rw);
    int r = !S_ISDIR(dp->d.mode) ? -ENOTDIR : dir_find(fs, dp, name, len, hit);
    pthread_rwlock_unlock(&dp->rw);
    return r;
}

static int usable_dir(const struct sfs_inode *dp)
{
    if (!S_ISDIR(dp->d.mode))
        return -ENOTDIR;
    return dp->d.nlink == 0 ? -ENOENT : 0;
}

/* ip lost its last link inside h: frees it now when it is small and
 * unused, else parks it on the orphan list (freed by the caller after its
 * handle when *later, or at the last sfs_iput). */
static int last_link_gone(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                          bool *later)
{
    *later = false;
    if (!inode_claim_reap(fs, ip))
        return orphan_add(fs, h, ip);
    if (file_reap_is_small(ip))
        return file_reap_small(fs, h, ip);
    *later = true;
    return orphan_add(fs, h, ip);
}

/* ---- lookup ---------------------------------------------------------------- */

int sfs_lookup(struct sfs *fs, uint64_t dir, const char *name, struct sfs_attr *attr)
{
    struct sfs_inode *dp;
    int r = inode_get(fs, dir, &dp);
    if (r)
        return r;
    uint64_t ino = 0;
    bool dot = !strcmp(name, "."), dotdot = !strcmp(name, "..");
    pthread_rwlock_rdlock(&dp->rw);
    if (!S_ISDIR(dp->d.mode)) {
        r = -ENOTDIR;
    } else if (dot || dotdot) {
        ino = dot ? dp->ino : dp->d.parent;
    } else {
        size_t len;
        struct dir_hit hit;
        r = dir_name_ok(name, &len);
        if (r == 0 && (r = dir_find(fs, dp, name, len, &hit)) == 0)
            ino = hit.ino;
    }
    pthread_rwlock_unlock(&dp->rw);
    inode_put(fs, dp);
    return r ? r : sfs_getattr(fs, ino, attr);
}

/* ---- creation ---------------------------------------------------------------- */

struct newnode {
    const char *name;
    size_t len;
    uint32_t mode, uid, gid;
    uint64_t rdev;
    const char *target;          /* symlinks */
    size_t tlen;
};

static int set_symlink(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       const struct newnode *nn)
{
    if (nn->tlen > SFS_IDATA_SIZE)
        return file_write_symlink(fs, h, ip, nn->target, nn->tlen);
    memset(ip->d.data, 0, SFS_IDATA_SIZE);
    memcpy(ip->d.data, nn->target, nn->tlen);
    ip->d.flags |= SFS_IFL_INLINE_DATA;
    ip->d.size = nn->tlen;
    return 0;
}

static int create_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp,
                         const struct newnode *nn, struct sfs_attr *attr)
{
    struct dir_hit hit;
    int r = usable_dir(dp);
    if (r)
        return r;
    r = dir_find(fs, dp, nn->name, nn->len, &hit);
    if (r != -ENOENT)
        return r ? r : -EEXIST;
    bool isdir = S_ISDIR(nn->mode);
    if (isdir && dp->d.nlink >= LINK_MAX_COUNT)
        return -EMLINK;
    struct sfs_inode *ip;
    r = inode_create(fs, h, dp->ino, nn->mode, nn->uid, nn->gid, nn->rdev, &ip);
    if (r)
        return r;
    if (isdir)
        ip->d.parent = dp->ino;
    if (S_ISLNK(nn->mode))
        r = set_symlink(fs, h, ip, nn);
    else
        r = acl_create_locked(fs, h, dp, ip);   /* acl.h invariant 3 */
    if (!r)
        r = dir_add(fs, h, dp, nn->name, nn->len, ip->ino, dir_type_of(nn->mode));
    if (r) {
        ip->d.nlink = 0;
        file_reap_small(fs, h, ip);      /* undo: nothing points at it */
        inode_put(fs, ip);
        return r;
    }
    dp->d.nlink += isdir;
    touch(dp, true);
    r = inode_dirty(h, dp);
    if (attr)
        sfs_fill_attr(ip, attr);
    inode_put(fs, ip);
    return r;
}

static int create(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, struct newnode *nn,
                  struct sfs_attr *attr)
{
    int r = dir_name_ok(nn->name, &nn->len);
    if (r)
        return r;
    struct jnl_handle *h;
    r = sfs_op_begin(fs, tx, CREATE_CREDITS, &h);
    if (r)
        return r;
    struct sfs_inode *dp;
    r = inode_get(fs, dir, &dp);
    if (r == 0) {
        pthread_rwlock_wrlock(&dp->rw);
        r = create_locked(fs, h, dp, nn, attr);
        pthread_rwlock_unlock(&dp->rw);
        inode_put(fs, dp);
    }
    sfs_op_end(fs, h);
    return r;
}

int sfs_mknod(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
              struct sfs_attr *attr)
{
    if ((mode & S_IFMT) == 0)
        mode |= S_IFREG;
    if (S_ISDIR(mode) || S_ISLNK(mode) || !sfs_mode_valid(mode))
        return -EINVAL;
    bool dev = S_ISCHR(mode) || S_ISBLK(mode);
    struct newnode nn = {name, 0, mode, uid, gid, dev ? rdev : 0, NULL, 0};
    return create(fs, tx, dir, &nn, attr);
}

int sfs_mkdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint32_t uid, uint32_t gid, struct sfs_attr *attr)
{
    struct newnode nn = {name, 0, S_IFDIR | (mode & 07777), uid, gid, 0, NULL, 0};
    return create(fs, tx, dir, &nn, attr);
}

int sfs_symlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
                const char *target, uint32_t uid, uint32_t gid, struct sfs_attr *attr)
{
    size_t tlen = strnlen(target, SFS_SYMLINK_MAX + 1);
    if (tlen == 0)
        return -ENOENT;
    if (tlen > SFS_SYMLINK_MAX)
        return -ENAMETOOLONG;
    struct newnode nn = {name, 0, S_IFLNK | 0777, uid, gid, 0, target, tlen};
    return create(fs, tx, dir, &nn, attr);
}

/* ---- unnamed files (O_TMPFILE) ----------------------------------------------------- */

/* Makes the file in dp (locked), unnamed: an orphan from the start, so a
 * crash before its last reference goes frees it at the next mount. */
static int tmpfile_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp,
                          const struct newnode *nn, struct sfs_attr *attr)
{
    int r = usable_dir(dp);
    if (r)
        return r;
    struct sfs_inode *ip;
    r = inode_create(fs, h, dp->ino, nn->mode, nn->uid, nn->gid, 0, &ip);
    if (r)
        return r;
    ip->d.nlink = 0;
    ip->linkable = true;
    r = acl_create_locked(fs, h, dp, ip);   /* acl.h invariant 3 */
    if (!r)
        r = orphan_add(fs, h, ip);
    if (!r)
        r = inode_open(fs, ip->ino, NULL); /* the caller's reference */
    if (r) {
        file_reap_small(fs, h, ip);          /* undo: nothing points at it */
        inode_put(fs, ip);
        return r;
    }
    if (attr)
        sfs_fill_attr(ip, attr);
    inode_put(fs, ip);
    return 0;
}

int sfs_tmpfile(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, uint32_t mode,
                uint32_t uid, uint32_t gid, struct sfs_attr *attr)
{
    if ((mode & S_IFMT) == 0)
        mode |= S_IFREG;
    if (!S_ISREG(mode) || !sfs_mode_valid(mode))
        return -EINVAL;
    struct newnode nn = {"", 0, mode, uid, gid, 0, NULL, 0};
    struct jnl_handle *h;
    int r = sfs_op_begin(fs, tx, CREATE_CREDITS, &h);
    if (r)
        return r;
    struct sfs_inode *dp;
    r = inode_get(fs, dir, &dp);
    if (r == 0) {
        pthread_rwlock_wrlock(&dp->rw);
        r = tmpfile_locked(fs, h, dp, &nn, attr);
        pthread_rwlock_unlock(&dp->rw);
        inode_put(fs, dp);
    }
    sfs_op_end(fs, h);
    return r;
}

/* ---- link ------------------------------------------------------------------------ */

/* An inode without links may get one only if sfs_tmpfile made it and it
 * is still referenced (not being freed): its first name. */
static int relink_check(struct sfs *fs, struct sfs_inode *ip)
{
    if (ip->d.nlink != 0)
        return 0;
    return ip->linkable && ip->orphan && inode_opened(fs, ip) ? 1 : -ENOENT;
}

static int link_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       struct sfs_inode *dp, const char *name, size_t len,
                       struct sfs_attr *attr)
{
    int r = usable_dir(dp);
    if (r)
        return r;
    int first = relink_check(fs, ip);
    if (first < 0)
        return first;
    if (ip->d.nlink >= LINK_MAX_COUNT)
        return -EMLINK;
    if (first && (r = orphan_remove(fs, h, ip)) != 0)   /* named: not reaped at mount */
        return r;
    r = dir_add(fs, h, dp, name, len, ip->ino, dir_type_of(ip->d.mode));
    if (r) {
        if (first)
            orphan_add(fs, h, ip);      /* still unnamed */
        return r;
    }
    ip->linkable = false;               /* as Linux's I_LINKABLE: once */
    ip->d.nlink++;
    touch(ip, false);
    touch(dp, true);
    r = inode_dirty(h, ip);
    if (!r)
        r = inode_dirty(h, dp);
    if (attr)
        sfs_fill_attr(ip, attr);
    return r;
}

int sfs_link(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t newdir,
             const char *newname, struct sfs_attr *attr)
{
    size_t len;
    int r = dir_name_ok(newname, &len);
    if (r)
        return r;
    struct jnl_handle *h;
    if ((r = sfs_op_begin(fs, tx, CREATE_CREDITS, &h)) != 0)
        return r;
    struct sfs_inode *v[2] = {NULL, NULL};
    r = inode_get(fs, ino, &v[0]);
    if (r == 0)
        r = inode_get(fs, newdir, &v[1]);
    if (r == 0 && S_ISDIR(v[0]->d.mode))
        r = -EPERM;
    if (r == 0) {
        struct lockset ls = {{NULL}, 0};
        lockset_add(&ls, v[0]);
        lockset_add(&ls, v[1]);
        lockset_lock(&ls);
        r = link_locked(fs, h, v[0], v[1], newname, len, attr);
        lockset_unlock(&ls);
    }
    put_all(fs, v, 2);
    sfs_op_end(fs, h);
    return r;
}

/* ---- unlink / rmdir ------------------------------------------------------------- */

static int remove_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp,
                         struct sfs_inode *ip, const struct dir_hit *hit, bool rmdir,
                         bool *later)
{
    if (rmdir && !S_ISDIR(ip->d.mode))
        return -ENOTDIR;
    if (!rmdir && S_ISDIR(ip->d.mode))
        return -EISDIR;
    if (rmdir && ip->d.size != 0)
        return -ENOTEMPTY;
    int r = dir_del(fs, h, dp, hit->key);
    if (r)
        return r;
    if (rmdir) {
        ip->d.nlink = 0;
        dp->d.nlink--;
    } else {
        ip->d.nlink--;
    }
    touch(ip, false);
    touch(dp, true);
    if ((r = inode_dirty(h, ip)) != 0 || (r = inode_dirty(h, dp)) != 0)
        return r;
    return ip->d.nlink ? 0 : last_link_gone(fs, h, ip, later);
}

/* Finds name, locks dir and victim, checks the entry did not change.
 * On 0 both are locked (ls) and *ip holds a ref. */
static int lock_victim(struct sfs *fs, struct sfs_inode *dp, const char *name, size_t len,
                       struct sfs_inode **ip, struct dir_hit *hit, struct lockset *ls)
{
    for (int tries = 0; tries < RETRIES; tries++) {
        *ip = NULL;
        int r = find_entry(fs, dp, name, len, hit);
        if (r == 0)
            r = inode_get(fs, hit->ino, ip);
        if (r) {
            *ip = NULL;
            return r;
        }
        ls->n = 0;
        lockset_add(ls, dp);
        lockset_add(ls, *ip);
        lockset_lock(ls);
        struct dir_hit again;
        if (dir_find(fs, dp, name, len, &again) == 0 && again.ino == hit->ino &&
            again.key == hit->key)
            return 0;
        lockset_unlock(ls);
        inode_put(fs, *ip);
        *ip = NULL;
    }
    return -EAGAIN;
}

static int remove_entry(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
                        bool rmdir)
{
    size_t len;
    int r = dir_name_ok(name, &len);
    if (r)
        return r == -EINVAL && rmdir && !strcmp(name, "..") ? -ENOTEMPTY : r;
    struct jnl_handle *h;
    if ((r = sfs_op_begin(fs, tx, REMOVE_CREDITS, &h)) != 0)
        return r;
    struct sfs_inode *dp, *ip = NULL;
    bool later = false;
    if ((r = inode_get(fs, dir, &dp)) == 0) {
        struct dir_hit hit;
        struct lockset ls = {{NULL}, 0};
        r = lock_victim(fs, dp, name, len, &ip, &hit, &ls);
        if (r == 0) {
            r = remove_locked(fs, h, dp, ip, &hit, rmdir, &later);
            lockset_unlock(&ls);
        }
        inode_put(fs, dp);
    }
    sfs_op_end(fs, h);
    if (later)
        file_reap(fs, ip);       /* errors leave it on the orphan list */
    if (ip)
        inode_put(fs, ip);
    return r;
}

int sfs_unlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name)
{
    return remove_entry(fs, tx, dir, name, false);
}

int sfs_rmdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name)
{
    return remove_entry(fs, tx, dir, name, true);
}

/* ---- rename ------------------------------------------------------------------------ */

struct ren {
    struct sfs *fs;
    struct jnl_handle *h;
    struct sfs_inode *od, *nd, *s, *d;
    const char *on, *nn;
    size_t ol, nl;
    struct dir_hit sh, dh;
    unsigned flags;
    bool later;
};

/* True when a is x or one of x's ancestors (rename_mu held). */
static int is_ancestor(struct sfs *fs, struct sfs_inode *a, struct sfs_inode *x)
{
    uint64_t cur = x->ino, steps = 0;
    while (cur != a->ino) {
        if (cur == SFS_ROOT_INO || ++steps > fs->sb.ninodes)
            return 0;
        struct sfs_inode *ip;
        int r = inode_get(fs, cur, &ip);
        if (r)
            return r;
        cur = ip->d.parent;      /* stable: only renames under rename_mu change it */
        inode_put(fs, ip);
    }
    return 1;
}

static int rename_checks(struct ren *rn)
{
    int r = usable_dir(rn->od);
    if (!r)
        r = usable_dir(rn->nd);
    if (r)
        return r;
    if ((rn->flags & SFS_RENAME_EXCHANGE) && !rn->d)
        return -ENOENT;
    if ((rn->flags & SFS_RENAME_NOREPLACE) && rn->d)
        return -EEXIST;
    bool sdir = S_ISDIR(rn->s->d.mode), ddir = rn->d && S_ISDIR(rn->d->d.mode);
    if (rn->od != rn->nd) {
        if (sdir && (r = is_ancestor(rn->fs, rn->s, rn->nd)) != 0)
            return r < 0 ? r : -EINVAL;
        if ((rn->flags & SFS_RENAME_EXCHANGE) && ddir &&
            (r = is_ancestor(rn->fs, rn->d, rn->od)) != 0)
            return r < 0 ? r : -EINVAL;
    }
    if ((rn->flags & SFS_RENAME_EXCHANGE) || !rn->d)
        return sdir && !rn->d && rn->od != rn->nd && rn->nd->d.nlink >= LINK_MAX_COUNT
                   ? -EMLINK : 0;
    if (sdir && !ddir)
        return -ENOTDIR;
    if (!sdir && ddir)
        return -EISDIR;
    return ddir && rn->d->d.size ? -ENOTEMPTY : 0;
}

static int dirty_all(struct ren *rn)
{
    struct sfs_inode *v[4] = {rn->od, rn->nd, rn->s, rn->d};
    for (int i = 0; i < 4; i++) {
        int r = v[i] ? inode_dirty(rn->h, v[i]) : 0;
        if (r)
            return r;
    }
    return 0;
}

/* Moves the parent link of a directory that changed directories. */
static void reparent(struct sfs_inode *ip, struct sfs_inode *from, struct sfs_inode *to)
{
    if (!S_ISDIR(ip->d.mode) || from == to)
        return;
    from->d.nlink--;
    to->d.nlink++;
    ip->d.parent = to->ino;
}

static int do_exchange(struct ren *rn)
{
    struct sfs *fs = rn->fs;
    int r = dir_set(fs, rn->h, rn->od, rn->sh.key, rn->on, rn->ol, rn->d->ino,
                    dir_type_of(rn->d->d.mode));
    if (!r)
        r = dir_set(fs, rn->h, rn->nd, rn->dh.key, rn->nn, rn->nl, rn->s->ino,
                    dir_type_of(rn->s->d.mode));
    if (r)
        return r;
    reparent(rn->s, rn->od, rn->nd);
    reparent(rn->d, rn->nd, rn->od);
    touch(rn->s, false);
    touch(rn->d, false);
    touch(rn->od, true);
    touch(rn->nd, true);
    return dirty_all(rn);
}

/* The replaced inode d loses the entry that now names s. */
static int drop_target(struct ren *rn)
{
    struct sfs_inode *d = rn->d;
    if (S_ISDIR(d->d.mode)) {
        d->d.nlink = 0;
        rn->nd->d.nlink--;
    } else {
        d->d.nlink--;
    }
    touch(d, false);
    int r = inode_dirty(rn->h, d);
    if (!r && d->d.nlink == 0)
        r = last_link_gone(rn->fs, rn->h, d, &rn->later);
    return r;
}

static int do_move(struct ren *rn)
{
    struct sfs *fs = rn->fs;
    uint8_t type = dir_type_of(rn->s->d.mode);
    int r = rn->d ? dir_set(fs, rn->h, rn->nd, rn->dh.key, rn->nn, rn->nl, rn->s->ino, type)
                  : dir_add(fs, rn->h, rn->nd, rn->nn, rn->nl, rn->s->ino, type);
    if (!r)
        r = dir_del(fs, rn->h, rn->od, rn->sh.key);
    if (!r && rn->d)
        r = drop_target(rn);
    if (r)
        return r;
    reparent(rn->s, rn->od, rn->nd);
    touch(rn->s, false);
    touch(rn->od, true);
    touch(rn->nd, true);
    return dirty_all(rn);
}

static int rename_locked(struct ren *rn)
{
    if ((rn->flags & SFS_RENAME_NOREPLACE) && rn->d)
        return -EEXIST;
    if (rn->d == rn->s)
        return 0;                /* two names of one inode: nothing to do */
    int r = rename_checks(rn);
    if (r)
        return r;
    return rn->flags & SFS_RENAME_EXCHANGE ? do_exchange(rn) : do_move(rn);
}

/* Looks both names up, locks everything, re-checks; runs the rename. */
static int rename_attempt(struct ren *rn, struct lockset *ls)
{
    struct sfs *fs = rn->fs;
    rn->s = rn->d = NULL;
    int r = find_entry(fs, rn->od, rn->on, rn->ol, &rn->sh);
    if (r == 0)
        r = inode_get(fs, rn->sh.ino, &rn->s);
    int rd = r ? r : find_entry(fs, rn->nd, rn->nn, rn->nl, &rn->dh);
    if (rd == 0)
        rd = inode_get(fs, rn->dh.ino, &rn->d);
    if (r || (rd && rd != -ENOENT))
        return r ? r : rd;
    ls->n = 0;
    struct sfs_inode *v[4] = {rn->od, rn->nd, rn->s, rn->d};
    for (int i = 0; i < 4; i++)
        lockset_add(ls, v[i]);
    lockset_lock(ls);
    struct dir_hit a, b;
    bool same = dir_find(fs, rn->od, rn->on, rn->ol, &a) == 0 && a.key == rn->sh.key &&
                a.ino == rn->sh.ino;
    int rb = dir_find(fs, rn->nd, rn->nn, rn->nl, &b);
    same = same && (rn->d ? rb == 0 && b.key == rn->dh.key && b.ino == rn->dh.ino
                          : rb == -ENOENT);
    r = same ? rename_locked(rn) : -EAGAIN;
    lockset_unlock(ls);
    return r;
}

static int rename_run(struct ren *rn)
{
    int r = -EAGAIN;
    for (int tries = 0; tries < RETRIES && r == -EAGAIN; tries++) {
        struct lockset ls = {{NULL}, 0};
        r = rename_attempt(rn, &ls);
        if (r == -EAGAIN) {      /* entries changed under us: drop and retry */
            if (rn->s)
                inode_put(rn->fs, rn->s);
            if (rn->d)
                inode_put(rn->fs, rn->d);
            rn->s = rn->d = NULL;
        }
    }
    return r;
}

int sfs_rename(struct sfs *fs, struct sfs_txn *tx, uint64_t olddir, const char *oldname,
               uint64_t newdir, const char *newname, unsigned flags)
{
    struct ren rn = {.fs = fs, .on = oldname, .nn = newname, .flags = flags};
    int r = dir_name_ok(oldname, &rn.ol);
    if (!r)
        r = dir_name_ok(newname, &rn.nl);
    if (!r && ((flags & ~(SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE)) ||
               flags == (SFS_RENAME_NOREPLACE | SFS_RENAME_EXCHANGE)))
        r = -EINVAL;
    if (r || (r = sfs_op_begin(fs, tx, RENAME_CREDITS, &rn.h)) != 0)
        return r;
    r = inode_get(fs, olddir, &rn.od);
    if (!r && (r = inode_get(fs, newdir, &rn.nd)) != 0)
        inode_put(fs, rn.od);
    if (r) {
        sfs_op_end(fs, rn.h);
        return r;
    }
    bool cross = olddir != newdir;
    if (cross)
        pthread_mutex_lock(&fs->rename_mu);
    r = rename_run(&rn);
    if (cross)
        pthread_mutex_unlock(&fs->rename_mu);
    sfs_op_end(fs, rn.h);
    if (rn.later)
        file_reap(fs, rn.d);     /* errors leave it on the orphan list */
    struct sfs_inode *v[4] = {rn.od, rn.nd, rn.s, rn.d};
    put_all(fs, v, 4);
    return r;
}

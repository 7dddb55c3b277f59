/*
 * device/engine/engine_ops.c - one function per opcode: check the caller's
 * permission, call StorageFS, fill the command's results.
 *
 * Checks read the attributes of the inodes involved and then act; the
 * kernel serialises namespace changes on a directory for the FUSE door
 * (it holds the directory lock), so the check and the change see the same
 * directory. Returned errors are what the POSIX call would return.
 */
#include "device/engine/engine_int.h"
#include "device/engine/perm.h"
#include "device/engine/sysdir.h"
#include "device/storagefs/acl.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

/* A name a client may use in directory dir: hidden_err for the device's
 * system directory (device/engine/sysdir.h). */
static int check_name(uint64_t dir, const char *name, int hidden_err)
{
    if (!name || !*name || strchr(name, '/'))
        return -EINVAL;
    if (strlen(name) > SFS_NAME_MAX)
        return -ENAMETOOLONG;
    return sysdir_check(dir, name, hidden_err);
}

static int dir_attr(struct engine *e, uint64_t ino, struct sfs_attr *a)
{
    int r = sfs_getattr(e->fs, ino, a);
    if (!r && !S_ISDIR(a->mode))
        r = -ENOTDIR;
    return r;
}

/* Handle fh, which must be a file (not a directory) open for `mask`. */
static int file_handle(struct engine *e, struct eng_cmd *c, uint64_t fh, int mask,
                       struct hdl *h)
{
    int r = hdl_get(eng_hdl(e, c), fh, h);
    if (r)
        return r;
    if (h->dir)
        return -EISDIR;
    uint32_t acc = h->flags & O_ACCMODE;
    if ((mask & R_OK) && acc == O_WRONLY)
        return -EBADF;
    if ((mask & W_OK) && acc == O_RDONLY)
        return -EBADF;
    return 0;
}

/* Striped inode locks (engine_int.h): shared for data reads and writes,
 * exclusive for appends and size changes, so a fused op that holds a
 * stripe exclusive is never observed half done. */
static void stripe_lock(struct engine *e, uint64_t ino, bool excl)
{
    eng_stripe_lock(e, eng_stripe(ino), excl);
}

static void stripe_unlock(struct engine *e, uint64_t ino)
{
    pthread_rwlock_unlock(&e->ino_lock[eng_stripe(ino)]);
}

/* A file capability (security.capability) goes before anyone, root too,
 * changes the data of ino, as Linux's file_remove_privs does; the FUSE
 * door leaves this to the device (it negotiates FUSE_HANDLE_KILLPRIV_V2,
 * fusefs/killpriv.c). The check is one attribute lookup per write.
 * Returns 0 or -errno; the caller commits. */
static int cap_clear(struct engine *e, uint64_t ino, bool *changed)
{
    ssize_t n = sfs_getxattr(e->fs, ino, PERM_XATTR_CAPS, NULL, 0);
    if (n == -ENODATA || n == -EOPNOTSUPP)
        return 0;
    if (n < 0)
        return (int)n;
    int r = sfs_removexattr(e->fs, NULL, ino, PERM_XATTR_CAPS);
    *changed = r == 0;
    return r == -ENODATA ? 0 : r;
}

/* Before a caller without CAP_FSETID (not root) changes the data of ino,
 * its set-id bits go (perm_setid_kill), and before anyone does, its file
 * capability (cap_clear), whichever door the change came through. The
 * clear is committed before the data changes: overwrites go in place, so
 * a crash must not find new data under the old bits. It happens once per
 * such file, so the commit costs nothing in general. */
static int setid_clear(struct engine *e, struct eng_cmd *c, uint64_t ino)
{
    struct sfs_attr a;
    bool capped = false;
    int r = cap_clear(e, ino, &capped);
    if (r)
        return r;
    if (c->cred.uid == 0)
        return capped ? sfs_sync(e->fs) : 0;
    r = sfs_getattr(e->fs, ino, &a);
    uint32_t kill = r ? 0 : perm_setid_kill(&c->cred, &a);
    if (!kill)
        return r || !capped ? r : sfs_sync(e->fs);
    struct sfs_attr in = { .mode = a.mode & ~kill };
    r = sfs_setattr(e->fs, NULL, ino, &in, SFS_SET_MODE, NULL);
    return r ? r : sfs_sync(e->fs);
}

/* A new entry's reply hands one reference to the door (invariant 3). */
static int64_t entry_ref(struct engine *e, struct eng_cmd *c, int r)
{
    return r ? r : sfs_iget(e->fs, c->attr.ino);
}

int64_t eop_lookup(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr dir;
    int r = check_name(c->ino, c->name, -ENOENT);
    if (!r)
        r = dir_attr(e, c->ino, &dir);
    if (!r)
        r = perm_check(&c->cred, &dir, X_OK);
    for (int tries = 0; !r && tries < 3; tries++) {
        r = sfs_lookup(e->fs, c->ino, c->name, &c->attr);
        if (r)
            break;
        r = sfs_iget(e->fs, c->attr.ino);
        if (r != -ENOENT)   /* -ENOENT: freed between lookup and iget */
            break;
    }
    return r;
}

int64_t eop_forget(struct engine *e, struct eng_cmd *c)
{
    for (uint64_t i = 0; i < c->len; i++)
        sfs_iput(e->fs, c->ino);
    return 0;
}

int64_t eop_getattr(struct engine *e, struct eng_cmd *c)
{
    return sfs_getattr(e->fs, c->ino, &c->attr);
}

int64_t eop_setattr(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr cur;
    struct hdl h = { 0 };
    bool wr = false;
    if (c->fh && !file_handle(e, c, c->fh, W_OK, &h) && h.ino == c->ino)
        wr = true;
    int r = sfs_getattr(e->fs, c->ino, &cur);
    if (r)
        return r;
    if ((c->valid & SFS_SET_SIZE) && S_ISDIR(cur.mode))
        return -EISDIR;
    if ((c->valid & SFS_SET_SIZE) && !S_ISREG(cur.mode))
        return -EINVAL;
    r = perm_setattr(&c->cred, &cur, &c->sattr, &c->valid, wr);
    if (r)
        return r;
    bool size = c->valid & SFS_SET_SIZE;
    if (size && (r = setid_clear(e, c, c->ino)) != 0)
        return r;
    if (size)
        stripe_lock(e, c->ino, true);
    r = sfs_setattr(e->fs, NULL, c->ino, &c->sattr, c->valid, &c->attr);
    if (size)
        stripe_unlock(e, c->ino);
    return r;
}

int64_t eop_readlink(struct engine *e, struct eng_cmd *c)
{
    return sfs_readlink(e->fs, c->ino, c->out, c->size);
}

/* The door's umask (FUSE with DONT_MASK) applies unless the parent has a
 * default ACL: then the ACL masks the mode (StorageFS inherits it). */
static int apply_umask(struct engine *e, struct eng_cmd *c, uint32_t *mode)
{
    if (!c->umask || S_ISLNK(*mode))
        return 0;
    ssize_t n = sfs_getxattr(e->fs, c->ino, "system.posix_acl_default", NULL, 0);
    if (n == -ENODATA)
        *mode &= ~(c->umask & 0777u);
    return n < 0 && n != -ENODATA ? (int)n : 0;
}

/* Parent checks and owner of a new inode in c->ino. */
static int prepare_new(struct engine *e, struct eng_cmd *c, uint32_t *mode, uint32_t *uid,
                       uint32_t *gid)
{
    struct sfs_attr dir;
    int r = dir_attr(e, c->ino, &dir);
    if (!r)
        r = perm_may_create(&c->cred, &dir);
    if (!r)
        r = apply_umask(e, c, mode);
    if (!r)
        perm_new_owner(&c->cred, &dir, mode, uid, gid);
    return r;
}

/* Common front of the four creating ops: name, parent checks, owner. */
static int prepare_create(struct engine *e, struct eng_cmd *c, uint32_t *mode,
                          uint32_t *uid, uint32_t *gid)
{
    int r = check_name(c->ino, c->name, SYSDIR_RESERVED);
    return r ? r : prepare_new(e, c, mode, uid, gid);
}

int64_t eop_mknod(struct engine *e, struct eng_cmd *c)
{
    uint32_t mode = c->mode, uid, gid;
    switch (mode & S_IFMT) {
    case S_IFREG: case S_IFIFO: case S_IFSOCK: break;
    case S_IFCHR: case S_IFBLK:
        if (c->cred.uid != 0)
            return -EPERM;
        break;
    case 0: mode |= S_IFREG; break;
    default: return -EINVAL;
    }
    int r = prepare_create(e, c, &mode, &uid, &gid);
    if (!r)
        r = sfs_mknod(e->fs, NULL, c->ino, c->name, mode, c->rdev, uid, gid, &c->attr);
    return entry_ref(e, c, r);
}

int64_t eop_mkdir(struct engine *e, struct eng_cmd *c)
{
    uint32_t mode = S_IFDIR | (c->mode & 07777), uid, gid;
    int r = prepare_create(e, c, &mode, &uid, &gid);
    if (!r)
        r = sfs_mkdir(e->fs, NULL, c->ino, c->name, mode, uid, gid, &c->attr);
    return entry_ref(e, c, r);
}

int64_t eop_symlink(struct engine *e, struct eng_cmd *c)
{
    uint32_t mode = S_IFLNK | 0777, uid, gid;
    const char *target = c->in;
    if (!target || !*target)
        return -ENOENT;
    if (strlen(target) > SFS_SYMLINK_MAX)
        return -ENAMETOOLONG;
    int r = prepare_create(e, c, &mode, &uid, &gid);
    if (!r)
        r = sfs_symlink(e->fs, NULL, c->ino, c->name, target, uid, gid, &c->attr);
    return entry_ref(e, c, r);
}

int64_t eop_link(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a, dir;
    int r = check_name(c->ino2, c->name, SYSDIR_RESERVED);
    if (!r)
        r = sfs_getattr(e->fs, c->ino, &a);
    if (!r && S_ISDIR(a.mode))
        r = -EPERM;
    if (!r)
        r = dir_attr(e, c->ino2, &dir);
    if (!r)
        r = perm_may_create(&c->cred, &dir);
    if (!r)
        r = sfs_link(e->fs, NULL, c->ino, c->ino2, c->name, &c->attr);
    return entry_ref(e, c, r);
}

/* Parent and victim attributes, and whether c may delete the victim. */
static int prepare_delete(struct engine *e, struct eng_cmd *c, uint64_t dirino,
                          const char *name, struct sfs_attr *victim)
{
    struct sfs_attr dir;
    int r = check_name(dirino, name, -ENOENT);
    if (!r)
        r = dir_attr(e, dirino, &dir);
    if (!r)
        r = perm_check(&c->cred, &dir, X_OK);
    if (!r)
        r = sfs_lookup(e->fs, dirino, name, victim);
    if (!r)
        r = perm_may_delete(&c->cred, &dir, victim);
    return r;
}

int64_t eop_unlink(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr v;
    int r = prepare_delete(e, c, c->ino, c->name, &v);
    if (!r && S_ISDIR(v.mode))
        r = -EISDIR;
    return r ? r : sfs_unlink(e->fs, NULL, c->ino, c->name);
}

int64_t eop_rmdir(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr v;
    int r = prepare_delete(e, c, c->ino, c->name, &v);
    if (!r && !S_ISDIR(v.mode))
        r = -ENOTDIR;
    if (!r && v.ino == SFS_ROOT_INO)
        r = -EBUSY;
    return r ? r : sfs_rmdir(e->fs, NULL, c->ino, c->name);
}

/* A directory that changes parent needs write access to itself (its ".."). */
static int check_reparent(struct eng_cmd *c, const struct sfs_attr *a)
{
    if (!S_ISDIR(a->mode) || c->ino == c->ino2)
        return 0;
    return perm_check(&c->cred, a, W_OK);
}

int64_t eop_rename(struct engine *e, struct eng_cmd *c)
{
    unsigned fl = 0;
    if (c->flags & ~(ENG_RENAME_NOREPLACE | ENG_RENAME_EXCHANGE) ||
        c->flags == (ENG_RENAME_NOREPLACE | ENG_RENAME_EXCHANGE))
        return -EINVAL;
    fl |= (c->flags & ENG_RENAME_NOREPLACE) ? SFS_RENAME_NOREPLACE : 0;
    fl |= (c->flags & ENG_RENAME_EXCHANGE) ? SFS_RENAME_EXCHANGE : 0;
    struct sfs_attr src, dst;
    /* never a target: an exchange finds none, a rename may not make one */
    int r = sysdir_check(c->ino2, c->name2,
                         (c->flags & ENG_RENAME_EXCHANGE) ? -ENOENT : SYSDIR_RESERVED);
    if (!r)
        r = prepare_delete(e, c, c->ino, c->name, &src);
    if (!r)
        r = check_reparent(c, &src);
    if (r)
        return r;
    int t = prepare_delete(e, c, c->ino2, c->name2, &dst);
    if (t == -ENOENT && !(c->flags & ENG_RENAME_EXCHANGE)) {
        struct sfs_attr nd;
        t = dir_attr(e, c->ino2, &nd);
        if (!t)
            t = perm_may_create(&c->cred, &nd);
    } else if (!t && (c->flags & ENG_RENAME_EXCHANGE)) {
        t = check_reparent(c, &dst);
    } else if (!t && (c->flags & ENG_RENAME_NOREPLACE)) {
        t = -EEXIST;
    }
    return t ? t : sfs_rename(e->fs, NULL, c->ino, c->name, c->ino2, c->name2, fl);
}

static int open_handle(struct engine *e, struct eng_cmd *c, uint64_t ino, bool dir)
{
    int r = sfs_iget(e->fs, ino);
    if (r)
        return r;
    struct hdl h = { .ino = ino, .flags = c->flags, .dir = dir };
    r = hdl_open(eng_hdl(e, c), &h, &c->out_fh);
    if (r)
        sfs_iput(e->fs, ino);
    return r;
}

/* O_TRUNC: Linux clears set-id bits even when the file is empty. */
static int truncate_on_open(struct engine *e, struct eng_cmd *c, uint64_t ino,
                            const struct sfs_attr *a)
{
    if (!S_ISREG(a->mode))
        return 0;
    int r = setid_clear(e, c, ino);
    if (r || a->size == 0)
        return r;
    struct sfs_attr in = { .size = 0 };
    stripe_lock(e, ino, true);
    r = sfs_setattr(e->fs, NULL, ino, &in, SFS_SET_SIZE, NULL);
    stripe_unlock(e, ino);
    return r;
}

int64_t eop_open(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = sfs_getattr(e->fs, c->ino, &a);
    if (r)
        return r;
    if (S_ISDIR(a.mode) && (c->flags & O_ACCMODE) != O_RDONLY)
        return -EISDIR;
    r = perm_check(&c->cred, &a, perm_open_mask(c->flags));
    if (!r && (c->flags & O_TRUNC) && (c->flags & O_ACCMODE) != O_RDONLY)
        r = truncate_on_open(e, c, c->ino, &a);
    return r ? r : open_handle(e, c, c->ino, S_ISDIR(a.mode));
}

int64_t eop_create(struct engine *e, struct eng_cmd *c)
{
    uint32_t mode = S_IFREG | (c->mode & 07777), uid, gid;
    int r = prepare_create(e, c, &mode, &uid, &gid);
    if (!r)
        r = sfs_mknod(e->fs, NULL, c->ino, c->name, mode, 0, uid, gid, &c->attr);
    if (!r)
        r = (int)entry_ref(e, c, 0);
    if (r)
        return r;
    r = open_handle(e, c, c->attr.ino, false);
    if (r)
        sfs_iput(e->fs, c->attr.ino);   /* the door never sees this entry */
    return r;
}

/* O_TMPFILE: an unnamed file in directory c->ino, opened. sfs_tmpfile's
 * reference is the door's (as CREATE's entry reference): the kernel
 * forgets the inode when its last user closes it, and that frees it. */
int64_t eop_tmpfile(struct engine *e, struct eng_cmd *c)
{
    uint32_t mode = S_IFREG | (c->mode & 07777), uid, gid;
    if ((c->flags & O_ACCMODE) == O_RDONLY)
        return -EINVAL;   /* as Linux: an unnamed file is opened for writing */
    int r = prepare_new(e, c, &mode, &uid, &gid);
    if (!r)
        r = sfs_tmpfile(e->fs, NULL, c->ino, mode, uid, gid, &c->attr);
    if (r)
        return r;
    c->flags &= ~(uint32_t)(O_TMPFILE | O_CREAT | O_EXCL | O_TRUNC);
    r = open_handle(e, c, c->attr.ino, false);
    if (r)
        sfs_iput(e->fs, c->attr.ino);   /* the door never sees this file */
    return r;
}

int64_t eop_read(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = file_handle(e, c, c->fh, R_OK, &h);
    if (r)
        return r;
    stripe_lock(e, h.ino, false);
    ssize_t n = c->map ? sfs_read_map(e->fs, h.ino, c->off, c->size, c->map, c->map_arg)
                       : sfs_read(e->fs, h.ino, c->off, c->out, c->size);
    stripe_unlock(e, h.ino);
    return n;
}

/* O_APPEND: size read and write under the stripe held exclusive, so two
 * appenders never write at the same offset; a mount write(2) cut into
 * pieces keeps the end of the file between them (lease.h). */
static int64_t append(struct engine *e, struct eng_cmd *c, uint64_t ino,
                      const struct lease_who *w)
{
    struct sfs_attr a;
    int64_t r = c->size ? setid_clear(e, c, ino) : 0;   /* as Linux: not for 0 bytes */
    if (r)
        return r;
    stripe_lock(e, ino, true);
    if (lease_enter(e->lease, ino, w, c)) {
        stripe_unlock(e, ino);
        return ENG_PARKED;   /* rerun later: setid_clear above is idempotent */
    }
    r = sfs_getattr(e->fs, ino, &a);
    if (!r)
        r = sfs_write(e->fs, NULL, ino, a.size, c->in, c->size);
    lease_exit(e->lease, ino, w, r == (int64_t)c->size);
    stripe_unlock(e, ino);
    if (r >= 0)
        c->out_off = a.size;
    return r;
}

int64_t eop_write(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = file_handle(e, c, c->fh, W_OK, &h);
    if (r)
        return r;
    if (h.flags & O_APPEND)
        return append(e, c, h.ino,
                      &(struct lease_who){ eng_hdl(e, c), c->fh,
                                           c->flags & ENG_WRITE_ORDERED,
                                           c->flags & ENG_WRITE_MORE });
    if (c->size && (r = setid_clear(e, c, h.ino)) != 0)
        return r;
    stripe_lock(e, h.ino, false);
    ssize_t n = sfs_write(e->fs, NULL, h.ino, c->off, c->in, c->size);
    stripe_unlock(e, h.ino);
    return n;
}

/* Atomic append whatever the handle's flags (libcisc). */
int64_t eop_append(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = file_handle(e, c, c->fh, W_OK, &h);
    return r ? r : append(e, c, h.ino, &(struct lease_who){ eng_hdl(e, c), c->fh });
}

/* ftruncate(2): the handle must be a file open for writing (-EINVAL). */
int64_t eop_ftruncate(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = file_handle(e, c, c->fh, W_OK, &h);
    if (r == -EBADF && hdl_get(eng_hdl(e, c), c->fh, &h) == 0)
        r = -EINVAL;   /* open, but not for writing */
    if (r)
        return r == -EISDIR ? -EINVAL : r;
    c->ino = h.ino;
    c->sattr.size = c->off;
    c->valid = SFS_SET_SIZE;
    return eop_setattr(e, c);
}

int64_t eop_flush(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    return hdl_get(eng_hdl(e, c), c->fh, &h);
}

int64_t eop_release(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = hdl_close(eng_hdl(e, c), c->fh, &h);
    if (!r) {
        lease_release(e->lease, h.ino, eng_hdl(e, c), c->fh);
        sfs_iput(e->fs, h.ino);
    }
    return r;
}

int64_t eop_fsync(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = hdl_get(eng_hdl(e, c), c->fh, &h);
    return r ? r : sfs_fsync(e->fs, h.ino, c->flags & 1);
}

int64_t eop_opendir(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = dir_attr(e, c->ino, &a);
    if (!r)
        r = perm_check(&c->cred, &a, R_OK);
    c->flags = O_RDONLY | O_DIRECTORY;
    return r ? r : open_handle(e, c, c->ino, true);
}

/* READDIR collects a batch of entries (names copied) with sfs_readdir,
 * then hands them to fill outside StorageFS's iteration, so that
 * readdirplus can take attributes and references without re-entering it. */
#define RD_BATCH 64

struct rd_ent {
    uint64_t ino, next;
    uint32_t type;
    uint16_t len;
    char name[SFS_NAME_MAX + 1];
};

struct rd_batch {
    struct rd_ent *ents;
    unsigned n;
    uint64_t dir;
};

static int rd_collect(void *arg, const struct sfs_dirent *de)
{
    struct rd_batch *b = arg;
    if (b->n == RD_BATCH)
        return 1;
    if (sysdir_hidden(b->dir, de->name, de->namelen))
        return 0;   /* the device's own directory is not listed */
    if (de->namelen > SFS_NAME_MAX)
        return 0;   /* cannot happen for a valid image; skip it */
    struct rd_ent *x = &b->ents[b->n++];
    x->ino = de->ino;
    x->next = de->next_cookie;
    x->type = de->type;
    x->len = (uint16_t)de->namelen;
    memcpy(x->name, de->name, de->namelen);
    x->name[de->namelen] = '\0';
    return 0;
}

static bool is_dot(const struct rd_ent *x)
{
    return x->name[0] == '.' && (x->len == 1 || (x->len == 2 && x->name[1] == '.'));
}

/* Passes one entry to fill. Returns 1 when fill is full, 0 to go on. An
 * entry whose inode cannot be read (it fails verification) is still
 * listed, with what the entry knows (name, number, type) and no
 * attributes; stat and open of it report the error, as other file
 * systems do, instead of the file silently vanishing from listings. */
static int rd_emit(struct engine *e, struct eng_cmd *c, const struct rd_ent *x)
{
    struct sfs_dirent de = { x->ino, x->type, x->next, x->name, x->len };
    if (!c->plus)
        return c->fill(c->fill_arg, &de, NULL) ? 1 : 0;
    struct sfs_attr a = { .ino = x->ino, .mode = x->type << 12 };
    bool ref = !is_dot(x);
    int r = ref ? sfs_getattr(e->fs, x->ino, &a) : 0;
    if (!r && ref)
        r = sfs_iget(e->fs, x->ino);
    if (r == -ENOENT)
        return 0;   /* removed meanwhile: skip it */
    if (r == -EUCLEAN)
        stats_corrupt(e->stats);
    if (r)
        return c->fill(c->fill_arg, &de, NULL) ? 1 : 0;
    if (!c->fill(c->fill_arg, &de, &a))
        return 0;
    if (ref)
        sfs_iput(e->fs, x->ino);
    return 1;
}

int64_t eop_readdir(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = hdl_get(eng_hdl(e, c), c->fh, &h);
    if (!r && !h.dir)
        r = -ENOTDIR;
    if (r || !c->fill)
        return r ? r : -EINVAL;
    struct rd_batch b = { malloc(RD_BATCH * sizeof(struct rd_ent)), 0, h.ino };
    if (!b.ents)
        return -ENOMEM;
    uint64_t cookie = c->off;
    for (;;) {
        b.n = 0;
        r = sfs_readdir(e->fs, h.ino, cookie, rd_collect, &b);
        if (r || b.n == 0)
            break;
        unsigned i;
        for (i = 0; i < b.n; i++)
            if (rd_emit(e, c, &b.ents[i]))
                break;
        if (i < b.n || b.n < RD_BATCH)
            break;
        cookie = b.ents[b.n - 1].next;
    }
    free(b.ents);
    return r;
}

int64_t eop_releasedir(struct engine *e, struct eng_cmd *c)
{
    return eop_release(e, c);
}

int64_t eop_fsyncdir(struct engine *e, struct eng_cmd *c)
{
    return eop_fsync(e, c);
}

int64_t eop_statfs(struct engine *e, struct eng_cmd *c)
{
    return sfs_statfs(e->fs, &c->st);
}

/* mask: R_OK to read, W_OK to set, 0 to remove. Fills *a. */
static int xattr_prepare(struct engine *e, struct eng_cmd *c, int mask, struct sfs_attr *a)
{
    if (!c->name || !*c->name || strlen(c->name) > SFS_XATTR_NAME_MAX)
        return -ERANGE;   /* as the xattr(7) calls (the kernel checks them for FUSE) */
    int r = sfs_getattr(e->fs, c->ino, a);
    if (r)
        return r;
    return mask ? perm_xattr(&c->cred, a, c->name, mask)
                : perm_xattr_remove(&c->cred, a, c->name);
}

int64_t eop_setxattr(struct engine *e, struct eng_cmd *c)
{
    if (c->size > SFS_XATTR_SIZE_MAX)
        return -E2BIG;
    if (c->flags & ~(ENG_XATTR_CREATE | ENG_XATTR_REPLACE))
        return -EINVAL;
    unsigned fl = (c->flags & ENG_XATTR_CREATE ? SFS_XATTR_CREATE : 0) |
                  (c->flags & ENG_XATTR_REPLACE ? SFS_XATTR_REPLACE : 0);
    struct sfs_attr a;
    int r = xattr_prepare(e, c, W_OK, &a);
    if (!r && acl_type_of(c->name) == SFS_ACL_ACCESS && perm_acl_kills_sgid(&c->cred, &a))
        fl |= SFS_XATTR_KILL_SGID;
    return r ? r : sfs_setxattr(e->fs, NULL, c->ino, c->name, c->in, c->size, fl);
}

int64_t eop_getxattr(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = xattr_prepare(e, c, R_OK, &a);
    return r ? r : sfs_getxattr(e->fs, c->ino, c->name, c->out, c->size);
}

/* Drops "trusted." names, which only root may see; returns the new length. */
static size_t filter_trusted(char *list, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = strnlen(list + i, n - i);
        if (strncmp(list + i, "trusted.", 8)) {
            memmove(list + o, list + i, l);
            list[o + l] = '\0';
            o += l + 1;
        }
        i += l + 1;
    }
    return o;
}

int64_t eop_listxattr(struct engine *e, struct eng_cmd *c)
{
    if (c->cred.uid == 0)
        return sfs_listxattr(e->fs, c->ino, c->out, c->size);
    ssize_t n = sfs_listxattr(e->fs, c->ino, NULL, 0);
    if (n <= 0)
        return n;
    char *buf = malloc((size_t)n);
    if (!buf)
        return -ENOMEM;
    n = sfs_listxattr(e->fs, c->ino, buf, (size_t)n);
    if (n > 0)
        n = (ssize_t)filter_trusted(buf, (size_t)n);
    if (n > 0 && c->size && (size_t)n > c->size)
        n = -ERANGE;
    else if (n > 0 && c->size)
        memcpy(c->out, buf, (size_t)n);
    free(buf);
    return n;
}

int64_t eop_removexattr(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = xattr_prepare(e, c, 0, &a);
    return r ? r : sfs_removexattr(e->fs, NULL, c->ino, c->name);
}

int64_t eop_access(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = sfs_getattr(e->fs, c->ino, &a);
    if (r || c->mode == F_OK)
        return r;
    return perm_check(&c->cred, &a, (int)c->mode);
}

int64_t eop_fallocate(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    unsigned known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE |
                     FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE;
    if (c->flags & ~known)
        return -EOPNOTSUPP;
    if ((c->flags & FALLOC_FL_PUNCH_HOLE) && !(c->flags & FALLOC_FL_KEEP_SIZE))
        return -EOPNOTSUPP;
    if (c->len == 0 || c->off + c->len < c->off || c->off > INT64_MAX ||
        c->len > INT64_MAX - c->off)
        return -EINVAL;
    int r = file_handle(e, c, c->fh, W_OK, &h);
    if (!r && c->flags != FALLOC_FL_KEEP_SIZE)   /* all but pure preallocation */
        r = setid_clear(e, c, h.ino);
    if (r)
        return r;
    unsigned m = (c->flags & FALLOC_FL_KEEP_SIZE ? SFS_FALLOC_KEEP_SIZE : 0) |
                 (c->flags & FALLOC_FL_PUNCH_HOLE ? SFS_FALLOC_PUNCH_HOLE : 0) |
                 (c->flags & FALLOC_FL_ZERO_RANGE ? SFS_FALLOC_ZERO_RANGE : 0) |
                 (c->flags & FALLOC_FL_COLLAPSE_RANGE ? SFS_FALLOC_COLLAPSE_RANGE : 0) |
                 (c->flags & FALLOC_FL_INSERT_RANGE ? SFS_FALLOC_INSERT_RANGE : 0);
    stripe_lock(e, h.ino, true);
    r = sfs_fallocate(e->fs, NULL, h.ino, m, c->off, c->len);
    stripe_unlock(e, h.ino);
    return r;
}

int64_t eop_lseek(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    if (c->flags != SEEK_DATA && c->flags != SEEK_HOLE)
        return -EINVAL;
    int r = file_handle(e, c, c->fh, 0, &h);
    if (r)
        return r;
    return sfs_seek(e->fs, h.ino, c->off,
                    c->flags == SEEK_DATA ? SFS_SEEK_DATA : SFS_SEEK_HOLE);
}

static int64_t copy_loop(struct engine *e, uint64_t src, uint64_t soff, uint64_t dst,
                         uint64_t doff, uint64_t len)
{
    size_t chunk = len < COPY_CHUNK ? (size_t)len : COPY_CHUNK;
    char *buf = malloc(chunk ? chunk : 1);
    if (!buf)
        return -ENOMEM;
    int64_t done = 0;
    while ((uint64_t)done < len) {
        size_t want = len - (uint64_t)done < chunk ? (size_t)(len - (uint64_t)done) : chunk;
        ssize_t n = sfs_read(e->fs, src, soff + (uint64_t)done, buf, want);
        if (n > 0)
            n = sfs_write(e->fs, NULL, dst, doff + (uint64_t)done, buf, (size_t)n);
        if (n <= 0) {
            if (n < 0 && done == 0)
                done = n;
            break;
        }
        done += n;
    }
    free(buf);
    return done;
}

int64_t eop_copy_range(struct engine *e, struct eng_cmd *c)
{
    struct hdl in, out;
    int r = file_handle(e, c, c->fh, R_OK, &in);
    if (!r)
        r = file_handle(e, c, c->fh2, W_OK, &out);
    if (!r && (out.flags & O_APPEND))
        r = -EBADF;
    if (r)
        return r;
    if (c->off + c->len < c->off || c->off2 + c->len < c->off2)
        return -EOVERFLOW;
    if (in.ino == out.ino && c->off < c->off2 + c->len && c->off2 < c->off + c->len)
        return -EINVAL;
    if (c->len && (r = setid_clear(e, c, out.ino)) != 0)
        return r;
    unsigned a = eng_stripe(in.ino), b = eng_stripe(out.ino);
    uint64_t first = a <= b ? in.ino : out.ino, second = a <= b ? out.ino : in.ino;
    stripe_lock(e, first, false);
    if (a != b)
        stripe_lock(e, second, false);
    int64_t n = copy_loop(e, in.ino, c->off, out.ino, c->off2, c->len);
    if (a != b)
        stripe_unlock(e, second);
    stripe_unlock(e, first);
    return n;
}

int64_t eop_sync(struct engine *e, struct eng_cmd *c)
{
    return sfs_sync(e->fs);
}


/*
 * device/sfs_stub/sfs_stub.c - TEMPORARY in-memory stand-in for StorageFS.
 *
 * Lets the device, FUSE front end and their tests be developed before the
 * real StorageFS lands on this branch. One global lock, nothing persists,
 * media_open_file only takes the image lock. Removed at the sfs merge.
 */
#include "device/storagefs/storagefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_media {
    struct media m;
    int fd;
};

static int fm_read(struct media *m, uint64_t b, uint32_t n, void *buf) { return -EIO; }
static int fm_write(struct media *m, uint64_t b, uint32_t n, const void *buf) { return -EIO; }
static int fm_flush(struct media *m) { return 0; }
static int fm_discard(struct media *m, uint64_t b, uint64_t n) { return 0; }
static void fm_close(struct media *m)
{
    close(((struct file_media *)m)->fd);
    free(m);
}
static const struct media_ops fm_ops = { fm_read, fm_write, fm_flush, fm_discard, fm_close };

int media_open_file(const char *path, unsigned flags, struct media **out)
{
    int fd = open(path, (flags & MEDIA_RDONLY) ? O_RDONLY : O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (!(flags & MEDIA_NOLOCK) && flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno == EWOULDBLOCK ? EBUSY : errno;
        close(fd);
        return -e;
    }
    struct stat st;
    fstat(fd, &st);
    struct file_media *fm = calloc(1, sizeof(*fm));
    fm->m.ops = &fm_ops;
    fm->m.nblocks = (uint64_t)st.st_size / MEDIA_BLOCK_SIZE;
    fm->fd = fd;
    *out = &fm->m;
    return 0;
}

struct xa { char *name; void *val; size_t size; struct xa *next; };
struct de { char *name; uint64_t ino; uint64_t cookie; struct de *next; };
struct ino {
    struct sfs_attr a;
    int refs;
    char *data; size_t cap;      /* file data or symlink target */
    struct de *ents;             /* directory */
    uint64_t next_cookie;
    struct xa *xattrs;
};

#define MAXINO 200000
struct sfs {
    pthread_mutex_t lock;
    struct media *m;
    struct ino *tab[MAXINO];
    uint64_t next;
};

static struct ino *get(struct sfs *fs, uint64_t ino)
{
    return ino && ino < MAXINO ? fs->tab[ino] : NULL;
}

static void now(struct timespec *t) { clock_gettime(CLOCK_REALTIME, t); }

static struct ino *newino(struct sfs *fs, uint32_t mode, uint32_t uid, uint32_t gid)
{
    uint64_t i = fs->next;
    while (i < MAXINO && fs->tab[i])
        i++;
    if (i >= MAXINO)
        return NULL;
    fs->next = i + 1;
    struct ino *n = calloc(1, sizeof(*n));
    n->a.ino = i;
    n->a.generation = 1;
    n->a.mode = mode;
    n->a.uid = uid;
    n->a.gid = gid;
    now(&n->a.atime);
    n->a.mtime = n->a.ctime = n->a.btime = n->a.atime;
    n->next_cookie = 3;
    fs->tab[i] = n;
    return n;
}

static void freeino(struct sfs *fs, struct ino *n)
{
    fs->tab[n->a.ino] = NULL;
    if (n->a.ino < fs->next)
        fs->next = n->a.ino;
    for (struct xa *x = n->xattrs, *nx; x; x = nx) {
        nx = x->next;
        free(x->name); free(x->val); free(x);
    }
    for (struct de *d = n->ents, *nd; d; d = nd) {
        nd = d->next;
        free(d->name); free(d);
    }
    free(n->data);
    free(n);
}

static void maybe_free(struct sfs *fs, struct ino *n)
{
    if (n->a.nlink == 0 && n->refs == 0)
        freeino(fs, n);
}

int sfs_mkfs(struct media *m, const struct sfs_mkfs_opts *opts) { return 0; }

int sfs_mount(struct media *m, const struct sfs_mount_opts *opts, struct sfs **out)
{
    struct sfs *fs = calloc(1, sizeof(*fs));
    pthread_mutex_init(&fs->lock, NULL);
    fs->m = m;
    fs->next = 1;
    struct ino *root = newino(fs, S_IFDIR | 0755, 0, 0);
    root->a.nlink = 2;
    *out = fs;
    return 0;
}

int sfs_unmount(struct sfs *fs)
{
    for (uint64_t i = 0; i < MAXINO; i++)
        if (fs->tab[i])
            freeino(fs, fs->tab[i]);
    media_close(fs->m);
    free(fs);
    return 0;
}

#define LOCK() pthread_mutex_lock(&fs->lock)
#define UNLOCK(r) do { pthread_mutex_unlock(&fs->lock); return (r); } while (0)

static struct de *find(struct ino *d, const char *name)
{
    for (struct de *e = d->ents; e; e = e->next)
        if (!strcmp(e->name, name))
            return e;
    return NULL;
}

static void fill_blocks(struct ino *n)
{
    n->a.blocks = (n->a.size + 511) / 512;
}

int sfs_lookup(struct sfs *fs, uint64_t dir, const char *name, struct sfs_attr *attr)
{
    LOCK();
    struct ino *d = get(fs, dir);
    if (!d) UNLOCK(-ENOENT);
    if (!S_ISDIR(d->a.mode)) UNLOCK(-ENOTDIR);
    struct de *e = find(d, name);
    if (!e) UNLOCK(-ENOENT);
    *attr = fs->tab[e->ino]->a;
    UNLOCK(0);
}

int sfs_getattr(struct sfs *fs, uint64_t ino, struct sfs_attr *attr)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    fill_blocks(n);
    *attr = n->a;
    UNLOCK(0);
}

static int resize(struct ino *n, uint64_t size)
{
    if (size > n->cap) {
        size_t c = size + size / 2 + 4096;
        char *p = realloc(n->data, c);
        if (!p)
            return -ENOSPC;
        memset(p + n->cap, 0, c - n->cap);
        n->data = p;
        n->cap = c;
    }
    if (size < n->a.size)
        memset(n->data + size, 0, n->a.size - size);
    n->a.size = size;
    return 0;
}

int sfs_setattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino,
                const struct sfs_attr *in, unsigned valid, struct sfs_attr *out)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (valid & SFS_SET_MODE) n->a.mode = (n->a.mode & S_IFMT) | (in->mode & 07777);
    if (valid & SFS_SET_UID) n->a.uid = in->uid;
    if (valid & SFS_SET_GID) n->a.gid = in->gid;
    if (valid & SFS_SET_SIZE) {
        int r = resize(n, in->size);
        if (r) UNLOCK(r);
        now(&n->a.mtime);
    }
    if (valid & SFS_SET_ATIME) n->a.atime = in->atime;
    if (valid & SFS_SET_MTIME) n->a.mtime = in->mtime;
    if (valid & SFS_SET_ATIME_NOW) now(&n->a.atime);
    if (valid & SFS_SET_MTIME_NOW) now(&n->a.mtime);
    if (valid & SFS_SET_CTIME) n->a.ctime = in->ctime; else now(&n->a.ctime);
    fill_blocks(n);
    if (out) *out = n->a;
    UNLOCK(0);
}

static int add_ent(struct ino *d, const char *name, uint64_t ino)
{
    struct de *e = calloc(1, sizeof(*e));
    e->name = strdup(name);
    e->ino = ino;
    e->cookie = d->next_cookie++;
    struct de **pp = &d->ents;
    while (*pp)
        pp = &(*pp)->next;
    *pp = e;
    now(&d->a.mtime);
    d->a.ctime = d->a.mtime;
    return 0;
}

static void del_ent(struct ino *d, struct de *e)
{
    for (struct de **pp = &d->ents; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    free(e->name);
    free(e);
    now(&d->a.mtime);
    d->a.ctime = d->a.mtime;
}

static int create(struct sfs *fs, uint64_t dir, const char *name, uint32_t mode,
                  uint32_t uid, uint32_t gid, struct ino **out)
{
    struct ino *d = get(fs, dir);
    if (!d) return -ENOENT;
    if (!S_ISDIR(d->a.mode)) return -ENOTDIR;
    if (strlen(name) > SFS_NAME_MAX) return -ENAMETOOLONG;
    if (find(d, name)) return -EEXIST;
    struct ino *n = newino(fs, mode, uid, gid);
    if (!n) return -ENOSPC;
    n->a.nlink = 1;
    add_ent(d, name, n->a.ino);
    *out = n;
    return 0;
}

int sfs_mknod(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
              struct sfs_attr *attr)
{
    LOCK();
    struct ino *n;
    int r = create(fs, dir, name, mode, uid, gid, &n);
    if (r) UNLOCK(r);
    n->a.rdev = rdev;
    *attr = n->a;
    UNLOCK(0);
}

int sfs_mkdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
              uint32_t mode, uint32_t uid, uint32_t gid, struct sfs_attr *attr)
{
    LOCK();
    struct ino *n;
    int r = create(fs, dir, name, S_IFDIR | (mode & 07777), uid, gid, &n);
    if (r) UNLOCK(r);
    n->a.nlink = 2;
    n->a.size = 4096;
    fs->tab[dir]->a.nlink++;
    *attr = n->a;
    UNLOCK(0);
}

int sfs_symlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name,
                const char *target, uint32_t uid, uint32_t gid, struct sfs_attr *attr)
{
    LOCK();
    if (strlen(target) > SFS_SYMLINK_MAX) UNLOCK(-ENAMETOOLONG);
    struct ino *n;
    int r = create(fs, dir, name, S_IFLNK | 0777, uid, gid, &n);
    if (r) UNLOCK(r);
    n->data = strdup(target);
    n->a.size = strlen(target);
    n->cap = n->a.size + 1;
    *attr = n->a;
    UNLOCK(0);
}

int sfs_link(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t newdir,
             const char *newname, struct sfs_attr *attr)
{
    LOCK();
    struct ino *n = get(fs, ino), *d = get(fs, newdir);
    if (!n || !d) UNLOCK(-ENOENT);
    if (S_ISDIR(n->a.mode)) UNLOCK(-EPERM);
    if (find(d, newname)) UNLOCK(-EEXIST);
    add_ent(d, newname, ino);
    n->a.nlink++;
    now(&n->a.ctime);
    *attr = n->a;
    UNLOCK(0);
}

static void drop_link(struct sfs *fs, struct ino *n)
{
    n->a.nlink = S_ISDIR(n->a.mode) ? 0 : n->a.nlink - 1;
    now(&n->a.ctime);
    maybe_free(fs, n);
}

int sfs_unlink(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name)
{
    LOCK();
    struct ino *d = get(fs, dir);
    if (!d) UNLOCK(-ENOENT);
    struct de *e = find(d, name);
    if (!e) UNLOCK(-ENOENT);
    struct ino *n = fs->tab[e->ino];
    if (S_ISDIR(n->a.mode)) UNLOCK(-EISDIR);
    del_ent(d, e);
    drop_link(fs, n);
    UNLOCK(0);
}

int sfs_rmdir(struct sfs *fs, struct sfs_txn *tx, uint64_t dir, const char *name)
{
    LOCK();
    struct ino *d = get(fs, dir);
    if (!d) UNLOCK(-ENOENT);
    struct de *e = find(d, name);
    if (!e) UNLOCK(-ENOENT);
    struct ino *n = fs->tab[e->ino];
    if (!S_ISDIR(n->a.mode)) UNLOCK(-ENOTDIR);
    if (n->ents) UNLOCK(-ENOTEMPTY);
    del_ent(d, e);
    d->a.nlink--;
    drop_link(fs, n);
    UNLOCK(0);
}

static bool is_ancestor(struct sfs *fs, uint64_t anc, uint64_t ino)
{
    /* stub: walk every directory looking for ino under anc */
    struct ino *a = get(fs, anc);
    if (!a || !S_ISDIR(a->a.mode)) return false;
    if (anc == ino) return true;
    for (struct de *e = a->ents; e; e = e->next)
        if (S_ISDIR(fs->tab[e->ino]->a.mode) && is_ancestor(fs, e->ino, ino))
            return true;
    return false;
}

int sfs_rename(struct sfs *fs, struct sfs_txn *tx, uint64_t olddir, const char *oldname,
               uint64_t newdir, const char *newname, unsigned flags)
{
    LOCK();
    struct ino *od = get(fs, olddir), *nd = get(fs, newdir);
    if (!od || !nd) UNLOCK(-ENOENT);
    struct de *oe = find(od, oldname), *ne = find(nd, newname);
    if (!oe) UNLOCK(-ENOENT);
    struct ino *src = fs->tab[oe->ino];
    if (S_ISDIR(src->a.mode) && is_ancestor(fs, oe->ino, newdir)) UNLOCK(-EINVAL);
    if (flags & SFS_RENAME_EXCHANGE) {
        if (!ne) UNLOCK(-ENOENT);
        struct ino *dst = fs->tab[ne->ino];
        if (S_ISDIR(dst->a.mode) && is_ancestor(fs, ne->ino, olddir)) UNLOCK(-EINVAL);
        uint64_t t = oe->ino; oe->ino = ne->ino; ne->ino = t;
        if (S_ISDIR(src->a.mode) != S_ISDIR(dst->a.mode) && od != nd) {
            if (S_ISDIR(src->a.mode)) { od->a.nlink--; nd->a.nlink++; }
            else { nd->a.nlink--; od->a.nlink++; }
        }
        UNLOCK(0);
    }
    if (ne && (flags & SFS_RENAME_NOREPLACE)) UNLOCK(-EEXIST);
    if (ne && ne->ino == oe->ino) UNLOCK(0);
    if (ne) {
        struct ino *dst = fs->tab[ne->ino];
        if (S_ISDIR(dst->a.mode) && !S_ISDIR(src->a.mode)) UNLOCK(-EISDIR);
        if (!S_ISDIR(dst->a.mode) && S_ISDIR(src->a.mode)) UNLOCK(-ENOTDIR);
        if (S_ISDIR(dst->a.mode) && dst->ents) UNLOCK(-ENOTEMPTY);
        if (S_ISDIR(dst->a.mode)) nd->a.nlink--;
        del_ent(nd, ne);
        drop_link(fs, dst);
    }
    uint64_t ino = oe->ino;
    del_ent(od, oe);
    add_ent(nd, newname, ino);
    if (S_ISDIR(src->a.mode)) { od->a.nlink--; nd->a.nlink++; }
    now(&src->a.ctime);
    UNLOCK(0);
}

ssize_t sfs_readlink(struct sfs *fs, uint64_t ino, char *buf, size_t size)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (!S_ISLNK(n->a.mode)) UNLOCK(-EINVAL);
    size_t l = n->a.size < size ? n->a.size : size;
    memcpy(buf, n->data, l);
    UNLOCK((ssize_t)l);
}

int sfs_iget(struct sfs *fs, uint64_t ino)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    n->refs++;
    UNLOCK(0);
}

void sfs_iput(struct sfs *fs, uint64_t ino)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (n && n->refs > 0) {
        n->refs--;
        maybe_free(fs, n);
    }
    pthread_mutex_unlock(&fs->lock);
}

ssize_t sfs_read(struct sfs *fs, uint64_t ino, uint64_t off, void *buf, size_t len)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (S_ISDIR(n->a.mode)) UNLOCK(-EISDIR);
    if (off >= n->a.size) UNLOCK(0);
    size_t l = n->a.size - off < len ? n->a.size - off : len;
    memcpy(buf, n->data + off, l);
    UNLOCK((ssize_t)l);
}

ssize_t sfs_write(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, uint64_t off,
                  const void *buf, size_t len)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (off + len > ((uint64_t)1 << 34)) UNLOCK(-EFBIG);
    if (off + len > n->a.size) {
        int r = resize(n, off + len);
        if (r) UNLOCK(r);
    }
    memcpy(n->data + off, buf, len);
    now(&n->a.mtime);
    n->a.ctime = n->a.mtime;
    UNLOCK((ssize_t)len);
}

int sfs_fallocate(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, unsigned mode,
                  uint64_t off, uint64_t len)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    uint64_t end = off + len;
    if (!(mode & SFS_FALLOC_KEEP_SIZE) && end > n->a.size) {
        int r = resize(n, end);
        if (r) UNLOCK(r);
    }
    if (mode & (SFS_FALLOC_PUNCH_HOLE | SFS_FALLOC_ZERO_RANGE)) {
        uint64_t e = end < n->a.size ? end : n->a.size;
        if (off < e)
            memset(n->data + off, 0, e - off);
    }
    UNLOCK(0);
}

int64_t sfs_seek(struct sfs *fs, uint64_t ino, uint64_t off, int whence)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (off >= n->a.size) UNLOCK(-ENXIO);
    UNLOCK(whence == SFS_SEEK_DATA ? (int64_t)off : (int64_t)n->a.size);
}

int sfs_fsync(struct sfs *fs, uint64_t ino, bool datasync) { return 0; }
int sfs_sync(struct sfs *fs) { return 0; }

int sfs_readdir(struct sfs *fs, uint64_t dir, uint64_t cookie, sfs_dirent_fn fn, void *arg)
{
    LOCK();
    struct ino *d = get(fs, dir);
    if (!d) UNLOCK(-ENOENT);
    if (!S_ISDIR(d->a.mode)) UNLOCK(-ENOTDIR);
    struct sfs_dirent de;
    if (cookie == 0) {
        de = (struct sfs_dirent){ dir, DT_DIR, 1, ".", 1 };
        if (fn(arg, &de)) UNLOCK(0);
        cookie = 1;
    }
    if (cookie == 1) {
        de = (struct sfs_dirent){ dir, DT_DIR, 2, "..", 2 };
        if (fn(arg, &de)) UNLOCK(0);
        cookie = 2;
    }
    for (struct de *e = d->ents; e; e = e->next) {
        if (e->cookie <= cookie)
            continue;
        struct ino *n = fs->tab[e->ino];
        de = (struct sfs_dirent){ e->ino, (n->a.mode & S_IFMT) >> 12, e->cookie, e->name,
                                  strlen(e->name) };
        if (fn(arg, &de))
            break;
    }
    UNLOCK(0);
}

static struct xa *xfind(struct ino *n, const char *name)
{
    for (struct xa *x = n->xattrs; x; x = x->next)
        if (!strcmp(x->name, name))
            return x;
    return NULL;
}

static bool ns_ok(const char *name)
{
    return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
           !strncmp(name, "security.", 9);
}

int sfs_setxattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name,
                 const void *value, size_t size, unsigned flags)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    if (!ns_ok(name)) UNLOCK(-EOPNOTSUPP);
    if (size > SFS_XATTR_SIZE_MAX) UNLOCK(-E2BIG);
    struct xa *x = xfind(n, name);
    if (x && (flags & SFS_XATTR_CREATE)) UNLOCK(-EEXIST);
    if (!x && (flags & SFS_XATTR_REPLACE)) UNLOCK(-ENODATA);
    if (!x) {
        x = calloc(1, sizeof(*x));
        x->name = strdup(name);
        x->next = n->xattrs;
        n->xattrs = x;
    }
    free(x->val);
    x->val = malloc(size ? size : 1);
    memcpy(x->val, value, size);
    x->size = size;
    now(&n->a.ctime);
    UNLOCK(0);
}

ssize_t sfs_getxattr(struct sfs *fs, uint64_t ino, const char *name, void *value,
                     size_t size)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    struct xa *x = xfind(n, name);
    if (!x) UNLOCK(-ENODATA);
    if (size == 0) UNLOCK((ssize_t)x->size);
    if (size < x->size) UNLOCK(-ERANGE);
    memcpy(value, x->val, x->size);
    UNLOCK((ssize_t)x->size);
}

ssize_t sfs_listxattr(struct sfs *fs, uint64_t ino, char *list, size_t size)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    size_t need = 0;
    for (struct xa *x = n->xattrs; x; x = x->next)
        need += strlen(x->name) + 1;
    if (size == 0) UNLOCK((ssize_t)need);
    if (size < need) UNLOCK(-ERANGE);
    size_t o = 0;
    for (struct xa *x = n->xattrs; x; x = x->next) {
        memcpy(list + o, x->name, strlen(x->name) + 1);
        o += strlen(x->name) + 1;
    }
    UNLOCK((ssize_t)need);
}

int sfs_removexattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name)
{
    LOCK();
    struct ino *n = get(fs, ino);
    if (!n) UNLOCK(-ENOENT);
    for (struct xa **pp = &n->xattrs; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->name, name)) {
            struct xa *x = *pp;
            *pp = x->next;
            free(x->name); free(x->val); free(x);
            now(&n->a.ctime);
            UNLOCK(0);
        }
    UNLOCK(-ENODATA);
}

int sfs_statfs(struct sfs *fs, struct sfs_statfs *st)
{
    *st = (struct sfs_statfs){ 4096, 262144, 200000, MAXINO, MAXINO / 2, 255 };
    return 0;
}

int sfs_txn_begin(struct sfs *fs, struct sfs_txn **out) { return -EOPNOTSUPP; }
int sfs_txn_commit(struct sfs_txn *tx, bool durable) { return -EOPNOTSUPP; }
int sfs_txn_abort(struct sfs_txn *tx) { return -EOPNOTSUPP; }

/*
 * device/engine/engine_path.c - the engine's path-based operations for the
 * libcisc door: resolve the path with path_walk() (device/engine/path.c, shared
 * with the CISC steps: search permission on every directory, symlinks,
 * ".." stops at the root), then run the inode-based operations of
 * engine_ops.c (their permission checks, their StorageFS calls).
 *
 * The directory holding the final component is pinned with an inode
 * reference between the walk and the operation, so it cannot be freed and
 * its number reused under the operation; a directory removed in between
 * makes the operation fail with -ENOENT, as if it came first.
 *
 * POSIX details the walk leaves to its callers: an empty path is -ENOENT;
 * a missing final component followed by '/' is -ENOENT except when
 * creating (-EISDIR), and is fine for mkdir and rename of directories;
 * "." and ".." as the final component of a namespace operation get that
 * operation's errno.
 *
 * These operations record what they change in cmd->chg (when set) for
 * the FUSE front end's kernel caches.
 */
#include "device/engine/engine_int.h"
#include "device/engine/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A resolved path whose parent directory is pinned. */
struct rpath {
    struct path_res r;
    bool slash;                 /* the path ended with '/' */
};

static bool ends_with_slash(const char *p)
{
    size_t n = strlen(p);
    return n > 1 && p[n - 1] == '/';
}

/* Walks path and pins the parent. Returns 0 or -errno. */
static int resolve(struct engine *e, struct eng_cmd *c, const char *path, bool follow,
                   struct rpath *rp)
{
    if (!path || !*path)
        return -ENOENT;
    rp->slash = ends_with_slash(path);
    int r = path_walk(e->fs, &c->cred, path, follow, &rp->r);
    return r ? r : sfs_iget(e->fs, rp->r.parent);
}

static void unpin(struct engine *e, struct rpath *rp)
{
    sfs_iput(e->fs, rp->r.parent);
}

/* The final component of path as written ("" for "/"), trailing slashes
 * ignored: namespace operations refuse "." and ".." by name. */
static void last_name(const char *path, char *out)
{
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    size_t l = n - b > SFS_NAME_MAX ? SFS_NAME_MAX : n - b;
    memcpy(out, path + b, l);
    out[l] = '\0';
}

/* Copies path without its trailing slashes ("/" stays "/"). */
static int strip_slashes(const char *path, char *out)
{
    size_t n = path ? strlen(path) : 0;
    if (n >= PATH_MAX)
        return -ENAMETOOLONG;
    while (n > 1 && path[n - 1] == '/')
        n--;
    memcpy(out, path ? path : "", n);
    out[n] = '\0';
    return 0;
}

/* ---- operations --------------------------------------------------------- */

int64_t eop_nop(struct engine *e, struct eng_cmd *c)
{
    return 0;
}

/* Creates the missing final component and opens it (c->flags, c->mode). */
static int create_open(struct engine *e, struct eng_cmd *c, struct rpath *rp)
{
    c->ino = rp->r.parent;
    c->name = rp->r.name;
    int r = (int)eop_create(e, c);
    if (r)
        return r;
    sfs_iput(e->fs, c->attr.ino);   /* the door keeps no lookup reference */
    eng_chg_entry(c, rp->r.parent, rp->r.name);
    return 0;
}

/* Opens the existing file the walk found. */
static int open_found(struct engine *e, struct eng_cmd *c, const struct sfs_attr *a)
{
    uint32_t fl = c->flags;
    if ((fl & O_CREAT) && (fl & O_EXCL))
        return -EEXIST;
    if (S_ISLNK(a->mode))
        return -ELOOP;   /* O_NOFOLLOW */
    if ((fl & O_DIRECTORY) && !S_ISDIR(a->mode))
        return -ENOTDIR;
    if ((fl & O_CREAT) && S_ISDIR(a->mode))
        return -EISDIR;
    c->ino = a->ino;
    int r = (int)eop_open(e, c);
    if (!r && (fl & O_TRUNC) && (fl & O_ACCMODE) != O_RDONLY && S_ISREG(a->mode))
        eng_chg_inode(c, a->ino, 0, 0);
    return r;
}

int64_t eop_open_path(struct engine *e, struct eng_cmd *c)
{
    uint32_t fl = c->flags;
    bool creat = fl & O_CREAT, excl = creat && (fl & O_EXCL);
    for (int tries = 0; tries < 3; tries++) {
        struct rpath rp;
        int r = resolve(e, c, c->path, !(fl & O_NOFOLLOW) && !excl, &rp);
        if (r == -EISDIR && !creat)
            r = -ENOENT;   /* "missing/" */
        if (r)
            return r;
        bool found = rp.r.exists;
        r = found ? open_found(e, c, &rp.r.attr) : creat ? create_open(e, c, &rp) : -ENOENT;
        unpin(e, &rp);
        if (r != -EEXIST || found || excl)
            return r;   /* -EEXIST without O_EXCL: created meanwhile, open it */
    }
    return -EEXIST;
}

/* Walks a path that must exist (symlinks followed): STAT, READDIR. */
static int existing(struct engine *e, struct eng_cmd *c, struct sfs_attr *a)
{
    struct rpath rp;
    int r = resolve(e, c, c->path, true, &rp);
    if (r)
        return r == -EISDIR ? -ENOENT : r;
    if (rp.r.exists)
        *a = rp.r.attr;
    unpin(e, &rp);
    return rp.r.exists ? 0 : -ENOENT;
}

int64_t eop_stat_path(struct engine *e, struct eng_cmd *c)
{
    return existing(e, c, &c->attr);
}

int64_t eop_fstat(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    int r = hdl_get(eng_hdl(e, c), c->fh, &h);
    return r ? r : sfs_getattr(e->fs, h.ino, &c->attr);
}

/* The error for a namespace op whose final component is "", "." or "..". */
static int dot_error(unsigned op, const char *last)
{
    bool root = !last[0], dot = !strcmp(last, "."), dotdot = !strcmp(last, "..");
    if (!root && !dot && !dotdot)
        return 0;
    switch (op) {
    case ENG_OP_MKDIR_PATH: return -EEXIST;
    case ENG_OP_UNLINK_PATH: return -EISDIR;
    case ENG_OP_RMDIR_PATH: return root ? -EBUSY : dot ? -EINVAL : -ENOTEMPTY;
    default: return -EBUSY;
    }
}

/* Resolves the parent of a namespace op's final component (not
 * followed); rp->r.exists / attr describe that component. */
static int parent_walk(struct engine *e, struct eng_cmd *c, const char *path,
                       struct rpath *rp)
{
    char last[SFS_NAME_MAX + 1];
    if (!path || !*path)
        return -ENOENT;
    last_name(path, last);
    int r = dot_error(c->op, last);
    if (r)
        return r;
    r = resolve(e, c, path, false, rp);
    return r == -EISDIR ? -ENOENT : r;   /* "missing/" */
}

int64_t eop_unlink_path(struct engine *e, struct eng_cmd *c)
{
    struct rpath rp;
    int r = parent_walk(e, c, c->path, &rp);
    if (r)
        return r;
    c->ino = rp.r.parent;
    c->name = rp.r.name;
    r = (int)eop_unlink(e, c);
    if (!r) {
        eng_chg_entry(c, rp.r.parent, rp.r.name);
        eng_chg_inode(c, rp.r.attr.ino, -1, 0);
    }
    unpin(e, &rp);
    return r;
}

/* MKDIR and RMDIR: directories, so "dir/" names "dir". */
static int dir_op(struct engine *e, struct eng_cmd *c, int64_t (*op)(struct engine *,
                                                                   struct eng_cmd *))
{
    char path[PATH_MAX];
    struct rpath rp;
    int r = strip_slashes(c->path, path);
    if (!r)
        r = parent_walk(e, c, path, &rp);
    if (r)
        return r;
    c->ino = rp.r.parent;
    c->name = rp.r.name;
    r = (int)op(e, c);
    if (!r && c->op == ENG_OP_MKDIR_PATH)
        sfs_iput(e->fs, c->attr.ino);   /* the door keeps no lookup reference */
    if (!r) {
        eng_chg_entry(c, rp.r.parent, rp.r.name);
        if (rp.r.exists)
            eng_chg_inode(c, rp.r.attr.ino, -1, 0);
    }
    unpin(e, &rp);
    return r;
}

int64_t eop_mkdir_path(struct engine *e, struct eng_cmd *c)
{
    return dir_op(e, c, eop_mkdir);
}

int64_t eop_rmdir_path(struct engine *e, struct eng_cmd *c)
{
    return dir_op(e, c, eop_rmdir);
}

/* The rename itself, both parents pinned. */
static int rename_pinned(struct engine *e, struct eng_cmd *c, struct rpath *a,
                         struct rpath *b)
{
    c->ino = a->r.parent;
    c->name = a->r.name;
    c->ino2 = b->r.parent;
    c->name2 = b->r.name;
    int r = (int)eop_rename(e, c);
    if (!r) {
        eng_chg_entry(c, a->r.parent, a->r.name);
        eng_chg_entry(c, b->r.parent, b->r.name);
        eng_chg_inode(c, a->r.attr.ino, -1, 0);
        if (b->r.exists)
            eng_chg_inode(c, b->r.attr.ino, -1, 0);
    }
    return r;
}

int64_t eop_rename_path(struct engine *e, struct eng_cmd *c)
{
    struct rpath a, b;
    char to[PATH_MAX];
    int r = parent_walk(e, c, c->path, &a);
    if (r)
        return r;
    /* a directory may be renamed to "new/", anything else may not */
    bool dir = a.r.exists && S_ISDIR(a.r.attr.mode);
    r = !dir && c->path2 && ends_with_slash(c->path2) ? -ENOTDIR : strip_slashes(c->path2, to);
    if (!r)
        r = parent_walk(e, c, to, &b);
    if (!r) {
        r = a.r.exists ? rename_pinned(e, c, &a, &b) : -ENOENT;
        unpin(e, &b);
    }
    unpin(e, &a);
    return r;
}

int64_t eop_readdir_path(struct engine *e, struct eng_cmd *c)
{
    struct sfs_attr a;
    int r = existing(e, c, &a);
    if (!r && !S_ISDIR(a.mode))
        r = -ENOTDIR;
    if (r)
        return r;
    c->ino = a.ino;
    r = (int)eop_opendir(e, c);   /* read permission; a handle for the listing */
    if (r)
        return r;
    c->fh = c->out_fh;
    c->plus = false;
    r = (int)eop_readdir(e, c);
    eop_release(e, c);
    return r;
}

/* ---- extended attributes by path ------------------------------------------------ */

/* Runs an inode-based xattr op (engine_ops.c: its permission checks) on
 * the file the path names, symlinks followed; the inode is pinned while
 * it runs, and must still be the one the walk found. */
static int64_t xattr_on_path(struct engine *e, struct eng_cmd *c,
                             int64_t (*op)(struct engine *, struct eng_cmd *), bool changes)
{
    struct sfs_attr a, now;
    int r = existing(e, c, &a);
    if (!r)
        r = sfs_iget(e->fs, a.ino);
    if (r)
        return r;
    r = sfs_getattr(e->fs, a.ino, &now);
    int64_t n = r ? r : now.generation != a.generation ? -ENOENT : 0;
    if (!n) {
        c->ino = a.ino;
        n = op(e, c);
    }
    if (n >= 0 && changes)
        eng_chg_inode(c, a.ino, -1, 0);   /* mode (an ACL), cached ACLs */
    sfs_iput(e->fs, a.ino);
    return n;
}

int64_t eop_getxattr_path(struct engine *e, struct eng_cmd *c)
{
    return xattr_on_path(e, c, eop_getxattr, false);
}

int64_t eop_setxattr_path(struct engine *e, struct eng_cmd *c)
{
    return xattr_on_path(e, c, eop_setxattr, true);
}

int64_t eop_listxattr_path(struct engine *e, struct eng_cmd *c)
{
    return xattr_on_path(e, c, eop_listxattr, false);
}

int64_t eop_removexattr_path(struct engine *e, struct eng_cmd *c)
{
    return xattr_on_path(e, c, eop_removexattr, true);
}

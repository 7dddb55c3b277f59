/*
 * device/engine_path.c - the engine's path-based operations for the
 * libcisc door: path resolution, then the inode-based operations of
 * engine_ops.c (their permission checks, their StorageFS calls).
 *
 * Resolution walks from the root one component at a time. Every
 * directory searched needs execute (search) permission for the caller;
 * "." stays, ".." goes up and stops at the root; a symlink met on the way
 * (or at the end, when following) is replaced by its target - a relative
 * one from the directory holding it, an absolute one from the root (the
 * device is the caller's whole world) - at most WALK_MAX_LINKS times
 * (-ELOOP). The directory being searched holds an inode reference, so it
 * cannot be freed and its number reused under the walk; the walk ends
 * with a reference on the final component's parent, which the operation
 * drops when done.
 *
 * These operations record what they change in cmd->chg (when set) for
 * the FUSE front end's kernel caches.
 */
#include "device/engine_int.h"
#include "device/perm.h"
#include "device/sysdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_MAX_LINKS 40
#define WALK_BUF (2 * PATH_MAX)

#define WALK_FOLLOW (1u << 0)   /* follow a symlink in the final component */
#define WALK_PARENT (1u << 1)   /* do not look the final component up */

struct walk {
    uint64_t dir;                   /* parent of the final component (referenced) */
    char last[SFS_NAME_MAX + 1];    /* final component; "" when the path is "/" */
    bool slash;                     /* the path ended with '/' */
    bool found;                     /* final component exists (not WALK_PARENT) */
    struct sfs_attr attr;           /* its attributes when found */
    char *buf, *tmp;                /* remaining path, and room to splice a symlink in */
    const char *rem;
    unsigned links;
};

static bool is_dot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* Moves the walk's reference from w->dir to ino (a directory). */
static int walk_enter(struct engine *e, struct walk *w, uint64_t ino)
{
    if (ino == w->dir)
        return 0;
    int r = sfs_iget(e->fs, ino);
    if (r)
        return r;
    sfs_iput(e->fs, w->dir);
    w->dir = ino;
    return 0;
}

/* Search permission on the current directory. */
static int walk_search(struct engine *e, struct eng_cmd *c, struct walk *w)
{
    struct sfs_attr d;
    int r = sfs_getattr(e->fs, w->dir, &d);
    if (!r && !S_ISDIR(d.mode))
        r = -ENOTDIR;
    return r ? r : perm_check(&c->cred, &d, X_OK);
}

/* Replaces the symlink `ino` by its target followed by `rest`. */
static int walk_splice(struct engine *e, struct walk *w, uint64_t ino, const char *rest)
{
    if (++w->links > WALK_MAX_LINKS)
        return -ELOOP;
    ssize_t n = sfs_readlink(e->fs, ino, w->tmp, PATH_MAX);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return -ENOENT;
    size_t rl = strlen(rest), sep = rl ? 1 : 0;
    if ((size_t)n + sep + rl >= WALK_BUF)
        return -ENAMETOOLONG;
    w->tmp[n] = '/';   /* overwritten by the NUL when rest is empty */
    memcpy(w->tmp + n + sep, rest, rl + 1);
    char *t = w->buf;
    w->buf = w->tmp;
    w->tmp = t;
    w->rem = w->buf;
    if (w->buf[0] == '/')
        return walk_enter(e, w, SFS_ROOT_INO);
    return 0;
}

/* Steps into the intermediate component `name` (rest follows it). */
static int walk_step(struct engine *e, struct eng_cmd *c, struct walk *w, const char *name,
                     const char *rest)
{
    struct sfs_attr a;
    int r = walk_search(e, c, w);
    if (!r)
        r = sysdir_check(w->dir, name, -ENOENT);   /* device/sysdir.h */
    if (!r)
        r = sfs_lookup(e->fs, w->dir, name, &a);
    if (r)
        return r;
    if (S_ISLNK(a.mode))
        return walk_splice(e, w, a.ino, rest);
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    w->rem = rest;
    return walk_enter(e, w, a.ino);
}

/* Looks the final component up; may splice a symlink in (returns 1). */
static int walk_final(struct engine *e, struct eng_cmd *c, struct walk *w, unsigned flags)
{
    if (flags & WALK_PARENT)
        return 0;
    if (!w->last[0]) {   /* "/": the directory itself */
        w->found = true;
        return sfs_getattr(e->fs, w->dir, &w->attr);
    }
    int r = walk_search(e, c, w);
    if (!r)
        r = sysdir_check(w->dir, w->last, -ENOENT);   /* device/sysdir.h */
    if (!r)
        r = sfs_lookup(e->fs, w->dir, w->last, &w->attr);
    if (r)
        return r == -ENOENT ? 0 : r;
    w->found = true;
    if (S_ISLNK(w->attr.mode) && ((flags & WALK_FOLLOW) || w->slash)) {
        w->found = false;
        r = walk_splice(e, w, w->attr.ino, w->slash ? "/" : "");
        return r ? r : 1;
    }
    if (w->slash && !S_ISDIR(w->attr.mode))
        return -ENOTDIR;
    return 0;
}

/* Copies out the next component of w->rem; returns its length (0: none
 * left, the path names the current directory) and sets *rest past it
 * and the slashes after it. */
static int next_name(struct walk *w, char *name, const char **rest, bool *slash)
{
    const char *p = w->rem;
    while (*p == '/')
        p++;
    size_t n = strcspn(p, "/");
    if (n > SFS_NAME_MAX)
        return -ENAMETOOLONG;
    memcpy(name, p, n);
    name[n] = '\0';
    const char *q = p + n;
    *slash = *q == '/';
    while (*q == '/')
        q++;
    *rest = q;
    return (int)n;
}

static int walk_loop(struct engine *e, struct eng_cmd *c, struct walk *w, unsigned flags)
{
    char name[SFS_NAME_MAX + 1];
    for (;;) {
        const char *rest;
        bool slash;
        int n = next_name(w, name, &rest, &slash);
        if (n < 0)
            return n;
        if (n > 0 && *rest) {   /* an intermediate component */
            int r = walk_step(e, c, w, name, rest);
            if (r)
                return r;
            continue;
        }
        memcpy(w->last, name, (size_t)n + 1);
        w->slash = slash;
        int r = walk_final(e, c, w, flags);
        if (r <= 0)
            return r;
    }
}

/* Resolves c's path `path`: on success (0) w->dir holds a reference the
 * caller drops with walk_done. */
static int walk(struct engine *e, struct eng_cmd *c, const char *path, unsigned flags,
                struct walk *w)
{
    memset(w, 0, sizeof(*w));
    if (!path || !*path)
        return -ENOENT;
    size_t len = strlen(path);
    if (len >= PATH_MAX)
        return -ENAMETOOLONG;
    w->buf = malloc(2 * WALK_BUF);
    if (!w->buf)
        return -ENOMEM;
    w->tmp = w->buf + WALK_BUF;
    memcpy(w->buf, path, len + 1);
    w->rem = w->buf;
    w->dir = SFS_ROOT_INO;
    int r = sfs_iget(e->fs, w->dir);
    if (!r) {
        r = walk_loop(e, c, w, flags);
        if (r)
            sfs_iput(e->fs, w->dir);
    }
    free(w->buf < w->tmp ? w->buf : w->tmp);
    w->buf = w->tmp = NULL;
    return r;
}

static void walk_done(struct engine *e, struct walk *w)
{
    sfs_iput(e->fs, w->dir);
}

/* ---- operations --------------------------------------------------------- */

int64_t eop_nop(struct engine *e, struct eng_cmd *c)
{
    return 0;
}

/* Creates w->last in w->dir and opens it (c->flags, c->mode). */
static int create_open(struct engine *e, struct eng_cmd *c, struct walk *w)
{
    if (w->slash || !w->last[0] || is_dot(w->last))
        return w->slash ? -EISDIR : -EEXIST;
    c->ino = w->dir;
    c->name = w->last;
    int r = (int)eop_create(e, c);
    if (r)
        return r;
    sfs_iput(e->fs, c->attr.ino);   /* the door keeps no lookup reference */
    eng_chg_entry(c, w->dir, w->last);
    return 0;
}

/* Opens the existing file w found. */
static int open_found(struct engine *e, struct eng_cmd *c, struct walk *w)
{
    uint32_t fl = c->flags;
    if ((fl & O_CREAT) && (fl & O_EXCL))
        return -EEXIST;
    if (S_ISLNK(w->attr.mode))
        return -ELOOP;   /* O_NOFOLLOW */
    if ((fl & O_DIRECTORY) && !S_ISDIR(w->attr.mode))
        return -ENOTDIR;
    if ((fl & O_CREAT) && S_ISDIR(w->attr.mode))
        return -EISDIR;
    c->ino = w->attr.ino;
    int r = (int)eop_open(e, c);
    if (!r && (fl & O_TRUNC) && (fl & O_ACCMODE) != O_RDONLY && S_ISREG(w->attr.mode))
        eng_chg_inode(c, w->attr.ino, 0, 0);
    return r;
}

int64_t eop_open_path(struct engine *e, struct eng_cmd *c)
{
    uint32_t fl = c->flags;
    bool excl = (fl & O_CREAT) && (fl & O_EXCL);
    unsigned wf = (fl & O_NOFOLLOW) || excl ? 0 : WALK_FOLLOW;
    for (int tries = 0; tries < 3; tries++) {
        struct walk w;
        int r = walk(e, c, c->path, wf, &w);
        if (r)
            return r;
        if (w.found)
            r = open_found(e, c, &w);
        else
            r = (fl & O_CREAT) ? create_open(e, c, &w) : -ENOENT;
        walk_done(e, &w);
        if (r != -EEXIST || w.found || excl)
            return r;   /* -EEXIST without O_EXCL: created meanwhile, open it */
    }
    return -EEXIST;
}

int64_t eop_stat_path(struct engine *e, struct eng_cmd *c)
{
    struct walk w;
    int r = walk(e, c, c->path, WALK_FOLLOW, &w);
    if (r)
        return r;
    if (w.found)
        c->attr = w.attr;
    walk_done(e, &w);
    return w.found ? 0 : -ENOENT;
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
    switch (op) {
    case ENG_OP_MKDIR_PATH: return -EEXIST;
    case ENG_OP_UNLINK_PATH: return -EISDIR;
    case ENG_OP_RMDIR_PATH:
        return !last[0] ? -EBUSY : !strcmp(last, ".") ? -EINVAL : -ENOTEMPTY;
    default: return -EBUSY;
    }
}

/* Resolves the parent for a namespace op; *victim gets the final
 * component's inode (0 if none). */
static int parent_walk(struct engine *e, struct eng_cmd *c, const char *path,
                       struct walk *w, uint64_t *victim)
{
    int r = walk(e, c, path, WALK_PARENT, w);
    if (r)
        return r;
    struct sfs_attr a;
    *victim = 0;
    if (!w->last[0] || is_dot(w->last))
        r = dot_error(c->op, w->last);
    else if (!sfs_lookup(e->fs, w->dir, w->last, &a))
        *victim = a.ino;
    if (!r && w->slash && *victim && !S_ISDIR(a.mode))
        r = -ENOTDIR;
    if (r)
        walk_done(e, w);
    return r;
}

int64_t eop_unlink_path(struct engine *e, struct eng_cmd *c)
{
    struct walk w;
    uint64_t victim;
    int r = parent_walk(e, c, c->path, &w, &victim);
    if (r)
        return r;
    c->ino = w.dir;
    c->name = w.last;
    r = w.slash && victim ? -EISDIR : (int)eop_unlink(e, c);
    if (!r) {
        eng_chg_entry(c, w.dir, w.last);
        eng_chg_inode(c, victim, -1, 0);
    }
    walk_done(e, &w);
    return r;
}

int64_t eop_mkdir_path(struct engine *e, struct eng_cmd *c)
{
    struct walk w;
    uint64_t victim;
    int r = parent_walk(e, c, c->path, &w, &victim);
    if (r)
        return r;
    c->ino = w.dir;
    c->name = w.last;
    r = (int)eop_mkdir(e, c);
    if (!r) {
        sfs_iput(e->fs, c->attr.ino);   /* the door keeps no lookup reference */
        eng_chg_entry(c, w.dir, w.last);
    }
    walk_done(e, &w);
    return r;
}

int64_t eop_rmdir_path(struct engine *e, struct eng_cmd *c)
{
    struct walk w;
    uint64_t victim;
    int r = parent_walk(e, c, c->path, &w, &victim);
    if (r)
        return r;
    c->ino = w.dir;
    c->name = w.last;
    r = (int)eop_rmdir(e, c);
    if (!r) {
        eng_chg_entry(c, w.dir, w.last);
        eng_chg_inode(c, victim, -1, 0);
    }
    walk_done(e, &w);
    return r;
}

int64_t eop_rename_path(struct engine *e, struct eng_cmd *c)
{
    struct walk a, b;
    uint64_t va, vb;
    int r = parent_walk(e, c, c->path, &a, &va);
    if (r)
        return r;
    r = parent_walk(e, c, c->path2, &b, &vb);
    if (r) {
        walk_done(e, &a);
        return r;
    }
    c->ino = a.dir;
    c->name = a.last;
    c->ino2 = b.dir;
    c->name2 = b.last;
    r = (int)eop_rename(e, c);
    if (!r) {
        eng_chg_entry(c, a.dir, a.last);
        eng_chg_entry(c, b.dir, b.last);
        eng_chg_inode(c, va, -1, 0);
        if (vb)
            eng_chg_inode(c, vb, -1, 0);
    }
    walk_done(e, &b);
    walk_done(e, &a);
    return r;
}

int64_t eop_readdir_path(struct engine *e, struct eng_cmd *c)
{
    struct walk w;
    int r = walk(e, c, c->path, WALK_FOLLOW, &w);
    if (r)
        return r;
    if (!w.found)
        r = -ENOENT;
    else if (!S_ISDIR(w.attr.mode))
        r = -ENOTDIR;
    walk_done(e, &w);
    if (r)
        return r;
    c->ino = w.attr.ino;
    r = (int)eop_opendir(e, c);   /* read permission; a handle for the listing */
    if (r)
        return r;
    c->fh = c->out_fh;
    c->plus = false;
    r = (int)eop_readdir(e, c);
    eop_release(e, c);
    return r;
}

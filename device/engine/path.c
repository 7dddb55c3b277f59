/* device/engine/path.c - path walk from the device root with search-permission
 * checks and symbolic links (see path.h). */
#include "device/engine/path.h"
#include "device/engine/sysdir.h"

#include "device/engine/perm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
    struct sfs *fs;
    struct eng_cred *cred;
    int links;                  /* symbolic links followed so far */
};

static int walk_from(struct walk *w, uint64_t dir, const char *path, bool follow,
                     struct path_res *res);

/* The result "the directory d itself" (root, ".", ".."). */
static void self_result(struct path_res *res, const struct sfs_attr *d)
{
    res->parent = d->ino;
    res->name[0] = '\0';
    res->exists = true;
    res->attr = *d;
    res->dir = *d;
}

/* cur must be a directory the caller may search. */
static int searchable(struct walk *w, const struct sfs_attr *cur)
{
    if (!S_ISDIR(cur->mode))
        return -ENOTDIR;
    return perm_check(w->cred, cur, X_OK);
}

/* Follows the link a found in directory cur; result in *res. */
static int follow_link(struct walk *w, const struct sfs_attr *cur, const struct sfs_attr *a,
                       bool follow, struct path_res *res)
{
    if (++w->links > PATH_MAX_LINKS)
        return -ELOOP;
    char *target = malloc(SFS_SYMLINK_MAX + 1);
    if (!target)
        return -ENOMEM;
    ssize_t n = sfs_readlink(w->fs, a->ino, target, SFS_SYMLINK_MAX);
    int r = n < 0 ? (int)n : n == 0 ? -ENOENT : 0;
    if (!r) {
        target[n] = '\0';
        r = walk_from(w, cur->ino, target, follow, res);
    }
    free(target);
    return r;
}

/* One normal component c of length len in directory *cur. last: nothing
 * follows. On a directory to continue into, updates *cur. */
static int component(struct walk *w, struct sfs_attr *cur, const char *c, size_t len,
                     bool last, bool follow, struct path_res *res)
{
    char name[SFS_NAME_MAX + 1];
    memcpy(name, c, len);
    name[len] = '\0';
    struct sfs_attr a;
    int r = searchable(w, cur);
    if (!r)   /* the device's own directory: device/engine/sysdir.h */
        r = sysdir_check(cur->ino, name, -ENOENT);   /* looks absent */
    if (!r)
        r = sfs_lookup(w->fs, cur->ino, name, &a);
    if (r == -ENOENT && last) {
        *res = (struct path_res){ .parent = cur->ino, .exists = false, .dir = *cur };
        memcpy(res->name, name, len + 1);
        return 0;
    }
    if (r)
        return r;
    if (S_ISLNK(a.mode) && (!last || follow)) {
        struct path_res sub;
        r = follow_link(w, cur, &a, true, &sub);
        if (r || last) {
            if (!r)
                *res = sub;
            return r;
        }
        if (!sub.exists)
            return -ENOENT;
        a = sub.attr;
    }
    if (last) {
        *res = (struct path_res){ .parent = cur->ino, .exists = true, .attr = a, .dir = *cur };
        memcpy(res->name, name, len + 1);
        return 0;
    }
    if (!S_ISDIR(a.mode))
        return -ENOTDIR;
    *cur = a;
    return 0;
}

/* "." and "..": stay, or move to the parent. */
static int dots(struct walk *w, struct sfs_attr *cur, bool up)
{
    int r = searchable(w, cur);
    if (r || !up)
        return r;
    return sfs_lookup(w->fs, cur->ino, "..", cur);
}

static int walk_from(struct walk *w, uint64_t dir, const char *path, bool follow,
                     struct path_res *res)
{
    struct sfs_attr cur;
    int r = sfs_getattr(w->fs, path[0] == '/' ? SFS_ROOT_INO : dir, &cur);
    self_result(res, &cur);
    for (const char *p = path; !r;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, "/");
        const char *next = p + len;
        while (*next == '/')
            next++;
        bool last = *next == '\0', trailing = last && p[len] == '/';
        if (len > SFS_NAME_MAX)
            return -ENAMETOOLONG;
        bool dot = len == 1 && p[0] == '.', dotdot = len == 2 && !strncmp(p, "..", 2);
        if (dot || dotdot) {
            r = dots(w, &cur, dotdot);
            if (!r)
                self_result(res, &cur);
        } else {
            r = component(w, &cur, p, len, last, follow || trailing, res);
            if (!r && trailing)
                r = !res->exists ? -EISDIR : !S_ISDIR(res->attr.mode) ? -ENOTDIR : 0;
        }
        p = next;
    }
    return r;
}

int path_walk(struct sfs *fs, struct eng_cred *cred, const char *path, bool follow,
              struct path_res *res)
{
    if (!path || !*path)
        return -EINVAL;
    if (strlen(path) >= 4096)
        return -ENAMETOOLONG;
    struct walk w = { fs, cred, 0 };
    return walk_from(&w, SFS_ROOT_INO, path, follow, res);
}

/* device/engine/perm.c - POSIX permission rules (see perm.h). */
#include "device/engine/perm.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/storagefs/acl.h"

static void load_groups(struct eng_cred *c)
{
    if (c->ngroups >= 0)
        return;
    int n = c->groups_fn ? c->groups_fn(c->groups_arg, c->groups, ENG_GROUPS_MAX) : 0;
    c->ngroups = n < 0 ? 0 : (n > (int)ENG_GROUPS_MAX ? (int)ENG_GROUPS_MAX : n);
}

bool perm_in_group(struct eng_cred *c, uint32_t gid)
{
    if (c->gid == gid)
        return true;
    load_groups(c);
    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i] == gid)
            return true;
    return false;
}

static int root_check(const struct sfs_attr *a, int mask)
{
    if (!(mask & X_OK) || S_ISDIR(a->mode))
        return 0;
    return (a->mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ? 0 : -EACCES;
}

static bool cred_in_group(void *arg, uint32_t gid)
{
    return perm_in_group(arg, gid);
}

/* A caller who is neither root nor the owner: the inode's access ACL
 * decides when it has one (POSIX.1e; the owner's entry is the mode's
 * owner bits). Returns 0, -EACCES, 1 when there is no ACL, or -errno. */
static int acl_check(struct eng_cred *c, const struct sfs_attr *a, int mask)
{
    struct sfs_acl acl;
    if (!c->acl_fs || !a->ino || S_ISLNK(a->mode))
        return 1;
    int r = sfs_acl_get(c->acl_fs, a->ino, SFS_ACL_ACCESS, &acl);
    if (r == -ENODATA || r == -ENOENT)   /* -ENOENT: freed meanwhile, as no ACL */
        return 1;
    if (r)
        return r;
    return acl_permits(&acl, c->uid, a->uid, a->gid, cred_in_group, c, (unsigned)mask)
               ? 0
               : -EACCES;
}

int perm_check(struct eng_cred *c, const struct sfs_attr *a, int mask)
{
    mask &= R_OK | W_OK | X_OK;
    if (c->uid == 0)
        return root_check(a, mask);
    unsigned bits;
    int r;
    if (c->uid == a->uid)
        bits = a->mode >> 6;
    else if ((r = acl_check(c, a, mask)) <= 0)
        return r;
    else if (((a->mode >> 3) & 7) != (a->mode & 7) && perm_in_group(c, a->gid))
        bits = a->mode >> 3;   /* membership only matters when group != other */
    else
        bits = a->mode;
    return ((unsigned)mask & ~bits & 7) ? -EACCES : 0;
}

int perm_may_create(struct eng_cred *c, const struct sfs_attr *dir)
{
    if (!S_ISDIR(dir->mode))
        return -ENOTDIR;
    return perm_check(c, dir, W_OK | X_OK);
}

int perm_may_delete(struct eng_cred *c, const struct sfs_attr *dir,
                    const struct sfs_attr *victim)
{
    int r = perm_may_create(c, dir);
    if (r)
        return r;
    if ((dir->mode & S_ISVTX) && c->uid != 0 && c->uid != dir->uid && c->uid != victim->uid)
        return -EPERM;
    return 0;
}

static bool is_owner(struct eng_cred *c, const struct sfs_attr *a)
{
    return c->uid == 0 || c->uid == a->uid;
}

static int check_chown(struct eng_cred *c, const struct sfs_attr *cur,
                       const struct sfs_attr *in, unsigned valid)
{
    if (c->uid == 0)
        return 0;
    if ((valid & SFS_SET_UID) && in->uid != cur->uid)
        return -EPERM;
    if ((valid & SFS_SET_GID) && in->gid != cur->gid &&
        (c->uid != cur->uid || !perm_in_group(c, in->gid)))
        return -EPERM;
    return 0;
}

static int check_times(struct eng_cred *c, const struct sfs_attr *cur, unsigned valid)
{
    if (is_owner(c, cur))
        return 0;
    if (valid & (SFS_SET_ATIME | SFS_SET_MTIME))
        return -EPERM;   /* explicit times: owner only */
    return perm_check(c, cur, W_OK);   /* "now": owner or writer */
}

/* The set-id bits a change clears from mode: set-user-id always,
 * set-group-id only with group execute (else a mandatory-locking mark). */
static uint32_t setid_bits(uint32_t mode)
{
    uint32_t gx = S_ISGID | S_IXGRP;
    return (mode & S_ISUID) | ((mode & gx) == gx ? S_ISGID : 0);
}

uint32_t perm_setid_kill(const struct eng_cred *c, const struct sfs_attr *a)
{
    return c->uid == 0 || !S_ISREG(a->mode) ? 0 : setid_bits(a->mode);
}

/* chown of a non-directory clears the set-id bits of the mode the request
 * leaves (Linux's chown_common asks for it whoever calls, even when
 * neither id changes). */
static void kill_setid(const struct sfs_attr *cur, struct sfs_attr *in, unsigned *valid)
{
    uint32_t mode = (*valid & SFS_SET_MODE) ? in->mode : cur->mode;
    uint32_t kill = setid_bits(mode);
    if (S_ISDIR(cur->mode) || !kill)
        return;
    in->mode = mode & ~kill;
    *valid |= SFS_SET_MODE;
}

/* A writer who is not the owner may only clear set-id bits (what the
 * kernel asks for before it lets a write or truncate through): the new
 * mode is the old one less some of them. */
static bool only_kills_setid(struct eng_cred *c, const struct sfs_attr *cur,
                             const struct sfs_attr *in, unsigned valid)
{
    uint32_t was = cur->mode & 07777, now = in->mode & 07777;
    uint32_t dropped = was & ~now;
    if ((valid & ~(SFS_SET_MODE | SFS_SET_SIZE | SFS_SET_CTIME)) || (now & ~was) ||
        !dropped || (dropped & ~(uint32_t)(S_ISUID | S_ISGID)))
        return false;
    return perm_check(c, cur, W_OK) == 0;
}

int perm_setattr(struct eng_cred *c, const struct sfs_attr *cur, struct sfs_attr *in,
                 unsigned *valid, bool wr_handle)
{
    if ((*valid & SFS_SET_SIZE) && !wr_handle) {
        int r = perm_check(c, cur, W_OK);
        if (r)
            return r;
    }
    if ((*valid & SFS_SET_MODE) && !is_owner(c, cur) && !only_kills_setid(c, cur, in, *valid))
        return -EPERM;
    int r = check_chown(c, cur, in, *valid);
    if (!r && (*valid & (SFS_SET_ATIME | SFS_SET_MTIME | SFS_SET_ATIME_NOW | SFS_SET_MTIME_NOW)))
        r = check_times(c, cur, *valid);
    if (r)
        return r;
    if ((*valid & SFS_SET_MODE) && c->uid != 0) {
        uint32_t gid = (*valid & SFS_SET_GID) ? in->gid : cur->gid;
        if ((in->mode & S_ISGID) && !perm_in_group(c, gid))
            in->mode &= ~(uint32_t)S_ISGID;
    }
    if (*valid & (SFS_SET_UID | SFS_SET_GID))
        kill_setid(cur, in, valid);
    return 0;
}

void perm_new_owner(struct eng_cred *c, const struct sfs_attr *dir, uint32_t *mode,
                    uint32_t *uid, uint32_t *gid)
{
    *uid = c->uid;
    *gid = c->gid;
    if (dir->mode & S_ISGID) {
        *gid = dir->gid;
        if (S_ISDIR(*mode))
            *mode |= S_ISGID;
    }
    if (!S_ISDIR(*mode) && (*mode & S_ISGID) && (*mode & S_IXGRP) && c->uid != 0 &&
        !perm_in_group(c, *gid))
        *mode &= ~(uint32_t)S_ISGID;
}

static int user_xattr(struct eng_cred *c, const struct sfs_attr *a, int mask)
{
    if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
        return mask & W_OK ? -EPERM : -ENODATA;
    if ((mask & W_OK) && S_ISDIR(a->mode) && (a->mode & S_ISVTX) && !is_owner(c, a))
        return -EPERM;
    return perm_check(c, a, mask);
}

int perm_xattr(struct eng_cred *c, const struct sfs_attr *a, const char *name, int mask)
{
    if (!strncmp(name, "user.", 5))
        return user_xattr(c, a, mask);
    if (!strncmp(name, "trusted.", 8))
        return c->uid == 0 ? 0 : -EPERM;
    if (!strncmp(name, "security.", 9))
        return (mask & W_OK) && c->uid != 0 ? -EPERM : 0;
    if (acl_type_of(name) >= 0 && !S_ISLNK(a->mode))   /* ACLs: anyone reads, */
        return (mask & W_OK) && !is_owner(c, a) ? -EPERM : 0;   /* the owner sets */
    return -EOPNOTSUPP;
}

bool perm_acl_kills_sgid(struct eng_cred *c, const struct sfs_attr *a)
{
    return c->uid != 0 && !perm_in_group(c, a->gid);
}

int perm_xattr_remove(struct eng_cred *c, const struct sfs_attr *a, const char *name)
{
    int r = perm_xattr(c, a, name, W_OK);
    if (r == -EPERM && S_ISREG(a->mode) && !strcmp(name, PERM_XATTR_CAPS))
        return perm_check(c, a, W_OK) ? -EPERM : 0;
    return r;
}

int perm_open_mask(uint32_t flags)
{
    int mask = 0;
    switch (flags & O_ACCMODE) {
    case O_RDONLY: mask = R_OK; break;
    case O_WRONLY: mask = W_OK; break;
    default: mask = R_OK | W_OK; break;
    }
    if (flags & O_TRUNC)
        mask |= W_OK;
    return mask;
}

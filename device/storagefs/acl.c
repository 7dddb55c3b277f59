/*
 * device/storagefs/acl.c - POSIX ACLs (see acl.h): the value codec, the
 * mode rules, evaluation, and the StorageFS side that keeps an inode's
 * mode and ACLs in step inside one transaction.
 */
#include "device/storagefs/acl.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"
#include "device/storagefs/xattr.h"

#define ACL_CREDITS 48u          /* as an xattr change: entries, a block, values */
#define UNDEF_ID 0xffffffffu

/* One table: the xattr names (without "system.") by type. */
static const char *const acl_names[] = {"posix_acl_access", "posix_acl_default"};

int acl_type_of(const char *name)
{
    if (strncmp(name, "system.", 7))
        return -EOPNOTSUPP;
    for (int t = 0; t < 2; t++)
        if (!strcmp(name + 7, acl_names[t]))
            return t;
    return -EOPNOTSUPP;
}

/* ---- codec ------------------------------------------------------------ */

/* The order POSIX.1e and Linux require: tags ascending (USER_OBJ, USER,
 * GROUP_OBJ, GROUP, MASK, OTHER), one of each unnamed tag, named ids
 * strictly ascending, a mask when there is a named entry. */
static int validate(const struct sfs_acl *a)
{
    unsigned seen = 0;
    bool named = false;
    for (unsigned i = 0; i < a->n; i++) {
        const struct sfs_acl_entry *e = &a->e[i];
        bool is_named = e->tag == SFS_ACL_USER || e->tag == SFS_ACL_GROUP;
        if (e->perm & ~7u || __builtin_popcount(e->tag) != 1 || e->tag > SFS_ACL_OTHER)
            return -EINVAL;
        if (i && (e->tag < a->e[i - 1].tag ||
                  (e->tag == a->e[i - 1].tag && (!is_named || e->id <= a->e[i - 1].id))))
            return -EINVAL;
        seen |= e->tag;
        named |= is_named;
    }
    unsigned need = SFS_ACL_USER_OBJ | SFS_ACL_GROUP_OBJ | SFS_ACL_OTHER;
    if ((seen & need) != need || (named && !(seen & SFS_ACL_MASK)))
        return -EINVAL;
    return 0;
}

int acl_decode(const void *value, size_t size, struct sfs_acl *a)
{
    const uint8_t *p = value;
    if (size < SFS_ACL_SIZE(1) || (size - 4) % 8 || le32_get(p) != SFS_ACL_VERSION)
        return -EINVAL;
    if ((size - 4) / 8 > SFS_ACL_MAX)
        return -EINVAL;
    a->n = (unsigned)((size - 4) / 8);
    for (unsigned i = 0; i < a->n; i++) {
        const uint8_t *q = p + SFS_ACL_SIZE(i);
        a->e[i].tag = le16_get(q);
        a->e[i].perm = le16_get(q + 2);
        a->e[i].id = le32_get(q + 4);
        if (a->e[i].tag != SFS_ACL_USER && a->e[i].tag != SFS_ACL_GROUP)
            a->e[i].id = UNDEF_ID;
    }
    return validate(a);
}

size_t acl_encode(const struct sfs_acl *a, void *out)
{
    uint8_t *p = out;
    le32_put(p, SFS_ACL_VERSION);
    for (unsigned i = 0; i < a->n; i++) {
        uint8_t *q = p + SFS_ACL_SIZE(i);
        le16_put(q, a->e[i].tag);
        le16_put(q + 2, a->e[i].perm);
        le32_put(q + 4, a->e[i].id);
    }
    return SFS_ACL_SIZE(a->n);
}

/* ---- mode rules --------------------------------------------------------- */

/* Where each unnamed tag's perm sits in the mode (group: the mask's). */
static int mode_shift(uint16_t tag)
{
    switch (tag) {
    case SFS_ACL_USER_OBJ: return 6;
    case SFS_ACL_MASK: return 3;
    case SFS_ACL_OTHER: return 0;
    default: return -1;
    }
}

static struct sfs_acl_entry *find_tag(struct sfs_acl *a, uint16_t tag)
{
    for (unsigned i = 0; i < a->n; i++)
        if (a->e[i].tag == tag)
            return &a->e[i];
    return NULL;
}

uint32_t acl_mode(const struct sfs_acl *a, bool *minimal)
{
    uint32_t mode = 0, group = 0;
    bool mask = false;
    *minimal = true;
    for (unsigned i = 0; i < a->n; i++) {
        const struct sfs_acl_entry *e = &a->e[i];
        int sh = mode_shift(e->tag);
        if (e->tag == SFS_ACL_GROUP_OBJ)
            group = e->perm;
        else if (sh >= 0)
            mode |= (uint32_t)e->perm << sh;
        mask |= e->tag == SFS_ACL_MASK;
        *minimal &= e->tag != SFS_ACL_USER && e->tag != SFS_ACL_GROUP && e->tag != SFS_ACL_MASK;
    }
    return mask ? mode : mode | group << 3;
}

void acl_chmod(struct sfs_acl *a, uint32_t mode)
{
    bool mask = find_tag(a, SFS_ACL_MASK) != NULL;
    for (unsigned i = 0; i < a->n; i++) {
        struct sfs_acl_entry *e = &a->e[i];
        int sh = e->tag == SFS_ACL_GROUP_OBJ && !mask ? 3 : mode_shift(e->tag);
        if (sh >= 0)
            e->perm = (uint16_t)((mode >> sh) & 7);
    }
}

bool acl_inherit(struct sfs_acl *a, uint32_t *mode)
{
    bool minimal;
    struct sfs_acl_entry *mask = find_tag(a, SFS_ACL_MASK);
    struct sfs_acl_entry *grp = mask ? mask : find_tag(a, SFS_ACL_GROUP_OBJ);
    for (unsigned i = 0; i < a->n; i++) {
        struct sfs_acl_entry *e = &a->e[i];
        int sh = &a->e[i] == grp ? 3 : mode_shift(e->tag);
        if (sh >= 0 && (e->tag != SFS_ACL_MASK || e == grp))
            e->perm &= (uint16_t)((*mode >> sh) & 7);
    }
    *mode = (*mode & ~0777u) | acl_mode(a, &minimal);
    return !minimal;
}

bool acl_permits(const struct sfs_acl *a, uint32_t uid, uint32_t owner, uint32_t group,
                 acl_in_group_fn in_group, void *arg, unsigned want)
{
    unsigned mask = 7;
    for (unsigned i = 0; i < a->n; i++)
        if (a->e[i].tag == SFS_ACL_MASK)
            mask = a->e[i].perm;
    bool found = false;
    for (unsigned i = 0; i < a->n; i++) {
        const struct sfs_acl_entry *e = &a->e[i];
        switch (e->tag) {
        case SFS_ACL_USER_OBJ:
            if (uid == owner)
                return (e->perm & want) == want;
            break;
        case SFS_ACL_USER:
            if (e->id == uid)
                return (e->perm & mask & want) == want;
            break;
        case SFS_ACL_GROUP_OBJ:
        case SFS_ACL_GROUP:
            if (in_group(arg, e->tag == SFS_ACL_GROUP ? e->id : group)) {
                found = true;
                if ((e->perm & want) == want)   /* this entry grants: the mask decides */
                    return (mask & want) == want;
            }
            break;
        case SFS_ACL_OTHER:
            return !found && (e->perm & want) == want;
        default:
            break;
        }
    }
    return false;
}

/* ---- StorageFS side ----------------------------------------------------- */

/* Reads ip's ACL of type t (caller holds ip->rw). 0, -ENODATA, -EUCLEAN. */
static int get_locked(struct sfs *fs, struct sfs_inode *ip, int t, struct sfs_acl *a)
{
    uint8_t buf[SFS_ACL_SIZE(SFS_ACL_MAX)];
    ssize_t n = xattr_get_locked(fs, ip, SFS_XNS_SYSTEM, acl_names[t], buf, sizeof(buf));
    if (n == -ERANGE || (n >= 0 && acl_decode(buf, (size_t)n, a)))
        return CISC_CORRUPT("inode %llu: %s is not a valid ACL",
                            (unsigned long long)ip->ino, acl_names[t]);
    return n < 0 ? (int)n : 0;
}

static int put_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, int t,
                      const struct sfs_acl *a)
{
    uint8_t buf[SFS_ACL_SIZE(SFS_ACL_MAX)];
    if (!a) {
        int r = xattr_put_locked(fs, h, ip, SFS_XNS_SYSTEM, acl_names[t], NULL, 0, true);
        return r == -ENODATA ? 0 : r;
    }
    size_t n = acl_encode(a, buf);
    return xattr_put_locked(fs, h, ip, SFS_XNS_SYSTEM, acl_names[t], buf, n, false);
}

int sfs_acl_get(struct sfs *fs, uint64_t ino, enum sfs_acl_type type, struct sfs_acl *a)
{
    struct sfs_inode *ip;
    int r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    r = get_locked(fs, ip, (int)type, a);
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    return r;
}

static int touch_ctime(struct jnl_handle *h, struct sfs_inode *ip)
{
    struct timespec now = sfs_now();
    ip->d.ctime = now.tv_sec;
    ip->d.ctime_ns = (uint32_t)now.tv_nsec;
    return inode_dirty(h, ip);
}

/* Sets (a) or removes (a NULL) ip's ACL of type t, mode in step. */
static int change_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, int t,
                         const struct sfs_acl *a, unsigned flags)
{
    if (S_ISLNK(ip->d.mode))
        return -EOPNOTSUPP;
    if (t == SFS_ACL_DEFAULT && !S_ISDIR(ip->d.mode))
        return a ? -EACCES : -ENODATA;
    if (!a) {
        int r = xattr_put_locked(fs, h, ip, SFS_XNS_SYSTEM, acl_names[t], NULL, 0, true);
        return r ? r : touch_ctime(h, ip);
    }
    bool minimal = false;
    if (t == SFS_ACL_ACCESS) {
        ip->d.mode = (ip->d.mode & ~0777u) | acl_mode(a, &minimal);
        if (flags & SFS_XATTR_KILL_SGID)
            ip->d.mode &= ~(uint32_t)S_ISGID;
    }
    int r = put_locked(fs, h, ip, t, minimal ? NULL : a);   /* invariant 2 */
    return r ? r : touch_ctime(h, ip);
}

int acl_change(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name,
               const void *value, size_t size, unsigned flags)
{
    int t = acl_type_of(name);
    if (t < 0)
        return t;
    struct sfs_acl a;
    /* an empty value, or a header with no entries, removes (as Linux) */
    bool remove = (flags & SFS_XATTR_REMOVE) || size == 0 ||
                  (size == 4 && le32_get(value) == SFS_ACL_VERSION);
    int r = remove ? 0 : acl_decode(value, size, &a);
    if (r)
        return r;
    struct jnl_handle *h;
    struct sfs_inode *ip;
    if ((r = sfs_op_begin(fs, tx, ACL_CREDITS, &h)) != 0)
        return r;
    if ((r = inode_get(fs, ino, &ip)) == 0) {
        pthread_rwlock_wrlock(&ip->rw);
        r = change_locked(fs, h, ip, t, remove ? NULL : &a, flags);
        pthread_rwlock_unlock(&ip->rw);
        inode_put(fs, ip);
    }
    sfs_op_end(fs, h);
    return r;
}

int acl_chmod_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    struct sfs_acl a;
    if (S_ISLNK(ip->d.mode))
        return 0;
    int r = get_locked(fs, ip, SFS_ACL_ACCESS, &a);
    if (r)
        return r == -ENODATA ? 0 : r;
    acl_chmod(&a, ip->d.mode);
    return put_locked(fs, h, ip, SFS_ACL_ACCESS, &a);
}

int acl_create_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp,
                      struct sfs_inode *ip)
{
    struct sfs_acl a;
    if (S_ISLNK(ip->d.mode))
        return 0;   /* symlinks have no ACLs */
    int r = get_locked(fs, dp, SFS_ACL_DEFAULT, &a);
    if (r)
        return r == -ENODATA ? 0 : r;
    if (S_ISDIR(ip->d.mode) && (r = put_locked(fs, h, ip, SFS_ACL_DEFAULT, &a)) != 0)
        return r;
    if (acl_inherit(&a, &ip->d.mode) && (r = put_locked(fs, h, ip, SFS_ACL_ACCESS, &a)) != 0)
        return r;
    return inode_dirty(h, ip);
}

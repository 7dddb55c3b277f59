/*
 * device/storagefs/xattr.c - extended attributes (see xattr.h): parsing
 * and validating entry areas, staging a change on copies, storing large
 * values in value blocks, and the sfs_*xattr calls.
 */
#include "device/storagefs/xattr.h"

#include "device/storagefs/acl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

#define SMALL_VALUE 2048u        /* larger values go to value blocks */

/* A working copy of one entry area. */
struct xarea {
    uint8_t buf[SFS_XBLOCK_CAP];
    uint32_t cap, used;
};

struct xent {
    uint8_t ns, namelen;
    uint16_t flags;
    uint32_t vsize;
    const uint8_t *name, *val;   /* val: inline value or external ref */
    uint32_t off, size;          /* position and size of the entry */
};

struct xstate {
    struct xarea in, blk;        /* inline area, block area */
    struct bbuf *b;              /* the xattr block, if any */
    bool fresh;                  /* b was allocated by this change */
};

static const struct {
    const char *prefix;
    size_t len;
} ns_prefix[] = {{NULL, 0}, {"user.", 5}, {"trusted.", 8}, {"security.", 9}, {"system.", 7}};
static_assert(sizeof(ns_prefix) / sizeof(ns_prefix[0]) == SFS_XNS_LAST + 1, "one per namespace");

static int parse_name(const char *full, uint8_t *ns, const char **sfx, size_t *len)
{
    size_t n = strnlen(full, SFS_XATTR_NAME_MAX + 1);
    if (n > SFS_XATTR_NAME_MAX)
        return -ERANGE;
    for (uint8_t i = 1; i <= SFS_XNS_LAST; i++) {
        if (!strncmp(full, ns_prefix[i].prefix, ns_prefix[i].len)) {
            *ns = i;
            *sfx = full + ns_prefix[i].len;
            *len = n - ns_prefix[i].len;
            if (i == SFS_XNS_SYSTEM && acl_type_of(full) < 0)
                return -EOPNOTSUPP;   /* system.: the two ACL names only */
            return *len ? 0 : -EINVAL;
        }
    }
    return -EOPNOTSUPP;
}

static uint32_t value_blocks(uint32_t vsize)
{
    return (vsize + SFS_XVALUE_CAP - 1) / SFS_XVALUE_CAP;
}

/* ---- parsing ------------------------------------------------------------------ */

static int bad_area(const struct sfs_inode *ip, const struct bbuf *b, const char *why)
{
    if (b)
        return CISC_CORRUPT("block %llu (xattr block of inode %llu): %s",
                            (unsigned long long)b->blk, (unsigned long long)ip->ino, why);
    return CISC_CORRUPT("inode %llu: inline xattr area: %s", (unsigned long long)ip->ino, why);
}

/* Decodes the entry at off of area a (validated). */
static int entry_at(struct sfs *fs, const struct sfs_inode *ip, const struct bbuf *b,
                    const struct xarea *a, uint32_t off, struct xent *e)
{
    const uint8_t *p = a->buf + off;
    if (off + XE_NAME > a->used)
        return bad_area(ip, b, "entry runs past the end");
    e->ns = p[XE_NS];
    e->namelen = p[XE_NAMELEN];
    e->flags = le16_get(p + XE_FLAGS);
    e->vsize = le32_get(p + XE_VSIZE);
    e->name = p + XE_NAME;
    e->val = e->name + e->namelen;
    e->off = off;
    bool ext = e->flags & SFS_XE_EXTERNAL;
    e->size = XE_NAME + e->namelen + (ext ? XR_END : e->vsize);
    if (e->ns < SFS_XNS_USER || e->ns > SFS_XNS_LAST || !e->namelen ||
        (e->flags & ~SFS_XE_EXTERNAL) || e->vsize > SFS_XATTR_SIZE_MAX)
        return bad_area(ip, b, "invalid entry header");
    if ((uint64_t)off + e->size > a->used)
        return bad_area(ip, b, "entry runs past the end");
    if (ext && (le32_get(e->val + XR_NBLK) != value_blocks(e->vsize) ||
                !alloc_in_data(fs, le64_get(e->val + XR_VBLK), value_blocks(e->vsize))))
        return bad_area(ip, b, "invalid value block reference");
    return 0;
}

/* Finds (ns, name) in a: 0 and *e, -ENODATA, or -EUCLEAN. */
static int find_in(struct sfs *fs, const struct sfs_inode *ip, const struct bbuf *b,
                   const struct xarea *a, uint8_t ns, const char *name, size_t len,
                   struct xent *e)
{
    for (uint32_t off = 0; off < a->used; off += e->size) {
        int r = entry_at(fs, ip, b, a, off, e);
        if (r)
            return r;
        if (e->ns == ns && e->namelen == len && !memcmp(e->name, name, len))
            return 0;
    }
    return -ENODATA;
}

static int load_block(struct sfs *fs, struct sfs_inode *ip, struct xstate *st)
{
    uint64_t blk = ip->d.xattr_blk;
    st->blk.cap = SFS_XBLOCK_CAP;
    st->blk.used = 0;
    st->b = NULL;
    if (!blk)
        return 0;
    if (!alloc_in_data(fs, blk, 1))
        return CISC_CORRUPT("inode %llu: xattr block %llu outside the data area",
                            (unsigned long long)ip->ino, (unsigned long long)blk);
    int r = bcache_get(fs->bc, blk, SFS_MAGIC_XATTR, &st->b);
    if (r)
        return r;
    const uint8_t *d = st->b->data;
    st->blk.used = le16_get(d + XB_USED);
    if (le64_get(d + XB_OWNER) != ip->ino || st->blk.used > SFS_XBLOCK_CAP)
        return bad_area(ip, st->b, le64_get(d + XB_OWNER) != ip->ino ? "wrong owner"
                                                                   : "bad used size");
    memcpy(st->blk.buf, d + XB_ENTRIES, st->blk.used);
    return 0;
}

/* Copies both areas of ip into st. Caller releases st->b. */
static int load_state(struct sfs *fs, struct sfs_inode *ip, struct xstate *st)
{
    st->in.cap = SFS_IXATTR_SIZE;
    st->in.used = ip->d.ixattr_used;
    memcpy(st->in.buf, ip->d.ixattr, st->in.used);
    return load_block(fs, ip, st);
}

/* Finds name in either area; *in_block tells which. */
static int find_any(struct sfs *fs, struct sfs_inode *ip, struct xstate *st, uint8_t ns,
                    const char *name, size_t len, struct xent *e, bool *in_block)
{
    *in_block = false;
    int r = find_in(fs, ip, NULL, &st->in, ns, name, len, e);
    if (r != -ENODATA)
        return r;
    *in_block = true;
    return find_in(fs, ip, st->b, &st->blk, ns, name, len, e);
}

/* ---- value blocks --------------------------------------------------------------- */

static int read_value(struct sfs *fs, struct sfs_inode *ip, const struct xent *e,
                      uint8_t *out)
{
    uint64_t vblk = le64_get(e->val + XR_VBLK);
    for (uint32_t i = 0, done = 0; i < value_blocks(e->vsize); i++) {
        struct bbuf *b;
        int r = bcache_get(fs->bc, vblk + i, SFS_MAGIC_XVALUE, &b);
        if (r)
            return r;
        if (le64_get(b->data + XV_OWNER) != ip->ino || le32_get(b->data + XV_INDEX) != i) {
            bcache_put(fs->bc, b);
            return CISC_CORRUPT("block %llu (xattr value block): wrong owner or index",
                                (unsigned long long)(vblk + i));
        }
        uint32_t n = e->vsize - done < SFS_XVALUE_CAP ? e->vsize - done : SFS_XVALUE_CAP;
        memcpy(out + done, b->data + XV_DATA, n);
        done += n;
        bcache_put(fs->bc, b);
    }
    return 0;
}

static int write_value(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       const uint8_t *val, uint32_t vsize, uint64_t *vblk)
{
    uint32_t n = value_blocks(vsize);
    int r = alloc_run(fs, h, n, vblk);
    if (r)
        return r;
    for (uint32_t i = 0, done = 0; i < n; i++) {
        struct bbuf *b;
        r = bcache_get_new(fs->bc, *vblk + i, SFS_MAGIC_XVALUE, &b);
        if (r) {
            alloc_free_blocks(fs, h, *vblk, n, true);
            return r;
        }
        uint32_t k = vsize - done < SFS_XVALUE_CAP ? vsize - done : SFS_XVALUE_CAP;
        le64_put(b->data + XV_OWNER, ip->ino);
        le32_put(b->data + XV_INDEX, i);
        memcpy(b->data + XV_DATA, val + done, k);
        done += k;
        jnl_dirty_buf(h, b);
        bcache_put(fs->bc, b);
    }
    ip->d.blocks += n;
    return 0;
}

static void free_value(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                       uint64_t vblk, uint32_t vsize)
{
    alloc_free_blocks(fs, h, vblk, value_blocks(vsize), true);
    ip->d.blocks -= value_blocks(vsize);
}

/* ---- staging a change ------------------------------------------------------------ */

static void area_cut(struct xarea *a, const struct xent *e)
{
    memmove(a->buf + e->off, a->buf + e->off + e->size, a->used - e->off - e->size);
    a->used -= e->size;
}

static void area_put(struct xarea *a, uint8_t ns, const char *name, size_t len,
                     uint16_t flags, uint32_t vsize, const void *val, uint32_t vlen)
{
    uint8_t *p = a->buf + a->used;
    p[XE_NS] = ns;
    p[XE_NAMELEN] = (uint8_t)len;
    le16_put(p + XE_FLAGS, flags);
    le32_put(p + XE_VSIZE, vsize);
    memcpy(p + XE_NAME, name, len);
    memcpy(p + XE_NAME + len, val, vlen);
    a->used += (uint32_t)(XE_NAME + len + vlen);
}

static bool room(const struct xarea *a, size_t need)
{
    return a->used + need <= a->cap;
}

static int new_block(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                     struct xstate *st)
{
    uint64_t blk, got;
    int r = alloc_blocks(fs, h, 0, 1, &blk, &got);
    if (r)
        return r;
    r = bcache_get_new(fs->bc, blk, SFS_MAGIC_XATTR, &st->b);
    if (r) {
        alloc_free_blocks(fs, h, blk, 1, true);
        return r;
    }
    le64_put(st->b->data + XB_OWNER, ip->ino);
    ip->d.xattr_blk = blk;
    ip->d.blocks++;
    st->fresh = true;
    return 0;
}

/* Places the new entry into st's copies (allocating value blocks if
 * needed). Returns 0 or -ENOSPC with nothing changed on the image. */
static int place(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                 struct xstate *st, uint8_t ns, const char *name, size_t len,
                 const void *value, uint32_t size)
{
    size_t head = XE_NAME + len;
    if (room(&st->in, head + size)) {
        area_put(&st->in, ns, name, len, 0, size, value, size);
        return 0;
    }
    if (!room(&st->blk, head + XR_END))
        return -ENOSPC;
    if (!st->b) {
        int r = new_block(fs, h, ip, st);
        if (r)
            return r;
    }
    if (size <= SMALL_VALUE && room(&st->blk, head + size)) {
        area_put(&st->blk, ns, name, len, 0, size, value, size);
        return 0;
    }
    uint64_t vblk;
    int r = write_value(fs, h, ip, value, size, &vblk);
    if (r)
        return r;
    uint8_t ref[XR_END] = {0};
    le64_put(ref + XR_VBLK, vblk);
    le32_put(ref + XR_NBLK, value_blocks(size));
    area_put(&st->blk, ns, name, len, SFS_XE_EXTERNAL, size, ref, XR_END);
    return 0;
}

static unsigned count_entries(const struct xarea *a)
{
    unsigned n = 0;
    for (uint32_t off = 0; off < a->used; n++) {
        const uint8_t *p = a->buf + off;
        off += XE_NAME + p[XE_NAMELEN] +
               (le16_get(p + XE_FLAGS) & SFS_XE_EXTERNAL ? XR_END : le32_get(p + XE_VSIZE));
    }
    return n;
}

/* Writes st's copies back into the inode and the block. */
static int apply(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                 struct xstate *st)
{
    memcpy(ip->d.ixattr, st->in.buf, st->in.used);
    memset(ip->d.ixattr + st->in.used, 0, SFS_IXATTR_SIZE - st->in.used);
    ip->d.ixattr_used = (uint16_t)st->in.used;
    if (st->b && st->blk.used == 0) {
        alloc_free_blocks(fs, h, st->b->blk, 1, true);
        ip->d.xattr_blk = 0;
        ip->d.blocks--;
    } else if (st->b) {
        uint8_t *d = st->b->data;
        jnl_dirty_buf(h, st->b);
        memcpy(d + XB_ENTRIES, st->blk.buf, st->blk.used);
        memset(d + XB_ENTRIES + st->blk.used, 0, SFS_XBLOCK_CAP - st->blk.used);
        le16_put(d + XB_COUNT, (uint16_t)count_entries(&st->blk));
        le16_put(d + XB_USED, (uint16_t)st->blk.used);
    }
    struct timespec now = sfs_now();
    ip->d.ctime = now.tv_sec;
    ip->d.ctime_ns = (uint32_t)now.tv_nsec;
    return inode_dirty(h, ip);
}

struct xreq {
    uint8_t ns;
    const char *name;
    size_t len;
    const void *value;
    uint32_t size;
    unsigned flags;
    bool remove;
};

static int change_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                         struct xstate *st, const struct xreq *q)
{
    struct xent e = {0};
    bool in_block = false;       /* set by find_any when it finds the name */
    int r = load_state(fs, ip, st);
    if (!r)
        r = find_any(fs, ip, st, q->ns, q->name, q->len, &e, &in_block);
    if (r && r != -ENODATA)
        return r;
    bool exists = r == 0;
    if ((q->remove || (q->flags & SFS_XATTR_REPLACE)) && !exists)
        return -ENODATA;
    if ((q->flags & SFS_XATTR_CREATE) && exists)
        return -EEXIST;
    uint64_t old_vblk = 0;
    uint32_t old_vsize = e.vsize;
    if (exists) {
        if (e.flags & SFS_XE_EXTERNAL)
            old_vblk = le64_get(e.val + XR_VBLK);
        area_cut(in_block ? &st->blk : &st->in, &e);
    }
    if (!q->remove &&
        (r = place(fs, h, ip, st, q->ns, q->name, q->len, q->value, q->size)) != 0) {
        if (st->fresh) {            /* undo the block place() allocated */
            alloc_free_blocks(fs, h, st->b->blk, 1, true);
            ip->d.xattr_blk = 0;
            ip->d.blocks--;
        }
        return r;
    }
    if (!q->remove && q->ns == SFS_XNS_SECURITY)   /* older code must not mount it */
        sfs_feature_incompat_set(fs, h, SFS_FEAT_INCOMPAT_XSECURITY);
    if (!q->remove && q->ns == SFS_XNS_SYSTEM)     /* older code would ignore the ACL */
        sfs_feature_incompat_set(fs, h, SFS_FEAT_INCOMPAT_XACL);
    r = apply(fs, h, ip, st);
    if (!r && old_vblk)
        free_value(fs, h, ip, old_vblk, old_vsize);
    return r;
}

static int change(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const struct xreq *q)
{
    struct sfs_inode *ip;
    struct jnl_handle *h;
    struct xstate *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    int r = sfs_op_begin(fs, tx, 48, &h);
    if (r == 0) {
        r = inode_get(fs, ino, &ip);
        if (r == 0) {
            pthread_rwlock_wrlock(&ip->rw);
            st->b = NULL;
            st->fresh = false;
            r = change_locked(fs, h, ip, st, q);
            bcache_put(fs->bc, st->b);
            pthread_rwlock_unlock(&ip->rw);
            inode_put(fs, ip);
        }
        sfs_op_end(fs, h);
    }
    free(st);
    return r;
}

/* ---- public calls ---------------------------------------------------------------- */

int sfs_setxattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name,
                 const void *value, size_t size, unsigned flags)
{
    struct xreq q = {.value = value, .size = (uint32_t)size, .flags = flags};
    int r = parse_name(name, &q.ns, &q.name, &q.len);
    if (r)
        return r;
    if (size > SFS_XATTR_SIZE_MAX)
        return -E2BIG;
    if ((flags & ~(SFS_XATTR_CREATE | SFS_XATTR_REPLACE | SFS_XATTR_KILL_SGID)) ||
        flags == (SFS_XATTR_CREATE | SFS_XATTR_REPLACE) || (size && !value))
        return -EINVAL;
    if (q.ns == SFS_XNS_SYSTEM)
        return acl_change(fs, tx, ino, name, value, size, flags);
    return change(fs, tx, ino, &q);
}

int sfs_removexattr(struct sfs *fs, struct sfs_txn *tx, uint64_t ino, const char *name)
{
    struct xreq q = {.remove = true};
    int r = parse_name(name, &q.ns, &q.name, &q.len);
    if (!r && q.ns == SFS_XNS_SYSTEM)
        return acl_change(fs, tx, ino, name, NULL, 0, SFS_XATTR_REMOVE);
    return r ? r : change(fs, tx, ino, &q);
}

static ssize_t get_locked(struct sfs *fs, struct sfs_inode *ip, struct xstate *st,
                          const struct xreq *q, void *value, size_t size)
{
    struct xent e;
    bool in_block = false;       /* set by find_any when it finds the name */
    int r = load_state(fs, ip, st);
    if (!r)
        r = find_any(fs, ip, st, q->ns, q->name, q->len, &e, &in_block);
    if (r)
        return r;
    if (size == 0)
        return e.vsize;
    if (size < e.vsize)
        return -ERANGE;
    if (e.flags & SFS_XE_EXTERNAL)
        r = read_value(fs, ip, &e, value);
    else
        memcpy(value, e.val, e.vsize);
    return r ? r : (ssize_t)e.vsize;
}

/* Runs fn on ip with its areas loaded, under the read lock. */
static ssize_t with_state(struct sfs *fs, uint64_t ino,
                          ssize_t (*fn)(struct sfs *, struct sfs_inode *, struct xstate *,
                                        const struct xreq *, void *, size_t),
                          const struct xreq *q, void *buf, size_t size)
{
    struct sfs_inode *ip;
    ssize_t r = inode_get(fs, ino, &ip);
    if (r)
        return r;
    pthread_rwlock_rdlock(&ip->rw);
    struct xstate *st = NULL;
    if (!ip->d.ixattr_used && !ip->d.xattr_blk && fn == get_locked)
        r = -ENODATA;   /* no xattrs: nothing to load (every data write asks) */
    else if (!(st = malloc(sizeof(*st))))   /* two areas: 8 KiB, not on the stack */
        r = -ENOMEM;
    else {
        st->b = NULL;
        r = fn(fs, ip, st, q, buf, size);
        bcache_put(fs->bc, st->b);
    }
    pthread_rwlock_unlock(&ip->rw);
    inode_put(fs, ip);
    free(st);
    return r;
}

ssize_t sfs_getxattr(struct sfs *fs, uint64_t ino, const char *name, void *value,
                     size_t size)
{
    struct xreq q = {0};
    int r = parse_name(name, &q.ns, &q.name, &q.len);
    return r ? r : with_state(fs, ino, get_locked, &q, value, size);
}

/* Appends the names of area a to list (or only counts with size 0). */
static int list_area(struct sfs *fs, struct sfs_inode *ip, const struct bbuf *b,
                     const struct xarea *a, char *list, size_t size, size_t *pos)
{
    struct xent e;
    for (uint32_t off = 0; off < a->used; off += e.size) {
        int r = entry_at(fs, ip, b, a, off, &e);
        if (r)
            return r;
        size_t n = ns_prefix[e.ns].len + e.namelen + 1;
        if (size && *pos + n > size)
            return -ERANGE;
        if (size) {
            memcpy(list + *pos, ns_prefix[e.ns].prefix, ns_prefix[e.ns].len);
            memcpy(list + *pos + ns_prefix[e.ns].len, e.name, e.namelen);
            list[*pos + n - 1] = '\0';
        }
        *pos += n;
    }
    return 0;
}

static ssize_t list_locked(struct sfs *fs, struct sfs_inode *ip, struct xstate *st,
                           const struct xreq *q, void *list, size_t size)
{
    (void)q;
    size_t pos = 0;
    int r = load_state(fs, ip, st);
    if (!r)
        r = list_area(fs, ip, NULL, &st->in, list, size, &pos);
    if (!r)
        r = list_area(fs, ip, st->b, &st->blk, list, size, &pos);
    return r ? r : (ssize_t)pos;
}

ssize_t sfs_listxattr(struct sfs *fs, uint64_t ino, char *list, size_t size)
{
    return with_state(fs, ino, list_locked, NULL, list, size);
}

ssize_t xattr_get_locked(struct sfs *fs, struct sfs_inode *ip, uint8_t ns, const char *name,
                         void *buf, size_t size)
{
    if (!ip->d.ixattr_used && !ip->d.xattr_blk)
        return -ENODATA;
    struct xreq q = {.ns = ns, .name = name, .len = strlen(name)};
    struct xstate *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->b = NULL;
    ssize_t r = get_locked(fs, ip, st, &q, buf, size);
    bcache_put(fs->bc, st->b);
    free(st);
    return r;
}

int xattr_put_locked(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint8_t ns,
                     const char *name, const void *value, size_t size, bool remove)
{
    struct xreq q = {.ns = ns, .name = name, .len = strlen(name), .value = value,
                     .size = (uint32_t)size, .remove = remove};
    struct xstate *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->b = NULL;
    st->fresh = false;
    int r = change_locked(fs, h, ip, st, &q);
    bcache_put(fs->bc, st->b);
    free(st);
    return r;
}

int xattr_free_all(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip)
{
    struct xstate *st = malloc(sizeof(*st));
    if (!st)
        return -ENOMEM;
    int r = load_block(fs, ip, st);
    struct xent e;
    for (uint32_t off = 0; !r && off < st->blk.used; off += e.size) {
        r = entry_at(fs, ip, st->b, &st->blk, off, &e);
        if (!r && (e.flags & SFS_XE_EXTERNAL))
            free_value(fs, h, ip, le64_get(e.val + XR_VBLK), e.vsize);
    }
    if (!r && st->b) {
        alloc_free_blocks(fs, h, st->b->blk, 1, true);
        ip->d.xattr_blk = 0;
        ip->d.blocks--;
    }
    bcache_put(fs->bc, st->b);
    free(st);
    return r;
}

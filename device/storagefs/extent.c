/*
 * device/storagefs/extent.c - extent map operations over the B+tree
 * (see extent.h).
 *
 * Each in-memory inode caches the last extent of its tree (the one with
 * the greatest logical block), which answers every lookup at or past its
 * start without a descent: the appends of a growing file and the reads of
 * a file in one extent. Invariant: while ip->ext_last_ok, ip->ext_last is
 * the tree's last extent, or has len 0 when the tree is empty. Every
 * change of the tree goes through ext_insert or cut, which keep it (an
 * insert past the end) or drop it.
 */
#include "device/storagefs/extent.h"

#include <assert.h>
#include <errno.h>

#include "common/corrupt.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/btree.h"
#include "device/storagefs/file.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/jdata.h"
#include "device/storagefs/sfs_int.h"

static struct bt tree(struct sfs *fs, struct sfs_inode *ip, struct jnl_handle *h)
{
    struct bt t = {fs, ip, SFS_MAGIC_EXTENT, h};
    return t;
}

/* Decodes and sanity-checks an extent record. */
static int decode(struct sfs *fs, struct sfs_inode *ip, const struct bt_rec *rec,
                  struct sfs_extent *e)
{
    sfs_extent_decode(rec->key, rec->val, e);
    if (e->len == 0 || e->len > SFS_EXT_MAX_LEN || (e->flags & ~SFS_EXT_KNOWN) ||
        !alloc_in_data(fs, e->pblk, e->len) || e->lblk + e->len < e->lblk)
        return CISC_CORRUPT("inode %llu: invalid extent (logical %llu, physical %llu, "
                            "%u blocks)", (unsigned long long)ip->ino,
                            (unsigned long long)e->lblk, (unsigned long long)e->pblk,
                            e->len);
    return 0;
}

/* find() from the cache: 1 or 0 as find, or -1 when the tree must say. */
static int find_cached(const struct sfs_inode *ip, uint64_t lblk, bool ge, struct sfs_extent *e)
{
    const struct sfs_extent *l = &ip->ext_last;
    if (!ip->ext_last_ok)
        return -1;
    if (l->len == 0)
        return 0;   /* empty tree */
    if (lblk > l->lblk || (lblk == l->lblk && !ge)) {
        if (ge)
            return 0;   /* nothing starts past the last extent */
        *e = *l;
        return 1;
    }
    if (lblk == l->lblk) {
        *e = *l;
        return 1;
    }
    return -1;
}

static int find_tree(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, bool ge,
                     struct sfs_extent *e)
{
    struct bt t = tree(fs, ip, NULL);
    struct bt_rec rec;
    int r = ge ? bt_find_ge(&t, lblk, &rec) : bt_find_le(&t, lblk, &rec);
    if (r == -ENOENT)
        return 0;
    if (r)
        return r;
    r = decode(fs, ip, &rec, e);
    return r ? r : 1;
}

#ifndef NDEBUG
/* The cache's invariant, checked against the tree on every answer it
 * gives (debug and sanitizer builds). */
static bool cache_agrees(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, bool ge, int c,
                         const struct sfs_extent *e)
{
    struct sfs_extent t;
    int r = find_tree(fs, ip, lblk, ge, &t);
    return r < 0 || (r == c && (r == 0 || (t.lblk == e->lblk && t.pblk == e->pblk &&
                                           t.len == e->len && t.flags == e->flags)));
}
#endif

static int find(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, bool ge,
                struct sfs_extent *e)
{
    int c = find_cached(ip, lblk, ge, e);
    if (c >= 0) {
        assert(cache_agrees(fs, ip, lblk, ge, c, e));
        return c;
    }
    return find_tree(fs, ip, lblk, ge, e);
}

int ext_lookup(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, struct sfs_extent *e,
               uint64_t *hole)
{
    int r = find(fs, ip, lblk, false, e);
    if (r < 0)
        return r;
    if (r == 1 && lblk < e->lblk + e->len)
        return 1;
    struct sfs_extent n;
    r = lblk == UINT64_MAX ? 0 : find(fs, ip, lblk + 1, true, &n);
    if (r < 0)
        return r;
    *hole = r ? n.lblk - lblk : UINT64_MAX;
    return 0;
}

int ext_next(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, struct sfs_extent *e)
{
    int r = find(fs, ip, lblk, false, e);
    if (r != 0 && (r < 0 || lblk < e->lblk + e->len))
        return r;
    return find(fs, ip, lblk, true, e);
}

uint64_t ext_goal(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk)
{
    struct sfs_extent e;
    if (find(fs, ip, lblk, false, &e) != 1)
        return 0;
    uint64_t g = e.pblk + (lblk - e.lblk);
    return alloc_in_data(fs, g, 1) ? g : 0;
}

uint32_t ext_credits(struct sfs_inode *ip, unsigned n)
{
    /* Per extent: a leaf (maybe split into a new one) and up to two
     * bitmap blocks; plus one path of index nodes and the inode. Only an
     * inode with an extent tree has a root to read: an inline symlink's
     * data area holds its target, a device node's nothing. The callers
     * refuse such inodes after this estimate, so any count will do. A
     * corrupt root level counts as the deepest legal tree; the descent
     * reports it. */
    unsigned depth = 0;
    if (file_has_tree(ip)) {
        struct bt t = {NULL, ip, SFS_MAGIC_EXTENT, NULL};
        depth = bt_depth(&t);
        if (depth > SFS_BT_MAX_LEVEL)
            depth = SFS_BT_MAX_LEVEL;
    }
    return n * 4 + 2 * (depth + 2) + 4;
}

static bool joinable(const struct sfs_extent *a, const struct sfs_extent *b)
{
    return a->lblk + a->len == b->lblk && a->pblk + a->len == b->pblk &&
           a->flags == b->flags && (uint64_t)a->len + b->len <= SFS_EXT_MAX_LEN;
}

static int put(struct bt *t, const struct sfs_extent *e, bool update)
{
    uint8_t v[EV_END];
    sfs_extent_encode(e, v);
    return update ? bt_update(t, e->lblk, v, EV_END) : bt_insert(t, e->lblk, v, EV_END);
}

int ext_insert(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
               const struct sfs_extent *e)
{
    struct bt t = tree(fs, ip, h);
    struct sfs_extent cur = *e, prev, next;
    int rp = e->lblk ? find(fs, ip, e->lblk - 1, false, &prev) : 0;
    int rn = find(fs, ip, e->lblk, true, &next);
    if (rp < 0 || rn < 0)
        return rp < 0 ? rp : rn;
    bool with_prev = rp == 1 && joinable(&prev, &cur);
    if (with_prev) {
        prev.len += cur.len;
        cur = prev;
    }
    bool with_next = rn == 1 && joinable(&cur, &next);
    if (with_next)
        cur.len += next.len;
    /* Update in place or insert first (the only step that can fail with
     * ENOSPC), delete the merged neighbour after. */
    bool ok = ip->ext_last_ok;
    ip->ext_last_ok = false;     /* until the tree is whole again */
    int r = put(&t, &cur, with_prev);
    if (!r && with_next)
        r = bt_delete(&t, next.lblk);
    if (r)
        return r;
    /* Nothing after e: cur is the last extent. Else the last one stays,
     * unless it was the next one, merged into cur. */
    if (rn == 0 || (ok && with_next && next.lblk == ip->ext_last.lblk))
        ip->ext_last = cur;
    ip->ext_last_ok = rn == 0 || ok;
    return 0;
}

/* Removes the part [a, b) of extent e (which overlaps it). The right
 * remainder is inserted first: if that fails, nothing has changed. */
static int cut(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
               const struct sfs_extent *e, uint64_t a, uint64_t b, bool free_blocks)
{
    struct bt t = tree(fs, ip, h);
    uint64_t end = e->lblk + e->len;
    int r = 0;
    ip->ext_last_ok = false;     /* refilled by the next insert past the end */
    if (b < end) {
        struct sfs_extent right = {b, e->pblk + (b - e->lblk), (uint32_t)(end - b), e->flags};
        r = put(&t, &right, false);
    }
    if (!r && a > e->lblk) {
        struct sfs_extent left = *e;
        left.len = (uint32_t)(a - e->lblk);
        r = put(&t, &left, true);
    } else if (!r) {
        r = bt_delete(&t, e->lblk);
    }
    if (!r && free_blocks) {
        /* a hot file's blocks may have images in the journal (jdata.h 3) */
        alloc_free_blocks(fs, h, e->pblk + (a - e->lblk), b - a, jdata_needed(fs, h, ip));
        ip->d.blocks -= b - a;
    }
    return r;
}

int ext_remove(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t lblk,
               uint64_t len, bool free_blocks, unsigned max)
{
    uint64_t end = len > UINT64_MAX - lblk ? UINT64_MAX : lblk + len;
    uint64_t cursor = lblk;
    ip->tail_pblk = 0;   /* file.c's copy may name a block unmapped here */
    for (unsigned n = 0;; n++) {
        struct sfs_extent e;
        int r = ext_next(fs, ip, cursor, &e);
        if (r <= 0 || e.lblk >= end)
            return r < 0 ? r : 0;
        if (n == max)
            return 1;
        uint64_t a = e.lblk > cursor ? e.lblk : cursor;
        uint64_t eend = e.lblk + e.len, b = eend < end ? eend : end;
        r = cut(fs, h, ip, &e, a, b, free_blocks);
        if (r || b >= end)
            return r;   /* the range ended inside e: nothing past it to look up */
        cursor = b;
    }
}

int ext_convert(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                const struct sfs_extent *e, uint64_t lblk, uint64_t n, bool *unmapped)
{
    struct sfs_extent w = {lblk, e->pblk + (lblk - e->lblk), (uint32_t)n, 0};
    bool inside = lblk > e->lblk && lblk + n < e->lblk + e->len;
    int r = inside ? cut(fs, h, ip, e, lblk, lblk + n, false)
                   : ext_remove(fs, h, ip, lblk, n, false, 2);
    *unmapped = r == 0;
    if (r)
        return r;
    if (inside) {   /* cut dropped the last-extent cache; nothing to merge */
        struct bt t = tree(fs, ip, h);
        r = put(&t, &w, false);
    } else {
        r = ext_insert(fs, h, ip, &w);
    }
    *unmapped = r != 0;
    return r;
}

/* ---- shifting (collapse / insert range) ------------------------------------------ */

int64_t ext_count_from(struct sfs *fs, struct sfs_inode *ip, uint64_t lblk, uint64_t *end)
{
    int64_t n = 0;
    struct sfs_extent e;
    for (;;) {
        int r = ext_next(fs, ip, lblk, &e);
        *end = lblk;
        if (r <= 0)
            return r < 0 ? r : n;
        n++;
        lblk = e.lblk + e.len;
    }
}

/* Moves the part [a, end of e) of extent e to a + delta or a - delta. */
static int move_part(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                     const struct sfs_extent *e, uint64_t a, uint64_t delta, bool down)
{
    uint64_t end = e->lblk + e->len;
    struct sfs_extent moved = {down ? a - delta : a + delta, e->pblk + (a - e->lblk),
                               (uint32_t)(end - a), e->flags};
    int r = cut(fs, h, ip, e, a, end, false);
    return r ? r : ext_insert(fs, h, ip, &moved);
}

/* Down: in ascending order, each extent lands in the room the one
 * before it left (or the caller's unmapped range). */
static int shift_down(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                      uint64_t from, uint64_t delta)
{
    for (uint64_t cursor = from;;) {
        struct sfs_extent e;
        int r = ext_next(fs, ip, cursor, &e);
        if (r <= 0)
            return r;
        uint64_t a = e.lblk > cursor ? e.lblk : cursor;
        cursor = e.lblk + e.len;
        r = move_part(fs, h, ip, &e, a, delta, true);
        if (r)
            return r;
    }
}

/* Up: in descending order, from the last extent, each one into room
 * the one after it left (or past the end). */
static int shift_up(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip,
                    uint64_t from, uint64_t delta)
{
    for (uint64_t below = UINT64_MAX; below > from;) {
        struct sfs_extent e;
        int r = find(fs, ip, below - 1, false, &e);   /* the last starting before it */
        if (r <= 0 || e.lblk + e.len <= from)
            return r < 0 ? r : 0;
        uint64_t a = e.lblk > from ? e.lblk : from;
        r = move_part(fs, h, ip, &e, a, delta, false);
        if (r)
            return r;
        below = a;
    }
    return 0;
}

int ext_shift(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t from,
              uint64_t delta, bool down)
{
    ip->tail_pblk = 0;   /* file.c's copy is of the tail block, which moves */
    if (delta == 0)
        return 0;
    if (down && delta > from)
        return -EINVAL;
    return down ? shift_down(fs, h, ip, from, delta) : shift_up(fs, h, ip, from, delta);
}

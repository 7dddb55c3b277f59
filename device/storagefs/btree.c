/*
 * device/storagefs/btree.c - B+tree over metadata blocks with an inline
 * root (see btree.h for the algorithm and invariants).
 *
 * A node is a header (level, nrecs, used, owner) followed by `used` bytes
 * of packed records: index records are (key, child) pairs of 16 bytes,
 * leaf records (key, vlen, value). A search descends recording the path
 * (node and position per level); changes walk that path upwards.
 */
#include "device/storagefs/btree.h"

#include <errno.h>
#include <string.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/alloc.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

struct node {
    uint8_t *p;                  /* node header */
    uint32_t cap;                /* bytes of records it can hold */
    struct bbuf *b;              /* NULL for the inline root */
};

struct path {
    unsigned top;                /* root level */
    uint64_t pool[SFS_BT_MAX_LEVEL + 2];  /* node blocks allocated up front */
    unsigned npool, pool_used;
    struct node nd[SFS_BT_MAX_LEVEL + 1];
    unsigned ix[SFS_BT_MAX_LEVEL + 1];    /* record index per level */
    uint32_t off[SFS_BT_MAX_LEVEL + 1];   /* its byte offset */
    uint32_t prev0;              /* the leaf record before ix[0] (if ix[0] > 0) */
};

/* ---- node accessors ----------------------------------------------------- */

static unsigned n_level(const struct node *n) { return le16_get(n->p + ND_LEVEL); }
static unsigned n_nrecs(const struct node *n) { return le16_get(n->p + ND_NRECS); }
static uint32_t n_used(const struct node *n) { return le16_get(n->p + ND_USED); }
static uint8_t *n_recs(const struct node *n) { return n->p + ND_END; }

static void n_set(struct node *n, unsigned nrecs, uint32_t used)
{
    le16_put(n->p + ND_NRECS, (uint16_t)nrecs);
    le16_put(n->p + ND_USED, (uint16_t)used);
}

static uint32_t rec_size(const struct node *n, uint32_t off)
{
    return n_level(n) ? IR_END : LR_VALUE + le16_get(n_recs(n) + off + LR_VLEN);
}

static uint64_t rec_key(const struct node *n, uint32_t off)
{
    return le64_get(n_recs(n) + off);
}

static uint64_t idx_child(const struct node *n, unsigned i)
{
    return le64_get(n_recs(n) + i * IR_END + IR_CHILD);
}

static struct node root_of(const struct bt *t)
{
    struct node n = {t->ip->d.data, SFS_NODE_ROOT_CAP, NULL};
    return n;
}

void bt_root_init(uint8_t *area, uint64_t owner)
{
    memset(area, 0, SFS_IDATA_SIZE);
    le64_put(area + ND_OWNER, owner);
}

unsigned bt_depth(const struct bt *t)
{
    struct node r = root_of(t);
    return n_level(&r);
}

/* ---- validation ----------------------------------------------------------- */

static int bad_node(const struct bt *t, const struct node *n, const char *why)
{
    if (n->b)
        return CISC_CORRUPT("block %llu (%s of inode %llu): %s",
                            (unsigned long long)n->b->blk, sfs_kind_name(t->magic),
                            (unsigned long long)t->ip->ino, why);
    return CISC_CORRUPT("inode %llu: inline %s root: %s", (unsigned long long)t->ip->ino,
                        sfs_kind_name(t->magic), why);
}

static bool vlen_ok(const struct bt *t, const uint8_t *v, uint32_t vlen)
{
    if (t->magic == SFS_MAGIC_EXTENT)
        return vlen == EV_END;
    return vlen > DV_NAME && vlen <= SFS_DIRENT_MAX && v[DV_NAMELEN] == vlen - DV_NAME;
}

static int check_leaf(const struct bt *t, const struct node *n)
{
    uint32_t off = 0, used = n_used(n);
    for (unsigned i = 0; i < n_nrecs(n); i++) {
        if (off + LR_VALUE > used)
            return bad_node(t, n, "record runs past the end");
        uint32_t vlen = le16_get(n_recs(n) + off + LR_VLEN);
        if (off + LR_VALUE + vlen > used || !vlen_ok(t, n_recs(n) + off + LR_VALUE, vlen))
            return bad_node(t, n, "bad record length");
        off += LR_VALUE + vlen;
    }
    return off == used ? 0 : bad_node(t, n, "used bytes do not match the records");
}

static int check_keys(const struct bt *t, const struct node *n)
{
    uint32_t off = 0;
    uint64_t prev = 0;
    for (unsigned i = 0; i < n_nrecs(n); i++) {
        uint64_t k = rec_key(n, off);
        if (i && k <= prev)
            return bad_node(t, n, "keys out of order");
        prev = k;
        off += rec_size(n, off);
    }
    return 0;
}

static int check_index(const struct bt *t, const struct node *n)
{
    if (n_used(n) != n_nrecs(n) * IR_END)
        return bad_node(t, n, "used bytes do not match the records");
    for (unsigned i = 0; i < n_nrecs(n); i++)
        if (!alloc_in_data(t->fs, idx_child(n, i), 1))
            return bad_node(t, n, "child pointer outside the data area");
    return 0;
}

/* Whether n is the inline root in its inode (it has no block). */
static bool is_root(const struct bt *t, const struct node *n)
{
    return !n->b && n->p == t->ip->d.data;
}

static int check_node(const struct bt *t, const struct node *n, unsigned level)
{
    /* Acquire pairs with the release store below: a reader that sees true
     * also sees the block contents that were checked. The root's flag
     * needs no order: it is set and cleared under the inode's rw lock,
     * which orders the root's bytes (sfs_int.h root_checked). */
    if (n->b && __atomic_load_n(&n->b->checked, __ATOMIC_ACQUIRE))
        return 0;
    if (is_root(t, n) && __atomic_load_n(&t->ip->root_checked, __ATOMIC_RELAXED) &&
        n_level(n) == level)
        return 0;
    if (n_level(n) != level || level > SFS_BT_MAX_LEVEL)
        return bad_node(t, n, "wrong level");
    if (le64_get(n->p + ND_OWNER) != t->ip->ino)
        return bad_node(t, n, "wrong owner");
    if (n_used(n) > n->cap || (n->b && n_nrecs(n) == 0))
        return bad_node(t, n, "bad record count");
    int r = level ? check_index(t, n) : check_leaf(t, n);
    if (!r)
        r = check_keys(t, n);
    if (!r && n->b)        /* release: pairs with the acquire load above */
        __atomic_store_n(&n->b->checked, true, __ATOMIC_RELEASE);
    else if (!r && is_root(t, n))
        __atomic_store_n(&t->ip->root_checked, true, __ATOMIC_RELAXED);
    return r;
}

/* ---- descent ---------------------------------------------------------------- */

static void path_release(const struct bt *t, struct path *p)
{
    for (unsigned l = 0; l <= p->top; l++) {
        if (p->nd[l].b)
            bcache_put(t->fs->bc, p->nd[l].b);
        p->nd[l].b = NULL;
    }
}

/* Largest i with key_i <= key, or 0. */
static unsigned idx_seek(const struct node *n, uint64_t key)
{
    unsigned lo = 0, hi = n_nrecs(n);
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (rec_key(n, mid * IR_END) <= key)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* First record with key >= key: index and offset; *prev gets the offset
 * of the record before it (0 when there is none). Every record of an
 * extent leaf has one size (vlen_ok, checked before any descent uses the
 * node), so those are searched by halves; directory entries (names of
 * any length) one by one. */
static void leaf_seek(const struct bt *t, const struct node *n, uint64_t key, unsigned *ix,
                      uint32_t *off, uint32_t *prev)
{
    unsigned i = 0, nrecs = n_nrecs(n);
    if (t->magic == SFS_MAGIC_EXTENT) {
        const uint32_t size = LR_VALUE + EV_END;
        unsigned hi = nrecs;   /* the answer lies in [i, hi] */
        while (i < hi) {
            unsigned mid = i + (hi - i) / 2;
            if (rec_key(n, mid * size) < key)
                i = mid + 1;
            else
                hi = mid;
        }
        *ix = i;
        *off = i * size;
        *prev = i ? (i - 1) * size : 0;
        return;
    }
    uint32_t o = 0, before = 0;
    while (i < nrecs && rec_key(n, o) < key) {
        before = o;
        o += rec_size(n, o);
        i++;
    }
    *ix = i;
    *off = o;
    *prev = before;
}

static int load_child(const struct bt *t, const struct node *parent, unsigned i,
                      struct node *out)
{
    struct bbuf *b;
    int r = bcache_get(t->fs->bc, idx_child(parent, i), t->magic, &b);
    if (r)
        return r;
    out->b = b;
    out->p = b->data + BH_END;
    out->cap = SFS_NODE_BLOCK_CAP;
    r = check_node(t, out, n_level(parent) - 1);
    if (r) {
        bcache_put(t->fs->bc, b);
        out->b = NULL;
    }
    return r;
}

/* Descends towards key, filling the path; the caller releases it. */
static int descend(const struct bt *t, uint64_t key, struct path *p)
{
    struct node n = root_of(t);
    unsigned l = n_level(&n);
    memset(p, 0, sizeof(*p));
    p->top = l;
    p->nd[l] = n;
    int r = check_node(t, &n, l);
    if (r)
        return r;
    for (; l > 0; l--) {
        unsigned i = n_nrecs(&p->nd[l]) ? idx_seek(&p->nd[l], key) : 0;
        p->ix[l] = i;
        p->off[l] = i * IR_END;
        if (!n_nrecs(&p->nd[l]))
            return bad_node(t, &p->nd[l], "empty index node");
        r = load_child(t, &p->nd[l], i, &p->nd[l - 1]);
        if (r)
            return r;
    }
    leaf_seek(t, &p->nd[0], key, &p->ix[0], &p->off[0], &p->prev0);
    return 0;
}

static void copy_rec(const struct node *n, uint32_t off, struct bt_rec *out)
{
    out->key = rec_key(n, off);
    out->vlen = le16_get(n_recs(n) + off + LR_VLEN);
    memcpy(out->val, n_recs(n) + off + LR_VALUE, out->vlen);
}

int bt_find_le(struct bt *t, uint64_t key, struct bt_rec *out)
{
    struct path p;
    int r = descend(t, key, &p);
    if (r == 0) {
        struct node *leaf = &p.nd[0];
        uint32_t off = p.off[0];
        if (p.ix[0] < n_nrecs(leaf) && rec_key(leaf, off) == key) {
            copy_rec(leaf, off, out);
        } else if (p.ix[0] == 0) {
            r = -ENOENT;         /* exact separators: nothing smaller exists */
        } else {
            copy_rec(leaf, p.prev0, out);
        }
    }
    path_release(t, &p);
    return r;
}

/* Smallest separator after the path (the next subtree's first key). */
static bool next_subtree_key(const struct path *p, uint64_t *key)
{
    for (unsigned l = 1; l <= p->top; l++) {
        if (p->ix[l] + 1 < n_nrecs(&p->nd[l])) {
            *key = rec_key(&p->nd[l], (p->ix[l] + 1) * IR_END);
            return true;
        }
    }
    return false;
}

int bt_find_ge(struct bt *t, uint64_t key, struct bt_rec *out)
{
    for (int round = 0; round < 2; round++) {
        struct path p;
        int r = descend(t, key, &p);
        bool again = false;
        if (r == 0) {
            if (p.ix[0] < n_nrecs(&p.nd[0]))
                copy_rec(&p.nd[0], p.off[0], out);
            else if ((again = next_subtree_key(&p, &key)) == false)
                r = -ENOENT;
        }
        path_release(t, &p);
        if (r || !again)
            return r;
    }
    return CISC_CORRUPT("inode %llu: %s separators do not match their children",
                        (unsigned long long)t->ip->ino, sfs_kind_name(t->magic));
}

/* ---- changes ---------------------------------------------------------------- */

/* The inode (and maybe its inline root) changed: the root is checked
 * again at its next use. */
static int root_dirty(const struct bt *t)
{
    __atomic_store_n(&t->ip->root_checked, false, __ATOMIC_RELAXED);
    return inode_dirty(t->h, t->ip);
}

static int dirty(const struct bt *t, const struct node *n)
{
    if (n->b) {
        jnl_dirty_buf(t->h, n->b);
        return 0;
    }
    return root_dirty(t);
}

static void put_bytes(struct node *n, uint32_t off, const uint8_t *rec, uint32_t len)
{
    uint8_t *r = n_recs(n);
    memmove(r + off + len, r + off, n_used(n) - off);
    memcpy(r + off, rec, len);
    n_set(n, n_nrecs(n) + 1, n_used(n) + len);
}

static void cut_bytes(struct node *n, uint32_t off, uint32_t len)
{
    uint8_t *r = n_recs(n);
    memmove(r + off, r + off + len, n_used(n) - off - len);
    n_set(n, n_nrecs(n) - 1, n_used(n) - len);
}

/* After the first key of nd[level] changed, copies it up the path. */
static int fix_seps(const struct bt *t, struct path *p, unsigned level)
{
    uint64_t k = rec_key(&p->nd[level], 0);
    for (unsigned l = level + 1; l <= p->top; l++) {
        int r = dirty(t, &p->nd[l]);
        if (r)
            return r;
        le64_put(n_recs(&p->nd[l]) + p->ix[l] * IR_END + IR_KEY, k);
        if (p->ix[l] != 0)
            break;
    }
    return 0;
}

/* Number of node blocks inserting a record of len bytes may need. */
static unsigned blocks_needed(const struct path *p, uint32_t len)
{
    unsigned need = 0;
    for (unsigned l = 0; l <= p->top; l++) {
        const struct node *n = &p->nd[l];
        if (n_used(n) + (l ? IR_END : len) <= n->cap)
            break;
        need++;                  /* a split, or growing the root (then it fits) */
    }
    return need;
}

static void pool_release(const struct bt *t, struct path *p)
{
    for (unsigned i = p->pool_used; i < p->npool; i++)
        alloc_free_blocks(t->fs, t->h, p->pool[i], 1, true);
    p->npool = p->pool_used = 0;
}

/* Allocates every block the insert may need before anything changes, so
 * an insert either completes or fails with nothing done. Extent trees
 * may use the allocator's metadata reserve. */
static int pool_fill(const struct bt *t, struct path *p, unsigned need)
{
    while (p->npool < need) {
        uint64_t blk, got;
        int r = t->magic == SFS_MAGIC_EXTENT ? alloc_meta(t->fs, t->h, 0, &blk)
                                             : alloc_blocks(t->fs, t->h, 0, 1, &blk, &got);
        if (r) {
            pool_release(t, p);
            return r;
        }
        p->pool[p->npool++] = blk;
    }
    return 0;
}

/* Takes a node block from the pool for level. */
static int new_node(const struct bt *t, struct path *p, unsigned level, struct node *out)
{
    if (p->pool_used == p->npool)
        return -ENOSPC;          /* blocks_needed() was wrong: refuse, don't corrupt */
    uint64_t blk = p->pool[p->pool_used++];
    struct bbuf *b;
    int r = bcache_get_new(t->fs->bc, blk, t->magic, &b);
    if (r)
        return r;
    /* Relaxed: the node is built under the inode's exclusive lock, whose
     * release publishes it and this flag together. */
    __atomic_store_n(&b->checked, true, __ATOMIC_RELAXED);
    out->b = b;
    out->p = b->data + BH_END;
    out->cap = SFS_NODE_BLOCK_CAP;
    le16_put(out->p + ND_LEVEL, (uint16_t)level);
    le64_put(out->p + ND_OWNER, t->ip->ino);
    t->ip->d.blocks++;
    jnl_dirty_buf(t->h, b);
    return root_dirty(t);
}

static void free_node(const struct bt *t, struct node *n)
{
    uint64_t blk = n->b->blk;
    bcache_put(t->fs->bc, n->b);
    n->b = NULL;
    t->ip->d.blocks--;
    alloc_free_blocks(t->fs, t->h, blk, 1, true);
}

/* Moves the full inline root into a new block one level down. */
static int grow_root(const struct bt *t, struct path *p, uint64_t newkey)
{
    unsigned top = p->top;
    if (top + 1 > SFS_BT_MAX_LEVEL)
        return -EFBIG;
    struct node nn, *root = &p->nd[top];
    int r = new_node(t, p, top, &nn);
    if (r)
        return r;
    memcpy(n_recs(&nn), n_recs(root), n_used(root));
    n_set(&nn, n_nrecs(root), n_used(root));
    uint8_t rec[IR_END];
    le64_put(rec + IR_KEY, n_nrecs(root) ? rec_key(root, 0) : newkey);
    le64_put(rec + IR_CHILD, nn.b->blk);
    le16_put(root->p + ND_LEVEL, (uint16_t)(top + 1));
    n_set(root, 0, 0);
    put_bytes(root, 0, rec, IR_END);
    p->nd[top + 1] = *root;
    p->ix[top + 1] = 0;
    p->off[top + 1] = 0;
    p->nd[top] = nn;
    p->top = top + 1;
    return root_dirty(t);
}

static bool rightmost(const struct path *p, unsigned level)
{
    for (unsigned l = level + 1; l <= p->top; l++)
        if (p->ix[l] + 1 != n_nrecs(&p->nd[l]))
            return false;
    return true;
}

/* Record index and offset where nd[level] splits. */
static void split_point(const struct path *p, unsigned level, unsigned *s, uint32_t *so)
{
    const struct node *n = &p->nd[level];
    if (p->ix[level] == n_nrecs(n) && rightmost(p, level)) {
        *s = n_nrecs(n);
        *so = n_used(n);
        return;
    }
    unsigned i = 0;
    uint32_t o = 0;
    while (i + 1 < n_nrecs(n) && o < n_used(n) / 2) {
        o += rec_size(n, o);
        i++;
    }
    *s = i ? i : 1;
    *so = i ? o : rec_size(n, 0);
}

/* Splits nd[level] and inserts rec at its path position into the proper
 * half; returns the new right node's first key and block. */
static int split_insert(const struct bt *t, struct path *p, unsigned level,
                        const uint8_t *rec, uint32_t len, uint64_t *rkey, uint64_t *rblk)
{
    struct node *l = &p->nd[level], rn;
    unsigned s;
    uint32_t so;
    split_point(p, level, &s, &so);
    int r = new_node(t, p, level, &rn);
    if (!r)
        r = dirty(t, l);
    if (r)
        return r;
    memcpy(n_recs(&rn), n_recs(l) + so, n_used(l) - so);
    n_set(&rn, n_nrecs(l) - s, n_used(l) - so);
    n_set(l, s, so);
    bool left = p->ix[level] < s;
    if (left)
        put_bytes(l, p->off[level], rec, len);
    else
        put_bytes(&rn, p->off[level] - so, rec, len);
    *rkey = rec_key(&rn, 0);
    *rblk = rn.b->blk;
    bcache_put(t->fs->bc, rn.b);
    return left && p->ix[level] == 0 ? fix_seps(t, p, level) : 0;
}

static int insert_path(const struct bt *t, struct path *p, uint8_t *rec, uint32_t len)
{
    unsigned level = 0;
    uint8_t irec[IR_END];
    for (;;) {
        struct node *n = &p->nd[level];
        if (n_used(n) + len <= n->cap) {
            int r = dirty(t, n);
            if (r)
                return r;
            put_bytes(n, p->off[level], rec, len);
            return p->ix[level] == 0 && level < p->top ? fix_seps(t, p, level) : 0;
        }
        if (level == p->top) {
            int r = grow_root(t, p, le64_get(rec));
            if (r)
                return r;
            continue;
        }
        uint64_t rkey, rblk;
        int r = split_insert(t, p, level, rec, len, &rkey, &rblk);
        if (r)
            return r;
        le64_put(irec + IR_KEY, rkey);
        le64_put(irec + IR_CHILD, rblk);
        rec = irec;
        len = IR_END;
        level++;
        p->ix[level]++;
        p->off[level] = p->ix[level] * IR_END;
    }
}

int bt_insert(struct bt *t, uint64_t key, const void *val, uint16_t vlen)
{
    uint8_t rec[LR_VALUE + BT_MAX_VLEN];
    if (vlen > BT_MAX_VLEN)
        return -EINVAL;
    struct path p;
    int r = descend(t, key, &p);
    if (r == 0 && p.ix[0] < n_nrecs(&p.nd[0]) && rec_key(&p.nd[0], p.off[0]) == key)
        r = -EEXIST;
    if (r == 0) {
        le64_put(rec + LR_KEY, key);
        le16_put(rec + LR_VLEN, vlen);
        memcpy(rec + LR_VALUE, val, vlen);
        r = pool_fill(t, &p, blocks_needed(&p, LR_VALUE + vlen));
        if (r == 0)
            r = insert_path(t, &p, rec, LR_VALUE + vlen);
        pool_release(t, &p);
    }
    path_release(t, &p);
    return r;
}

/* Pulls lone children back into the inline root while they fit. */
static int collapse_root(const struct bt *t, struct path *p)
{
    struct node *root = &p->nd[p->top];
    while (n_level(root) > 0) {
        if (n_nrecs(root) == 0) {
            bt_root_init(root->p, t->ip->ino);
            return root_dirty(t);
        }
        if (n_nrecs(root) > 1)
            return 0;
        struct node c;
        int r = load_child(t, root, 0, &c);
        if (r)
            return r;
        if (n_used(&c) > root->cap) {
            bcache_put(t->fs->bc, c.b);
            return 0;
        }
        memcpy(n_recs(root), n_recs(&c), n_used(&c));
        le16_put(root->p + ND_LEVEL, (uint16_t)n_level(&c));
        n_set(root, n_nrecs(&c), n_used(&c));
        free_node(t, &c);
        r = root_dirty(t);
        if (r)
            return r;
    }
    return 0;
}

/* Removes record ix/off of nd[level], then empty nodes upwards. */
static int delete_path(const struct bt *t, struct path *p)
{
    unsigned level = 0;
    for (;;) {
        struct node *n = &p->nd[level];
        int r = dirty(t, n);
        if (r)
            return r;
        cut_bytes(n, p->off[level], rec_size(n, p->off[level]));
        if (level == p->top)
            break;
        if (n_nrecs(n) > 0) {
            if (p->ix[level] == 0 && (r = fix_seps(t, p, level)) != 0)
                return r;
            break;
        }
        free_node(t, n);
        level++;
    }
    return collapse_root(t, p);
}

int bt_delete(struct bt *t, uint64_t key)
{
    struct path p;
    int r = descend(t, key, &p);
    if (r == 0 && (p.ix[0] >= n_nrecs(&p.nd[0]) || rec_key(&p.nd[0], p.off[0]) != key))
        r = -ENOENT;
    if (r == 0)
        r = delete_path(t, &p);
    path_release(t, &p);
    return r;
}

int bt_update(struct bt *t, uint64_t key, const void *val, uint16_t vlen)
{
    struct path p;
    int r = descend(t, key, &p);
    struct node *leaf = &p.nd[0];
    if (r == 0 && (p.ix[0] >= n_nrecs(leaf) || rec_key(leaf, p.off[0]) != key))
        r = -ENOENT;
    bool same = r == 0 && le16_get(n_recs(leaf) + p.off[0] + LR_VLEN) == vlen;
    if (same && (r = dirty(t, leaf)) == 0)
        memcpy(n_recs(leaf) + p.off[0] + LR_VALUE, val, vlen);
    path_release(t, &p);
    if (r || same)
        return r;
    r = bt_delete(t, key);
    return r ? r : bt_insert(t, key, val, vlen);
}

/*
 * device/storagefs/fsck_inode.c - the per-inode half of the checker (see
 * fsck_int.h): decodes inode slots, walks extent and directory B+trees
 * (node headers, key order, exact separators, record formats), extents
 * (range, overlap, ownership), directory entries (names, hash placement,
 * uniqueness, targets) and extended attributes (inline area, xattr block,
 * value blocks, the feature bit of their namespace, POSIX ACLs: valid,
 * in step with the mode, defaults only on directories), and checks the
 * inode's block count.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/acl.h"
#include "device/storagefs/fsck_int.h"

struct walk {
    struct fck *f;
    uint64_t ino;
    uint32_t magic;
    uint32_t mode;               /* the inode's (ACL checks) */
    uint64_t blocks;             /* node, data and xattr blocks found */
    uint64_t next_lblk;          /* extents: first logical block not yet seen */
    uint64_t entries;            /* directories */
    uint64_t grp_base;           /* directories: hash group being scanned */
    char (*grp)[SFS_NAME_MAX + 1];
    unsigned ngrp;
};

static uint64_t itable_blk(const struct fck *f, uint64_t ino)
{
    return f->sb.itable_start + ino / SFS_INODES_PER_BLOCK;
}

/* ---- pass 1 --------------------------------------------------------------- */

static int read_dinode(struct fck *f, uint64_t ino, struct sfs_dinode *d)
{
    const uint8_t *b = fck_read(f, itable_blk(f, ino));
    if (!b)
        return -1;
    const uint8_t *p = b + (ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
    if (sfs_inode_decode(p, ino, itable_blk(f, ino), d) != 0) {
        fck_problem_corrupt(f);
        return -2;
    }
    return 0;
}

void fck_load_inode(struct fck *f, uint64_t ino)
{
    struct sfs_dinode d;
    struct fck_inode *in = &f->in[ino];
    int r = read_dinode(f, ino, &d);
    if (r != 0) {
        if (r == -2)
            f->fixable++;        /* repair frees the number (its slot is lost) */
        in->bad = r == -2 ? 2 : 1;
        return;
    }
    in->mode = d.mode;
    in->nlink = d.nlink;
    in->parent = d.parent < f->sb.ninodes ? (uint32_t)d.parent : 0;
    if (S_ISDIR(d.mode) && (d.parent == 0 || d.parent >= f->sb.ninodes))
        fck_problem(f, "inode %llu: directory parent %llu out of range",
                    (unsigned long long)ino, (unsigned long long)d.parent);
}

/* ---- B+tree walk ------------------------------------------------------------ */

static void node_problem(struct walk *w, uint64_t blk, const char *why)
{
    if (blk)
        fck_problem(w->f, "block %llu (%s of inode %llu): %s", (unsigned long long)blk,
                    sfs_kind_name(w->magic), (unsigned long long)w->ino, why);
    else
        fck_problem(w->f, "inode %llu: inline %s root: %s", (unsigned long long)w->ino,
                    sfs_kind_name(w->magic), why);
}

static void leaf_record(struct walk *w, uint64_t key, const uint8_t *v, uint16_t vlen,
                        uint64_t blk);

struct span {
    uint64_t lo, hi;             /* keys must lie in [lo, hi] */
};

static bool leaf_vlen_ok(const struct walk *w, const uint8_t *v, uint32_t vlen)
{
    if (w->magic == SFS_MAGIC_EXTENT)
        return vlen == EV_END;
    return vlen > DV_NAME && vlen <= SFS_DIRENT_MAX && v[DV_NAMELEN] == vlen - DV_NAME;
}

/* Parses a leaf; false (reported) if its layout is broken. */
static bool walk_leaf(struct walk *w, const uint8_t *p, uint64_t blk, struct span sp)
{
    uint32_t used = le16_get(p + ND_USED), off = 0;
    const uint8_t *r = p + ND_END;
    uint64_t prev = 0;
    for (unsigned i = 0; i < le16_get(p + ND_NRECS); i++) {
        uint32_t vlen = off + LR_VALUE <= used ? le16_get(r + off + LR_VLEN) : 0;
        if (off + LR_VALUE > used || off + LR_VALUE + vlen > used ||
            !leaf_vlen_ok(w, r + off + LR_VALUE, vlen)) {
            node_problem(w, blk, "malformed record");
            return false;
        }
        uint64_t key = le64_get(r + off);
        if ((i && key <= prev) || key < sp.lo || key > sp.hi) {
            node_problem(w, blk, "keys out of order");
            return false;
        }
        leaf_record(w, key, r + off + LR_VALUE, (uint16_t)vlen, blk);
        prev = key;
        off += LR_VALUE + vlen;
    }
    if (off != used)
        node_problem(w, blk, "used bytes do not match the records");
    return off == used;
}

static bool walk_node(struct walk *w, const uint8_t *p, uint32_t cap, uint64_t blk,
                      unsigned level, struct span sp);

/* Reads, verifies and walks child i of an index node. */
static void walk_child(struct walk *w, uint64_t child, uint64_t key, unsigned level,
                       struct span sp)
{
    w->blocks++;
    if (!fck_claim(w->f, child, 1, w->ino, sfs_kind_name(w->magic)))
        return;                  /* cross-linked: do not walk it twice */
    const uint8_t *b = fck_read(w->f, child);
    uint8_t *copy = b ? malloc(SFS_BSIZE) : NULL;
    if (!copy)
        return;
    memcpy(copy, b, SFS_BSIZE);
    if (sfs_block_verify(copy, w->magic, child) != 0) {
        fck_problem_corrupt(w->f);
    } else if (walk_node(w, copy + BH_END, SFS_NODE_BLOCK_CAP, child, level, sp) &&
               le16_get(copy + BH_END + ND_NRECS) &&
               le64_get(copy + BH_END + ND_END) != key) {
        node_problem(w, child, "first key differs from its parent's separator");
    }
    free(copy);
}

static bool walk_index(struct walk *w, const uint8_t *p, uint64_t blk, unsigned level,
                       struct span sp)
{
    unsigned n = le16_get(p + ND_NRECS);
    const uint8_t *r = p + ND_END;
    if (le16_get(p + ND_USED) != n * IR_END) {
        node_problem(w, blk, "used bytes do not match the records");
        return false;
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t key = le64_get(r + i * IR_END), child = le64_get(r + i * IR_END + IR_CHILD);
        uint64_t next = i + 1 < n ? le64_get(r + (i + 1) * IR_END) : sp.hi;
        if ((i && key <= le64_get(r + (i - 1) * IR_END)) || key < sp.lo || key > sp.hi) {
            node_problem(w, blk, "keys out of order");
            return false;
        }
        if (child < w->f->sb.data_start || child >= w->f->sb.backup_blkno) {
            node_problem(w, blk, "child pointer outside the data area");
            continue;
        }
        struct span cs = {key, i + 1 < n ? next - 1 : sp.hi};
        walk_child(w, child, key, level - 1, cs);
    }
    return true;
}

static bool walk_node(struct walk *w, const uint8_t *p, uint32_t cap, uint64_t blk,
                      unsigned level, struct span sp)
{
    if (le16_get(p + ND_LEVEL) != level || level > SFS_BT_MAX_LEVEL) {
        node_problem(w, blk, "wrong level");
        return false;
    }
    if (le64_get(p + ND_OWNER) != w->ino) {
        node_problem(w, blk, "wrong owner");
        return false;
    }
    if (le16_get(p + ND_USED) > cap || (blk && le16_get(p + ND_NRECS) == 0)) {
        node_problem(w, blk, "bad record count");
        return false;
    }
    return level ? walk_index(w, p, blk, level, sp) : walk_leaf(w, p, blk, sp);
}

static void walk_tree(struct walk *w, const struct sfs_dinode *d)
{
    struct span all = {0, UINT64_MAX};
    unsigned level = le16_get(d->data + ND_LEVEL);
    if (level > 0 && le16_get(d->data + ND_NRECS) == 0)
        node_problem(w, 0, "empty index root");
    else
        walk_node(w, d->data, SFS_NODE_ROOT_CAP, 0, level, all);
}

/* ---- records ------------------------------------------------------------------ */

static void extent_record(struct walk *w, uint64_t key, const uint8_t *v)
{
    struct sfs_extent e;
    sfs_extent_decode(key, v, &e);
    struct fck *f = w->f;
    unsigned long long ino = (unsigned long long)w->ino, lb = (unsigned long long)e.lblk;
    if (e.len == 0 || (e.flags & ~SFS_EXT_KNOWN) || e.lblk + e.len < e.lblk) {
        fck_problem(f, "inode %llu: invalid extent at logical block %llu", ino, lb);
        return;
    }
    if (e.lblk < w->next_lblk)
        fck_problem(f, "inode %llu: extents overlap at logical block %llu", ino, lb);
    w->next_lblk = e.lblk + e.len;
    if (e.pblk < f->sb.data_start || e.pblk >= f->sb.backup_blkno ||
        e.len > f->sb.backup_blkno - e.pblk) {
        fck_problem(f, "inode %llu: extent at logical block %llu points outside the data "
                    "area (%llu+%u)", ino, lb, (unsigned long long)e.pblk, e.len);
        return;
    }
    fck_claim(f, e.pblk, e.len, w->ino, "file data");
    w->blocks += e.len;
}

static bool name_ok(const uint8_t *name, unsigned len)
{
    if (memchr(name, '/', len) || memchr(name, '\0', len))
        return false;
    return !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* Names sharing one hash group must differ. */
static void check_group(struct walk *w, uint64_t key, const char *name)
{
    uint64_t base = key & ~SFS_DKEY_SEQ_MASK;
    if (base != w->grp_base || !w->grp) {
        w->grp_base = base;
        w->ngrp = 0;
    }
    for (unsigned i = 0; i < w->ngrp; i++)
        if (!strcmp(w->grp[i], name))
            fck_problem(w->f, "directory %llu: name '%s' appears twice",
                        (unsigned long long)w->ino, name);
    if (w->ngrp < 64 && (w->grp || (w->grp = malloc(64 * sizeof(*w->grp)))))
        strcpy(w->grp[w->ngrp++], name);
}

/* True when inode slot ino holds a valid, linked inode of that number
 * (its bitmap bit alone was lost). Reads without the checker's cache: the
 * caller's node block lives there. */
static bool slot_valid(struct fck *f, uint64_t ino)
{
    uint8_t b[SFS_BSIZE];
    uint64_t blk = itable_blk(f, ino);
    const uint8_t *img = f->have_js ? jscan_find(&f->js, blk) : NULL;
    if (!img && media_read(f->m, blk, 1, b) != 0)
        return false;
    struct sfs_dinode d;
    bool ok = sfs_inode_decode((img ? img : b) + (ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE,
                               ino, blk, &d) == 0 && d.nlink > 0;
    cisc_corrupt_clear();
    return ok;
}

/* Remembers an entry naming a free inode, for sfs_repair. */
static void note_dangling(struct fck *f, uint64_t dir, uint64_t key, uint64_t child)
{
    if (f->ndang == f->cdang) {
        size_t cap = f->cdang ? f->cdang * 2 : 16;
        struct fck_dangling *n = realloc(f->dang, cap * sizeof(*n));
        if (!n)
            return;              /* repair then fixes fewer; the problem is reported */
        f->dang = n;
        f->cdang = cap;
    }
    bool restore = child > 0 && child < f->sb.ninodes && slot_valid(f, child);
    f->dang[f->ndang++] = (struct fck_dangling){dir, key, child, restore};
}

static void entry_target(struct walk *w, uint64_t key, const char *name, uint64_t child,
                         uint8_t type)
{
    struct fck *f = w->f;
    unsigned long long d = (unsigned long long)w->ino, c = (unsigned long long)child;
    if (child == 0 || child >= f->sb.ninodes || !fck_bit(f->ibm, child)) {
        fck_fixable(f, "directory %llu: entry '%s' names inode %llu, which is not in use", d,
                    name, c);
        note_dangling(f, w->ino, key, child);
        return;
    }
    struct fck_inode *in = &f->in[child];
    if (in->bad)
        return;
    in->refs++;
    if ((uint8_t)(IFTODT(in->mode)) != type)
        fck_problem(f, "directory %llu: entry '%s' has type %u but inode %llu is type %u", d,
                    name, type, c, (unsigned)IFTODT(in->mode));
    if (!S_ISDIR(in->mode))
        return;
    f->in[w->ino].subdirs++;
    if (in->entry_parent && in->entry_parent != w->ino)
        fck_problem(f, "directory %llu is named in two directories (%u and %llu)", c,
                    in->entry_parent, d);
    in->entry_parent = (uint32_t)w->ino;
}

static void dir_record(struct walk *w, uint64_t key, const uint8_t *v)
{
    char name[SFS_NAME_MAX + 1];
    unsigned len = v[DV_NAMELEN];
    memcpy(name, v + DV_NAME, len);
    name[len] = '\0';
    w->entries++;
    if (!name_ok(v + DV_NAME, len)) {
        fck_problem(w->f, "directory %llu: invalid entry name", (unsigned long long)w->ino);
        return;
    }
    if ((key & ~SFS_DKEY_SEQ_MASK) != sfs_dkey_base(sfs_name_hash(name, len, w->f->sb.hash_seed)))
        fck_problem(w->f, "directory %llu: entry '%s' is filed under the wrong hash",
                    (unsigned long long)w->ino, name);
    check_group(w, key, name);
    entry_target(w, key, name, le64_get(v + DV_INO), v[DV_TYPE]);
}

static void leaf_record(struct walk *w, uint64_t key, const uint8_t *v, uint16_t vlen,
                        uint64_t blk)
{
    (void)vlen;
    (void)blk;
    if (w->magic == SFS_MAGIC_EXTENT)
        extent_record(w, key, v);
    else
        dir_record(w, key, v);
}

/* ---- extended attributes --------------------------------------------------------- */

struct xnames {
    char (*v)[SFS_XATTR_NAME_MAX + 2];
    unsigned n, cap;
};

static void xname_add(struct walk *w, struct xnames *xn, uint8_t ns, const uint8_t *name,
                      unsigned len)
{
    char key[SFS_XATTR_NAME_MAX + 2];
    key[0] = (char)ns;
    memcpy(key + 1, name, len);
    key[len + 1] = '\0';
    for (unsigned i = 0; i < xn->n; i++) {
        if (!strcmp(xn->v[i], key)) {
            fck_problem(w->f, "inode %llu: extended attribute '%s' appears twice",
                        (unsigned long long)w->ino, key + 1);
            return;
        }
    }
    if (xn->n == xn->cap) {
        unsigned cap = xn->cap ? xn->cap * 2 : 16;
        void *p = realloc(xn->v, cap * sizeof(*xn->v));
        if (!p)
            return;
        xn->v = p;
        xn->cap = cap;
    }
    strcpy(xn->v[xn->n++], key);
}

static void value_blocks(struct walk *w, uint64_t vblk, uint32_t vsize)
{
    uint32_t n = (vsize + SFS_XVALUE_CAP - 1) / SFS_XVALUE_CAP;
    fck_claim(w->f, vblk, n, w->ino, "xattr value");
    w->blocks += n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = fck_read(w->f, vblk + i);
        if (!b)
            continue;
        if (sfs_block_verify(b, SFS_MAGIC_XVALUE, vblk + i) != 0)
            fck_problem_corrupt(w->f);
        else if (le64_get(b + XV_OWNER) != w->ino || le32_get(b + XV_INDEX) != i)
            fck_problem(w->f, "block %llu (xattr value block): wrong owner or index",
                        (unsigned long long)(vblk + i));
    }
}

/* The feature bit each namespace needs on the image (0: none). */
static uint32_t ns_feature(uint8_t ns)
{
    return ns == SFS_XNS_SECURITY ? SFS_FEAT_INCOMPAT_XSECURITY
           : ns == SFS_XNS_SYSTEM ? SFS_FEAT_INCOMPAT_XACL
                                  : 0;
}

/* An ACL's value (acl.h invariants 1-4); val NULL when it is not at hand. */
static void check_acl(struct walk *w, const uint8_t *name, unsigned len, const uint8_t *val,
                      uint32_t vsize)
{
    char full[7 + SFS_XATTR_NAME_MAX + 1] = "system.";
    memcpy(full + 7, name, len);
    full[7 + len] = '\0';
    int t = acl_type_of(full);
    struct sfs_acl a;
    bool minimal = false;
    unsigned long long ino = (unsigned long long)w->ino;
    if (t < 0)
        fck_problem(w->f, "inode %llu: unknown system attribute '%s'", ino, full);
    else if (S_ISLNK(w->mode) || (t == SFS_ACL_DEFAULT && !S_ISDIR(w->mode)))
        fck_problem(w->f, "inode %llu: %s on a %s", ino, full,
                    S_ISLNK(w->mode) ? "symlink" : "non-directory");
    else if (val && acl_decode(val, vsize, &a))
        fck_problem(w->f, "inode %llu: %s is not a valid ACL", ino, full);
    else if (val && t == SFS_ACL_ACCESS &&
             (acl_mode(&a, &minimal) != (w->mode & 0777) || minimal))
        fck_problem(w->f, "inode %llu: access ACL %s the mode %04o", ino,
                    minimal ? "stored though it only repeats" : "disagrees with",
                    w->mode & 07777);
}

/* The value of an external entry when it fits one block (ACLs always do). */
static const uint8_t *small_external(struct walk *w, const uint8_t *ref, uint32_t vsize)
{
    const uint8_t *b = vsize <= SFS_XVALUE_CAP ? fck_read(w->f, le64_get(ref + XR_VBLK)) : NULL;
    return b ? b + XV_DATA : NULL;
}

/* Walks an entry area; returns the number of entries, or -1 if malformed. */
static long xattr_area(struct walk *w, const uint8_t *a, uint32_t used, struct xnames *xn,
                       const char *where)
{
    long n = 0;
    for (uint32_t off = 0; off < used; n++) {
        const uint8_t *p = a + off;
        bool ext = off + XE_NAME <= used && (le16_get(p + XE_FLAGS) & SFS_XE_EXTERNAL);
        uint32_t vsize = off + XE_NAME <= used ? le32_get(p + XE_VSIZE) : 0;
        uint64_t size = off + XE_NAME <= used ? XE_NAME + p[XE_NAMELEN] + (ext ? XR_END : vsize)
                                              : UINT64_MAX;
        if (size > used - off || p[XE_NS] < SFS_XNS_USER || p[XE_NS] > SFS_XNS_LAST ||
            !p[XE_NAMELEN] || (le16_get(p + XE_FLAGS) & ~SFS_XE_EXTERNAL) ||
            vsize > SFS_XATTR_SIZE_MAX) {
            fck_problem(w->f, "inode %llu: malformed extended attribute in %s",
                        (unsigned long long)w->ino, where);
            return -1;
        }
        xname_add(w, xn, p[XE_NS], p + XE_NAME, p[XE_NAMELEN]);
        const uint8_t *ref = p + XE_NAME + p[XE_NAMELEN];
        if (ns_feature(p[XE_NS]) && !(w->f->sb.feat_incompat & ns_feature(p[XE_NS])))
            fck_problem(w->f, "inode %llu: extended attribute of namespace %u on an image "
                        "without its feature bit", (unsigned long long)w->ino, p[XE_NS]);
        if (p[XE_NS] == SFS_XNS_SYSTEM)
            check_acl(w, p + XE_NAME, p[XE_NAMELEN], ext ? small_external(w, ref, vsize) : ref,
                      vsize);
        if (ext && le32_get(ref + XR_NBLK) == (vsize + SFS_XVALUE_CAP - 1) / SFS_XVALUE_CAP)
            value_blocks(w, le64_get(ref + XR_VBLK), vsize);
        else if (ext)
            fck_problem(w->f, "inode %llu: extended attribute value reference has a wrong "
                        "block count", (unsigned long long)w->ino);
        off += (uint32_t)size;
    }
    return n;
}

static void xattr_block(struct walk *w, uint64_t blk, struct xnames *xn)
{
    struct fck *f = w->f;
    w->blocks++;
    if (!fck_claim(f, blk, 1, w->ino, "xattr block"))
        return;
    const uint8_t *b = fck_read(f, blk);
    uint8_t *c = b ? malloc(SFS_BSIZE) : NULL;
    if (!c)
        return;
    memcpy(c, b, SFS_BSIZE);
    char where[64];
    snprintf(where, sizeof(where), "xattr block %llu", (unsigned long long)blk);
    if (sfs_block_verify(c, SFS_MAGIC_XATTR, blk) != 0)
        fck_problem_corrupt(f);
    else if (le64_get(c + XB_OWNER) != w->ino || le16_get(c + XB_USED) > SFS_XBLOCK_CAP)
        fck_problem(f, "block %llu (xattr block): wrong owner or size", (unsigned long long)blk);
    else if (xattr_area(w, c + XB_ENTRIES, le16_get(c + XB_USED), xn, where) !=
             (long)le16_get(c + XB_COUNT))
        fck_problem(f, "block %llu (xattr block): entry count does not match",
                    (unsigned long long)blk);
    free(c);
}

static void check_xattrs(struct walk *w, const struct sfs_dinode *d)
{
    struct xnames xn = {NULL, 0, 0};
    xattr_area(w, d->ixattr, d->ixattr_used, &xn, "the inline area");
    if (d->xattr_blk && (d->xattr_blk < w->f->sb.data_start ||
                         d->xattr_blk >= w->f->sb.backup_blkno))
        fck_problem(w->f, "inode %llu: xattr block %llu outside the data area",
                    (unsigned long long)w->ino, (unsigned long long)d->xattr_blk);
    else if (d->xattr_blk)
        xattr_block(w, d->xattr_blk, &xn);
    free(xn.v);
}

/* ---- pass 2 ------------------------------------------------------------------------ */

static void check_symlink(struct walk *w, const struct sfs_dinode *d)
{
    if (d->flags & SFS_IFL_INLINE_DATA) {
        if (d->size == 0 || d->size > SFS_IDATA_SIZE)
            fck_problem(w->f, "inode %llu: inline symlink of size %llu",
                        (unsigned long long)w->ino, (unsigned long long)d->size);
        return;
    }
    if (d->size <= SFS_IDATA_SIZE || d->size > SFS_SYMLINK_MAX)
        fck_problem(w->f, "inode %llu: symlink target of size %llu stored in a block",
                    (unsigned long long)w->ino, (unsigned long long)d->size);
    walk_tree(w, d);
}

static void check_dir(struct walk *w, const struct sfs_dinode *d)
{
    walk_tree(w, d);
    if (w->entries != d->size)
        fck_problem(w->f, "directory %llu: size %llu but %llu entries",
                    (unsigned long long)w->ino, (unsigned long long)d->size,
                    (unsigned long long)w->entries);
    free(w->grp);
}

void fck_check_inode(struct fck *f, uint64_t ino)
{
    struct sfs_dinode d;
    if (f->in[ino].bad || read_dinode(f, ino, &d) != 0)
        return;
    struct walk w = {f, ino, S_ISDIR(d.mode) ? SFS_MAGIC_DIR : SFS_MAGIC_EXTENT, d.mode};
    if (S_ISREG(d.mode))
        walk_tree(&w, &d);
    else if (S_ISDIR(d.mode))
        check_dir(&w, &d);
    else if (S_ISLNK(d.mode))
        check_symlink(&w, &d);
    check_xattrs(&w, &d);
    if (w.blocks != d.blocks)
        fck_problem(f, "inode %llu: block count %llu, but it owns %llu blocks",
                    (unsigned long long)ino, (unsigned long long)d.blocks,
                    (unsigned long long)w.blocks);
}

/*
 * device/storagefs/fsck.c - the offline checker (sfs_fsck) and sfs_info.
 *
 * Order: superblock (primary, else backup) -> journal header and ring,
 * replayed into memory -> bitmaps -> pass 1 over allocated inodes
 * (decode) -> pass 2 (trees, extents, entries, xattrs; claims blocks) ->
 * cross checks (link counts, parents, reachability, orphan list, bitmaps
 * against claims, free counts). See fsck_int.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/fsck_int.h"
#include "device/storagefs/sfs_int.h"

/* ---- reporting and reading ------------------------------------------------------ */

void fck_problem(struct fck *f, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    f->problems++;
    if (f->fn)
        f->fn(f->arg, msg);
}

void fck_fixable(struct fck *f, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    f->fixable++;
    fck_problem(f, "%s", msg);
}

void fck_problem_corrupt(struct fck *f)
{
    fck_problem(f, "%s", cisc_corrupt_what());   /* without " (file.c:123)" */
    cisc_corrupt_clear();
}

const uint8_t *fck_read(struct fck *f, uint64_t blk)
{
    size_t slot = (size_t)(blk % FCK_CACHE);
    uint8_t *b = f->cache + slot * SFS_BSIZE;
    if (f->cache_blk[slot] == blk + 1)
        return b;
    const uint8_t *img = f->have_js ? jscan_find(&f->js, blk) : NULL;
    int r = img ? (memcpy(b, img, SFS_BSIZE), 0) : media_read(f->m, blk, 1, b);
    if (r) {
        f->cache_blk[slot] = 0;
        fck_problem(f, "block %llu: read error (%s)", (unsigned long long)blk, strerror(-r));
        return NULL;
    }
    f->cache_blk[slot] = blk + 1;
    return b;
}

bool fck_bit(const uint8_t *map, uint64_t i)
{
    return (map[i / 8] >> (i % 8)) & 1;
}

static void set_bit(uint8_t *map, uint64_t i)
{
    map[i / 8] |= (uint8_t)(1u << (i % 8));
}

bool fck_claim(struct fck *f, uint64_t start, uint64_t n, uint64_t ino, const char *what)
{
    bool fresh = true, reported_free = false;
    for (uint64_t b = start; b < start + n && b < f->sb.nblocks; b++) {
        if (fck_bit(f->claimed, b)) {
            fck_problem(f, "block %llu (%s of inode %llu) is also used elsewhere",
                        (unsigned long long)b, what, (unsigned long long)ino);
            fresh = false;
            continue;
        }
        set_bit(f->claimed, b);
        if (!fck_bit(f->bbm, b) && f->bbm_ok[b / SFS_BITMAP_BITS] && !reported_free) {
            fck_fixable(f, "block %llu (%s of inode %llu) is in use but marked free",
                        (unsigned long long)b, what, (unsigned long long)ino);
            reported_free = true;            /* one line per run */
        }
    }
    return fresh;
}

/* ---- superblock and journal ----------------------------------------------------- */

static void compare_backup(struct fck *f, const struct sfs_sb *b)
{
    const struct sfs_sb *p = &f->sb;
    if (b->nblocks != p->nblocks || b->ninodes != p->ninodes ||
        b->journal_blocks != p->journal_blocks || memcmp(b->uuid, p->uuid, 16) ||
        b->journal_id != p->journal_id || b->hash_seed != p->hash_seed)
        fck_problem(f, "block %llu (superblock): backup superblock disagrees with the primary",
                    (unsigned long long)p->backup_blkno);
}

/* Finds a usable superblock: the primary, else the backup at the end of
 * the image. Returns 0 or -EUCLEAN (reported). */
static int load_super(struct fck *f)
{
    struct sfs_sb b;
    if (sfs_read_super(f->m, 0, &f->sb) == 0) {
        if (sfs_read_super(f->m, f->sb.backup_blkno, &b) != 0)
            fck_problem_corrupt(f);
        else
            compare_backup(f, &b);
        cisc_corrupt_clear();
        return 0;
    }
    fck_problem_corrupt(f);
    if (f->m->nblocks && sfs_read_super(f->m, f->m->nblocks - 1, &f->sb) == 0) {
        fck_problem(f, "using the backup superblock at block %llu",
                    (unsigned long long)(f->m->nblocks - 1));
        return 0;
    }
    cisc_corrupt_clear();
    return -EUCLEAN;
}

static void load_journal(struct fck *f, struct sfs_fsck_result *res)
{
    int r = jscan_run(f->m, &f->sb, &f->js);
    if (r == -EUCLEAN) {
        fck_problem_corrupt(f);
        jscan_free(&f->js);
        return;
    }
    if (r) {
        fck_problem(f, "journal: cannot be read (%s)", strerror(-r));
        jscan_free(&f->js);
        return;
    }
    f->have_js = true;
    res->journal_txns = f->js.ntxn;
    if (f->js.stop == JSCAN_CORRUPT)
        fck_problem(f, "journal: %s", f->js.why);
    else if (f->js.stop == JSCAN_TORN)
        snprintf(res->journal_note, sizeof(res->journal_note), "%s", f->js.why);
    if (f->js.ntxn && f->sb.state == SFS_STATE_CLEAN)
        fck_problem(f, "journal: %llu committed transactions, but the superblock says the "
                    "image was unmounted cleanly", (unsigned long long)f->js.ntxn);
    const uint8_t *img = jscan_find(&f->js, 0);
    if (img)                     /* the replayed superblock (same geometry) */
        f->sb.orphan_head = le64_get(img + SB_ORPHAN_HEAD);
}

/* ---- bitmaps ------------------------------------------------------------------ */

static void load_bitmap(struct fck *f, uint64_t start, uint64_t nblk, uint32_t magic,
                        uint64_t nbits, uint8_t *map, bool *ok)
{
    for (uint64_t k = 0; k < nblk; k++) {
        const uint8_t *b = fck_read(f, start + k);
        if (!b || sfs_block_verify(b, magic, start + k) != 0) {
            if (b)
                fck_problem_corrupt(f);
            continue;
        }
        if (ok)
            ok[k] = true;
        bool pad_ok = true;
        for (uint32_t i = 0; i < SFS_BITMAP_BITS; i++) {
            uint64_t bit = k * SFS_BITMAP_BITS + i;
            if (bit < nbits && sfs_bit_get(b, i))
                set_bit(map, bit);
            else if (bit >= nbits && !sfs_bit_get(b, i))
                pad_ok = false;
        }
        if (!pad_ok)
            fck_problem(f, "block %llu (%s): padding bits past the end are not set",
                        (unsigned long long)(start + k), sfs_kind_name(magic));
    }
}

/* Bitmaps and the read cache (enough for sfs_info); with `full`, also
 * the claim map and the per-inode table fsck needs. */
static int alloc_state(struct fck *f, bool full)
{
    const struct sfs_sb *sb = &f->sb;
    f->bbm = calloc(sb->nblocks / 8 + 1, 1);
    f->ibm = calloc(sb->ninodes / 8 + 1, 1);
    f->bbm_ok = calloc(sb->bbitmap_blocks, sizeof(bool));
    f->cache = malloc(FCK_CACHE * SFS_BSIZE);
    if (full) {
        f->claimed = calloc(sb->nblocks / 8 + 1, 1);
        f->in = calloc(sb->ninodes, sizeof(*f->in));
    }
    bool ok = f->bbm && f->ibm && f->bbm_ok && f->cache && (!full || (f->claimed && f->in));
    return ok ? 0 : -ENOMEM;
}

static void free_state(struct fck *f)
{
    free(f->bbm), free(f->claimed), free(f->ibm), free(f->bbm_ok), free(f->in);
    free(f->cache), free(f->dang);
    jscan_free(&f->js);
}

/* A grow committed but not finished (grow.c invariant 2): its new blocks
 * are free whatever their bits say (the next mount clears them). */
static void grow_pending(struct fck *f)
{
    for (uint64_t b = f->sb.grow_from; f->sb.grow_from && b < f->sb.backup_blkno; b++)
        f->bbm[b / 8] &= (uint8_t)~(1u << (b % 8));
}

/* Metadata regions belong to nobody but must be marked used. */
static void claim_metadata(struct fck *f)
{
    const struct sfs_sb *sb = &f->sb;
    for (uint64_t b = 0; b < sb->data_start; b++)
        set_bit(f->claimed, b);
    set_bit(f->claimed, sb->backup_blkno);
    for (uint64_t b = 0; b < sb->data_start; b++) {
        if (!fck_bit(f->bbm, b) && f->bbm_ok[b / SFS_BITMAP_BITS]) {
            fck_problem(f, "block %llu (block bitmap): metadata block %llu marked free",
                        (unsigned long long)(sb->bbitmap_start + b / SFS_BITMAP_BITS),
                        (unsigned long long)b);
            break;
        }
    }
    if (!fck_bit(f->bbm, sb->backup_blkno) && f->bbm_ok[sb->backup_blkno / SFS_BITMAP_BITS])
        fck_problem(f, "block bitmap: the backup superblock is marked free");
}

/* ---- cross checks -------------------------------------------------------------- */

/* Follows entry_parent links up to the root; memoised in reach. */
static bool reachable(struct fck *f, uint64_t ino)
{
    struct fck_inode *in = f->in;
    uint64_t cur = ino;
    while (cur != SFS_ROOT_INO && in[cur].reach == 0 && in[cur].entry_parent) {
        in[cur].reach = 1;                  /* on the path being walked */
        cur = in[cur].entry_parent;
    }
    bool ok = cur == SFS_ROOT_INO || in[cur].reach == 2;
    for (cur = ino; cur != SFS_ROOT_INO && in[cur].reach == 1; cur = in[cur].entry_parent)
        in[cur].reach = ok ? 2 : 3;
    return ok;
}

static void check_links(struct fck *f, uint64_t ino)
{
    struct fck_inode *in = &f->in[ino];
    unsigned long long i = (unsigned long long)ino;
    if (S_ISDIR(in->mode)) {
        uint32_t want = 2 + in->subdirs;
        if (in->nlink && in->nlink != want)
            fck_fixable(f, "directory %llu: link count %u, expected %u", i, in->nlink, want);
        bool named_ok = ino == SFS_ROOT_INO ? in->refs == 0
                        : in->nlink ? in->refs == 1 : in->refs == 0;
        if (!named_ok && in->refs == 0)        /* repair: lost+found */
            fck_fixable(f, "directory %llu is named by 0 entries", i);
        else if (!named_ok)
            fck_problem(f, "directory %llu is named by %u entries", i, in->refs);
        if (in->nlink && ino != SFS_ROOT_INO && in->entry_parent &&
            in->parent != in->entry_parent)
            fck_problem(f, "directory %llu: parent field %u, but it is named in %u", i,
                        in->parent, in->entry_parent);
        if (in->nlink && ino != SFS_ROOT_INO && in->refs == 1 && !reachable(f, ino))
            fck_problem(f, "directory %llu is not reachable from the root", i);
        return;
    }
    if (in->nlink != in->refs)
        fck_fixable(f, "inode %llu: link count %u, but %u directory entries", i, in->nlink,
                    in->refs);
}

static void check_orphans(struct fck *f)
{
    uint64_t ino = f->sb.orphan_head, n = 0;
    uint8_t *seen = calloc(f->sb.ninodes / 8 + 1, 1);
    while (seen && ino && n++ < f->sb.ninodes) {
        if (ino >= f->sb.ninodes || !fck_bit(f->ibm, ino) || f->in[ino].bad) {
            fck_problem(f, "orphan list: inode %llu is not a valid inode",
                        (unsigned long long)ino);
            break;
        }
        if (fck_bit(seen, ino)) {
            fck_problem(f, "orphan list: inode %llu appears twice (cycle)",
                        (unsigned long long)ino);
            break;
        }
        set_bit(seen, ino);
        if (f->in[ino].nlink != 0)
            fck_problem(f, "orphan list: inode %llu still has %u links",
                        (unsigned long long)ino, f->in[ino].nlink);
        const uint8_t *b = fck_read(f, f->sb.itable_start + ino / SFS_INODES_PER_BLOCK);
        ino = b ? le64_get(b + (ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE + DI_ORPHAN_NEXT)
                : 0;
    }
    for (uint64_t i = 1; seen && i < f->sb.ninodes; i++)
        if (f->in[i].mode && f->in[i].nlink == 0 && !fck_bit(seen, i))
            fck_fixable(f, "inode %llu has no links but is not on the orphan list",
                        (unsigned long long)i);
    free(seen);
}

/* Reports runs of blocks marked used that nothing references. */
static void check_unclaimed(struct fck *f)
{
    uint64_t run = 0, start = 0;
    for (uint64_t b = 0; b <= f->sb.nblocks; b++) {
        bool leak = b < f->sb.nblocks && fck_bit(f->bbm, b) && !fck_bit(f->claimed, b);
        if (leak && run++ == 0)
            start = b;
        if (!leak && run) {
            fck_fixable(f, "blocks %llu-%llu are marked used but nothing references them",
                        (unsigned long long)start, (unsigned long long)(start + run - 1));
            run = 0;
        }
    }
}

static uint64_t count_free(const uint8_t *map, uint64_t from, uint64_t to)
{
    uint64_t n = 0;
    for (uint64_t i = from; i < to; i++)
        n += !fck_bit(map, i);
    return n;
}

static void check_counts(struct fck *f, struct sfs_fsck_result *res)
{
    uint64_t fb = count_free(f->bbm, f->sb.data_start, f->sb.backup_blkno);
    uint64_t fi = count_free(f->ibm, 1, f->sb.ninodes);
    res->blocks_total = f->sb.nblocks;
    res->blocks_used = f->sb.nblocks - fb;
    if (f->sb.state != SFS_STATE_CLEAN || f->have_js == false || f->js.ntxn)
        return;
    if (f->sb.free_blocks != fb || f->sb.free_inodes != fi)
        fck_fixable(f, "superblock: free counts %llu blocks / %llu inodes, bitmaps say "
                    "%llu / %llu", (unsigned long long)f->sb.free_blocks,
                    (unsigned long long)f->sb.free_inodes, (unsigned long long)fb,
                    (unsigned long long)fi);
}

/* ---- the driver ------------------------------------------------------------------- */

static void check_inodes(struct fck *f)
{
    const struct sfs_sb *sb = &f->sb;
    if (!fck_bit(f->ibm, SFS_ROOT_INO))
        fck_problem(f, "inode bitmap: the root inode is marked free");
    for (uint64_t i = 1; i < sb->ninodes; i++)
        if (fck_bit(f->ibm, i)) {
            fck_load_inode(f, i);
            f->files++;
        }
    if (!S_ISDIR(f->in[SFS_ROOT_INO].mode) && !f->in[SFS_ROOT_INO].bad)
        fck_problem(f, "inode 1 (root) is not a directory");
    for (uint64_t i = 1; i < sb->ninodes; i++)
        if (fck_bit(f->ibm, i))
            fck_check_inode(f, i);
    for (uint64_t i = 1; i < sb->ninodes; i++)
        if (f->in[i].mode)
            check_links(f, i);
}

int fck_run(struct fck *f, struct media *m, sfs_problem_fn fn, void *arg,
            struct sfs_fsck_result *res)
{
    memset(f, 0, sizeof(*f));
    memset(res, 0, sizeof(*res));
    f->m = m;
    f->fn = fn;
    f->arg = arg;
    cisc_corrupt_clear();
    int r = load_super(f);
    if (!r && (f->sb.feat_incompat & ~SFS_FEAT_INCOMPAT_SUPP)) {
        fck_problem(f, "superblock: unsupported incompatible features 0x%x",
                    f->sb.feat_incompat);
        r = -EUCLEAN;
    }
    if (!r)
        r = alloc_state(f, true);
    if (!r) {
        load_journal(f, res);
        load_bitmap(f, f->sb.bbitmap_start, f->sb.bbitmap_blocks, SFS_MAGIC_BBITMAP,
                    f->sb.nblocks, f->bbm, f->bbm_ok);
        grow_pending(f);
        load_bitmap(f, f->sb.ibitmap_start, f->sb.ibitmap_blocks, SFS_MAGIC_IBITMAP,
                    f->sb.ninodes, f->ibm, NULL);
        claim_metadata(f);
        check_inodes(f);
        check_orphans(f);
        check_unclaimed(f);
        check_counts(f, res);
        res->files = f->files;
    }
    res->problems = f->problems;
    return r;
}

void fck_free(struct fck *f)
{
    free_state(f);
}

int sfs_fsck(struct media *m, sfs_problem_fn fn, void *arg, struct sfs_fsck_result *res)
{
    struct fck f;
    int r = fck_run(&f, m, fn, arg, res);
    free_state(&f);
    return r;
}

/* ---- info --------------------------------------------------------------------------- */

static void fill_info(struct sfs_info *o, const struct sfs_sb *sb)
{
    o->version = sb->version;
    memcpy(o->uuid, sb->uuid, 16);
    o->clean = sb->state == SFS_STATE_CLEAN;
    o->mount_count = sb->mount_count;
    o->mkfs_time = sb->mkfs_time;
    o->mount_time = sb->mount_time;
    o->write_time = sb->write_time;
    o->feat_compat = sb->feat_compat;
    o->feat_incompat = sb->feat_incompat;
    o->feat_ro_compat = sb->feat_ro_compat;
    o->block_size = sb->block_size;
    o->blocks = sb->nblocks;
    o->inodes = sb->ninodes - 1;
    o->journal_start = sb->journal_start;
    o->journal_blocks = sb->journal_blocks;
    o->bbitmap_start = sb->bbitmap_start;
    o->bbitmap_blocks = sb->bbitmap_blocks;
    o->ibitmap_start = sb->ibitmap_start;
    o->ibitmap_blocks = sb->ibitmap_blocks;
    o->itable_start = sb->itable_start;
    o->itable_blocks = sb->itable_blocks;
    o->data_start = sb->data_start;
}

static void discard_problem(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

int sfs_info(struct media *m, struct sfs_info *o)
{
    struct fck f;
    memset(&f, 0, sizeof(f));
    memset(o, 0, sizeof(*o));
    f.m = m;
    f.fn = discard_problem;
    int r = sfs_read_super(m, 0, &f.sb);
    if (!r)
        r = alloc_state(&f, false);
    if (!r)
        r = jscan_run(m, &f.sb, &f.js);
    if (!r) {
        f.have_js = true;
        fill_info(o, &f.sb);
        load_bitmap(&f, f.sb.bbitmap_start, f.sb.bbitmap_blocks, SFS_MAGIC_BBITMAP,
                    f.sb.nblocks, f.bbm, f.bbm_ok);
        grow_pending(&f);
        load_bitmap(&f, f.sb.ibitmap_start, f.sb.ibitmap_blocks, SFS_MAGIC_IBITMAP,
                    f.sb.ninodes, f.ibm, NULL);
        o->blocks_free = count_free(f.bbm, f.sb.data_start, f.sb.backup_blkno);
        o->inodes_free = count_free(f.ibm, 1, f.sb.ninodes);
        o->journal_txns = f.js.ntxn;
        o->journal_next_seq = f.js.next_seq;
        if (f.js.stop != JSCAN_END)
            snprintf(o->journal_note, sizeof(o->journal_note), "%s", f.js.why);
    }
    free_state(&f);
    return r;
}

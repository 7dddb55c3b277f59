/*
 * device/media/media_array.c - an array of member media striped into one
 * (ScalaCache 5.5: CSD arrays striped 64 KiB), with the label that ties
 * each member image to its array (media.h, "Arrays").
 *
 * Label (block 0 of every member; little-endian, the rest of the block
 * zero):
 *   0  magic "CISCARR1" (8 bytes)   20 u32 stripe (blocks, 16)
 *   8  u32 version (1)              24 u64 member_blocks (data blocks)
 *   12 u32 members                  32 array id (16 random bytes)
 *   16 u32 index                    48 u32 CRC32C of bytes 0..47
 *
 * Invariants:
 *   1. Array block b lives in member (b / S) % N at member block
 *      1 + (b / S / N) * S + b % S (S = MEDIA_ARRAY_STRIPE, N members):
 *      member block 0 is the label, never reachable through the array.
 *   2. Every member of an open array carries a label with the same id and
 *      member count, and its own index; it holds at least 1 +
 *      member_blocks blocks of its own label.
 *   3. The array owns its members: closing it closes them.
 *   4. Growing (media_array_relabel, `cisc resize --members`): the member
 *      files are extended first, then each label rewritten (flushed) with
 *      the larger member_blocks, one member at a time, and only then does
 *      the file system grow. So labels that disagree on member_blocks are
 *      a grow cut short between labels: the array opens at the smallest
 *      (the file system has not grown past it), and the next grow
 *      rewrites them all. The stripe map (invariant 1) does not depend on
 *      member_blocks, so every old block keeps its place.
 */
#include "device/media/media.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/crc32c.h"
#include "common/le.h"

#define LABEL_MAGIC "CISCARR1"
#define LABEL_VERSION 1u
#define L_VERSION 8
#define L_MEMBERS 12
#define L_INDEX 16
#define L_STRIPE 20
#define L_BLOCKS 24
#define L_ID 32
#define L_CRC 48

struct media_array {
    struct media m;             /* first: the media a caller sees */
    bool uneven;                /* the labels disagree on the size (invariant 4) */
    unsigned n;
    struct media *member[MEDIA_ARRAY_MAX];
};

static struct media_array *to_array(struct media *m)
{
    return (struct media_array *)m;
}

/* ---- the label ---- */

static void label_encode(const struct media_array_label *l, uint8_t *b)
{
    memset(b, 0, MEDIA_BLOCK_SIZE);
    memcpy(b, LABEL_MAGIC, 8);
    le32_put(b + L_VERSION, LABEL_VERSION);
    le32_put(b + L_MEMBERS, l->members);
    le32_put(b + L_INDEX, l->index);
    le32_put(b + L_STRIPE, MEDIA_ARRAY_STRIPE);
    le64_put(b + L_BLOCKS, l->member_blocks);
    memcpy(b + L_ID, l->id, sizeof(l->id));
    le32_put(b + L_CRC, crc32c(0, b, L_CRC));
}

/* Returns 0, -ENOENT (no label magic) or -EUCLEAN (damaged or of another
 * version or stripe). */
static int label_decode(const uint8_t *b, struct media_array_label *l)
{
    if (memcmp(b, LABEL_MAGIC, 8))
        return -ENOENT;
    if (le32_get(b + L_CRC) != crc32c(0, b, L_CRC) || le32_get(b + L_VERSION) != LABEL_VERSION ||
        le32_get(b + L_STRIPE) != MEDIA_ARRAY_STRIPE)
        return -EUCLEAN;
    l->members = le32_get(b + L_MEMBERS);
    l->index = le32_get(b + L_INDEX);
    l->member_blocks = le64_get(b + L_BLOCKS);
    memcpy(l->id, b + L_ID, sizeof(l->id));
    bool sane = l->members >= 1 && l->members <= MEDIA_ARRAY_MAX && l->index < l->members &&
                l->member_blocks % MEDIA_ARRAY_STRIPE == 0 && l->member_blocks;
    return sane ? 0 : -EUCLEAN;
}

int media_array_label_read(struct media *m, struct media_array_label *l)
{
    uint8_t *b = malloc(MEDIA_BLOCK_SIZE);
    if (!b)
        return -ENOMEM;
    int r = m->nblocks ? media_read(m, 0, 1, b) : -ENOENT;
    if (!r)
        r = label_decode(b, l);
    free(b);
    return r;
}

static int fail(char *err, size_t errlen, int r, const char *fmt, const char *name,
                unsigned a, unsigned b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, name, a, b);
    return r;
}

/* Invariant 2 for member i (name) against member 0's label l0. */
static int check_member(struct media *m, const char *name, unsigned i, unsigned n,
                        const struct media_array_label *l0, char *err, size_t errlen)
{
    struct media_array_label l;
    int r = media_array_label_read(m, &l);
    if (r == -ENOENT)
        return fail(err, errlen, -EINVAL, "%s is not a ciscfs array member (no array label; "
                    "make an array with cisc mkfs --members)", name, 0, 0);
    if (r == -EUCLEAN)
        return fail(err, errlen, -EUCLEAN, "%s: its array label is damaged", name, 0, 0);
    if (r)
        return fail(err, errlen, r, "%s: cannot read its array label", name, 0, 0);
    if (l.members != n)
        return fail(err, errlen, -EINVAL, "%s belongs to an array of %u members, %u given",
                    name, l.members, n);
    if (l.index != i)
        return fail(err, errlen, -EINVAL, "%s is member %u of its array, given as member %u",
                    name, l.index, i);
    if (l0 && memcmp(l.id, l0->id, sizeof(l.id)))   /* member_blocks may differ: invariant 4 */
        return fail(err, errlen, -EINVAL, "%s belongs to another array than member 0", name,
                    0, 0);
    if (m->nblocks < l.member_blocks + 1)
        return fail(err, errlen, -EINVAL, "%s is shorter than its array label says "
                    "(truncated?)", name, 0, 0);
    return 0;
}

int media_array_check(struct media *const *members, const char *const *names, unsigned n,
                      char *err, size_t errlen)
{
    if (n < 1 || n > MEDIA_ARRAY_MAX) {
        if (err && errlen)
            snprintf(err, errlen, "an array has 1 to %u members, not %u", MEDIA_ARRAY_MAX, n);
        return -EINVAL;
    }
    struct media_array_label l0;
    for (unsigned i = 0; i < n; i++) {
        int r = check_member(members[i], names[i], i, n, i ? &l0 : NULL, err, errlen);
        if (!r && i == 0)
            r = media_array_label_read(members[0], &l0);
        if (r)
            return r;
    }
    return 0;
}

int media_array_format(struct media *const *members, unsigned n)
{
    if (n < 1 || n > MEDIA_ARRAY_MAX)
        return -EINVAL;
    struct media_array_label l = { .members = n };
    uint64_t least = UINT64_MAX;
    for (unsigned i = 0; i < n; i++)
        least = members[i]->nblocks < least ? members[i]->nblocks : least;
    l.member_blocks = least > 1 ? (least - 1) / MEDIA_ARRAY_STRIPE * MEDIA_ARRAY_STRIPE : 0;
    if (!l.member_blocks)
        return -ENOSPC;
    if (getrandom(l.id, sizeof(l.id), 0) != (ssize_t)sizeof(l.id))
        return -EIO;
    uint8_t *b = malloc(MEDIA_BLOCK_SIZE);
    if (!b)
        return -ENOMEM;
    int r = 0;
    for (unsigned i = 0; !r && i < n; i++) {
        l.index = i;
        label_encode(&l, b);
        r = media_write(members[i], 0, 1, b);
        if (!r)
            r = media_flush(members[i]);
    }
    free(b);
    return r;
}

/* ---- the striped media (invariant 1) ---- */

/* The member holding array block b, *local its block there, *run how
 * many blocks from b (at most want) stay contiguous in it. */
static struct media *route(struct media_array *a, uint64_t b, uint64_t want, uint64_t *local,
                           uint64_t *run)
{
    uint64_t s = b / MEDIA_ARRAY_STRIPE, in = b % MEDIA_ARRAY_STRIPE;
    *local = 1 + s / a->n * MEDIA_ARRAY_STRIPE + in;
    *run = MEDIA_ARRAY_STRIPE - in < want ? MEDIA_ARRAY_STRIPE - in : want;
    return a->member[s % a->n];
}

static int range_ok(const struct media *m, uint64_t blk, uint64_t n)
{
    return blk <= m->nblocks && n <= m->nblocks - blk;
}

/* Calls io on each contiguous run of [blk, blk + n) with its piece of
 * buf (NULL for trim and discard). */
static int for_runs(struct media *m, uint64_t blk, uint64_t n, char *buf,
                    int (*io)(struct media *, uint64_t, uint64_t, char *))
{
    if (!range_ok(m, blk, n))
        return -EINVAL;
    while (n) {
        uint64_t local, run;
        struct media *mm = route(to_array(m), blk, n, &local, &run);
        int r = io(mm, local, run, buf);
        if (r)
            return r;
        blk += run;
        n -= run;
        if (buf)
            buf += run * MEDIA_BLOCK_SIZE;
    }
    return 0;
}

static int run_read(struct media *m, uint64_t b, uint64_t n, char *buf)
{
    return media_read(m, b, (uint32_t)n, buf);
}

static int run_write(struct media *m, uint64_t b, uint64_t n, char *buf)
{
    return media_write(m, b, (uint32_t)n, buf);
}

static int run_discard(struct media *m, uint64_t b, uint64_t n, char *buf)
{
    (void)buf;
    return media_discard(m, b, n);
}

static int run_trim(struct media *m, uint64_t b, uint64_t n, char *buf)
{
    (void)buf;
    media_trim(m, b, n);
    return 0;
}

static int arr_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    return for_runs(m, blk, n, buf, run_read);
}

static int arr_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    return for_runs(m, blk, n, (char *)buf, run_write);   /* run_write only reads it */
}

/* Part of one block: its member's part write (-EOPNOTSUPP when the
 * member writes whole blocks only). */
static int arr_write_part(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                          const void *buf)
{
    uint64_t local, run;
    if (!range_ok(m, blk, 1))
        return -EINVAL;
    struct media *mm = route(to_array(m), blk, 1, &local, &run);
    return media_write_part(mm, local, off, len, buf);
}

static int arr_discard(struct media *m, uint64_t blk, uint64_t n)
{
    return for_runs(m, blk, n, NULL, run_discard);
}

static void arr_trim(struct media *m, uint64_t blk, uint64_t n)
{
    (void)for_runs(m, blk, n, NULL, run_trim);
}

/* Every member, so that all writes before it are durable (media.h 2). */
static int arr_flush(struct media *m)
{
    int first = 0;
    for (unsigned i = 0; i < to_array(m)->n; i++) {
        int r = media_flush(to_array(m)->member[i]);
        first = first ? first : r;
    }
    return first;
}

static void arr_close(struct media *m)
{
    for (unsigned i = 0; i < to_array(m)->n; i++)
        media_close(to_array(m)->member[i]);
    free(m);
}

static const struct media_ops array_ops = {
    .read = arr_read,
    .write = arr_write,
    .flush = arr_flush,
    .discard = arr_discard,
    .close = arr_close,
    .trim = arr_trim,
    .write_part = arr_write_part,
};

/* The smallest member_blocks of the members' labels (invariant 4), each
 * member long enough for its own; *uneven when they are not all equal.
 * Returns 0 or -errno. */
static int least_member_blocks(struct media *const *members, unsigned n, uint64_t *least,
                               bool *uneven)
{
    uint64_t most = 0;
    *least = UINT64_MAX;
    for (unsigned i = 0; i < n; i++) {
        struct media_array_label l;
        int r = media_array_label_read(members[i], &l);
        if (r)
            return r == -ENOENT ? -EINVAL : r;
        if (members[i]->nblocks < l.member_blocks + 1)
            return -EINVAL;
        *least = l.member_blocks < *least ? l.member_blocks : *least;
        most = l.member_blocks > most ? l.member_blocks : most;
    }
    *uneven = most != *least;
    return 0;
}

int media_array_open(struct media *const *members, unsigned n, struct media **out)
{
    uint64_t mb;
    bool uneven;
    if (n < 1 || n > MEDIA_ARRAY_MAX)
        return -EINVAL;
    int r = least_member_blocks(members, n, &mb, &uneven);
    if (r)
        return r;
    struct media_array *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->m.ops = &array_ops;
    a->m.nblocks = mb * n;
    a->uneven = uneven;
    a->n = n;
    memcpy(a->member, members, n * sizeof(*members));
    *out = &a->m;
    return 0;
}

unsigned media_array_members(struct media *m)
{
    return m && m->ops == &array_ops ? to_array(m)->n : 0;
}

bool media_array_uneven(struct media *m)
{
    return media_array_members(m) && to_array(m)->uneven;
}

struct media *media_array_member(struct media *m, unsigned i)
{
    return i < media_array_members(m) ? to_array(m)->member[i] : NULL;
}

int media_array_relabel(struct media *const *members, unsigned n, uint64_t member_blocks)
{
    if (n < 1 || n > MEDIA_ARRAY_MAX || !member_blocks ||
        member_blocks % MEDIA_ARRAY_STRIPE)
        return -EINVAL;
    for (unsigned i = 0; i < n; i++)
        if (members[i]->nblocks < member_blocks + 1)
            return -EINVAL;   /* extend the files first (invariant 4) */
    uint8_t *b = malloc(MEDIA_BLOCK_SIZE);
    if (!b)
        return -ENOMEM;
    int r = 0;
    for (unsigned i = 0; !r && i < n; i++) {
        struct media_array_label l;
        r = media_array_label_read(members[i], &l);
        if (r == -ENOENT)
            r = -EINVAL;
        if (r || l.member_blocks == member_blocks)
            continue;
        l.member_blocks = member_blocks;
        label_encode(&l, b);
        r = media_write(members[i], 0, 1, b);
        if (!r)
            r = media_flush(members[i]);
    }
    free(b);
    return r;
}

/* Closes members[0..n). */
static void close_all(struct media **members, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        media_close(members[i]);
}

int media_array_open_files(const char *const *paths, unsigned n, unsigned flags, char *err,
                           size_t errlen, struct media **out)
{
    struct media *mem[MEDIA_ARRAY_MAX];
    if (n < 1 || n > MEDIA_ARRAY_MAX)
        return media_array_check(NULL, NULL, n, err, errlen);   /* says why */
    for (unsigned i = 0; i < n; i++) {
        int r = media_open_file(paths[i], flags, &mem[i]);
        if (r) {
            close_all(mem, i);
            if (err && errlen)
                snprintf(err, errlen, r == -EBUSY ? "%s is in use by a running device"
                                                  : "%s: %s", paths[i], strerror(-r));
            return r;
        }
    }
    int r = media_array_check(mem, paths, n, err, errlen);
    if (!r && (r = media_array_open(mem, n, out)) != 0 && err && errlen)
        snprintf(err, errlen, "cannot open the array: %s", strerror(-r));
    if (r)
        close_all(mem, n);
    return r;
}

/*
 * device/media/flash_state.c - saving the NAND model's FTL state at a clean
 * shutdown and loading it at the next start (flash.h flash_save and
 * flash_load).
 *
 * The file, in native byte order (it is this host's simulator state, never
 * moved between machines): a header of u64 words
 *   magic, version, nlog, channels, dies_per_channel, blocks_per_die,
 *   pages_per_block, partitions, stripe_pages,
 * then l2p (nlog u32), per block {erases u32, state u32, stamp u64}, per
 * die {open u32, wp u32}, per partition {next, seq, host_reads,
 * host_writes, trims, gc_runs, moved, erases, bg_runs} (u64), and a CRC32C
 * of all that. Derived state (p2l, valid counts, free pools) is rebuilt
 * at load and checked (flash_check); timelines start idle.
 */
#include "device/media/flash.h"
#include "device/media/flash_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc32c.h"

#define STATE_MAGIC   0x314c5446435349c3ull   /* "\xc3ISCFTL1", native order */
#define STATE_VERSION 1u
#define HDR_WORDS     9u
#define PART_WORDS    9u

/* A cursor over the file's bytes. */
struct cur {
    uint8_t *p;
    size_t off, len;
};

static void put(struct cur *c, const void *v, size_t n)
{
    memcpy(c->p + c->off, v, n);
    c->off += n;
}

static int get(struct cur *c, void *v, size_t n)
{
    if (c->len - c->off < n)
        return -EINVAL;
    memcpy(v, c->p + c->off, n);
    c->off += n;
    return 0;
}

static size_t state_size(const struct flash *f)
{
    uint64_t nblk = (uint64_t)f->ndies * f->bpd;
    return HDR_WORDS * 8 + f->nlog * 4 + nblk * 16 + (uint64_t)f->ndies * 8 +
           (uint64_t)f->nparts * PART_WORDS * 8 + 4;
}

static void header(const struct flash *f, uint64_t h[HDR_WORDS])
{
    uint64_t v[HDR_WORDS] = { STATE_MAGIC, STATE_VERSION, f->nlog, f->g.channels,
                              f->g.dies_per_channel, f->bpd, f->ppb, f->nparts, f->stripe };
    memcpy(h, v, sizeof(v));
}

static void part_words(struct fpart *pt, uint64_t *w[PART_WORDS])
{
    uint64_t *v[PART_WORDS] = { NULL, &pt->seq, &pt->host_reads, &pt->host_writes,
                                &pt->trims, &pt->gc_runs, &pt->moved, &pt->erases,
                                &pt->bg_runs };
    memcpy(w, v, sizeof(v));
}

/* Serialises f (all partition locks held) into c. */
static void encode(struct flash *f, struct cur *c)
{
    uint64_t h[HDR_WORDS];
    header(f, h);
    put(c, h, sizeof(h));
    put(c, f->l2p, f->nlog * 4);
    uint64_t nblk = (uint64_t)f->ndies * f->bpd;
    for (uint64_t b = 0; b < nblk; b++) {
        uint32_t st = f->blk[b].state;
        put(c, &f->blk[b].erases, 4);
        put(c, &st, 4);
        put(c, &f->blk[b].stamp, 8);
    }
    for (uint32_t d = 0; d < f->ndies; d++) {
        put(c, &f->die[d].open, 4);
        put(c, &f->die[d].wp, 4);
    }
    for (uint32_t i = 0; i < f->nparts; i++) {
        uint64_t *w[PART_WORDS], next = f->part[i].next;
        part_words(&f->part[i], w);
        put(c, &next, 8);
        for (unsigned k = 1; k < PART_WORDS; k++)
            put(c, w[k], 8);
    }
    uint32_t crc = crc32c(0, c->p, c->off);
    put(c, &crc, 4);
}

int flash_save(struct flash *f, int fd)
{
    size_t len = state_size(f);
    struct cur c = { malloc(len), 0, len };
    if (!c.p)
        return -ENOMEM;
    flash_lock_all(f);
    encode(f, &c);
    flash_unlock_all(f);
    int r = 0;
    for (size_t off = 0; off < len && !r;) {
        ssize_t n = write(fd, c.p + off, len - off);
        if (n < 0 && errno != EINTR)
            r = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    free(c.p);
    return r;
}

/* Loads the blocks' and dies' saved fields; -EINVAL for values that
 * cannot be. */
static int decode_blocks(struct flash *f, struct cur *c)
{
    uint64_t nblk = (uint64_t)f->ndies * f->bpd;
    for (uint64_t b = 0; b < nblk; b++) {
        uint32_t st;
        if (get(c, &f->blk[b].erases, 4) || get(c, &st, 4) || get(c, &f->blk[b].stamp, 8) ||
            st > BLK_FULL)
            return -EINVAL;
        f->blk[b].state = (uint8_t)st;
        f->blk[b].valid = 0;
    }
    for (uint32_t d = 0; d < f->ndies; d++) {
        struct fdie *die = &f->die[d];
        if (get(c, &die->open, 4) || get(c, &die->wp, 4))
            return -EINVAL;
        if (die->open != UINT32_MAX &&
            (die->open >= f->bpd || die->wp > f->ppb ||
             f->blk[(uint64_t)d * f->bpd + die->open].state != BLK_OPEN))
            return -EINVAL;
        die->nfree = 0;
        for (uint32_t b = 0; b < f->bpd; b++)
            if (f->blk[(uint64_t)d * f->bpd + b].state == BLK_FREE)
                die->pool[die->nfree++] = b;
    }
    return 0;
}

/* Rebuilds p2l and the valid counts from l2p; -EINVAL if two logical
 * pages claim one physical page or one lies outside. */
static int derive_maps(struct flash *f)
{
    uint64_t npg = (uint64_t)f->ndies * f->bpd * f->ppb;
    for (uint64_t l = 0; l < f->nlog; l++) {
        uint32_t p = f->l2p[l];
        if (p == FLASH_UNMAPPED)
            continue;
        if (p >= npg || f->p2l[p] != FLASH_UNMAPPED)
            return -EINVAL;
        f->p2l[p] = (uint32_t)l;
        f->blk[p / f->ppb].valid++;
    }
    return 0;
}

static int decode(struct flash *f, struct cur *c)
{
    uint64_t h[HDR_WORDS], want[HDR_WORDS];
    header(f, want);
    if (get(c, h, sizeof(h)) || memcmp(h, want, sizeof(h)))
        return -EINVAL;   /* another geometry, size or format */
    if (get(c, f->l2p, f->nlog * 4) || decode_blocks(f, c))
        return -EINVAL;
    for (uint32_t i = 0; i < f->nparts; i++) {
        uint64_t *w[PART_WORDS], next;
        part_words(&f->part[i], w);
        if (get(c, &next, 8))
            return -EINVAL;
        f->part[i].next = (uint32_t)next;
        for (unsigned k = 1; k < PART_WORDS; k++)
            if (get(c, w[k], 8))
                return -EINVAL;
    }
    return derive_maps(f);
}

int flash_load(struct flash *f, int fd)
{
    size_t len = state_size(f);
    struct cur c = { malloc(len), 0, 0 };
    if (!c.p)
        return -ENOMEM;
    int r = 0;
    while (c.len < len) {
        ssize_t n = read(fd, c.p + c.len, len - c.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = n < 0 ? -errno : -EINVAL;   /* short: truncated */
            break;
        }
        c.len += (size_t)n;
    }
    uint32_t crc = 0;
    if (!r)
        memcpy(&crc, c.p + len - 4, 4);
    if (!r && crc != crc32c(0, c.p, len - 4))
        r = -EINVAL;
    if (!r) {
        c.len = len - 4;
        flash_lock_all(f);
        r = decode(f, &c);
        flash_unlock_all(f);
    }
    free(c.p);
    return r ? r : flash_check(f) ? -EINVAL : 0;
}

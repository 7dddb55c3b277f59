/*
 * device/media/flash.c - the NAND model of flash.h: page-mapped FTL,
 * per-die garbage collection and wear levelling, per-die and per-channel
 * timelines.
 *
 * Costs: a host page operation is O(1) except when it triggers GC, which
 * scans its die's blocks for a victim (O(blocks_per_die)) and migrates at
 * most pages_per_block pages; opening a block scans the die's free pool
 * for the least-worn block. Stats scan every block (O(blocks)).
 */
#include "device/media/flash.h"
#include "device/media/flash_int.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* A busy counter grows by v: written by its partition's user only, read by
 * anyone without a lock (flash.h: relaxed atomics, statistics). */
static void busy_add(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* ---- geometry ---- */

/* Smallest blocks per die that hold n logical pages plus spare, the open
 * block and the GC reserve, for a given pages-per-block. */
static uint64_t blocks_needed(const struct flash_geom *g, uint64_t n, uint32_t ppb)
{
    uint64_t dies = (uint64_t)g->channels * g->dies_per_channel;
    uint64_t phys = n + (n * g->op_permille + 999) / 1000;
    uint64_t per_die = (phys + dies * ppb - 1) / (dies * ppb);
    return per_die + g->gc_free_blocks + 1;
}

void flash_geom_default(struct flash_geom *g, uint64_t nblocks)
{
    if (!g->channels)
        g->channels = FLASH_DEF_CHANNELS;
    if (!g->dies_per_channel)
        g->dies_per_channel = FLASH_DEF_DIES;
    if (!g->planes)
        g->planes = 1;
    if (!g->op_permille)
        g->op_permille = FLASH_DEF_OP_PERMILLE;
    if (!g->gc_free_blocks)
        g->gc_free_blocks = FLASH_DEF_GC_FREE;
    if (!g->partitions)
        g->partitions = 1;
    if (!g->stripe_pages)
        g->stripe_pages = FLASH_DEF_STRIPE;
    if (!g->t_read_ns)
        g->t_read_ns = FLASH_DEF_READ_NS;
    if (!g->t_prog_ns)
        g->t_prog_ns = FLASH_DEF_PROG_NS;
    if (!g->t_erase_ns)
        g->t_erase_ns = FLASH_DEF_ERASE_NS;
    if (!g->t_xfer_ns)
        g->t_xfer_ns = FLASH_DEF_XFER_NS;
    /* Table 1's 512-page blocks, halved until each die has >= 64 blocks
     * (small images), but never below 16 pages. */
    if (!g->pages_per_block) {
        uint32_t ppb = FLASH_DEF_PAGES;
        while (ppb > 16 && blocks_needed(g, nblocks, ppb) < 64)
            ppb /= 2;
        g->pages_per_block = ppb;
    }
    if (!g->blocks_per_die) {
        uint64_t b = blocks_needed(g, nblocks, g->pages_per_block);
        b = (b + g->planes - 1) / g->planes * g->planes;
        g->blocks_per_die = (uint32_t)(b > UINT32_MAX ? UINT32_MAX : b);
    }
}

static int fail(char *err, unsigned len, const char *why)
{
    if (err && len)
        snprintf(err, len, "%s", why);
    return -EINVAL;
}

static int check_times(const struct flash_geom *g, char *err, unsigned len)
{
    const uint64_t second = 1000000000ull;
    if (!g->t_read_ns || !g->t_prog_ns || !g->t_erase_ns || !g->t_xfer_ns)
        return fail(err, len, "flash latencies must be non-zero");
    if (g->t_read_ns > second || g->t_prog_ns > second || g->t_erase_ns > second ||
        g->t_xfer_ns > second || g->t_ftl_ns > second)
        return fail(err, len, "flash latencies above 1 s are absurd");
    return 0;
}

static int check_counts(const struct flash_geom *g, char *err, unsigned len)
{
    if (!g->channels || !g->dies_per_channel || !g->planes || !g->blocks_per_die ||
        !g->pages_per_block)
        return fail(err, len, "flash geometry counts must be non-zero");
    if (g->channels > 256 || g->dies_per_channel > 256 || g->pages_per_block > 65536)
        return fail(err, len, "flash geometry: at most 256 channels, 256 dies "
                              "per channel, 65536 pages per block");
    if (g->blocks_per_die % g->planes)
        return fail(err, len, "flash blocks per die must be a multiple of planes");
    if (g->gc_free_blocks < 2)
        return fail(err, len, "flash GC threshold must be at least 2 free blocks");
    if (g->gc_policy != FLASH_GC_GREEDY && g->gc_policy != FLASH_GC_COST_BENEFIT)
        return fail(err, len, "unknown flash GC policy");
    if (g->ftl != FLASH_FTL_LOCKS && g->ftl != FLASH_FTL_CORES)
        return fail(err, len, "unknown flash FTL form");
    if (!g->partitions || g->channels % g->partitions)
        return fail(err, len, "flash partitions must divide the channels");
    if (!g->stripe_pages)
        return fail(err, len, "flash stripe must be at least one page");
    return 0;
}

int flash_geom_check(const struct flash_geom *g, uint64_t nblocks, char *err,
                     unsigned errlen)
{
    int r = check_counts(g, err, errlen);
    if (!r)
        r = check_times(g, err, errlen);
    if (r)
        return r;
    uint64_t dies = (uint64_t)g->channels * g->dies_per_channel;
    uint64_t pages = dies * g->blocks_per_die * g->pages_per_block;
    if (pages >= UINT32_MAX || nblocks >= UINT32_MAX)
        return fail(err, errlen, "flash geometry above 2^32 pages");
    /* The user's pages must fit outside each die's open block and reserve,
     * with at least one block's worth to spare so a victim is never full. */
    uint64_t reserve = dies * (g->gc_free_blocks + 2ull) * g->pages_per_block;
    if (pages < nblocks + reserve)
        return fail(err, errlen, "flash geometry too small for the image plus "
                                 "over-provisioning and GC reserve");
    /* Each partition holds its own stripes on its own dies. */
    uint64_t nstripes = (nblocks + g->stripe_pages - 1) / g->stripe_pages;
    uint64_t share = (nstripes + g->partitions - 1) / g->partitions * g->stripe_pages;
    if (pages / g->partitions < share + reserve / g->partitions)
        return fail(err, errlen, "flash geometry too small for each partition's "
                                 "stripes plus GC reserve");
    return 0;
}

/* ---- create / destroy ---- */

static int alloc_arrays(struct flash *f)
{
    uint64_t nblk = (uint64_t)f->ndies * f->bpd, npg = nblk * f->ppb;
    f->l2p = malloc(f->nlog * sizeof(*f->l2p) + 1);
    f->p2l = malloc(npg * sizeof(*f->p2l));
    f->blk = calloc(nblk, sizeof(*f->blk));
    f->die = calloc(f->ndies, sizeof(*f->die));
    f->chan = calloc(f->g.channels, sizeof(*f->chan));
    if (!f->l2p || !f->p2l || !f->blk || !f->die || !f->chan)
        return -ENOMEM;
    for (uint64_t i = 0; i < f->nlog; i++)
        f->l2p[i] = FLASH_UNMAPPED;
    for (uint64_t i = 0; i < npg; i++)
        f->p2l[i] = FLASH_UNMAPPED;
    for (uint32_t d = 0; d < f->ndies; d++) {
        struct fdie *die = &f->die[d];
        die->pool = malloc(f->bpd * sizeof(*die->pool));
        if (!die->pool)
            return -ENOMEM;
        for (uint32_t b = 0; b < f->bpd; b++)
            die->pool[b] = f->bpd - 1 - b;
        die->nfree = f->bpd;
        die->open = UINT32_MAX;
    }
    return 0;
}

int flash_create(const struct flash_geom *g, uint64_t nblocks, struct flash **out)
{
    if (flash_geom_check(g, nblocks, NULL, 0))
        return -EINVAL;
    struct flash *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->g = *g;
    f->nlog = nblocks;
    f->ndies = g->channels * g->dies_per_channel;
    f->ppb = g->pages_per_block;
    f->bpd = g->blocks_per_die;
    f->nparts = g->partitions;
    f->stripe = g->stripe_pages;
    f->part = calloc(f->nparts, sizeof(*f->part));
    int r = f->part ? alloc_arrays(f) : -ENOMEM;
    if (r) {
        flash_destroy(f);
        return r;
    }
    for (uint32_t i = 0; i < f->nparts; i++)
        pthread_mutex_init(&f->part[i].mu, NULL);
    *out = f;
    return 0;
}

void flash_destroy(struct flash *f)
{
    if (!f)
        return;
    if (f->die)
        for (uint32_t d = 0; d < f->ndies; d++)
            free(f->die[d].pool);
    if (f->part && f->l2p)
        for (uint32_t i = 0; i < f->nparts; i++)
            pthread_mutex_destroy(&f->part[i].mu);
    free(f->part);
    free(f->l2p);
    free(f->p2l);
    free(f->blk);
    free(f->die);
    free(f->chan);
    free(f);
}

const struct flash_geom *flash_geom(const struct flash *f)
{
    return &f->g;
}

uint64_t flash_nlog(const struct flash *f)
{
    return f->nlog;
}

/* ---- placement ---- */

static struct fblock *blk_of(struct flash *f, uint32_t d, uint32_t b)
{
    return &f->blk[(uint64_t)d * f->bpd + b];
}

static uint32_t die_of_page(const struct flash *f, uint32_t p)
{
    return (uint32_t)(p / ((uint64_t)f->bpd * f->ppb));
}

static struct fblock *blk_of_page(struct flash *f, uint32_t p)
{
    return &f->blk[p / f->ppb];
}

/* Takes the least-worn free block of die d (the dynamic wear-levelling
 * rule). The caller has checked nfree > 0. */
static uint32_t pool_take(struct flash *f, uint32_t d)
{
    struct fdie *die = &f->die[d];
    uint32_t best = 0;
    for (uint32_t i = 1; i < die->nfree; i++)
        if (blk_of(f, d, die->pool[i])->erases < blk_of(f, d, die->pool[best])->erases)
            best = i;
    uint32_t b = die->pool[best];
    die->pool[best] = die->pool[--die->nfree];
    return b;
}

static struct fpart *part_of_die(struct flash *f, uint32_t d)
{
    return &f->part[(d / f->g.dies_per_channel) % f->nparts];
}

static struct fpart *part_of(struct flash *f, uint64_t l)
{
    return &f->part[(l / f->stripe) % f->nparts];
}

static void close_open(struct flash *f, uint32_t d)
{
    struct fdie *die = &f->die[d];
    if (die->open == UINT32_MAX)
        return;
    struct fblock *b = blk_of(f, d, die->open);
    b->state = BLK_FULL;
    b->stamp = part_of_die(f, d)->seq;
    die->open = UINT32_MAX;
}

/* Room for one more page on die d without touching its last free block
 * outside GC (invariant 4)? */
static bool die_has_room(const struct flash *f, uint32_t d, bool gc)
{
    const struct fdie *die = &f->die[d];
    if (die->open != UINT32_MAX && die->wp < f->ppb)
        return true;
    return die->nfree > (gc ? 0u : 1u);
}

/* Next free page of die d; the caller has checked die_has_room. */
static uint32_t page_take(struct flash *f, uint32_t d)
{
    struct fdie *die = &f->die[d];
    if (die->open == UINT32_MAX || die->wp == f->ppb) {
        close_open(f, d);
        die->open = pool_take(f, d);
        die->wp = 0;
        blk_of(f, d, die->open)->state = BLK_OPEN;
    }
    uint64_t b = (uint64_t)d * f->bpd + die->open;
    return (uint32_t)(b * f->ppb + die->wp++);
}

static void unmap(struct flash *f, uint64_t l)
{
    uint32_t p = f->l2p[l];
    if (p == FLASH_UNMAPPED)
        return;
    f->p2l[p] = FLASH_UNMAPPED;
    blk_of_page(f, p)->valid--;
    f->l2p[l] = FLASH_UNMAPPED;
}

static void map(struct flash *f, uint64_t l, uint32_t p)
{
    f->l2p[l] = p;
    f->p2l[p] = (uint32_t)l;
    blk_of_page(f, p)->valid++;
}

/* ---- garbage collection ---- */

static double cb_score(const struct flash *f, uint64_t seq, const struct fblock *b)
{
    if (b->valid == 0)
        return INFINITY;
    double u = (double)b->valid / f->ppb;
    return (1.0 - u) / (2.0 * u) * (double)(seq - b->stamp + 1);
}

/* The victim by policy among die d's full blocks, or UINT32_MAX. */
static uint32_t pick_victim(struct flash *f, uint32_t d)
{
    uint32_t best = UINT32_MAX;
    double best_score = -1.0;
    for (uint32_t b = 0; b < f->bpd; b++) {
        const struct fblock *k = blk_of(f, d, b);
        if (k->state != BLK_FULL || k->valid == f->ppb)
            continue;
        double s = f->g.gc_policy == FLASH_GC_COST_BENEFIT ? cb_score(f, part_of_die(f, d)->seq, k)
                                                           : (double)(f->ppb - k->valid);
        if (s > best_score) {
            best_score = s;
            best = b;
        }
    }
    return best;
}

/* Static wear levelling: every 16th GC, if die d's erase counts spread by
 * more than wear_delta, the least-worn full block (cold data) is the
 * victim instead, so its block rejoins the pool. */
static uint32_t pick_cold(struct flash *f, uint32_t d)
{
    if (!f->g.wear_delta || part_of_die(f, d)->gc_runs % 16)
        return UINT32_MAX;
    uint32_t lo = UINT32_MAX, hi = 0, cold = UINT32_MAX;
    for (uint32_t b = 0; b < f->bpd; b++) {
        const struct fblock *k = blk_of(f, d, b);
        hi = k->erases > hi ? k->erases : hi;
        if (k->state == BLK_FULL && k->erases < lo) {
            lo = k->erases;
            cold = b;
        }
    }
    return cold != UINT32_MAX && hi - lo > f->g.wear_delta ? cold : UINT32_MAX;
}

/* Migrates victim v's valid pages within die d (copy-back) and erases it.
 * Returns the NAND time it took. */
static uint64_t collect(struct flash *f, uint32_t d, uint32_t v)
{
    uint64_t first = ((uint64_t)d * f->bpd + v) * f->ppb, moved = 0;
    for (uint32_t i = 0; i < f->ppb; i++) {
        uint32_t l = f->p2l[first + i];
        if (l == FLASH_UNMAPPED)
            continue;
        unmap(f, l);
        map(f, l, page_take(f, d));
        moved++;
    }
    struct fblock *k = blk_of(f, d, v);
    assert(k->valid == 0);
    k->erases++;
    k->state = BLK_FREE;
    f->die[d].pool[f->die[d].nfree++] = v;
    struct fpart *pt = part_of_die(f, d);
    pt->moved += moved;
    pt->gc_runs++;
    pt->erases++;
    return moved * (f->g.t_read_ns + f->g.t_prog_ns) + f->g.t_erase_ns;
}

/* One GC pass on die d starting no earlier than now. Returns false when
 * no block is worth collecting. */
static bool gc_once(struct flash *f, uint32_t d, uint64_t now, bool bg)
{
    uint32_t v = pick_cold(f, d);
    if (v == UINT32_MAX || f->die[d].nfree == 0)
        v = pick_victim(f, d);
    if (v == UINT32_MAX)
        return false;
    struct fdie *die = &f->die[d];
    uint64_t start = max64(now, die->busy_until), t = collect(f, d, v);
    die->busy_until = start + t;
    busy_add(&die->busy_ns, t);
    die->gc_until = die->busy_until;
    part_of_die(f, d)->bg_runs += bg;
    return true;
}

/* Foreground GC: the write waits (it is queued behind it on the die). */
static void gc_foreground(struct flash *f, uint32_t d, uint64_t now)
{
    while (f->die[d].nfree < f->g.gc_free_blocks && gc_once(f, d, now, false))
        ;
}

/* ---- channel arbitration ---- */

/* Books len ns on ch no earlier than ready; returns the end. */
static uint64_t chan_book(struct fchan *ch, uint64_t ready, uint64_t len)
{
    uint64_t t = max64(ready, ch->floor);
    uint32_t i = 0;
    for (; i < ch->n; i++) {
        if (ch->end[i] <= t)
            continue;
        if (ch->start[i] >= t + len)
            break;          /* the gap before booking i fits */
        t = ch->end[i];
    }
    if (ch->n == CHAN_SLOTS) {          /* forget the oldest */
        ch->floor = max64(ch->floor, ch->end[0]);
        memmove(ch->start, ch->start + 1, (CHAN_SLOTS - 1) * sizeof(ch->start[0]));
        memmove(ch->end, ch->end + 1, (CHAN_SLOTS - 1) * sizeof(ch->end[0]));
        ch->n--;
        i = i ? i - 1 : 0;
        if (t < ch->floor)
            return chan_book(ch, ready, len);
    }
    memmove(ch->start + i + 1, ch->start + i, (ch->n - i) * sizeof(ch->start[0]));
    memmove(ch->end + i + 1, ch->end + i, (ch->n - i) * sizeof(ch->end[0]));
    ch->start[i] = t;
    ch->end[i] = t + len;
    ch->n++;
    ch->busy_until = max64(ch->busy_until, t + len);
    busy_add(&ch->busy_ns, len);
    return t + len;
}

/* ---- host operations ---- */

static void see(struct fpart *pt, uint64_t now)
{
    pt->now = max64(pt->now, now);
}

/* Invariant 5: a host operation issued at now first takes t_ftl on its
 * partition's FTL timeline; returns when it reaches the NAND. */
static uint64_t ftl_step(struct flash *f, struct fpart *pt, uint64_t now)
{
    if (!f->g.t_ftl_ns)
        return now;
    pt->ftl_until = max64(now, pt->ftl_until) + f->g.t_ftl_ns;
    return pt->ftl_until;
}

/* Invariant 7: only the partition's owner (a claiming core, or the
 * thread holding its lock through flash_part_lock) uses the *_owned
 * calls. Debug and sanitizer builds check it. */
static bool owned_by_me(const struct fpart *pt)
{
    return pt->owned && pthread_equal(pt->owner, pthread_self());
}

/* Counts a host operation on pt by its owner (checked: asserted in debug
 * builds, counted as foreign in every build when it is not). */
static void count_owned(struct fpart *pt)
{
    bool mine = owned_by_me(pt);
    assert(mine);
    if (mine)
        pt->ops_owned++;
    else
        pt->ops_foreign++;
}

/* A read of l on pt, whose caller has the partition to itself. */
static struct flash_io read_in(struct flash *f, struct fpart *pt, uint64_t l, uint64_t now_ns)
{
    see(pt, now_ns);
    now_ns = ftl_step(f, pt, now_ns);
    struct flash_io io = {now_ns, false};
    pt->host_reads++;
    uint32_t p = f->l2p[l];
    if (p != FLASH_UNMAPPED) {
        uint32_t d = die_of_page(f, p);
        struct fdie *die = &f->die[d];
        struct fchan *ch = &f->chan[d / f->g.dies_per_channel];
        io.gc = die->gc_until > now_ns;
        uint64_t start = max64(now_ns, die->busy_until);
        io.done_ns = chan_book(ch, start + f->g.t_read_ns, f->g.t_xfer_ns);
        busy_add(&die->busy_ns, io.done_ns - start);   /* the die holds the page until sent */
        die->busy_until = io.done_ns;
        see(pt, io.done_ns);
    }
    return io;
}

/* Takes pt's lock for a caller that is not its owner (invariant 7: a
 * claimed partition is its owner's alone). */
static void part_enter(struct fpart *pt)
{
    pthread_mutex_lock(&pt->mu);
    assert(!pt->owned);
}

/* part_enter for a host operation: counted as locked, or as foreign when
 * the partition is claimed (which part_enter asserts against). */
static void part_enter_op(struct fpart *pt)
{
    part_enter(pt);
    if (pt->owned)
        pt->ops_foreign++;
    else
        pt->ops_locked++;
}

typedef struct flash_io (*page_op)(struct flash *, struct fpart *, uint64_t, uint64_t);

/* op on l under its partition's lock (or none past the end). */
static struct flash_io locked(struct flash *f, uint64_t l, uint64_t now_ns, page_op op)
{
    if (l >= f->nlog)
        return (struct flash_io){now_ns, false};
    struct fpart *pt = part_of(f, l);
    part_enter_op(pt);
    struct flash_io io = op(f, pt, l, now_ns);
    pthread_mutex_unlock(&pt->mu);
    return io;
}

/* op on l by its partition's owner, without the lock (invariant 7). */
static struct flash_io owned(struct flash *f, uint64_t l, uint64_t now_ns, page_op op)
{
    if (l >= f->nlog)
        return (struct flash_io){now_ns, false};
    struct fpart *pt = part_of(f, l);
    count_owned(pt);
    return op(f, pt, l, now_ns);
}

struct flash_io flash_read(struct flash *f, uint64_t l, uint64_t now_ns)
{
    return locked(f, l, now_ns, read_in);
}

struct flash_io flash_read_owned(struct flash *f, uint64_t l, uint64_t now_ns)
{
    return owned(f, l, now_ns, read_in);
}

/* The next of partition pt's dies in round-robin order, channel first:
 * its channels are p, p + nparts, p + 2 nparts, ... */
static uint32_t next_die(struct flash *f, struct fpart *pt)
{
    uint32_t nch = f->g.channels / f->nparts, p = (uint32_t)(pt - f->part);
    uint32_t k = pt->next++ % (nch * f->g.dies_per_channel);
    return (p + (k % nch) * f->nparts) * f->g.dies_per_channel + k / nch;
}

/* A die of pt that can take a page after foreground GC, or UINT32_MAX. */
static uint32_t pick_die(struct flash *f, struct fpart *pt, uint64_t now)
{
    for (uint32_t tries = 0; tries < f->ndies / f->nparts; tries++) {
        uint32_t d = next_die(f, pt);
        gc_foreground(f, d, now);
        if (die_has_room(f, d, false))
            return d;
    }
    return UINT32_MAX;
}

static uint64_t program_time(struct flash *f, uint32_t d, uint64_t now)
{
    struct fdie *die = &f->die[d];
    struct fchan *ch = &f->chan[d / f->g.dies_per_channel];
    uint64_t start = max64(chan_book(ch, now, f->g.t_xfer_ns), die->busy_until);
    die->busy_until = start + f->g.t_prog_ns;
    busy_add(&die->busy_ns, f->g.t_prog_ns);
    return die->busy_until;
}

/* A write of l on pt, whose caller has the partition to itself. */
static struct flash_io write_in(struct flash *f, struct fpart *pt, uint64_t l, uint64_t now_ns)
{
    see(pt, now_ns);
    now_ns = ftl_step(f, pt, now_ns);
    struct flash_io io = {now_ns, false};
    unmap(f, l);    /* first, so GC does not migrate the page being replaced */
    uint32_t d = pick_die(f, pt, now_ns);
    if (d != UINT32_MAX) {
        pt->host_writes++;
        pt->seq++;
        map(f, l, page_take(f, d));
        io.gc = f->die[d].gc_until > now_ns;
        io.done_ns = program_time(f, d, now_ns);
        see(pt, io.done_ns);
    }
    return io;
}

struct flash_io flash_write(struct flash *f, uint64_t l, uint64_t now_ns)
{
    return locked(f, l, now_ns, write_in);
}

struct flash_io flash_write_owned(struct flash *f, uint64_t l, uint64_t now_ns)
{
    return owned(f, l, now_ns, write_in);
}

/* Forgets l on pt, whose caller has the partition to itself. */
static void trim_in(struct flash *f, struct fpart *pt, uint64_t l)
{
    if (f->l2p[l] != FLASH_UNMAPPED)
        pt->trims++;
    unmap(f, l);
}

void flash_trim(struct flash *f, uint64_t l, uint64_t n)
{
    for (uint64_t i = l; i < f->nlog && i - l < n; i++) {
        struct fpart *pt = part_of(f, i);
        part_enter_op(pt);
        trim_in(f, pt, i);
        pthread_mutex_unlock(&pt->mu);
    }
}

void flash_trim_owned(struct flash *f, uint64_t l)
{
    if (l >= f->nlog)
        return;
    struct fpart *pt = part_of(f, l);
    count_owned(pt);
    trim_in(f, pt, l);
}

uint32_t flash_part_of(const struct flash *f, uint64_t l)
{
    return (uint32_t)((l / f->stripe) % f->nparts);
}

uint32_t flash_partitions(const struct flash *f)
{
    return f->nparts;
}

void flash_part_lock(struct flash *f, uint32_t p)
{
    struct fpart *pt = &f->part[p];
    part_enter(pt);
    pt->owner = pthread_self();
    pt->owned = true;
}

void flash_part_unlock(struct flash *f, uint32_t p)
{
    struct fpart *pt = &f->part[p];
    assert(owned_by_me(pt));
    pt->owned = false;
    pthread_mutex_unlock(&pt->mu);
}

void flash_part_claim(struct flash *f, uint32_t p)
{
    struct fpart *pt = &f->part[p];
    part_enter(pt);   /* orders the claim after earlier locked users */
    pt->owner = pthread_self();
    pt->owned = true;
    pthread_mutex_unlock(&pt->mu);
}

void flash_part_release(struct flash *f, uint32_t p)
{
    struct fpart *pt = &f->part[p];
    assert(owned_by_me(pt));
    pthread_mutex_lock(&pt->mu);   /* publishes the owner's work to later users */
    pt->owned = false;
    pthread_mutex_unlock(&pt->mu);
}

void flash_assume_written(struct flash *f, uint64_t l)
{
    if (l >= f->nlog)
        return;
    struct fpart *pt = part_of(f, l);
    part_enter(pt);
    unmap(f, l);
    uint32_t d = pick_die(f, pt, 0);
    if (d != UINT32_MAX)
        map(f, l, page_take(f, d));
    pthread_mutex_unlock(&pt->mu);
}

/* One background collection on die d if it is idle at now and its pool
 * is below twice the threshold; the caller has d's partition to itself. */
static bool idle_die(struct flash *f, uint32_t d, uint64_t now)
{
    see(part_of_die(f, d), now);
    return f->die[d].busy_until <= now && f->die[d].nfree < 2 * f->g.gc_free_blocks &&
           gc_once(f, d, now, true);
}

static void gate(struct flash *f, bool enter)
{
    if (f->gate)
        f->gate(f->gate_ctx, enter);
}

unsigned flash_idle(struct flash *f, uint64_t now_ns)
{
    unsigned n = 0;
    gate(f, true);
    for (uint32_t p = 0; p < f->nparts; p++) {
        struct fpart *pt = &f->part[p];
        part_enter_op(pt);
        for (uint32_t d = 0; d < f->ndies; d++)
            n += part_of_die(f, d) == pt && idle_die(f, d, now_ns);
        pthread_mutex_unlock(&pt->mu);
    }
    gate(f, false);
    return n;
}

unsigned flash_idle_owned(struct flash *f, uint32_t p, uint64_t now_ns)
{
    struct fpart *pt = &f->part[p];
    count_owned(pt);
    unsigned n = 0;
    for (uint32_t d = 0; d < f->ndies; d++)
        n += part_of_die(f, d) == pt && idle_die(f, d, now_ns);
    return n;
}

void flash_set_gate(struct flash *f, void (*fn)(void *ctx, bool enter), void *ctx)
{
    f->gate = fn;
    f->gate_ctx = ctx;
}

/* ---- statistics ---- */

void flash_lock_all(struct flash *f)
{
    gate(f, true);   /* flash.h: the owners, if any, let their partitions go */
    for (uint32_t i = 0; i < f->nparts; i++)   /* lock order: by index */
        part_enter(&f->part[i]);
}

void flash_unlock_all(struct flash *f)
{
    for (uint32_t i = f->nparts; i-- > 0;)
        pthread_mutex_unlock(&f->part[i].mu);
    gate(f, false);
}

void flash_stats(struct flash *f, struct flash_stats *st)
{
    flash_lock_all(f);
    uint64_t nblk = (uint64_t)f->ndies * f->bpd, sum = 0;
    st->erase_min = UINT32_MAX;
    st->erase_max = 0;
    st->mapped = 0;
    for (uint64_t i = 0; i < nblk; i++) {
        uint32_t e = f->blk[i].erases;
        st->mapped += f->blk[i].valid;
        sum += e;
        st->erase_min = e < st->erase_min ? e : st->erase_min;
        st->erase_max = e > st->erase_max ? e : st->erase_max;
    }
    st->erase_avg = (double)sum / (double)nblk;
    st->host_reads = st->host_writes = st->trims = st->gc_runs = 0;
    st->pages_moved = st->erases = st->now_ns = st->gc_bg_runs = 0;
    st->free_blocks = st->ftl_owned = st->ftl_locked = st->ftl_foreign = 0;
    for (uint32_t d = 0; d < f->ndies; d++)
        st->free_blocks += f->die[d].nfree;
    for (uint32_t i = 0; i < f->nparts; i++) {
        const struct fpart *pt = &f->part[i];
        st->host_reads += pt->host_reads;
        st->host_writes += pt->host_writes;
        st->trims += pt->trims;
        st->gc_runs += pt->gc_runs;
        st->pages_moved += pt->moved;
        st->erases += pt->erases;
        st->gc_bg_runs += pt->bg_runs;
        st->ftl_owned += pt->ops_owned;
        st->ftl_locked += pt->ops_locked;
        st->ftl_foreign += pt->ops_foreign;
        st->now_ns = max64(st->now_ns, pt->now);
    }
    st->gc_fg_runs = st->gc_runs - st->gc_bg_runs;
    st->waf = st->host_writes
                  ? (double)(st->host_writes + st->pages_moved) / (double)st->host_writes
                  : 1.0;
    flash_unlock_all(f);
}

uint64_t flash_die_busy_ns(struct flash *f, uint32_t d)
{
    /* Relaxed: a statistic (busy_add), no lock, in every form. */
    return d < f->ndies ? __atomic_load_n(&f->die[d].busy_ns, __ATOMIC_RELAXED) : 0;
}

uint64_t flash_chan_busy_ns(struct flash *f, uint32_t c)
{
    return c < f->g.channels ? __atomic_load_n(&f->chan[c].busy_ns, __ATOMIC_RELAXED) : 0;
}

/* ---- checker and analytic model ---- */

int flash_check(struct flash *f)
{
    flash_lock_all(f);
    uint64_t nblk = (uint64_t)f->ndies * f->bpd, mapped = 0, valid = 0;
    int bad = 0;
    for (uint64_t l = 0; l < f->nlog; l++)
        if (f->l2p[l] != FLASH_UNMAPPED) {
            mapped++;
            bad |= f->p2l[f->l2p[l]] != l;                       /* 1 */
        }
    for (uint64_t b = 0; b < nblk; b++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < f->ppb; i++)
            n += f->p2l[b * f->ppb + i] != FLASH_UNMAPPED;
        bad |= n != f->blk[b].valid;                               /* 2 */
        valid += n;
    }
    bad |= valid != mapped;
    for (uint32_t d = 0; d < f->ndies; d++) {
        uint32_t nfree = 0;
        for (uint32_t b = 0; b < f->bpd; b++)
            nfree += blk_of(f, d, b)->state == BLK_FREE;
        bad |= nfree != f->die[d].nfree;                            /* 3 */
        bad |= f->die[d].nfree == 0;                                /* 4 */
    }
    for (uint64_t l = 0; l < f->nlog; l++)                        /* 6 */
        if (f->l2p[l] != FLASH_UNMAPPED)
            bad |= part_of_die(f, die_of_page(f, f->l2p[l])) != part_of(f, l);
    flash_unlock_all(f);
    return bad ? -EUCLEAN : 0;
}

double flash_waf_model(double alpha)
{
    if (!(alpha > 1.0))
        return INFINITY;
    /* x = 1/A solves g(x) = 1 - x - exp(-alpha x) = 0 with x in (0, 1):
     * g(0) = 0 is the trivial root, g is concave, so bisect on (eps, 1]. */
    double lo = 1e-12, hi = 1.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (1.0 - mid - exp(-alpha * mid) > 0)
            lo = mid;
        else
            hi = mid;
    }
    return 1.0 / lo;
}

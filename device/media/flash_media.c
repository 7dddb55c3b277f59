/*
 * device/media/flash_media.c - the flash backend of flash_media.h: bytes to
 * the lower media, page operations to the NAND model.
 */
#include "device/media/flash_media.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct media_flash {
    struct media m;         /* first: the media a caller sees */
    struct media *lower;
    uint32_t nmem;
    struct flash *model[FLASH_MAX_MEMBERS];   /* one per member */
    flash_clock_fn clock;
    void *clock_ctx;
};

/* Invariant 2: per thread, so concurrent commands do not see each other's. */
static _Thread_local uint64_t deadline;
static _Thread_local bool deadline_gc;

static struct media_flash *to_flash(struct media *m)
{
    return (struct media_flash *)m;
}

static uint64_t mono_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note(struct flash_io io)
{
    if (io.done_ns > deadline)
        deadline = io.done_ns;
    deadline_gc |= io.gc;
}

/* Block b of the array: member (b / stripe) % nmem, at the same stripe
 * row within it (invariant 5). */
static struct flash *route(struct media_flash *f, uint64_t b, uint64_t *local)
{
    uint64_t s = b / FLASH_ARRAY_STRIPE;
    *local = s / f->nmem * FLASH_ARRAY_STRIPE + b % FLASH_ARRAY_STRIPE;
    return f->model[s % f->nmem];
}

static int fm_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    struct media_flash *f = to_flash(m);
    int r = media_read(f->lower, blk, n, buf);
    if (r)
        return r;
    uint64_t now = f->clock(f->clock_ctx);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t l;
        struct flash *fl = route(f, blk + i, &l);
        note(flash_read(fl, l, now));
    }
    return 0;
}

static int fm_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    struct media_flash *f = to_flash(m);
    int r = media_write(f->lower, blk, n, buf);
    if (r)
        return r;
    uint64_t now = f->clock(f->clock_ctx);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t l;
        struct flash *fl = route(f, blk + i, &l);
        note(flash_write(fl, l, now));
    }
    return 0;
}

static int fm_flush(struct media *m)
{
    return media_flush(to_flash(m)->lower);
}

static void fm_trim(struct media *m, uint64_t blk, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l;
        struct flash *fl = route(to_flash(m), blk + i, &l);
        flash_trim(fl, l, 1);
    }
}

static int fm_discard(struct media *m, uint64_t blk, uint64_t n)
{
    int r = media_discard(to_flash(m)->lower, blk, n);
    if (!r)
        fm_trim(m, blk, n);
    return r;
}

static void fm_close(struct media *m)
{
    struct media_flash *f = to_flash(m);
    media_close(f->lower);
    for (uint32_t i = 0; i < f->nmem; i++)
        flash_destroy(f->model[i]);
    free(f);
}

static const struct media_ops flash_ops = {
    .read = fm_read,
    .write = fm_write,
    .flush = fm_flush,
    .discard = fm_discard,
    .close = fm_close,
    .trim = fm_trim,
};

/* Creates the members' models, each defaulted and checked for its share
 * of the stripes. */
static int make_members(struct media_flash *f, const struct flash_geom *g, uint64_t nblocks,
                        char *err, unsigned errlen)
{
    uint64_t stripes = (nblocks + FLASH_ARRAY_STRIPE - 1) / FLASH_ARRAY_STRIPE;
    uint64_t share = (stripes + f->nmem - 1) / f->nmem * FLASH_ARRAY_STRIPE;
    for (uint32_t i = 0; i < f->nmem; i++) {
        struct flash_geom geom = *g;
        flash_geom_default(&geom, share);
        int r = flash_geom_check(&geom, share, err, errlen);
        if (!r)
            r = flash_create(&geom, share, &f->model[i]);
        if (r)
            return r;
    }
    return 0;
}

int flash_media_open(struct media *lower, const struct flash_geom *g, char *err,
                     unsigned errlen, struct media **out)
{
    uint32_t nmem = g->members ? g->members : 1;
    if (nmem > FLASH_MAX_MEMBERS) {
        if (err && errlen)
            snprintf(err, errlen, "at most %u flash array members", FLASH_MAX_MEMBERS);
        media_close(lower);
        return -EINVAL;
    }
    struct media_flash *f = calloc(1, sizeof(*f));
    int r = f ? 0 : -ENOMEM;
    if (f) {
        f->nmem = nmem;
        r = make_members(f, g, lower->nblocks, err, errlen);
    }
    if (r) {
        for (uint32_t i = 0; f && i < f->nmem; i++)
            flash_destroy(f->model[i]);
        free(f);
        media_close(lower);
        return r;
    }
    f->m.ops = &flash_ops;
    f->m.nblocks = lower->nblocks;
    f->lower = lower;
    f->clock = mono_ns;
    *out = &f->m;
    return 0;
}

void flash_media_set_clock(struct media *m, flash_clock_fn fn, void *ctx)
{
    to_flash(m)->clock = fn;
    to_flash(m)->clock_ctx = ctx;
}

struct flash *flash_media_model(struct media *m)
{
    return flash_media_member(m, 0);
}

unsigned flash_media_members(struct media *m)
{
    return m && m->ops == &flash_ops ? to_flash(m)->nmem : 0;
}

struct flash *flash_media_member(struct media *m, unsigned i)
{
    return i < flash_media_members(m) ? to_flash(m)->model[i] : NULL;
}

uint64_t flash_media_deadline_take(bool *gc)
{
    uint64_t d = deadline;
    if (gc)
        *gc = deadline_gc;
    deadline = 0;
    deadline_gc = false;
    return d;
}

/*
 * device/media/flash_media.c - the flash backend of flash_media.h: bytes to
 * the lower media, page operations to the NAND model.
 */
#include "device/media/flash_media.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

struct media_flash {
    struct media m;         /* first: the media a caller sees */
    struct media *lower;
    struct flash *model;
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

static int fm_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    struct media_flash *f = to_flash(m);
    int r = media_read(f->lower, blk, n, buf);
    if (r)
        return r;
    uint64_t now = f->clock(f->clock_ctx);
    for (uint32_t i = 0; i < n; i++)
        note(flash_read(f->model, blk + i, now));
    return 0;
}

static int fm_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    struct media_flash *f = to_flash(m);
    int r = media_write(f->lower, blk, n, buf);
    if (r)
        return r;
    uint64_t now = f->clock(f->clock_ctx);
    for (uint32_t i = 0; i < n; i++)
        note(flash_write(f->model, blk + i, now));
    return 0;
}

static int fm_flush(struct media *m)
{
    return media_flush(to_flash(m)->lower);
}

static void fm_trim(struct media *m, uint64_t blk, uint64_t n)
{
    flash_trim(to_flash(m)->model, blk, n);
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
    flash_destroy(f->model);
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

int flash_media_open(struct media *lower, const struct flash_geom *g, char *err,
                     unsigned errlen, struct media **out)
{
    struct flash_geom geom = *g;
    flash_geom_default(&geom, lower->nblocks);
    int r = flash_geom_check(&geom, lower->nblocks, err, errlen);
    struct media_flash *f = r ? NULL : calloc(1, sizeof(*f));
    if (!r && !f)
        r = -ENOMEM;
    if (!r)
        r = flash_create(&geom, lower->nblocks, &f->model);
    if (r) {
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
    return m && m->ops == &flash_ops ? to_flash(m)->model : NULL;
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

/*
 * device/media/flash_media.c - the flash backend of flash_media.h: bytes to
 * the lower media, page operations to the NAND model.
 */
#include "device/media/flash_media.h"
#include "device/media/flash_cores.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct media_flash {
    struct media m;         /* first: the media a caller sees */
    struct media *lower;
    uint32_t nmem;
    struct flash *model[FLASH_MAX_MEMBERS];   /* one per member */
    struct flash_cores *cores[FLASH_MAX_MEMBERS];   /* invariant 10: each model's, or NULL */
    flash_clock_fn clock;
    void *clock_ctx;
    char *state_path;       /* invariant 7: saved here at close, or NULL */
    enum flash_state_origin origin;
    uint64_t ops;           /* reads and writes so far (relaxed atomic): the idle probe */
    uint64_t last_write_ns; /* latest write completion so far (atomic max): invariant 8 */
    /* Background GC (invariant 6): the thread, its tick, and the stop
     * request it waits on. */
    pthread_t bg;
    bool bg_on, bg_stop;
    uint64_t bg_tick_ns;
    pthread_mutex_t bg_mu;
    pthread_cond_t bg_cv;
};

/* An idle device with nothing to collect waits up to this long between
 * looks (doubling from the tick), so that it costs almost no wake-ups. */
#define BG_MAX_WAIT_NS 100000000ull

/* Invariant 2: per thread, so concurrent commands do not see each other's. */
static _Thread_local uint64_t deadline;
static _Thread_local bool deadline_gc;
/* Invariant 9: the completion of this thread's last flush (0 after a
 * take). Per thread, and shared by every flash media the thread uses, so
 * that an array's flush of several members orders the next write on any
 * of them. */
static _Thread_local uint64_t write_floor;

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

/* Invariant 8: the process's held replies (relaxed atomics: counters). */
static struct flash_reply_stats replies;

static void note(struct flash_io io)
{
    if (io.done_ns > deadline)
        deadline = io.done_ns;
    deadline_gc |= io.gc;
}

/* *p = max(*p, v), atomically. */
static void atomic_max(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur &&
           !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Block b of the array: member (b / stripe) % nmem, at the same stripe
 * row within it (invariant 5). */
static uint32_t member_of(const struct media_flash *f, uint64_t b, uint64_t *local)
{
    uint64_t s = b / FLASH_ARRAY_STRIPE;
    *local = s / f->nmem * FLASH_ARRAY_STRIPE + b % FLASH_ARRAY_STRIPE;
    return (uint32_t)(s % f->nmem);
}

static struct flash *route(struct media_flash *f, uint64_t b, uint64_t *local)
{
    return f->model[member_of(f, b, local)];
}

/* ---- the cores form (invariant 10) ---- */

/* The sub-requests of one media call in flight on its members' cores: a
 * port taken on each member's cores the call reaches (all taken first, in
 * member order, so that calls waiting for ports never wait in a circle),
 * and the pending run for the member of the latest page. */
struct fm_call {
    struct media_flash *f;
    int port[FLASH_MAX_MEMBERS];    /* taken on cores[i], or -1 */
    uint32_t member, n;             /* buf's member and size */
    struct flash_sub buf[FLASH_CORES_BATCH];
    uint64_t latest;                /* latest completion seen */
    unsigned gc;                    /* completions with FLASH_SUB_GC */
};

/* Starts a call on the members of the mask (bit i: member i). */
static void call_init(struct fm_call *c, struct media_flash *f, uint64_t members)
{
    c->f = f;
    c->n = c->member = 0;
    c->latest = 0;
    c->gc = 0;
    for (uint32_t i = 0; i < f->nmem; i++)
        c->port[i] = members >> i & 1 ? (int)flash_cores_port_get(f->cores[i]) : -1;
}

/* Takes what member m's cores have completed for the call (waiting for
 * some if `wait` and none are there). Returns how many. */
static unsigned call_reap(struct fm_call *c, uint32_t m, bool wait)
{
    struct flash_cores *k = c->f->cores[m];
    unsigned p = (unsigned)c->port[m], got;
    struct flash_sub out[FLASH_CORES_BATCH];
    while (!(got = flash_cores_port_reap(k, p, out, FLASH_CORES_BATCH)) && wait)
        flash_cores_port_wait(k, p, FLASH_MEDIA_SPIN_NS);
    for (unsigned i = 0; i < got; i++) {
        struct flash_io io = { out[i].at_ns, (out[i].flags & FLASH_SUB_GC) != 0 };
        note(io);
        c->latest = io.done_ns > c->latest ? io.done_ns : c->latest;
        c->gc += io.gc;
    }
    return got;
}

/* Hands the pending run to its member's cores (reaping while a core's
 * rings are full: invariant 3 of flash_cores.h). */
static void call_flush(struct fm_call *c)
{
    uint32_t m = c->member;
    if (!c->n)
        return;
    for (unsigned done = 0; done < c->n;) {
        unsigned put = flash_cores_port_submit(c->f->cores[m], (unsigned)c->port[m],
                                               c->buf + done, c->n - done);
        done += put;
        if (done < c->n)
            call_reap(c, m, true);
    }
    c->n = 0;
}

/* Adds a sub-request of op for page l of member m, issued at `at`. */
static void call_add(struct fm_call *c, uint32_t m, uint64_t l, uint32_t op, uint64_t at)
{
    if (c->n == FLASH_CORES_BATCH || (c->n && c->member != m))
        call_flush(c);
    c->member = m;
    c->buf[c->n++] = (struct flash_sub){ .page = l, .at_ns = at, .op = op };
}

/* Waits for every sub-request of the call and puts the ports back: the
 * call returns only when the owners have served it, so a later call
 * (of any thread) is served after it. */
static void call_finish(struct fm_call *c)
{
    call_flush(c);
    for (uint32_t m = 0; m < c->f->nmem; m++) {
        if (c->port[m] < 0)
            continue;
        while (flash_cores_port_outstanding(c->f->cores[m], (unsigned)c->port[m]))
            call_reap(c, m, true);
        flash_cores_port_put(c->f->cores[m], (unsigned)c->port[m]);
        c->port[m] = -1;
    }
}

/* The pages [blk, blk + n) as sub-requests of op, issued at `at`, served
 * by their owners; returns the latest completion (0 if none). */
static uint64_t cores_pages(struct media_flash *f, uint64_t blk, uint64_t n, uint32_t op,
                            uint64_t at)
{
    uint64_t members = 0, first = blk / FLASH_ARRAY_STRIPE;
    for (uint64_t s = first; n && s <= (blk + n - 1) / FLASH_ARRAY_STRIPE && s < first + f->nmem;
         s++)
        members |= 1ull << (s % f->nmem);
    struct fm_call c;
    call_init(&c, f, members);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l;
        uint32_t m = member_of(f, blk + i, &l);
        if (l < flash_nlog(f->model[m]))
            call_add(&c, m, l, op, at);
    }
    call_finish(&c);
    return c.latest;
}

/* Times each of the n pages from blk with page_io (flash_read or
 * flash_write; op, the same for the cores) on the flash that holds it,
 * issued at the clock's now or at floor if later, once the lower medium
 * did the I/O (r: its result, returned). *last: the latest completion,
 * if later. */
static int fm_pages(struct media_flash *f, uint64_t blk, uint32_t n, int r,
                    struct flash_io (*page_io)(struct flash *, uint64_t, uint64_t),
                    uint32_t op, uint64_t floor, uint64_t *last)
{
    if (r)
        return r;
    uint64_t now = f->clock(f->clock_ctx), latest = 0;
    now = floor > now ? floor : now;
    if (f->cores[0])
        latest = cores_pages(f, blk, n, op, now);
    for (uint32_t i = 0; !f->cores[0] && i < n; i++) {
        uint64_t l;
        struct flash *fl = route(f, blk + i, &l);
        struct flash_io io = page_io(fl, l, now);
        note(io);
        latest = io.done_ns > latest ? io.done_ns : latest;
    }
    if (last)
        atomic_max(last, latest);
    return 0;
}

static int fm_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    struct media_flash *f = to_flash(m);
    __atomic_add_fetch(&f->ops, 1, __ATOMIC_RELAXED);
    return fm_pages(f, blk, n, media_read(f->lower, blk, n, buf), flash_read, FLASH_SUB_READ,
                    0, NULL);
}

static int fm_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    struct media_flash *f = to_flash(m);
    __atomic_add_fetch(&f->ops, 1, __ATOMIC_RELAXED);
    return fm_pages(f, blk, n, media_write(f->lower, blk, n, buf), flash_write,
                    FLASH_SUB_WRITE, write_floor, &f->last_write_ns);
}

/* Invariant 8: done when the writes before it are programmed; and
 * invariant 9: the caller waited for that, so its next write is issued
 * no earlier. */
static int fm_flush(struct media *m)
{
    struct media_flash *f = to_flash(m);
    int r = media_flush(f->lower);
    if (r)
        return r;
    uint64_t done = __atomic_load_n(&f->last_write_ns, __ATOMIC_RELAXED);
    note((struct flash_io){ done, false });
    write_floor = done > write_floor ? done : write_floor;
    return 0;
}

static void fm_trim(struct media *m, uint64_t blk, uint64_t n)
{
    struct media_flash *f = to_flash(m);
    if (f->cores[0]) {   /* a hint, but ordered: served before the call returns */
        cores_pages(f, blk, n, FLASH_SUB_TRIM, 0);
        return;
    }
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

static void bg_stop(struct media_flash *f);
static void state_save(struct media_flash *f);
static void cores_stop_all(struct media_flash *f);

static void fm_close(struct media *m)
{
    struct media_flash *f = to_flash(m);
    bg_stop(f);
    cores_stop_all(f);   /* the owners let go: the state is saved under the locks */
    state_save(f);
    free(f->state_path);
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

/* Invariant 10: stops every member's FTL cores (their partitions free). */
static void cores_stop_all(struct media_flash *f)
{
    for (uint32_t i = 0; i < f->nmem; i++) {
        if (f->cores[i])
            flash_cores_stop(f->cores[i], NULL);
        f->cores[i] = NULL;
    }
}

/* Invariant 10: under the cores form, one FTL core per partition of every
 * member, untimed (the model's FTL timelines time them), each claiming its
 * partition; nothing otherwise. On failure none runs. */
static int cores_start_all(struct media_flash *f, char *err, unsigned errlen)
{
    if (flash_geom(f->model[0])->ftl != FLASH_FTL_CORES)
        return 0;
    struct flash_cores_cfg cfg = { .ring_entries = FLASH_MEDIA_RING, .ports = FLASH_MEDIA_PORTS,
                                   .untimed = true, .spin_ns = FLASH_MEDIA_CORE_SPIN_NS };
    int r = 0;
    for (uint32_t i = 0; !r && i < f->nmem; i++) {
        cfg.cores = flash_partitions(f->model[i]);
        r = flash_cores_start(f->model[i], &cfg, err, errlen, &f->cores[i]);
    }
    if (r)
        cores_stop_all(f);
    return r;
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
    if (!r)
        r = cores_start_all(f, err, errlen);
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
    write_floor = 0;   /* invariant 9: a command boundary */
    return d;
}

uint64_t flash_media_deadline_peek(void)
{
    return deadline;
}

void flash_media_reply_note(uint64_t submit_ns, uint64_t at_ns, uint64_t now_ns)
{
    __atomic_add_fetch(&replies.stamped, 1, __ATOMIC_RELAXED);
    if (at_ns > now_ns) {
        __atomic_add_fetch(&replies.held, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&replies.held_ns, at_ns - now_ns, __ATOMIC_RELAXED);
    }
    if (at_ns > submit_ns)
        atomic_max(&replies.model_max_ns, at_ns - submit_ns);
}

void flash_media_reply_stats(struct flash_reply_stats *st)
{
    st->stamped = __atomic_load_n(&replies.stamped, __ATOMIC_RELAXED);
    st->held = __atomic_load_n(&replies.held, __ATOMIC_RELAXED);
    st->held_ns = __atomic_load_n(&replies.held_ns, __ATOMIC_RELAXED);
    st->model_max_ns = __atomic_load_n(&replies.model_max_ns, __ATOMIC_RELAXED);
}

/* ---- background GC (invariant 6) ---- */

/* The cores form: an IDLE sub-request to every core of every member, so
 * that each owner collects its own dies. Returns the partitions that
 * erased a block. */
static unsigned idle_by_owners(struct media_flash *f, uint64_t now)
{
    struct fm_call c;
    call_init(&c, f, f->nmem == 64 ? UINT64_MAX : (1ull << f->nmem) - 1);
    for (uint32_t m = 0; m < f->nmem; m++) {
        struct flash *fl = f->model[m];
        for (uint32_t p = 0; p < flash_partitions(fl); p++)
            call_add(&c, m, (uint64_t)p * flash_geom(fl)->stripe_pages, FLASH_SUB_IDLE, now);
    }
    call_finish(&c);
    return c.gc;
}

/* One idle step: each member's idle dies below their background
 * threshold collect one block (flash_idle). Returns the blocks erased. */
static unsigned bg_step(struct media_flash *f)
{
    uint64_t now = f->clock(f->clock_ctx);
    unsigned n = 0;
    for (uint32_t i = 0; !f->cores[0] && i < f->nmem; i++)
        n += flash_idle(f->model[i], now);
    if (f->cores[0])
        n = idle_by_owners(f, now);
    return n;
}

static struct timespec after_ns(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
    return (struct timespec){ (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
}

/* Sleeps a tick at a time; a tick without any read or write is an idle
 * period, and gets one bounded GC step. With nothing to collect, the wait
 * doubles (up to BG_MAX_WAIT_NS) until I/O or work resumes. */
static void *bg_main(void *arg)
{
    struct media_flash *f = arg;
    uint64_t seen = __atomic_load_n(&f->ops, __ATOMIC_RELAXED), wait = f->bg_tick_ns;
    pthread_mutex_lock(&f->bg_mu);
    while (!f->bg_stop) {
        struct timespec until = after_ns(wait);
        pthread_cond_timedwait(&f->bg_cv, &f->bg_mu, &until);
        if (f->bg_stop)
            break;
        uint64_t ops = __atomic_load_n(&f->ops, __ATOMIC_RELAXED);
        unsigned done = 0;
        if (ops == seen) {
            pthread_mutex_unlock(&f->bg_mu);
            done = bg_step(f);
            pthread_mutex_lock(&f->bg_mu);
        }
        bool quiet = ops == seen && !done;
        wait = !quiet ? f->bg_tick_ns : 2 * wait > BG_MAX_WAIT_NS ? BG_MAX_WAIT_NS : 2 * wait;
        seen = ops;
    }
    pthread_mutex_unlock(&f->bg_mu);
    return NULL;
}

int flash_media_idle_gc(struct media *m, uint64_t tick_ns)
{
    if (!flash_media_members(m) || !tick_ns)
        return -EINVAL;
    struct media_flash *f = to_flash(m);
    if (f->bg_on)
        return -EBUSY;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->bg_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&f->bg_mu, NULL);
    f->bg_tick_ns = tick_ns;
    f->bg_stop = false;
    int r = pthread_create(&f->bg, NULL, bg_main, f);
    if (r) {
        pthread_cond_destroy(&f->bg_cv);
        pthread_mutex_destroy(&f->bg_mu);
        return -r;
    }
    f->bg_on = true;
    return 0;
}

/* Stops the background GC thread, if any, and waits for it. */
static void bg_stop(struct media_flash *f)
{
    if (!f->bg_on)
        return;
    pthread_mutex_lock(&f->bg_mu);
    f->bg_stop = true;
    pthread_cond_signal(&f->bg_cv);
    pthread_mutex_unlock(&f->bg_mu);
    pthread_join(f->bg, NULL);
    pthread_cond_destroy(&f->bg_cv);
    pthread_mutex_destroy(&f->bg_mu);
    f->bg_on = false;
}

/* ---- FTL state across restarts (invariant 7) ---- */

/* Writes every member's state to path.tmp, syncs it and renames it over
 * path: a crash mid-way leaves no state file, never half of one. */
static void state_save(struct media_flash *f)
{
    if (!f->state_path)
        return;
    size_t n = strlen(f->state_path) + 5;
    char *tmp = malloc(n);
    if (!tmp)
        return;
    snprintf(tmp, n, "%s.tmp", f->state_path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int r = fd < 0 ? -errno : 0;
    for (uint32_t i = 0; !r && i < f->nmem; i++)
        r = flash_save(f->model[i], fd);
    if (!r && fsync(fd))
        r = -errno;
    if (fd >= 0)
        close(fd);
    if (!r && rename(tmp, f->state_path))
        r = -errno;
    if (r)
        unlink(tmp);   /* no state: the next start rebuilds */
    free(tmp);
}

/* Loads every member's state from fd, which must hold exactly that. */
static int state_load(struct media_flash *f, int fd)
{
    for (uint32_t i = 0; i < f->nmem; i++) {
        int r = flash_load(f->model[i], fd);
        if (r)
            return r;
    }
    char extra;
    return read(fd, &extra, 1) == 0 ? 0 : -EINVAL;
}

/* Replaces every member by a fresh model of the same geometry. */
static int state_reset(struct media_flash *f)
{
    for (uint32_t i = 0; i < f->nmem; i++) {
        struct flash *fresh;
        const struct flash_geom *g = flash_geom(f->model[i]);
        int r = flash_create(g, flash_nlog(f->model[i]), &fresh);
        if (r)
            return r;
        flash_destroy(f->model[i]);
        f->model[i] = fresh;
    }
    return 0;
}

/* After a crash: every block of the image that holds data (not a hole of
 * the sparse file) is mapped, as written before this run. Blocks the file
 * system freed but never discarded count as data too (the image cannot
 * tell them apart). Wear is unknown and starts at 0. */
static int state_rebuild(struct media_flash *f)
{
    int fd = media_fd(f->lower);
    if (fd < 0)
        return 0;   /* no file below (RAM): nothing was written before */
    off_t end = (off_t)(f->m.nblocks * MEDIA_BLOCK_SIZE), pos = 0;
    while (pos < end) {
        off_t data = lseek(fd, pos, SEEK_DATA);
        if (data < 0)
            return errno == ENXIO ? 0 : -errno;
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0)
            return -errno;
        for (uint64_t b = (uint64_t)data / MEDIA_BLOCK_SIZE;
             b < f->m.nblocks && (off_t)(b * MEDIA_BLOCK_SIZE) < hole; b++) {
            uint64_t l = 0;
            struct flash *fl = route(f, b, &l);
            flash_assume_written(fl, l);
        }
        pos = hole;
    }
    return 0;
}

/* Loads, or resets and rebuilds, every member's state (no cores run). */
static int state_open(struct media_flash *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int r = fd < 0 ? -errno : state_load(f, fd);
    if (fd >= 0)
        close(fd);
    if (!r) {
        f->origin = FLASH_STATE_RESTORED;
        /* Gone while we run: if we crash, the next start rebuilds rather
         * than trusting a map older than the image. */
        return unlink(path) ? -errno : 0;
    }
    if (r != -ENOENT && r != -EINVAL)
        return r;
    r = state_reset(f);
    if (!r)
        r = state_rebuild(f);
    f->origin = FLASH_STATE_REBUILT;
    return r;
}

int flash_media_state(struct media *m, const char *path)
{
    if (!flash_media_members(m) || !path)
        return -EINVAL;
    struct media_flash *f = to_flash(m);
    f->state_path = strdup(path);
    if (!f->state_path)
        return -ENOMEM;
    /* The models are loaded or replaced under their locks: the owners
     * stop first and start again on the models that result. */
    cores_stop_all(f);
    int r = state_open(f, path);
    char why[128];
    int rc = cores_start_all(f, why, sizeof(why));
    return r ? r : rc;
}

enum flash_state_origin flash_media_origin(struct media *m)
{
    return flash_media_members(m) ? to_flash(m)->origin : FLASH_STATE_FRESH;
}

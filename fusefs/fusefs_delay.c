/*
 * fusefs/fusefs_delay.c - FUSE replies held until the flash model says the
 * command's media I/O completed (`cisc up --media flash`).
 *
 * The model computes, on the thread that did the I/O, when each media call
 * would complete on the drive (flash_media.h invariant 2: a per-thread
 * stamp). libcisc completions carry that time to the client; a FUSE reply
 * cannot, so the reply itself waits: when the device core finishes a
 * command it takes the stamp, and if the time is still to come it hands
 * the reply to this queue instead of sending it. One timer thread per mount
 * sleeps until the earliest held reply is due, sends every due one, and
 * sleeps again: no CPU is burned waiting, and a reply is held only behind
 * its own time (the queue is ordered by due time, not by arrival; replies
 * with no stamp never enter it).
 *
 * Invariants:
 *   1. A held reply is sent no earlier than its due time (CLOCK_MONOTONIC,
 *      the model's clock), and at most FUSEFS_DELAY_CAP_NS after the core
 *      finished (a runaway model cannot hang a request).
 *   2. Due replies are sent in due-time order by the timer thread; the
 *      thread never spins (it waits on a condition variable with the
 *      earliest due time as its deadline, timer slack 1 us).
 *   3. fusefs_delay_fini sends every reply still held (at once: the mount
 *      is going away) before the session is destroyed, so each request is
 *      still answered exactly once (fusefs.h invariant 1).
 *   4. The queue and its thread exist only once a reply was held: a mount
 *      over the file media never starts them.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/done.h"
#include "device/media/flash_media.h"

/* Invariant 1: the longest a reply is held (as the libcisc arrival cap). */
#define FUSEFS_DELAY_CAP_NS 1000000000ull
/* Invariant 2: the timer thread's slack, so short flash latencies hold a
 * reply for about their own length rather than the default 50 us. */
#define FUSEFS_DELAY_SLACK_NS 1000

struct fusefs_delay {
    pthread_mutex_t mu;          /* protects everything below */
    pthread_cond_t cv;           /* CLOCK_MONOTONIC: a new earliest reply, or stop */
    pthread_t thread;
    struct fusefs_held **heap;   /* min-heap by at_ns */
    size_t n, cap;
    bool stop;
};

/* ---- the heap ---- */

static void heap_swap(struct fusefs_held **h, size_t a, size_t b)
{
    struct fusefs_held *t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static int heap_push(struct fusefs_delay *d, struct fusefs_held *x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct fusefs_held **h = realloc(d->heap, cap * sizeof(*h));
        if (!h)
            return -ENOMEM;
        d->heap = h;
        d->cap = cap;
    }
    size_t i = d->n++;
    d->heap[i] = x;
    while (i && d->heap[(i - 1) / 2]->at_ns > d->heap[i]->at_ns) {
        heap_swap(d->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

static struct fusefs_held *heap_pop(struct fusefs_delay *d)
{
    struct fusefs_held *top = d->heap[0];
    d->heap[0] = d->heap[--d->n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < d->n && d->heap[l]->at_ns < d->heap[m]->at_ns)
            m = l;
        if (r < d->n && d->heap[r]->at_ns < d->heap[m]->at_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(d->heap, i, m);
        i = m;
    }
    return top;
}

/* ---- the timer thread ---- */

static struct timespec to_ts(uint64_t ns)
{
    return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* Invariant 2: sleeps until the earliest reply is due, sends the due ones
 * outside the lock, until stopped. */
static void *delay_main(void *arg)
{
    struct fusefs_delay *d = arg;
    prctl(PR_SET_TIMERSLACK, FUSEFS_DELAY_SLACK_NS, 0, 0, 0);
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        if (!d->n) {
            pthread_cond_wait(&d->cv, &d->mu);
            continue;
        }
        uint64_t at = d->heap[0]->at_ns;
        if (at > now_ns()) {
            struct timespec ts = to_ts(at);
            pthread_cond_timedwait(&d->cv, &d->mu, &ts);
            continue;
        }
        struct fusefs_held *h = heap_pop(d);
        pthread_mutex_unlock(&d->mu);
        h->fire(h);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void delay_free(struct fusefs_delay *d)
{
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->heap);
    free(d);
}

static struct fusefs_delay *delay_new(void)
{
    struct fusefs_delay *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&d->mu, NULL);
    if (pthread_create(&d->thread, NULL, delay_main, d)) {
        delay_free(d);
        return NULL;
    }
    return d;
}

/* Invariant 4: the mount's queue, started by the first held reply. */
static struct fusefs_delay *delay_get(struct fusefs *f)
{
    /* Pairs with the release store below: a queue seen is initialised. */
    struct fusefs_delay *d = __atomic_load_n(&f->delay, __ATOMIC_ACQUIRE);
    if (d)
        return d;
    pthread_mutex_lock(&f->lock);
    d = f->delay;
    if (!d) {
        d = delay_new();
        __atomic_store_n(&f->delay, d, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&f->lock);
    return d;
}

/* ---- the door's calls ---- */

bool fusefs_delay_pending(void)
{
    uint64_t at = flash_media_deadline_peek();
    return at && at > now_ns();   /* no clock read without a model */
}

bool fusefs_delay_hold_at(struct fusefs *f, struct fusefs_held *h, uint64_t submit_ns,
                          uint64_t at_ns)
{
    if (!at_ns)
        return false;   /* no modelled media I/O: reply now */
    uint64_t now = now_ns();
    if (at_ns > now + FUSEFS_DELAY_CAP_NS)
        at_ns = now + FUSEFS_DELAY_CAP_NS;
    flash_media_reply_note(submit_ns, at_ns, now);
    struct fusefs_delay *d = at_ns > now ? delay_get(f) : NULL;
    if (!d)
        return false;   /* due already (or no queue: out of memory) */
    h->at_ns = at_ns;
    pthread_mutex_lock(&d->mu);
    int r = d->stop ? -ESHUTDOWN : heap_push(d, h);
    if (!r && d->heap[0] == h)
        pthread_cond_signal(&d->cv);   /* a new earliest deadline */
    pthread_mutex_unlock(&d->mu);
    return r == 0;
}

bool fusefs_delay_hold(struct fusefs *f, struct fusefs_held *h, uint64_t submit_ns)
{
    return fusefs_delay_hold_at(f, h, submit_ns, flash_media_deadline_take(NULL));
}

void fusefs_delay_fini(struct fusefs *f)
{
    struct fusefs_delay *d = f->delay;
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    while (d->n) {   /* invariant 3 */
        struct fusefs_held *h = heap_pop(d);
        h->fire(h);
    }
    f->delay = NULL;
    delay_free(d);
}

/* ---- helpers for the replies that are not a struct freq ---- */

int fusefs_delay_copy(const struct sfs_seg *segs, unsigned n, size_t total, char **out)
{
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return -ENOMEM;
    size_t at = 0;
    for (unsigned i = 0; i < n && at < total; i++) {
        size_t len = (size_t)segs[i].len < total - at ? (size_t)segs[i].len : total - at;
        if (segs[i].kind == SFS_SEG_MEM) {
            memcpy(buf + at, segs[i].mem, len);
        } else if (segs[i].kind == SFS_SEG_FD) {
            ssize_t r = pread(segs[i].fd, buf + at, len, (off_t)segs[i].pos);
            if (r != (ssize_t)len) {
                free(buf);
                return r < 0 ? -errno : -EIO;
            }
        } else {
            memset(buf + at, 0, len);
        }
        at += len;
    }
    *out = buf;
    return (int)at;
}

/* eng_call's completion, with the command's media stamp taken on the core. */
static void call_done(struct eng_cmd *c)
{
    struct fusefs_call *k = (struct fusefs_call *)c;
    k->at_ns = flash_media_deadline_take(NULL);
    done_post(&k->state);   /* pairs with done_wait in fusefs_delay_call */
}

int64_t fusefs_delay_call(struct engine *e, struct fusefs_call *k)
{
    k->c.done = call_done;
    done_arm(&k->state);
    k->at_ns = 0;
    int r = eng_submit(e, &k->c);
    if (r)
        return k->c.ret = r;
    done_wait(&k->state);   /* the command ran: ret and at_ns are set */
    return k->c.ret;
}

struct held_write {
    struct fusefs_held h;        /* first */
    fuse_req_t req;
    int64_t n;
};

static void reply_write_now(fuse_req_t req, int64_t n)
{
    if (n < 0)
        fuse_reply_err(req, (int)-n);
    else
        fuse_reply_write(req, (size_t)n);
}

static void fire_write(struct fusefs_held *h)
{
    struct held_write *w = (struct held_write *)h;
    reply_write_now(w->req, w->n);
    free(w);
}

void fusefs_delay_reply_write(struct fusefs *f, fuse_req_t req, int64_t n,
                              const struct fusefs_call *k)
{
    struct held_write *w = k->at_ns ? malloc(sizeof(*w)) : NULL;
    if (w) {
        *w = (struct held_write){ .h.fire = fire_write, .req = req, .n = n };
        if (fusefs_delay_hold_at(f, &w->h, k->c.item.t_submit_ns, k->at_ns))
            return;
        free(w);
    }
    reply_write_now(req, n);
}

/*
 * fusefs/wback.c - the kernel's writeback cache (cisc up --writeback) kept
 * coherent with the other doors (libcisc): which inodes may have dirty
 * pages in the kernel, holding them (written back, and no write(2) through
 * the mount) while another door's batch runs, raising the kernel's file
 * size after another door grew a file and setting it after another door
 * truncated one. The design, with why it cannot deadlock, is in
 * docs/MOUNT.md ("The mount's writeback cache").
 *
 * Invariants:
 *   1. An inode can have dirty pages in the kernel only while a file of it
 *      is open for writing through the mount: the kernel writes a file's
 *      dirty pages back on close (fuse_flush) and again before RELEASE
 *      (fuse_release), so every such file is counted here from the OPEN or
 *      CREATE reply (before the kernel can dirty a page) to its RELEASE.
 *   2. Before a batch of another door's commands runs, fusefs_wback_hold
 *      holds every counted inode: a holder thread chmods the kernel's inode
 *      to its own mode (on /proc/self/fd/N, the inode opened by handle), so
 *      the kernel takes the inode lock, writes the dirty pages back (a
 *      SETATTR of the mode under the writeback cache flushes first) and
 *      sends SETATTR(mode), which fusefs_wback_park keeps unanswered. While
 *      it is parked no write(2) through the mount can change the inode.
 *      The batch is queued once every hold is parked or has failed (then
 *      that inode is flushed instead: FUSE_NOTIFY_INVAL_INODE writes its
 *      dirty pages back, without a lock). The hold is released (parked
 *      requests answered with the device's attributes, expiring at once)
 *      when the last command of the batch has posted its completion
 *      (fusefs_wback_unhold), i.e. after its invalidations and size
 *      changes reached the kernel. Nothing here waits holding w->lock, and
 *      nothing runs on a FUSE worker or a device core that could wait for
 *      the kernel: those serve the WRITEs the holds cause.
 *   3. After another door changed a file's size in a way the kernel cannot
 *      learn from a store (a shrink, or a change of the whole file),
 *      fusefs_wback_resize makes the kernel take the device's size: it
 *      truncates the kernel's inode itself (open_by_handle_at, truncate(2)
 *      on /proc/self/fd/N: the kernel locks the inode, waits for writes in
 *      flight and sends SETATTR(size)), and the SETATTR that comes back from
 *      that thread for that inode (fusefs_wback_resizing) changes nothing on
 *      the device: it is answered with the device's attributes, whose size
 *      the kernel then sets, dropping the pages past it. Only the kernel's
 *      own truncate lowers its size under the writeback cache; attribute
 *      replies and notifications never do. A resize takes the inode lock
 *      too, so it first releases the inode's parked holds early, and while
 *      it runs no hold of that inode parks (it proceeds as a plain chmod and
 *      the inode is flushed instead): otherwise the resize would wait for a
 *      batch whose completions wait behind it.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/engine/engine.h"

struct wback_ent {
    uint64_t ino;
    uint32_t n;                   /* files open for writing on the mount */
};

/* A resize in progress (invariant 3), on the resizing thread's stack. */
struct wback_resize {
    uint64_t ino;
    uint32_t tid;
    struct wback_resize *next;
};

/* One inode held for a batch (invariant 2). */
enum { HOLD_STARTING, HOLD_PARKED, HOLD_FAILED, HOLD_RELEASED };

struct hold_ent {
    uint64_t ino, generation;
    struct stat st;               /* the device's attributes: the parked reply */
    uint32_t tid;                 /* the holder thread, once started */
    int state;                    /* HOLD_*; protected by w->lock */
    fuse_req_t req;               /* the parked SETATTR (HOLD_PARKED) */
    bool reply_due;               /* released by fusefs_wback_unhold, to answer */
    struct fusefs_hold *h;
};

/* The holds of one batch. Freed when the batch is released and every
 * holder thread has returned. */
struct fusefs_hold {
    struct fusefs *f;
    struct fusefs_hold *next;     /* w->holds */
    unsigned refs;                /* commands of the batch not yet posted */
    unsigned threads;             /* holder threads not yet returned */
    size_t n;
    struct hold_ent ent[];
};

struct fusefs_wback {
    pthread_mutex_t lock;
    pthread_cond_t cond;          /* a hold parked or failed */
    struct fusefs_hold *holds;    /* batches not yet released; protected by lock */
    struct wback_ent *ent;        /* protected by lock */
    size_t n, cap;                /* protected by lock */
    size_t files;                 /* __atomic: sum of ent[].n (a hint read without lock) */
    struct wback_resize *resizing;   /* protected by lock */
    unsigned nresizing;           /* __atomic: length of resizing (a hint read without lock) */
};

int fusefs_wback_init(struct fusefs *f)
{
    f->wb = calloc(1, sizeof(*f->wb));
    if (!f->wb)
        return -ENOMEM;
    pthread_mutex_init(&f->wb->lock, NULL);
    pthread_cond_init(&f->wb->cond, NULL);
    return 0;
}

void fusefs_wback_fini(struct fusefs *f)
{
    if (!f->wb)
        return;
    pthread_mutex_destroy(&f->wb->lock);
    pthread_cond_destroy(&f->wb->cond);
    free(f->wb->ent);
    free(f->wb);
    f->wb = NULL;
}

bool fusefs_wback_writable(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY;
}

int fusefs_wback_open(struct fusefs *f, uint64_t ino)
{
    struct fusefs_wback *w = f->wb;
    int r = -ENOMEM;
    pthread_mutex_lock(&w->lock);
    size_t i = 0;
    while (i < w->n && w->ent[i].ino != ino)
        i++;
    if (i == w->n && w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        struct wback_ent *e = realloc(w->ent, cap * sizeof(*e));
        if (e) {
            w->ent = e;
            w->cap = cap;
        }
    }
    if (i < w->cap) {
        if (i == w->n)
            w->ent[w->n++] = (struct wback_ent){ ino, 0 };
        w->ent[i].n++;
        /* Relaxed: the count is read as a hint; the lock orders the list. */
        __atomic_add_fetch(&w->files, 1, __ATOMIC_RELAXED);
        r = 0;
    }
    pthread_mutex_unlock(&w->lock);
    return r;
}

void fusefs_wback_release(struct fusefs *f, uint64_t ino)
{
    struct fusefs_wback *w = f->wb;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->n; i++) {
        if (w->ent[i].ino != ino)
            continue;
        __atomic_sub_fetch(&w->files, 1, __ATOMIC_RELAXED);
        if (--w->ent[i].n == 0)
            w->ent[i] = w->ent[--w->n];
        break;
    }
    pthread_mutex_unlock(&w->lock);
}

/* A copy of the counted inodes (NULL and *n 0 when there are none). */
static uint64_t *snapshot(struct fusefs_wback *w, size_t *n)
{
    pthread_mutex_lock(&w->lock);
    uint64_t *inos = w->n ? malloc(w->n * sizeof(*inos)) : NULL;
    *n = inos ? w->n : 0;
    for (size_t i = 0; i < *n; i++)
        inos[i] = w->ent[i].ino;
    pthread_mutex_unlock(&w->lock);
    return inos;
}

void fusefs_wback_grown(struct fusefs *f, uint64_t ino, uint64_t size)
{
    /* With the writeback cache the kernel keeps its own size of a cached
     * file and ignores the one in attributes. A store of data at the new
     * end raises it (never lowers it; a store of no bytes changes
     * nothing). The byte stored is not the file's: the page that holds it
     * is dropped at once, and the change's completion is posted only
     * after that, so whoever reads the page then reads it from the
     * device. */
    if (size == 0)
        return;
    char zero = 0;
    struct fuse_bufvec one = FUSE_BUFVEC_INIT(1);
    one.buf[0].mem = &zero;
    if (fuse_lowlevel_notify_store(f->se, ino, (off_t)(size - 1), &one, 0) == 0)
        fuse_lowlevel_notify_inval_inode(f->se, ino, (off_t)(size - 1), 1);
}

/* The mount's root, opened for open_by_handle_at (which refuses O_PATH
 * descriptors) and closed after each use: a descriptor kept open would make
 * the mount busy for `cisc down`. -errno if it cannot be opened. */
static int mount_fd(struct fusefs *f)
{
    if (!f->mountpoint)
        return -ENOENT;
    int fd = open(f->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

/* The kernel's own inode of ino, if it holds one: an O_PATH descriptor
 * from the handle the kernel gives its FUSE inodes (FILEID_INO64_GEN:
 * node id high and low words, generation). -ESTALE when it holds none. */
static int kernel_inode(struct fusefs *f, uint64_t ino, uint64_t generation)
{
    int mnt = mount_fd(f);
    if (mnt < 0)
        return mnt;
    struct {
        struct file_handle h;
        uint32_t raw[3];
    } fh = { .h = { .handle_bytes = sizeof(fh.raw), .handle_type = 0x81 } };
    fh.raw[0] = (uint32_t)(ino >> 32);
    fh.raw[1] = (uint32_t)ino;
    fh.raw[2] = (uint32_t)generation;
    int fd = open_by_handle_at(mnt, &fh.h, O_PATH | O_CLOEXEC);
    int err = fd >= 0 ? 0 : -errno;
    close(mnt);
    return fd >= 0 ? fd : err;
}

static void resizing_push(struct fusefs_wback *w, struct wback_resize *rs)
{
    pthread_mutex_lock(&w->lock);
    rs->next = w->resizing;
    w->resizing = rs;
    __atomic_add_fetch(&w->nresizing, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->lock);
}

static void resizing_pop(struct fusefs_wback *w, struct wback_resize *rs)
{
    pthread_mutex_lock(&w->lock);
    struct wback_resize **pp = &w->resizing;
    while (*pp != rs)
        pp = &(*pp)->next;
    *pp = rs->next;
    __atomic_sub_fetch(&w->nresizing, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->lock);
}

bool fusefs_wback_resizing(struct fusefs *f, uint64_t ino, uint32_t tid)
{
    struct fusefs_wback *w = f->wb;
    if (!w || !__atomic_load_n(&w->nresizing, __ATOMIC_RELAXED))
        return false;   /* the common case: no lock */
    bool hit = false;
    pthread_mutex_lock(&w->lock);
    for (struct wback_resize *rs = w->resizing; rs && !hit; rs = rs->next)
        hit = rs->ino == ino && rs->tid == tid;
    pthread_mutex_unlock(&w->lock);
    return hit;
}

/* ---- holds (invariant 2) ------------------------------------------------- */

/* Whether a resize of ino is under way; w->lock held. */
static bool resize_pending(struct fusefs_wback *w, uint64_t ino)
{
    for (struct wback_resize *rs = w->resizing; rs; rs = rs->next)
        if (rs->ino == ino)
            return true;
    return false;
}

/* Frees h once released and left by its threads; w->lock held. */
static void hold_maybe_free(struct fusefs_hold *h)
{
    if (h->refs || h->threads)
        return;
    free(h);
}

/* Answers a released entry's parked request (lock not held): the
 * device's attributes as they were when the hold began, expiring at once
 * (the kernel ignores size and times of a SETATTR reply of a mode under
 * the writeback cache; mode and owner it asks again). The entry stays
 * valid until then: its thread is inside chmod. */
static void answer(struct hold_ent *e)
{
    fuse_reply_attr(e->req, &e->st, 0.0);
}

/* Marks e released; returns true if it had a parked request to answer. */
static bool release_ent(struct hold_ent *e)
{
    bool parked = e->state == HOLD_PARKED;
    if (e->state == HOLD_PARKED || e->state == HOLD_STARTING)
        e->state = HOLD_RELEASED;
    return parked;
}

bool fusefs_wback_park(struct fusefs *f, uint64_t ino, uint32_t tid, fuse_req_t req)
{
    struct fusefs_wback *w = f->wb;
    bool parked = false;
    pthread_mutex_lock(&w->lock);
    for (struct fusefs_hold *h = w->holds; h && !parked; h = h->next)
        for (size_t i = 0; i < h->n && !parked; i++) {
            struct hold_ent *e = &h->ent[i];
            if (e->ino != ino || e->tid != tid || e->state != HOLD_STARTING)
                continue;
            if (resize_pending(w, ino))
                break;   /* a plain chmod then; the hook flushes ino instead */
            e->req = req;
            e->state = HOLD_PARKED;
            parked = true;
        }
    if (parked)
        pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return parked;
}

/* A holder thread: the kernel's inode lock of one inode, kept by a
 * chmod(2) whose SETATTR is parked until the hold is released. */
static void *holder_main(void *arg)
{
    struct hold_ent *e = arg;
    struct fusefs *f = e->h->f;
    struct fusefs_wback *w = f->wb;
    pthread_mutex_lock(&w->lock);
    e->tid = (uint32_t)gettid();
    pthread_mutex_unlock(&w->lock);
    int fd = kernel_inode(f, e->ino, e->generation);
    if (fd >= 0) {
        char path[32];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        (void)chmod(path, e->st.st_mode & 07777);   /* returns when released */
        close(fd);
    }
    pthread_mutex_lock(&w->lock);
    if (e->state == HOLD_STARTING)   /* never parked: not held */
        e->state = HOLD_FAILED;
    e->h->threads--;
    pthread_cond_broadcast(&w->cond);
    hold_maybe_free(e->h);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Starts the holder of entry e (its attributes read); false if it cannot. */
static bool holder_start(struct fusefs *f, struct hold_ent *e)
{
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_GETATTR, NULL);
    c.ino = e->ino;
    if (eng_call(f->eng, &c) < 0 || !S_ISREG(c.attr.mode))
        return false;
    e->generation = c.attr.generation;
    fusefs_to_stat(&c.attr, &e->st);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&f->wb->lock);
    pthread_t t;
    bool ok = pthread_create(&t, &a, holder_main, e) == 0;
    if (ok)
        e->h->threads++;
    pthread_mutex_unlock(&f->wb->lock);
    pthread_attr_destroy(&a);
    return ok;
}

/* A batch's hold of inos, registered; NULL without memory. */
static struct fusefs_hold *hold_new(struct fusefs *f, const uint64_t *inos, size_t n,
                                    unsigned ncmds)
{
    struct fusefs_hold *h = calloc(1, sizeof(*h) + n * sizeof(h->ent[0]));
    if (!h)
        return NULL;
    h->f = f;
    h->n = n;
    h->refs = ncmds;
    for (size_t i = 0; i < n; i++) {
        h->ent[i].ino = inos[i];
        h->ent[i].h = h;
        h->ent[i].state = HOLD_STARTING;
    }
    pthread_mutex_lock(&f->wb->lock);
    h->next = f->wb->holds;
    f->wb->holds = h;
    pthread_mutex_unlock(&f->wb->lock);
    return h;
}

/* Waits until every entry of h parked or failed; returns whether entry i
 * is held in held[i]. */
static void hold_wait(struct fusefs_wback *w, struct fusefs_hold *h, bool *held)
{
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < h->n; i++) {
        while (h->ent[i].state == HOLD_STARTING)
            pthread_cond_wait(&w->cond, &w->lock);
        held[i] = h->ent[i].state == HOLD_PARKED;
    }
    pthread_mutex_unlock(&w->lock);
}

void *fusefs_wback_hold(void *arg, unsigned ncmds)
{
    struct fusefs *f = arg;
    if (!__atomic_load_n(&f->wb->files, __ATOMIC_RELAXED) || !ncmds)
        return NULL;
    size_t n;
    uint64_t *inos = snapshot(f->wb, &n);
    struct fusefs_hold *h = n ? hold_new(f, inos, n, ncmds) : NULL;
    bool *held = h ? calloc(n, sizeof(*held)) : NULL;
    if (h && held) {
        for (size_t i = 0; i < n; i++)
            if (!holder_start(f, &h->ent[i])) {
                pthread_mutex_lock(&f->wb->lock);
                h->ent[i].state = HOLD_FAILED;
                pthread_mutex_unlock(&f->wb->lock);
            }
        hold_wait(f->wb, h, held);
    }
    /* What is not held is written back without a lock (the rule before
     * holds: ordered against mount writes that returned before the batch).
     * Each notify returns once the kernel has written the inode's dirty
     * pages back and dropped its pages. */
    for (size_t i = 0; i < n; i++)
        if (!held || !held[i])
            fuse_lowlevel_notify_inval_inode(f->se, inos[i], 0, 0);
    free(held);
    free(inos);
    if (h && !held) {   /* no memory for the flags: give the hold back now */
        for (unsigned i = 0; i < ncmds; i++)
            fusefs_wback_unhold(f, h);
        return NULL;
    }
    return h;
}

/* Takes h off the list; w->lock held. */
static void hold_unlink(struct fusefs_wback *w, struct fusefs_hold *h)
{
    struct fusefs_hold **pp = &w->holds;
    while (*pp && *pp != h)
        pp = &(*pp)->next;
    if (*pp)
        *pp = h->next;
}

void fusefs_wback_unhold(void *arg, void *hold)
{
    struct fusefs *f = arg;
    struct fusefs_wback *w = f->wb;
    struct fusefs_hold *h = hold;
    pthread_mutex_lock(&w->lock);
    if (h->refs > 1) {
        h->refs--;
        pthread_mutex_unlock(&w->lock);
        return;
    }
    /* The last command: refs stays 1 while answering, so that h outlives
     * the threads the answers let go. */
    hold_unlink(w, h);
    for (size_t i = 0; i < h->n; i++)
        h->ent[i].reply_due = release_ent(&h->ent[i]);
    pthread_mutex_unlock(&w->lock);
    for (size_t i = 0; i < h->n; i++)
        if (h->ent[i].reply_due)
            answer(&h->ent[i]);
    pthread_mutex_lock(&w->lock);
    h->refs = 0;
    hold_maybe_free(h);
    pthread_mutex_unlock(&w->lock);
}

/* Releases at once every parked hold of ino (a resize needs its lock). */
static void release_ino(struct fusefs *f, uint64_t ino)
{
    struct fusefs_wback *w = f->wb;
    for (;;) {
        struct hold_ent *e = NULL;
        pthread_mutex_lock(&w->lock);
        for (struct fusefs_hold *h = w->holds; h && !e; h = h->next)
            for (size_t i = 0; i < h->n && !e; i++)
                if (h->ent[i].ino == ino && release_ent(&h->ent[i]))
                    e = &h->ent[i];
        pthread_mutex_unlock(&w->lock);
        if (!e)
            return;
        answer(e);
    }
}

int fusefs_wback_resize(struct fusefs *f, uint64_t ino)
{
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_GETATTR, NULL);
    c.ino = ino;
    int64_t r = eng_call(f->eng, &c);
    if (r < 0)
        return (int)r;
    if (!S_ISREG(c.attr.mode))
        return 0;   /* the kernel trusts its own size of regular files only */
    int fd = kernel_inode(f, ino, c.attr.generation);
    if (fd < 0)
        return fd == -ESTALE ? 0 : fd;   /* not cached: nothing to correct */
    struct wback_resize rs = { .ino = ino, .tid = (uint32_t)gettid() };
    char path[32];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    resizing_push(f->wb, &rs);   /* from here no hold of ino parks */
    release_ino(f, ino);         /* the truncate takes the lock a hold keeps */
    /* The size asked for is the device's now, so that even a SETATTR not
     * recognised as ours would set the right size. */
    int err = truncate(path, (off_t)c.attr.size) ? -errno : 0;
    resizing_pop(f->wb, &rs);
    close(fd);
    return err;
}

/*
 * fusefs/wback.c - the kernel's writeback cache (cisc up --writeback) kept
 * coherent with the other doors (libcisc): which inodes may have dirty
 * pages in the kernel, making the kernel write them back before another
 * door's commands run, and raising the kernel's file size after another
 * door grew a file. The design, with why it cannot deadlock, is in
 * docs/MOUNT.md ("The mount's writeback cache").
 *
 * Invariants:
 *   1. An inode can have dirty pages in the kernel only while a file of it
 *      is open for writing through the mount: the kernel writes a file's
 *      dirty pages back on close (fuse_flush) and again before RELEASE
 *      (fuse_release), so every such file is counted here from the OPEN or
 *      CREATE reply (before the kernel can dirty a page) to its RELEASE.
 *   2. fusefs_wback_flush makes the kernel write back and drop the pages
 *      of every counted inode (FUSE_NOTIFY_INVAL_INODE launders dirty
 *      pages through WRITE requests and waits for writes in flight), and
 *      returns only after that; it holds no lock while it waits, and is
 *      never called on a FUSE worker or a device core, which serve those
 *      WRITEs.
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
 *      replies and notifications never do.
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

struct fusefs_wback {
    pthread_mutex_t lock;
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
    return 0;
}

void fusefs_wback_fini(struct fusefs *f)
{
    if (!f->wb)
        return;
    pthread_mutex_destroy(&f->wb->lock);
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

void fusefs_wback_flush(void *arg)
{
    struct fusefs *f = arg;
    if (!__atomic_load_n(&f->wb->files, __ATOMIC_RELAXED))
        return;
    size_t n;
    uint64_t *inos = snapshot(f->wb, &n);
    /* Each notify returns once the kernel has written the inode's dirty
     * pages back (WRITE requests the FUSE workers serve meanwhile) and
     * dropped its pages. Errors: the kernel dropped the inode (nothing
     * cached) or the mount is gone. */
    for (size_t i = 0; i < n; i++)
        fuse_lowlevel_notify_inval_inode(f->se, inos[i], 0, 0);
    free(inos);
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
    resizing_push(f->wb, &rs);
    /* The size asked for is the device's now, so that even a SETATTR not
     * recognised as ours would set the right size. */
    int err = truncate(path, (off_t)c.attr.size) ? -errno : 0;
    resizing_pop(f->wb, &rs);
    close(fd);
    return err;
}

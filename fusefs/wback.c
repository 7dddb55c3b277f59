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
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct wback_ent {
    uint64_t ino;
    uint32_t n;                   /* files open for writing on the mount */
};

struct fusefs_wback {
    pthread_mutex_t lock;
    struct wback_ent *ent;        /* protected by lock */
    size_t n, cap;                /* protected by lock */
    size_t files;                 /* __atomic: sum of ent[].n (a hint read without lock) */
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

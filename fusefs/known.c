/*
 * fusefs/known.c - which inodes the kernel knows (holds a lookup
 * reference to), so that a change made through another door (libcisc)
 * invalidates the kernel's caches only when it may cache something, and
 * the invalidation itself (fuse_lowlevel_notify_inval_*).
 *
 * Every entry reply adds one (before the reply is sent, so a change that
 * races with it is seen as "known"); every FORGET - the kernel's, or the
 * one a failed reply sends back - subtracts its count. The root is always
 * known. Striped: one lock per FUSEFS_KNOWN_STRIPES buckets.
 */
#include "fusefs/fusefs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct known_ent {
    uint64_t ino, n;
    struct known_ent *next;
};

struct known_stripe {
    pthread_mutex_t lock;
    struct known_ent *bucket[FUSEFS_KNOWN_BUCKETS];
};

int fusefs_known_init(struct fusefs *f)
{
    f->known = calloc(FUSEFS_KNOWN_STRIPES, sizeof(struct known_stripe));
    if (!f->known)
        return -ENOMEM;
    for (unsigned i = 0; i < FUSEFS_KNOWN_STRIPES; i++)
        pthread_mutex_init(&f->known[i].lock, NULL);
    return 0;
}

void fusefs_known_fini(struct fusefs *f)
{
    if (!f->known)
        return;
    for (unsigned i = 0; i < FUSEFS_KNOWN_STRIPES; i++) {
        for (unsigned b = 0; b < FUSEFS_KNOWN_BUCKETS; b++) {
            struct known_ent *e = f->known[i].bucket[b];
            while (e) {
                struct known_ent *n = e->next;
                free(e);
                e = n;
            }
        }
        pthread_mutex_destroy(&f->known[i].lock);
    }
    free(f->known);
    f->known = NULL;
}

static struct known_stripe *stripe(struct fusefs *f, uint64_t ino, struct known_ent ***head)
{
    uint64_t h = ino * 0x9e3779b97f4a7c15ull;
    struct known_stripe *s = &f->known[(h >> 32) % FUSEFS_KNOWN_STRIPES];
    *head = &s->bucket[(h >> 16) % FUSEFS_KNOWN_BUCKETS];
    return s;
}

void fusefs_known_add(struct fusefs *f, uint64_t ino)
{
    struct known_ent **head;
    struct known_stripe *s = stripe(f, ino, &head);
    pthread_mutex_lock(&s->lock);
    struct known_ent *e = *head;
    while (e && e->ino != ino)
        e = e->next;
    if (!e && (e = calloc(1, sizeof(*e))) != NULL) {
        e->ino = ino;
        e->next = *head;
        *head = e;
    }
    if (e)
        e->n++;
    pthread_mutex_unlock(&s->lock);
}

void fusefs_known_sub(struct fusefs *f, uint64_t ino, uint64_t n)
{
    struct known_ent **head;
    struct known_stripe *s = stripe(f, ino, &head);
    pthread_mutex_lock(&s->lock);
    for (struct known_ent **pp = head; *pp; pp = &(*pp)->next) {
        struct known_ent *e = *pp;
        if (e->ino != ino)
            continue;
        e->n = e->n > n ? e->n - n : 0;
        if (!e->n) {
            *pp = e->next;
            free(e);
        }
        break;
    }
    pthread_mutex_unlock(&s->lock);
}

static bool known(void *arg, uint64_t ino)
{
    struct fusefs *f = arg;
    if (ino == FUSE_ROOT_ID)
        return true;
    struct known_ent **head;
    struct known_stripe *s = stripe(f, ino, &head);
    pthread_mutex_lock(&s->lock);
    struct known_ent *e = *head;
    while (e && e->ino != ino)
        e = e->next;
    pthread_mutex_unlock(&s->lock);
    return e != NULL;
}

/* Errors are expected and harmless: -ENOENT when the kernel dropped the
 * inode or entry meanwhile, -ENOTCONN/-ENODEV once unmounted. */
static void inval_inode(void *arg, uint64_t ino, int64_t off, int64_t len)
{
    struct fusefs *f = arg;
    fuse_lowlevel_notify_inval_inode(f->se, ino, off, len);
    if (f->writeback && off >= 0 && len > 0)   /* data written: the file may have grown */
        fusefs_wback_grown(f, ino, (uint64_t)off + (uint64_t)len);
    else if (f->writeback && off >= 0 && len == 0)   /* to the end: it may have shrunk */
        fusefs_wback_resize(f, ino);
}

static void inval_entry(void *arg, uint64_t parent, const char *name)
{
    struct fusefs *f = arg;
    fuse_lowlevel_notify_inval_entry(f->se, parent, name, strlen(name));
}

void fusefs_watch(struct fusefs *f, bool on)
{
    struct eng_watch w = { known, inval_inode, inval_entry, f,
                           f->writeback ? fusefs_wback_hold : NULL,
                           f->writeback ? fusefs_wback_unhold : NULL };
    eng_set_watch(f->eng, on ? &w : NULL);
}

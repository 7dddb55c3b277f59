/* device/engine/engine_watch.c - changes made through one door, reported to a
 * door that caches (the FUSE front end): recording (eng_chg_*), the
 * cheap "does anyone cache this" test, and the blocking flush. */
#include "device/engine/engine_int.h"

#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>

/* The existing record of ino in the chain, or NULL. */
static struct eng_chg *find_inode(struct eng_chg *g, uint64_t ino, unsigned *idx)
{
    for (; g; g = g->next)
        for (unsigned i = 0; i < g->ninodes; i++)
            if (g->inode[i].ino == ino)
                return *idx = i, g;
    return NULL;
}

/* The last record of the chain, extended when full (NULL without memory). */
static struct eng_chg *tail_with_room(struct eng_chg *g, bool entry)
{
    while (g->next)
        g = g->next;
    if (entry ? g->nentries < ENG_CHG_ENTRIES : g->ninodes < ENG_CHG_INODES)
        return g;
    g->next = calloc(1, sizeof(*g));
    return g->next;
}

void eng_chg_inode(struct eng_cmd *c, uint64_t ino, int64_t off, int64_t len)
{
    unsigned i;
    if (!c->chg)
        return;
    struct eng_chg *g = find_inode(c->chg, ino, &i);
    if (g) {
        if (off >= 0 && g->inode[i].off >= 0) {   /* widen to cover both */
            int64_t o = g->inode[i].off, l = g->inode[i].len;
            int64_t lo = o < off ? o : off;
            int64_t hi = o + l > off + len ? o + l : off + len;
            g->inode[i].off = lo;   /* len 0 (to the end) stays so: the size may drop */
            g->inode[i].len = l && len ? hi - lo : 0;
        } else if (off >= 0) {
            g->inode[i].off = off;
            g->inode[i].len = len;
        }
        return;
    }
    g = tail_with_room(c->chg, false);
    if (!g) {   /* no memory: invalidate all of the first inode instead */
        c->chg->inode[0].off = c->chg->inode[0].len = 0;
        return;
    }
    g->inode[g->ninodes].ino = ino;
    g->inode[g->ninodes].off = off;
    g->inode[g->ninodes].len = len;
    g->ninodes++;
}

void eng_chg_entry(struct eng_cmd *c, uint64_t parent, const char *name)
{
    if (!c->chg)
        return;
    eng_chg_inode(c, parent, -1, 0);
    size_t n = strlen(name);
    struct eng_chg *g = n <= SFS_NAME_MAX ? tail_with_room(c->chg, true) : NULL;
    if (!g)
        return;   /* the parent's attributes still go */
    g->entry[g->nentries].parent = parent;
    memcpy(g->entry[g->nentries].name, name, n + 1);
    g->nentries++;
}

void eng_chg_release(struct eng_chg *chg)
{
    struct eng_chg *g = chg->next;
    while (g) {
        struct eng_chg *n = g->next;
        free(g);
        g = n;
    }
    chg->next = NULL;
    chg->ninodes = chg->nentries = 0;
}

/* A fallocate changed ino from c->off on: collapse and insert move all
 * that follows and change the size, so "from off to the end" (a watcher
 * that keeps its own size — the mount's writeback cache — takes the
 * device's, smaller or larger); otherwise the range up to the new size,
 * so that such a watcher raises it when the file grew, or from off to the
 * end when the file ends before off. */
static void note_fallocate(struct engine *e, struct eng_cmd *c, uint64_t ino)
{
    if (c->flags & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) {
        eng_chg_inode(c, ino, (int64_t)c->off, 0);
        return;
    }
    struct sfs_attr a;
    bool sized = sfs_getattr(e->fs, ino, &a) == 0 && a.size > c->off;
    eng_chg_inode(c, ino, (int64_t)c->off, sized ? (int64_t)(a.size - c->off) : 0);
}

/* Data ops on handles; path ops record their own changes. */
void eng_note_changes(struct engine *e, struct eng_cmd *c)
{
    struct hdl h;
    switch (c->op) {
    case ENG_OP_WRITE:
        if (c->ret > 0 && !hdl_get(eng_hdl(e, c), c->fh, &h))
            eng_chg_inode(c, h.ino, (int64_t)c->off, c->ret);
        break;
    case ENG_OP_APPEND:
        if (c->ret > 0 && !hdl_get(eng_hdl(e, c), c->fh, &h))
            eng_chg_inode(c, h.ino, (int64_t)c->out_off, c->ret);
        break;
    case ENG_OP_FALLOCATE:
        if (c->ret == 0 && !hdl_get(eng_hdl(e, c), c->fh, &h))
            note_fallocate(e, c, h.ino);
        break;
    case ENG_OP_FTRUNCATE:
    case ENG_OP_SETATTR:
        eng_chg_inode(c, c->ino, 0, 0);
        break;
    default:
        break;
    }
}

void eng_set_watch(struct engine *e, const struct eng_watch *w)
{
    pthread_rwlock_wrlock(&e->watch_lock);
    if (w)
        e->watch = *w;
    __atomic_store_n(&e->watching, w != NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&e->watch_wb, w && w->writeback, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&e->watch_lock);
}

void *eng_watch_writeback(struct engine *e, unsigned ncmds)
{
    if (!__atomic_load_n(&e->watch_wb, __ATOMIC_RELAXED))
        return NULL;   /* the common case: no lock */
    void *hold = NULL;
    pthread_rwlock_rdlock(&e->watch_lock);
    if (e->watch_wb)
        hold = e->watch.writeback(e->watch.arg, ncmds);
    pthread_rwlock_unlock(&e->watch_lock);
    return hold;
}

void eng_cmd_posted(struct engine *e, struct eng_cmd *c)
{
    void *hold = c->hold;
    if (!hold)
        return;
    c->hold = NULL;
    /* A watcher cleared meanwhile (shutdown, after the unmount) keeps its
     * hold: the kernel's requests it parks fail with the connection. */
    pthread_rwlock_rdlock(&e->watch_lock);
    if (e->watch_wb && e->watch.unhold)
        e->watch.unhold(e->watch.arg, hold);
    pthread_rwlock_unlock(&e->watch_lock);
}

/* Whether the watcher knows anything in one record; watch_lock held. */
static bool record_known(struct engine *e, const struct eng_chg *g)
{
    for (unsigned i = 0; i < g->ninodes; i++)
        if (e->watch.known(e->watch.arg, g->inode[i].ino))
            return true;
    for (unsigned i = 0; i < g->nentries; i++)
        if (e->watch.known(e->watch.arg, g->entry[i].parent))
            return true;
    return false;
}

bool eng_chg_pending(struct engine *e, const struct eng_chg *chg)
{
    if (!chg || (!chg->ninodes && !chg->nentries) ||
        !__atomic_load_n(&e->watching, __ATOMIC_RELAXED))
        return false;
    bool hit = false;
    pthread_rwlock_rdlock(&e->watch_lock);
    for (const struct eng_chg *g = chg; e->watching && !hit && g; g = g->next)
        hit = record_known(e, g);
    pthread_rwlock_unlock(&e->watch_lock);
    return hit;
}

/* Sends one record's invalidations; watch_lock held. */
static void record_flush(struct engine *e, const struct eng_chg *g)
{
    const struct eng_watch *w = &e->watch;
    for (unsigned i = 0; i < g->nentries; i++)
        if (w->known(w->arg, g->entry[i].parent))
            w->inval_entry(w->arg, g->entry[i].parent, g->entry[i].name);
    for (unsigned i = 0; i < g->ninodes; i++)
        if (w->known(w->arg, g->inode[i].ino))
            w->inval_inode(w->arg, g->inode[i].ino, g->inode[i].off, g->inode[i].len);
}

void eng_chg_flush(struct engine *e, const struct eng_chg *chg)
{
    pthread_rwlock_rdlock(&e->watch_lock);
    for (const struct eng_chg *g = chg; e->watching && g; g = g->next)
        record_flush(e, g);
    pthread_rwlock_unlock(&e->watch_lock);
}

/* device/engine_watch.c - changes made through one door, reported to a
 * door that caches (the FUSE front end): recording (eng_chg_*), the
 * cheap "does anyone cache this" test, and the blocking flush. */
#include "device/engine_int.h"

#include <string.h>

void eng_chg_inode(struct eng_cmd *c, uint64_t ino, int64_t off, int64_t len)
{
    struct eng_chg *g = c->chg;
    if (!g)
        return;
    for (unsigned i = 0; i < g->ninodes; i++) {
        if (g->inode[i].ino != ino)
            continue;
        if (off >= 0 && g->inode[i].off >= 0) {   /* widen to cover both */
            g->inode[i].off = 0;
            g->inode[i].len = 0;
        } else if (off >= 0) {
            g->inode[i].off = off;
            g->inode[i].len = len;
        }
        return;
    }
    if (g->ninodes == ENG_CHG_INODES) {   /* full: the whole first inode */
        g->inode[0].off = 0;
        g->inode[0].len = 0;
        return;
    }
    g->inode[g->ninodes].ino = ino;
    g->inode[g->ninodes].off = off;
    g->inode[g->ninodes].len = len;
    g->ninodes++;
}

void eng_chg_entry(struct eng_cmd *c, uint64_t parent, const char *name)
{
    struct eng_chg *g = c->chg;
    if (!g)
        return;
    eng_chg_inode(c, parent, -1, 0);
    size_t n = strlen(name);
    if (g->nentries == ENG_CHG_ENTRIES || n > SFS_NAME_MAX)
        return;   /* callers record at most ENG_CHG_ENTRIES */
    g->entry[g->nentries].parent = parent;
    memcpy(g->entry[g->nentries].name, name, n + 1);
    g->nentries++;
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
    pthread_rwlock_unlock(&e->watch_lock);
}

bool eng_chg_pending(struct engine *e, const struct eng_chg *chg)
{
    if (!chg || (!chg->ninodes && !chg->nentries) ||
        !__atomic_load_n(&e->watching, __ATOMIC_RELAXED))
        return false;
    bool hit = false;
    pthread_rwlock_rdlock(&e->watch_lock);
    for (unsigned i = 0; e->watching && !hit && i < chg->ninodes; i++)
        hit = e->watch.known(e->watch.arg, chg->inode[i].ino);
    for (unsigned i = 0; e->watching && !hit && i < chg->nentries; i++)
        hit = e->watch.known(e->watch.arg, chg->entry[i].parent);
    pthread_rwlock_unlock(&e->watch_lock);
    return hit;
}

void eng_chg_flush(struct engine *e, const struct eng_chg *chg)
{
    pthread_rwlock_rdlock(&e->watch_lock);
    if (e->watching) {
        const struct eng_watch *w = &e->watch;
        for (unsigned i = 0; i < chg->nentries; i++)
            if (w->known(w->arg, chg->entry[i].parent))
                w->inval_entry(w->arg, chg->entry[i].parent, chg->entry[i].name);
        for (unsigned i = 0; i < chg->ninodes; i++)
            if (w->known(w->arg, chg->inode[i].ino))
                w->inval_inode(w->arg, chg->inode[i].ino, chg->inode[i].off,
                               chg->inode[i].len);
    }
    pthread_rwlock_unlock(&e->watch_lock);
}

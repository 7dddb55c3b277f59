/*
 * device/media/media_fault.c - RAM medium with injected failures, torn writes and
 * power cuts (see media_fault.h for the model).
 *
 * Blocks live in a two-level table (chunks of CHUNK pointers) so that a
 * large, mostly empty medium costs little memory. Each block has a durable
 * copy and, if written since the last flush, a volatile copy; `vol_list`
 * remembers which blocks have one.
 *
 * Block buffers a flush frees (the durable copies it replaces) go to a
 * free list and serve the next writes: a write-heavy run would otherwise
 * malloc and free a block per write, and glibc returns the freed memory to
 * the kernel, which then faults it in again. A small medium mallocs its
 * blocks and keeps at most SPARE_MAX spares. A large one (at least
 * SLAB_MEDIUM blocks: benchmarks, big images) carves them from 2 MiB
 * slabs the kernel may back with huge pages (one page fault per 512
 * blocks instead of one per block as the medium fills), keeps every
 * spare, and frees only whole slabs, when it closes. media_fault_prefault
 * carves slabs ahead of use and zeroes them, into a list of its own: a
 * write of part of a block never written takes one of those and needs
 * no zeroing of the rest.
 */
#include "device/media/media_fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK 1024u
#define SPARE_MAX 4096u          /* block buffers kept for reuse (malloc'd blocks) */
#define SLAB_BYTES (2u << 20)    /* a huge page */
#define SLAB_MEDIUM (1ull << 18) /* blocks (1 GiB): from here on, slabs */

struct slot {
    uint8_t *dur;   /* durable contents, NULL = zeros */
    uint8_t *vol;   /* unflushed contents, NULL = none */
};

struct media_fault {
    pthread_mutex_t mu;
    int handles;                /* open handles sharing this disk */
    struct slot **chunks;       /* nblocks / CHUNK (rounded up) entries */
    uint64_t nchunks;
    uint64_t *vol_list;         /* blocks with a volatile copy */
    uint64_t vol_n, vol_cap;
    void **spare;               /* free block buffers */
    uint64_t nspare, spare_cap;
    void **zspare;              /* free block buffers known to hold zeros (slabs) */
    uint64_t nzspare, zspare_cap;
    bool slabbed;               /* blocks come from slabs (SLAB_MEDIUM) */
    void **slabs;               /* every slab, freed at close */
    uint64_t nslabs, slabs_cap;
    uint8_t *slab_next;         /* the current slab's first unused block */
    unsigned slab_left;         /* blocks left in it */
    uint64_t writes, reads;
    uint64_t fail_w, fail_r;    /* armed failure indexes, 0 = none */
    int fail_w_err, fail_r_err;
    bool sticky, dead;
    uint64_t cut_n, tear;       /* armed cut, 0 = none */
    bool cut;
};

/* A handle: what callers hold. Several may share one disk. */
struct handle {
    struct media m;
    struct media_fault *f;
};

static struct media_fault *to_f(struct media *m)
{
    return ((struct handle *)m)->f;
}

static struct slot *slot_at(struct media_fault *f, uint64_t blk, bool create)
{
    struct slot **c = &f->chunks[blk / CHUNK];
    if (!*c) {
        if (!create)
            return NULL;
        *c = calloc(CHUNK, sizeof(struct slot));
        if (!*c)
            return NULL;
    }
    return &(*c)[blk % CHUNK];
}

static int range_ok(const struct media *m, uint64_t blk, uint64_t n)
{
    return blk <= m->nblocks && n <= m->nblocks - blk;
}

static void read_block(struct media_fault *f, uint64_t blk, uint8_t *out)
{
    struct slot *s = slot_at(f, blk, false);
    const uint8_t *src = s ? (s->vol ? s->vol : s->dur) : NULL;
    if (src)
        memcpy(out, src, MEDIA_BLOCK_SIZE);
    else
        memset(out, 0, MEDIA_BLOCK_SIZE);
}

static int fault_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    struct media_fault *f = to_f(m);
    if (!range_ok(m, blk, n))
        return -EINVAL;
    pthread_mutex_lock(&f->mu);
    int r = 0;
    if (++f->reads == f->fail_r)
        r = -f->fail_r_err;
    for (uint32_t i = 0; !r && i < n; i++)
        read_block(f, blk + i, (uint8_t *)buf + (size_t)i * MEDIA_BLOCK_SIZE);
    pthread_mutex_unlock(&f->mu);
    return r;
}

/* Grows an array of pointers to hold n + 1. Returns false when out of memory. */
static bool room_for_one(void ***v, uint64_t n, uint64_t *cap)
{
    if (n < *cap)
        return true;
    uint64_t c = *cap ? *cap * 2 : 256;
    void **p = realloc(*v, c * sizeof(*p));
    if (!p)
        return false;
    *v = p;
    *cap = c;
    return true;
}

/* The next block of the current slab, opening a new slab when it is used
 * up (under mu). */
static uint8_t *slab_block(struct media_fault *f)
{
    if (!f->slab_left) {
        void *p = NULL;
        if (!room_for_one(&f->slabs, f->nslabs, &f->slabs_cap) ||
            posix_memalign(&p, SLAB_BYTES, SLAB_BYTES))
            return NULL;
        madvise(p, SLAB_BYTES, MADV_HUGEPAGE);   /* a hint: without it, 4 KiB pages */
        f->slabs[f->nslabs++] = p;
        f->slab_next = p;
        f->slab_left = SLAB_BYTES / MEDIA_BLOCK_SIZE;
    }
    uint8_t *b = f->slab_next;
    f->slab_next += MEDIA_BLOCK_SIZE;
    f->slab_left--;
    return b;
}

/* A block buffer: a spare or a new one (under mu). */
static uint8_t *block_new(struct media_fault *f)
{
    if (f->nspare)
        return f->spare[--f->nspare];
    if (f->nzspare)
        return f->zspare[--f->nzspare];
    return f->slabbed ? slab_block(f) : malloc(MEDIA_BLOCK_SIZE);
}

/* A block buffer of zeros (under mu). */
static uint8_t *block_new_zero(struct media_fault *f)
{
    if (f->nzspare)
        return f->zspare[--f->nzspare];
    uint8_t *b = block_new(f);
    if (b)
        memset(b, 0, MEDIA_BLOCK_SIZE);
    return b;
}

/* Gives a block buffer back (under mu; NULL is fine). A slab's block
 * that finds no room in the list stays unused until the slab goes. */
static void block_free(struct media_fault *f, uint8_t *b)
{
    if (!b)
        return;
    bool room = f->slabbed ? room_for_one(&f->spare, f->nspare, &f->spare_cap)
                           : f->nspare < f->spare_cap;
    if (room)
        f->spare[f->nspare++] = b;
    else if (!f->slabbed)
        free(b);
}

/* Stores len bytes at byte off of blk's volatile copy (off + len <= one
 * block). */
static int store_block(struct media_fault *f, uint64_t blk, uint32_t off, const uint8_t *src,
                       size_t len)
{
    struct slot *s = slot_at(f, blk, true);
    if (!s)
        return -ENOMEM;
    if (!s->vol) {
        if (f->vol_n == f->vol_cap) {
            uint64_t cap = f->vol_cap ? f->vol_cap * 2 : 256;
            uint64_t *l = realloc(f->vol_list, cap * sizeof(*l));
            if (!l)
                return -ENOMEM;
            f->vol_list = l;
            f->vol_cap = cap;
        }
        /* A part, or a torn write: the rest stays (zeros if never written). */
        bool part = len < MEDIA_BLOCK_SIZE;
        uint8_t *v = part && !s->dur ? block_new_zero(f) : block_new(f);
        if (!v)
            return -ENOMEM;
        if (part && s->dur)
            memcpy(v, s->dur, MEDIA_BLOCK_SIZE);
        s->vol = v;
        f->vol_list[f->vol_n++] = blk;
    }
    memcpy(s->vol + off, src, len);
    return 0;
}

/* Applies the first `limit` bytes of an n-block write. */
static int apply_write(struct media_fault *f, uint64_t blk, uint32_t n, const uint8_t *buf,
                       uint64_t limit)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = (uint64_t)i * MEDIA_BLOCK_SIZE;
        if (off >= limit)
            break;
        size_t len = limit - off < MEDIA_BLOCK_SIZE ? (size_t)(limit - off) : MEDIA_BLOCK_SIZE;
        int r = store_block(f, blk + i, 0, buf + off, len);
        if (r)
            return r;
    }
    return 0;
}

/* Decides what happens to write number f->writes; returns bytes to apply
 * (UINT64_MAX = all), or sets *err. */
static uint64_t write_fate(struct media_fault *f, int *err)
{
    *err = 0;
    if (f->dead) {
        *err = -f->fail_w_err;
        return 0;
    }
    if (f->writes == f->fail_w) {
        *err = -f->fail_w_err;
        f->dead = f->sticky;
        return 0;
    }
    if (f->cut)
        return 0;
    if (f->cut_n && f->writes == f->cut_n) {
        f->cut = true;
        return f->tear;
    }
    return UINT64_MAX;
}

/* One write of the model: counted, then failed, torn or dropped
 * (write_fate). len > 0: bytes [off, off + len) of block blk (a tear
 * keeps the first bytes of the part); else n whole blocks. */
static int do_write(struct media *m, uint64_t blk, uint32_t n, uint32_t off, uint32_t len,
                    const uint8_t *buf)
{
    struct media_fault *f = to_f(m);
    if (!range_ok(m, blk, n))
        return -EINVAL;
    pthread_mutex_lock(&f->mu);
    f->writes++;
    int err;
    uint64_t limit = write_fate(f, &err);
    if (!err && limit && len)
        err = store_block(f, blk, off, buf, limit < len ? (size_t)limit : len);
    else if (!err && limit)
        err = apply_write(f, blk, n, buf, limit);
    pthread_mutex_unlock(&f->mu);
    return err;
}

static int fault_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    return do_write(m, blk, n, 0, 0, buf);
}

static int fault_write_part(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                            const void *buf)
{
    return do_write(m, blk, 1, off, len, buf);
}

static int fault_flush(struct media *m)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    int r = f->dead ? -f->fail_w_err : 0;
    for (uint64_t i = 0; !r && !f->cut && i < f->vol_n; i++) {
        struct slot *s = slot_at(f, f->vol_list[i], false);
        block_free(f, s->dur);
        s->dur = s->vol;
        s->vol = NULL;
    }
    if (!r && !f->cut)
        f->vol_n = 0;
    pthread_mutex_unlock(&f->mu);
    return r;
}

static int fault_discard(struct media *m, uint64_t blk, uint64_t n)
{
    static const uint8_t zeros[MEDIA_BLOCK_SIZE];
    for (uint64_t i = 0; i < n; i++) {
        int r = do_write(m, blk + i, 1, 0, 0, zeros);
        if (r)
            return r;
    }
    return 0;
}

static void disk_free(struct media_fault *f)
{
    for (uint64_t c = 0; c < f->nchunks; c++) {
        if (!f->chunks[c])
            continue;
        for (unsigned i = 0; !f->slabbed && i < CHUNK; i++) {
            free(f->chunks[c][i].dur);
            free(f->chunks[c][i].vol);
        }
        free(f->chunks[c]);
    }
    free(f->chunks);
    free(f->vol_list);
    while (!f->slabbed && f->nspare)
        free(f->spare[--f->nspare]);
    free(f->spare);
    free(f->zspare);   /* (only slabs: prefault) */
    for (uint64_t i = 0; i < f->nslabs; i++)
        free(f->slabs[i]);
    free(f->slabs);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static void fault_close(struct media *m)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    bool last = --f->handles == 0;
    pthread_mutex_unlock(&f->mu);
    if (last)
        disk_free(f);
    free(m);
}

static const struct media_ops fault_ops = {
    .read = fault_read,
    .write = fault_write,
    .flush = fault_flush,
    .discard = fault_discard,
    .close = fault_close,
    .write_part = fault_write_part,
};

static struct media *new_handle(struct media_fault *f, uint64_t nblocks)
{
    struct handle *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->m.ops = &fault_ops;
    h->m.nblocks = nblocks;
    h->f = f;
    f->handles++;
    return &h->m;
}

int media_fault_create(uint64_t nblocks, struct media **out)
{
    struct media_fault *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->nchunks = (nblocks + CHUNK - 1) / CHUNK;
    f->chunks = calloc(f->nchunks ? f->nchunks : 1, sizeof(*f->chunks));
    f->slabbed = nblocks >= SLAB_MEDIUM;
    if (!f->slabbed) {   /* a fixed list (NULL: no reuse, still correct) */
        f->spare = malloc(SPARE_MAX * sizeof(*f->spare));
        f->spare_cap = f->spare ? SPARE_MAX : 0;
    }
    struct media *m = f->chunks ? new_handle(f, nblocks) : NULL;
    if (!m) {
        free(f->chunks);
        free(f->spare);
        free(f);
        return -ENOMEM;
    }
    pthread_mutex_init(&f->mu, NULL);
    *out = m;
    return 0;
}

int media_fault_prefault(struct media *m, uint64_t nblocks)
{
    struct media_fault *f = to_f(m);
    int r = 0;
    pthread_mutex_lock(&f->mu);
    for (uint64_t i = 0; f->slabbed && i < nblocks; i++) {
        if (!room_for_one(&f->zspare, f->nzspare, &f->zspare_cap)) {
            r = -ENOMEM;
            break;
        }
        uint8_t *b = slab_block(f);
        if (!b) {
            r = -ENOMEM;
            break;
        }
        memset(b, 0, MEDIA_BLOCK_SIZE);   /* the first touch, now */
        f->zspare[f->nzspare++] = b;
    }
    pthread_mutex_unlock(&f->mu);
    return r;
}

int media_fault_open_again(struct media *m, struct media **out)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    struct media *h = new_handle(f, m->nblocks);
    pthread_mutex_unlock(&f->mu);
    if (!h)
        return -ENOMEM;
    *out = h;
    return 0;
}

void media_fault_fail_write(struct media *m, uint64_t n, int err, bool sticky)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    f->fail_w = n;
    f->fail_w_err = err;
    f->sticky = sticky;
    f->dead = false;
    pthread_mutex_unlock(&f->mu);
}

void media_fault_fail_read(struct media *m, uint64_t n, int err)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    f->fail_r = n;
    f->fail_r_err = err;
    pthread_mutex_unlock(&f->mu);
}

void media_fault_cut_after(struct media *m, uint64_t n, uint64_t tear_bytes)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    f->cut_n = n;
    f->tear = tear_bytes;
    f->cut = n != 0 && f->writes >= n;
    pthread_mutex_unlock(&f->mu);
}

uint64_t media_fault_writes(struct media *m)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    uint64_t n = f->writes;
    pthread_mutex_unlock(&f->mu);
    return n;
}

uint64_t media_fault_reads(struct media *m)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    uint64_t n = f->reads;
    pthread_mutex_unlock(&f->mu);
    return n;
}

bool media_fault_is_cut(struct media *m)
{
    struct media_fault *f = to_f(m);
    pthread_mutex_lock(&f->mu);
    bool c = f->cut;
    pthread_mutex_unlock(&f->mu);
    return c;
}

/* splitmix64: a tiny deterministic generator for KEEP_RANDOM. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int copy_block(struct media_fault *dst, uint64_t blk, const uint8_t *src)
{
    struct slot *d = slot_at(dst, blk, true);
    if (!d)
        return -ENOMEM;
    if (!d->dur && !(d->dur = block_new(dst)))
        return -ENOMEM;
    memcpy(d->dur, src, MEDIA_BLOCK_SIZE);
    return 0;
}

static int snapshot_fill(struct media_fault *f, struct media_fault *d,
                         enum media_fault_keep keep, uint64_t seed)
{
    for (uint64_t c = 0; c < f->nchunks; c++) {
        for (unsigned i = 0; f->chunks[c] && i < CHUNK; i++) {
            const uint8_t *src = f->chunks[c][i].dur;
            if (src && copy_block(d, c * CHUNK + i, src))
                return -ENOMEM;
        }
    }
    for (uint64_t i = 0; i < f->vol_n; i++) {
        uint64_t blk = f->vol_list[i];
        bool take = keep == MEDIA_FAULT_KEEP_ALL ||
                    (keep == MEDIA_FAULT_KEEP_RANDOM && (next_rand(&seed) & 1));
        if (take && copy_block(d, blk, slot_at(f, blk, false)->vol))
            return -ENOMEM;
    }
    return 0;
}

int media_fault_snapshot(struct media *m, enum media_fault_keep keep, uint64_t seed,
                         struct media **out)
{
    struct media_fault *f = to_f(m);
    struct media *dm;
    int r = media_fault_create(m->nblocks, &dm);
    if (r)
        return r;
    pthread_mutex_lock(&f->mu);
    r = snapshot_fill(f, to_f(dm), keep, seed);
    pthread_mutex_unlock(&f->mu);
    if (r) {
        fault_close(dm);
        return r;
    }
    *out = dm;
    return 0;
}

/*
 * device/storagefs/jdata.c - file data through the journal (see jdata.h).
 */
#include "device/storagefs/jdata.h"

#include <string.h>

#include "common/minmax.h"
#include "device/storagefs/bcache.h"
#include "device/storagefs/journal.h"
#include "device/storagefs/sfs_int.h"

#define BS ((uint64_t)SFS_BSIZE)

bool jdata_hot(struct sfs *fs, const struct sfs_inode *ip)
{
    if (fs->overlay_data)
        return true;
    uint64_t seq = __atomic_load_n(&ip->jdata_seq, __ATOMIC_RELAXED);
    return seq && fs->j && seq > jnl_checkpointed(fs->j);
}

bool jdata_needed(struct sfs *fs, const struct jnl_handle *h, const struct sfs_inode *ip)
{
    return (h && (h->flags & JNL_DATA)) || jdata_hot(fs, ip);
}

int jdata_write(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *ip, uint64_t pblk,
                uint32_t boff, const uint8_t *src, size_t n)
{
    /* Hot before the first image exists: a checkpoint racing with us must
     * not find the file cold while one of its blocks is in the cache. The
     * handle's transaction cannot be checkpointed before h stops. */
    __atomic_store_n(&ip->jdata_seq, h->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&fs->jdata_last, h->seq, __ATOMIC_RELAXED);
    ip->tail_pblk = 0;   /* file.c's copy of a block would go stale */
    while (n) {
        size_t k = (size_t)min64(n, BS - boff);
        struct bbuf *b;
        int r = bcache_get_data(fs->bc, pblk, boff == 0 && k == BS, &b);
        if (r)
            return r;
        if (src)
            memcpy(b->data + boff, src, k);
        else
            memset(b->data + boff, 0, k);
        jnl_dirty_buf(h, b);
        bcache_put(fs->bc, b);
        src = src ? src + k : NULL;
        n -= k;
        pblk++;
        boff = 0;
    }
    return 0;
}

/* Reads the run [pblk, pblk + nb) of whole blocks from the media. */
static int media_run(struct sfs *fs, uint64_t pblk, uint64_t nb, uint8_t *dst)
{
    return nb ? media_read(fs->m, pblk, (uint32_t)nb, dst) : 0;
}

int jdata_read(struct sfs *fs, uint64_t pblk, uint32_t boff, uint8_t *dst, size_t n)
{
    uint8_t bounce[SFS_BSIZE];
    bool any = fs->overlay_data;   /* read-only overlay: images of any kind */
    uint64_t run = 0;              /* whole uncached blocks waiting for one read */
    uint8_t *run_dst = dst;
    while (n) {
        size_t k = (size_t)min64(n, BS - boff);
        bool cached = bcache_read_cached(fs->bc, pblk, boff, dst, k, any);
        if (cached || k < BS) {
            int r = media_run(fs, pblk - run, run, run_dst);
            run = 0;
            if (!r && !cached && (r = media_read(fs->m, pblk, 1, bounce)) == 0)
                memcpy(dst, bounce + boff, k);
            if (r)
                return r;
        } else if (run++ == 0) {
            run_dst = dst;
        }
        dst += k;
        n -= k;
        pblk++;
        boff = 0;
    }
    return media_run(fs, pblk - run, run, run_dst);
}

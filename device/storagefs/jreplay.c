/*
 * device/storagefs/jreplay.c - journal scan and replay (see jreplay.h).
 */
#include "device/storagefs/jreplay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/corrupt.h"
#include "common/crc32c.h"
#include "common/le.h"

struct ring {
    struct media *m;
    const struct sfs_sb *sb;
    uint64_t start;              /* block of position 0 */
    uint32_t size;
};

static uint64_t pos_blk(const struct ring *rg, uint64_t pos)
{
    return rg->start + pos % rg->size;
}

/* Reads n ring blocks from pos (wrapping). */
static int ring_read(const struct ring *rg, uint64_t pos, uint64_t n, uint8_t *buf)
{
    for (uint64_t i = 0; i < n;) {
        uint64_t p = (pos + i) % rg->size;
        uint64_t run = rg->size - p < n - i ? rg->size - p : n - i;
        int r = media_read(rg->m, rg->start + p, (uint32_t)run, buf + i * SFS_BSIZE);
        if (r)
            return r;
        i += run;
    }
    return 0;
}

/* ---- image map --------------------------------------------------------------- */

static size_t slot_of(const struct jscan *s, uint64_t blk)
{
    size_t i = (size_t)((blk * 0x9E3779B97F4A7C15ull) >> 20) & (s->index_cap - 1);
    while (s->index[i] >= 0 && s->img[s->index[i]].blk != blk)
        i = (i + 1) & (s->index_cap - 1);
    return i;
}

static int add_image(struct jscan *s, uint64_t blk, const uint8_t *data)
{
    size_t i = slot_of(s, blk);
    if (s->index[i] >= 0) {
        memcpy(s->img[s->index[i]].data, data, SFS_BSIZE);
        return 0;
    }
    if (s->nimg == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct jimage *v = realloc(s->img, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->img = v;
        s->cap = cap;
    }
    uint8_t *copy = malloc(SFS_BSIZE);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, data, SFS_BSIZE);
    s->img[s->nimg] = (struct jimage){blk, copy};
    s->index[i] = (int64_t)s->nimg++;
    return 0;
}

static int cmp_img(const void *a, const void *b)
{
    uint64_t x = ((const struct jimage *)a)->blk, y = ((const struct jimage *)b)->blk;
    return x < y ? -1 : x > y;
}

const uint8_t *jscan_find(const struct jscan *s, uint64_t blk)
{
    size_t lo = 0, hi = s->nimg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->img[mid].blk < blk)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nimg && s->img[lo].blk == blk ? s->img[lo].data : NULL;
}

void jscan_free(struct jscan *s)
{
    for (size_t i = 0; i < s->nimg; i++)
        free(s->img[i].data);
    free(s->img);
    free(s->index);
    s->img = NULL;
    s->index = NULL;
    s->nimg = s->cap = 0;
}

/* ---- one transaction ---------------------------------------------------------- */

static int stop(struct jscan *s, enum jscan_stop why, const char *fmt, unsigned long long a,
                unsigned long long b)
{
    s->stop = why;
    snprintf(s->why, sizeof(s->why), fmt, a, b);
    return 0;
}

static bool target_ok(const struct sfs_sb *sb, uint64_t t)
{
    bool in_journal = t >= sb->journal_start && t < sb->journal_start + sb->journal_blocks;
    return t < sb->nblocks && !in_journal && t != sb->backup_blkno;
}

/* Checks descriptor number idx at ring position pos. */
static bool desc_ok(const struct ring *rg, const uint8_t *d, uint64_t pos, uint64_t seq,
                    uint32_t idx, uint32_t count)
{
    if (sfs_block_verify(d, SFS_MAGIC_JDESC, pos_blk(rg, pos)) != 0)
        return false;
    if (le64_get(d + JD_JID) != rg->sb->journal_id || le64_get(d + JD_SEQ) != seq ||
        le16_get(d + JD_INDEX) != idx || le32_get(d + JD_COUNT) != count ||
        le16_get(d + JD_TYPE) != SFS_TXN_METADATA)
        return false;
    for (uint32_t i = 0; i < count; i++)
        if (!target_ok(rg->sb, le64_get(d + JD_TARGETS + 8 * i)))
            return false;
    return true;
}

static bool commit_ok(const struct ring *rg, const uint8_t *c, uint64_t pos, uint64_t seq)
{
    return sfs_block_verify(c, SFS_MAGIC_JCOMMIT, pos_blk(rg, pos)) == 0 &&
           le64_get(c + JC_JID) == rg->sb->journal_id && le64_get(c + JC_SEQ) == seq;
}

/* Validates the whole log of a transaction (descriptors, crc). */
static bool log_ok(const struct ring *rg, const uint8_t *buf, uint64_t pos, uint64_t seq,
                   uint32_t total, uint64_t nblk)
{
    const uint8_t *c = buf + (nblk - 1) * SFS_BSIZE;
    uint64_t ndesc = nblk - 1 - total;
    if (le32_get(c + JC_NBLOCKS) != total || le32_get(c + JC_NDESC) != ndesc ||
        le16_get(c + JC_TYPE) != SFS_TXN_METADATA)
        return false;
    if (le32_get(c + JC_TXN_CRC) != crc32c(0, buf, (nblk - 1) * SFS_BSIZE))
        return false;
    for (uint64_t k = 0, i = 0, idx = 0; i < total || idx == 0; idx++) {
        uint32_t cnt = total - i < SFS_JD_MAX ? (uint32_t)(total - i) : SFS_JD_MAX;
        if (!desc_ok(rg, buf + k * SFS_BSIZE, pos + k, seq, (uint32_t)idx, cnt))
            return false;
        k += 1 + cnt;
        i += cnt;
    }
    return true;
}

static int keep_images(struct jscan *s, const uint8_t *buf, uint32_t total)
{
    for (uint64_t k = 0, i = 0; i < total;) {
        const uint8_t *d = buf + k * SFS_BSIZE;
        uint32_t cnt = le32_get(d + JD_COUNT);
        for (uint32_t c = 0; c < cnt; c++) {
            int r = add_image(s, le64_get(d + JD_TARGETS + 8 * c), d + (c + 1) * SFS_BSIZE);
            if (r)
                return r;
        }
        k += 1 + cnt;
        i += cnt;
    }
    return 0;
}

/* A first descriptor that fails its checksum but names this journal and
 * sequence: if a valid commit record sits where its (untrusted) length
 * says the transaction ends, the transaction was committed and the
 * descriptor is corrupt; otherwise it is a torn tail. */
static void check_bad_first_desc(const struct ring *rg, struct jscan *s, const uint8_t *d,
                                 uint64_t pos, uint64_t seq)
{
    if (le32_get(d + BH_MAGIC) != SFS_MAGIC_JDESC || le64_get(d + BH_BLKNO) != pos_blk(rg, pos) ||
        le64_get(d + JD_JID) != rg->sb->journal_id || le64_get(d + JD_SEQ) != seq)
        return;
    uint64_t nblk = sfs_txn_blocks(le32_get(d + JD_TOTAL));
    uint8_t *c = nblk <= rg->size ? malloc(SFS_BSIZE) : NULL;
    if (c && ring_read(rg, pos + nblk - 1, 1, c) == 0 && commit_ok(rg, c, pos + nblk - 1, seq))
        stop(s, JSCAN_CORRUPT, "transaction %llu at journal block %llu is committed but its "
             "descriptor fails its checksum (corrupt), discarded", (unsigned long long)seq,
             (unsigned long long)pos_blk(rg, pos));
    else
        stop(s, JSCAN_TORN, "transaction %llu at journal block %llu has a torn descriptor, "
             "discarded", (unsigned long long)seq, (unsigned long long)pos_blk(rg, pos));
    free(c);
}

/* Reads the transaction seq at pos. Returns 1 and *nblk if complete, 0
 * when the scan ends here (s->stop says why), or -errno. */
static int scan_txn(const struct ring *rg, struct jscan *s, uint64_t pos, uint64_t seq,
                    uint64_t *nblk)
{
    uint8_t *buf = malloc(SFS_BSIZE);
    if (!buf)
        return -ENOMEM;
    int r = ring_read(rg, pos, 1, buf);
    if (r || sfs_block_verify(buf, SFS_MAGIC_JDESC, pos_blk(rg, pos)) ||
        le64_get(buf + JD_JID) != rg->sb->journal_id || le64_get(buf + JD_SEQ) != seq ||
        le16_get(buf + JD_INDEX) != 0) {
        if (!r)
            check_bad_first_desc(rg, s, buf, pos, seq);
        free(buf);
        cisc_corrupt_clear();
        return r ? r : 0;
    }
    uint32_t total = le32_get(buf + JD_TOTAL);
    *nblk = sfs_txn_blocks(total);
    if (*nblk > rg->size) {
        free(buf);
        return stop(s, JSCAN_CORRUPT, "transaction %llu at journal block %llu claims too many "
                    "blocks", (unsigned long long)seq, (unsigned long long)pos_blk(rg, pos));
    }
    uint8_t *all = realloc(buf, *nblk * SFS_BSIZE);
    if (!all) {
        free(buf);
        return -ENOMEM;
    }
    r = ring_read(rg, pos + 1, *nblk - 1, all + SFS_BSIZE);
    int complete = 0;
    unsigned long long q = (unsigned long long)seq, at = (unsigned long long)pos_blk(rg, pos);
    if (r == 0 && !commit_ok(rg, all + (*nblk - 1) * SFS_BSIZE, pos + *nblk - 1, seq))
        stop(s, JSCAN_TORN, "transaction %llu at journal block %llu has no commit record "
             "(torn), discarded", q, at);
    else if (r == 0 && !log_ok(rg, all, pos, seq, total, *nblk))
        stop(s, JSCAN_CORRUPT, "transaction %llu at journal block %llu is committed but "
             "fails validation (corrupt), discarded", q, at);
    else if (r == 0 && (r = keep_images(s, all, total)) == 0)
        complete = 1;
    cisc_corrupt_clear();
    free(all);
    return r ? r : complete;
}

/* ---- whole ring ---------------------------------------------------------------- */

static int check_header(const struct sfs_sb *sb, const uint8_t *b, struct sfs_jhdr *h)
{
    int r = sfs_block_verify(b, SFS_MAGIC_JHDR, sb->journal_start);
    if (r)
        return r;
    sfs_jhdr_decode(b, h);
    if (h->jid != sb->journal_id)
        return CISC_CORRUPT("block %llu (journal header): journal id does not match the "
                            "superblock", (unsigned long long)sb->journal_start);
    if (h->ring != sb->journal_blocks - 1 || h->start_pos >= h->ring)
        return CISC_CORRUPT("block %llu (journal header): bad ring geometry (ring %u, "
                            "start %u)", (unsigned long long)sb->journal_start, h->ring,
                            h->start_pos);
    return 0;
}

static int scan_init(struct jscan *s, const struct sfs_sb *sb)
{
    memset(s, 0, sizeof(*s));
    s->index_cap = 1;
    while (s->index_cap < 2 * sb->journal_blocks)
        s->index_cap *= 2;
    s->index = malloc(s->index_cap * sizeof(*s->index));
    if (!s->index)
        return -ENOMEM;
    memset(s->index, 0xff, s->index_cap * sizeof(*s->index));
    return 0;
}

int jscan_run(struct media *m, const struct sfs_sb *sb, struct jscan *s)
{
    int r = scan_init(s, sb);
    uint8_t *b = malloc(SFS_BSIZE);
    if (r || !b) {
        free(b);
        return -ENOMEM;
    }
    r = media_read(m, sb->journal_start, 1, b);
    if (!r)
        r = check_header(sb, b, &s->hdr);
    free(b);
    if (r)
        return r;
    struct ring rg = {m, sb, sb->journal_start + 1, s->hdr.ring};
    uint64_t pos = s->hdr.start_pos, seq = s->hdr.start_seq, used = 0, nblk = 0;
    while (used < rg.size && (r = scan_txn(&rg, s, pos, seq, &nblk)) == 1) {
        s->ntxn++;
        used += nblk;
        pos = (pos + nblk) % rg.size;
        seq++;
    }
    if (r < 0)
        return r;
    s->next_seq = seq;
    s->end_pos = (uint32_t)pos;
    if (s->nimg)
        qsort(s->img, s->nimg, sizeof(*s->img), cmp_img);
    return 0;
}

int jscan_apply(struct media *m, const struct jscan *s)
{
    for (size_t i = 0; i < s->nimg; i++) {
        int r = media_write(m, s->img[i].blk, 1, s->img[i].data);
        if (r)
            return r;
    }
    return s->nimg ? media_flush(m) : 0;
}

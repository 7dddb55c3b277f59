/*
 * device/storagefs/format.c - encode/decode and validation of the on-image
 * structures declared in format.h (version 1; see docs/FORMAT.md).
 */
#include "device/storagefs/format.h"

#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "common/corrupt.h"
#include "common/crc32c.h"
#include "common/le.h"

const char *sfs_kind_name(uint32_t magic)
{
    switch (magic) {
    case SFS_MAGIC_SUPER: return "superblock";
    case SFS_MAGIC_JHDR: return "journal header";
    case SFS_MAGIC_JDESC: return "journal descriptor";
    case SFS_MAGIC_JCOMMIT: return "journal commit";
    case SFS_MAGIC_BBITMAP: return "block bitmap";
    case SFS_MAGIC_IBITMAP: return "inode bitmap";
    case SFS_MAGIC_EXTENT: return "extent node";
    case SFS_MAGIC_DIR: return "directory node";
    case SFS_MAGIC_XATTR: return "xattr block";
    case SFS_MAGIC_XVALUE: return "xattr value block";
    case SFS_MAGIC_NONE: return "inode table";
    case SFS_MAGIC_DATA: return "file data block";
    default: return "unknown block";
    }
}

uint32_t sfs_block_crc(const uint8_t *b)
{
    return crc32c(0, b + 4, SFS_BSIZE - 4);
}

void sfs_block_seal(uint8_t *b, uint32_t magic, uint64_t blkno)
{
    le32_put(b + BH_MAGIC, magic);
    le64_put(b + BH_BLKNO, blkno);
    le32_put(b + BH_CRC, sfs_block_crc(b));
}

int sfs_block_verify(const uint8_t *b, uint32_t magic, uint64_t blkno)
{
    const char *kind = sfs_kind_name(magic);
    if (le32_get(b + BH_MAGIC) != magic)
        return CISC_CORRUPT("block %llu (%s): bad magic 0x%08x",
                            (unsigned long long)blkno, kind, le32_get(b + BH_MAGIC));
    if (le32_get(b + BH_CRC) != sfs_block_crc(b))
        return CISC_CORRUPT("block %llu (%s): checksum mismatch",
                            (unsigned long long)blkno, kind);
    if (le64_get(b + BH_BLKNO) != blkno)
        return CISC_CORRUPT("block %llu (%s): claims to be block %llu",
                            (unsigned long long)blkno, kind,
                            (unsigned long long)le64_get(b + BH_BLKNO));
    return 0;
}

/* ---- superblock ---------------------------------------------------------- */

void sfs_sb_encode(const struct sfs_sb *sb, uint8_t *b, uint64_t blkno)
{
    memset(b, 0, SFS_BSIZE);
    le32_put(b + SB_VERSION, sb->version);
    le32_put(b + SB_BLOCK_SIZE, sb->block_size);
    le32_put(b + SB_INODE_SIZE, sb->inode_size);
    le32_put(b + SB_STATE, sb->state);
    le64_put(b + SB_NBLOCKS, sb->nblocks);
    le64_put(b + SB_NINODES, sb->ninodes);
    memcpy(b + SB_UUID, sb->uuid, 16);
    le32_put(b + SB_FEAT_COMPAT, sb->feat_compat);
    le32_put(b + SB_FEAT_INCOMPAT, sb->feat_incompat);
    le32_put(b + SB_FEAT_RO_COMPAT, sb->feat_ro_compat);
    le32_put(b + SB_MOUNT_COUNT, sb->mount_count);
    le64_put(b + SB_JOURNAL_START, sb->journal_start);
    le64_put(b + SB_JOURNAL_BLOCKS, sb->journal_blocks);
    le64_put(b + SB_BBITMAP_START, sb->bbitmap_start);
    le64_put(b + SB_BBITMAP_BLOCKS, sb->bbitmap_blocks);
    le64_put(b + SB_IBITMAP_START, sb->ibitmap_start);
    le64_put(b + SB_IBITMAP_BLOCKS, sb->ibitmap_blocks);
    le64_put(b + SB_ITABLE_START, sb->itable_start);
    le64_put(b + SB_ITABLE_BLOCKS, sb->itable_blocks);
    le64_put(b + SB_DATA_START, sb->data_start);
    le64_put(b + SB_BACKUP_BLKNO, sb->backup_blkno);
    le64_put(b + SB_ORPHAN_HEAD, sb->orphan_head);
    le64_put(b + SB_GROW_FROM, sb->grow_from);
    le64_put(b + SB_FREE_BLOCKS, sb->free_blocks);
    le64_put(b + SB_FREE_INODES, sb->free_inodes);
    le64_put(b + SB_HASH_SEED, sb->hash_seed);
    le64_put(b + SB_JOURNAL_ID, sb->journal_id);
    le64_put(b + SB_MKFS_TIME, (uint64_t)sb->mkfs_time);
    le64_put(b + SB_MOUNT_TIME, (uint64_t)sb->mount_time);
    le64_put(b + SB_WRITE_TIME, (uint64_t)sb->write_time);
    le64_put(b + SB_ROOT_INO, sb->root_ino);
    sfs_block_seal(b, SFS_MAGIC_SUPER, blkno);
}

void sfs_sb_decode(const uint8_t *b, struct sfs_sb *sb)
{
    sb->version = le32_get(b + SB_VERSION);
    sb->block_size = le32_get(b + SB_BLOCK_SIZE);
    sb->inode_size = le32_get(b + SB_INODE_SIZE);
    sb->state = le32_get(b + SB_STATE);
    sb->nblocks = le64_get(b + SB_NBLOCKS);
    sb->ninodes = le64_get(b + SB_NINODES);
    memcpy(sb->uuid, b + SB_UUID, 16);
    sb->feat_compat = le32_get(b + SB_FEAT_COMPAT);
    sb->feat_incompat = le32_get(b + SB_FEAT_INCOMPAT);
    sb->feat_ro_compat = le32_get(b + SB_FEAT_RO_COMPAT);
    sb->mount_count = le32_get(b + SB_MOUNT_COUNT);
    sb->journal_start = le64_get(b + SB_JOURNAL_START);
    sb->journal_blocks = le64_get(b + SB_JOURNAL_BLOCKS);
    sb->bbitmap_start = le64_get(b + SB_BBITMAP_START);
    sb->bbitmap_blocks = le64_get(b + SB_BBITMAP_BLOCKS);
    sb->ibitmap_start = le64_get(b + SB_IBITMAP_START);
    sb->ibitmap_blocks = le64_get(b + SB_IBITMAP_BLOCKS);
    sb->itable_start = le64_get(b + SB_ITABLE_START);
    sb->itable_blocks = le64_get(b + SB_ITABLE_BLOCKS);
    sb->data_start = le64_get(b + SB_DATA_START);
    sb->backup_blkno = le64_get(b + SB_BACKUP_BLKNO);
    sb->orphan_head = le64_get(b + SB_ORPHAN_HEAD);
    sb->grow_from = le64_get(b + SB_GROW_FROM);
    sb->free_blocks = le64_get(b + SB_FREE_BLOCKS);
    sb->free_inodes = le64_get(b + SB_FREE_INODES);
    sb->hash_seed = le64_get(b + SB_HASH_SEED);
    sb->journal_id = le64_get(b + SB_JOURNAL_ID);
    sb->mkfs_time = (int64_t)le64_get(b + SB_MKFS_TIME);
    sb->mount_time = (int64_t)le64_get(b + SB_MOUNT_TIME);
    sb->write_time = (int64_t)le64_get(b + SB_WRITE_TIME);
    sb->root_ino = le64_get(b + SB_ROOT_INO);
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

#define MIN_JOURNAL 256u    /* room for the largest single operation */
#define MIN_DATA    16u

int sfs_sb_layout(struct sfs_sb *sb, uint64_t nblocks, uint64_t ninodes,
                  uint64_t journal_blocks)
{
    if (nblocks < 64 || ninodes < 2 || ninodes > (1ull << 32) ||
        journal_blocks < MIN_JOURNAL || journal_blocks > (1ull << 31))
        return -ENOSPC;
    sb->nblocks = nblocks;
    sb->ninodes = ninodes;
    sb->journal_start = 1;
    sb->journal_blocks = journal_blocks;
    sb->bbitmap_start = sb->journal_start + journal_blocks;
    sb->bbitmap_blocks = div_up(nblocks, SFS_BITMAP_BITS);
    sb->ibitmap_start = sb->bbitmap_start + sb->bbitmap_blocks;
    sb->ibitmap_blocks = div_up(ninodes, SFS_BITMAP_BITS);
    sb->itable_start = sb->ibitmap_start + sb->ibitmap_blocks;
    sb->itable_blocks = div_up(ninodes, SFS_INODES_PER_BLOCK);
    sb->data_start = sb->itable_start + sb->itable_blocks;
    sb->backup_blkno = nblocks - 1;
    if (sb->data_start + MIN_DATA > sb->backup_blkno)
        return -ENOSPC;
    return 0;
}

/* Geometry: every region is where sfs_sb_layout would put it. */
static int sb_check_layout(const struct sfs_sb *sb)
{
    struct sfs_sb want = *sb;
    if (sfs_sb_layout(&want, sb->nblocks, sb->ninodes, sb->journal_blocks))
        return CISC_CORRUPT("superblock: impossible geometry (%llu blocks, %llu inodes, "
                            "%llu journal blocks)", (unsigned long long)sb->nblocks,
                            (unsigned long long)sb->ninodes,
                            (unsigned long long)sb->journal_blocks);
    if (want.journal_start != sb->journal_start || want.bbitmap_start != sb->bbitmap_start ||
        want.bbitmap_blocks != sb->bbitmap_blocks || want.ibitmap_start != sb->ibitmap_start ||
        want.ibitmap_blocks != sb->ibitmap_blocks || want.itable_start != sb->itable_start ||
        want.itable_blocks != sb->itable_blocks || want.data_start != sb->data_start ||
        want.backup_blkno != sb->backup_blkno)
        return CISC_CORRUPT("superblock: region table does not match its geometry");
    return 0;
}

int sfs_sb_check(const struct sfs_sb *sb, uint64_t media_nblocks)
{
    if (sb->version != SFS_FORMAT_VERSION)
        return CISC_CORRUPT("superblock: unsupported format version %u (this build reads %u)",
                            sb->version, SFS_FORMAT_VERSION);
    if (sb->block_size != SFS_BSIZE || sb->inode_size != SFS_INODE_SIZE)
        return CISC_CORRUPT("superblock: block size %u / inode size %u, expected %u / %u",
                            sb->block_size, sb->inode_size, SFS_BSIZE, SFS_INODE_SIZE);
    if (sb->state != SFS_STATE_CLEAN && sb->state != SFS_STATE_MOUNTED)
        return CISC_CORRUPT("superblock: unknown state %u", sb->state);
    int r = sb_check_layout(sb);
    if (r)
        return r;
    if (sb->nblocks > media_nblocks)
        return CISC_CORRUPT("image truncated: superblock says %llu blocks, image has %llu",
                            (unsigned long long)sb->nblocks,
                            (unsigned long long)media_nblocks);
    if (sb->root_ino != 1)
        return CISC_CORRUPT("superblock: root inode %llu, expected 1",
                            (unsigned long long)sb->root_ino);
    if (sb->orphan_head >= sb->ninodes || sb->orphan_head == 1)
        return CISC_CORRUPT("superblock: orphan list head %llu out of range",
                            (unsigned long long)sb->orphan_head);
    if (sb->grow_from && (sb->grow_from < sb->data_start || sb->grow_from >= sb->backup_blkno))
        return CISC_CORRUPT("superblock: unfinished grow from block %llu out of range",
                            (unsigned long long)sb->grow_from);
    return 0;
}

/* ---- inodes ----------------------------------------------------------- */

bool sfs_mode_valid(uint32_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFIFO:
    case S_IFSOCK: case S_IFCHR: case S_IFBLK:
        return (mode & ~(uint32_t)(S_IFMT | 07777)) == 0;
    default:
        return false;
    }
}

static void put_time(uint8_t *p, int soff, int noff, int64_t s, uint32_t ns)
{
    le64_put(p + soff, (uint64_t)s);
    le32_put(p + noff, ns);
}

void sfs_inode_encode(const struct sfs_dinode *d, uint8_t *p)
{
    memset(p, 0, SFS_INODE_SIZE);
    le32_put(p + DI_MODE, d->mode);
    le64_put(p + DI_INO, d->ino);
    le64_put(p + DI_GENERATION, d->generation);
    le32_put(p + DI_NLINK, d->nlink);
    le32_put(p + DI_FLAGS, d->flags);
    le32_put(p + DI_UID, d->uid);
    le32_put(p + DI_GID, d->gid);
    le64_put(p + DI_SIZE, d->size);
    le64_put(p + DI_BLOCKS, d->blocks);
    le64_put(p + DI_RDEV, d->rdev);
    put_time(p, DI_ATIME, DI_ATIME_NS, d->atime, d->atime_ns);
    put_time(p, DI_MTIME, DI_MTIME_NS, d->mtime, d->mtime_ns);
    put_time(p, DI_CTIME, DI_CTIME_NS, d->ctime, d->ctime_ns);
    put_time(p, DI_BTIME, DI_BTIME_NS, d->btime, d->btime_ns);
    le64_put(p + DI_PARENT, d->parent);
    le64_put(p + DI_XATTR_BLK, d->xattr_blk);
    le64_put(p + DI_ORPHAN_NEXT, d->orphan_next);
    le16_put(p + DI_IXATTR_USED, d->ixattr_used);
    memcpy(p + DI_DATA, d->data, SFS_IDATA_SIZE);
    memcpy(p + DI_IXATTR, d->ixattr, SFS_IXATTR_SIZE);
    le32_put(p + DI_CRC, crc32c(0, p + 4, SFS_INODE_SIZE - 4));
}

static void decode_fields(const uint8_t *p, struct sfs_dinode *d)
{
    d->mode = le32_get(p + DI_MODE);
    d->ino = le64_get(p + DI_INO);
    d->generation = le64_get(p + DI_GENERATION);
    d->nlink = le32_get(p + DI_NLINK);
    d->flags = le32_get(p + DI_FLAGS);
    d->uid = le32_get(p + DI_UID);
    d->gid = le32_get(p + DI_GID);
    d->size = le64_get(p + DI_SIZE);
    d->blocks = le64_get(p + DI_BLOCKS);
    d->rdev = le64_get(p + DI_RDEV);
    d->atime = (int64_t)le64_get(p + DI_ATIME);
    d->mtime = (int64_t)le64_get(p + DI_MTIME);
    d->ctime = (int64_t)le64_get(p + DI_CTIME);
    d->btime = (int64_t)le64_get(p + DI_BTIME);
    d->atime_ns = le32_get(p + DI_ATIME_NS);
    d->mtime_ns = le32_get(p + DI_MTIME_NS);
    d->ctime_ns = le32_get(p + DI_CTIME_NS);
    d->btime_ns = le32_get(p + DI_BTIME_NS);
    d->parent = le64_get(p + DI_PARENT);
    d->xattr_blk = le64_get(p + DI_XATTR_BLK);
    d->orphan_next = le64_get(p + DI_ORPHAN_NEXT);
    d->ixattr_used = le16_get(p + DI_IXATTR_USED);
    memcpy(d->data, p + DI_DATA, SFS_IDATA_SIZE);
    memcpy(d->ixattr, p + DI_IXATTR, SFS_IXATTR_SIZE);
}

int sfs_inode_decode(const uint8_t *p, uint64_t ino, uint64_t blkno, struct sfs_dinode *d)
{
    unsigned long long b = (unsigned long long)blkno, i = (unsigned long long)ino;
    if (le32_get(p + DI_CRC) != crc32c(0, p + 4, SFS_INODE_SIZE - 4))
        return CISC_CORRUPT("block %llu (inode table): inode %llu checksum mismatch", b, i);
    decode_fields(p, d);
    if (d->ino != ino)
        return CISC_CORRUPT("block %llu (inode table): slot of inode %llu holds inode %llu",
                            b, i, (unsigned long long)d->ino);
    if (!sfs_mode_valid(d->mode))
        return CISC_CORRUPT("block %llu (inode table): inode %llu has invalid mode 0%o", b,
                            i, d->mode);
    if (d->flags & ~SFS_IFL_KNOWN)
        return CISC_CORRUPT("block %llu (inode table): inode %llu has unknown flags 0x%x",
                            b, i, d->flags);
    if ((d->flags & SFS_IFL_INLINE_DATA) && !S_ISLNK(d->mode))
        return CISC_CORRUPT("block %llu (inode table): inode %llu is not a symlink but "
                            "has inline data", b, i);
    if (d->ixattr_used > SFS_IXATTR_SIZE)
        return CISC_CORRUPT("block %llu (inode table): inode %llu inline xattr area "
                            "overflows (%u bytes)", b, i, d->ixattr_used);
    if (d->atime_ns >= 1000000000u || d->mtime_ns >= 1000000000u ||
        d->ctime_ns >= 1000000000u || d->btime_ns >= 1000000000u)
        return CISC_CORRUPT("block %llu (inode table): inode %llu has invalid nanoseconds",
                            b, i);
    return 0;
}

/* ---- extents, names ------------------------------------------------------ */

void sfs_extent_encode(const struct sfs_extent *e, uint8_t v[EV_END])
{
    le64_put(v + EV_PBLK, e->pblk);
    le32_put(v + EV_LEN, e->len);
    le32_put(v + EV_FLAGS, e->flags);
}

void sfs_extent_decode(uint64_t key, const uint8_t v[EV_END], struct sfs_extent *e)
{
    e->lblk = key;
    e->pblk = le64_get(v + EV_PBLK);
    e->len = le32_get(v + EV_LEN);
    e->flags = le32_get(v + EV_FLAGS);
}

uint64_t sfs_name_hash(const char *name, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(name, len, seed);
}

/* ---- journal header ------------------------------------------------------ */

void sfs_jhdr_encode(const struct sfs_jhdr *h, uint8_t *b, uint64_t blkno)
{
    memset(b, 0, SFS_BSIZE);
    le64_put(b + JH_JID, h->jid);
    le64_put(b + JH_START_SEQ, h->start_seq);
    le32_put(b + JH_START_POS, h->start_pos);
    le32_put(b + JH_RING, h->ring);
    sfs_block_seal(b, SFS_MAGIC_JHDR, blkno);
}

void sfs_jhdr_decode(const uint8_t *b, struct sfs_jhdr *h)
{
    h->jid = le64_get(b + JH_JID);
    h->start_seq = le64_get(b + JH_START_SEQ);
    h->start_pos = le32_get(b + JH_START_POS);
    h->ring = le32_get(b + JH_RING);
}

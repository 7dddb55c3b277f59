/*
 * device/storagefs/format.h - StorageFS on-image format, version 1: the
 * constants, byte offsets and encode/decode helpers of every on-image
 * structure. docs/FORMAT.md draws the same structures; the two must agree
 * (the offsets below are the single source for the code).
 *
 * Invariants:
 *   1. All fields are little-endian and read/written through common/le.h;
 *      nothing casts a struct over a buffer.
 *   2. Every metadata block except inode-table blocks starts with the
 *      16-byte block header {crc, magic, blkno}; crc is crc32c (seed 0)
 *      over bytes 4..4095. Inode-table blocks hold 8 inodes, each with its
 *      own crc over its bytes 4..511.
 *   3. Decoders validate what they decode and report corruption through
 *      CISC_CORRUPT naming the block (or inode); they never trust a length
 *      or offset read from the image.
 */
#ifndef CISC_SFS_FORMAT_H
#define CISC_SFS_FORMAT_H

#include <assert.h>   /* static_assert, in C and in the C++ tests */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SFS_FORMAT_VERSION 1u
#define SFS_BSIZE          4096u
#define SFS_INODE_SIZE     512u
#define SFS_INODES_PER_BLOCK (SFS_BSIZE / SFS_INODE_SIZE)

#define SFS_FOURCC(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* Block kinds: the magic of the block header. */
#define SFS_MAGIC_SUPER   SFS_FOURCC('s', 'f', 'S', 'B')
#define SFS_MAGIC_JHDR    SFS_FOURCC('s', 'f', 'J', 'H')
#define SFS_MAGIC_JDESC   SFS_FOURCC('s', 'f', 'J', 'D')
#define SFS_MAGIC_JCOMMIT SFS_FOURCC('s', 'f', 'J', 'C')
#define SFS_MAGIC_BBITMAP SFS_FOURCC('s', 'f', 'B', 'B')
#define SFS_MAGIC_IBITMAP SFS_FOURCC('s', 'f', 'I', 'B')
#define SFS_MAGIC_EXTENT  SFS_FOURCC('s', 'f', 'E', 'X')
#define SFS_MAGIC_DIR     SFS_FOURCC('s', 'f', 'D', 'R')
#define SFS_MAGIC_XATTR   SFS_FOURCC('s', 'f', 'X', 'A')
#define SFS_MAGIC_XVALUE  SFS_FOURCC('s', 'f', 'X', 'V')
#define SFS_MAGIC_NONE    0u    /* inode-table block: no block header */
/* In memory only (never on the image): a file data block held in the
 * block cache because a data-journaled transaction changed it. */
#define SFS_MAGIC_DATA    SFS_FOURCC('s', 'f', 'D', 'T')

/* ---- block header ------------------------------------------------------ */

enum { BH_CRC = 0, BH_MAGIC = 4, BH_BLKNO = 8, BH_END = 16 };
static_assert(BH_END == 16, "block header is 16 bytes");

/* Human name of a block kind ("directory node", ...). */
const char *sfs_kind_name(uint32_t magic);

/* Fills the header of a metadata block and its crc (last). */
void sfs_block_seal(uint8_t *b, uint32_t magic, uint64_t blkno);

/* Checks crc, magic and self block number; -EUCLEAN (CISC_CORRUPT naming
 * blkno and kind) on mismatch. */
int sfs_block_verify(const uint8_t *b, uint32_t magic, uint64_t blkno);

/* crc of a metadata block as stored (bytes 4..4095). */
uint32_t sfs_block_crc(const uint8_t *b);

/* ---- superblock ---------------------------------------------------------- */

enum {
    SB_VERSION = 16, SB_BLOCK_SIZE = 20, SB_INODE_SIZE = 24, SB_STATE = 28,
    SB_NBLOCKS = 32, SB_NINODES = 40, SB_UUID = 48, SB_FEAT_COMPAT = 64,
    SB_FEAT_INCOMPAT = 68, SB_FEAT_RO_COMPAT = 72, SB_MOUNT_COUNT = 76,
    SB_JOURNAL_START = 80, SB_JOURNAL_BLOCKS = 88, SB_BBITMAP_START = 96,
    SB_BBITMAP_BLOCKS = 104, SB_IBITMAP_START = 112, SB_IBITMAP_BLOCKS = 120,
    SB_ITABLE_START = 128, SB_ITABLE_BLOCKS = 136, SB_DATA_START = 144,
    SB_BACKUP_BLKNO = 152, SB_ORPHAN_HEAD = 160, SB_FREE_BLOCKS = 168,
    SB_FREE_INODES = 176, SB_HASH_SEED = 184, SB_JOURNAL_ID = 192,
    SB_MKFS_TIME = 200, SB_MOUNT_TIME = 208, SB_WRITE_TIME = 216, SB_ROOT_INO = 224,
    SB_GROW_FROM = 232, SB_END = 240
};
static_assert(SB_END == 240 && SB_END <= SFS_BSIZE, "superblock layout");

#define SFS_STATE_CLEAN   1u
#define SFS_STATE_MOUNTED 2u

/* Feature flags. Unknown incompat bits refuse any mount; unknown
 * ro_compat bits refuse a read-write mount. A bit is set when the image
 * first uses what it names, so images that never do stay readable by
 * older code. */
#define SFS_FEAT_INCOMPAT_XSECURITY (1u << 0)   /* xattr namespace 3 (security.) */
#define SFS_FEAT_INCOMPAT_XACL      (1u << 1)   /* xattr namespace 4 (POSIX ACLs) */
#define SFS_FEAT_COMPAT_SUPP    0u
#define SFS_FEAT_INCOMPAT_SUPP  (SFS_FEAT_INCOMPAT_XSECURITY | SFS_FEAT_INCOMPAT_XACL)
#define SFS_FEAT_RO_COMPAT_SUPP 0u

struct sfs_sb {
    uint32_t version, block_size, inode_size, state;
    uint64_t nblocks, ninodes;
    uint8_t uuid[16];
    uint32_t feat_compat, feat_incompat, feat_ro_compat, mount_count;
    uint64_t journal_start, journal_blocks;
    uint64_t bbitmap_start, bbitmap_blocks, ibitmap_start, ibitmap_blocks;
    uint64_t itable_start, itable_blocks, data_start, backup_blkno;
    uint64_t orphan_head, free_blocks, free_inodes, hash_seed, journal_id;
    int64_t mkfs_time, mount_time, write_time;
    uint64_t root_ino;
    uint64_t grow_from;       /* 0, or a grow committed but not finished: block
                                 bitmap bits [grow_from, backup_blkno) may be
                                 set with nothing using them (grow.c) */
};

void sfs_sb_encode(const struct sfs_sb *sb, uint8_t *b, uint64_t blkno);
void sfs_sb_decode(const uint8_t *b, struct sfs_sb *sb);

/* Checks a decoded superblock's geometry for internal consistency (regions
 * in order, inside the image, sized for nblocks/ninodes). Returns 0 or
 * -EUCLEAN with a message naming the field. */
int sfs_sb_check(const struct sfs_sb *sb, uint64_t media_nblocks);

/* Computes the geometry of a fresh image (regions only). Returns 0 or
 * -ENOSPC when nblocks is too small for the request. */
int sfs_sb_layout(struct sfs_sb *sb, uint64_t nblocks, uint64_t ninodes,
                  uint64_t journal_blocks);

/* ---- bitmaps ---------------------------------------------------------- */

#define SFS_BITMAP_BITS ((SFS_BSIZE - BH_END) * 8u)   /* 32640 per block */

static inline bool sfs_bit_get(const uint8_t *b, uint32_t i)
{
    return (b[BH_END + i / 8] >> (i % 8)) & 1;
}

static inline void sfs_bit_set(uint8_t *b, uint32_t i, bool v)
{
    uint8_t m = (uint8_t)(1u << (i % 8));
    if (v)
        b[BH_END + i / 8] |= m;
    else
        b[BH_END + i / 8] &= (uint8_t)~m;
}

/* ---- inodes ----------------------------------------------------------- */

enum {
    DI_CRC = 0, DI_MODE = 4, DI_INO = 8, DI_GENERATION = 16, DI_NLINK = 24,
    DI_FLAGS = 28, DI_UID = 32, DI_GID = 36, DI_SIZE = 40, DI_BLOCKS = 48,
    DI_RDEV = 56, DI_ATIME = 64, DI_MTIME = 72, DI_CTIME = 80, DI_BTIME = 88,
    DI_ATIME_NS = 96, DI_MTIME_NS = 100, DI_CTIME_NS = 104, DI_BTIME_NS = 108,
    DI_PARENT = 112, DI_XATTR_BLK = 120, DI_ORPHAN_NEXT = 128, DI_IXATTR_USED = 136,
    DI_DATA = 144, DI_IXATTR = 400, DI_END = 512
};
#define SFS_IDATA_SIZE   (DI_IXATTR - DI_DATA)   /* 256 */
#define SFS_IXATTR_SIZE  (DI_END - DI_IXATTR)    /* 112 */
static_assert(DI_END == SFS_INODE_SIZE, "inode is 512 bytes");
static_assert(SFS_IDATA_SIZE == 256 && SFS_IXATTR_SIZE == 112, "inode areas");

#define SFS_IFL_INLINE_DATA 0x1u   /* symlink target stored in the data area */
#define SFS_IFL_KNOWN       0x1u

struct sfs_dinode {
    uint32_t mode, nlink, flags, uid, gid;
    uint64_t ino, generation, size, blocks, rdev;
    int64_t atime, mtime, ctime, btime;
    uint32_t atime_ns, mtime_ns, ctime_ns, btime_ns;
    uint64_t parent, xattr_blk, orphan_next;
    uint16_t ixattr_used;
    uint8_t data[SFS_IDATA_SIZE];
    uint8_t ixattr[SFS_IXATTR_SIZE];
};

/* Encodes into the 512-byte slot p (crc included). */
void sfs_inode_encode(const struct sfs_dinode *d, uint8_t *p);

/* Decodes slot p of inode ino in block blkno, checking crc, self number,
 * mode, flags and area bounds. Returns 0 or -EUCLEAN. */
int sfs_inode_decode(const uint8_t *p, uint64_t ino, uint64_t blkno, struct sfs_dinode *d);

/* True when the mode's file type is one StorageFS stores. */
bool sfs_mode_valid(uint32_t mode);

/* ---- B+tree nodes (extent trees and directories) ------------------------ */

enum { ND_LEVEL = 0, ND_NRECS = 2, ND_USED = 4, ND_PAD = 6, ND_OWNER = 8, ND_END = 16 };
static_assert(ND_END == 16, "node header is 16 bytes");
#define SFS_NODE_BLOCK_CAP (SFS_BSIZE - BH_END - ND_END)   /* 4064 bytes of records */
#define SFS_NODE_ROOT_CAP  (SFS_IDATA_SIZE - ND_END)       /* 240 bytes inline */
#define SFS_BT_MAX_LEVEL   8u

enum { IR_KEY = 0, IR_CHILD = 8, IR_END = 16 };           /* index record */
enum { LR_KEY = 0, LR_VLEN = 8, LR_VALUE = 10 };          /* leaf record header */
static_assert(IR_END == 16 && LR_VALUE == 10, "tree records");

/* Extent value: where logical blocks [key, key+len) live. */
enum { EV_PBLK = 0, EV_LEN = 8, EV_FLAGS = 12, EV_END = 16 };
static_assert(EV_END == 16, "extent value is 16 bytes");
#define SFS_EXT_UNWRITTEN 0x1u
#define SFS_EXT_KNOWN     0x1u

struct sfs_extent {
    uint64_t lblk, pblk;
    uint32_t len, flags;
};

void sfs_extent_encode(const struct sfs_extent *e, uint8_t v[EV_END]);
void sfs_extent_decode(uint64_t key, const uint8_t v[EV_END], struct sfs_extent *e);

/* Directory entry value: ino, type, name. */
enum { DV_INO = 0, DV_TYPE = 8, DV_NAMELEN = 9, DV_NAME = 10 };
static_assert(DV_NAME == 10, "dirent value header is 10 bytes");
#define SFS_DIRENT_MAX (DV_NAME + 255)

/* Directory keys: bit 62 set, bits 61..16 the top 46 bits of the name
 * hash, bits 15..0 a collision sequence number. */
#define SFS_DKEY_BASE      (1ull << 62)
#define SFS_DKEY_SEQ_MASK  0xFFFFull

/* The hash of a name, seeded per file system (XXH3-64). */
uint64_t sfs_name_hash(const char *name, size_t len, uint64_t seed);

static inline uint64_t sfs_dkey_base(uint64_t hash)
{
    return SFS_DKEY_BASE | ((hash >> 18) << 16);
}

/* ---- extended attributes ---------------------------------------------- */

enum { XB_OWNER = 16, XB_COUNT = 24, XB_USED = 26, XB_PAD = 28, XB_ENTRIES = 32 };
#define SFS_XBLOCK_CAP (SFS_BSIZE - XB_ENTRIES)   /* 4064 bytes of entries */

/* Entry: ns, namelen, flags, vsize, name, then the value or an external
 * reference. */
enum { XE_NS = 0, XE_NAMELEN = 1, XE_FLAGS = 2, XE_VSIZE = 4, XE_NAME = 8 };
enum { XR_VBLK = 0, XR_NBLK = 8, XR_PAD = 12, XR_END = 16 };
static_assert(XE_NAME == 8 && XR_END == 16, "xattr entry layout");
#define SFS_XE_EXTERNAL 0x1u
#define SFS_XNS_USER    1u
#define SFS_XNS_TRUSTED 2u
#define SFS_XNS_SECURITY 3u     /* needs SFS_FEAT_INCOMPAT_XSECURITY */
#define SFS_XNS_SYSTEM  4u      /* POSIX ACLs (acl.h); needs SFS_FEAT_INCOMPAT_XACL */
#define SFS_XNS_LAST    SFS_XNS_SYSTEM

enum { XV_OWNER = 16, XV_INDEX = 24, XV_PAD = 28, XV_DATA = 32 };
#define SFS_XVALUE_CAP (SFS_BSIZE - XV_DATA)       /* 4064 bytes per block */
static_assert(XV_DATA == 32, "xattr value block header");

/* ---- journal ---------------------------------------------------------- */

enum {
    JH_JID = 16, JH_START_SEQ = 24, JH_START_POS = 32, JH_RING = 36, JH_PAD = 40,
    JH_END = 48
};
enum {
    JD_JID = 16, JD_SEQ = 24, JD_TYPE = 32, JD_INDEX = 34, JD_COUNT = 36,
    JD_TOTAL = 40, JD_NSTEPS = 44, JD_STEP_MAP = 48, JD_OPLOG = 56, JD_TARGETS = 64
};
enum {
    JC_JID = 16, JC_SEQ = 24, JC_TYPE = 32, JC_PAD = 34, JC_NBLOCKS = 36, JC_NDESC = 40,
    JC_TXN_CRC = 44, JC_STEP_DONE = 48, JC_SEC = 56, JC_NSEC = 64, JC_END = 68
};
static_assert(JH_END == 48 && JD_TARGETS == 64 && JC_END == 68, "journal layout");
#define SFS_JD_MAX ((SFS_BSIZE - JD_TARGETS) / 8u)   /* 504 targets per descriptor */

/* Transaction types (the `type` of descriptors and commit records). */
#define SFS_TXN_METADATA 0u   /* ordinary redo transaction */
#define SFS_TXN_MICRO    1u   /* reserved: MicroTx step transaction (later issue) */

struct sfs_jhdr {
    uint64_t jid, start_seq;
    uint32_t start_pos, ring;
};

void sfs_jhdr_encode(const struct sfs_jhdr *h, uint8_t *b, uint64_t blkno);
void sfs_jhdr_decode(const uint8_t *b, struct sfs_jhdr *h);

/* Ring blocks a transaction of n image blocks occupies (descriptors,
 * images and the commit record). */
static inline uint64_t sfs_txn_blocks(uint64_t n)
{
    return n + (n + SFS_JD_MAX - 1) / SFS_JD_MAX + 1 + (n == 0);
}

#endif

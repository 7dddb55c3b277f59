// fsck finds deliberately corrupted images: a bit flipped in every kind
// of metadata block is reported with the block's number; logical damage
// with valid checksums (link counts, bitmaps) is reported precisely; and
// the mounted file system refuses corrupt blocks with -EUCLEAN.
#include "sfs_fixture.h"

extern "C" {
#include "common/le.h"
#include "device/storagefs/format.h"
}

class Fsck : public SfsFixture {
  protected:
    struct sfs_sb sb;
    uint64_t frag = 0, bigdir = 0, xf = 0;

    // An image holding every kind of metadata block.
    void BuildRich()
    {
        Format(16384, 2048);
        frag = Create(SFS_ROOT_INO, "frag");
        uint64_t other = Create(SFS_ROOT_INO, "other");
        for (int i = 0; i < 400; i++) {   // a hole after each block: an extent each
            Write(frag, (uint64_t)i * 8192, "f");
            Write(other, (uint64_t)i * 4096, "o");
        }
        bigdir = Mkdir(SFS_ROOT_INO, "dir");
        for (int i = 0; i < 300; i++)
            Create(bigdir, ("entry-" + std::to_string(i)).c_str());
        xf = Create(SFS_ROOT_INO, "xattrs");
        std::string big(9000, 'v'), mid(1000, 'm');
        ASSERT_EQ(sfs_setxattr(fs, nullptr, xf, "user.big", big.data(), big.size(), 0), 0);
        ASSERT_EQ(sfs_setxattr(fs, nullptr, xf, "user.mid", mid.data(), mid.size(), 0), 0);
        Unmount();
        ExpectClean();
        ReadSb();
    }

    void ReadSb()
    {
        uint8_t b[4096];
        ASSERT_EQ(media_read(disk, 0, 1, b), 0);
        sfs_sb_decode(b, &sb);
    }

    // First block in the data area whose header carries magic.
    uint64_t FindKind(uint32_t magic)
    {
        uint8_t b[4096];
        for (uint64_t blk = sb.data_start; blk < sb.backup_blkno; blk++) {
            EXPECT_EQ(media_read(disk, blk, 1, b), 0);
            if (le32_get(b + BH_MAGIC) == magic && le64_get(b + BH_BLKNO) == blk)
                return blk;
        }
        ADD_FAILURE() << "no block of kind " << sfs_kind_name(magic);
        return 0;
    }

    void Flip(uint64_t blk, size_t byte, int bit = 3)
    {
        uint8_t b[4096];
        ASSERT_EQ(media_read(disk, blk, 1, b), 0);
        b[byte] ^= (uint8_t)(1u << bit);
        ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    }

    // Runs fsck and expects some line to contain `want`.
    void ExpectProblem(const std::string &want)
    {
        auto p = SfsFixture::Fsck();
        bool found = false;
        for (auto &l : p)
            found |= l.find(want) != std::string::npos;
        EXPECT_TRUE(found) << "no fsck line contains '" << want << "'; got " << p.size()
                           << " lines" << (p.empty() ? "" : ", first: " + p[0]);
    }

    void ExpectMountFailsWithoutWriting()
    {
        uint64_t w = media_fault_writes(disk);
        EXPECT_EQ(TryMount(), -EUCLEAN);
        EXPECT_EQ(media_fault_writes(disk), w) << "mount wrote to an invalid image";
        EXPECT_STRNE(cisc_corrupt_last(), "");
    }
};

TEST_F(Fsck, RichImageIsClean)
{
    BuildRich();
    struct sfs_fsck_result r;
    auto p = SfsFixture::Fsck(&r);
    EXPECT_TRUE(p.empty());
    EXPECT_EQ(r.files, 305u);
    EXPECT_GT(r.blocks_used, sb.data_start);
}

TEST_F(Fsck, Superblock)
{
    BuildRich();
    Flip(0, 300);
    ExpectProblem("block 0 (superblock): checksum mismatch");
    ExpectProblem("using the backup superblock");
    ExpectMountFailsWithoutWriting();
}

TEST_F(Fsck, BackupSuperblock)
{
    BuildRich();
    Flip(sb.backup_blkno, 300);
    ExpectProblem("block " + std::to_string(sb.backup_blkno) + " (superblock): checksum");
}

TEST_F(Fsck, BlockBitmap)
{
    BuildRich();
    Flip(sb.bbitmap_start, 200);
    ExpectProblem("block " + std::to_string(sb.bbitmap_start) + " (block bitmap): checksum");
    ExpectMountFailsWithoutWriting();
}

TEST_F(Fsck, InodeBitmap)
{
    BuildRich();
    Flip(sb.ibitmap_start, 17);
    ExpectProblem("block " + std::to_string(sb.ibitmap_start) + " (inode bitmap): checksum");
    ExpectMountFailsWithoutWriting();
}

TEST_F(Fsck, InodeTable)
{
    BuildRich();
    uint64_t blk = sb.itable_start + frag / 8;
    Flip(blk, (frag % 8) * 512 + 50);
    ExpectProblem("block " + std::to_string(blk) + " (inode table): inode " +
                  std::to_string(frag) + " checksum mismatch");
    Mount();
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, frag, &a), -EUCLEAN);
    EXPECT_NE(std::string(cisc_corrupt_last()).find("inode " + std::to_string(frag)),
              std::string::npos);
}

TEST_F(Fsck, ExtentNode)
{
    BuildRich();
    uint64_t blk = FindKind(SFS_MAGIC_EXTENT);
    Flip(blk, 1000);
    ExpectProblem("block " + std::to_string(blk) + " (extent node): checksum mismatch");
    Mount();
    char buf[4096];
    bool saw = false;
    for (int i = 0; i < 400 && !saw; i++)
        saw = sfs_read(fs, frag, (uint64_t)i * 8192, buf, 1) == -EUCLEAN;
    EXPECT_TRUE(saw);
    EXPECT_NE(std::string(cisc_corrupt_last()).find("block " + std::to_string(blk)),
              std::string::npos);
}

TEST_F(Fsck, DirectoryNode)
{
    BuildRich();
    uint64_t blk = FindKind(SFS_MAGIC_DIR);
    Flip(blk, 2000);
    ExpectProblem("block " + std::to_string(blk) + " (directory node): checksum mismatch");
    Mount();
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        struct sfs_attr a;
        bad += sfs_lookup(fs, bigdir, ("entry-" + std::to_string(i)).c_str(), &a) == -EUCLEAN;
    }
    EXPECT_GT(bad, 0);
}

TEST_F(Fsck, XattrBlockAndValueBlock)
{
    BuildRich();
    uint64_t xb = FindKind(SFS_MAGIC_XATTR);
    uint64_t vb = FindKind(SFS_MAGIC_XVALUE);
    Flip(xb, 100);
    Flip(vb, 3000);
    ExpectProblem("block " + std::to_string(xb) + " (xattr block): checksum mismatch");
    Mount();
    char buf[16];
    EXPECT_EQ(sfs_getxattr(fs, xf, "user.mid", buf, sizeof(buf)), -EUCLEAN);
    Unmount();
    Flip(xb, 100);             // repair the block: the value block is still bad
    ExpectProblem("block " + std::to_string(vb) + " (xattr value block): checksum mismatch");
}

TEST_F(Fsck, JournalHeader)
{
    BuildRich();
    Flip(sb.journal_start, 40);
    ExpectProblem("block " + std::to_string(sb.journal_start) + " (journal header)");
    ExpectMountFailsWithoutWriting();
}

TEST_F(Fsck, JournalTransactionNeedingReplay)
{
    Format(8192);
    uint64_t f = Create(SFS_ROOT_INO, "a");
    ASSERT_EQ(sfs_sync(fs), 0);
    Create(SFS_ROOT_INO, "b");
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash(MEDIA_FAULT_KEEP_ALL);    // committed, not checkpointed
    struct sfs_fsck_result r;
    auto p = SfsFixture::Fsck(&r);
    EXPECT_TRUE(p.empty());
    EXPECT_GE(r.journal_txns, 2u);
    ReadSb();
    // Flip a bit in the first logged image (descriptor is at the start
    // of the ring, its images follow).
    uint64_t ring0 = sb.journal_start + 1;
    Flip(ring0 + 1, 500);
    ExpectProblem("is committed but fails validation");
    Flip(ring0 + 1, 500);       // undo; now break the first descriptor
    Flip(ring0, 800);
    ExpectProblem("descriptor fails its checksum");
    (void)f;
}

TEST_F(Fsck, LogicalDamageWithValidChecksums)
{
    BuildRich();
    // 1. A wrong link count in an otherwise valid inode.
    uint64_t blk = sb.itable_start + xf / 8;
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, blk, 1, b), 0);
    struct sfs_dinode d;
    ASSERT_EQ(sfs_inode_decode(b + (xf % 8) * 512, xf, blk, &d), 0);
    d.nlink = 5;
    sfs_inode_encode(&d, b + (xf % 8) * 512);
    ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    ExpectProblem("inode " + std::to_string(xf) + ": link count 5, but 1 directory entries");
    d.nlink = 1;
    sfs_inode_encode(&d, b + (xf % 8) * 512);
    ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    ExpectClean();
    // 2. A used block marked free, and a free block marked used.
    uint64_t ext = FindKind(SFS_MAGIC_EXTENT);
    uint64_t spare = sb.backup_blkno - 5;
    ASSERT_EQ(media_read(disk, sb.bbitmap_start, 1, b), 0);
    sfs_bit_set(b, (uint32_t)ext, false);
    sfs_bit_set(b, (uint32_t)spare, true);
    sfs_block_seal(b, SFS_MAGIC_BBITMAP, sb.bbitmap_start);
    ASSERT_EQ(media_write(disk, sb.bbitmap_start, 1, b), 0);
    ExpectProblem("block " + std::to_string(ext) + " (extent node of inode " +
                  std::to_string(frag) + ") is in use but marked free");
    ExpectProblem("blocks " + std::to_string(spare) + "-" + std::to_string(spare) +
                  " are marked used but nothing references them");
}

// The inline-data flag belongs to symlinks only: on a regular file the
// data area is an extent-tree root, and a file claiming inline data is
// corrupt (reported, never half-used).
TEST_F(Fsck, InlineFlagOnRegularFile)
{
    BuildRich();
    uint64_t blk = sb.itable_start + xf / 8;
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, blk, 1, b), 0);
    struct sfs_dinode d;
    ASSERT_EQ(sfs_inode_decode(b + (xf % 8) * 512, xf, blk, &d), 0);
    d.flags |= SFS_IFL_INLINE_DATA;
    sfs_inode_encode(&d, b + (xf % 8) * 512);
    ASSERT_EQ(media_write(disk, blk, 1, b), 0);
    ExpectProblem("inode " + std::to_string(xf) + " is not a symlink but has inline data");
    Mount();
    struct sfs_attr a;
    EXPECT_EQ(sfs_getattr(fs, xf, &a), -EUCLEAN);
    EXPECT_EQ(sfs_write(fs, nullptr, xf, 0, "z", 1), -EUCLEAN);
}

TEST_F(Fsck, DirectoryEntryToFreeInode)
{
    BuildRich();
    Mount();
    uint64_t f = Create(SFS_ROOT_INO, "victim");
    Unmount();
    ReadSb();
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, sb.ibitmap_start, 1, b), 0);
    sfs_bit_set(b, (uint32_t)f, false);
    sfs_block_seal(b, SFS_MAGIC_IBITMAP, sb.ibitmap_start);
    ASSERT_EQ(media_write(disk, sb.ibitmap_start, 1, b), 0);
    ExpectProblem("entry 'victim' names inode " + std::to_string(f) + ", which is not in use");
}

TEST_F(Fsck, CorruptOrphanDoesNotBlockMount)
{
    Format(16384);
    uint64_t f = Create(SFS_ROOT_INO, "f"), g = Create(SFS_ROOT_INO, "g");
    for (int i = 0; i < 400; i++) {       // holes: an extent each, an extent node block
        Write(f, (uint64_t)i * 8192, "f");
        Write(g, (uint64_t)i * 4096, "g");
    }
    ASSERT_EQ(sfs_iget(fs, f), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);    // an open orphan
    Unmount();                 // still open: it stays on the orphan list
    ReadSb();
    ASSERT_EQ(sb.orphan_head, f);
    // Break one of f's extent nodes.
    uint8_t b[4096];
    uint64_t node = 0;
    for (uint64_t blk = sb.data_start; blk < sb.backup_blkno && !node; blk++) {
        ASSERT_EQ(media_read(disk, blk, 1, b), 0);
        if (le32_get(b + BH_MAGIC) == SFS_MAGIC_EXTENT && le64_get(b + BH_END + ND_OWNER) == f)
            node = blk;
    }
    ASSERT_NE(node, 0u);
    Flip(node, 3000);
    Mount();                              // the orphan cannot be freed, mount still works
    EXPECT_NE(Lookup(SFS_ROOT_INO, "g"), 0u);
    Unmount();
    ExpectProblem("block " + std::to_string(node) + " (extent node): checksum mismatch");
}

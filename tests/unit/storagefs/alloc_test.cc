// The allocator's free counts are counts of bitmap bits (alloc.h
// invariant 5): an inconsistent image that frees a block twice does not
// skew them, so the counts written at unmount still match the bitmaps.
#include "sfs_fixture.h"

extern "C" {
#include "common/le.h"
#include "device/media/flash_media.h"
#include "device/storagefs/format.h"
}

#include <sys/stat.h>
#include <unistd.h>

class Alloc : public SfsFixture {};

// A used data block marked free in the bitmap (damage fsck reports), then
// the file holding it deleted: the block is freed a second time. The free
// count must follow the bitmap (one more free block), not the request.
TEST_F(Alloc, FreeingABlockMarkedFreeKeepsTheCountsExact)
{
    Format(8192);
    uint64_t f = Create(SFS_ROOT_INO, "victim");
    std::string data(3 * 4096, 'Q');
    Write(f, 0, data);
    Unmount();
    ExpectClean();
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, 0, 1, b), 0);
    struct sfs_sb sb;
    sfs_sb_decode(b, &sb);
    uint64_t victim = 0;   // a data block of the file (its bytes are all 'Q')
    for (uint64_t blk = sb.data_start; blk < sb.backup_blkno && !victim; blk++) {
        ASSERT_EQ(media_read(disk, blk, 1, b), 0);
        if (std::string((char *)b, 4096) == std::string(4096, 'Q'))
            victim = blk;
    }
    ASSERT_NE(victim, 0u);
    uint64_t bblk = sb.bbitmap_start + victim / SFS_BITMAP_BITS;
    ASSERT_EQ(media_read(disk, bblk, 1, b), 0);
    sfs_bit_set(b, (uint32_t)(victim % SFS_BITMAP_BITS), false);
    sfs_block_seal(b, SFS_MAGIC_BBITMAP, bblk);
    ASSERT_EQ(media_write(disk, bblk, 1, b), 0);
    ASSERT_FALSE(Fsck().empty());   // the damage is visible
    Mount();
    struct sfs_statfs before, after;
    ASSERT_EQ(sfs_statfs(fs, &before), 0);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "victim"), 0);
    ASSERT_EQ(sfs_statfs(fs, &after), 0);
    EXPECT_EQ(after.blocks_free, before.blocks_free + 2);   // 3 freed, 1 already free
    Unmount();
    ExpectClean();   // no "superblock: free counts ... bitmaps say ..."
}

// Blocks a transaction frees reach the medium as TRIM once reusable, so a
// flash model stops migrating them; the bytes themselves are untouched.
TEST(AllocTrim, FreedBlocksReachTheFlashModelAsTrim)
{
    const char *dir = getenv("TMPDIR");
    std::string path = std::string(dir ? dir : "/tmp") + "/cisc-sfs-trim-" +
                       std::to_string(getpid()) + ".img";
    struct media *lower = nullptr, *m = nullptr;
    ASSERT_EQ(media_create_file(path.c_str(), 8192ull * MEDIA_BLOCK_SIZE, 0, &lower), 0);
    struct flash_geom g = {};
    ASSERT_EQ(flash_media_open(lower, &g, nullptr, 0, &m), 0);
    struct flash *model = flash_media_model(m);
    ASSERT_EQ(sfs_mkfs(m, nullptr), 0);
    struct sfs *fs = nullptr;
    ASSERT_EQ(sfs_mount(m, nullptr, &fs), 0);
    struct sfs_attr a;
    ASSERT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
    std::string data(64 * 4096, 'T');
    ASSERT_EQ(sfs_write(fs, nullptr, a.ino, 0, data.data(), data.size()), (ssize_t)data.size());
    ASSERT_EQ(sfs_sync(fs), 0);
    struct flash_stats before, after;
    flash_stats(model, &before);
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "f"), 0);
    // The freeing transaction's commit releases them (a background commit
    // may be the one that does it: wait for it, up to 5 s).
    for (int i = 0; i < 500; i++) {
        ASSERT_EQ(sfs_sync(fs), 0);
        flash_stats(model, &after);
        if (after.trims - before.trims >= 64)
            break;
        usleep(10000);
    }
    EXPECT_GE(after.trims - before.trims, 64u);
    EXPECT_EQ(sfs_unmount(fs), 0);   // closes m and the image
    unlink(path.c_str());
}

// sfs_repair on deliberately damaged images, one test per kind of
// damage: fsck reports it, repair fixes it, a second fsck is clean and the
// surviving files read back exactly as written. Damage the repair does
// not fix leaves the image untouched; a crash at any write of a repair is
// finished by running it again.
#include "sfs_fixture.h"

#include <functional>

extern "C" {
#include "common/le.h"
#include "device/storagefs/format.h"
}

namespace {

std::string Pattern(size_t n, char seed)
{
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(seed + (char)(i % 53));
    return s;
}

int OpenAgain(void *arg, struct media **out)
{
    return media_fault_open_again(static_cast<struct media *>(arg), out);
}

void Collect(void *arg, const char *msg)
{
    static_cast<std::vector<std::string> *>(arg)->push_back(msg);
}

}  // namespace

class Repair : public SfsFixture {
  protected:
    struct sfs_sb sb;
    uint64_t a = 0, b = 0, d = 0, c = 0, e = 0;
    const std::string ca = Pattern(3 * 4096 + 100, 'a'), cb = Pattern(5000, 'b'),
                      cc = Pattern(9000, 'c');

    // root: a (4 blocks), b (2 blocks), d/ { c (3 blocks), e/ }
    void Build()
    {
        Format(8192);
        a = Create(SFS_ROOT_INO, "a");
        b = Create(SFS_ROOT_INO, "b");
        d = Mkdir(SFS_ROOT_INO, "d");
        c = Create(d, "c");
        e = Mkdir(d, "e");
        Write(a, 0, ca);
        Write(b, 0, cb);
        Write(c, 0, cc);
        Unmount();
        ExpectClean();
        uint8_t blk[4096];
        ASSERT_EQ(media_read(disk, 0, 1, blk), 0);
        sfs_sb_decode(blk, &sb);
    }

    void EditInode(uint64_t ino, const std::function<void(struct sfs_dinode *)> &fn)
    {
        uint64_t blk = sb.itable_start + ino / 8;
        uint8_t buf[4096];
        ASSERT_EQ(media_read(disk, blk, 1, buf), 0);
        struct sfs_dinode di;
        ASSERT_EQ(sfs_inode_decode(buf + (ino % 8) * 512, ino, blk, &di), 0);
        fn(&di);
        sfs_inode_encode(&di, buf + (ino % 8) * 512);
        ASSERT_EQ(media_write(disk, blk, 1, buf), 0);
    }

    void SetBit(uint64_t start, uint32_t magic, uint64_t i, bool v)
    {
        uint64_t blk = start + i / SFS_BITMAP_BITS;
        uint8_t buf[4096];
        ASSERT_EQ(media_read(disk, blk, 1, buf), 0);
        sfs_bit_set(buf, (uint32_t)(i % SFS_BITMAP_BITS), v);
        sfs_block_seal(buf, magic, blk);
        ASSERT_EQ(media_write(disk, blk, 1, buf), 0);
    }

    // First data block of file ino (its extent tree root is inline).
    uint64_t FirstBlock(uint64_t ino)
    {
        uint64_t blk = sb.itable_start + ino / 8;
        uint8_t buf[4096];
        EXPECT_EQ(media_read(disk, blk, 1, buf), 0);
        const uint8_t *root = buf + (ino % 8) * 512 + DI_DATA;
        EXPECT_EQ(le16_get(root), 0);     // a leaf: records follow the 16-byte header
        return le64_get(root + 16 + 10);  // key 8, vlen 2, then pblk
    }

    void ExpectReported(const std::string &want)
    {
        auto p = Fsck();
        bool found = false;
        for (auto &l : p)
            found |= l.find(want) != std::string::npos;
        EXPECT_TRUE(found) << "no fsck line contains '" << want << "'; got " << p.size()
                           << " lines" << (p.empty() ? "" : ", first: " + p[0]);
    }

    // Runs the repair; expects rc, returns its lines.
    std::vector<std::string> RunRepair(int want_rc = 0, struct sfs_repair_result *out = nullptr)
    {
        std::vector<std::string> lines;
        struct sfs_repair_result res;
        int rc = sfs_repair(OpenAgain, disk, Collect, &lines, &res);
        EXPECT_EQ(rc, want_rc) << cisc_corrupt_last();
        if (out)
            *out = res;
        return lines;
    }

    void ExpectRepaired(const std::string &want)
    {
        auto lines = RunRepair();
        bool found = false;
        for (auto &l : lines)
            found |= l.rfind("repaired: ", 0) == 0 && l.find(want) != std::string::npos;
        EXPECT_TRUE(found) << "no repair line contains '" << want << "'";
        ExpectClean();
    }

    // Every file not named in `gone` reads back as written.
    void ExpectIntact(bool with_b = true, bool with_c_in_d = true)
    {
        Mount(true);
        EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, "a"), 0, ca.size() + 10), ca);
        if (with_b) {
            EXPECT_EQ(Read(Lookup(SFS_ROOT_INO, "b"), 0, cb.size() + 10), cb);
        }
        if (with_c_in_d) {
            EXPECT_EQ(Read(Lookup(Lookup(SFS_ROOT_INO, "d"), "c"), 0, cc.size() + 10), cc);
        }
        Unmount();
    }
};

TEST_F(Repair, CleanImageIsLeftAlone)
{
    Build();
    uint64_t w = media_fault_writes(disk);
    auto lines = RunRepair();
    EXPECT_TRUE(lines.empty());
    EXPECT_EQ(media_fault_writes(disk), w);
}

TEST_F(Repair, LeakedBlocksAreFreed)
{
    Build();
    uint64_t spare = sb.backup_blkno - 7;
    SetBit(sb.bbitmap_start, SFS_MAGIC_BBITMAP, spare, true);
    SetBit(sb.bbitmap_start, SFS_MAGIC_BBITMAP, spare + 1, true);
    std::string run = std::to_string(spare) + "-" + std::to_string(spare + 1);
    ExpectReported("blocks " + run + " are marked used but nothing references them");
    ExpectRepaired("blocks " + run + " marked free");
    ExpectIntact();
}

// A used block marked free could be handed out a second time: repair
// marks it used again, and a file written afterwards does not land on it.
TEST_F(Repair, UsedBlockMarkedFreeIsMarkedUsed)
{
    Build();
    uint64_t blk = FirstBlock(a);
    SetBit(sb.bbitmap_start, SFS_MAGIC_BBITMAP, blk, false);
    ExpectReported("block " + std::to_string(blk) + " (file data of inode " + std::to_string(a) +
                   ") is in use but marked free");
    ExpectRepaired("blocks " + std::to_string(blk) + "-" + std::to_string(blk) +
                   " marked in use");
    Mount();
    for (int i = 0; i < 20; i++)
        Write(Create(SFS_ROOT_INO, ("n" + std::to_string(i)).c_str()), 0, Pattern(8192, 'z'));
    Unmount();
    ExpectClean();
    ExpectIntact();
}

// The inode bitmap lost a live file's bit: the entry and the slot agree,
// so the inode is marked in use again rather than its name removed.
TEST_F(Repair, InodeBitLostIsRestored)
{
    Build();
    SetBit(sb.ibitmap_start, SFS_MAGIC_IBITMAP, b, false);
    ExpectReported("entry 'b' names inode " + std::to_string(b) + ", which is not in use");
    ExpectRepaired("inode " + std::to_string(b) + " marked in use in the inode bitmap");
    ExpectIntact();
}

// An entry naming a free inode whose slot holds nothing is removed; the
// blocks the lost inode owned are then freed as unreferenced.
TEST_F(Repair, EntryToFreeInodeIsRemoved)
{
    Build();
    uint64_t blk = sb.itable_start + b / 8;
    uint8_t buf[4096];
    ASSERT_EQ(media_read(disk, blk, 1, buf), 0);
    memset(buf + (b % 8) * 512, 0, 512);
    ASSERT_EQ(media_write(disk, blk, 1, buf), 0);
    SetBit(sb.ibitmap_start, SFS_MAGIC_IBITMAP, b, false);
    ExpectReported("entry 'b' names inode " + std::to_string(b) + ", which is not in use");
    ExpectRepaired("directory 1: removed the entry naming inode " + std::to_string(b));
    ExpectIntact(false);
    Mount(true);
    EXPECT_EQ(Lookup(SFS_ROOT_INO, "b"), 0u);
    Unmount();
}

TEST_F(Repair, FileLinkCountIsSet)
{
    Build();
    EditInode(a, [](struct sfs_dinode *di) { di->nlink = 5; });
    ExpectReported("inode " + std::to_string(a) + ": link count 5, but 1 directory entries");
    ExpectRepaired("inode " + std::to_string(a) + ": link count 5 set to 1");
    ExpectIntact();
}

TEST_F(Repair, DirectoryLinkCountIsSet)
{
    Build();
    EditInode(d, [](struct sfs_dinode *di) { di->nlink = 9; });
    ExpectReported("directory " + std::to_string(d) + ": link count 9, expected 3");
    ExpectRepaired("directory " + std::to_string(d) + ": link count 9 set to 3");
    ExpectIntact();
}

// Directory d loses its entries (its inline tree emptied): c (a file) and
// e (a directory) still have links, so they go to /lost+found with their
// contents; d's link count follows.
TEST_F(Repair, OrphansGoToLostAndFound)
{
    Build();
    EditInode(d, [](struct sfs_dinode *di) {
        le16_put(di->data + 2, 0);   // nrecs
        le16_put(di->data + 4, 0);   // used
        di->size = 0;
    });
    ExpectReported("inode " + std::to_string(c) + ": link count 1, but 0 directory entries");
    ExpectReported("directory " + std::to_string(e) + " is named by 0 entries");
    ExpectRepaired("inode " + std::to_string(c) + " moved to /lost+found/#" +
                   std::to_string(c));
    ExpectIntact(true, false);
    Mount(true);
    uint64_t lf = Lookup(SFS_ROOT_INO, "lost+found");
    ASSERT_NE(lf, 0u);
    EXPECT_EQ(Lookup(lf, ("#" + std::to_string(c)).c_str()), c);
    EXPECT_EQ(Read(c, 0, cc.size() + 10), cc);
    EXPECT_EQ(Lookup(lf, ("#" + std::to_string(e)).c_str()), e);
    struct sfs_attr at;
    ASSERT_EQ(sfs_getattr(fs, lf, &at), 0);
    EXPECT_EQ(at.nlink, 3u);   // ., its entry in the root, e's ..
    Unmount();
}

// An inode with no links and no entry that is not on the orphan list (a
// deletion that lost its orphan record) is freed, its blocks with it.
TEST_F(Repair, UnlinkedInodeIsFreed)
{
    Build();
    EditInode(d, [](struct sfs_dinode *di) {
        le16_put(di->data + 2, 0);
        le16_put(di->data + 4, 0);
        di->size = 0;
        di->nlink = 2;
    });
    EditInode(c, [](struct sfs_dinode *di) { di->nlink = 0; });
    EditInode(e, [](struct sfs_dinode *di) { di->nlink = 0; });
    ExpectReported("inode " + std::to_string(c) + " has no links but is not on the orphan list");
    ExpectRepaired("inode " + std::to_string(c) + " freed: it has no links and no entry");
    ExpectIntact(true, false);
    struct sfs_fsck_result res;
    Fsck(&res);
    EXPECT_EQ(res.files, 4u);   // root, a, b, d
}

// A corrupt inode slot: its number is freed, the entry naming it removed
// and its blocks freed, over several rounds; the rest is untouched.
TEST_F(Repair, CorruptInodeSlotIsFreed)
{
    Build();
    uint64_t blk = sb.itable_start + b / 8;
    uint8_t buf[4096];
    ASSERT_EQ(media_read(disk, blk, 1, buf), 0);
    buf[(b % 8) * 512 + 50] ^= 0x10;
    ASSERT_EQ(media_write(disk, blk, 1, buf), 0);
    ExpectReported("inode " + std::to_string(b) + " checksum mismatch");
    struct sfs_repair_result res;
    RunRepair(0, &res);
    EXPECT_GE(res.rounds, 2u);
    ExpectClean();
    ExpectIntact(false);
}

TEST_F(Repair, FreeCountsAreRewritten)
{
    Build();
    uint8_t buf[4096];
    ASSERT_EQ(media_read(disk, 0, 1, buf), 0);
    le64_put(buf + SB_FREE_BLOCKS, 3);
    sfs_block_seal(buf, SFS_MAGIC_SUPER, 0);
    ASSERT_EQ(media_write(disk, 0, 1, buf), 0);
    ExpectReported("superblock: free counts 3 blocks");
    RunRepair();
    ExpectClean();
    ExpectIntact();
}

// Many fixes at once (every free block leaked, every file's link count
// wrong) fit the journal: each is its own handle.
TEST_F(Repair, ManyFixesAtOnce)
{
    Build();
    uint8_t buf[4096];
    ASSERT_EQ(media_read(disk, sb.bbitmap_start, 1, buf), 0);
    for (uint64_t i = sb.data_start; i < sb.backup_blkno; i++)
        sfs_bit_set(buf, (uint32_t)i, true);
    sfs_block_seal(buf, SFS_MAGIC_BBITMAP, sb.bbitmap_start);
    ASSERT_EQ(media_write(disk, sb.bbitmap_start, 1, buf), 0);
    for (uint64_t ino : {a, b, c})
        EditInode(ino, [](struct sfs_dinode *di) { di->nlink = 7; });
    struct sfs_repair_result res;
    RunRepair(0, &res);
    EXPECT_GE(res.fixed, 4u);
    ExpectClean();
    ExpectIntact();
}

// A corrupt metadata block is not something repair fixes: it says so and
// writes nothing.
TEST_F(Repair, UnfixableDamageChangesNothing)
{
    Build();
    EditInode(a, [](struct sfs_dinode *di) { di->nlink = 5; });
    uint8_t buf[4096];
    ASSERT_EQ(media_read(disk, sb.bbitmap_start, 1, buf), 0);
    buf[300] ^= 1;   // checksum no longer matches
    ASSERT_EQ(media_write(disk, sb.bbitmap_start, 1, buf), 0);
    uint64_t w = media_fault_writes(disk);
    struct sfs_repair_result res;
    RunRepair(-EUCLEAN, &res);
    EXPECT_GE(res.unfixable, 1u);
    EXPECT_EQ(res.fixed, 0u);
    EXPECT_EQ(media_fault_writes(disk), w);
}

// Power lost at every write of a repair: the image still mounts (the
// journal makes each fix whole), and running the repair again ends clean
// with the files intact.
TEST_F(Repair, CrashAtAnyWriteThenRepairAgain)
{
    Build();
    EditInode(d, [](struct sfs_dinode *di) {
        le16_put(di->data + 2, 0);
        le16_put(di->data + 4, 0);
        di->size = 0;
    });
    SetBit(sb.bbitmap_start, SFS_MAGIC_BBITMAP, sb.backup_blkno - 3, true);
    EditInode(a, [](struct sfs_dinode *di) { di->nlink = 4; });
    struct media *base;
    ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_ALL, 1, &base), 0);
    uint64_t w0 = media_fault_writes(disk);
    RunRepair();
    uint64_t total = media_fault_writes(disk) - w0;
    ASSERT_GT(total, 3u);
    for (uint64_t cut = 1; cut <= total; cut += (total > 40 ? total / 40 : 1)) {
        media_close(disk);
        ASSERT_EQ(media_fault_snapshot(base, MEDIA_FAULT_KEEP_ALL, 1, &disk), 0);
        uint64_t start = media_fault_writes(disk);
        media_fault_cut_after(disk, start + cut, UINT64_MAX);
        std::vector<std::string> lines;
        struct sfs_repair_result res;
        (void)sfs_repair(OpenAgain, disk, Collect, &lines, &res);   // fails at the cut
        struct media *after;
        ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_NONE, 1, &after), 0);
        media_close(disk);
        disk = after;
        SCOPED_TRACE("cut after " + std::to_string(cut) + " of " + std::to_string(total));
        ASSERT_EQ(TryMount(), 0) << cisc_corrupt_last();
        Unmount();
        RunRepair();
        ExpectClean();
        ExpectIntact(true, false);
    }
    media_close(base);
}

// sfs_grow: a file system made smaller than its disk grows in place up to
// what its block bitmap covers; the files are intact, fsck is clean, and
// the new blocks hold data (more than the old size could).
class Grow : public SfsFixture {
  protected:
    void FormatPart(uint64_t disk_blocks, uint64_t fs_blocks)
    {
        ASSERT_EQ(media_fault_create(disk_blocks, &disk), 0);
        struct sfs_mkfs_opts o = {};
        o.size_bytes = fs_blocks * 4096;
        ASSERT_EQ(sfs_mkfs(disk, &o), 0);
        Mount();
    }

    int GrowTo(uint64_t n)
    {
        struct media *h;
        EXPECT_EQ(media_fault_open_again(disk, &h), 0);
        int r = sfs_grow(h, n);
        media_close(h);
        return r;
    }
};

TEST_F(Grow, GrowsToTheBitmapsReachWithFilesIntact)
{
    FormatPart(32640, 8192);
    uint64_t f = Create(SFS_ROOT_INO, "f");
    std::string data = Pattern(200000, 'g');
    Write(f, 0, data);
    Unmount();
    uint64_t cur = 0, max = 0;
    struct media *h;
    ASSERT_EQ(media_fault_open_again(disk, &h), 0);
    ASSERT_EQ(sfs_grow_limit(h, &cur, &max), 0);
    media_close(h);
    EXPECT_EQ(cur, 8192u);
    EXPECT_EQ(max, 32640u);
    EXPECT_EQ(GrowTo(4096), -EINVAL);            // shrinking
    EXPECT_EQ(GrowTo(32641), -EFBIG);            // past the bitmap (and the disk)
    ASSERT_EQ(GrowTo(20000), 0);
    ExpectClean();
    struct sfs_fsck_result res;
    Fsck(&res);
    EXPECT_EQ(res.blocks_total, 20000u);
    ASSERT_EQ(GrowTo(32640), 0);                 // again, to the limit
    ExpectClean();
    Mount();
    EXPECT_EQ(Read(f, 0, data.size() + 1), data);
    uint64_t g = Create(SFS_ROOT_INO, "big");
    std::string chunk = Pattern(1 << 20, 'h');
    for (int i = 0; i < 60; i++)                  // 60 MiB: more than 8192 blocks hold
        Write(g, (uint64_t)i << 20, chunk);
    struct sfs_statfs st;
    ASSERT_EQ(sfs_statfs(fs, &st), 0);
    EXPECT_EQ(st.blocks, 32640u);
    Unmount();
    ExpectClean();
}

TEST_F(Grow, RefusesAnImageNotCleanlyUnmounted)
{
    FormatPart(16384, 8192);
    Create(SFS_ROOT_INO, "f");
    ASSERT_EQ(sfs_sync(fs), 0);
    Crash();
    EXPECT_EQ(GrowTo(12000), -EAGAIN);
    Mount();
    Unmount();
    EXPECT_EQ(GrowTo(12000), 0);
    ExpectClean();
}

// Power cut after each write of a grow (each write lands whole or not at
// all; a torn bitmap block is not covered: it is not journaled): the image
// is then the old size or the new one, fsck-clean either way (a grow cut
// after its commit point is pending: fsck accepts it, and the next
// read-write mount finishes it), the file is intact, and the grown space
// is usable once mounted.
TEST_F(Grow, CrashAtEveryWriteLeavesTheOldOrTheNewSizeClean)
{
    std::string data = Pattern(100000, 'c');
    unsigned cuts = 0;
    for (uint64_t n = 1;; n++) {
        {
            uint64_t tear = UINT64_MAX;
            SCOPED_TRACE("cut after write " + std::to_string(n));
            FormatPart(16384, 8192);
            uint64_t f = Create(SFS_ROOT_INO, "f");
            Write(f, 0, data);
            Unmount();
            media_fault_cut_after(disk, media_fault_writes(disk) + n, tear);
            GrowTo(12000);   // its result does not matter: the power is gone
            bool cut = media_fault_is_cut(disk);
            struct media *snap;
            ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_NONE, 1, &snap), 0);
            media_close(disk);
            disk = snap;
            struct sfs_fsck_result res;
            std::vector<std::string> p = Fsck(&res);
            EXPECT_TRUE(p.empty()) << p[0];
            EXPECT_TRUE(res.blocks_total == 8192 || res.blocks_total == 12000)
                << res.blocks_total;
            Mount();
            EXPECT_EQ(Read(f, 0, data.size() + 1), data);
            struct sfs_statfs st;
            ASSERT_EQ(sfs_statfs(fs, &st), 0);
            EXPECT_EQ(st.blocks, res.blocks_total);
            Unmount();
            ExpectClean();   // after the mount finished a pending grow too
            if (res.blocks_total == 12000) {
                Mount();
                uint64_t g = Create(SFS_ROOT_INO, "big");
                for (int i = 0; i < 40; i++)   // 40 MiB: more than the old size holds
                    Write(g, (uint64_t)i << 20, Pattern(1 << 20, 'b'));
                Unmount();
                ExpectClean();
            }
            Mount();
            if (!cut)
                goto done;
            cuts++;
            Unmount();
            media_close(disk);
            disk = nullptr;
        }
    }
done:
    EXPECT_GE(cuts, 4u);   // backup, primary, bitmap, primary again: each cut
}

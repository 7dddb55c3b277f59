// Hostile images: random damage to metadata blocks of a rich image —
// with the checksums recomputed, so the damage reaches the parsers — must
// never crash fsck, mount or any call (ASan/UBSan watch for out-of-bounds
// reads); a corrupt structure is reported, never used.
#include "sfs_fixture.h"

#include <random>
#include <set>

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/format.h"
}

namespace {

// Errors a call may return on a damaged image besides -EUCLEAN: the ones
// it may return on any image, since damage that passes every check can
// still turn one valid tree into another (a name gone, a file turned into
// a directory, a size that makes a read end early). Never -EIO (the media
// has no faults) and never -ENOMEM (sizes read from the image must be
// checked before anything is allocated for them).
bool Legit(int64_t r)
{
    static const std::set<int64_t> ok = {
        -ENOENT, -ENOTDIR, -EISDIR, -EINVAL, -ENODATA, -ERANGE, -ENXIO, -EEXIST,
        -ENOSPC, -EMLINK, -ENOTEMPTY, -EFBIG, -ENAMETOOLONG, -EPERM, -ELOOP};
    return r >= 0 || ok.count(r);
}

// Runs calls on a mounted damaged image and checks each result.
struct Prober {
    struct sfs *fs;
    int corrupt = 0;              // calls that returned -EUCLEAN

    void Check(const char *call, uint64_t ino, int64_t r)
    {
        if (r == -EUCLEAN) {
            corrupt++;
            EXPECT_STRNE(cisc_corrupt_last(), "")
                << call << "(" << ino << "): -EUCLEAN without a corruption report";
        } else {
            EXPECT_TRUE(Legit(r)) << call << "(" << ino << ") = " << r;
        }
        cisc_corrupt_clear();
    }

    // Walks everything reachable, calling every read-only operation.
    void Walk(uint64_t dir, int depth)
    {
        if (depth > 8)
            return;
        std::vector<std::pair<uint64_t, uint32_t>> ents;
        Check("readdir", dir, sfs_readdir(fs, dir, 0, [](void *arg, const struct sfs_dirent *de) {
            if (de->namelen > 2 || de->name[0] != '.')
                static_cast<std::vector<std::pair<uint64_t, uint32_t>> *>(arg)->emplace_back(
                    de->ino, de->type);
            return 0;
        }, &ents));
        char buf[8192];
        for (auto &e : ents) {
            struct sfs_attr a;
            int r = sfs_getattr(fs, e.first, &a);
            Check("getattr", e.first, r);
            if (r)
                continue;
            Check("read", e.first, sfs_read(fs, e.first, 0, buf, sizeof(buf)));
            Check("read", e.first, sfs_read(fs, e.first, 400 * 4096, buf, 10));
            Check("readlink", e.first, sfs_readlink(fs, e.first, buf, sizeof(buf)));
            Check("listxattr", e.first, sfs_listxattr(fs, e.first, buf, sizeof(buf)));
            Check("getxattr", e.first, sfs_getxattr(fs, e.first, "user.big", buf, sizeof(buf)));
            Check("seek", e.first, sfs_seek(fs, e.first, 0, SFS_SEEK_HOLE));
            if (S_ISDIR(a.mode))
                Walk(e.first, depth + 1);
        }
    }
};

// fsck of a damaged image: the problem lines it reported.
struct FsckRun {
    int rc;
    std::vector<std::string> lines;
    struct sfs_fsck_result res;
};

FsckRun RunFsck(struct media *m)
{
    FsckRun f;
    f.rc = sfs_fsck(m, [](void *arg, const char *msg) {
        static_cast<std::vector<std::string> *>(arg)->push_back(msg);
    }, &f.lines, &f.res);
    // It runs to the end (0) or finds no usable superblock (-EUCLEAN, said
    // through fn too); its count is the lines it reported.
    EXPECT_TRUE(f.rc == 0 || f.rc == -EUCLEAN) << f.rc;
    EXPECT_EQ(f.res.problems, f.lines.size());
    if (f.rc) {
        EXPECT_GT(f.lines.size(), 0u) << "fsck failed without saying why";
    }
    return f;
}

}  // namespace

class Hostile : public SfsFixture {};

// The contract, for each damaged copy:
//   - fsck runs to the end or says there is no usable superblock, and
//     counts exactly the problems it reports;
//   - mount succeeds or refuses with -EUCLEAN and a report;
//   - every call returns a count, a report of -EUCLEAN or an errno the
//     call may give on any image (Legit), and unmount completes;
//   - damage fsck does not see is harmless: the mount succeeds, no call
//     meets corruption, and the image is still clean after the calls.
TEST_F(Hostile, RandomMetadataDamageNeverCrashes)
{
    Format(8192, 1024);
    uint64_t frag = Create(SFS_ROOT_INO, "frag"), other = Create(SFS_ROOT_INO, "o");
    ASSERT_NE(frag, 0u);
    ASSERT_NE(other, 0u);
    for (int i = 0; i < 300; i++) {
        Write(frag, (uint64_t)i * 4096, "f");
        Write(other, (uint64_t)i * 4096, "o");
    }
    uint64_t d = Mkdir(SFS_ROOT_INO, "dir");
    ASSERT_NE(d, 0u);
    for (int i = 0; i < 200; i++)
        ASSERT_NE(Create(d, ("entry-" + std::to_string(i)).c_str()), 0u);
    std::string big(9000, 'v');
    ASSERT_EQ(sfs_setxattr(fs, nullptr, frag, "user.big", big.data(), big.size(), 0), 0);
    struct sfs_attr a;
    ASSERT_EQ(sfs_symlink(fs, nullptr, d, "long", std::string(1000, 'L').c_str(), 0, 0, &a), 0);
    Unmount();
    ExpectClean();
    // The metadata blocks worth damaging.
    uint8_t b[4096];
    ASSERT_EQ(media_read(disk, 0, 1, b), 0);
    struct sfs_sb sb;
    sfs_sb_decode(b, &sb);
    std::vector<uint64_t> meta;
    for (uint64_t blk = 0; blk < disk->nblocks; blk++) {
        ASSERT_EQ(media_read(disk, blk, 1, b), 0);
        bool itable = blk >= sb.itable_start && blk < sb.data_start &&
                      std::string((char *)b, 4096) != std::string(4096, '\0');
        bool headed = le32_get(b + BH_MAGIC) != 0 && le64_get(b + BH_BLKNO) == blk &&
                      (le32_get(b + BH_MAGIC) & 0xffff) == ('s' | 'f' << 8);
        if (itable || headed)
            meta.push_back(blk);
    }
    ASSERT_GT(meta.size(), 10u);
    const char *env = getenv("SFS_HOSTILE_SEED");
    uint64_t seed = env ? strtoull(env, nullptr, 0) : 99;
    printf("hostile seed %llu (set SFS_HOSTILE_SEED to repeat)\n", (unsigned long long)seed);
    std::mt19937_64 rng(seed);
    const int ROUNDS = 150;
    int seen = 0, mounted = 0, met = 0;   // met: calls that returned -EUCLEAN
    for (int round = 0; round < ROUNDS; round++) {
        struct media *copy;
        ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_ALL, 0, &copy), 0);
        uint64_t blk = meta[rng() % meta.size()];
        SCOPED_TRACE("round " + std::to_string(round) + ", block " + std::to_string(blk));
        ASSERT_EQ(media_read(copy, blk, 1, b), 0);
        for (int k = 0; k < 1 + (int)(rng() % 6); k++) {
            size_t at = 16 + rng() % (4096 - 16);
            b[at] = (uint8_t)(rng() % 3 == 0 ? 0xff : b[at] ^ (1u << (rng() % 8)));
        }
        // Re-seal so the damage passes the checksum and reaches the parsers.
        if (blk < sb.itable_start || blk >= sb.data_start)
            le32_put(b, crc32c(0, b + 4, 4092));
        else
            for (int s = 0; s < 8; s++)
                le32_put(b + s * 512, crc32c(0, b + s * 512 + 4, 508));
        ASSERT_EQ(media_write(copy, blk, 1, b), 0);
        FsckRun before = RunFsck(copy);
        bool clean = before.rc == 0 && before.lines.empty();
        seen += !clean;
        struct media *h;
        ASSERT_EQ(media_fault_open_again(copy, &h), 0);
        struct sfs *cfs;
        cisc_corrupt_clear();
        int mr = sfs_mount(h, nullptr, &cfs);
        if (mr) {
            media_close(h);
            EXPECT_EQ(mr, -EUCLEAN);
            EXPECT_STRNE(cisc_corrupt_last(), "") << "mount refused without a report";
            EXPECT_FALSE(clean) << "mount refused (" << cisc_corrupt_last()
                                << ") an image fsck finds clean";
            media_close(copy);
            continue;
        }
        mounted++;
        cisc_corrupt_clear();
        Prober p{cfs};
        p.Walk(SFS_ROOT_INO, 0);
        p.Check("mknod", SFS_ROOT_INO,
                sfs_mknod(cfs, nullptr, SFS_ROOT_INO, "new", S_IFREG | 0644, 0, 0, 0, &a));
        p.Check("unlink", d, sfs_unlink(cfs, nullptr, d, "entry-7"));
        p.Check("rename", SFS_ROOT_INO, sfs_rename(cfs, nullptr, SFS_ROOT_INO, "o", d, "o2", 0));
        struct sfs_attr in = {};
        p.Check("setattr", frag, sfs_setattr(cfs, nullptr, frag, &in, SFS_SET_SIZE, nullptr));
        met += p.corrupt;
        int ur = sfs_unmount(cfs);
        EXPECT_TRUE(ur == 0 || Legit(ur) || ur == -EUCLEAN) << "unmount " << ur;
        if (clean) {
            EXPECT_EQ(p.corrupt, 0) << "calls met corruption that fsck did not report";
            EXPECT_EQ(ur, 0);
            FsckRun after = RunFsck(copy);
            for (auto &l : after.lines)
                ADD_FAILURE() << "fsck after the calls on an image it found clean: " << l;
        }
        media_close(copy);
    }
    printf("hostile: %d of %d damaged copies reported by fsck, %d mounted, %d calls met "
           "corruption\n", seen, ROUNDS, mounted, met);
    // Every path ran: much of the damage lands where no check can see it
    // (free inode slots, unused room in a block), which is why these
    // bounds are loose, but some must reach fsck, the mount and the calls.
    EXPECT_GE(seen, ROUNDS / 10);
    EXPECT_GT(mounted, 0);
    EXPECT_GT(met, 0);
}

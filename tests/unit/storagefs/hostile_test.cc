// Hostile images: random damage to metadata blocks of a rich image —
// with the checksums recomputed, so the damage reaches the parsers — must
// never crash fsck, mount or any call (ASan/UBSan watch for out-of-bounds
// reads); a corrupt structure is reported, never used.
#include "sfs_fixture.h"

#include <random>

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/format.h"
}

namespace {

// Walks everything reachable, ignoring errors.
void Walk(struct sfs *fs, uint64_t dir, int depth)
{
    if (depth > 8)
        return;
    std::vector<std::pair<uint64_t, uint32_t>> ents;
    sfs_readdir(fs, dir, 0, [](void *arg, const struct sfs_dirent *de) {
        if (de->namelen > 2 || de->name[0] != '.')
            static_cast<std::vector<std::pair<uint64_t, uint32_t>> *>(arg)->emplace_back(
                de->ino, de->type);
        return 0;
    }, &ents);
    char buf[8192];
    for (auto &e : ents) {
        struct sfs_attr a;
        if (sfs_getattr(fs, e.first, &a))
            continue;
        sfs_read(fs, e.first, 0, buf, sizeof(buf));
        sfs_read(fs, e.first, 400 * 4096, buf, 10);
        sfs_readlink(fs, e.first, buf, sizeof(buf));
        sfs_listxattr(fs, e.first, buf, sizeof(buf));
        sfs_getxattr(fs, e.first, "user.big", buf, sizeof(buf));
        sfs_seek(fs, e.first, 0, SFS_SEEK_HOLE);
        if (S_ISDIR(a.mode))
            Walk(fs, e.first, depth + 1);
    }
}

}  // namespace

class Hostile : public SfsFixture {};

TEST_F(Hostile, RandomMetadataDamageNeverCrashes)
{
    Format(8192, 1024);
    uint64_t frag = Create(SFS_ROOT_INO, "frag"), other = Create(SFS_ROOT_INO, "o");
    for (int i = 0; i < 300; i++) {
        Write(frag, (uint64_t)i * 4096, "f");
        Write(other, (uint64_t)i * 4096, "o");
    }
    uint64_t d = Mkdir(SFS_ROOT_INO, "dir");
    for (int i = 0; i < 200; i++)
        Create(d, ("entry-" + std::to_string(i)).c_str());
    std::string big(9000, 'v');
    ASSERT_EQ(sfs_setxattr(fs, nullptr, frag, "user.big", big.data(), big.size(), 0), 0);
    struct sfs_attr a;
    sfs_symlink(fs, nullptr, d, "long", std::string(1000, 'L').c_str(), 0, 0, &a);
    Unmount();
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
    for (int round = 0; round < 150; round++) {
        struct media *copy;
        ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_ALL, 0, &copy), 0);
        uint64_t blk = meta[rng() % meta.size()];
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
        struct sfs_fsck_result r;
        sfs_fsck(copy, [](void *, const char *) {}, nullptr, &r);
        struct media *h;
        ASSERT_EQ(media_fault_open_again(copy, &h), 0);
        struct sfs *cfs;
        if (sfs_mount(h, nullptr, &cfs) == 0) {
            Walk(cfs, SFS_ROOT_INO, 0);
            sfs_mknod(cfs, nullptr, SFS_ROOT_INO, "new", S_IFREG | 0644, 0, 0, 0, &a);
            sfs_unlink(cfs, nullptr, d, "entry-7");
            sfs_rename(cfs, nullptr, SFS_ROOT_INO, "o", d, "o2", 0);
            struct sfs_attr in = {};
            sfs_setattr(cfs, nullptr, frag, &in, SFS_SET_SIZE, nullptr);
            sfs_unmount(cfs);
        } else {
            media_close(h);
        }
        media_close(copy);
    }
}

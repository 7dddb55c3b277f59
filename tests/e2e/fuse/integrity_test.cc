// tests/e2e/fuse/integrity_test.cc - damaged images through the real
// device: an entry whose inode fails verification stays listed and says
// EUCLEAN on access (counted in `cisc status`); an image the device
// refuses at start is left byte for byte as it was.
#include "tests/e2e/fuse/mount_fixture.h"

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/format.h"
#include "device/storagefs/storagefs.h"
}

#include <dirent.h>

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

using e2e::MountTest;
using e2e::ReadFile;
using e2e::RunResult;
using e2e::Sh;

namespace {

class Integrity : public MountTest {
protected:
    // Inode number of a name in the image's root (device down), as the
    // file system library reads it.
    uint64_t RootEntryIno(const char *name)
    {
        struct media *m;
        struct sfs *fs;
        struct sfs_mount_opts mo = {};
        mo.read_only = true;
        if (media_open_file(img.c_str(), MEDIA_RDONLY, &m))
            return 0;
        if (sfs_mount(m, &mo, &fs)) {
            media_close(m);
            return 0;
        }
        struct sfs_attr a = {};
        int r = sfs_lookup(fs, SFS_ROOT_INO, name, &a);
        sfs_unmount(fs);
        return r ? 0 : a.ino;
    }

    // Edits inode ino's 512-byte slot in the image file; reseal: the
    // slot's checksum is recomputed, so the damage reaches the parsers.
    void EditInode(uint64_t ino, const std::function<void(uint8_t *)> &edit, bool reseal)
    {
        int fd = open(img.c_str(), O_RDWR);
        ASSERT_GE(fd, 0);
        uint8_t b[SFS_BSIZE];
        ASSERT_EQ(pread(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
        struct sfs_sb sb;
        sfs_sb_decode(b, &sb);
        off_t at = (off_t)(sb.itable_start + ino / SFS_INODES_PER_BLOCK) * SFS_BSIZE +
                   (off_t)(ino % SFS_INODES_PER_BLOCK) * SFS_INODE_SIZE;
        uint8_t slot[SFS_INODE_SIZE];
        ASSERT_EQ(pread(fd, slot, sizeof(slot), at), (ssize_t)sizeof(slot));
        ASSERT_EQ(le64_get(slot + DI_INO), ino) << "not the slot of inode " << ino;
        edit(slot);
        if (reseal)
            le32_put(slot + DI_CRC, crc32c(0, slot + 4, SFS_INODE_SIZE - 4));
        ASSERT_EQ(pwrite(fd, slot, sizeof(slot), at), (ssize_t)sizeof(slot));
        close(fd);
    }

    // The image's data ranges (holes skipped) and a checksum of each: any
    // write, even of zeros into a hole, changes it.
    std::string ImageHash()
    {
        int fd = open(img.c_str(), O_RDONLY);
        if (fd < 0)
            return "cannot open";
        std::string out;
        std::vector<uint8_t> buf(1 << 20);
        off_t end = lseek(fd, 0, SEEK_END), pos = 0;
        while (pos < end) {
            off_t data = lseek(fd, pos, SEEK_DATA);
            if (data < 0)
                break;
            off_t hole = lseek(fd, data, SEEK_HOLE);
            uint32_t crc = 0;
            for (off_t at = data; at < hole;) {
                ssize_t n = pread(fd, buf.data(), std::min<off_t>((off_t)buf.size(), hole - at), at);
                if (n <= 0)
                    break;
                crc = crc32c(crc, buf.data(), (size_t)n);
                at += n;
            }
            out += std::to_string(data) + "+" + std::to_string(hole - data) + ":" +
                   std::to_string(crc) + " ";
            pos = hole;
        }
        close(fd);
        return out;
    }

    // `cisc up` on the damaged image is refused, clearly, and writes nothing.
    void ExpectRefusedUntouched()
    {
        std::string before = ImageHash();
        RunResult r = Sh(UpCmd());
        EXPECT_NE(r.status, 0) << r.out;
        EXPECT_FALSE(e2e::IsCiscMount(mnt));
        std::string all = r.out + ReadFile(log);
        EXPECT_NE(all.find("corrupt"), std::string::npos) << all;
        EXPECT_NE(all.find("cisc fsck"), std::string::npos) << all;
        EXPECT_EQ(ImageHash(), before) << "the refused start wrote to the image";
    }
};

// Entries of the mount's root: name -> (d_ino, d_type).
std::map<std::string, std::pair<uint64_t, unsigned>> List(const std::string &dir)
{
    std::map<std::string, std::pair<uint64_t, unsigned>> out;
    DIR *d = opendir(dir.c_str());
    struct dirent *de;
    while (d && (de = readdir(d)))
        out[de->d_name] = { de->d_ino, de->d_type };
    if (d)
        closedir(d);
    return out;
}

long long StatusValue(const std::string &out, const std::string &line, const std::string &key)
{
    size_t p = out.find("\n" + line + " ");
    if (p == std::string::npos)
        return -1;
    std::string l = out.substr(p, out.find('\n', p + 1) - p);
    size_t k = l.find(" " + key + " ");
    return k == std::string::npos ? -1 : atoll(l.c_str() + k + key.size() + 2);
}

}  // namespace

TEST_F(Integrity, EntryOfCorruptInodeIsListedAndReportsEuclean)
{
    ASSERT_TRUE(e2e::WriteFile(P("good"), "fine"));
    ASSERT_TRUE(e2e::WriteFile(P("victim"), "damaged"));
    struct stat st;
    ASSERT_EQ(stat(P("victim").c_str(), &st), 0);
    uint64_t ino = st.st_ino;
    RunResult s = Sh(cisc + " status --raw " + mnt);
    EXPECT_EQ(StatusValue(s.out, "integrity", "corrupt"), 0) << s.out;
    Down();
    EditInode(ino, [](uint8_t *slot) { slot[DI_CRC] ^= 0x5a; }, false);
    Up();

    auto ents = List(mnt);
    ASSERT_TRUE(ents.count("victim")) << "the entry vanished from the listing";
    EXPECT_EQ(ents["victim"].first, ino);
    EXPECT_EQ(ents["victim"].second, (unsigned)DT_REG);
    EXPECT_TRUE(ents.count("good"));
    errno = 0;
    EXPECT_EQ(stat(P("victim").c_str(), &st), -1);
    EXPECT_EQ(errno, EUCLEAN);
    errno = 0;
    EXPECT_EQ(open(P("victim").c_str(), O_RDONLY), -1);
    EXPECT_EQ(errno, EUCLEAN);
    EXPECT_EQ(ReadFile(P("good")), "fine");
    RunResult ls = Sh("ls " + mnt);   // a tool lists it too
    EXPECT_NE(ls.out.find("victim"), std::string::npos) << ls.out;

    s = Sh(cisc + " status --raw " + mnt);
    EXPECT_GE(StatusValue(s.out, "integrity", "corrupt"), 2) << s.out;
    s = Sh(cisc + " status " + mnt);
    EXPECT_NE(s.out.find("integrity"), std::string::npos) << s.out;
}

// A root inode whose directory index is damaged, with a valid checksum:
// the file system's own mount refuses it before writing.
TEST_F(Integrity, DamagedRootIndexIsRefusedWithoutWriting)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    Down();
    EditInode(SFS_ROOT_INO, [](uint8_t *slot) { le64_put(slot + DI_DATA + ND_OWNER, 999); },
              true);
    ExpectRefusedUntouched();
}

// The device's system directory (read at start by the program registry)
// fails verification: refused before the mount's first write.
TEST_F(Integrity, DamagedSystemDirectoryIsRefusedWithoutWriting)
{
    Down();
    uint64_t sys = RootEntryIno(".cisc-system");
    ASSERT_NE(sys, 0u);
    EditInode(sys, [](uint8_t *slot) { slot[DI_CRC] ^= 0x5a; }, false);
    ExpectRefusedUntouched();
}

// tests/e2e/fuse/integrity_test.cc - damaged images through the real
// device: an entry whose inode fails verification stays listed and says
// EUCLEAN on access (counted in `cisc status`).
#include "tests/e2e/fuse/mount_fixture.h"

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/storagefs/format.h"
}

#include <dirent.h>

#include <functional>
#include <map>

using e2e::MountTest;
using e2e::ReadFile;
using e2e::RunResult;
using e2e::Sh;

namespace {

class Integrity : public MountTest {
protected:
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

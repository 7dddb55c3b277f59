// tests/e2e/safety/private_test.cc - images are private (made 0600; a
// device refuses one other users can write and warns when they can read
// it), and errors say what is wrong: a file that is not an image says so,
// no message names our source files unless --verbose, and df never shows
// room a write cannot use.
#include "tests/e2e/fuse/mount_fixture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

namespace e2e {
namespace {

class Private : public MountTest {
protected:
    unsigned Mode(const std::string &path)
    {
        struct stat st;
        EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
        return st.st_mode & 07777;
    }

    RunResult UpResult(const std::string &image, const std::string &extra = "")
    {
        return Sh(cisc + " up --cores 2 --log " + log + " " + extra + " " + image + " " + mnt);
    }
};

TEST_F(Private, ImagesAreMadePrivateAndOthersCannotReadThem)
{
    EXPECT_EQ(Mode(img), 0600u) << "cisc up --size made the image";
    std::string made = dir + "/made.img";
    RunResult r = Sh(cisc + " mkfs --size 64M " + made);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Mode(made), 0600u) << "cisc mkfs made the image";
    // an existing file made an image becomes private too
    std::string reused = dir + "/reused.img";
    ASSERT_TRUE(WriteFile(reused, "old contents"));
    ASSERT_EQ(chmod(reused.c_str(), 0666), 0);
    r = Sh(cisc + " mkfs --force --size 64M " + reused);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(Mode(reused), 0600u);
    // a file's contents are not readable off the raw image by another user
    ASSERT_TRUE(WriteFile(P("secret"), "the secret"));
    ASSERT_EQ(chmod(P("secret").c_str(), 0600), 0);
    Down();
    EXPECT_EQ(AsUser([&] { return open(img.c_str(), O_RDONLY) < 0 && errno == EACCES ? 0 : 1; }),
              0);
    Up();
}

TEST_F(Private, ImageOthersCanWriteIsRefusedAndOneTheyCanReadWarned)
{
    Down();
    ASSERT_EQ(chmod(img.c_str(), 0666), 0);
    RunResult r = UpResult(img);
    EXPECT_EQ(r.status, 2) << r.out;   // an environment error (cmd/cmd.h's table)
    EXPECT_NE(r.out.find("writable by other users (mode 0666)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("chmod 600 " + img), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    ASSERT_EQ(chmod(img.c_str(), 0620), 0);   // the group counts as other users
    EXPECT_EQ(UpResult(img).status, 2);
    ASSERT_EQ(chmod(img.c_str(), 0644), 0);
    r = UpResult(img);
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    EXPECT_NE(r.out.find("warning: image " + img + " is readable by other users (mode 0644)"),
              std::string::npos) << r.out;
    Down();
    ASSERT_EQ(chmod(img.c_str(), 0600), 0);
    r = UpResult(img);
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

TEST_F(Private, NotAnImageSaysSo)
{
    Down();
    std::string text = dir + "/notes.txt";
    std::string lines;
    for (int i = 0; i < 2000; i++)
        lines += "just some text, line " + std::to_string(i) + "\n";
    ASSERT_TRUE(WriteFile(text, lines));
    ASSERT_EQ(chmod(text.c_str(), 0600), 0);
    for (const std::string &file : { text, std::string("/dev/null") }) {
        RunResult r = UpResult(file);
        EXPECT_EQ(r.status, 2) << r.out;
        if (file == text) {
            EXPECT_NE(r.out.find(text + " is not a ciscfs image"), std::string::npos) << r.out;
        }
        EXPECT_EQ(r.out.find("corrupt"), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find("fsck"), std::string::npos) << r.out;
        EXPECT_FALSE(IsCiscMount(mnt));
    }
    EXPECT_EQ(ReadFile(text), lines) << "refusing it changed the file";
}

// A corrupt image is reported by what is wrong; where in our source the
// check sits is for --verbose only.
TEST_F(Private, CorruptionMessagesNameNoSourceFileUnlessVerbose)
{
    Down();
    // Damage the root inode's slot in the inode table: the mount checks it.
    RunResult info = Sh(cisc + " info " + img);
    size_t p = info.out.find("inode table ");
    ASSERT_NE(p, std::string::npos) << info.out;
    unsigned long long itable = strtoull(info.out.c_str() + p + 12, nullptr, 10);
    ASSERT_GT(itable, 0u) << info.out;
    int fd = open(img.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    char junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    ASSERT_EQ(pwrite(fd, junk, sizeof(junk), (off_t)itable * 4096), (ssize_t)sizeof(junk));
    close(fd);
    RunResult r = UpResult(img);
    EXPECT_EQ(r.status, 1) << r.out;   // the operation failed (cmd/cmd.h's table)
    EXPECT_NE(r.out.find("is corrupt"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(".c:"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("device/"), std::string::npos) << r.out;
    r = UpResult(img, "--verbose");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("device/storagefs/"), std::string::npos) << r.out;
    r = Sh(cisc + " fsck " + img);   // fsck says what is wrong, not where we looked
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("inode 1"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(".c:"), std::string::npos) << r.out;
}

// df's free space is space a write can use: fill exactly what statfs
// offers, in files, and every byte of it goes in.
TEST_F(Private, DfShowsOnlyRoomWritesCanUse)
{
    Down();
    ASSERT_EQ(unlink(img.c_str()), 0);
    Up("--size 24M");
    std::vector<char> chunk(1 << 20, 'd');
    for (int round = 0; round < 4; round++) {
        struct statvfs sv;
        ASSERT_EQ(statvfs(mnt.c_str(), &sv), 0);
        uint64_t room = (uint64_t)sv.f_bavail * sv.f_frsize;
        if (room == 0)
            break;
        std::string f = P("fill" + std::to_string(round));
        int fd = open(f.c_str(), O_WRONLY | O_CREAT, 0644);
        ASSERT_GE(fd, 0);
        uint64_t done = 0;
        while (done < room) {
            size_t n = room - done < chunk.size() ? (size_t)(room - done) : chunk.size();
            ssize_t w = write(fd, chunk.data(), n);
            ASSERT_EQ(w, (ssize_t)n) << "df offered " << room << " bytes, a write failed after "
                                     << done << ": " << strerror(errno);
            done += n;
        }
        ASSERT_EQ(fsync(fd), 0) << strerror(errno);
        ASSERT_EQ(close(fd), 0);
    }
    struct statvfs sv;
    ASSERT_EQ(statvfs(mnt.c_str(), &sv), 0);
    EXPECT_EQ(sv.f_bavail, 0u);
    EXPECT_LE(sv.f_bavail, sv.f_bfree);
}

}  // namespace
}  // namespace e2e

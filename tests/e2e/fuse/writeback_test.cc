// tests/e2e/fuse/writeback_test.cc - the mount with the kernel's writeback
// cache (cisc up --writeback) stays coherent with libcisc: data written
// through the mount and still cached as dirty pages is what a libcisc read
// sees, and libcisc appends and truncates are seen through the mount (data
// and size). The first two tests fail when the device does not make the kernel write its
// dirty pages back before a libcisc command. See docs/MOUNT.md, "The
// mount's writeback cache".
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <random>

namespace e2e {
namespace {

class Writeback : public CiscTest {
protected:
    void SetUp() override
    {
        const char *more = getenv("CISC_E2E_UP_ARGS");
        saved = more ? more : "";
        setenv("CISC_E2E_UP_ARGS", (saved + " --writeback").c_str(), 1);
        CiscTest::SetUp();
    }

    void TearDown() override
    {
        CiscTest::TearDown();
        setenv("CISC_E2E_UP_ARGS", saved.c_str(), 1);
    }

    // The whole file through libcisc.
    std::string CiscRead(uint64_t fh)
    {
        struct stat st;
        if (cisc_fstat(q, fh, &st) != 0)
            return "<fstat failed>";
        std::string s((size_t)st.st_size, '\0');
        ssize_t n = cisc_pread(q, fh, &s[0], s.size(), 0);
        return n == (ssize_t)s.size() ? s : "<short read>";
    }

    std::string saved;
};

// Unaligned writes through the mount (partial pages: the kernel reads the
// page first), libcisc reads, pwrites and appends, interleaved on one
// file kept open on the mount; both doors must agree with a model byte
// for byte after every step.
TEST_F(Writeback, InterleavedMountWritesAndLibciscAgree)
{
    int fd = open(P("f").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    std::mt19937 rng(14);
    std::string model;
    for (int round = 0; round < 300; round++) {
        size_t len = 1 + rng() % 9000;
        std::string data(len, '\0');
        for (char &c : data)
            c = (char)('a' + rng() % 26);
        size_t off = rng() % (model.size() + 5000);
        unsigned what = rng() % 4;
        if (what == 3) {   // libcisc truncate: shrinks (the kernel's size must drop) or grows
            size_t size = rng() % (model.size() + 5000);
            ASSERT_EQ(cisc_truncate(q, fh, size), 0);
            model.resize(size, '\0');
        } else if (what == 0) {
            ASSERT_EQ(pwrite(fd, data.data(), len, (off_t)off), (ssize_t)len);
        } else if (what == 1) {
            ASSERT_EQ(cisc_pwrite(q, fh, data.data(), len, off), (ssize_t)len);
        } else {
            uint64_t at = 0;
            ASSERT_EQ(cisc_append(q, fh, data.data(), len, &at), (ssize_t)len);
            ASSERT_EQ(at, model.size());
            off = model.size();
        }
        if (what != 3 && model.size() < off + len)
            model.resize(off + len, '\0');
        if (what != 3)
            model.replace(off, len, data);
        ASSERT_EQ(CiscRead(fh), model) << "libcisc view, round " << round << " op " << what;
        struct stat st;
        ASSERT_EQ(fstat(fd, &st), 0);
        ASSERT_EQ((size_t)st.st_size, model.size()) << "mount size, round " << round;
        std::string back(model.size(), '\0');
        ASSERT_EQ(pread(fd, &back[0], back.size(), 0), (ssize_t)back.size());
        ASSERT_EQ(back, model) << "mount view, round " << round << " op " << what;
    }
    EXPECT_EQ(cisc_close(q, fh), 0);
    EXPECT_EQ(close(fd), 0);
    EXPECT_EQ(ReadFile(P("f")), model);
}

// A libcisc truncate that shrinks a file the kernel caches: the kernel
// trusts its own size under the writeback cache, so the device makes it
// truncate its inode (wback.c, invariant 3). Checked with the file closed
// on the mount (inode and pages cached) and kept open with pages dirtied
// through it; the mount's later writes must not bring the cut bytes back.
TEST_F(Writeback, LibciscTruncateShrinksTheKernelsSize)
{
    ASSERT_TRUE(WriteFile(P("f"), "0123456789abcdef"));
    ASSERT_EQ(ReadFile(P("f")), "0123456789abcdef");   // pages and size cached
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_truncate(q, fh, 4), 0);
    struct stat st;
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 4);
    EXPECT_EQ(ReadFile(P("f")), "0123");

    int fd = open(P("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "xyz", 3, 10), 3);   // dirty pages, size 13, in the kernel
    ASSERT_EQ(cisc_truncate(q, fh, 2), 0);    // written back first, then cut
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 2);
    char buf[32];
    EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), 2);
    ASSERT_EQ(pwrite(fd, "Z", 1, 5), 1);      // past the new end: zeros between
    EXPECT_EQ(close(fd), 0);
    EXPECT_EQ(ReadFile(P("f")), std::string("01\0\0\0Z", 6));
    EXPECT_EQ(Get("f"), std::string("01\0\0\0Z", 6));
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Writeback, LibciscAppendSizeSeenByStatOnTheMount)
{
    ASSERT_TRUE(WriteFile(P("log"), "first line\n"));
    int fd = open(P("log").c_str(), O_WRONLY | O_APPEND);   // kept open: the kernel caches
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "mount line\n", 11), 11);
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "log", O_WRONLY, 0, &fh), 0);
    ASSERT_EQ(cisc_append(q, fh, "cisc line\n", 10, nullptr), 10);
    struct stat st;
    ASSERT_EQ(stat(P("log").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 32);
    ASSERT_EQ(write(fd, "last line\n", 10), 10);   // O_APPEND: after libcisc's line
    EXPECT_EQ(close(fd), 0);
    EXPECT_EQ(ReadFile(P("log")), "first line\nmount line\ncisc line\nlast line\n");
    EXPECT_EQ(Get("log"), "first line\nmount line\ncisc line\nlast line\n");
    EXPECT_EQ(cisc_close(q, fh), 0);
}

}  // namespace
}  // namespace e2e

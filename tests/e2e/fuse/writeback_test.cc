// tests/e2e/fuse/writeback_test.cc - the mount with the kernel's writeback
// cache (cisc up --writeback) stays coherent with libcisc: data written
// through the mount and still cached as dirty pages is what a libcisc read
// sees, and libcisc appends are seen through the mount (data and size).
// Both tests fail when the device does not make the kernel write its
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
        unsigned what = rng() % 3;
        if (what == 0) {
            ASSERT_EQ(pwrite(fd, data.data(), len, (off_t)off), (ssize_t)len);
        } else if (what == 1) {
            ASSERT_EQ(cisc_pwrite(q, fh, data.data(), len, off), (ssize_t)len);
        } else {
            uint64_t at = 0;
            ASSERT_EQ(cisc_append(q, fh, data.data(), len, &at), (ssize_t)len);
            ASSERT_EQ(at, model.size());
            off = model.size();
        }
        if (model.size() < off + len)
            model.resize(off + len, '\0');
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

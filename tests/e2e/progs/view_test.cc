// The bytes a bpf step sees from a READ step equal the file's bytes in
// every case, whether the device shows the READ's range in place (the
// mapped media: `cisc up --media-io mmap`, ctest names `.mmap`;
// device/storagefs/map_read.h) or copies it: a file written at once, holes
// and unwritten extents, extents not consecutive on the image, data newer
// in the journal than on the media, and an op that also writes the file it
// reads. The program is tests/bpf/device/upper.c (upper-cases a copy).
#include "tests/e2e/libcisc/cisc_fixture.h"
#include "tests/e2e/progs/progs_fixture.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <random>

namespace e2e {
namespace {

std::string Bytes(size_t n, int seed)
{
    std::string s(n, '\0');
    std::mt19937 rng(seed);
    for (auto &c : s)
        c = (char)(rng() & 0xff);
    return s;
}

// pwrite through the mount.
void PWrite(const std::string &path, uint64_t off, const std::string &d)
{
    int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0) << path;
    EXPECT_EQ(pwrite(fd, d.data(), d.size(), (off_t)off), (ssize_t)d.size());
    close(fd);
}

}  // namespace

class ProgView : public CiscTest {
protected:
    uint32_t id = 0;

    void SetUp() override
    {
        CiscTest::SetUp();
        if (HasFatalFailure())
            return;
        RunResult r = Sh(cisc + " prog load " + mnt + " " + DevObj("upper"));
        ASSERT_EQ(r.status, 0) << r.out;
        size_t p = r.out.find("(id ");
        ASSERT_NE(p, std::string::npos) << r.out;
        id = (uint32_t)atoi(r.out.c_str() + p + 4);
    }

    // READ [off, off + len) of name -> upper, one op; what upper returned.
    std::string ReadUpper(const std::string &name, uint64_t off, size_t len)
    {
        struct cisc_vec v;
        EXPECT_EQ(cisc_vec_init(&v, q), 0);
        int f = cisc_vec_open(&v, name.c_str(), O_RDONLY, 0);
        int rd = cisc_vec_read(&v, f, off, len);
        int bp = cisc_vec_bpf(&v, id, CISC_IN_STEP(rd), nullptr);
        std::string got(len + 8192, '\0');
        EXPECT_EQ(cisc_vec_out_to(&v, bp, got.data(), got.size()), 0);
        EXPECT_EQ(cisc_vec_submit(&v), 0) << name << " " << off << "+" << len;
        got.resize(cisc_vec_ret(&v, bp) < 0 ? 0 : cisc_vec_out_len(&v, bp));
        cisc_vec_free(&v);
        return got;
    }

    // The file's bytes [off, off + len) through the mount.
    std::string Expect(const std::string &name, uint64_t off, size_t len)
    {
        std::string all = ReadFile(P(name));
        return off >= all.size() ? std::string() : Upper(all.substr(off, len));
    }

    void Check(const std::string &name, uint64_t off, size_t len)
    {
        std::string want = Expect(name, off, len), got = ReadUpper(name, off, len);
        EXPECT_EQ(got.size(), want.size()) << name << " " << off << "+" << len;
        EXPECT_TRUE(got == want) << name << " " << off << "+" << len;
    }
};

TEST_F(ProgView, FileWrittenAtOnce)
{
    std::string d = Bytes((3 << 20) + 777, 1);
    ASSERT_TRUE(WriteFile(P("f"), d));
    const uint64_t cases[][2] = {{0, d.size()}, {1, 4095}, {4095, 2}, {12345, 1 << 20},
                                 {d.size() - 7, 4096}, {d.size(), 10}, {100, d.size() + 5000}};
    for (auto &c : cases)
        Check("f", c[0], c[1]);
}

TEST_F(ProgView, HolesAndUnwrittenExtents)
{
    std::string a = Bytes(5 * 4096 + 3, 2), b = Bytes(3 * 4096 + 10, 3);
    PWrite(P("s"), 0, a);
    PWrite(P("s"), 64 * 4096 + 1, b);   // a hole before
    int fd = open(P("s").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fallocate(fd, FALLOC_FL_KEEP_SIZE, 80 * 4096, 8 * 4096), 0);   // unwritten
    close(fd);
    PWrite(P("s"), 100 * 4096, a);
    const uint64_t cases[][2] = {{0, 110 * 4096}, {3, 5 * 4096}, {6 * 4096, 4096},
                                 {64 * 4096, 3 * 4096}, {81 * 4096, 100}, {66 * 4096, 40 * 4096},
                                 {100 * 4096 + 5, 4096}};
    for (auto &c : cases)
        Check("s", c[0], c[1]);
}

// Two files written block by block in turns: their extents alternate.
TEST_F(ProgView, ExtentsNotConsecutiveOnTheImage)
{
    for (int k = 0; k < 16; k++) {
        PWrite(P("x"), (uint64_t)k * 4096, Bytes(4096, 10 + k));
        PWrite(P("y"), (uint64_t)k * 4096, Bytes(4096, 40 + k));
    }
    for (uint64_t off : {0ull, 100ull, 4096ull, 4096ull * 7 + 9})
        for (size_t len : {(size_t)100, (size_t)4096, (size_t)3 * 4096 + 1, (size_t)1 << 20}) {
            Check("x", off, len);
            Check("y", off, len);
        }
}

// A MicroTx overwrite inside one block is journaled (its commit is the
// step's): until the checkpoint the block cache holds bytes newer than
// the media, and the next op's program sees those.
TEST_F(ProgView, DataNewerInTheJournal)
{
    std::string d = Bytes(1 << 20, 4);
    ASSERT_TRUE(WriteFile(P("j"), d));
    for (int round = 0; round < 4; round++) {
        std::string n = Bytes(1000, 50 + round);
        uint64_t at = 4096 * (uint64_t)(3 + 5 * round) + 17;
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        ASSERT_EQ(cisc_vec_set_tx(&v, CISC_TX_MICRO), 0);
        int f = cisc_vec_open(&v, "j", O_WRONLY, 0);
        int w = cisc_vec_write(&v, f, at, CISC_IN_BUF(n.data(), n.size()));
        ASSERT_EQ(cisc_vec_submit(&v), 0);
        EXPECT_EQ(cisc_vec_ret(&v, w), (int64_t)n.size());
        cisc_vec_free(&v);
        d.replace(at, n.size(), n);
        std::string got = ReadUpper("j", 0, d.size());
        EXPECT_TRUE(got == Upper(d)) << "round " << round;
        EXPECT_TRUE(ReadUpper("j", at - 17, 4096) == Upper(d.substr(at - 17, 4096)));
    }
}

// `--media-io auto` (the default) maps an image that lives in RAM (tmpfs,
// ramfs: no media errors to become SIGBUS) and preads any other; `cisc
// status` says which, and an explicit choice wins.
bool InRam(const std::string &path)
{
    struct statfs sf;
    return statfs(path.c_str(), &sf) == 0 &&
           ((unsigned long)sf.f_type == TMPFS_MAGIC || (unsigned long)sf.f_type == RAMFS_MAGIC);
}

TEST_F(ProgsTest, MediaIoAutoMapsAnImageInRamOnly)
{
    if (getenv("CISC_E2E_UP_ARGS"))
        GTEST_SKIP() << "CISC_E2E_UP_ARGS chooses the media I/O";
    EXPECT_EQ(StatusLine("media_io"), std::string("media_io ") + (InRam(dir) ? "mmap" : "pread"));
    Down();
    char tmpl[] = "/dev/shm/ciscfs-e2e-XXXXXX";
    if (!mkdtemp(tmpl))
        GTEST_SKIP() << "no /dev/shm";
    struct Gone {
        std::string path;
        ~Gone() { Sh("rm -rf " + path); }
    } shm{tmpl};
    img = shm.path + "/img";
    if (!InRam(shm.path))
        GTEST_SKIP() << "/dev/shm is not in RAM here";
    std::string d = Bytes(100 << 10, 7);
    Up();
    EXPECT_EQ(StatusLine("media_io"), "media_io mmap");
    EXPECT_TRUE(WriteFile(P("f"), d));
    Down();
    Up("--media-io pread");
    EXPECT_EQ(StatusLine("media_io"), "media_io pread");
    EXPECT_TRUE(ReadFile(P("f")) == d);
    Down();
}

// An op that reads a file and then writes it: the program sees the bytes
// from before the write (the op's own writes are applied at its end).
TEST_F(ProgView, OpThatWritesTheFileItReads)
{
    std::string d = Bytes(256 << 10, 5), n = Bytes(8192, 6);
    ASSERT_TRUE(WriteFile(P("w"), d));
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "w", O_RDWR, 0);
    int rd = cisc_vec_read(&v, f, 0, d.size());
    int bp = cisc_vec_bpf(&v, id, CISC_IN_STEP(rd), nullptr);
    std::string got(d.size() + 8192, '\0');
    ASSERT_EQ(cisc_vec_out_to(&v, bp, got.data(), got.size()), 0);
    cisc_vec_write(&v, f, 4096, CISC_IN_BUF(n.data(), n.size()));
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    got.resize(cisc_vec_out_len(&v, bp));
    cisc_vec_free(&v);
    EXPECT_TRUE(got == Upper(d));
    d.replace(4096, n.size(), n);
    EXPECT_TRUE(ReadFile(P("w")) == d);
}

}  // namespace e2e

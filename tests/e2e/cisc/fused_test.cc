// tests/e2e/cisc/fused_test.cc - fused ops against a real device (`cisc
// up`) through the real libcisc: every convenience call of FusionFS
// Table 2, the builder (dependency chains, independent steps, several
// files), asynchronous completion, batching, keys, and visibility of
// fused changes through the FUSE mount.
#include "tests/e2e/libcisc/cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
}

#include <zstd.h>

namespace e2e {
namespace {

std::string Pattern(size_t n, unsigned seed)
{
    std::string s(n, '\0');
    uint32_t x = seed * 2654435761u + 7;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = (char)('a' + (x >> 16) % 26);
    }
    return s;
}

std::string Le32(uint32_t v)
{
    return std::string(reinterpret_cast<const char *>(&v), 4);
}

class Fused : public CiscTest {
protected:
    uint64_t Open(const std::string &path, int flags)
    {
        uint64_t fh = 0;
        EXPECT_EQ(cisc_open(q, path.c_str(), flags, 0644, &fh), 0) << path;
        return fh;
    }
    uint32_t Key(uint8_t fill)
    {
        uint8_t k[CISC_KEY_BYTES];
        memset(k, fill, sizeof(k));
        uint32_t id = 0;
        EXPECT_EQ(cisc_key_add(s, k, &id), 0);
        return id;
    }
};

TEST_F(Fused, OpenWriteCloseAndOpenReadClose)
{
    std::string data = Pattern(256 << 10, 1);
    EXPECT_EQ(cisc_open_write_close(q, "owc", O_CREAT | O_TRUNC, 0640, data.data(), data.size(),
                                    0), (ssize_t)data.size());
    EXPECT_EQ(ReadFile(P("owc")), data);   // through the mount, at once
    struct stat st;
    ASSERT_EQ(stat(P("owc").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    std::string back(data.size() + 10, '\0');
    EXPECT_EQ(cisc_open_read_close(q, "owc", &back[0], back.size(), 0), (ssize_t)data.size());
    EXPECT_EQ(back.substr(0, data.size()), data);
    EXPECT_EQ(cisc_open_read_close(q, "missing", &back[0], 10, 0), -ENOENT);
    EXPECT_EQ(cisc_open_write_close(q, "owc", O_CREAT | O_EXCL, 0644, "x", 1, 0), -EEXIST);
}

TEST_F(Fused, FusedChangesInvalidateTheMountsCaches)
{
    Put("cached", std::string(8192, 'o'));
    ASSERT_EQ(ReadFile(P("cached")), std::string(8192, 'o'));   // pages and attributes cached
    struct stat st;
    ASSERT_EQ(stat(P("cached").c_str(), &st), 0);
    uint64_t fh = Open("cached", O_RDWR);
    ASSERT_EQ(cisc_read_modify_write(q, fh, 4096, 4096, "NEW", 3, 10), 4096);
    std::string want(8192, 'o');
    want.replace(4096 + 10, 3, "NEW");
    EXPECT_EQ(ReadFile(P("cached")), want);
    ASSERT_EQ(cisc_append_crc_write(q, fh, "tail", 4, nullptr), 4);
    ASSERT_EQ(stat(P("cached").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 8192 + 8);
    // A name the op creates and one it removes show up at once.
    ASSERT_EQ(access(P("born").c_str(), F_OK), -1);
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "born", O_WRONLY | O_CREAT, 0644);
    cisc_vec_write(&v, f, 0, CISC_IN_BUF("x", 1));
    cisc_vec_unlink(&v, "cached");
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    cisc_vec_free(&v);
    EXPECT_EQ(ReadFile(P("born")), "x");
    EXPECT_EQ(access(P("cached").c_str(), F_OK), -1);
}

TEST_F(Fused, WriteFsync)
{
    uint64_t fh = Open("wf", O_CREAT | O_RDWR);
    EXPECT_EQ(cisc_write_fsync(q, fh, "durable", 7, 3), 7);
    EXPECT_EQ(ReadFile(P("wf")), std::string("\0\0\0durable", 10));
    cisc_close(q, fh);
    EXPECT_EQ(cisc_write_fsync(q, fh, "x", 1, 0), -EBADF);   // closed
}

TEST_F(Fused, ReadModifyWrite)
{
    std::string data = Pattern(4 * 4096, 2);
    Put("rmw", data);
    uint64_t fh = Open("rmw", O_RDWR);
    EXPECT_EQ(cisc_read_modify_write(q, fh, 8192, 4096, "HELLO", 5, 100), 4096);
    std::string want = data;
    want.replace(8192 + 100, 5, "HELLO");
    EXPECT_EQ(ReadFile(P("rmw")), want);
}

TEST_F(Fused, AppendCrcWriteAndReadVerifyCrc)
{
    uint64_t fh = Open("log", O_CREAT | O_RDWR | O_APPEND);
    std::vector<uint64_t> offs;
    std::string want;
    for (int i = 0; i < 20; i++) {
        std::string rec = Pattern(4096, 10 + i);
        uint64_t off = 0;
        ASSERT_EQ(cisc_append_crc_write(q, fh, rec.data(), rec.size(), &off), 4096);
        EXPECT_EQ(off, want.size());
        offs.push_back(off);
        want += rec + Le32(crc32c(0, rec.data(), rec.size()));
    }
    EXPECT_EQ(ReadFile(P("log")), want);
    std::string buf(4096, '\0');
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(cisc_read_verify_crc(q, fh, offs[i], &buf[0], 4096), 4096);
        EXPECT_EQ(buf, Pattern(4096, 10 + i));
    }
    // Damage one record through the mount: the device finds it.
    std::string bad = want;
    bad[offs[3] + 10] ^= 1;
    ASSERT_TRUE(WriteFile(P("log"), bad));
    EXPECT_EQ(cisc_read_verify_crc(q, fh, offs[3], &buf[0], 4096), -EBADMSG);
    EXPECT_EQ(cisc_read_verify_crc(q, fh, offs[19] + 2, &buf[0], 4096), -EBADMSG);   // short
}

TEST_F(Fused, ReadCompressWriteAndReadDecompress)
{
    std::string text;
    while (text.size() < (1 << 20))
        text += "the device compresses next to the data " + std::to_string(text.size() % 97);
    Put("plain", text);
    uint64_t in = Open("plain", O_RDONLY), out = Open("packed", O_CREAT | O_RDWR | O_TRUNC);
    std::vector<std::pair<uint64_t, ssize_t>> frames;
    for (uint64_t off = 0; off < text.size(); off += 256 << 10) {
        uint64_t at = 0;
        ssize_t n = cisc_read_compress_write(q, in, off, 256 << 10, out, 3, &at);
        ASSERT_GT(n, 0);
        EXPECT_LT(n, 256 << 10);
        frames.push_back({ at, n });
    }
    std::string back, chunk(256 << 10, '\0');
    for (auto &f : frames) {
        ssize_t n = cisc_read_decompress(q, out, f.first, (size_t)f.second, &chunk[0],
                                         chunk.size());
        ASSERT_GT(n, 0);
        back.append(chunk, 0, (size_t)n);
    }
    EXPECT_EQ(back, text.substr(0, back.size()));
    EXPECT_EQ(back.size(), text.size());
    // The frames on disk are plain zstd a host tool can read.
    std::string packed = ReadFile(P("packed"));
    ASSERT_GE(packed.size(), (size_t)frames[0].second);   // the source of the next line
    std::string first(256 << 10, '\0');
    EXPECT_EQ(ZSTD_decompress(&first[0], first.size(), packed.data(), (size_t)frames[0].second),
              first.size());
    // Decompression bounded by the caller's buffer; garbage is -EBADMSG.
    EXPECT_EQ(cisc_read_decompress(q, out, 0, (size_t)frames[0].second, &chunk[0], 1000),
              -EOVERFLOW);
    EXPECT_EQ(cisc_read_decompress(q, in, 0, 4096, &chunk[0], chunk.size()), -EBADMSG);
}

TEST_F(Fused, ReadEncryptWriteAndReadDecrypt)
{
    uint32_t key = Key(0x5a);
    std::string secret = Pattern(100000, 3);
    Put("clear", secret);
    uint64_t in = Open("clear", O_RDONLY), out = Open("sealed", O_CREAT | O_RDWR | O_TRUNC);
    uint64_t at = 1;
    ASSERT_EQ(cisc_read_encrypt_write(q, in, 0, secret.size(), out, key, &at),
              (ssize_t)secret.size() + CISC_SEAL_BYTES);
    EXPECT_EQ(at, 0u);
    std::string sealed = ReadFile(P("sealed"));
    EXPECT_EQ(sealed.find(secret.substr(0, 32)), std::string::npos);
    std::string back(secret.size(), '\0');
    EXPECT_EQ(cisc_read_decrypt(q, out, 0, sealed.size(), key, &back[0], back.size()),
              (ssize_t)secret.size());
    EXPECT_EQ(back, secret);
    uint32_t other = Key(0x5b);
    EXPECT_EQ(cisc_read_decrypt(q, out, 0, sealed.size(), other, &back[0], back.size()),
              -EBADMSG);
    EXPECT_EQ(cisc_key_remove(s, key), 0);
    EXPECT_EQ(cisc_read_decrypt(q, out, 0, sealed.size(), key, &back[0], back.size()), -ENOKEY);
    EXPECT_EQ(cisc_key_remove(s, key), -ENOKEY);
}

TEST_F(Fused, KeysBelongToTheirSession)
{
    uint32_t key = Key(1);
    Put("k", "some bytes to seal");
    uint64_t in = Open("k", O_RDONLY), out = Open("k.enc", O_CREAT | O_RDWR);
    ASSERT_GT(cisc_read_encrypt_write(q, in, 0, 18, out, key, nullptr), 0);
    struct cisc_session *s2;
    struct cisc_queue *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s2), 0);
    ASSERT_EQ(cisc_queue_create(s2, &q2), 0);
    uint64_t fh2;
    ASSERT_EQ(cisc_open(q2, "k.enc", O_RDONLY, 0, &fh2), 0);
    char buf[64];
    EXPECT_EQ(cisc_read_decrypt(q2, fh2, 0, 58, key, buf, sizeof(buf)), -ENOKEY);
    cisc_session_close(s2);
}

TEST_F(Fused, BuilderChainsSeveralFilesAndResults)
{
    Put("a", "alpha-");
    Put("b", "beta");
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int fa = cisc_vec_open(&v, "a", O_RDONLY, 0);
    int fb = cisc_vec_open(&v, "/b", O_RDONLY, 0);
    int ra = cisc_vec_read(&v, fa, 0, 100);
    int rb = cisc_vec_read(&v, fb, 0, 100);
    int c = cisc_vec_concat(&v, ra, CISC_IN_STEP(rb));
    int h = cisc_vec_xxh3(&v, CISC_IN_STEP(c), 0);
    int fo = cisc_vec_open(&v, "ab", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int w = cisc_vec_write(&v, fo, 0, CISC_IN_STEP(c));
    int ap = cisc_vec_append(&v, fo, CISC_IN_STEP(h));
    char both[16] = {};
    ASSERT_EQ(cisc_vec_out_to(&v, c, both, sizeof(both)), 0);
    ASSERT_GE(ap, 0);
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    EXPECT_EQ(cisc_vec_ret(&v, w), 10);
    EXPECT_EQ(cisc_vec_ret(&v, h), 8);
    EXPECT_EQ(cisc_vec_out_len(&v, ap), 10u);
    EXPECT_EQ(cisc_vec_ran(&v), 9u);
    EXPECT_EQ(std::string(both, 10), "alpha-beta");
    EXPECT_EQ(ReadFile(P("ab")).substr(0, 10), "alpha-beta");
    EXPECT_EQ(ReadFile(P("ab")).size(), 18u);
    cisc_vec_free(&v);
}

TEST_F(Fused, BuilderErrorsStickAndNothingIsSubmitted)
{
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "never", O_WRONLY | O_CREAT, 0644);
    int w = cisc_vec_write(&v, f, 0, CISC_IN_STEP(5));   // forward reference
    EXPECT_EQ(w, -EINVAL);
    int r = cisc_vec_read(&v, 99, 0, 10);                // no such file
    EXPECT_LT(r, 0);
    EXPECT_EQ(cisc_vec_submit(&v), -EINVAL);
    EXPECT_EQ(cisc_vec_ran(&v), 0u);
    cisc_vec_free(&v);
    EXPECT_NE(access(P("never").c_str(), F_OK), 0);
    // More than CISC_VEC_MAX steps.
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    for (int i = 0; i < CISC_VEC_MAX; i++)
        ASSERT_EQ(cisc_vec_crc32c(&v, CISC_IN_BUF("x", 1), 0), i);
    EXPECT_EQ(cisc_vec_crc32c(&v, CISC_IN_BUF("x", 1), 0), -E2BIG);
    EXPECT_EQ(cisc_vec_submit(&v), -E2BIG);
    cisc_vec_free(&v);
}

TEST_F(Fused, SixtyFourStepsInOneOp)
{
    uint64_t fh = Open("wide", O_CREAT | O_RDWR | O_TRUNC);
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_fh(&v, fh);
    std::string want;
    for (int i = 0; i < CISC_VEC_MAX; i++) {
        std::string piece = std::to_string(i) + ";";
        ASSERT_EQ(cisc_vec_append(&v, f, CISC_IN_BUF(piece.data(), piece.size())), i);
        want += piece;
    }
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    EXPECT_EQ(cisc_vec_ran(&v), (unsigned)CISC_VEC_MAX);
    cisc_vec_free(&v);
    EXPECT_EQ(ReadFile(P("wide")), want);
}

TEST_F(Fused, IndependentStepsOnSeveralCores)
{
    std::vector<std::string> parts;
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    uint32_t crcs[8] = {};
    for (int i = 0; i < 8; i++) {
        parts.push_back(Pattern(128 << 10, 50 + i));
        int c = cisc_vec_crc32c(&v, CISC_IN_BUF(parts[i].data(), parts[i].size()), 0);
        ASSERT_EQ(cisc_vec_independent(&v, c), 0);
        ASSERT_EQ(cisc_vec_out_to(&v, c, &crcs[i], 4), 0);
    }
    ASSERT_EQ(cisc_vec_submit(&v), 0);
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(crcs[i], crc32c(0, parts[i].data(), parts[i].size())) << i;
    cisc_vec_free(&v);
    // The device handed shares of the run to its other core.
    long long shares = -1;
    for (int i = 0; i < 100 && shares <= 0; i++) {
        shares = Status("op cisc_part", "count");
        if (shares <= 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GT(shares, 0);
}

TEST_F(Fused, AsyncCompletionAndBatchingManyOpsPerDoorbell)
{
    uint64_t fh = Open("batch", O_CREAT | O_RDWR | O_APPEND);
    const int kOps = 10;
    struct cisc_vec vs[kOps];
    struct cisc_vec *ptrs[kOps];
    std::string recs[kOps];
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < kOps; i++) {
            ASSERT_EQ(cisc_vec_init(&vs[i], q), 0);
            ptrs[i] = &vs[i];
            recs[i] = Pattern(1000, round * 100 + i);
            int f = cisc_vec_fh(&vs[i], fh);
            cisc_vec_append(&vs[i], f, CISC_IN_BUF(recs[i].data(), recs[i].size()));
            int c = cisc_vec_crc32c(&vs[i], CISC_IN_BUF(recs[i].data(), recs[i].size()), 0);
            ASSERT_GE(cisc_vec_append(&vs[i], f, CISC_IN_STEP(c)), 0);
        }
        ASSERT_EQ(cisc_vec_submit_batch(ptrs, kOps), 0);
        // Reap in reverse order, one with poll first.
        int64_t p;
        while ((p = cisc_vec_poll(&vs[kOps - 1])) == -EAGAIN)
            ;
        EXPECT_EQ(p, 0);
        for (int i = kOps - 1; i >= 0; i--) {
            EXPECT_EQ(cisc_vec_wait(&vs[i]), 0);
            cisc_vec_free(&vs[i]);
        }
    }
    // Every record is followed by its own checksum: ops never interleave.
    std::string log = ReadFile(P("batch"));
    ASSERT_EQ(log.size(), 5u * kOps * 1004);
    for (size_t off = 0; off < log.size(); off += 1004)
        EXPECT_EQ(log.substr(off + 1000, 4), Le32(crc32c(0, &log[off], 1000))) << off;
}

TEST_F(Fused, ArenaBuffersAreZeroCopy)
{
    void *buf;
    ASSERT_EQ(cisc_buf_alloc(q, 8192, &buf), 0);
    memset(buf, 'z', 8192);
    uint64_t fh = Open("zc", O_CREAT | O_RDWR);
    EXPECT_EQ(cisc_append_crc_write(q, fh, buf, 8192, nullptr), 8192);
    memset(buf, 0, 8192);
    EXPECT_EQ(cisc_read_verify_crc(q, fh, 0, buf, 8192), 8192);
    EXPECT_EQ(((char *)buf)[8191], 'z');
    cisc_buf_free(q, buf);
}

}  // namespace
}  // namespace e2e

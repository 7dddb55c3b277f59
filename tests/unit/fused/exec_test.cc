// tests/unit/fused/exec_test.cc - fused ops executed by the engine on a
// real StorageFS: the FusionFS sequences, dependency chains,
// read-your-writes, independent steps on several cores, session handles,
// and all-or-nothing behaviour when a step fails in the middle.
#include "cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
#include "device/engine/stats.h"
}

#include <atomic>
#include <thread>
#include <zstd.h>

using Cisc = CiscFixture;

static uint32_t Le32(const std::string &s)
{
    return (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[1] << 8 |
           (uint32_t)(uint8_t)s[2] << 16 | (uint32_t)(uint8_t)s[3] << 24;
}

static std::string Crc(const std::string &s)
{
    uint32_t c = crc32c(0, s.data(), s.size());
    return std::string(reinterpret_cast<const char *>(&c), 4);
}

TEST_F(Cisc, OpenWriteCloseCreatesTheFile)
{
    Arena a;
    Vec v(a);
    auto f = v.Open("/owc", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    auto w = v.Write(f, 0, -1, "hello world");
    v.Close(f);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(out.res[f].ret, 0);
    EXPECT_EQ(out.res[w].ret, 11);
    EXPECT_EQ(out.ran, 3u);
    EXPECT_EQ(Get("owc"), "hello world");
    struct sfs_attr at;
    ASSERT_EQ(sfs_getattr(fs, Ino("owc"), &at), 0);
    EXPECT_EQ(at.mode & 07777, 0600u);
}

TEST_F(Cisc, OpenReadCloseToTheArena)
{
    std::string data = Pattern(10000, 1);
    Put("orc", data);
    Arena a;
    Vec v(a);
    auto f = v.Open("orc", O_RDONLY);
    auto r = v.Read(f, 100, 20000);
    uint64_t dst = v.OutTo(r, 20000);
    v.Close(f);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(out.res[r].ret, 9900);
    EXPECT_EQ(out.res[r].out_len, 9900u);
    EXPECT_EQ(a.Get(dst, 9900), data.substr(100));
}

TEST_F(Cisc, AppendCrcWriteAsLevelDbDoes)
{
    Put("log", "");
    std::string rec1 = Pattern(4096, 2), rec2 = Pattern(4096, 3);
    for (const std::string &rec : {rec1, rec2}) {
        Arena a;
        Vec v(a);
        auto f = v.Open("log", O_WRONLY | O_APPEND);
        auto d = v.Append(f, -1, rec);
        auto c = v.Compute(WIRE_STEP_CRC32C, -1, rec);
        auto k = v.Append(f, c);
        struct eng_cisc out;
        ASSERT_EQ(Run(v, &out), 0);
        EXPECT_EQ(out.res[d].ret, 4096);
        EXPECT_EQ(out.res[k].ret, 4);
        EXPECT_EQ(out.res[k].out_len, out.res[d].out_len + 4096);   // where it landed
    }
    EXPECT_EQ(Get("log"), rec1 + Crc(rec1) + rec2 + Crc(rec2));
}

TEST_F(Cisc, ReadVerifyCrcGoodAndCorrupt)
{
    std::string rec = Pattern(4096, 4);
    Put("rec", rec + Crc(rec));
    for (bool corrupt : {false, true}) {
        if (corrupt) {
            std::string bad = rec;
            bad[17] ^= 1;
            Put("rec", bad + Crc(rec));
        }
        Arena a;
        Vec v(a);
        auto f = v.Open("rec", O_RDONLY);
        auto d = v.Read(f, 0, 4096);
        auto s = v.Read(f, 4096, 4);
        auto c = v.Compute(WIRE_STEP_CRC32C, d);
        auto ok = v.Two(WIRE_STEP_VERIFY, c, s);
        auto cl = v.Close(f);
        struct eng_cisc out;
        int64_t st = Run(v, &out);
        if (!corrupt) {
            EXPECT_EQ(st, 0);
            EXPECT_EQ(out.res[ok].ret, 0);
        } else {
            EXPECT_EQ(st, -EBADMSG);
            EXPECT_EQ(out.res[ok].ret, -EBADMSG);
            EXPECT_EQ(out.res[cl].ret, -ECANCELED);
            EXPECT_EQ(out.res[c].ret, 4);
            EXPECT_EQ(out.ran, 4u);
        }
    }
}

TEST_F(Cisc, ReadModifyWrite)
{
    std::string data = Pattern(3 * 4096, 5);
    Put("rmw", data);
    Arena a;
    Vec v(a);
    auto f = v.Open("rmw", O_RDWR);
    auto r = v.Read(f, 4096, 4096);
    auto p = v.Two(WIRE_STEP_PATCH, r, -1, "PATCHED", 100);
    auto w = v.Write(f, 4096, p);
    v.Close(f);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(out.res[w].ret, 4096);
    std::string want = data;
    want.replace(4096 + 100, 7, "PATCHED");
    EXPECT_EQ(Get("rmw"), want);
}

// A PATCH patches its input's buffer in place when no other step reads
// that input (exec.c patch_in_place); a READ that other steps use too,
// before the PATCH (a deferred write holds its bytes until the commit)
// or after it, keeps its bytes for them.
TEST_F(Cisc, PatchLeavesItsInputToItsOtherReaders)
{
    std::string data = Pattern(2 * 4096, 6);
    Put("src", data);
    Arena a;
    Vec v(a);
    auto f = v.Open("src", O_RDWR);
    auto r = v.Read(f, 0, 4096);
    auto before = v.Open("before", O_WRONLY | O_CREAT);
    v.Write(before, 0, r);
    auto p = v.Two(WIRE_STEP_PATCH, r, -1, "PATCHED", 100);
    v.Write(f, 0, p);
    auto after = v.Open("after", O_WRONLY | O_CREAT);
    v.Write(after, 0, r);
    auto c = v.Compute(WIRE_STEP_CRC32C, r);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    std::string block = data.substr(0, 4096), want = data;
    want.replace(100, 7, "PATCHED");
    EXPECT_EQ(Get("src"), want);
    EXPECT_EQ(Get("before"), block);
    EXPECT_EQ(Get("after"), block);
    EXPECT_EQ(out.res[c].ret, 4);
    EXPECT_EQ(out.res[p].out_len, 4096u);
}

TEST_F(Cisc, ReadCompressWriteThenReadDecompress)
{
    std::string data;
    for (int i = 0; i < 2000; i++)
        data += "line " + std::to_string(i % 50) + " of a compressible file\n";
    Put("plain", data);
    Arena a;
    Vec v(a);
    auto in = v.Open("plain", O_RDONLY);
    auto r = v.Read(in, 0, data.size());
    auto z = v.Compute(WIRE_STEP_ZSTD_COMPRESS, r, "", 3);
    auto o = v.Open("packed.zst", O_WRONLY | O_CREAT | O_TRUNC);
    auto w = v.Write(o, 0, z);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_LT(out.res[w].ret, (int64_t)data.size() / 4);
    std::string packed = Get("packed.zst");
    std::string back(data.size(), '\0');
    EXPECT_EQ(ZSTD_decompress(&back[0], back.size(), packed.data(), packed.size()), data.size());
    EXPECT_EQ(back, data);

    Arena b;
    Vec d(b);
    auto pf = d.Open("packed.zst", O_RDONLY);
    auto pr = d.Read(pf, 0, 1 << 20);
    auto dz = d.Compute(WIRE_STEP_ZSTD_DECOMPRESS, pr, "", 0, 1 << 20);
    uint64_t dst = d.OutTo(dz, 1 << 20);
    struct eng_cisc out2;
    ASSERT_EQ(Run(d, &out2), 0);
    ASSERT_EQ(out2.res[dz].out_len, data.size());
    EXPECT_EQ(b.Get(dst, data.size()), data);
}

TEST_F(Cisc, ReadEncryptWriteThenReadDecrypt)
{
    uint32_t key = AddKey(0x42);
    std::string data = Pattern(50000, 6);
    Put("secret", data);
    Arena a;
    Vec v(a);
    auto in = v.Open("secret", O_RDONLY);
    auto r = v.Read(in, 0, data.size());
    auto e = v.Compute(WIRE_STEP_ENCRYPT, r);
    v.st[e].key_id = key;
    auto o = v.Open("secret.enc", O_WRONLY | O_CREAT | O_TRUNC);
    v.Write(o, 0, e);
    ASSERT_EQ(Run(v), 0);
    std::string sealed = Get("secret.enc");
    EXPECT_EQ(sealed.size(), data.size() + 40);
    EXPECT_EQ(sealed.find(data.substr(0, 64)), std::string::npos);

    Arena b;
    Vec d(b);
    auto f = d.Open("secret.enc", O_RDONLY);
    auto rr = d.Read(f, 0, 1 << 20);
    auto dc = d.Compute(WIRE_STEP_DECRYPT, rr);
    d.st[dc].key_id = key;
    uint64_t dst = d.OutTo(dc, 1 << 20);
    struct eng_cisc out;
    ASSERT_EQ(Run(d, &out), 0);
    ASSERT_EQ(out.res[dc].out_len, data.size());
    EXPECT_EQ(b.Get(dst, data.size()), data);

    // A wrong key (another registered one) cannot open it: forged.
    d.st[dc].key_id = AddKey(0x43);
    EXPECT_EQ(Run(d, &out), -EBADMSG);
    EXPECT_EQ(out.res[dc].ret, -EBADMSG);
    // An unknown key id is refused before any step runs.
    d.st[dc].key_id = 999;
    EXPECT_EQ(Run(d, &out), -ENOKEY);
    EXPECT_EQ(out.res[0].ret, -ECANCELED);
    EXPECT_EQ(out.ran, 0u);
}

TEST_F(Cisc, DependencyChainOfComputeSteps)
{
    // read -> compress -> encrypt -> decrypt -> decompress -> verify
    uint32_t key = AddKey(7);
    std::string data = Pattern(30000, 7) + std::string(30000, 'z');
    Put("chain", data);
    Arena a;
    Vec v(a);
    auto f = v.Open("chain", O_RDONLY);
    auto r = v.Read(f, 0, data.size());
    auto z = v.Compute(WIRE_STEP_ZSTD_COMPRESS, r, "", 1);
    auto e = v.Compute(WIRE_STEP_ENCRYPT, z);
    v.st[e].key_id = key;
    auto dcy = v.Compute(WIRE_STEP_DECRYPT, e);
    v.st[dcy].key_id = key;
    auto dz = v.Compute(WIRE_STEP_ZSTD_DECOMPRESS, dcy, "", 0, 1 << 20);
    auto ok = v.Two(WIRE_STEP_VERIFY, dz, r);
    auto h1 = v.Compute(WIRE_STEP_XXH3, dz);
    auto h2 = v.Compute(WIRE_STEP_XXH3, r);
    auto ok2 = v.Two(WIRE_STEP_VERIFY, h1, h2);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(out.res[ok].ret, 0);
    EXPECT_EQ(out.res[ok2].ret, 0);
    EXPECT_EQ(out.res[dz].out_len, data.size());
    EXPECT_EQ(out.res[e].out_len, out.res[z].out_len + 40);
}

TEST_F(Cisc, ConcatOfTwoFilesIntoAThird)
{
    Put("a", "first-");
    Put("b", "second");
    Arena ar;
    Vec v(ar);
    auto fa = v.Open("a", O_RDONLY);
    auto fb = v.Open("/./b", O_RDONLY);
    auto ra = v.Read(fa, 0, 100);
    auto rb = v.Read(fb, 0, 100);
    auto c = v.Two(WIRE_STEP_CONCAT, ra, rb);
    auto fc = v.Open("c", O_WRONLY | O_CREAT | O_EXCL);
    v.Write(fc, 0, c);
    ASSERT_EQ(Run(v), 0);
    EXPECT_EQ(Get("c"), "first-second");
    EXPECT_EQ(Run(v), -EEXIST);   // O_EXCL the second time
}

TEST_F(Cisc, ReadYourWritesInsideOneOp)
{
    Put("ryw", "0123456789");
    Arena a;
    Vec v(a);
    auto f = v.Open("ryw", O_RDWR);
    v.Write(f, 2, -1, "AB");
    auto r1 = v.Read(f, 0, 100);
    uint64_t o1 = v.OutTo(r1, 100);
    v.Truncate(f, 5);
    v.Write(f, 8, -1, "Z");       // leaves a hole [5, 8)
    auto r2 = v.Read(f, 0, 100);
    uint64_t o2 = v.OutTo(r2, 100);
    auto ap = v.Append(f, -1, "!");
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(a.Get(o1, out.res[r1].out_len), "01AB456789");
    EXPECT_EQ(a.Get(o2, out.res[r2].out_len), std::string("01AB4\0\0\0Z", 9));
    EXPECT_EQ(out.res[ap].out_len, 9u);
    EXPECT_EQ(Get("ryw"), std::string("01AB4\0\0\0Z!", 10));
}

TEST_F(Cisc, CreateWriteReadOfANewFileInOneOp)
{
    Arena a;
    Vec v(a);
    auto f = v.Open("dir-less-new", O_RDWR | O_CREAT);
    v.Write(f, 0, -1, "abc");
    auto g = v.Open("dir-less-new", O_RDONLY);   // the op's own new file
    auto r = v.Read(g, 0, 10);
    uint64_t o = v.OutTo(r, 10);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(a.Get(o, out.res[r].out_len), "abc");
    EXPECT_EQ(Get("dir-less-new"), "abc");
}

TEST_F(Cisc, MidVectorComputeFailureLeavesFilesUnchanged)
{
    Put("x", "original-x");
    Put("y", "original-y");
    Arena a;
    Vec v(a);
    auto fx = v.Open("x", O_RDWR);
    auto fy = v.Open("y", O_RDWR | O_TRUNC);
    auto fn = v.Open("new", O_RDWR | O_CREAT);
    v.Write(fx, 0, -1, "CHANGED");
    v.Append(fy, -1, "more");
    v.Write(fn, 0, -1, "data");
    auto u = v.Unlink("x");
    auto bad = v.Compute(WIRE_STEP_ZSTD_DECOMPRESS, -1, "this is not zstd", 0, 4096);
    auto after = v.Write(fx, 0, -1, "never");
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -EBADMSG);
    EXPECT_EQ(out.res[bad].ret, -EBADMSG);
    EXPECT_EQ(out.res[after].ret, -ECANCELED);
    EXPECT_EQ(out.res[u].ret, 0);
    EXPECT_EQ(out.ran, (unsigned)bad);
    EXPECT_EQ(Get("x"), "original-x");
    EXPECT_EQ(Get("y"), "original-y");
    EXPECT_FALSE(Exists("new"));
}

TEST_F(Cisc, BadHandleInTheMiddleRunsNoStep)
{
    Put("p", "keep");
    Put("q", "keep-q");
    Arena a;
    Vec v(a);
    auto fp = v.Open("p", O_RDWR);
    auto fq = v.Open("q", O_RDONLY);
    v.Write(fp, 0, -1, "gone");
    auto w = v.Write(fq, 0, -1, "nope");   // q is open read-only: EBADF
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -EBADF);
    EXPECT_EQ(out.res[w].ret, -EBADF);
    EXPECT_EQ(out.res[fp].ret, -ECANCELED);
    EXPECT_EQ(out.res[fq].ret, -ECANCELED);
    EXPECT_EQ(out.ran, 0u);
    EXPECT_EQ(Get("p"), "keep");

    Arena b;   // a forged session handle
    Vec s(b);
    s.Read(-0x1234567800000001ll, 0, 10);
    EXPECT_EQ(Run(s, &out), -EBADF);
    Arena c;   // a file used after its CLOSE
    Vec cl(c);
    auto f = cl.Open("p", O_RDONLY);
    cl.Close(f);
    cl.Read(f, 0, 4);
    EXPECT_EQ(Run(cl, &out), -EBADF);
    EXPECT_EQ(out.bad_step, 2u);
}

TEST_F(Cisc, PermissionDeniedForOneStepMeansNoStepRuns)
{
    Put("mine", "user-data", 0644, user.uid);
    Put("roots", "root-data", 0644, 0);
    Put("secret", "top", 0600, 0);
    Arena a;
    Vec v(a);
    auto m = v.Open("mine", O_RDWR);
    v.Write(m, 0, -1, "CHANGED!!");
    auto r = v.Open("roots", O_RDWR);   // user may read, not write
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out, &user), -EACCES);
    EXPECT_EQ(out.res[r].ret, -EACCES);
    EXPECT_EQ(out.res[m].ret, -ECANCELED);
    EXPECT_EQ(out.ran, 0u);
    EXPECT_EQ(Get("mine"), "user-data");

    Arena b;   // unlink in a directory the user cannot write
    Vec u(b);
    u.Unlink("roots");
    EXPECT_EQ(Run(u, &out, &user), -EACCES);
    EXPECT_TRUE(Exists("roots"));
    Arena c;   // read of a 0600 root file
    Vec s(c);
    auto f = s.Open("secret", O_RDONLY);
    s.Read(f, 0, 3);
    EXPECT_EQ(Run(s, &out, &user), -EACCES);
    EXPECT_EQ(Run(s, &out, &root), 0);
    Arena d;   // create in the root-owned 0755 root directory
    Vec n(d);
    n.Open("newfile", O_WRONLY | O_CREAT);
    EXPECT_EQ(Run(n, &out, &user), -EACCES);
    EXPECT_FALSE(Exists("newfile"));
}

TEST_F(Cisc, SearchPermissionAlongThePath)
{
    struct sfs_attr d, f;
    ASSERT_EQ(sfs_mkdir(fs, nullptr, SFS_ROOT_INO, "locked", 0700, 0, 0, &d), 0);
    ASSERT_EQ(sfs_mknod(fs, nullptr, d.ino, "f", S_IFREG | 0666, 0, 0, 0, &f), 0);
    ASSERT_EQ(sfs_symlink(fs, nullptr, SFS_ROOT_INO, "link", "locked/f", 0, 0, &f), 0);
    Arena a;
    Vec v(a);
    auto h = v.Open("locked/f", O_RDONLY);
    v.Read(h, 0, 1);
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out, &user), -EACCES);
    EXPECT_EQ(Run(v, &out, &root), 0);
    Arena b;
    Vec l(b);
    l.Open("link", O_RDONLY);
    EXPECT_EQ(Run(l, &out, &root), 0);
    EXPECT_EQ(Run(l, &out, &user), -EACCES);
    Arena c;
    Vec nf(c);
    nf.Open("link", O_RDONLY | O_NOFOLLOW);
    EXPECT_EQ(Run(nf, &out, &root), -ELOOP);
    Arena e;
    Vec nd(e);
    nd.Open("missing/f", O_RDWR | O_CREAT);
    EXPECT_EQ(Run(nd, &out, &root), -ENOENT);
    Arena g;
    Vec dir(g);
    dir.Open("locked", O_RDONLY);
    EXPECT_EQ(Run(dir, &out, &root), -EISDIR);
}

TEST_F(Cisc, UnlinkInsideAnOp)
{
    Put("victim", "v");
    Arena a;
    Vec v(a);
    auto f = v.Open("victim", O_RDONLY);
    v.Unlink("victim");
    auto r = v.Read(f, 0, 10);   // still readable through the op's file
    uint64_t o = v.OutTo(r, 10);
    auto again = v.Unlink("victim");
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ENOENT);   // the second unlink: already gone in this op
    EXPECT_EQ(out.res[again].ret, -ENOENT);
    EXPECT_TRUE(Exists("victim"));
    v.st.pop_back();
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(a.Get(o, 1), "v");
    EXPECT_FALSE(Exists("victim"));
}

TEST_F(Cisc, SessionHandlesAndClose)
{
    Put("h", "handle-data");
    uint64_t fh = OpenFh("h", O_RDWR);
    Arena a;
    Vec v(a);
    auto r = v.Read(-(int64_t)fh, 0, 6);
    uint64_t o = v.OutTo(r, 6);
    v.Append(-(int64_t)fh, r);
    v.Close(-(int64_t)fh);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(a.Get(o, 6), "handle");
    EXPECT_EQ(Get("h"), "handle-datahandle");
    EXPECT_EQ(Run(v, &out), -EBADF);   // the handle is closed now
    EXPECT_EQ(eng_open_handles(eng), 0u);

    uint64_t ro = OpenFh("h", O_RDONLY);
    Arena b;
    Vec w(b);
    w.Write(-(int64_t)ro, 0, -1, "x");
    EXPECT_EQ(Run(w, &out), -EBADF);
    Arena c;   // a handle closed by the op cannot be used later in it
    Vec cl(c);
    cl.Close(-(int64_t)ro);
    cl.Read(-(int64_t)ro, 0, 1);
    EXPECT_EQ(Run(cl, &out), -EBADF);
    EXPECT_EQ(eng_open_handles(eng), 1u);
}

TEST_F(Cisc, IndependentStepsSpreadOverCores)
{
    std::vector<std::string> parts;
    Arena a;
    Vec v(a);
    for (int i = 0; i < 16; i++) {
        parts.push_back(Pattern(256 << 10, 100 + i));
        auto s = v.Compute(WIRE_STEP_CRC32C, -1, parts.back());
        v.st[s].flags |= WIRE_STEP_F_INDEPENDENT;
        v.OutTo(s, 4);
    }
    // A dependent step after the run sees every output.
    auto c = v.Two(WIRE_STEP_CONCAT, 0, 15);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    for (int i = 0; i < 16; i++) {
        EXPECT_EQ(out.res[i].ret, 4);
        EXPECT_EQ(Le32(a.Get(v.st[i].out_off, 4)), crc32c(0, parts[i].data(), parts[i].size()));
    }
    EXPECT_EQ(out.res[c].out_len, 8u);
    eng_drain(eng);
    struct stats_summary s;
    stats_summary(eng_stats(eng), ENG_OP_CISC_PART, &s);
    EXPECT_GT(s.count, 0u);   // helpers were handed to other cores
}

// A READ of 1 MiB or more is cut into pieces that free cores read at once;
// the result is the same as one read: clamped at the end of the file,
// holes as zeros, the op's own pending writes and truncates seen across
// piece boundaries.
TEST_F(Cisc, LargeReadsAreReadInPiecesOnFreeCores)
{
    const uint64_t MiB = 1 << 20;
    std::string data = Pattern(5 * MiB + 123, 7);
    Put("big", data);
    struct { uint64_t off, len; } cases[] = {
        {0, 5 * MiB + 123}, {4097, 3 * MiB + 5}, {0, 2 * MiB}, {4 * MiB, 8 * MiB},
        {6 * MiB, 2 * MiB}, {5 * MiB + 100, MiB},
    };
    for (auto &c : cases) {
        Arena a(9 * MiB);
        Vec v(a);
        auto f = v.Open("big", O_RDONLY);
        auto r = v.Read(f, c.off, c.len);
        uint64_t out = v.OutTo(r, (uint32_t)c.len);
        struct eng_cisc res;
        ASSERT_EQ(Run(v, &res), 0) << c.off;
        std::string want = c.off < data.size() ? data.substr(c.off, c.len) : "";
        ASSERT_EQ(res.res[r].ret, (int64_t)want.size()) << c.off << "+" << c.len;
        EXPECT_TRUE(a.Get(out, want.size()) == want) << c.off << "+" << c.len;
    }

    // Writes (one across the 1.5 MiB piece edge), a hole and a truncate in
    // the same op, then a 3 MiB read through them.
    Arena a(9 * MiB);
    Vec v(a);
    auto f = v.Open("big", O_RDWR);
    std::string w1(100, 'X'), w2(4000, 'Y');
    v.Write(f, 3 * MiB / 2 - 50, -1, w1);
    v.Truncate(f, 2 * MiB + 7);
    v.Write(f, 2 * MiB + 4096 * 3, -1, w2);   // beyond the new size: a hole before it
    auto r = v.Read(f, 0, 3 * MiB);
    uint64_t out = v.OutTo(r, 3 * MiB);
    struct eng_cisc res;
    ASSERT_EQ(Run(v, &res), 0);
    std::string want = data.substr(0, 2 * MiB + 7);
    want.replace(3 * MiB / 2 - 50, 100, w1);
    want += std::string(4096 * 3 - 7, '\0') + w2;
    ASSERT_EQ(res.res[r].ret, (int64_t)want.size());
    EXPECT_TRUE(a.Get(out, want.size()) == want);
    EXPECT_TRUE(Get("big") == want);

    eng_drain(eng);
    struct stats_summary st;
    stats_summary(eng_stats(eng), ENG_OP_CISC_PART, &st);
    EXPECT_GT(st.count, 0u);   // pieces were handed to other cores
}

TEST_F(Cisc, IndependentRunStopsAtADependency)
{
    Arena a;
    Vec v(a);
    auto x = v.Compute(WIRE_STEP_CRC32C, -1, "abc");
    v.st[x].flags |= WIRE_STEP_F_INDEPENDENT;
    auto y = v.Compute(WIRE_STEP_XXH3, x);   // depends on x: not in its run
    v.st[y].flags |= WIRE_STEP_F_INDEPENDENT;
    auto z = v.Compute(WIRE_STEP_ZSTD_DECOMPRESS, -1, "garbage", 0, 64);
    v.st[z].flags |= WIRE_STEP_F_INDEPENDENT;
    auto w = v.Compute(WIRE_STEP_CRC32C, -1, "abc");
    v.st[w].flags |= WIRE_STEP_F_INDEPENDENT;
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -EBADMSG);
    EXPECT_EQ(out.res[y].ret, 8);
    EXPECT_EQ(out.res[z].ret, -EBADMSG);
    EXPECT_EQ(out.res[w].ret, -ECANCELED);   // ran in parallel, reported canceled
}

TEST_F(Cisc, ThirtyTwoAndSixtyFourSteps)
{
    Put("many", "");
    Arena a;
    Vec v(a);
    auto f = v.Open("many", O_WRONLY | O_APPEND);
    std::string want;
    for (int i = 0; i < 63; i++) {
        std::string s = std::to_string(i) + ",";
        v.Append(f, -1, s);
        want += s;
    }
    ASSERT_EQ(v.st.size(), 64u);
    struct eng_cisc out;
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_EQ(out.ran, 64u);
    EXPECT_EQ(Get("many"), want);
}

TEST_F(Cisc, FsyncMakesTheOpDurable)
{
    Put("dur", "old");
    ASSERT_EQ(sfs_sync(fs), 0);
    Arena a;
    Vec v(a);
    auto f = v.Open("dur", O_RDWR | O_TRUNC);
    v.Write(f, 0, -1, "new durable content");
    v.Fsync(f);
    ASSERT_EQ(Run(v), 0);
    Crash();
    EXPECT_EQ(Get("dur"), "new durable content");

    Arena b;   // FSYNC in an op that changes nothing still syncs
    Vec r(b);
    auto g = r.Open("dur", O_RDONLY);
    r.Fsync(g);
    EXPECT_EQ(Run(r), 0);
}

TEST_F(Cisc, OpWithoutFsyncIsAllOrNothingAcrossACrash)
{
    Put("m1", Pattern(8192, 9));
    Put("m2", Pattern(8192, 10));
    ASSERT_EQ(sfs_sync(fs), 0);
    std::string before1 = Get("m1"), before2 = Get("m2");
    Arena a;
    Vec v(a);
    auto f1 = v.Open("m1", O_RDWR);
    auto f2 = v.Open("m2", O_RDWR);
    v.Write(f1, 100, -1, std::string(5000, 'A'));
    v.Write(f2, 4000, -1, std::string(300, 'B'));
    ASSERT_EQ(Run(v), 0);
    Crash();   // nothing was synced after the op: all of it is gone
    EXPECT_EQ(Get("m1"), before1);
    EXPECT_EQ(Get("m2"), before2);
}

// Writers update two blocks of one file in one op; readers read both in
// one op and must never see them differ (no intermediate state).
TEST_F(Cisc, OtherClientsNeverSeeHalfAnOp)
{
    Put("iso", std::string(3 * 4096, '0'));
    std::atomic<bool> stop{false};
    std::atomic<int> torn{0}, reads{0};
    std::thread writer([&] {
        for (int i = 0; i < 300 || reads.load() < 100; i++) {   // overlap the reader
            Arena a(1 << 16);
            Vec v(a);
            std::string blk(4096, (char)('a' + i % 26));
            auto f = v.Open("iso", O_RDWR);
            v.Write(f, 0, -1, blk);
            v.Write(f, 8192, -1, blk);
            struct eng_cisc out;
            EXPECT_EQ(Run(v, &out), 0);
        }
        stop = true;
    });
    std::thread reader([&] {
        while (!stop) {
            Arena a(1 << 16);
            Vec v(a);
            auto f = v.Open("iso", O_RDONLY);
            auto r1 = v.Read(f, 0, 4096);
            auto r2 = v.Read(f, 8192, 4096);
            v.Two(WIRE_STEP_VERIFY, r1, r2);
            struct eng_cisc out;
            int64_t st = Run(v, &out);
            if (st == -EBADMSG)
                torn++;
            else {
                EXPECT_EQ(st, 0);
            }
            reads++;
        }
    });
    writer.join();
    reader.join();
    EXPECT_EQ(torn.load(), 0);
    EXPECT_GT(reads.load(), 0);
}

TEST_F(Cisc, ManyThreadsSameAndDifferentFiles)
{
    Put("shared", "");
    std::vector<std::thread> th;
    for (int t = 0; t < 4; t++)
        th.emplace_back([&, t] {
            std::string own = "own" + std::to_string(t);
            for (int i = 0; i < 50; i++) {
                Arena a(1 << 16);
                Vec v(a);
                std::string rec = Pattern(100, t * 1000 + i);
                auto s = v.Open("shared", O_WRONLY | O_APPEND);
                v.Append(s, -1, rec);
                auto c = v.Compute(WIRE_STEP_CRC32C, -1, rec);
                v.Append(s, c);
                auto o = v.Open(own, O_WRONLY | O_CREAT | O_APPEND);
                v.Append(o, -1, rec);
                EXPECT_EQ(Run(v), 0);
            }
        });
    for (auto &x : th)
        x.join();
    // Every record in the shared log is followed by its own checksum:
    // appends of one op were never interleaved with another's.
    std::string log = Get("shared");
    ASSERT_EQ(log.size(), 4u * 50 * 104);
    for (size_t off = 0; off < log.size(); off += 104)
        EXPECT_EQ(log.substr(off + 100, 4), Crc(log.substr(off, 100))) << off;
    for (int t = 0; t < 4; t++)
        EXPECT_EQ(Get("own" + std::to_string(t)).size(), 5000u);
}

// The engine's floor on an op (engine.h): past its device-time ceiling the
// op fails at the next step boundary with -ETIME, and once the engine is
// cancelled (shutdown) every op fails with -ECANCELED; nothing is applied.
TEST_F(Cisc, OpTimeCeilingStopsTheOpAtAStepBoundary)
{
    Shutdown();
    op_time_ms = 5;   // far less than compressing 8 MiB at level 19 takes
    Start();
    std::string big = Pattern(8 << 20, 3);
    Put("big", big);
    Put("out", "before");
    Arena a;
    Vec v(a);
    auto o = v.Open("out", O_WRONLY | O_TRUNC);
    auto in = v.Open("big", O_RDONLY);
    auto r = v.Read(in, 0, big.size());
    auto z = v.Compute(WIRE_STEP_ZSTD_COMPRESS, r, "", 19);
    auto c = v.Compute(WIRE_STEP_CRC32C, z);
    auto w = v.Write(o, 0, c);
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ETIME);
    // Some step met the ceiling at its start: those before it finished,
    // those after it did not run.
    unsigned k = out.bad_step;
    ASSERT_LE(k, (unsigned)w);
    EXPECT_EQ(out.res[k].ret, -ETIME);
    for (unsigned i = 0; i < k; i++)
        EXPECT_GE(out.res[i].ret, 0) << i;
    for (unsigned i = k + 1; i <= (unsigned)w; i++)
        EXPECT_EQ(out.res[i].ret, -ECANCELED) << i;
    EXPECT_EQ(Get("out"), "before");       // the truncate was not applied
}

TEST_F(Cisc, CancelledEngineFailsOpsWithEcanceled)
{
    Put("out", "before");
    eng_cancel(eng);
    Arena a;
    Vec v(a);
    auto o = v.Open("out", O_WRONLY | O_TRUNC);
    auto w = v.Write(o, 0, -1, "after");
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ECANCELED);
    EXPECT_EQ(out.res[o].ret, -ECANCELED);
    EXPECT_EQ(out.res[w].ret, -ECANCELED);
    EXPECT_EQ(Get("out"), "before");
    struct sfs_attr at;
    EXPECT_EQ(sfs_getattr(fs, Ino("out"), &at), 0);   // other commands still run
}

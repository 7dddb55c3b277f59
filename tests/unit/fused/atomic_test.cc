// tests/unit/fused/atomic_test.cc - MacroTx: a fused op that fails while
// its mutations are being applied (ENOSPC) is rolled back completely, and
// a power cut at any write of a fused op leaves, after recovery, either
// the whole op or none of it, with a clean fsck.
#include "cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
}

#include <map>

namespace {

class Atomic : public CiscFixture {
protected:
    using State = std::map<std::string, std::string>;

    State Dump()
    {
        State st;
        std::vector<std::string> names;
        EXPECT_EQ(sfs_readdir(fs, SFS_ROOT_INO, 0, [](void *arg, const struct sfs_dirent *de) {
            std::string n(de->name, de->namelen);
            if (n != "." && n != "..")
                static_cast<std::vector<std::string> *>(arg)->push_back(n);
            return 0;
        }, &names), 0);
        for (auto &n : names) {   // size and checksum: readable when they differ
            std::string c = Get(n);
            st[n] = std::to_string(c.size()) + ":" +
                    std::to_string(crc32c(0, c.data(), c.size()));
        }
        return st;
    }

    std::vector<std::string> Fsck()
    {
        std::vector<std::string> out;
        struct sfs_fsck_result r = {};
        EXPECT_EQ(sfs_fsck(disk, [](void *a, const char *msg) {
            static_cast<std::vector<std::string> *>(a)->push_back(msg);
        }, &out, &r), 0);
        return out;
    }

    void ExpectCleanFsck()
    {
        Shutdown();
        for (auto &l : Fsck())
            ADD_FAILURE() << "fsck: " << l;
        Start();
    }

    // Fills the disk, then frees `keep` blocks of the filler (committed).
    void FillLeaving(uint64_t keep)
    {
        uint64_t ino = Put("filler", "");
        std::string chunk(1 << 20, 'F');
        uint64_t off = 0;
        for (;;) {
            ssize_t n = sfs_write(fs, nullptr, ino, off, chunk.data(), chunk.size());
            if (n <= 0)
                break;
            off += (uint64_t)n;
        }
        struct sfs_attr in = {};
        in.size = off > keep * 4096 ? off - keep * 4096 : 0;
        ASSERT_EQ(sfs_setattr(fs, nullptr, ino, &in, SFS_SET_SIZE, nullptr), 0);
        ASSERT_EQ(sfs_sync(fs), 0);
    }
};

}  // namespace

TEST_F(Atomic, EnospcIsFoundBeforeAnythingChanges)
{
    Shutdown();
    media_close(disk);
    Boot(4096);
    Put("x", Pattern(3 * 4096, 1));
    Put("y", "y-original");
    Put("t", Pattern(20000, 2));
    Put("victim", "still here");
    FillLeaving(400);
    State before = Dump();

    Arena a(16 << 20);
    Vec v(a);
    auto fn = v.Open("new", O_RDWR | O_CREAT);
    v.Write(fn, 0, -1, Pattern(100000, 3));
    v.Unlink("victim");
    auto ft = v.Open("t", O_RDWR);
    v.Truncate(ft, 10);
    auto fx = v.Open("x", O_RDWR);
    v.Write(fx, 1000, -1, std::string(5000, 'X'));
    auto fy = v.Open("y", O_WRONLY | O_APPEND);
    auto big = v.Append(fy, -1, Pattern(8 << 20, 4));   // far more than is free
    auto last = v.Close(fy);
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ENOSPC);
    EXPECT_EQ(out.res[big].ret, -ENOSPC);
    EXPECT_EQ(out.res[last].ret, -ECANCELED);
    EXPECT_EQ(out.bad_step, (unsigned)big);
    EXPECT_EQ(Dump(), before);
    ExpectCleanFsck();
    EXPECT_EQ(Dump(), before);

    // The same op without the big append goes through whole.
    v.st.resize(big);
    ASSERT_EQ(Run(v, &out), 0);
    EXPECT_FALSE(Exists("victim"));
    EXPECT_EQ(Get("t"), Pattern(20000, 2).substr(0, 10));
    EXPECT_EQ(Get("new"), Pattern(100000, 3));
    ExpectCleanFsck();
}

TEST_F(Atomic, FullDiskRefusesACopyOnWriteOverwriteCleanly)
{
    Shutdown();
    media_close(disk);
    Boot(4096);
    Put("x", Pattern(4 * 4096, 5));
    Put("y", Pattern(4 * 4096, 6));
    FillLeaving(0);
    State before = Dump();
    Arena a;
    Vec v(a);
    auto fx = v.Open("x", O_RDWR);
    auto fy = v.Open("y", O_RDWR);
    auto wy = v.Write(fy, 10, -1, "small");
    auto wx = v.Write(fx, 0, -1, std::string(3 * 4096, 'X'));
    struct eng_cisc out;
    EXPECT_EQ(Run(v, &out), -ENOSPC);
    EXPECT_EQ(out.res[wy].ret, -ENOSPC);
    EXPECT_EQ(out.res[wx].ret, -ECANCELED);
    EXPECT_EQ(Dump(), before);
    ExpectCleanFsck();
}

// Media errors while the op's mutations are applied (every data write of
// the apply phase in turn): the op fails with -EIO and its undo log
// restores every file it had changed.
TEST_F(Atomic, IoErrorDuringApplyIsRolledBack)
{
    auto setup = [&]() {
        Put("x", Pattern(3 * 4096, 11));
        Put("t", Pattern(20000, 12));
        Put("y", "y-original");
        Put("victim", "doomed");
        ASSERT_EQ(sfs_sync(fs), 0);
    };
    auto op = [&](Vec &v) {
        auto fx = v.Open("x", O_RDWR);
        v.Write(fx, 1000, -1, std::string(6000, 'X'));   // copy-on-write overwrite
        auto ft = v.Open("t", O_RDWR);
        v.Truncate(ft, 10);
        auto fn = v.Open("new", O_RDWR | O_CREAT);
        v.Write(fn, 0, -1, Pattern(50000, 13));
        v.Unlink("victim");
        auto fy = v.Open("y", O_WRONLY | O_APPEND);
        v.Append(fy, -1, Pattern(200000, 14));
    };
    setup();
    State before = Dump();
    uint64_t w0 = media_fault_writes(disk);
    {
        Arena a;
        Vec v(a);
        op(v);
        ASSERT_EQ(Run(v), 0);
    }
    State after = Dump();
    uint64_t total = media_fault_writes(disk) - w0;
    ASSERT_GE(total, 4u);
    int failed = 0;
    for (uint64_t k = 1; k <= total && !HasFailure(); k++) {
        Shutdown();
        media_close(disk);
        Boot(16384);
        setup();
        media_fault_fail_write(disk, media_fault_writes(disk) + k, EIO, false);
        Arena a;
        Vec v(a);
        op(v);
        struct eng_cisc out;
        int64_t st = Run(v, &out);
        // A failed data write fails the op, which is undone; a write the
        // journal's background commit made meanwhile fails that commit.
        EXPECT_TRUE(st == -EIO || st == 0) << "write " << k << ": " << st;
        failed += st == -EIO;
        EXPECT_EQ(Dump(), st ? before : after) << "write " << k;
        ExpectCleanFsck();
        State got = Dump();
        EXPECT_TRUE(got == before || got == after) << "write " << k << " after remount";
    }
    EXPECT_GE(failed, 4);
}

// The op under test: overwrites spanning blocks, a shrink inside a
// block, an append, a create and an unlink, made durable by FSYNC.
static void BigOp(Vec &v)
{
    auto fa = v.Open("a", O_RDWR);
    v.Write(fa, 100, -1, std::string(9000, 'A'));
    auto fb = v.Open("b", O_RDWR);
    v.Truncate(fb, 5000);
    v.Append(fa, -1, std::string(3000, 'a'));
    auto fc = v.Open("c", O_WRONLY | O_CREAT);
    v.Write(fc, 0, -1, "created");
    v.Unlink("d");
    v.Write(fb, 6000, -1, "tail");   // extends b again: zeroes [5000, 6000)
    v.Fsync(fa);
}

TEST_F(Atomic, PowerCutAtEveryWriteOfAFusedOp)
{
    auto setup = [&]() {
        Put("a", Pattern(4 * 4096, 7));
        Put("b", Pattern(3 * 4096, 8));
        Put("d", "doomed");
        ASSERT_EQ(sfs_sync(fs), 0);
    };
    setup();
    State before = Dump();
    uint64_t w0 = media_fault_writes(disk);
    Arena a;
    Vec v(a);
    BigOp(v);
    ASSERT_EQ(Run(v), 0);
    State after = Dump();
    ASSERT_NE(before, after);
    uint64_t total = media_fault_writes(disk) - w0;
    ASSERT_GT(total, 5u);
    int saw_before = 0, saw_after = 0;
    for (uint64_t k = 1; k <= total + 1 && !HasFailure(); k++) {
        for (int variant = 0; variant < 3; variant++) {
            Shutdown();
            media_close(disk);
            Boot(16384);
            setup();
            media_fault_cut_after(disk, media_fault_writes(disk) + k,
                                  variant == 1 ? 1000 : UINT64_MAX);
            Arena b;
            Vec op(b);
            BigOp(op);
            Run(op);   // the media drops what comes after the cut
            Crash(variant == 0 ? MEDIA_FAULT_KEEP_NONE
                  : variant == 1 ? MEDIA_FAULT_KEEP_ALL : MEDIA_FAULT_KEEP_RANDOM, k);
            State got = Dump();
            if (got == before)
                saw_before++;
            else if (got == after)
                saw_after++;
            else {
                ADD_FAILURE() << "cut after write " << k << " (variant " << variant
                              << "): recovered state is neither before nor after the op";
            }
            ExpectCleanFsck();
        }
    }
    EXPECT_GT(saw_before, 0);
    EXPECT_GT(saw_after, 0);
}

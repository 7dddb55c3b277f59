// tests/unit/fused/setid_test.cc - a caller without CAP_FSETID clears the
// set-id bits of the files it changes, and no power cut can leave its new
// data under the old bits. A fused op clears them in its own transaction
// (after a power cut at any write, or an I/O error that undoes the op, the
// file has either its old data and bits or its new data without them); a
// RISC write commits the clear before it writes.
#include "cisc_fixture.h"

namespace {

class FusedSetid : public CiscFixture {
protected:
    void MakeFile()
    {
        Put("s", Pattern(2 * 4096, 3), 06777);   // root's, writable by all
        ASSERT_EQ(sfs_sync(fs), 0);
    }

    uint32_t ModeOf(const std::string &name)
    {
        struct sfs_attr a;
        return sfs_getattr(fs, Ino(name), &a) ? 0 : a.mode & 07777;
    }

    // One overwrite inside one block (without set-id bits, the op would
    // write it in place); durable: the op ends with an FSYNC step.
    static void Op(Vec &v, bool durable = true)
    {
        auto f = v.Open("s", O_WRONLY);
        v.Write(f, 10, -1, "new bytes");
        if (durable)
            v.Fsync(f);
    }

    // The RISC door: open, an in-place overwrite, fsync, release.
    int64_t RiscOverwrite(const struct eng_cred &cr)
    {
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_OPEN, &cr);
        c.ino = Ino("s");
        c.flags = O_WRONLY;
        int64_t r = eng_call(eng, &c);
        if (r)
            return r;
        uint64_t fh = c.out_fh;
        eng_cmd_init(&c, ENG_OP_WRITE, &cr);
        c.fh = fh;
        c.off = 10;
        c.in = "new bytes";
        c.size = 9;
        r = eng_call(eng, &c);
        eng_cmd_init(&c, ENG_OP_FSYNC, &cr);
        c.fh = fh;
        int64_t f = eng_call(eng, &c);
        eng_cmd_init(&c, ENG_OP_RELEASE, &cr);
        c.fh = fh;
        eng_call(eng, &c);
        return r == 9 ? f : r < 0 ? r : -EIO;
    }

    void Restart()
    {
        Shutdown();
        media_close(disk);
        Boot(16384);
        MakeFile();
    }
};

}  // namespace

TEST_F(FusedSetid, PowerCutNeverLeavesNewDataUnderTheOldBits)
{
    MakeFile();
    std::string old = Get("s");
    uint64_t w0 = media_fault_writes(disk);
    {
        Arena a;
        Vec v(a);
        Op(v);
        ASSERT_EQ(Run(v, &user), 0);
    }
    std::string changed = Get("s");
    ASSERT_NE(changed, old);
    ASSERT_EQ(ModeOf("s"), 0777u);
    uint64_t total = media_fault_writes(disk) - w0;
    int saw_old = 0, saw_new = 0;
    for (uint64_t k = 1; k <= total + 1 && !HasFailure(); k++) {
        for (int variant = 0; variant < 3; variant++) {
            Restart();
            media_fault_cut_after(disk, media_fault_writes(disk) + k,
                                  variant == 1 ? 1000 : UINT64_MAX);
            Arena b;
            Vec op(b);
            Op(op);
            Run(op, &user);   // the media drops what comes after the cut
            Crash(variant == 0 ? MEDIA_FAULT_KEEP_NONE
                  : variant == 1 ? MEDIA_FAULT_KEEP_ALL : MEDIA_FAULT_KEEP_RANDOM, k);
            std::string got = Get("s");
            uint32_t mode = ModeOf("s");
            saw_old += got == old && mode == 06777u;
            saw_new += got == changed && mode == 0777u;
            EXPECT_TRUE((got == old && mode == 06777u) || (got == changed && mode == 0777u))
                << "cut after write " << k << " (variant " << variant << "): mode 0"
                << std::oct << mode << (got == old ? ", old data" : ", new data");
        }
    }
    EXPECT_GT(saw_old, 0);
    EXPECT_GT(saw_new, 0);
}

// An I/O error at each write of the apply phase in turn: the op is
// undone, bits included.
TEST_F(FusedSetid, UndoneOpPutsTheBitsBack)
{
    MakeFile();
    std::string old = Get("s");
    uint64_t w0 = media_fault_writes(disk);
    {
        Arena a;
        Vec v(a);
        Op(v, false);
        ASSERT_EQ(Run(v, &user), 0);
    }
    uint64_t total = media_fault_writes(disk) - w0;
    int failed = 0;
    for (uint64_t k = 1; k <= total && !HasFailure(); k++) {
        Restart();
        media_fault_fail_write(disk, media_fault_writes(disk) + k, EIO, false);
        Arena a;
        Vec v(a);
        Op(v, false);
        int64_t st = Run(v, &user);
        media_fault_fail_write(disk, 0, 0, false);
        if (st == 0)
            continue;   // the failed write was a background commit's
        failed++;
        EXPECT_TRUE(Get("s") == old) << "write " << k << ": the data was not restored";
        EXPECT_EQ(ModeOf("s"), 06777u) << "write " << k;
    }
    EXPECT_GT(failed, 0);
}

TEST_F(FusedSetid, RootKeepsTheBits)
{
    MakeFile();
    Arena a;
    Vec v(a);
    Op(v);
    ASSERT_EQ(Run(v, &root), 0);
    EXPECT_EQ(ModeOf("s"), 06777u);
}

TEST_F(FusedSetid, RiscWriteCommitsTheClearFirst)
{
    MakeFile();
    std::string old = Get("s");
    uint64_t w0 = media_fault_writes(disk);
    ASSERT_EQ(RiscOverwrite(user), 0);
    std::string changed = Get("s");
    ASSERT_NE(changed, old);
    ASSERT_EQ(ModeOf("s"), 0777u);
    uint64_t total = media_fault_writes(disk) - w0;
    int saw_new = 0;
    for (uint64_t k = 1; k <= total + 1 && !HasFailure(); k++) {
        for (int variant = 0; variant < 3; variant++) {
            Restart();
            media_fault_cut_after(disk, media_fault_writes(disk) + k,
                                  variant == 1 ? 1000 : UINT64_MAX);
            RiscOverwrite(user);   // the media drops what comes after the cut
            Crash(variant == 0 ? MEDIA_FAULT_KEEP_NONE
                  : variant == 1 ? MEDIA_FAULT_KEEP_ALL : MEDIA_FAULT_KEEP_RANDOM, k);
            bool is_new = Get("s") == changed;
            uint32_t mode = ModeOf("s");
            saw_new += is_new;
            EXPECT_TRUE(mode == 0777u || (mode == 06777u && !is_new))
                << "cut after write " << k << " (variant " << variant << "): mode 0"
                << std::oct << mode << (is_new ? ", new data" : ", old data");
        }
    }
    EXPECT_GT(saw_new, 0);
}

// tests/unit/fused/crash_random_test.cc - randomized power cuts under
// MicroTx and AutoRec, checked against an oracle. Each round formats a
// RAM disk (the fault media), writes two files, runs a few random fused
// ops (writes, appends, truncates, CRC-then-append; several files; under
// micro some steps large enough to be flushed on their own) with
// the power cut after a random media write, restarts, runs recovery and
// compares the files with the oracle's possible states:
//   autorec: every op that returned before the cut, plus the op during
//            which the cut came either absent or complete (its receipt
//            committed or not), nothing of later ops;
//   micro:   every op that returned before the cut, plus a prefix of the
//            steps of the op during which it came;
// and fsck is clean. CISC_CRASH_ROUNDS sets the rounds (the long variant:
// scripts/crash-random.sh).
#include "tests/unit/fused/cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
#include "device/engine/fused/crash.h"
#include "device/engine/fused/oplog.h"
}

#include <map>
#include <random>
#include <set>

namespace {

using Files = std::vector<std::string>;   // contents of f0, f1

// One step of the model (after the two OPENs).
struct MStep {
    enum Kind { Write, Append, Trunc, CrcAppend } kind;
    unsigned file;
    uint64_t off;
    std::string data;
};

void Apply(Files &f, const MStep &s)
{
    std::string &c = f[s.file];
    switch (s.kind) {
    case MStep::Write:
        if (c.size() < s.off + s.data.size())
            c.resize(s.off + s.data.size(), '\0');
        c.replace(s.off, s.data.size(), s.data);
        break;
    case MStep::Append:
        c += s.data;
        break;
    case MStep::Trunc:
        c.resize(s.off, '\0');
        break;
    case MStep::CrcAppend: {
        uint32_t v = crc32c(0, s.data.data(), s.data.size());
        char b[4] = { (char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24) };
        c.append(b, 4);
        break;
    }
    }
}

std::string Random(std::mt19937_64 &rng, size_t n)
{
    std::string s(n, 0);
    for (auto &ch : s)
        ch = (char)('a' + rng() % 26);
    return s;
}

// big: some writes and appends are large enough (FOP_REDO_FLUSH_BYTES)
// that micro flushes their commit on its own. aligned: offsets, new sizes
// and most lengths in whole blocks (autorec adopts such inputs from its
// log, oplog.h "Adoption"), some with a tail.
std::vector<MStep> RandomOp(std::mt19937_64 &rng, const Files &now, bool big,
                            bool aligned = false)
{
    std::vector<MStep> op;
    Files f = now;
    unsigned n = 1 + rng() % 5;
    for (unsigned k = 0; k < n; k++) {
        MStep s{ (MStep::Kind)(rng() % 4), (unsigned)(rng() % 2), 0, "" };
        size_t len = 1 + rng() % 9000;
        if (aligned)
            len = (1 + rng() % 6) * 4096 + (rng() % 2 ? 0 : 1 + rng() % 4095);
        if (big && s.kind != MStep::Trunc && rng() % 3 == 0)
            len += FOP_REDO_FLUSH_BYTES;
        if (s.kind == MStep::Write)
            s.off = rng() % (f[s.file].size() + 4096);
        if (s.kind == MStep::Trunc)
            s.off = rng() % (f[s.file].size() + 1);
        if (aligned)
            s.off = s.off / 4096 * 4096;
        if (s.kind != MStep::Trunc)
            s.data = Random(rng, len);
        Apply(f, s);
        op.push_back(s);
    }
    return op;
}

class CrashRandom : public CiscFixture {
protected:
    unsigned recovered = 0;   // rounds cut inside an op that recovery then completed
    unsigned partial = 0;     // rounds that ended with part of an op (micro)
    unsigned cuts = 0;        // rounds in which the cut came during an op
    uint64_t adopted = 0;     // bytes autorec's appends took from their logs
    std::vector<std::string> Fsck()
    {
        std::vector<std::string> out;
        struct sfs_fsck_result r = {};
        EXPECT_EQ(sfs_fsck(disk, [](void *arg, const char *msg) {
            static_cast<std::vector<std::string> *>(arg)->push_back(msg);
        }, &out, &r), 0);
        return out;
    }

    Files Read() { return { Get("f0"), Get("f1") }; }

    // Builds op as a vector (OPEN f0, OPEN f1, the steps, FSYNC) and runs
    // it in mode tx; returns the op's status.
    int64_t Submit(const std::vector<MStep> &op, uint8_t tx)
    {
        Arena a;
        Vec v(a);
        uint16_t fd[2] = { v.Open("f0", O_RDWR), v.Open("f1", O_RDWR) };
        for (const MStep &s : op) {
            switch (s.kind) {
            case MStep::Write: v.Write(fd[s.file], s.off, -1, s.data); break;
            case MStep::Append: v.Append(fd[s.file], -1, s.data); break;
            case MStep::Trunc: v.Truncate(fd[s.file], s.off); break;
            case MStep::CrcAppend:
                v.Append(fd[s.file], v.Compute(WIRE_STEP_CRC32C, -1, s.data));
                break;
            }
        }
        v.Fsync(fd[0]);
        struct fop_limits lim;
        eng_fop_limits(eng, &lim);
        struct eng_arena ar = a.View();
        static thread_local struct eng_cisc out;
        int r = fop_decode(&out, v.st.data(), (unsigned)v.st.size(), &ar, &lim, keys);
        out.tx = tx;
        int64_t st = r ? r : fop_exec(eng, &root, &out);
        fop_release(&out);
        return st;
    }

    void Round(uint64_t seed, uint8_t tx, bool aligned = false)
    {
        std::mt19937_64 rng(seed);
        Shutdown();
        media_close(disk);
        Boot(8192);
        Files now = { Random(rng, rng() % 20000), Random(rng, rng() % 20000) };
        for (std::string &f : now)
            if (aligned)
                f.resize(f.size() / 4096 * 4096);
        Put("f0", now[0]);
        Put("f1", now[1]);
        ASSERT_EQ(sfs_sync(fs), 0);
        // Micro ops write less (one flushed commit per op, not per step):
        // a shorter reach keeps the cut inside them as often.
        unsigned reach = tx == WIRE_TX_MICRO ? 60 : 150;
        media_fault_cut_after(disk, media_fault_writes(disk) + 1 + rng() % reach, UINT64_MAX);
        // The oracle: the states the files may be in after recovery.
        std::set<Files> ok;
        bool cut_seen = false;
        Files none, all;
        for (unsigned k = 0; k < 3 && !cut_seen; k++) {
            std::vector<MStep> op = RandomOp(rng, now, tx == WIRE_TX_MICRO, aligned);
            int64_t st = Submit(op, tx);
            cut_seen = media_fault_is_cut(disk);
            if (!cut_seen) {   // returned before the cut: all of it is durable
                ASSERT_EQ(st, 0) << "seed " << seed;
                for (const MStep &s : op)
                    Apply(now, s);
                continue;
            }
            Files f = now;
            none = f;
            ok.insert(f);   // nothing of the op
            for (const MStep &s : op) {
                Apply(f, s);
                if (tx == WIRE_TX_MICRO)
                    ok.insert(f);   // a prefix of its steps
            }
            ok.insert(f);   // all of it
            all = f;
        }
        if (!cut_seen)
            ok.insert(now);
        adopted += fop_oplog_adopted(eng);
        Crash(rng() % 2 ? MEDIA_FAULT_KEEP_NONE : MEDIA_FAULT_KEEP_RANDOM, seed);
        char *text = nullptr;
        size_t len = 0;
        FILE *rep = open_memstream(&text, &len);
        EXPECT_GE(fop_recover(eng, rep), 0);
        fclose(rep);
        adopted += fop_oplog_adopted(eng);
        std::string report(text, len);
        free(text);
        EXPECT_EQ(report.find("unrecoverable"), std::string::npos) << report;
        Files got = Read();
        cuts += cut_seen;
        recovered += cut_seen && got == all && got != none && !report.empty();
        partial += cut_seen && got != none && got != all;
        EXPECT_TRUE(ok.count(got)) << "seed " << seed << " mode " << (int)tx
                                   << ": state after recovery is none the oracle allows ("
                                   << ok.size() << " allowed); sizes " << got[0].size() << ", "
                                   << got[1].size() << "\n" << report;
        Shutdown();
        for (auto &l : Fsck())
            ADD_FAILURE() << "seed " << seed << " fsck: " << l;
        Start();
    }
};

unsigned Rounds(unsigned def)
{
    const char *e = getenv("CISC_CRASH_ROUNDS");
    return e ? (unsigned)atoi(e) : def;
}

TEST_F(CrashRandom, AutorecFinishesEveryReceiptedOp)
{
    for (unsigned r = 0; r < Rounds(200) && !HasFailure(); r++)
        Round(1000 + r, WIRE_TX_AUTOREC);
    EXPECT_GT(cuts, 20u);
    EXPECT_GT(recovered, 5u);   // the cuts do land inside ops that recovery finishes
    EXPECT_EQ(partial, 0u);     // autorec never leaves half an op
    printf("autorec: %u rounds cut inside an op, %u finished by recovery\n", cuts, recovered);
}

// Block-aligned appends and writes of whole-block inputs: autorec takes
// the inputs' blocks from its log (at run time and in recovery) wherever
// it may; a power cut anywhere still ends in exactly the op's effect or
// nothing, no log is unrecoverable (a moved input is never needed again)
// and fsck is clean.
TEST_F(CrashRandom, AutorecAdoptsAlignedInputs)
{
    for (unsigned r = 0; r < Rounds(150) && !HasFailure(); r++)
        Round(9000 + r, WIRE_TX_AUTOREC, true);
    EXPECT_GT(cuts, 20u);
    EXPECT_GT(recovered, 5u);
    EXPECT_EQ(partial, 0u);
    EXPECT_GT(adopted, 0u);
    printf("autorec aligned: %u rounds cut inside an op, %u finished by recovery, %llu bytes "
           "adopted\n", cuts, recovered, (unsigned long long)adopted);
}

TEST_F(CrashRandom, MicroKeepsAPrefix)
{
    for (unsigned r = 0; r < Rounds(150) && !HasFailure(); r++)
        Round(5000 + r, WIRE_TX_MICRO);
    EXPECT_GT(cuts, 20u);
    EXPECT_GT(partial, 5u);   // cuts between steps leave a proper prefix
    printf("micro: %u rounds cut inside an op, %u left a proper prefix\n", cuts, partial);
}

}  // namespace

// Crash-point specs (crash.h): "@K" asks for the K-th arrival; bad counts
// and unknown points are refused. Only parsing here: firing stops the
// process (the e2e tests and bench-recovery use it).
TEST(CrashSpec, CountSuffix)
{
#ifdef CISC_CRASH_POINTS
    EXPECT_EQ(fop_crash_arm("before-commit:1@4"), 0);
    EXPECT_EQ(fop_crash_arm("after-commit:2@1024"), 0);
    EXPECT_EQ(fop_crash_arm("after-log@2"), 0);
    EXPECT_EQ(fop_crash_arm("before-commit:1@0"), -EINVAL);
    EXPECT_EQ(fop_crash_arm("before-commit:1@"), -EINVAL);
    EXPECT_EQ(fop_crash_arm("before-commit:1@1025"), -EINVAL);
    EXPECT_EQ(fop_crash_arm("before-commit:1@4x"), -EINVAL);
    EXPECT_EQ(fop_crash_arm("recovery@2"), -EINVAL);   // recovery is numbered
    EXPECT_EQ(fop_crash_arm("after-log#3"), 0);        // the 3rd fires, two pass
    EXPECT_EQ(fop_crash_arm("after-log#0"), -EINVAL);
    EXPECT_EQ(fop_crash_arm("after-log#3@2"), -EINVAL);
    fop_crash_point(FOP_CRASH_AFTER_LOG, 0);   // the 1st and 2nd arrivals pass on
    fop_crash_point(FOP_CRASH_AFTER_LOG, 0);
    EXPECT_TRUE(fop_crash_armed(FOP_CRASH_AFTER_LOG, 0));   // still armed for the 3rd
    EXPECT_EQ(fop_crash_arm("none"), 0);
    fop_crash_point(FOP_CRASH_BEFORE_COMMIT, 1);   // disarmed: returns
#else
    EXPECT_EQ(fop_crash_arm("before-commit:1@4"), -EOPNOTSUPP);
#endif
}

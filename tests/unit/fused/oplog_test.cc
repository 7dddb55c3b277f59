// tests/unit/fused/oplog_test.cc - AutoRec's operational log as
// docs/FORMAT.md draws it: a log written by hand from the document is
// recovered (committed steps take their logged output instead of
// running); a corrupted log (checksum, impossible vector, inputs past the
// end) runs nothing and is reported; autorec ops reuse one log file (a
// slot) and a completed op leaves nothing to recover;
// a power cut during an autorec op is finished by recovery.
#include "tests/unit/fused/cisc_fixture.h"

#include <thread>

extern "C" {
#include "common/crc32c.h"
#include "common/le.h"
#include "device/engine/fused/oplog.h"
#include "device/engine/sysdir.h"
}

namespace {

// One logged step (FORMAT.md "Step entry").
struct LStep {
    uint8_t kind;
    uint16_t in = WIRE_NO_STEP, in2 = WIRE_NO_STEP, file = WIRE_NO_STEP;
    uint32_t oflags = 0, mode = 0;
    uint64_t off = 0, len = 0, cap = 0;
    std::string path, src;
    uint8_t flags = 0;
    uint32_t key_id = 0;
    std::string trailer;   // BPF: sha256 (32) || name (64) || func (64)
    int same = -1;         // the operand of that earlier step again (src_len bit 63)
    bool blocks = false;   // src in whole log blocks (src_len bit 62, version 4)
    uint64_t ext_off = 0;  // and its locator (V4Log fills it in)
    uint32_t src_crc = 0;
};

// A bpf step's program identity trailer (FORMAT.md "Program identity").
std::string ProgId(const std::string &name)
{
    std::string t(32, '\x5a');
    std::string n = name;
    n.resize(64, '\0');
    std::string f = "run";
    f.resize(64, '\0');
    return t + n + f;
}

void U16(std::string &b, uint16_t v) { char q[2]; le16_put(q, v); b.append(q, 2); }
void U32(std::string &b, uint32_t v) { char q[4]; le32_put(q, v); b.append(q, 4); }
void U64(std::string &b, uint64_t v) { char q[8]; le64_put(q, v); b.append(q, 8); }

// version 3 names the op (stamp, seq) in the record; 2 does not.
std::string OpRecord(const std::vector<LStep> &steps, uint32_t uid = 0, bool good_crc = true,
                     uint32_t version = 2, uint64_t stamp = 0, uint32_t seq = 0)
{
    std::string b;
    U32(b, 0x4c4f6673);
    U32(b, version);
    U32(b, (uint32_t)steps.size());
    U32(b, uid);
    U32(b, uid);
    U32(b, 0);
    U64(b, 1 << 20);
    if (version >= 3) {
        U64(b, stamp);
        U32(b, seq);
    }
    for (const LStep &s : steps) {
        b += (char)s.kind;
        b += (char)s.flags;
        U16(b, s.in);
        U16(b, s.in2);
        U16(b, s.file);
        U32(b, s.key_id);
        U32(b, s.oflags);
        U32(b, s.mode);
        U32(b, 0);
        U64(b, s.off);
        U64(b, s.len);
        for (int k = 0; k < 4; k++)
            U64(b, 0);
        U64(b, s.cap);
        U32(b, (uint32_t)s.path.size());
        U64(b, s.same >= 0 ? (1ull << 63) | (uint64_t)s.same
               : s.blocks  ? (1ull << 62) | s.src.size() : s.src.size());
        U32(b, (uint32_t)s.trailer.size());
        b += s.path;
        if (s.blocks) {
            U64(b, s.ext_off);
            U32(b, s.src_crc);
        } else if (s.same < 0) {
            b += s.src;
        }
        b += s.trailer;
    }
    U32(b, crc32c(0, b.data(), b.size()) ^ (good_crc ? 0 : 1));
    return b;
}

std::string StepRecord(uint16_t i, int64_t ret, const std::string &out)
{
    std::string b;
    U32(b, 0x534f6673);
    U16(b, i);
    U16(b, 0);
    U64(b, (uint64_t)ret);
    U64(b, out.size());
    U32(b, (uint32_t)out.size());
    b += out;
    U32(b, crc32c(0, b.data(), b.size()));
    return b;
}

// A version 4 log (FORMAT.md "Block operands"): the record, each operand
// of a step with `blocks` from the next block boundary on, then recs.
// damage: a byte of the first such operand flipped.
std::string V4Log(std::vector<LStep> steps, const std::string &recs, bool damage = false)
{
    uint64_t at = OpRecord(steps, 0, true, 4, 1, 2).size();
    for (LStep &s : steps)
        if (s.blocks) {
            s.ext_off = (at + 4095) / 4096 * 4096;
            s.src_crc = crc32c(0, s.src.data(), s.src.size());
            at = s.ext_off + s.src.size();
        }
    std::string b = OpRecord(steps, 0, true, 4, 1, 2);
    for (const LStep &s : steps)
        if (s.blocks) {
            b.resize(s.ext_off, '\0');
            b += s.src;
        }
    for (const LStep &s : steps)
        if (s.blocks && damage) {
            b[s.ext_off + 5] ^= 1;
            break;
        }
    return b + recs;
}

class Oplog : public CiscFixture {
protected:
    uint64_t dir = 0;

    void Log(const std::string &name, const std::string &bytes)
    {
        ASSERT_EQ(sysdir_open(fs, "oplog", &dir), 0);
        struct sfs_attr at;
        ASSERT_EQ(sfs_mknod(fs, nullptr, dir, name.c_str(), S_IFREG | 0600, 0, 0, 0, &at), 0);
        ASSERT_EQ(sfs_write(fs, nullptr, at.ino, 0, bytes.data(), bytes.size()),
                  (ssize_t)bytes.size());
    }

    bool LogExists(const std::string &name)
    {
        struct sfs_attr at;
        return dir && sfs_lookup(fs, dir, name.c_str(), &at) == 0;
    }

    std::string Recover(int want_ops = 1)
    {
        char *text = nullptr;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        EXPECT_EQ(fop_recover(eng, f), want_ops);
        fclose(f);
        std::string s(text, len);
        free(text);
        return s;
    }
};

const uint32_t kCreate = O_CREAT | O_RDWR;

TEST_F(Oplog, HandWrittenLogIsFinished)
{
    Log("0000000000000001-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "x" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "hello" } }));
    std::string rep = Recover();
    EXPECT_NE(rep.find("steps 2 committed 0 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("x"), "hello");
    EXPECT_FALSE(LogExists("0000000000000001-00000000"));   // the completion mark
    EXPECT_EQ(Recover(0), "");                             // nothing left to do
}

// Steps 0-2 committed before the crash, the checksum's output logged with
// it: the append takes the logged bytes (the step is not run again).
TEST_F(Oplog, CommittedStepsAreNotRunAgain)
{
    Put("a", "HEAD");
    std::string rec = OpRecord(
        { { .kind = WIRE_STEP_OPEN, .oflags = O_RDWR, .path = "a" },
          { .kind = WIRE_STEP_APPEND, .file = 0, .src = "data" },
          { .kind = WIRE_STEP_CRC32C, .src = "data" },
          { .kind = WIRE_STEP_APPEND, .in = 2, .file = 0 } });
    // The append of step 1 is in the file already (it committed).
    Put("a", "HEADdata");
    rec += StepRecord(1, 4, "") + StepRecord(2, 4, "LOGD");
    Log("0000000000000002-00000000", rec);
    std::string rep = Recover();
    EXPECT_NE(rep.find("steps 4 committed 2 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("a"), "HEADdataLOGD");
}

// A torn step record (its CRC does not check) counts as not committed.
TEST_F(Oplog, TornStepRecordIsNotCommitted)
{
    std::string rec = OpRecord(
        { { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "y" },
          { .kind = WIRE_STEP_WRITE, .file = 0, .src = "abc" } });
    std::string sr = StepRecord(1, 3, "");
    sr[sr.size() - 1] ^= 1;
    Log("0000000000000003-00000000", rec + sr);
    std::string rep = Recover();
    EXPECT_NE(rep.find("committed 0 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("y"), "abc");
}

struct Bad {
    const char *why;
    std::string bytes;
};

TEST_F(Oplog, CorruptedLogRunsNothing)
{
    std::vector<LStep> ok = { { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644,
                                .path = "never" },
                              { .kind = WIRE_STEP_WRITE, .file = 0, .src = "no" } };
    std::vector<LStep> forward = ok;
    forward[1].file = 1;   // a step naming itself: impossible
    std::string past = OpRecord(ok);
    past.resize(past.size() - 10);   // the input runs past the log's end
    std::vector<Bad> cases = {
        { "checksum mismatch", OpRecord(ok, 0, false) },
        { "impossible step vector", OpRecord(forward) },
        { "past the log's end", past },
        { "not an operational log", std::string(200, 'z') },
    };
    for (size_t k = 0; k < cases.size(); k++) {
        SCOPED_TRACE(cases[k].why);
        std::string name = "00000000000000a" + std::to_string(k) + "-00000000";
        Log(name, cases[k].bytes);
        std::string rep = Recover((int)k + 1);   // earlier bad logs are kept, reported again
        EXPECT_NE(rep.find(name + " unrecoverable (" ), std::string::npos) << rep;
        EXPECT_NE(rep.find(cases[k].why), std::string::npos) << rep;
        EXPECT_FALSE(Exists("never"));
        EXPECT_TRUE(LogExists(name));
        EXPECT_NE(rep.find("log block 0)"), std::string::npos) << rep;
    }
    // fsck's view: every bad log named, with where it failed; nothing runs.
    std::vector<std::string> lines;
    EXPECT_EQ(fop_oplog_check(fs, [](void *arg, const char *m) {
        static_cast<std::vector<std::string> *>(arg)->push_back(m);
    }, &lines), (int)cases.size());
    ASSERT_EQ(lines.size(), cases.size());
    for (size_t k = 0; k < cases.size(); k++) {
        EXPECT_NE(lines[k].find("operational log /.cisc-system/oplog/00000000000000a" +
                                std::to_string(k)), std::string::npos) << lines[k];
        EXPECT_NE(lines[k].find(cases[k].why), std::string::npos) << lines[k];
        EXPECT_NE(lines[k].find("(log block 0)"), std::string::npos) << lines[k];
    }
    EXPECT_FALSE(Exists("never"));
}

// The logged credentials are the ones checked: a log of uid 1000 cannot
// write a root-only file.
TEST_F(Oplog, ReplayUsesLoggedCredentials)
{
    Put("secret", "root only", 0600);
    Log("0000000000000004-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = O_RDWR, .path = "secret" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "pwned" } },
                 1000));
    std::string rep = Recover();
    EXPECT_NE(rep.find("status -13"), std::string::npos) << rep;
    EXPECT_EQ(Get("secret"), "root only");
}

// An autorec op that completes leaves no log; one cut by a power loss
// after its first write is finished by recovery.
TEST_F(Oplog, AutorecOpThroughTheEngine)
{
    Put("v", std::string(8192, '.'));
    Arena a;
    Vec v(a);
    uint16_t f = v.Open("v", O_RDWR);
    v.Write(f, 0, -1, std::string(4096, 'A'));
    v.Write(f, 4096, -1, std::string(4096, 'B'));
    struct fop_limits lim;
    eng_fop_limits(eng, &lim);
    struct eng_arena ar = a.View();
    static struct eng_cisc out;
    ASSERT_EQ(fop_decode(&out, v.st.data(), (unsigned)v.st.size(), &ar, &lim, keys), 0);
    out.tx = WIRE_TX_AUTOREC;
    EXPECT_EQ(fop_exec(eng, &root, &out), 0);
    fop_release(&out);
    EXPECT_EQ(Get("v"), std::string(4096, 'A') + std::string(4096, 'B'));
    EXPECT_EQ(Recover(0), "");
}

// Ops one after the other reuse one log file (oplog.h "Slots"): no file
// per op is created or removed; the slot keeps the last op's complete
// log, which recovery and a read-only start take for no op at all.
TEST_F(Oplog, AutorecOpsReuseOneSlot)
{
    for (int k = 0; k < 3; k++) {
        Arena a;
        Vec v(a);
        uint16_t f = v.Open("s", O_RDWR | O_CREAT, 0644);
        v.Write(f, 0, -1, std::string(4096 * (3 - k), (char)('a' + k)));
        struct fop_limits lim;
        eng_fop_limits(eng, &lim);
        struct eng_arena ar = a.View();
        static struct eng_cisc out;
        ASSERT_EQ(fop_decode(&out, v.st.data(), (unsigned)v.st.size(), &ar, &lim, keys), 0);
        out.tx = WIRE_TX_AUTOREC;
        EXPECT_EQ(fop_exec(eng, &root, &out), 0);
        fop_release(&out);
    }
    EXPECT_EQ(Get("s").substr(0, 4096), std::string(4096, 'c'));
    ASSERT_EQ(sysdir_open(fs, "oplog", &dir), 0);
    std::vector<std::string> names;
    ASSERT_EQ(sfs_readdir(fs, dir, 0, [](void *arg, const struct sfs_dirent *de) {
        if (de->name[0] != '.')
            static_cast<std::vector<std::string> *>(arg)->emplace_back(de->name, de->namelen);
        return 0;
    }, &names), 0);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0], "slot-0000");
    struct sfs_attr at;
    ASSERT_EQ(sfs_lookup(fs, dir, "slot-0000", &at), 0);
    EXPECT_GT(at.size, 4096u);   // the last op's log, its input included
    EXPECT_EQ(fop_oplog_pending(fs), 0);
    EXPECT_EQ(Recover(0), "");
    EXPECT_TRUE(LogExists("slot-0000"));
}

// A version 3 log in a slot: recovery finishes it and names its report
// and recovery record by the op's logged name, not the slot's; the slot
// stays, holding a complete op; an empty slot is no op.
TEST_F(Oplog, SlotLogIsNamedByItsOp)
{
    Log("slot-0001", "");
    Log("slot-0007",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "n" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "named" } },
                 0, true, 3, 0x1234, 5));
    EXPECT_EQ(fop_oplog_pending(fs), 1);
    std::string rep = Recover();
    EXPECT_NE(rep.find("recovery op 0000000000001234-00000005 uid 0 steps 2 committed 0 "
                       "status 0"), std::string::npos) << rep;
    EXPECT_EQ(rep.find("slot-"), std::string::npos) << rep;
    EXPECT_EQ(Get("n"), "named");
    EXPECT_TRUE(LogExists("slot-0007"));
    char buf[4096];
    int n = fop_recovery_list(eng, 0, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    EXPECT_NE(std::string(buf, (size_t)n).find("0000000000001234-00000005"), std::string::npos);
    EXPECT_EQ(fop_recovery_ack(eng, 0, "0000000000001234-00000005"), 0);
    EXPECT_EQ(fop_oplog_pending(fs), 0);
    EXPECT_EQ(Recover(0), "");   // complete now: nothing runs again
}

// A bpf step whose program is gone (this engine has no registry at all):
// it fails alone with the reason in the record, the step that takes its
// output is cancelled, the independent write still runs.
TEST_F(Oplog, ChangedProgramFailsOnlyItsStep)
{
    Log("0000000000000005-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "b" },
                   { .kind = WIRE_STEP_BPF, .len = 4096, .cap = 8192, .src = "abc",
                     .key_id = 7, .trailer = ProgId("upper") },
                   { .kind = WIRE_STEP_WRITE, .in = 1, .file = 0 },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .off = 10, .src = "indep" } }));
    std::string rep = Recover();
    EXPECT_NE(rep.find("status -116"), std::string::npos) << rep;   // -ESTALE
    EXPECT_NE(rep.find("step 1 error program upper changed or unloaded"), std::string::npos)
        << rep;
    EXPECT_NE(rep.find("step 2 error " + std::string(strerror(ECANCELED))), std::string::npos)
        << rep;
    EXPECT_EQ(Get("b"), std::string(10, '\0') + "indep");
}

// A bpf step's trailer must be the identity's size; other kinds have none.
TEST_F(Oplog, BadTrailerIsImpossible)
{
    Log("0000000000000006-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "t" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "no", .trailer = "xx" } }));
    std::string rep = Recover();
    EXPECT_NE(rep.find("unrecoverable (impossible step vector at byte "), std::string::npos) << rep;
    EXPECT_FALSE(Exists("t"));
}

// A keyed step that ran before the log (its record follows the op
// record): the append takes its logged output. One without a record
// cannot run (the key was the session's): -ENOKEY, its dependents
// cancelled.
TEST_F(Oplog, KeyedStepsReplayTheirLoggedOutput)
{
    std::vector<LStep> st = { { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644,
                                .path = "k" },
                              { .kind = WIRE_STEP_ENCRYPT, .cap = 64, .src = "plain",
                                .key_id = 1 },
                              { .kind = WIRE_STEP_APPEND, .in = 1, .file = 0 } };
    Log("0000000000000007-00000000", OpRecord(st) + StepRecord(1, 9, "SEALED!!!"));
    std::string rep = Recover();
    EXPECT_NE(rep.find("steps 3 committed 1 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("k"), "SEALED!!!");
    st[0].path = "k2";
    Log("0000000000000008-00000000", OpRecord(st));
    rep = Recover();
    EXPECT_NE(rep.find("step 1 error key 1 is gone with the client's session"),
              std::string::npos) << rep;
    EXPECT_EQ(Get("k2"), "");   // the OPEN (independent) ran
}

// F_OUT_ARENA outputs go into the recovery record (the client is gone):
// one computed by recovery, one logged before the crash.
TEST_F(Oplog, ArenaOutputsAreKeptInTheRecord)
{
    Log("0000000000000009-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "o" },
                   { .kind = WIRE_STEP_CRC32C, .cap = 4, .src = "data",
                     .flags = WIRE_STEP_F_OUT_ARENA },
                   { .kind = WIRE_STEP_CRC32C, .cap = 4, .src = "more",
                     .flags = WIRE_STEP_F_OUT_ARENA },
                   { .kind = WIRE_STEP_APPEND, .in = 1, .file = 0 } }) +
            StepRecord(2, 4, "\x01\x02\x03\x04"));
    std::string rep = Recover();
    uint32_t c = crc32c(0, "data", 4);
    char hex[16];
    snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff,
             c >> 24);
    EXPECT_NE(rep.find("step 1 output 4 bytes " + std::string(hex) + "\n"), std::string::npos)
        << rep;
    EXPECT_NE(rep.find("step 2 output 4 bytes 01020304\n"), std::string::npos) << rep;
    EXPECT_EQ(Get("o").size(), 4u);
}

// UNLINK: replay resolves the logged path again; a committed UNLINK is
// not resolved again (its name is gone).
TEST_F(Oplog, UnlinkIsReplayed)
{
    Put("old", "x");
    Put("gone", "y");
    Log("000000000000000a-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "n" },
                   { .kind = WIRE_STEP_UNLINK, .path = "old" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "new" } }));
    std::string rep = Recover();
    EXPECT_NE(rep.find("status 0"), std::string::npos) << rep;
    EXPECT_FALSE(Exists("old"));
    EXPECT_EQ(Get("n"), "new");
    // Steps 0 and 1 committed before the cut: "m" exists, "gone" does not.
    ASSERT_EQ(sfs_unlink(fs, nullptr, SFS_ROOT_INO, "gone"), 0);
    Put("m", "");
    Log("000000000000000b-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "m" },
                   { .kind = WIRE_STEP_UNLINK, .path = "gone" },
                   { .kind = WIRE_STEP_WRITE, .file = 0, .src = "after" } }) +
            StepRecord(0, 0, "") + StepRecord(1, 0, ""));
    rep = Recover();
    EXPECT_NE(rep.find("committed 2 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("m"), "after");
}

// Through the engine: a keyed step runs before the log, so the op is
// accepted; one that needs file data first is refused, nothing changed.
TEST_F(Oplog, AutorecKeyedSteps)
{
    uint32_t id = AddKey(1);
    Put("e", "0123456789");
    for (bool from_file : { false, true }) {
        Arena a;
        Vec v(a);
        uint16_t f = v.Open("e", O_RDWR);
        int in = from_file ? v.Read(f, 0, 10) : -1;
        uint16_t c = v.Compute(WIRE_STEP_ENCRYPT, in, from_file ? "" : "secret");
        v.st[c].key_id = id;
        v.Append(f, c);
        struct fop_limits lim;
        eng_fop_limits(eng, &lim);
        struct eng_arena ar = a.View();
        static struct eng_cisc out;
        ASSERT_EQ(fop_decode(&out, v.st.data(), (unsigned)v.st.size(), &ar, &lim, keys), 0);
        out.tx = WIRE_TX_AUTOREC;
        EXPECT_EQ(fop_exec(eng, &root, &out), from_file ? -EOPNOTSUPP : 0);
        fop_release(&out);
        EXPECT_EQ(Get("e").size(), 10u + 6 + 40);   // the refused op changed nothing
    }
    EXPECT_EQ(Recover(0), "");
}

// A logged output over the log entry size sits in whole log blocks after
// its record (FORMAT.md "Step record"): replay takes it from there.
TEST_F(Oplog, OutputInLogBlocks)
{
    std::string rec = OpRecord(
        { { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "lb" },
          { .kind = WIRE_STEP_CONCAT, .in2 = WIRE_NO_STEP, .src = "xy" },
          { .kind = WIRE_STEP_WRITE, .in = 1, .file = 0 } });
    std::string out(5000, 'L');
    std::string sr;
    U32(sr, 0x534f6673);
    U16(sr, 1);
    U16(sr, 1);   // REC_F_BLOCKS
    U64(sr, out.size());
    U64(sr, out.size());
    U32(sr, (uint32_t)out.size());
    size_t ext = (rec.size() + sr.size() + 12 + 4095) / 4096 * 4096;
    U64(sr, ext);
    U32(sr, crc32c(0, out.data(), out.size()));
    U32(sr, crc32c(0, sr.data(), sr.size()));
    std::string log = rec + sr;
    log.resize(ext, '\0');
    Log("000000000000000c-00000000", log + out);
    std::string rep = Recover();
    EXPECT_NE(rep.find("steps 3 committed 1 status 0"), std::string::npos) << rep;
    EXPECT_EQ(Get("lb"), out);
    // A block record whose data does not check counts as not committed.
    std::string bad = log + out;
    bad[ext + 7] ^= 1;
    Log("000000000000000d-00000000", bad);
    rep = Recover(1);
    EXPECT_NE(rep.find("steps 3 committed 0 status"), std::string::npos) << rep;
}

// One buffer given to two steps is logged once; the second names the
// first's operand. A reference to a step without one is impossible.
TEST_F(Oplog, SharedOperandIsLoggedOnce)
{
    Log("000000000000000e-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "s" },
                   { .kind = WIRE_STEP_APPEND, .file = 0, .src = "shared" },
                   { .kind = WIRE_STEP_CRC32C, .cap = 4, .same = 1 },
                   { .kind = WIRE_STEP_APPEND, .in = 2, .file = 0 } }));
    std::string rep = Recover();
    EXPECT_NE(rep.find("status 0"), std::string::npos) << rep;
    uint32_t c = crc32c(0, "shared", 6);
    EXPECT_EQ(Get("s"), "shared" + std::string((const char *)&c, 4));
    Log("000000000000000f-00000000",
        OpRecord({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "s2" },
                   { .kind = WIRE_STEP_CRC32C, .cap = 4, .same = 0 } }));
    rep = Recover();
    EXPECT_NE(rep.find("unrecoverable (impossible step vector"), std::string::npos) << rep;
    EXPECT_FALSE(Exists("s2"));
}

// A version 4 log whose input is in log blocks: recovery appends it at a
// block boundary by taking its whole blocks from the log (adoption: none
// written, the counter says so), the rest written; the CRC step over the
// same input is its logged CRC.
TEST_F(Oplog, BlockOperandIsAdoptedByTheAppend)
{
    std::string d(3 * 4096 + 77, '\0');
    for (size_t i = 0; i < d.size(); i++)
        d[i] = (char)('a' + i % 19);
    Log("0000000000000010-00000000",
        V4Log({ { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "v4" },
                { .kind = WIRE_STEP_APPEND, .file = 0, .src = d, .blocks = true },
                { .kind = WIRE_STEP_CRC32C, .cap = 4, .same = 1 },
                { .kind = WIRE_STEP_APPEND, .in = 2, .file = 0 } }, ""));
    uint64_t before = fop_oplog_adopted(eng);
    std::string rep = Recover();
    EXPECT_NE(rep.find("status 0"), std::string::npos) << rep;
    uint32_t c = crc32c(0, d.data(), d.size());
    EXPECT_TRUE(Get("v4") == d + std::string((const char *)&c, 4));
    EXPECT_EQ(fop_oplog_adopted(eng) - before, 3u * 4096);
}

// A damaged block operand: unrecoverable when a step still to run reads
// it, named by its byte and log block; not even looked at when the steps
// that take it had committed (the append's record is there, the CRC
// step's result is the logged CRC): then the op finishes.
TEST_F(Oplog, BlockOperandIsCheckedOnlyWhenRead)
{
    std::string d(2 * 4096, 'z');
    std::vector<LStep> steps = {
        { .kind = WIRE_STEP_OPEN, .oflags = kCreate, .mode = 0644, .path = "w4" },
        { .kind = WIRE_STEP_APPEND, .file = 0, .src = d, .blocks = true },
        { .kind = WIRE_STEP_CRC32C, .cap = 4, .same = 1 },
        { .kind = WIRE_STEP_APPEND, .in = 2, .file = 0 } };
    Log("0000000000000011-00000000", V4Log(steps, "", true));
    std::string rep = Recover();
    EXPECT_NE(rep.find("unrecoverable (input checksum mismatch at byte 4096, log block 1)"),
              std::string::npos) << rep;
    EXPECT_FALSE(Exists("w4"));
    Put("w4", d);   // steps 0 and 1 committed before the crash
    Log("0000000000000012-00000000",
        V4Log(steps, StepRecord(0, 0, "") + StepRecord(1, (int64_t)d.size(), ""), true));
    rep = Recover(2);   // the damaged one is still there; this one is named by its record
    EXPECT_NE(rep.find("0000000000000001-00000002 uid 0 steps 4 committed 2 status 0"),
              std::string::npos) << rep;
    uint32_t c = crc32c(0, d.data(), d.size());
    EXPECT_TRUE(Get("w4") == d + std::string((const char *)&c, 4));
}

// Through the engine: an append adopts its input's blocks only when no
// other step still to run reads the same bytes in the log. A CRC32C step
// over the same arena bytes with seed 0 does not (its result is the
// logged CRC); with another seed it reads them, so the append copies.
// Either way the file is right.
TEST_F(Oplog, AppendAdoptsOnlyWhenNoOtherStepReadsTheInput)
{
    std::string d(4 * 4096, '\0');
    for (size_t i = 0; i < d.size(); i++)
        d[i] = (char)('0' + i % 10);
    for (uint32_t seed : { 0u, 7u }) {
        SCOPED_TRACE(seed);
        std::string name = "adopt" + std::to_string(seed);
        Arena a;
        Vec v(a);
        uint16_t f = v.Open(name, O_CREAT | O_RDWR);
        uint16_t ap = v.Append(f, -1, d);
        uint16_t c = v.Compute(WIRE_STEP_CRC32C, -1, "", seed, 4);
        v.st[c].addr = v.st[ap].addr;   // one arena buffer for both steps
        v.st[c].alen = v.st[ap].alen;
        v.Append(f, c);
        uint64_t before = fop_oplog_adopted(eng);
        struct eng_cisc *out = new eng_cisc;
        EXPECT_EQ(Run(v, out, nullptr, WIRE_TX_AUTOREC), 0);
        delete out;
        EXPECT_EQ(fop_oplog_adopted(eng) - before, seed == 0 ? d.size() : 0u);
        uint32_t crc = crc32c(seed, d.data(), d.size());
        EXPECT_TRUE(Get(name) == d + std::string((const char *)&crc, 4));
    }
}

class OplogSpace : public Oplog {
protected:
    using Oplog::Run;
    void SetUp() override
    {
        tx_log_max = 1u << 20;
        tx_log_entry = 64;
        Oplog::SetUp();
    }

    int64_t Run(const std::string &file, const std::string &data)
    {
        Arena a;
        Vec v(a);
        uint16_t f = v.Open(file, O_RDWR | O_CREAT);
        uint16_t z = v.Compute(WIRE_STEP_ZSTD_COMPRESS, -1, data, 1);
        uint16_t d = v.Compute(WIRE_STEP_ZSTD_DECOMPRESS, z, "", 0, (uint32_t)data.size());
        v.Write(f, 0, d);
        struct eng_cisc *out = new eng_cisc;
        int64_t st = Run(v, out, nullptr, WIRE_TX_AUTOREC);
        delete out;
        return st;
    }
};

// An op whose log can never fit fails with -ENOSPC before anything
// changed; ops that fit together wait for each other's space and all
// succeed; the space is given back.
TEST_F(OplogSpace, FullLogRefusesAndChangesNothing)
{
    Put("big", "before");
    EXPECT_EQ(Run("big", Pattern(2u << 20, 1)), -ENOSPC);
    EXPECT_EQ(Get("big"), "before");
    std::vector<std::thread> th;
    std::vector<int64_t> st(4, 1);
    for (unsigned k = 0; k < 4; k++)
        th.emplace_back([&, k] { st[k] = Run("t" + std::to_string(k), Pattern(300000, k)); });
    for (auto &t : th)
        t.join();
    for (unsigned k = 0; k < 4; k++) {
        EXPECT_EQ(st[k], 0) << k;
        EXPECT_EQ(Get("t" + std::to_string(k)), Pattern(300000, k));
    }
    uint64_t max, entry, used;
    fop_oplog_space(eng, &max, &entry, &used);
    EXPECT_EQ(max, 1u << 20);
    EXPECT_EQ(entry, 64u);
    EXPECT_EQ(used, 0u);
    EXPECT_EQ(Recover(0), "");
}

}  // namespace

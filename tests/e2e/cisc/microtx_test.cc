// tests/e2e/cisc/microtx_test.cc - transaction modes of fused ops against a
// real device: FusionFS Table 10a/10b as a matrix (append-CRC-write with
// crash points F1-F3, a ten-write vector with F4-F6, under macro and
// micro; the device stops dead at the point, restarts, and the test
// asserts the exact file contents and a clean fsck); MicroTx's error
// semantics (§4.4.3); the mode chosen at start-up, shown by status, and
// asked for per op; a damaged log (fsck names it, nothing of it runs) and
// a program changed before recovery (-ESTALE for its step only).
#include "tests/e2e/libcisc/cisc_fixture.h"
#include "tests/e2e/cisc/reaper.h"

extern "C" {
#include "common/crc32c.h"
}

#include <cisc/progs.h>

#include <dirent.h>
#include <sys/wait.h>

#include <algorithm>
#include <random>

namespace e2e {
namespace {

template <typename Fn>
bool Until(Fn cond, int tenths = 200)
{
    for (int i = 0; i < tenths; i++) {
        if (cond())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return cond();
}

const size_t kBlock = 4096;

// The append-CRC-write op's data, and the file before it.
std::string AppendData()
{
    std::string d(6000, 0);
    for (size_t i = 0; i < d.size(); i++)
        d[i] = (char)('a' + i % 23);
    return d;
}
const std::string kHead = "HEAD";

std::string Crc(const std::string &d)
{
    uint32_t c = crc32c(0, d.data(), d.size());
    return std::string((const char *)&c, 4);   // little-endian host
}

// The ten-write vector: write k (1..10) puts 4 KiB of 'A'+k-1 at block k-1
// of a 40 KiB file of '.'.
std::string VectorFile(unsigned writes)
{
    std::string s(10 * kBlock, '.');
    for (unsigned k = 0; k < writes; k++)
        std::fill(s.begin() + k * kBlock, s.begin() + (k + 1) * kBlock, (char)('A' + k));
    return s;
}

// The aligned append-CRC-write's data: 64 blocks and 100 bytes, appended
// to a file of one block (its whole blocks may be adopted from the log;
// 256 KiB and more: the append's commit is durable, oplog.h "Flushes").
const size_t kAlignedBlocks = 64;
std::string AlignedData()
{
    std::string d(kAlignedBlocks * kBlock + 100, 0);
    std::mt19937 rng(11);   // no two blocks alike
    for (char &c : d)
        c = (char)('A' + rng() % 26);
    return d;
}

enum class Op { AppendCrcWrite, TenWrites, Program, AlignedAppend, TenWritesW };

// Op::Program's bpf program (loaded by the test that uses it).
uint32_t g_prog;

// The offsets of the image's blocks whose first bytes are magic.
std::vector<off_t> BlocksStartingWith(const std::string &image, const std::string &magic)
{
    std::vector<off_t> at;
    std::vector<char> b(1u << 20);
    int fd = open(image.c_str(), O_RDONLY);
    ssize_t n;
    for (off_t off = 0; fd >= 0 && (n = pread(fd, b.data(), b.size(), off)) > 0; off += n)
        for (ssize_t k = 0; k + (ssize_t)kBlock <= n; k += kBlock)
            if (!memcmp(b.data() + k, magic.data(), magic.size()))
                at.push_back(off + k);
    if (fd >= 0)
        close(fd);
    return at;
}

// Reads or writes len bytes of the image at off.
bool ImageIo(const std::string &image, off_t off, void *p, size_t len, bool write)
{
    int fd = open(image.c_str(), write ? O_RDWR : O_RDONLY);
    ssize_t n = fd < 0 ? -1 : write ? pwrite(fd, p, len, off) : pread(fd, p, len, off);
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)len;
}

class MicroTx : public CiscTest {
protected:
    std::string status;   // `cisc status` right after the restart that recovered
    // `cisc down`, then the device's reaper gone (see ReaperRuns).
    void DownAndWait()
    {
        Down();
        ASSERT_TRUE(Until([&] { return !ReaperRuns(img); }, 100)) << "reaper lingers";
    }

    // Whether the device's log shows `what` within 10 s: recovery reports
    // may reach the log after the mount is up.
    bool LogShows(const std::string &what)
    {
        return Until([&] { return ReadFile(log).find(what) != std::string::npos; }, 100);
    }

    void CloseSession()
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
    }

    void OpenSession()
    {
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }

    // Restarts the device with `extra` options and $CISC_CRASH_POINT=crash.
    void Restart(const std::string &extra, const std::string &crash = "")
    {
        CloseSession();
        DownAndWait();
        std::string env = crash.empty() ? "" : "CISC_CRASH_POINT=" + crash + " ";
        RunResult r = Sh(env + UpCmd(extra));
        ASSERT_EQ(r.status, 0) << r.out << ReadFile(log);
        ASSERT_TRUE(IsCiscMount(mnt));
        up = true;
        OpenSession();
    }

    // Builds op into v; tx is the mode it asks for.
    static void Build(struct cisc_vec *v, Op op, int tx)
    {
        ASSERT_EQ(cisc_vec_set_tx(v, tx), 0);
        if (op == Op::AppendCrcWrite || op == Op::AlignedAppend) {
            static const std::string ad = AppendData(), bd = AlignedData();
            const std::string &d = op == Op::AppendCrcWrite ? ad : bd;
            int f = cisc_vec_open(v, op == Op::AppendCrcWrite ? "a" : "b", O_RDWR, 0);
            cisc_vec_append(v, f, CISC_IN_BUF(d.data(), d.size()));    // 1: append
            int c = cisc_vec_crc32c(v, CISC_IN_BUF(d.data(), d.size()), 0);   // 2: checksum
            cisc_vec_append(v, f, CISC_IN_STEP(c));                      // 3: checksum write
            cisc_vec_fsync(v, f, 0);
        } else if (op == Op::Program) {
            static const std::string d(kBlock, 'x');
            int f = cisc_vec_open(v, "p", O_RDWR, 0);
            int b = cisc_vec_bpf(v, g_prog, CISC_IN_BUF(d.data(), d.size()), nullptr);   // 1
            cisc_vec_write(v, f, 0, CISC_IN_STEP(b));                    // 2: takes 1's output
            cisc_vec_write(v, f, 2 * kBlock, CISC_IN_BUF("indep", 5));   // 3: independent
            cisc_vec_fsync(v, f, 0);
        } else {
            int f = cisc_vec_open(v, op == Op::TenWritesW ? "w" : "v", O_RDWR, 0);
            for (unsigned k = 0; k < 10; k++) {                          // 1..10: writes
                std::string b(kBlock, (char)('A' + k));
                cisc_vec_write(v, f, k * kBlock, CISC_IN_BUF(b.data(), b.size()));
            }
            cisc_vec_fsync(v, f, 0);
        }
    }

    void Prepare(Op op)
    {
        if (op == Op::AppendCrcWrite)
            Put("a", kHead);
        else if (op == Op::AlignedAppend)
            Put("b", std::string(kBlock, 'h'));
        else if (op == Op::Program)
            Put("p", "");
        else
            Put(op == Op::TenWritesW ? "w" : "v", VectorFile(0));
    }

    // Submits op from a child process of its own (a client the device
    // may die under); returns the child.
    pid_t SubmitInChild(Op op, int tx)
    {
        pid_t child = fork();
        if (child == 0) {
            struct cisc_session *cs;
            struct cisc_queue *cq;
            if (cisc_session_open(mnt.c_str(), &cs) || cisc_queue_create(cs, &cq))
                _exit(1);
            struct cisc_vec v;
            cisc_vec_init(&v, cq);
            Build(&v, op, tx);
            cisc_vec_submit(&v);
            _exit(0);
        }
        return child;
    }

    // Submits op from a child process (the device dies under it) and
    // waits until the device has stopped and its mount is gone.
    void SubmitAndCrash(Op op, int tx)
    {
        pid_t dev = DaemonPid();
        ASSERT_GT(dev, 0);
        CloseSession();
        pid_t child = SubmitInChild(op, tx);
        ASSERT_TRUE(Until([&] { return ProcessEnded(dev); }, 300)) << "device did not stop";
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        WaitGone();
        EXPECT_NE(ReadFile(log).find("crash point reached"), std::string::npos) << ReadFile(log);
    }

    // The device has died: its mount and reaper go.
    void WaitGone()
    {
        if (!Until([&] { return !IsCiscMount(mnt); }, 100))
            Sh("umount -l " + mnt);
        ASSERT_TRUE(Until([&] { return !IsCiscMount(mnt); }, 100));
        ASSERT_TRUE(Until([&] { return !ReaperRuns(img); }, 100)) << "reaper lingers";
    }

    // After the crash: restart (journal replay), the file as expected,
    // then fsck clean.
    void ExpectAfterRestart(const std::string &mode, const std::string &file,
                            const std::string &want)
    {
        Up("--tx " + mode);
        status = Sh(cisc + " status --raw " + mnt).out;
        OpenSession();
        std::string got = Get(file);
        EXPECT_EQ(got.size(), want.size());
        EXPECT_TRUE(got == want) << "contents differ from the expected state";
        ExpectFsckCleanThenUp();
    }

    // Down, `cisc fsck` clean, up again with a session.
    void ExpectFsckCleanThenUp()
    {
        CloseSession();
        DownAndWait();
        RunResult f = Sh(cisc + " fsck " + img);
        EXPECT_EQ(f.status, 0) << f.out;
        Up();
        OpenSession();
    }

    // op logged, the device stopped dead right after its receipt; then
    // `cisc fsck` of the image, which must be clean (an intact log waiting
    // for recovery is no problem). Returns the fsck run.
    RunResult CrashAfterLog(Op op)
    {
        Prepare(op);
        Restart("--tx autorec", "after-log");
        SubmitAndCrash(op, CISC_TX_DEFAULT);
        RunResult f = Sh(cisc + " fsck " + img);
        EXPECT_EQ(f.status, 0) << f.out;
        return f;
    }

    // Runs op to its acknowledgement; the op's status.
    int64_t Submit(Op op)
    {
        struct cisc_vec v;
        cisc_vec_init(&v, q);
        Build(&v, op, CISC_TX_DEFAULT);
        int64_t st = cisc_vec_submit(&v);
        cisc_vec_free(&v);
        return st;
    }

    // A one-step op (OPEN creating name): it reaches no crash point of
    // step 1, so an armed "...:1" point fires in the next op.
    int64_t SubmitCreate(const std::string &name)
    {
        struct cisc_vec v;
        cisc_vec_init(&v, q);
        cisc_vec_open(&v, name.c_str(), O_CREAT | O_WRONLY, 0644);
        int64_t st = cisc_vec_submit(&v);
        cisc_vec_free(&v);
        return st;
    }

    // The recovery records kept (each "recovery op NAME uid ..." line is
    // one op), then every one acknowledged.
    std::vector<std::string> TakeRecords()
    {
        std::vector<char> buf(1 << 16);
        ssize_t n = cisc_recovery_list(s, buf.data(), buf.size());
        EXPECT_GE(n, 0);
        std::vector<std::string> ops;
        std::string text(buf.data(), n > 0 ? (size_t)n : 0), head = "recovery op ";
        for (size_t at = 0; (at = text.find(head, at)) != std::string::npos; at += head.size()) {
            size_t end = text.find('\n', at);
            std::string line = text.substr(at, end - at);
            if (line.find(" uid ") != std::string::npos)
                ops.push_back(line);
        }
        for (const std::string &l : ops) {
            std::string name = l.substr(head.size(), l.find(' ', head.size()) - head.size());
            EXPECT_EQ(cisc_recovery_ack(s, name.c_str()), 0) << name;
        }
        return ops;
    }

    void Case(const std::string &mode, Op op, const std::string &point, const std::string &want)
    {
        Prepare(op);
        Restart("--tx " + mode, point);
        if (HasFatalFailure())
            return;
        SubmitAndCrash(op, CISC_TX_DEFAULT);
        if (HasFatalFailure())
            return;
        ExpectAfterRestart(mode, FileOf(op), want);
    }

    static const char *FileOf(Op op)
    {
        return op == Op::AppendCrcWrite ? "a" : op == Op::AlignedAppend ? "b" : "v";
    }

    // The bytes appends took from logs without writing them ("tx log
    // adopted" in st, a `cisc status --raw`), or -1.
    static long long Adopted(const std::string &st)
    {
        const std::string key = "\ntx log adopted ";
        size_t at = st.find(key);
        return at == std::string::npos ? -1 : std::stoll(st.substr(at + key.size()));
    }
};

// Table 10a/10b: F1 before the append commits, F2 after the checksum,
// F3 after the checksum write; F4 before any write, F5 between writes 4
// and 5, F6 after all. Macro: nothing or everything; micro: exactly the
// committed prefix.
struct Row {
    const char *name, *point;
    Op op;
    std::string macro, micro, autorec;
};

std::vector<Row> Rows()
{
    std::string d = AppendData(), all = kHead + d + Crc(d);
    return {
        { "F1", "before-commit:1", Op::AppendCrcWrite, kHead, kHead, all },
        { "F2", "after-commit:2", Op::AppendCrcWrite, kHead, kHead + d, all },
        { "F3", "after-commit:3", Op::AppendCrcWrite, all, all, all },
        { "F4", "before-commit:1", Op::TenWrites, VectorFile(0), VectorFile(0), VectorFile(10) },
        { "F5", "after-commit:4", Op::TenWrites, VectorFile(0), VectorFile(4), VectorFile(10) },
        { "F6", "after-commit:10", Op::TenWrites, VectorFile(10), VectorFile(10), VectorFile(10) },
    };
}

TEST_F(MicroTx, Table10Macro)
{
    for (const Row &r : Rows()) {
        SCOPED_TRACE(std::string("macro ") + r.name);
        Case("macro", r.op, r.point, r.macro);
        if (HasFatalFailure())
            return;
    }
}

TEST_F(MicroTx, Table10Micro)
{
    for (const Row &r : Rows()) {
        SCOPED_TRACE(std::string("micro ") + r.name);
        Case("micro", r.op, r.point, r.micro);
        if (HasFatalFailure())
            return;
    }
}

// Autorec: the device finishes every interrupted op by itself at the
// next start (C/R in every column), and says so in its status. An op
// whose every change had committed (F3, F6) may still get a recovery
// record: autorec's step commits are not flushed (its durable receipt
// covers them), so the crash may take the last one, which recovery redoes.
TEST_F(MicroTx, Table10Autorec)
{
    for (const Row &r : Rows()) {
        SCOPED_TRACE(std::string("autorec ") + r.name);
        Case("autorec", r.op, r.point, r.autorec);
        if (HasFatalFailure())
            return;
        bool completed = r.macro == r.autorec;
        bool recovered = status.find("\nrecovery op ") != std::string::npos;
        if (!completed) {
            EXPECT_TRUE(recovered) << status;
        }
        if (recovered) {
            EXPECT_NE(status.find(" status 0\n"), std::string::npos) << status;
        }
    }
}

// Between the log's commit (the receipt) and the first step: the whole op
// runs at the next start.
TEST_F(MicroTx, AutorecAfterLogRunsTheWholeOp)
{
    Case("autorec", Op::TenWrites, "after-log", VectorFile(10));
}

// A crash during recovery, at any point, then another start: the same
// final state.
TEST_F(MicroTx, RecoveryIsIdempotent)
{
    std::string d = AppendData(), all = kHead + d + Crc(d);
    for (const char *second : { "recovery:0", "before-commit:3", "after-commit:3" }) {
        SCOPED_TRACE(second);
        Prepare(Op::AppendCrcWrite);
        Restart("--tx autorec", "after-commit:1");
        SubmitAndCrash(Op::AppendCrcWrite, CISC_TX_DEFAULT);
        // The second start crashes while it recovers: it never serves.
        RunResult r = Sh("CISC_CRASH_POINT=" + std::string(second) + " " + UpCmd("--tx autorec"));
        EXPECT_NE(r.status, 0) << r.out;
        up = false;
        if (IsCiscMount(mnt))
            Sh("umount -l " + mnt);
        // [p]: the pattern does not match the shell that runs pgrep.
        ASSERT_TRUE(Until([&] { return Sh("pgrep -f 'cisc u[p] .*" + img + "'").status != 0; },
                          100));
        ExpectAfterRestart("autorec", "a", all);
        if (HasFatalFailure())
            return;
    }
}

// Recovery records: kept across restarts until acknowledged, readable by
// the op's uid only (root's op here: another user sees nothing and cannot
// acknowledge it), printed by `cisc recovery`.
TEST_F(MicroTx, RecoveryRecordsBelongToTheirOwner)
{
    Case("autorec", Op::TenWrites, "after-commit:4", VectorFile(10));
    char buf[4096];
    ssize_t n = cisc_recovery_list(s, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    std::string text(buf, (size_t)n);
    EXPECT_NE(text.find(" uid 0 steps 12 committed "), std::string::npos) << text;
    EXPECT_NE(text.find(" status 0\n"), std::string::npos) << text;
    std::string name = text.substr(strlen("recovery op "), 25);
    RunResult r = Sh(cisc + " recovery " + mnt);
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
    std::string m = mnt;
    EXPECT_EQ(AsUser([&] {
                  struct cisc_session *us;
                  char b[4096];
                  if (cisc_session_open(m.c_str(), &us))
                      return 1;
                  ssize_t k = cisc_recovery_list(us, b, sizeof(b));
                  int ack = cisc_recovery_ack(us, name.c_str());
                  cisc_session_close(us);
                  return k == 0 && ack == -ENOENT ? 0 : 2;
              }),
              0);
    EXPECT_EQ(cisc_recovery_ack(s, name.c_str()), 0);
    EXPECT_EQ(cisc_recovery_list(s, buf, sizeof(buf)), 0);
    EXPECT_EQ(cisc_recovery_ack(s, name.c_str()), -ENOENT);
}

// Bad input: an op's log damaged on the media (one byte of a logged
// input) while the device was down. `cisc fsck` names the log file, the
// reason, the byte and the log block, and exits 1 (cmd/cmd.h: problems
// found); the next start runs nothing of that op, reports it, and
// serves; the log is kept (fsck still names it).
TEST_F(MicroTx, FsckNamesADamagedLog)
{
    RunResult f = CrashAfterLog(Op::TenWrites);
    ASSERT_FALSE(HasFatalFailure());
    const std::string dir = "operational log /.cisc-system/oplog/";
    size_t at = f.out.find(dir);
    ASSERT_NE(at, std::string::npos) << f.out;
    // The log file: a slot, named up to the colon (oplog.h "Slots").
    std::string name = f.out.substr(at + dir.size(), f.out.find(':', at) - at - dir.size());
    EXPECT_EQ(name.rfind("slot-", 0), 0u) << f.out;
    // The op record's first bytes: magic "sfOL", version 3, 12 steps.
    std::vector<off_t> rec = BlocksStartingWith(img, std::string("sfOL\3\0\0\0\14\0\0\0", 12));
    ASSERT_EQ(rec.size(), 1u);
    char c;
    ASSERT_TRUE(ImageIo(img, rec[0] + 2000, &c, 1, false));   // inside write 1's input
    c = (char)~c;
    ASSERT_TRUE(ImageIo(img, rec[0] + 2000, &c, 1, true));
    f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 1) << f.out;
    EXPECT_NE(f.out.find(dir + name + ": checksum mismatch at byte "), std::string::npos)
        << f.out;
    EXPECT_NE(f.out.find(" (log block 10): the op is unrecoverable"), std::string::npos)
        << f.out;   // the record's CRC follows its 12 steps' inputs: 40 KiB and more
    Up("--tx autorec");
    EXPECT_TRUE(LogShows("recovery op " + name + " unrecoverable (checksum mismatch at byte "))
        << ReadFile(log);
    OpenSession();
    EXPECT_TRUE(Get("v") == VectorFile(0));   // nothing of the op ran
    ExpectDeviceUp();
    CloseSession();
    DownAndWait();
    f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 1) << f.out;
    EXPECT_NE(f.out.find(dir + name + ": checksum mismatch"), std::string::npos) << f.out;
    Up();
    OpenSession();
}

// AutoRec with a real clang-compiled program (tests/bpf/progs checksum.o):
// while the device is down its stored record changes (another content
// hash: the program the image holds is not the one the op was accepted
// with). At recovery that step alone fails with -ESTALE ("program
// crc_blocks changed or unloaded"), the step taking its output is
// cancelled, the independent write runs; the outcome is in the op's
// recovery record.
TEST_F(MicroTx, ChangedProgramAtRecoveryFailsOnlyItsStep)
{
    struct cisc_prog_load_opts lo = { "crc_blocks", "crc32c_blocks", 0 };
    struct cisc_prog_info info;
    char msg[256] = "";
    ASSERT_EQ(cisc_prog_load_file(s, CORPUS_OBJS "/checksum.o", &lo, &info, msg, sizeof(msg)),
              0) << msg;
    g_prog = info.id;
    Prepare(Op::Program);
    Restart("--tx autorec", "after-log");
    SubmitAndCrash(Op::Program, CISC_TX_DEFAULT);
    ASSERT_FALSE(HasFatalFailure());
    // The program record (docs/FORMAT.md "Program records"): magic
    // "CPRG", its SHA-256 at byte 32, the header's CRC-32C at byte 252.
    std::vector<off_t> rec = BlocksStartingWith(img, "CPRG");
    ASSERT_EQ(rec.size(), 1u);
    uint8_t h[256];
    ASSERT_TRUE(ImageIo(img, rec[0], h, sizeof(h), false));
    h[32] ^= 0xff;
    uint32_t crc = crc32c(0, h, 252);
    memcpy(h + 252, &crc, 4);   // little-endian host
    ASSERT_TRUE(ImageIo(img, rec[0], h, sizeof(h), true));
    Up("--tx autorec");
    EXPECT_TRUE(LogShows(" steps 5 committed 0 status -116")) << ReadFile(log);   // -ESTALE
    std::string l = ReadFile(log);
    EXPECT_NE(l.find(" step 1 error program crc_blocks changed or unloaded"), std::string::npos)
        << l;
    EXPECT_NE(l.find(" step 2 error " + std::string(strerror(ECANCELED))), std::string::npos)
        << l;
    EXPECT_EQ(l.find(" step 3 error "), std::string::npos) << l;
    OpenSession();
    EXPECT_TRUE(Get("p") == std::string(2 * kBlock, '\0') + "indep");
    char buf[4096];
    ssize_t n = cisc_recovery_list(s, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    EXPECT_NE(std::string(buf, (size_t)n).find("program crc_blocks changed or unloaded"),
              std::string::npos);
}

// Log slots (oplog.h "Slots"): an op's slot goes to the next op, whose
// receipt replaces the log. A crash between an op's end (its end record
// and last step commits not flushed) and the next op's receipt: the
// acknowledged op's effect is there (recovery redoes what the crash took,
// or finds it complete), nothing else runs, and the slot serves the next
// op again.
TEST_F(MicroTx, SlotCrashBetweenAnOpsEndAndTheNextReceipt)
{
    for (int round = 0; round < 3; round++) {
        SCOPED_TRACE(round);
        Prepare(Op::TenWrites);
        Restart("--tx autorec");
        ASSERT_EQ(Submit(Op::TenWrites), 0);    // the slot's first op
        Put("v", VectorFile(0));                // undone through a plain write
        pid_t dev = DaemonPid();
        ASSERT_GT(dev, 0);
        ASSERT_EQ(Submit(Op::TenWrites), 0);    // the same slot again
        kill(dev, SIGKILL);                     // before any next receipt
        ASSERT_TRUE(Until([&] { return ProcessEnded(dev); }, 300)) << "device did not stop";
        CloseSession();
        WaitGone();
        ExpectAfterRestart("autorec", "v", VectorFile(10));
        if (HasFatalFailure())
            return;
        for (const std::string &l : TakeRecords())   // the second op, its lost commits redone
            EXPECT_NE(l.find(" steps 12 committed "), std::string::npos) << l;
        EXPECT_EQ(status.find("unrecoverable"), std::string::npos) << status;
        Restart("--tx autorec");
        Put("v", VectorFile(0));
        EXPECT_EQ(Submit(Op::TenWrites), 0);    // the slot serves again
        EXPECT_TRUE(Get("v") == VectorFile(10));
    }
}

// The next op on a slot cut in its first step (before and after that
// step's commit): its receipt replaced the previous ops' logs, so
// recovery finishes exactly that op; the previous ops (one-step creates,
// acknowledged, their end records never flushed) stay done and are not
// run again. Right after the receipt too: "after-log" armed by a restart
// after the creates (their logs on the media, the slot looked up again),
// and "after-log#3" armed before them (the third op to log fires it: the
// creates' end records still in the journal's running transaction when
// the ten-write takes the slot).
TEST_F(MicroTx, SlotCrashInTheNextOpsFirstStep)
{
    for (const char *point :
         { "before-commit:1", "after-commit:1", "after-log", "after-log#3" }) {
        SCOPED_TRACE(point);
        Prepare(Op::TenWrites);
        Restart("--tx autorec");
        Sh("rm -f " + mnt + "/c0 " + mnt + "/c1");
        TakeRecords();
        Restart("--tx autorec", std::string(point) == "after-log" ? "" : point);
        ASSERT_EQ(SubmitCreate("c0"), 0);
        ASSERT_EQ(SubmitCreate("c1"), 0);       // the slot's previous ops
        if (std::string(point) == "after-log") {
            // after-log fires in the first op that logs: arm it only now,
            // by a restart that keeps the slot's last op's log as it is.
            Restart("--tx autorec", point);
        }
        SubmitAndCrash(Op::TenWrites, CISC_TX_DEFAULT);
        if (HasFatalFailure())
            return;
        ExpectAfterRestart("autorec", "v", VectorFile(10));
        if (HasFatalFailure())
            return;
        std::vector<std::string> ops = TakeRecords();
        ASSERT_EQ(ops.size(), 1u) << status;    // the ten-write only
        EXPECT_NE(ops[0].find(" steps 12 committed "), std::string::npos) << ops[0];
        EXPECT_NE(ops[0].find(" status 0"), std::string::npos) << ops[0];
        EXPECT_EQ(access((mnt + "/c0").c_str(), F_OK), 0);
        EXPECT_EQ(access((mnt + "/c1").c_str(), F_OK), 0);
    }
}

// Adoption (oplog.h): an autorec append of a large input at a block
// boundary takes the input's whole blocks from the log instead of
// writing them again, at run time and when recovery finishes the op; at
// every crash point of Table 10a the op is completed after the restart
// and fsck is clean: after-commit:1 and later find the append committed
// (it is durable) and its input gone from the log, a hole that is no
// damage since no step still to run reads it (the CRC step's result is
// the input's logged CRC). Fails without adoption (the counter stays 0)
// or when recovery checks an input no step reads (unrecoverable).
TEST_F(MicroTx, AutorecAlignedAppendAdoptsTheLoggedBlocks)
{
    std::string d = AlignedData(), all = std::string(kBlock, 'h') + d + Crc(d);
    Prepare(Op::AlignedAppend);
    Restart("--tx autorec");
    ASSERT_EQ(Submit(Op::AlignedAppend), 0);
    EXPECT_TRUE(Get("b") == all);
    EXPECT_EQ(Adopted(Sh(cisc + " status --raw " + mnt).out), (long long)(kAlignedBlocks * kBlock));
    for (const char *point : { "after-log", "before-commit:1", "after-commit:1",
                               "after-commit:2", "after-commit:3" }) {
        SCOPED_TRACE(point);
        Case("autorec", Op::AlignedAppend, point, all);
        if (HasFatalFailure())
            return;
        EXPECT_EQ(status.find("unrecoverable"), std::string::npos) << status;
        if (status.find("\nrecovery op ") != std::string::npos) {
            EXPECT_NE(status.find(" status 0\n"), std::string::npos) << status;
        }
        if (std::string(point) == "after-log" || std::string(point) == "before-commit:1") {
            EXPECT_EQ(Adopted(status), (long long)(kAlignedBlocks * kBlock)) << status;   // by recovery
        }
        TakeRecords();
    }
}

// Bad input: a logged input in log blocks damaged on the media while the
// device was down. fsck names the log, "input checksum mismatch" and the
// input's log block (the first after the op record); the next start runs
// nothing of the op.
TEST_F(MicroTx, FsckNamesADamagedBlockOperand)
{
    RunResult f = CrashAfterLog(Op::AlignedAppend);
    ASSERT_FALSE(HasFatalFailure());
    // The op record: magic "sfOL", version 4 (it has a block operand), 5 steps.
    ASSERT_EQ(BlocksStartingWith(img, std::string("sfOL\4\0\0\0\5\0\0\0", 12)).size(), 1u);
    std::vector<off_t> in = BlocksStartingWith(img, AlignedData().substr(0, 256));
    // The input's first block, in the log only, once: the test's buffer,
    // given to two steps, is two copies in the arena of the same bytes.
    ASSERT_EQ(in.size(), 1u);
    char c;
    ASSERT_TRUE(ImageIo(img, in[0] + 100, &c, 1, false));
    c = (char)~c;
    ASSERT_TRUE(ImageIo(img, in[0] + 100, &c, 1, true));
    f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 1) << f.out;
    EXPECT_NE(f.out.find(": input checksum mismatch at byte 4096 (log block 1): the op is "
                         "unrecoverable"), std::string::npos) << f.out;
    Up("--tx autorec");
    EXPECT_TRUE(LogShows(" unrecoverable (input checksum mismatch at byte 4096, log block 1)"))
        << ReadFile(log);
    OpenSession();
    EXPECT_TRUE(Get("b") == std::string(kBlock, 'h'));   // nothing of the op ran
    ExpectDeviceUp();
}

// Two ops at once hold two slots: a slot is not given to another op while
// its op runs (oplog.h invariant 1). The first ten-write waits at
// after-commit:4 ("@2") holding its slot; the second takes another one,
// and the device stops dead when it gets there too. Both had receipts:
// after the restart both files are complete, two recovery records. Fails
// when a slot is given back before its op ends (the second receipt then
// replaces the first op's log, and the first op is lost).
TEST_F(MicroTx, RunningOpsNeverShareASlot)
{
    Prepare(Op::TenWrites);
    Prepare(Op::TenWritesW);
    Restart("--tx autorec", "after-commit:4@2");
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    CloseSession();
    pid_t child[2];
    child[0] = SubmitInChild(Op::TenWrites, CISC_TX_DEFAULT);
    // The first op is waiting at the point before the second starts.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    child[1] = SubmitInChild(Op::TenWritesW, CISC_TX_DEFAULT);
    ASSERT_TRUE(Until([&] { return ProcessEnded(dev); }, 300)) << "device did not stop";
    for (pid_t c : child) {
        kill(c, SIGKILL);
        waitpid(c, nullptr, 0);
    }
    WaitGone();
    Up("--tx autorec");
    OpenSession();
    EXPECT_TRUE(Get("v") == VectorFile(10));
    EXPECT_TRUE(Get("w") == VectorFile(10));
    std::vector<std::string> ops = TakeRecords();
    EXPECT_EQ(ops.size(), 2u);
    for (const std::string &l : ops)
        EXPECT_NE(l.find(" status 0"), std::string::npos) << l;
    ExpectFsckCleanThenUp();
}

// An op asks for micro on a macro device: F5 keeps the four writes.
TEST_F(MicroTx, PerOpModeIsHonoured)
{
    Prepare(Op::TenWrites);
    Restart("--tx macro", "after-commit:4");
    SubmitAndCrash(Op::TenWrites, CISC_TX_MICRO);
    ExpectAfterRestart("macro", "v", VectorFile(4));
}

// A weaker mode than the device's changes nothing: micro stays micro.
TEST_F(MicroTx, WeakerRequestKeepsDeviceMode)
{
    Prepare(Op::TenWrites);
    Restart("--tx micro", "after-commit:4");
    SubmitAndCrash(Op::TenWrites, CISC_TX_MACRO);
    ExpectAfterRestart("micro", "v", VectorFile(4));
}

TEST_F(MicroTx, StatusShowsMode)
{
    Restart("--tx micro --tx-log-max 64M --tx-log-entry 512");
    std::string st = Sh(cisc + " status --raw " + mnt).out;
    EXPECT_NE(st.find("\ntx mode micro\n"), std::string::npos) << st;
    EXPECT_NE(st.find("\ntx log max 67108864 entry 512 used 0\n"), std::string::npos) << st;
    Restart("");
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find("\ntx mode macro\n"), std::string::npos);
    RunResult r = Sh(cisc + " up --help");
    EXPECT_NE(r.out.find("--tx"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--tx-log-max"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--tx-log-entry"), std::string::npos) << r.out;
    r = Sh(cisc + " up --tx-log-entry 1 /nonexistent/img " + mnt);
    EXPECT_EQ(r.status, 2) << r.out;
}

// Steps autorec cannot replay are refused before anything changes:
// never a silent downgrade to a weaker mode. A session handle does not
// outlive the session; a keyed step that needs file data could not run
// again after a crash (keys are not durable). UNLINK is covered.
TEST_F(MicroTx, AutorecRefusesWhatItCannotReplay)
{
    Put("v", VectorFile(0));
    Put("gone", "x");
    uint8_t key[CISC_KEY_BYTES] = { 7 };
    uint32_t kid = 0;
    ASSERT_EQ(cisc_key_add(s, key, &kid), 0);
    uint64_t fh = 0;
    ASSERT_EQ(cisc_open(q, "v", O_RDONLY, 0, &fh), 0);
    for (int c = 0; c < 2; c++) {
        SCOPED_TRACE(c ? "keyed step on file data" : "session handle");
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        ASSERT_EQ(cisc_vec_set_tx(&v, CISC_TX_AUTOREC), 0);
        int f = cisc_vec_open(&v, "v", O_RDWR, 0);
        cisc_vec_write(&v, f, 0, CISC_IN_BUF("zz", 2));
        int bad = -1;
        if (c == 0) {
            bad = cisc_vec_read(&v, cisc_vec_fh(&v, fh), 0, 10);
        } else {
            int r = cisc_vec_read(&v, f, 0, 10);
            bad = cisc_vec_encrypt(&v, CISC_IN_STEP(r), kid);
        }
        cisc_vec_unlink(&v, "gone");
        EXPECT_EQ(cisc_vec_submit(&v), -EOPNOTSUPP);
        EXPECT_EQ(cisc_vec_ret(&v, bad), -EOPNOTSUPP);
        cisc_vec_free(&v);
        EXPECT_TRUE(Get("v") == VectorFile(0));
        EXPECT_EQ(Get("gone"), "x");
    }
    cisc_close(q, fh);
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    EXPECT_EQ(cisc_vec_set_tx(&v, 7), -EINVAL);
    cisc_vec_free(&v);
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    ASSERT_EQ(cisc_vec_set_tx(&v, CISC_TX_AUTOREC), 0);
    int u = cisc_vec_unlink(&v, "gone");
    EXPECT_EQ(cisc_vec_submit(&v), 0);
    EXPECT_EQ(cisc_vec_ret(&v, u), 0);
    cisc_vec_free(&v);
    EXPECT_NE(access(P("gone").c_str(), F_OK), 0);
}

// Autorec without a crash: the op completes and leaves no log behind
// (a second start recovers nothing).
TEST_F(MicroTx, AutorecCompletesAndCleansUp)
{
    Restart("--tx autorec");
    Put("v", VectorFile(0));
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    Build(&v, Op::TenWrites, CISC_TX_DEFAULT);
    EXPECT_EQ(cisc_vec_submit(&v), 0);
    cisc_vec_free(&v);
    EXPECT_TRUE(Get("v") == VectorFile(10));
    Restart("--tx autorec");
    EXPECT_EQ(ReadFile(log).find("recovery op"), std::string::npos);
    EXPECT_TRUE(Get("v") == VectorFile(10));
}

// §4.4.3: a failing step aborts itself and the steps that depend on it
// (directly or through another); independent later steps still run; each
// step reports its own result; what committed stays.
TEST_F(MicroTx, FailureCancelsOnlyDependents)
{
    Put("v", VectorFile(0));
    for (int tx : { CISC_TX_MICRO, CISC_TX_MACRO }) {
        SCOPED_TRACE(tx == CISC_TX_MICRO ? "micro" : "macro");
        Put("v", VectorFile(0));
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        ASSERT_EQ(cisc_vec_set_tx(&v, tx), 0);
        int f = cisc_vec_open(&v, "v", O_RDWR, 0);
        std::vector<int> w;
        for (unsigned k = 0; k < 5; k++) {
            std::string b(kBlock, (char)('A' + k));
            w.push_back(cisc_vec_write(&v, f, k * kBlock, CISC_IN_BUF(b.data(), b.size())));
        }
        int bad = cisc_vec_decompress(&v, CISC_IN_BUF("not zstd at all", 15), kBlock);
        int dep = cisc_vec_write(&v, f, 5 * kBlock, CISC_IN_STEP(bad));        // depends on bad
        int dep2 = cisc_vec_crc32c(&v, CISC_IN_STEP(bad), 0);
        int dep3 = cisc_vec_append(&v, f, CISC_IN_STEP(dep2));                 // through dep2
        for (unsigned k = 6; k < 10; k++) {
            std::string b(kBlock, (char)('A' + k));
            w.push_back(cisc_vec_write(&v, f, k * kBlock, CISC_IN_BUF(b.data(), b.size())));
        }
        int64_t st = cisc_vec_submit(&v);
        EXPECT_EQ(st, -EBADMSG);
        EXPECT_EQ(cisc_vec_ret(&v, bad), -EBADMSG);
        EXPECT_EQ(cisc_vec_ret(&v, dep), -ECANCELED);
        EXPECT_EQ(cisc_vec_ret(&v, dep2), -ECANCELED);
        EXPECT_EQ(cisc_vec_ret(&v, dep3), -ECANCELED);
        std::string want = VectorFile(0);
        if (tx == CISC_TX_MICRO) {
            for (int i : w)
                EXPECT_EQ(cisc_vec_ret(&v, i), (int64_t)kBlock) << "step " << i;
            want = VectorFile(10);
            std::fill(want.begin() + 5 * kBlock, want.begin() + 6 * kBlock, '.');
        } else {
            for (unsigned k = 6; k < 10; k++)
                EXPECT_EQ(cisc_vec_ret(&v, w[k - 1]), -ECANCELED);
        }
        cisc_vec_free(&v);
        EXPECT_TRUE(Get("v") == want);
    }
}

// A mutation that fails in micro (ENOSPC for the 6th of ten writes)
// is undone alone; the smaller later writes still commit.
TEST_F(MicroTx, EnospcMidVectorKeepsOthers)
{
    CloseSession();
    DownAndWait();
    Sh("rm -f " + img);
    Up("--size 24M --tx micro");
    OpenSession();
    Put("v", VectorFile(0));
    ASSERT_TRUE(WriteFile(P("fill"), std::string(16u << 20, 'f')));   // leaves a few MiB
    std::string big(4u << 20, 'Z');   // more than what is left (with its undo room)
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "v", O_RDWR, 0);
    std::vector<int> w;
    for (unsigned k = 0; k < 10; k++) {
        std::string b(kBlock, (char)('A' + k));
        w.push_back(k == 5 ? cisc_vec_write(&v, f, 10 * kBlock, CISC_IN_BUF(big.data(), big.size()))
                           : cisc_vec_write(&v, f, k * kBlock, CISC_IN_BUF(b.data(), b.size())));
    }
    int64_t st = cisc_vec_submit(&v);
    EXPECT_EQ(st, -ENOSPC);
    EXPECT_EQ(cisc_vec_ret(&v, w[5]), -ENOSPC);
    for (unsigned k = 0; k < 10; k++)
        if (k != 5) {
            EXPECT_EQ(cisc_vec_ret(&v, w[k]), (int64_t)kBlock) << k;
        }
    cisc_vec_free(&v);
    std::string want = VectorFile(10);
    std::fill(want.begin() + 5 * kBlock, want.begin() + 6 * kBlock, '.');
    EXPECT_TRUE(Get("v") == want);
}

}  // namespace
}  // namespace e2e

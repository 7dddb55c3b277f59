// tests/e2e/cisc/crash_random_test.cc - AutoRec under random crash points
// with the real device: every round starts `cisc up --tx autorec` with a
// random $CISC_CRASH_POINT (before/after the commit of step N, after the
// log, in the middle of recovery), a client process submits a few random
// fused ops (append-CRC-write, writes, a clang-compiled bpf program of
// tests/bpf/progs, zstd compress+decompress, XChaCha20 encryption, ops
// over two files) until the device stops dead or the ops are done (then
// the device is SIGKILLed), and the next round's start recovers. After
// each start the files are checked against an oracle: every op the client
// saw acknowledged is there, the op in flight at the crash is there
// entirely or not at all (its receipt committed or not), nothing else.
// fsck is clean at the end. CISC_E2E_CRASH_ROUNDS sets the rounds (the
// long variant: scripts/crash-random.sh).
#include "tests/e2e/libcisc/cisc_fixture.h"
#include "tests/e2e/cisc/reaper.h"

#include <cisc/progs.h>

extern "C" {
#include "common/crc32c.h"
}

#include <dirent.h>
#include <poll.h>
#include <sodium.h>
#include <sys/wait.h>

#include <algorithm>
#include <random>

namespace e2e {
namespace {

const unsigned kFiles = 3;   // f0..f2; "enc" holds sealed records
const uint8_t kKey[CISC_KEY_BYTES] = { 0x42, 1, 2, 3 };

// One random fused op and what it does to the model.
struct Op {
    enum Kind { Acw, Write, Bpf, Zstd, Enc, Two } kind;
    unsigned file, file2;
    uint64_t off;
    std::string data;
};

// The model: the files' contents and the plaintexts sealed into "enc".
struct State {
    std::vector<std::string> f = std::vector<std::string>(kFiles);
    std::vector<std::string> sealed;
};

std::string Le32(uint32_t v)
{
    char b[4] = { (char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24) };
    return std::string(b, 4);
}

void WriteAt(std::string &c, uint64_t off, const std::string &d)
{
    if (c.size() < off + d.size())
        c.resize(off + d.size(), '\0');
    c.replace(off, d.size(), d);
}

void Apply(State &s, const Op &op)
{
    std::string &c = s.f[op.file];
    switch (op.kind) {
    case Op::Acw:
        c += op.data + Le32(crc32c(0, op.data.data(), op.data.size()));
        break;
    case Op::Write: case Op::Zstd:
        WriteAt(c, op.off, op.data);
        break;
    case Op::Bpf:   // crc32c_blocks: the CRC of each 4 KiB block
        for (size_t o = 0; o < op.data.size(); o += 4096) {
            size_t n = std::min<size_t>(4096, op.data.size() - o);
            c += Le32(crc32c(0, op.data.data() + o, n));
        }
        break;
    case Op::Enc:
        s.sealed.push_back(op.data);
        break;
    case Op::Two:
        c += op.data;
        s.f[op.file2].resize(op.off, '\0');
        break;
    }
}

// "enc" holds, in order, nonce || ciphertext || tag of each plaintext.
bool SealedMatches(const std::string &got, const std::vector<std::string> &plain)
{
    size_t at = 0;
    for (const std::string &p : plain) {
        size_t n = p.size() + 40;
        if (got.size() - at < n)
            return false;
        std::string m(p.size(), '\0');
        unsigned long long mlen = 0;
        const uint8_t *r = (const uint8_t *)got.data() + at;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt((uint8_t *)&m[0], &mlen, nullptr, r + 24,
                                                       n - 24, nullptr, 0, r, kKey) ||
            m != p)
            return false;
        at += n;
    }
    return at == got.size();
}

std::string Random(std::mt19937_64 &rng, size_t n)
{
    std::string s(n, 0);
    for (auto &ch : s)
        ch = (char)('a' + rng() % 26);
    return s;
}

Op RandomOp(std::mt19937_64 &rng, const State &now)
{
    Op op{ (Op::Kind)(rng() % 6), (unsigned)(rng() % kFiles), 0, 0, "" };
    op.file2 = (op.file + 1 + rng() % (kFiles - 1)) % kFiles;
    op.data = Random(rng, 1 + rng() % 12000);
    if (op.kind == Op::Write || op.kind == Op::Zstd)
        op.off = rng() % (now.f[op.file].size() + 4096);
    if (op.kind == Op::Two)
        op.off = rng() % (now.f[op.file2].size() + 1);
    return op;
}

std::string Name(unsigned f)
{
    return "f" + std::to_string(f);
}

// Builds op (every op ends with an FSYNC step: its commit is durable).
void Build(struct cisc_vec *v, const Op &op, uint32_t prog, uint32_t key)
{
    cisc_vec_set_tx(v, CISC_TX_AUTOREC);
    struct cisc_src in = CISC_IN_BUF(op.data.data(), op.data.size());
    int f = cisc_vec_open(v, op.kind == Op::Enc ? "enc" : Name(op.file).c_str(), O_RDWR, 0);
    switch (op.kind) {
    case Op::Acw:
        cisc_vec_append(v, f, in);
        cisc_vec_append(v, f, CISC_IN_STEP(cisc_vec_crc32c(v, in, 0)));
        break;
    case Op::Write:
        cisc_vec_write(v, f, op.off, in);
        break;
    case Op::Bpf:
        cisc_vec_append(v, f, CISC_IN_STEP(cisc_vec_bpf(v, prog, in, nullptr)));
        break;
    case Op::Zstd: {
        int z = cisc_vec_compress(v, in, 3);
        cisc_vec_write(v, f, op.off, CISC_IN_STEP(cisc_vec_decompress(v, CISC_IN_STEP(z),
                                                                       op.data.size())));
        break;
    }
    case Op::Enc:
        cisc_vec_append(v, f, CISC_IN_STEP(cisc_vec_encrypt(v, in, key)));
        break;
    case Op::Two: {
        int g = cisc_vec_open(v, Name(op.file2).c_str(), O_RDWR, 0);
        cisc_vec_append(v, f, in);
        cisc_vec_truncate(v, g, op.off);
        cisc_vec_fsync(v, g, 0);
        break;
    }
    }
    cisc_vec_fsync(v, f, 0);
}

// The client: submits ops in order, writes one byte to fd per op
// acknowledged, stops at the first failure (the device died).
[[noreturn]] void Client(const std::string &mnt, const std::vector<Op> &ops, uint32_t prog,
                         int fd)
{
    struct cisc_session *cs;
    struct cisc_queue *cq;
    struct cisc_queue_params p = { .arena_size = 4u << 20 };
    uint32_t key = 0;
    if (cisc_session_open(mnt.c_str(), &cs) || cisc_queue_create_params(cs, &p, &cq) ||
        cisc_key_add(cs, kKey, &key))
        _exit(1);
    for (const Op &op : ops) {
        struct cisc_vec v;
        cisc_vec_init(&v, cq);
        Build(&v, op, prog, key);
        int64_t st = cisc_vec_submit(&v);
        cisc_vec_free(&v);
        if (st != 0)
            _exit(2);
        if (write(fd, "a", 1) != 1)
            _exit(3);
    }
    _exit(0);
}

template <typename Fn>
bool Soon(Fn cond, int ms = 20000)
{
    for (int i = 0; i < ms / 2; i++) {
        if (cond())
            return true;
        usleep(2000);
    }
    return cond();
}

class CrashRandomE2E : public CiscTest {
protected:
    uint32_t prog = 0;
    State model;
    bool maybe = false;   // the op in flight at the last crash
    bool logs = false;    // the device died: logs may be left for recovery
    Op inflight;
    unsigned crashes = 0, finished = 0, recovery_crashes = 0;

    void CloseSession()
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
    }

    // The device is gone (dead or down): no mount, no reaper.
    void Settle()
    {
        up = false;
        if (!Soon([&] { return !IsCiscMount(mnt); }, 2000))
            Sh("umount -l " + mnt);
        ASSERT_TRUE(Soon([&] { return !IsCiscMount(mnt); }));
        ASSERT_TRUE(Soon([&] { return !ReaperRuns(img); })) << "reaper lingers";
    }

    // Starts the device with crash point spec; false when it died while
    // recovering (the spec was a recovery point).
    bool Start(const std::string &spec)
    {
        RunResult r;
        // The dead device's image lock goes with its last file reference,
        // which may outlive it for a moment.
        for (int k = 0; k < 200; k++) {
            r = Sh("CISC_CRASH_POINT=" + spec + " " + UpCmd("--tx autorec"));
            if (r.status == 0 || r.out.find("it is locked") == std::string::npos)
                break;
            usleep(10000);
        }
        if (r.status != 0) {
            EXPECT_NE(ReadFile(log).find("crash point reached"), std::string::npos)
                << spec << ": " << r.out << ReadFile(log);
            if (getenv("CRASH_DEBUG"))
                fprintf(stderr, "start %s failed: %s\n", spec.c_str(), r.out.c_str());
            Settle();
            return false;
        }
        up = true;
        return IsCiscMount(mnt);
    }

    State Read()
    {
        State got;
        for (unsigned f = 0; f < kFiles; f++)
            got.f[f] = Get(Name(f));
        got.sealed = { Get("enc") };   // raw bytes, checked by SealedMatches
        return got;
    }

    bool Matches(const State &got, const State &want)
    {
        return got.f == want.f && SealedMatches(got.sealed[0], want.sealed);
    }

    // After a start: the files are the model's, with the op in flight at
    // the crash either absent or complete (then the model takes it).
    void Check(uint64_t seed)
    {
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
        State got = Read();
        State with = model;
        if (maybe)
            Apply(with, inflight);
        if (maybe && Matches(got, with)) {
            model = with;
            finished++;
        } else {
            EXPECT_TRUE(Matches(got, model))
                << "seed " << seed << ": files after recovery are none the oracle allows"
                << " (sizes " << got.f[0].size() << " " << got.f[1].size() << " "
                << got.f[2].size() << " enc " << got.sealed[0].size() << ")\n"
                << Sh(cisc + " status --raw " + mnt).out;
        }
        maybe = false;
        CloseSession();
    }

    // Runs ops from a client process until the device stops dead or the
    // ops are done (then kills the device: a power cut at a random time).
    void RunOps(const std::vector<Op> &ops)
    {
        pid_t dev = DaemonPid();
        ASSERT_GT(dev, 0);
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        pid_t child = fork();
        if (child == 0) {
            close(p[0]);
            Client(mnt, ops, prog, p[1]);
        }
        close(p[1]);
        int wst = 0;
        bool client_done = false;
        ASSERT_TRUE(Soon([&] {
            client_done = client_done || waitpid(child, &wst, WNOHANG) == child;
            return client_done || ProcessEnded(dev);
        }));
        bool crashed = ProcessEnded(dev);
        if (!crashed)
            kill(dev, SIGKILL);
        if (!client_done) {
            kill(child, SIGKILL);
            waitpid(child, &wst, 0);
        }
        char acks[64];
        ssize_t n = read(p[0], acks, sizeof(acks));
        close(p[0]);
        size_t acked = n > 0 ? (size_t)n : 0;
        ASSERT_TRUE(Soon([&] { return ProcessEnded(dev); }));
        for (size_t k = 0; k < acked; k++)
            Apply(model, ops[k]);
        maybe = acked < ops.size();
        if (maybe)
            inflight = ops[acked];
        crashes += crashed;
        logs = true;
        Settle();
    }

    std::string RandomPoint(std::mt19937_64 &rng)
    {
        switch (rng() % 10) {
        case 0: return "after-log";
        case 1: return "recovery:0";
        case 2: case 3: case 4: return "before-commit:" + std::to_string(rng() % 6);
        default: return "after-commit:" + std::to_string(rng() % 6);
        }
    }
};

unsigned Rounds(unsigned def)
{
    const char *e = getenv("CISC_E2E_CRASH_ROUNDS");
    return e ? (unsigned)atoi(e) : def;
}

TEST_F(CrashRandomE2E, AutorecKeepsEveryAcknowledgedOp)
{
    ASSERT_EQ(sodium_init() >= 0, true);
    struct cisc_prog_load_opts lo = { "crc_blocks", "crc32c_blocks", 0 };
    struct cisc_prog_info info;
    char msg[256] = "";
    ASSERT_EQ(cisc_prog_load_file(s, CORPUS_OBJS "/checksum.o", &lo, &info, msg, sizeof(msg)),
              0) << msg;
    prog = info.id;
    for (unsigned f = 0; f < kFiles; f++)
        Put(Name(f), "");
    Put("enc", "");
    CloseSession();
    Down();
    Settle();
    uint64_t seed0 = getenv("CISC_E2E_CRASH_SEED") ? atoll(getenv("CISC_E2E_CRASH_SEED")) : 1;
    unsigned rounds = Rounds(200);
    for (unsigned r = 0; r < rounds && !HasFailure(); r++) {
        uint64_t seed = seed0 * 100003 + r;
        std::mt19937_64 rng(seed);
        std::string spec = RandomPoint(rng);
        // Autorec's step commits are not flushed, so after the device died
        // (at its point, or killed after the ops) recovery usually redoes
        // whole ops, where the same point would fire again: most rounds
        // recover without a point first, the others crash during
        // recovery on purpose.
        if (logs && rng() % 4 != 0) {
            ASSERT_TRUE(Start("none"));
            Check(seed);
            Down();
            Settle();
            logs = false;   // an orderly stop leaves no log behind
        }
        if (!Start(spec)) {
            recovery_crashes++;
            continue;   // the next start recovers (again)
        }
        Check(seed);
        if (HasFailure())
            break;
        std::vector<Op> ops;
        State sim = model;
        for (unsigned k = 0, n = 1 + rng() % 4; k < n; k++) {
            ops.push_back(RandomOp(rng, sim));
            Apply(sim, ops.back());
        }
        RunOps(ops);
    }
    ASSERT_TRUE(Start("none"));
    Check(0);
    CloseSession();
    Down();
    Settle();
    RunResult f = Sh(cisc + " fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    Up();
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    printf("%u rounds: %u crashed at their point, %u ops in flight finished by recovery, "
           "%u starts crashed while recovering\n",
           rounds, crashes, finished, recovery_crashes);
    if (rounds >= 50) {   // the points do land inside ops that recovery finishes
        EXPECT_GT(crashes, rounds / 3);
        EXPECT_GT(finished, rounds / 10);
    }
}

}  // namespace
}  // namespace e2e

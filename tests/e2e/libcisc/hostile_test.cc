// tests/e2e/libcisc/hostile_test.cc - a client that writes garbage into
// its queue pair hurts only itself: malformed commands (offsets past the
// arena, huge lengths, overflow, bad opcodes and flags, bad step arrays,
// bad handles, random bytes) get error completions, garbage indices kill
// only that queue, and a well-behaved client keeps working correctly the
// whole time; killed clients leave nothing behind.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <atomic>
#include <random>

namespace e2e {
namespace {

class Hostile : public CiscTest {
protected:
    std::atomic<bool> stop{ false };
    std::atomic<long> good_ops{ 0 }, good_errors{ 0 };
    std::thread good;

    // A second, well-behaved client: its own session and queue, writing and
    // verifying a file until told to stop.
    void StartGoodClient()
    {
        good = std::thread([this] {
            struct cisc_session *gs;
            struct cisc_queue *gq;
            if (cisc_session_open(mnt.c_str(), &gs) || cisc_queue_create(gs, &gq)) {
                good_errors++;
                return;
            }
            for (long i = 0; !stop; i++) {
                std::string data = "good client round " + std::to_string(i);
                uint64_t fh;
                char buf[64] = {};
                bool ok = cisc_open(gq, "good", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh) == 0 &&
                          cisc_pwrite(gq, fh, data.data(), data.size(), 0) ==
                              (ssize_t)data.size() &&
                          cisc_pread(gq, fh, buf, sizeof(buf), 0) == (ssize_t)data.size() &&
                          data == buf && cisc_close(gq, fh) == 0;
                good_errors += !ok;
                good_ops++;
            }
            cisc_session_close(gs);
        });
    }

    void StopGoodClient()
    {
        long before = good_ops;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        stop = true;
        good.join();
        EXPECT_GT(good_ops.load(), before) << "the good client made no progress at the end";
        EXPECT_EQ(good_errors.load(), 0);
    }
};

static struct wire_sqe Sqe(uint8_t op)
{
    struct wire_sqe e = {};
    e.opcode = op;
    return e;
}

TEST_F(Hostile, MalformedCommandsGetErrors)
{
    StartGoodClient();
    RawQp r;
    ASSERT_EQ(r.Open(mnt), 0);
    uint64_t A = r.hdr->arena_size;
    memcpy(r.arena, "file", 4);
    // bad opcodes and flags
    for (int op = WIRE_OP_REMOVEXATTR + 1; op < 256; op++)
        if (op != WIRE_OP_CISC) {
            EXPECT_EQ(r.Call(Sqe((uint8_t)op)), -EINVAL) << op;
        }
    struct wire_sqe e = Sqe(WIRE_OP_NOP);
    e.sqe_flags = 0x80;
    EXPECT_EQ(r.Call(e), -EINVAL);
    // paths outside the arena, huge, overflowing
    const uint64_t bad[][2] = { { A, 1 }, { A - 1, 2 }, { 0, A + 1 }, { ~0ull, 2 },
                                { 1ull << 63, (1ull << 63) + 5 }, { 16, ~0ull - 8 } };
    for (auto &b : bad) {
        for (uint8_t op : { WIRE_OP_OPEN, WIRE_OP_UNLINK, WIRE_OP_MKDIR, WIRE_OP_RMDIR,
                            WIRE_OP_RENAME, WIRE_OP_GETXATTR, WIRE_OP_SETXATTR,
                            WIRE_OP_LISTXATTR, WIRE_OP_REMOVEXATTR }) {
            e = Sqe(op);
            e.addr = b[0];
            e.len = b[1];
            EXPECT_EQ(r.Call(e), -EFAULT) << (int)op << " " << b[0] << " " << b[1];
        }
        for (uint8_t op : { WIRE_OP_READ, WIRE_OP_WRITE, WIRE_OP_APPEND }) {
            e = Sqe(op);
            e.fh = 1;
            e.addr = b[0];
            e.len = b[1];
            EXPECT_EQ(r.Call(e), -EFAULT) << (int)op;
        }
        e = Sqe(WIRE_OP_STAT);
        e.addr = 0;
        e.len = 4;
        e.res_off = b[0];
        e.res_len = (uint32_t)b[1];
        bool inside = e.res_off <= A && e.res_len <= A - e.res_off;
        EXPECT_EQ(r.Call(e), inside ? -EINVAL : -EFAULT) << b[0];   // inside: too small
    }
    // path contents
    e = Sqe(WIRE_OP_OPEN);
    e.len = 0;
    EXPECT_EQ(r.Call(e), -ENOENT);
    e.len = 5000;
    EXPECT_EQ(r.Call(e), -ENAMETOOLONG);
    memcpy(r.arena + 100, "a\0b", 3);
    e.addr = 100;
    e.len = 3;
    EXPECT_EQ(r.Call(e), -EINVAL);   // NUL inside
    e.flags = O_ACCMODE;
    e.addr = 0;
    e.len = 4;
    EXPECT_EQ(r.Call(e), -EINVAL);   // no such access mode
    // rename strings
    const std::pair<const char *, size_t> renames[] = {
        { "abc", 3 }, { "a\0", 2 }, { "\0b", 2 }, { "a\0b\0c", 5 }, { "a\0\0", 3 }, { "ab", 1 },
    };
    for (auto &rn : renames) {
        memcpy(r.arena + 200, rn.first, rn.second);
        e = Sqe(WIRE_OP_RENAME);
        e.addr = 200;
        e.len = rn.second;
        EXPECT_LT(r.Call(e), 0) << rn.second;
    }
    e = Sqe(WIRE_OP_RENAME);
    e.flags = 1u << 20;
    EXPECT_EQ(r.Call(e), -EINVAL);
    // "path\0name" of the xattr ops: no separator, empty path, NUL in the
    // name, an empty or too long name (as getxattr(2): -ERANGE)
    const std::pair<std::string, int> xnames[] = {
        { std::string("file", 4), -EINVAL },         { std::string("\0user.a", 7), -ENOENT },
        { std::string("file\0us\0r", 10), -EINVAL }, { std::string("file\0", 5), -ERANGE },
        { "file" + std::string(1, '\0') + "user." + std::string(300, 'n'), -ERANGE },
    };
    for (auto &xn : xnames) {
        memcpy(r.arena + 300, xn.first.data(), xn.first.size());
        e = Sqe(WIRE_OP_GETXATTR);
        e.addr = 300;
        e.len = xn.first.size();
        EXPECT_EQ(r.Call(e), xn.second) << xn.first.size();
    }
    e = Sqe(WIRE_OP_SETXATTR);
    memcpy(r.arena + 300, "file\0user.a", 11);
    e.addr = 300;
    e.len = 11;
    e.flags = 4;   // no such flag
    EXPECT_EQ(r.Call(e), -EINVAL);
    e.flags = 0;
    e.res_off = A - 1;
    e.res_len = 2;   // the value outside the arena
    EXPECT_EQ(r.Call(e), -EFAULT);
    e.res_off = 0;
    e.res_len = 65537;
    EXPECT_EQ(r.Call(e), A > 65537 ? -E2BIG : -EFAULT);
    e = Sqe(WIRE_OP_FALLOCATE);
    e.fh = 1;
    e.off = 1ull << 63;
    e.len = 1;
    EXPECT_EQ(r.Call(e), -EFBIG);
    // result areas too small, fsync flags, truncate sizes
    e = Sqe(WIRE_OP_STAT);
    e.len = 4;
    e.res_off = 4096;
    e.res_len = 10;
    EXPECT_EQ(r.Call(e), -EINVAL);
    e = Sqe(WIRE_OP_READDIR);
    memcpy(r.arena + 300, "/", 1);
    e.addr = 300;
    e.len = 1;
    e.res_off = 4096;
    e.res_len = 8;
    EXPECT_EQ(r.Call(e), -EINVAL);
    e.res_len = 40;   // room for a header, not for "."'s record... or just enough
    EXPECT_GE(r.Call(e), 0);
    e = Sqe(WIRE_OP_FSYNC);
    e.flags = 6;
    EXPECT_EQ(r.Call(e), -EINVAL);
    e = Sqe(WIRE_OP_TRUNCATE);
    e.off = ~0ull;
    EXPECT_EQ(r.Call(e), -EINVAL);
    // bad handles, including another session's
    uint64_t theirs;
    Put("f", "theirs");
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &theirs), 0);
    for (uint64_t fh : { (uint64_t)0, (uint64_t)1, theirs, ~(uint64_t)0, theirs ^ ((uint64_t)1 << 32) }) {
        for (uint8_t op : { WIRE_OP_READ, WIRE_OP_WRITE, WIRE_OP_APPEND, WIRE_OP_TRUNCATE,
                            WIRE_OP_FSYNC, WIRE_OP_CLOSE }) {
            e = Sqe(op);
            e.fh = fh;
            e.len = 4;
            EXPECT_EQ(r.Call(e), -EBADF) << (int)op << " " << fh;
        }
    }
    char buf[8] = {};
    EXPECT_EQ(cisc_pread(q, theirs, buf, 6, 0), 6);   // still theirs, still open
    EXPECT_EQ(std::string(buf), "theirs");
    StopGoodClient();
    ExpectDeviceUp();
}

TEST_F(Hostile, MalformedStepVectors)
{
    RawQp r;
    ASSERT_EQ(r.Open(mnt), 0);
    uint64_t A = r.hdr->arena_size;
    auto cisc = [&](uint16_t n, uint64_t addr, uint64_t len, uint64_t res, uint32_t rlen) {
        struct wire_sqe e = Sqe(WIRE_OP_CISC);
        e.nsteps = n;
        e.addr = addr;
        e.len = len;
        e.res_off = res;
        e.res_len = rlen;
        return r.Call(e);
    };
    const uint64_t S = sizeof(struct wire_step), R = sizeof(struct wire_step_res);
    EXPECT_EQ(cisc(0, 0, 0, 8192, 16), -EINVAL);
    EXPECT_EQ(cisc(WIRE_MAX_STEPS + 1, 0, (WIRE_MAX_STEPS + 1) * S, 65536, 4096), -EINVAL);
    EXPECT_EQ(cisc(2, 0, S, 8192, 2 * R), -EINVAL);                   // len != nsteps * 88
    EXPECT_EQ(cisc(2, A - S, 2 * S, 8192, 2 * R), -EFAULT);           // steps past the end
    EXPECT_EQ(cisc(2, 0, 2 * S, A - R, 2 * R), -EFAULT);              // results past the end
    EXPECT_EQ(cisc(2, 0, 2 * S, 8192, R), -EINVAL);                   // results too small
    EXPECT_EQ(cisc(0xffff, 0, 0xffffull * S, 8192, 16), -EINVAL);
    // Well-formed arrays whose steps refer to themselves or to later steps:
    // refused (by the CISC decoder) or not supported yet - never run.
    struct wire_step st[3] = {};
    for (int i = 0; i < 3; i++) {
        st[i].kind = WIRE_STEP_CRC32C;
        st[i].in_step = (uint16_t)i;       // itself
        st[i].in2_step = WIRE_NO_STEP;
        st[i].file_step = WIRE_NO_STEP;
        st[i].out_cap = 4;
    }
    memcpy(r.arena, st, sizeof(st));
    EXPECT_LT(cisc(3, 0, 3 * S, 8192, 3 * R), 0);
    for (int i = 0; i < 3; i++)
        st[i].in_step = (uint16_t)(i + 1);   // forward
    memcpy(r.arena, st, sizeof(st));
    EXPECT_LT(cisc(3, 0, 3 * S, 8192, 3 * R), 0);
    st[0].in_step = 500;                      // out of range
    memcpy(r.arena, st, sizeof(st));
    EXPECT_LT(cisc(3, 0, 3 * S, 8192, 3 * R), 0);
    ExpectDeviceUp();
}

TEST_F(Hostile, RandomSubmissions)
{
    StartGoodClient();
    RawQp r;
    ASSERT_EQ(r.Open(mnt, 64, 1 << 16), 0);
    std::mt19937_64 rng(12345);
    for (size_t i = 0; i < r.hdr->arena_size; i += 8) {
        uint64_t v = rng();
        memcpy(r.arena + i, &v, 8);
    }
    const uint32_t N = 20000, batch = 32;
    size_t got = 0;
    for (uint32_t done = 0; done < N; done += batch) {
        for (uint32_t i = 0; i < batch; i++) {
            struct wire_sqe e;
            uint64_t words[8];
            for (auto &w : words)
                w = rng();
            memcpy(&e, words, sizeof(e));
            if (i % 2) {   // half of them plausible-looking: a real opcode, small numbers
                e.opcode = (uint8_t)(rng() % 15);
                e.sqe_flags = 0;
                e.addr %= 2 * r.hdr->arena_size;
                e.len %= 300;
                e.res_off %= 2 * r.hdr->arena_size;
                e.off %= 1 << 20;
            }
            r.Put(e);
        }
        r.Publish();
        got += r.Reap(batch).size();
    }
    EXPECT_EQ(got, N);   // exactly one completion each
    StopGoodClient();
    ExpectDeviceUp();
    EXPECT_EQ(Status("qp", "dead"), 0);
}

TEST_F(Hostile, GarbageIndicesKillOnlyThatQueue)
{
    StartGoodClient();
    RawQp r;
    ASSERT_EQ(r.Open(mnt), 0);
    EXPECT_EQ(r.Call(Sqe(WIRE_OP_NOP)), 0);
    r.Publish(r.sq_tail + (1u << 31));   // a tail that jumps by 2^31
    bool dead = false;
    for (int i = 0; i < 200 && !dead; i++) {
        dead = __atomic_load_n(&r.hdr->sq_flags, __ATOMIC_ACQUIRE) & WIRE_SQ_DEAD;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(dead);
    EXPECT_EQ(Status("qp", "dead"), 1);
    // a second hostile queue: CQ head garbage stalls it, but it recovers when fixed
    RawQp r2;
    ASSERT_EQ(r2.Open(mnt), 0);
    __atomic_store_n(&r2.hdr->cq_head, 0x7000000u, __ATOMIC_RELEASE);
    r2.Put(Sqe(WIRE_OP_NOP));
    r2.Publish();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(__atomic_load_n(&r2.hdr->cq_tail, __ATOMIC_ACQUIRE), 0u);   // stalled
    __atomic_store_n(&r2.hdr->cq_head, 0u, __ATOMIC_RELEASE);
    r2.Publish();   // ring again
    EXPECT_EQ(r2.Reap(1).size(), 1u);
    // a doorbell storm, writes over the device's own indices, a truncated memfd
    for (int i = 0; i < 20000; i++)
        r2.Publish();
    __atomic_store_n(&r2.hdr->sq_head, 12345u, __ATOMIC_RELEASE);
    __atomic_store_n(&r2.hdr->cq_tail, 999u, __ATOMIC_RELEASE);
    EXPECT_NE(ftruncate(r2.memfd, 0), 0);   // sealed
    EXPECT_NE(ftruncate(r2.memfd, 1ll << 34), 0);
    // The device kept its own copies: the next completion lands at index 1.
    r2.cq_head = 1;
    __atomic_store_n(&r2.hdr->cq_head, 1u, __ATOMIC_RELEASE);
    struct wire_sqe marker = Sqe(WIRE_OP_NOP);
    marker.user_data = 0xfeed;
    r2.Put(marker);
    r2.Publish();
    for (int i = 0; i < 1000 && __atomic_load_n(&r2.hdr->cq_tail, __ATOMIC_ACQUIRE) != 2; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(__atomic_load_n(&r2.hdr->cq_tail, __ATOMIC_ACQUIRE), 2u);
    EXPECT_EQ(r2.cq[1].user_data, 0xfeedu);
    EXPECT_EQ(r2.cq[1].res, 0);
    StopGoodClient();
    ExpectDeviceUp();
}

TEST_F(Hostile, ClientsKilledMidFlight)
{
    StartGoodClient();
    for (int round = 0; round < 3; round++) {
        std::string m = mnt;
        pid_t pid = fork();
        if (pid == 0) {
            RawQp r;
            if (r.Open(m, 128, 1 << 20))
                _exit(90);
            // many writes to a new file, submitted without waiting
            memcpy(r.arena, "victim", 6);
            struct wire_sqe o = Sqe(WIRE_OP_OPEN);
            o.len = 6;
            o.flags = O_CREAT | O_RDWR;
            o.mode = 0644;
            if (r.Call(o) != 0)
                _exit(91);
            uint64_t fh = r.cq[0].aux;
            for (;;) {
                for (int i = 0; i < 64; i++) {
                    struct wire_sqe w = Sqe(WIRE_OP_WRITE);
                    w.fh = fh;
                    w.addr = 4096;
                    w.len = 65536;
                    w.off = (uint64_t)i * 65536;
                    r.Put(w);
                }
                r.Publish();
                r.Reap(64);
            }
        }
        ASSERT_GT(pid, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + 50 * round));
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    // A library client killed while it waits in the middle of a long call.
    std::string m = mnt;
    pid_t pid = fork();
    if (pid == 0) {
        struct cisc_session *x;
        struct cisc_queue *y;
        if (cisc_session_open(m.c_str(), &x) || cisc_queue_create(x, &y))
            _exit(90);
        for (;;)
            cisc_fsync(y, 0, 0), cisc_nop(y);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    StopGoodClient();
    EXPECT_TRUE(WaitStatus("qp", "sessions", 1));   // only the fixture's
    EXPECT_TRUE(WaitStatus("qp", "handles", 0));
    ExpectDeviceUp();
}

}  // namespace
}  // namespace e2e

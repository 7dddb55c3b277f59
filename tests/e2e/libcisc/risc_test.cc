// tests/e2e/libcisc/risc_test.cc - every RISC operation of libcisc against
// a real device, with the errno cases POSIX gives for each.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <dirent.h>
#include <linux/fs.h>

#include <map>
#include <set>

namespace e2e {
namespace {

using Risc = CiscTest;

TEST_F(Risc, NopRoundTrip)
{
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(cisc_nop(q), 0);
}

TEST_F(Risc, CreateWriteReadClose)
{
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_CREAT | O_RDWR, 0640, &fh), 0);
    EXPECT_EQ(cisc_write(q, fh, "hello ", 6), 6);
    EXPECT_EQ(cisc_write(q, fh, "world", 5), 5);   // the position moved
    char buf[32] = {};
    EXPECT_EQ(cisc_pread(q, fh, buf, sizeof(buf), 0), 11);
    EXPECT_STREQ(buf, "hello world");
    EXPECT_EQ(cisc_pread(q, fh, buf, sizeof(buf), 100), 0);   // past the end
    EXPECT_EQ(cisc_read(q, fh, buf, sizeof(buf)), 0);          // position at the end
    EXPECT_EQ(cisc_close(q, fh), 0);
    struct stat st;
    ASSERT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(ReadFile(P("f")), "hello world");
}

TEST_F(Risc, OpenErrors)
{
    uint64_t fh;
    Put("f", "x");
    ASSERT_EQ(cisc_mkdir(q, "d", 0755), 0);
    EXPECT_EQ(cisc_open(q, "missing", O_RDONLY, 0, &fh), -ENOENT);
    EXPECT_EQ(cisc_open(q, "nodir/f", O_CREAT | O_RDWR, 0644, &fh), -ENOENT);
    EXPECT_EQ(cisc_open(q, "f", O_CREAT | O_EXCL | O_RDWR, 0644, &fh), -EEXIST);
    EXPECT_EQ(cisc_open(q, "f/x", O_RDONLY, 0, &fh), -ENOTDIR);
    EXPECT_EQ(cisc_open(q, "f", O_RDONLY | O_DIRECTORY, 0, &fh), -ENOTDIR);
    EXPECT_EQ(cisc_open(q, "d", O_RDWR, 0, &fh), -EISDIR);
    EXPECT_EQ(cisc_open(q, "d", O_CREAT | O_RDONLY, 0644, &fh), -EISDIR);
    EXPECT_EQ(cisc_open(q, "new/", O_CREAT | O_RDWR, 0644, &fh), -EISDIR);
    EXPECT_EQ(cisc_open(q, "f/", O_RDONLY, 0, &fh), -ENOTDIR);
    EXPECT_EQ(cisc_open(q, "", O_RDONLY, 0, &fh), -ENOENT);
    EXPECT_EQ(cisc_open(q, std::string(256, 'n').c_str(), O_CREAT | O_RDWR, 0644, &fh),
              -ENAMETOOLONG);
    std::string longpath;
    while (longpath.size() < 4100)
        longpath += "d/";
    EXPECT_EQ(cisc_open(q, longpath.c_str(), O_RDONLY, 0, &fh), -ENAMETOOLONG);
    EXPECT_EQ(cisc_open(q, "f", O_RDONLY, 0, nullptr), -EINVAL);
    ASSERT_EQ(cisc_open(q, "d", O_RDONLY | O_DIRECTORY, 0, &fh), 0);   // directories open
    EXPECT_EQ(cisc_pread(q, fh, &fh, 8, 0), -EISDIR);
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Risc, TruncAppendAndAccessModes)
{
    Put("f", "0123456789");
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_WRONLY | O_TRUNC, 0, &fh), 0);
    EXPECT_EQ(ReadFile(P("f")), "");
    char c;
    EXPECT_EQ(cisc_pread(q, fh, &c, 1, 0), -EBADF);   // write-only
    EXPECT_EQ(cisc_close(q, fh), 0);
    Put("f", "abc");
    ASSERT_EQ(cisc_open(q, "f", O_WRONLY | O_APPEND, 0, &fh), 0);
    EXPECT_EQ(cisc_write(q, fh, "def", 3), 3);
    EXPECT_EQ(cisc_pwrite(q, fh, "gh", 2, 0), 2);   // O_APPEND: at the end, as Linux
    EXPECT_EQ(cisc_close(q, fh), 0);
    EXPECT_EQ(ReadFile(P("f")), "abcdefgh");
    ASSERT_EQ(cisc_open(q, "f", O_RDONLY, 0, &fh), 0);
    EXPECT_EQ(cisc_pwrite(q, fh, "x", 1, 0), -EBADF);   // read-only
    EXPECT_EQ(cisc_append(q, fh, "x", 1, nullptr), -EBADF);
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Risc, AppendReportsOffsets)
{
    uint64_t fh, at = 99;
    ASSERT_EQ(cisc_open(q, "log", O_CREAT | O_RDWR, 0644, &fh), 0);
    EXPECT_EQ(cisc_append(q, fh, "one", 3, &at), 3);
    EXPECT_EQ(at, 0u);
    EXPECT_EQ(cisc_append(q, fh, "two", 3, &at), 3);
    EXPECT_EQ(at, 3u);
    EXPECT_EQ(cisc_append(q, fh, "", 0, &at), 0);
    EXPECT_EQ(cisc_close(q, fh), 0);
    EXPECT_EQ(ReadFile(P("log")), "onetwo");
}

TEST_F(Risc, BadAndClosedHandles)
{
    uint64_t fh;
    char c = 0;
    struct stat st;
    Put("f", "x");
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    ASSERT_EQ(cisc_close(q, fh), 0);
    for (uint64_t bad : { fh, (uint64_t)0, (uint64_t)12345, ~(uint64_t)0 }) {
        EXPECT_EQ(cisc_pread(q, bad, &c, 1, 0), -EBADF) << bad;
        EXPECT_EQ(cisc_pwrite(q, bad, &c, 1, 0), -EBADF) << bad;
        EXPECT_EQ(cisc_append(q, bad, &c, 1, nullptr), -EBADF) << bad;
        EXPECT_EQ(cisc_truncate(q, bad, 0), -EBADF) << bad;
        EXPECT_EQ(cisc_fsync(q, bad, 0), -EBADF) << bad;
        EXPECT_EQ(cisc_fstat(q, bad, &st), -EBADF) << bad;
        EXPECT_EQ(cisc_close(q, bad), -EBADF) << bad;
        EXPECT_EQ(cisc_read(q, bad, &c, 1), -EBADF) << bad;
    }
}

TEST_F(Risc, Truncate)
{
    Put("f", "0123456789");
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    EXPECT_EQ(cisc_truncate(q, fh, 4), 0);
    EXPECT_EQ(ReadFile(P("f")), "0123");
    EXPECT_EQ(cisc_truncate(q, fh, 8), 0);
    EXPECT_EQ(ReadFile(P("f")), std::string("0123\0\0\0\0", 8));
    EXPECT_EQ(cisc_truncate(q, fh, (uint64_t)1 << 63), -EINVAL);
    EXPECT_EQ(cisc_close(q, fh), 0);
    ASSERT_EQ(cisc_open(q, "f", O_RDONLY, 0, &fh), 0);
    EXPECT_EQ(cisc_truncate(q, fh, 0), -EINVAL);   // not open for writing
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Risc, FsyncAndFstat)
{
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_CREAT | O_RDWR, 0600, &fh), 0);
    EXPECT_EQ(cisc_pwrite(q, fh, "abc", 3, 10), 3);
    EXPECT_EQ(cisc_fsync(q, fh, 0), 0);
    EXPECT_EQ(cisc_fsync(q, fh, 1), 0);
    struct stat st, mst;
    ASSERT_EQ(cisc_fstat(q, fh, &st), 0);
    ASSERT_EQ(stat(P("f").c_str(), &mst), 0);
    EXPECT_EQ(st.st_size, 13);
    EXPECT_EQ(st.st_ino, mst.st_ino);
    EXPECT_EQ(st.st_mode, mst.st_mode);
    EXPECT_EQ(st.st_nlink, 1u);
    EXPECT_EQ(st.st_mtim.tv_sec, mst.st_mtim.tv_sec);
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Risc, StatPaths)
{
    struct stat st;
    ASSERT_EQ(cisc_mkdir(q, "a", 0755), 0);
    ASSERT_EQ(cisc_mkdir(q, "a/b", 0700), 0);
    Put("a/b/f", "12345");
    ASSERT_EQ(cisc_stat(q, "a/b/f", &st), 0);
    EXPECT_EQ(st.st_size, 5);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    ASSERT_EQ(cisc_stat(q, "/a//b/./f", &st), 0);
    EXPECT_EQ(st.st_size, 5);
    ASSERT_EQ(cisc_stat(q, "a/b/../b/f", &st), 0);
    ASSERT_EQ(cisc_stat(q, "../../a", &st), 0);   // ".." stops at the root
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    ASSERT_EQ(cisc_stat(q, "/", &st), 0);
    EXPECT_EQ(st.st_ino, 1u);
    EXPECT_EQ(cisc_stat(q, "a/missing", &st), -ENOENT);
    EXPECT_EQ(cisc_stat(q, "a/b/f/g", &st), -ENOTDIR);
    EXPECT_EQ(cisc_stat(q, "", &st), -ENOENT);
    EXPECT_EQ(cisc_stat(q, nullptr, &st), -EFAULT);
}

TEST_F(Risc, Symlinks)
{
    struct stat st;
    ASSERT_EQ(cisc_mkdir(q, "real", 0755), 0);
    Put("real/f", "data");
    ASSERT_EQ(symlink("real", P("rel").c_str()), 0);          // relative
    ASSERT_EQ(symlink("/real/f", P("abs").c_str()), 0);       // absolute: from the root
    ASSERT_EQ(symlink("loop2", P("loop1").c_str()), 0);
    ASSERT_EQ(symlink("loop1", P("loop2").c_str()), 0);
    ASSERT_EQ(cisc_stat(q, "rel/f", &st), 0);
    EXPECT_EQ(st.st_size, 4);
    ASSERT_EQ(cisc_stat(q, "abs", &st), 0);
    EXPECT_EQ(st.st_size, 4);
    EXPECT_EQ(Get("abs"), "data");
    EXPECT_EQ(cisc_stat(q, "loop1", &st), -ELOOP);
    EXPECT_EQ(cisc_stat(q, "loop1/x", &st), -ELOOP);
    uint64_t fh;
    EXPECT_EQ(cisc_open(q, "abs", O_RDONLY | O_NOFOLLOW, 0, &fh), -ELOOP);
    EXPECT_EQ(cisc_open(q, "abs", O_CREAT | O_EXCL | O_WRONLY, 0644, &fh), -EEXIST);
    // unlink removes the link, not its target
    EXPECT_EQ(cisc_unlink(q, "rel"), 0);
    EXPECT_EQ(cisc_stat(q, "real/f", &st), 0);
}

TEST_F(Risc, UnlinkMkdirRmdir)
{
    Put("f", "x");
    EXPECT_EQ(cisc_mkdir(q, "d", 0750), 0);
    struct stat st;
    ASSERT_EQ(stat(P("d").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750u);
    EXPECT_EQ(cisc_mkdir(q, "d", 0755), -EEXIST);
    EXPECT_EQ(cisc_mkdir(q, "f", 0755), -EEXIST);
    EXPECT_EQ(cisc_mkdir(q, "x/y", 0755), -ENOENT);
    EXPECT_EQ(cisc_mkdir(q, "/", 0755), -EEXIST);
    EXPECT_EQ(cisc_mkdir(q, "f/y", 0755), -ENOTDIR);
    Put("d/inner", "y");
    EXPECT_EQ(cisc_rmdir(q, "d"), -ENOTEMPTY);
    EXPECT_EQ(cisc_rmdir(q, "f"), -ENOTDIR);
    EXPECT_EQ(cisc_rmdir(q, "nothere"), -ENOENT);
    EXPECT_EQ(cisc_rmdir(q, "/"), -EBUSY);
    EXPECT_EQ(cisc_rmdir(q, "d/."), -EINVAL);
    EXPECT_EQ(cisc_unlink(q, "d"), -EISDIR);
    EXPECT_EQ(cisc_unlink(q, "f/"), -ENOTDIR);
    EXPECT_EQ(cisc_unlink(q, "nothere"), -ENOENT);
    EXPECT_EQ(cisc_unlink(q, "d/inner"), 0);
    EXPECT_EQ(cisc_rmdir(q, "d/"), 0);
    EXPECT_NE(access(P("d").c_str(), F_OK), 0);
    // an unlinked file stays readable through its open handle
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDONLY, 0, &fh), 0);
    EXPECT_EQ(cisc_unlink(q, "f"), 0);
    char c = 0;
    EXPECT_EQ(cisc_pread(q, fh, &c, 1, 0), 1);
    EXPECT_EQ(c, 'x');
    EXPECT_EQ(cisc_close(q, fh), 0);
}

TEST_F(Risc, Rename)
{
    Put("a", "A");
    Put("b", "B");
    ASSERT_EQ(cisc_mkdir(q, "d", 0755), 0);
    EXPECT_EQ(cisc_rename(q, "a", "d/a2", 0), 0);
    EXPECT_EQ(ReadFile(P("d/a2")), "A");
    EXPECT_EQ(cisc_rename(q, "b", "d/a2", RENAME_NOREPLACE), -EEXIST);
    EXPECT_EQ(cisc_rename(q, "b", "d/a2", RENAME_EXCHANGE), 0);
    EXPECT_EQ(ReadFile(P("d/a2")), "B");
    EXPECT_EQ(ReadFile(P("b")), "A");
    EXPECT_EQ(cisc_rename(q, "b", "d/a2", 0), 0);   // replaces
    EXPECT_EQ(ReadFile(P("d/a2")), "A");
    EXPECT_EQ(cisc_rename(q, "missing", "x", 0), -ENOENT);
    EXPECT_EQ(cisc_rename(q, "d", "d/sub", 0), -EINVAL);
    EXPECT_EQ(cisc_rename(q, "d/a2", "x", RENAME_NOREPLACE | RENAME_EXCHANGE), -EINVAL);
    EXPECT_EQ(cisc_rename(q, "d/a2", "x", 1u << 7), -EINVAL);
    EXPECT_EQ(cisc_rename(q, "d/a2", "", 0), -ENOENT);
    EXPECT_EQ(cisc_rename(q, "/", "x", 0), -EBUSY);
}

static int collect(void *arg, const struct cisc_dirent *de)
{
    (*(std::map<std::string, unsigned> *)arg)[de->name] = de->type;
    return 0;
}

TEST_F(Risc, Readdir)
{
    ASSERT_EQ(cisc_mkdir(q, "d", 0755), 0);
    std::set<std::string> want = { ".", ".." };
    for (int i = 0; i < 1500; i++) {   // several batches of 32 KiB
        std::string n = "file-with-a-longish-name-" + std::to_string(i);
        Put("d/" + n, "");
        want.insert(n);
    }
    ASSERT_EQ(cisc_mkdir(q, "d/sub", 0755), 0);
    want.insert("sub");
    std::map<std::string, unsigned> got;
    ASSERT_EQ(cisc_readdir(q, "d", collect, &got), 0);
    EXPECT_EQ(got.size(), want.size());
    for (const auto &n : want)
        EXPECT_EQ(got.count(n), 1u) << n;
    EXPECT_EQ(got["sub"], (unsigned)DT_DIR);
    EXPECT_EQ(got["file-with-a-longish-name-7"], (unsigned)DT_REG);
    got.clear();
    EXPECT_EQ(cisc_readdir(q, "d/file-with-a-longish-name-7", collect, &got), -ENOTDIR);
    EXPECT_EQ(cisc_readdir(q, "nothere", collect, &got), -ENOENT);
    int calls = 0;
    auto stop = [](void *arg, const struct cisc_dirent *) -> int { return ++*(int *)arg >= 3; };
    EXPECT_EQ(cisc_readdir(q, "d", stop, &calls), 0);
    EXPECT_EQ(calls, 3);
}

TEST_F(Risc, ArenaBuffersAndBigTransfers)
{
    void *b;
    EXPECT_EQ(cisc_buf_alloc(q, 0, &b), -EINVAL);
    EXPECT_EQ(cisc_buf_alloc(q, (size_t)1 << 40, &b), -EINVAL);
    ASSERT_EQ(cisc_buf_alloc(q, 1 << 20, &b), 0);
    EXPECT_EQ((uintptr_t)b % 64, 0u);
    memset(b, 'z', 1 << 20);
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "big", O_CREAT | O_RDWR, 0644, &fh), 0);
    EXPECT_EQ(cisc_pwrite(q, fh, b, 1 << 20, 0), 1 << 20);   // zero-copy
    // A heap buffer larger than one bounce chunk: chunked through the arena.
    std::string heap(3 * (1 << 20) + 123, '\0');
    for (size_t i = 0; i < heap.size(); i++)
        heap[i] = (char)(i * 7 + i / 4096);
    EXPECT_EQ(cisc_pwrite(q, fh, heap.data(), heap.size(), 1 << 20), (ssize_t)heap.size());
    std::string back(heap.size(), '\0');
    EXPECT_EQ(cisc_pread(q, fh, &back[0], back.size(), 1 << 20), (ssize_t)back.size());
    EXPECT_TRUE(back == heap);
    memset(b, 0, 1 << 20);
    EXPECT_EQ(cisc_pread(q, fh, b, 1 << 20, 0), 1 << 20);
    EXPECT_EQ(((char *)b)[12345], 'z');
    EXPECT_EQ(cisc_close(q, fh), 0);
    cisc_buf_free(q, b);
    cisc_buf_free(q, nullptr);
    cisc_buf_free(q, (char *)b + 64);   // not a buffer start: ignored
    // the arena is whole again: its full size can be taken at once
    ASSERT_EQ(cisc_buf_alloc(q, 8 << 20, &b), 0);
    cisc_buf_free(q, b);
}

TEST_F(Risc, QueuesPerSession)
{
    std::vector<struct cisc_queue *> qs;
    struct cisc_queue *x;
    int r;
    while ((r = cisc_queue_create(s, &x)) == 0)
        qs.push_back(x);
    EXPECT_EQ(r, -EMFILE);
    EXPECT_EQ(qs.size(), 63u);   // 64 per session, one is the fixture's
    for (auto *y : qs)
        EXPECT_EQ(cisc_nop(y), 0);
    for (auto *y : qs)
        cisc_queue_destroy(y);
    struct cisc_queue_params p = {};
    p.sq_entries = 5000;
    EXPECT_EQ(cisc_queue_create_params(s, &p, &x), -EINVAL);
    p = {};
    p.sq_entries = 3;
    p.arena_size = 100000;
    ASSERT_EQ(cisc_queue_create_params(s, &p, &x), 0);
    EXPECT_EQ(cisc_nop(x), 0);
    cisc_queue_destroy(x);
    EXPECT_TRUE(WaitStatus("qp", "queues", 1));
}

// One poller serves every queue it was given (device queue.h invariant
// 6): more queues than one futex_waitv can watch (the others' doorbells
// are scanned), created and destroyed in waves so that its private array
// grows and shrinks while it runs.
TEST_F(Risc, EveryQueueOfAPollerIsServed)
{
    struct cisc_queue_params p = {};
    p.sq_entries = 4;
    p.arena_size = 64 << 10;
    std::vector<struct cisc_session *> ss(3);
    std::vector<struct cisc_queue *> qs;
    for (auto &x : ss) {
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &x), 0);
        struct cisc_queue *q1;
        for (int i = 0; i < 64; i++) {   // QP_MAX_PER_SESSION each
            ASSERT_EQ(cisc_queue_create_params(x, &p, &q1), 0) << qs.size();
            qs.push_back(q1);
        }
    }
    for (size_t i = qs.size(); i-- > 0;)   // newest first: the last added
        ASSERT_EQ(cisc_nop(qs[i]), 0) << i;
    for (size_t i = 0; i < qs.size(); i += 2) {   // every other one goes ...
        cisc_queue_destroy(qs[i]);
        qs[i] = nullptr;
    }
    for (size_t i = 0; i < qs.size(); i += 2)     // ... and comes back
        ASSERT_EQ(cisc_queue_create_params(ss[i / 64], &p, &qs[i]), 0) << i;
    for (size_t i = 0; i < qs.size(); i++)
        ASSERT_EQ(cisc_nop(qs[i]), 0) << i;
    for (auto *x : ss)
        cisc_session_close(x);
    EXPECT_TRUE(WaitStatus("qp", "queues", 1));
}

TEST_F(Risc, HandlesBelongToTheirSession)
{
    struct cisc_session *s2;
    struct cisc_queue *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s2), 0);
    ASSERT_EQ(cisc_queue_create(s2, &q2), 0);
    Put("f", "secret");
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "f", O_RDWR, 0, &fh), 0);
    char buf[8];
    EXPECT_EQ(cisc_pread(q2, fh, buf, sizeof(buf), 0), -EBADF);   // not its handle
    EXPECT_EQ(cisc_close(q2, fh), -EBADF);
    EXPECT_EQ(cisc_pread(q, fh, buf, sizeof(buf), 0), 6);
    uint64_t fh2;
    ASSERT_EQ(cisc_open(q2, "f", O_RDONLY, 0, &fh2), 0);
    ASSERT_EQ(cisc_open(q2, "f", O_RDONLY, 0, &fh2), 0);
    EXPECT_TRUE(WaitStatus("qp", "handles", 3));
    cisc_session_close(s2);   // its two handles close with it
    EXPECT_TRUE(WaitStatus("qp", "handles", 1));
    EXPECT_TRUE(WaitStatus("qp", "sessions", 1));
    EXPECT_EQ(cisc_close(q, fh), 0);
    EXPECT_TRUE(WaitStatus("qp", "handles", 0));
}

TEST_F(Risc, SessionErrors)
{
    struct cisc_session *x;
    EXPECT_EQ(cisc_session_open("/nonexistent-dir-for-cisc", &x), -ENOENT);
    EXPECT_NE(cisc_session_open(dir.c_str(), &x), 0);   // no device there
    EXPECT_EQ(cisc_session_open(nullptr, &x), -EINVAL);
    uint32_t uid = 99, gid = 99;
    int32_t pid = 0;
    ASSERT_EQ(cisc_session_creds(s, &uid, &gid, &pid), 0);
    EXPECT_EQ(uid, getuid());
    EXPECT_EQ(gid, getgid());
    EXPECT_EQ(pid, getpid());
}

TEST_F(Risc, StatusShowsModelAndQueues)
{
    RunResult r = Sh(cisc + " status " + mnt);
    if (!getenv("CISC_E2E_UP_ARGS")) {   // the defaults
        EXPECT_NE(r.out.find("link_latency_ns 900"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("core_speed 1.00"), std::string::npos) << r.out;
    }
    EXPECT_GE(Status("model", "link_latency_ns"), 0) << r.out;
    EXPECT_EQ(Status("qp", "queues"), 1);
    EXPECT_EQ(Status("qp", "sessions"), 1);
}

// On slow device cores the poller runs no command itself (queue_poll.c):
// held for its modelled time it would fetch nothing meanwhile, and the
// scheduler would choose blind to the queues' newer commands. At core
// speed 1 it takes the shortcut for small commands, as before.
TEST_F(Risc, OnSlowCoresThePollerHandsEveryCommandToTheCores)
{
    for (const char *speed : { "1", "2" }) {
        Down();
        Up(std::string("--core-speed ") + speed);
        struct cisc_session *s2;
        struct cisc_queue *q2;
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s2), 0);
        ASSERT_EQ(cisc_queue_create(s2, &q2), 0);
        uint64_t fh;
        ASSERT_EQ(cisc_open(q2, "small", O_CREAT | O_WRONLY, 0644, &fh), 0);
        long long d0 = Status("queue", "direct");
        for (int i = 0; i < 20; i++)
            ASSERT_EQ(cisc_pwrite(q2, fh, "x", 1, (uint64_t)i * 4096), 1);
        long long d1 = Status("queue", "direct");
        cisc_session_close(s2);
        if (std::string(speed) == "1") {
            EXPECT_GE(d1 - d0, 10) << "the poller ran small commands itself";
        } else {
            EXPECT_EQ(d1 - d0, 0) << "slow cores: every command went to a core thread";
        }
    }
}

TEST_F(Risc, ModelKnobsReachStatus)
{
    Down();
    Up("--link-latency-ns 0 --core-speed 2.5 --pollers 2 --poll-us 0");
    EXPECT_EQ(Status("model", "link_latency_ns"), 0);
    RunResult r = Sh(cisc + " status --raw " + mnt);
    EXPECT_NE(r.out.find("core_speed 2.50"), std::string::npos) << r.out;
    EXPECT_EQ(Status("qp", "pollers"), 2);
    struct cisc_session *s2;
    struct cisc_queue *q2;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s2), 0);
    ASSERT_EQ(cisc_queue_create(s2, &q2), 0);
    EXPECT_EQ(cisc_nop(q2), 0);
    Put("f", "z", q2);
    EXPECT_EQ(Get("f", q2), "z");
    cisc_session_close(s2);
    EXPECT_NE(Sh(cisc + " up --link-latency-ns -5 " + img + " " + mnt).status, 0);
    EXPECT_NE(Sh(cisc + " up --core-speed 0.5 " + img + " " + mnt).status, 0);
    EXPECT_NE(Sh(cisc + " up --pollers 0 " + img + " " + mnt).status, 0);
}

}  // namespace
}  // namespace e2e

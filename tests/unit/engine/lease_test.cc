// tests/unit/engine/lease_test.cc - append leases (device/engine/lease.h) on
// the real engine: a mount write(2) sent as pieces (ordered WRITEs on an
// O_APPEND handle of the engine's table, the FUSE door's) keeps the end of
// the file, and a session's append waits for the write(2) to end; the
// lease ends with the last piece, another mount handle's write, a release,
// or the lease wait.
#include <gtest/gtest.h>

#include "device/engine/engine.h"
#include "tests/unit/engine/eng_image.h"
#include "device/engine/handle.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

namespace {

struct Async {
    struct eng_cmd c;
    std::atomic<bool> done{ false };
    std::string data;
};

class Lease : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct hdl_table *sess = nullptr;   // a libcisc session's handles
    struct eng_cred root = {};
    uint64_t ino = 0;

    void Start(uint64_t wait_ns)
    {
        MakeMountedImage("/tmp/ciscfs-lease-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = { 2, "fifo" };
        cfg.lease_wait_ns = wait_ns;
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        ASSERT_EQ(hdl_table_create(&sess), 0);
        root.ngroups = -1;
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_CREATE, &root);
        c.ino = SFS_ROOT_INO;
        c.name = "log";
        c.mode = 0644;
        c.flags = O_WRONLY;
        ASSERT_EQ(eng_call(eng, &c), 0);
        ino = c.attr.ino;
        Release(nullptr, c.out_fh);
    }

    void SetUp() override { Start(3600ull * 1000000000ull); }   // never breaks

    void TearDown() override
    {
        if (eng) {
            eng_release_handles(eng, sess);
            eng_destroy(eng);
        }
        hdl_table_destroy(sess);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
    }

    // An O_WRONLY | O_APPEND handle: the mount's (tbl NULL) or a session's.
    uint64_t Open(struct hdl_table *tbl)
    {
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_OPEN, &root);
        c.ino = ino;
        c.flags = O_WRONLY | O_APPEND;
        c.hdl = tbl;
        EXPECT_EQ(eng_call(eng, &c), 0);
        return c.out_fh;
    }

    void Release(struct hdl_table *tbl, uint64_t fh)
    {
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_RELEASE, nullptr);
        c.fh = fh;
        c.hdl = tbl;
        EXPECT_EQ(eng_call(eng, &c), 0);
    }

    // A piece of a mount write(2): n bytes of ch; more: not its last.
    void Piece(uint64_t fh, char ch, size_t n, bool more)
    {
        std::string d(n, ch);
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_WRITE, &root);
        c.fh = fh;
        c.in = d.data();
        c.size = n;
        c.flags = ENG_WRITE_ORDERED | (more ? ENG_WRITE_MORE : 0);
        EXPECT_EQ(eng_call(eng, &c), (int64_t)n);
    }

    static void Done(struct eng_cmd *c)
    {
        ((Async *)c->priv)->done = true;
    }

    // Submits a session's op (APPEND, or WRITE on its O_APPEND handle)
    // of n bytes of ch without waiting.
    void Submit(Async *a, unsigned op, uint64_t fh, char ch, size_t n)
    {
        a->data.assign(n, ch);
        eng_cmd_init(&a->c, op, &root);
        a->c.hdl = sess;
        a->c.fh = fh;
        a->c.in = a->data.data();
        a->c.size = n;
        a->c.done = Done;
        a->c.priv = a;
        ASSERT_EQ(eng_submit(eng, &a->c), 0);
    }

    // Waits until the engine holds `n` parked commands, or a finished.
    void AwaitParked(uint64_t n, const Async &a)
    {
        while (eng_parked(eng) != n && !a.done)
            std::this_thread::yield();
    }

    static void Await(const Async &a)
    {
        while (!a.done)
            std::this_thread::yield();
    }

    std::string Contents()
    {
        struct sfs_attr at;
        EXPECT_EQ(sfs_getattr(fs, ino, &at), 0);
        std::string d(at.size, '\0');
        EXPECT_EQ(sfs_read(fs, ino, 0, &d[0], d.size()), (ssize_t)d.size());
        return d;
    }
};

}  // namespace

TEST_F(Lease, SessionAppendWaitsForTheLastPiece)
{
    uint64_t mount = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 1000, true);
    Async ap;
    Submit(&ap, ENG_OP_APPEND, mine, 'x', 10);
    AwaitParked(1, ap);
    EXPECT_EQ(eng_parked(eng), 1u);
    EXPECT_FALSE(ap.done);
    Piece(mount, 'b', 4096, true);   // the holder goes on
    Piece(mount, 'c', 500, false);   // its write(2) ends
    Await(ap);
    EXPECT_EQ(ap.c.ret, 10);
    EXPECT_EQ(ap.c.out_off, 5596u);
    EXPECT_EQ(Contents(), std::string(1000, 'a') + std::string(4096, 'b') +
                              std::string(500, 'c') + std::string(10, 'x'));
    EXPECT_EQ(eng_parked(eng), 0u);
}

TEST_F(Lease, SessionWriteOnAppendHandleWaitsToo)
{
    uint64_t mount = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 100, true);
    Async wr;
    Submit(&wr, ENG_OP_WRITE, mine, 'x', 10);
    AwaitParked(1, wr);
    EXPECT_FALSE(wr.done);
    Piece(mount, 'b', 100, false);
    Await(wr);
    EXPECT_EQ(wr.c.ret, 10);
    EXPECT_EQ(Contents(), std::string(100, 'a') + std::string(100, 'b') + std::string(10, 'x'));
}

TEST_F(Lease, AnotherMountHandleEndsTheLease)
{
    uint64_t mount = Open(nullptr), other = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 100, true);   // its last piece never comes
    Async ap;
    Submit(&ap, ENG_OP_APPEND, mine, 'x', 10);
    AwaitParked(1, ap);
    EXPECT_FALSE(ap.done);
    Piece(other, 'b', 100, false);   // never parks: the kernel ordered it
    Await(ap);
    EXPECT_EQ(ap.c.out_off, 200u);
    EXPECT_EQ(Contents(), std::string(100, 'a') + std::string(100, 'b') + std::string(10, 'x'));
}

TEST_F(Lease, ReleaseEndsTheLease)
{
    uint64_t mount = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 100, true);
    Async ap;
    Submit(&ap, ENG_OP_APPEND, mine, 'x', 10);
    AwaitParked(1, ap);
    EXPECT_FALSE(ap.done);
    Release(nullptr, mount);
    Await(ap);
    EXPECT_EQ(ap.c.out_off, 100u);
    EXPECT_EQ(eng_parked(eng), 0u);
}

TEST_F(Lease, EngineDestroyRunsParkedCommands)
{
    uint64_t mount = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 100, true);
    Async ap;
    Submit(&ap, ENG_OP_APPEND, mine, 'x', 10);
    AwaitParked(1, ap);
    eng_release_handles(eng, sess);
    eng_destroy(eng);
    eng = nullptr;
    EXPECT_TRUE(ap.done);
}

class LeaseShortWait : public Lease {
protected:
    void SetUp() override { Start(1000000); }   // 1 ms
};

// A writer that stops between two pieces holds appends up only for the
// lease wait; until its write(2) ends, appends no longer wait for it.
TEST_F(LeaseShortWait, AStalledWriterHoldsAppendsUpOnlyForTheWait)
{
    uint64_t mount = Open(nullptr), mine = Open(sess);
    Piece(mount, 'a', 100, true);
    Async ap, ap2;
    Submit(&ap, ENG_OP_APPEND, mine, 'x', 10);
    Await(ap);
    EXPECT_EQ(ap.c.ret, 10);
    EXPECT_EQ(ap.c.out_off, 100u);
    Piece(mount, 'b', 100, true);   // the same write(2) goes on: broken, no new wait
    Submit(&ap2, ENG_OP_APPEND, mine, 'y', 10);
    Await(ap2);
    EXPECT_EQ(ap2.c.out_off, 210u);
    Piece(mount, 'c', 100, false);
    EXPECT_EQ(eng_parked(eng), 0u);
    EXPECT_EQ(Contents(), std::string(100, 'a') + std::string(10, 'x') + std::string(100, 'b') +
                              std::string(10, 'y') + std::string(100, 'c'));
}

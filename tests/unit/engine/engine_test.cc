// tests/unit/engine/engine_test.cc - the engine on a real StorageFS in a
// temporary image: commands, credentials, handles, references.
#include <gtest/gtest.h>

#include "device/engine/engine.h"
#include "tests/unit/engine/eng_image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

class Engine : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct eng_cred root = {}, user = {};

    void SetUp() override
    {
        MakeMountedImage("/tmp/ciscfs-eng-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = { 2, "fifo" };
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        root.ngroups = -1;
        user.uid = user.gid = 12345;
        user.ngroups = -1;
    }

    void TearDown() override
    {
        eng_destroy(eng);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
    }

    int64_t Do(struct eng_cmd &c) { return eng_call(eng, &c); }

    uint64_t Create(const char *name, uint32_t mode, uint64_t *fh, const struct eng_cred &cr)
    {
        struct eng_cmd c;
        eng_cmd_init(&c, ENG_OP_CREATE, &cr);
        c.ino = SFS_ROOT_INO;
        c.name = name;
        c.mode = mode;
        c.flags = O_RDWR;
        EXPECT_EQ(Do(c), 0);
        *fh = c.out_fh;
        return c.attr.ino;
    }
};

}  // namespace

TEST_F(Engine, CreateWriteReadRelease)
{
    uint64_t fh;
    uint64_t ino = Create("f", 0644, &fh, root);
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_WRITE, &root);
    c.fh = fh;
    c.in = "hello device";
    c.size = 12;
    EXPECT_EQ(Do(c), 12);
    char buf[32] = { 0 };
    eng_cmd_init(&c, ENG_OP_READ, &root);
    c.fh = fh;
    c.out = buf;
    c.size = sizeof(buf);
    EXPECT_EQ(Do(c), 12);
    EXPECT_STREQ(buf, "hello device");
    eng_cmd_init(&c, ENG_OP_GETATTR, &root);
    c.ino = ino;
    EXPECT_EQ(Do(c), 0);
    EXPECT_EQ(c.attr.size, 12u);
    EXPECT_EQ(eng_open_handles(eng), 1u);
    eng_cmd_init(&c, ENG_OP_FLUSH, &root);   // the kernel is told not to send it
    c.fh = fh;
    EXPECT_EQ(Do(c), 0);
    eng_cmd_init(&c, ENG_OP_FSYNC, &root);
    c.fh = fh;
    c.flags = 1;   // datasync
    EXPECT_EQ(Do(c), 0);
    eng_cmd_init(&c, ENG_OP_SYNC, &root);
    EXPECT_EQ(Do(c), 0);
    eng_cmd_init(&c, ENG_OP_RELEASE, &root);
    c.fh = fh;
    EXPECT_EQ(Do(c), 0);
    EXPECT_EQ(Do(c), -EBADF) << "released twice";
    eng_cmd_init(&c, ENG_OP_FLUSH, &root);
    c.fh = fh;
    EXPECT_EQ(Do(c), -EBADF);
    eng_cmd_init(&c, ENG_OP_FORGET, &root);
    c.ino = ino;
    c.len = 1;
    EXPECT_EQ(Do(c), 0);
    EXPECT_EQ(eng_open_handles(eng), 0u);
}

TEST_F(Engine, HandlesAreCheckedAndModesEnforced)
{
    uint64_t fh;
    uint64_t ino = Create("f", 0644, &fh, root);
    struct eng_cmd c;
    char buf[8];
    eng_cmd_init(&c, ENG_OP_READ, &root);
    c.fh = fh + 12345;
    c.out = buf;
    c.size = 8;
    EXPECT_EQ(Do(c), -EBADF);
    eng_cmd_init(&c, ENG_OP_OPEN, &root);
    c.ino = ino;
    c.flags = O_RDONLY;
    ASSERT_EQ(Do(c), 0);
    uint64_t ro = c.out_fh;
    eng_cmd_init(&c, ENG_OP_WRITE, &root);
    c.fh = ro;
    c.in = "x";
    c.size = 1;
    EXPECT_EQ(Do(c), -EBADF) << "write through a read-only handle";
    eng_cmd_init(&c, ENG_OP_OPEN, &user);
    c.ino = ino;
    c.flags = O_WRONLY;
    EXPECT_EQ(Do(c), -EACCES);
    eng_cmd_init(&c, ENG_OP_OPEN, &user);
    c.ino = ino;
    c.flags = O_RDONLY;
    EXPECT_EQ(Do(c), 0);
    eng_cmd_init(&c, ENG_OP_CISC, &root);
    EXPECT_EQ(Do(c), -EINVAL) << "a CISC command without a decoded vector";
    eng_cmd_init(&c, 9999, &root);
    EXPECT_EQ(Do(c), -EINVAL);
    // open handles still held at destroy are released by eng_destroy
}

TEST_F(Engine, ConcurrentAppendsNeverOverlap)
{
    uint64_t fh;
    uint64_t ino = Create("log", 0644, &fh, root);
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_OPEN, &root);
    c.ino = ino;
    c.flags = O_WRONLY | O_APPEND;
    ASSERT_EQ(Do(c), 0);
    uint64_t afh = c.out_fh;
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&, t] {
            std::string rec(100, (char)('a' + t));
            for (int i = 0; i < 50; i++) {
                struct eng_cmd w;
                eng_cmd_init(&w, ENG_OP_WRITE, &root);
                w.fh = afh;
                w.in = rec.data();
                w.size = rec.size();
                EXPECT_EQ(eng_call(eng, &w), 100);
            }
        });
    for (auto &t : ts)
        t.join();
    std::string all(20000, '\0');
    eng_cmd_init(&c, ENG_OP_READ, &root);
    c.fh = fh;
    c.out = &all[0];
    c.size = all.size();
    ASSERT_EQ(Do(c), 20000);
    for (size_t r = 0; r < 200; r++)
        EXPECT_EQ(all.find_first_not_of(all[r * 100], r * 100), r * 100 + 100 < 20000
                      ? all.find_first_not_of(all[r * 100], r * 100) : std::string::npos);
    for (size_t r = 0; r < 200; r++)
        for (size_t i = 1; i < 100; i++)
            ASSERT_EQ(all[r * 100 + i], all[r * 100]) << "record " << r << " torn";
}

namespace {
std::atomic<int> done_calls;
void Done(struct eng_cmd *c)
{
    done_calls++;
    delete c;
}
}  // namespace

TEST_F(Engine, AsyncCompletionAndStats)
{
    done_calls = 0;
    for (int i = 0; i < 100; i++) {
        auto *c = new eng_cmd;
        eng_cmd_init(c, ENG_OP_STATFS, &root);
        c->done = Done;
        ASSERT_EQ(eng_submit(eng, c), 0);
    }
    while (done_calls < 100)
        usleep(1000);
    eng_drain(eng);   // a core counts a command completed after its done() returns
    struct sched_stats ss;
    for (int i = 0; i < 10000; i++) {
        eng_sched_stats(eng, &ss);
        if (ss.completed >= 100)
            break;
        usleep(1000);
    }
    EXPECT_EQ(ss.cores, 2u);
    EXPECT_GE(ss.completed, 100u);
    EXPECT_STREQ(eng_op_name(ENG_OP_STATFS), "statfs");
    EXPECT_STREQ(eng_op_name(ENG_OP_COUNT), "?");
}

TEST_F(Engine, ReaddirPlusTakesReferencesOnlyForWhatFits)
{
    for (int i = 0; i < 10; i++) {
        uint64_t fh;
        std::string n = "e" + std::to_string(i);
        Create(n.c_str(), 0644, &fh, root);
    }
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_OPENDIR, &root);
    c.ino = SFS_ROOT_INO;
    ASSERT_EQ(Do(c), 0);
    uint64_t dfh = c.out_fh;
    struct Fill {
        int n = 0, cap;
        uint64_t next = 0;
    } f;
    f.cap = 5;
    eng_cmd_init(&c, ENG_OP_READDIR, &root);
    c.fh = dfh;
    c.plus = true;
    c.fill = [](void *arg, const struct sfs_dirent *de, const struct sfs_attr *a) -> int {
        auto *f = static_cast<Fill *>(arg);
        if (f->n == f->cap || !a)
            return 1;
        f->n++;
        f->next = de->next_cookie;
        return 0;
    };
    c.fill_arg = &f;
    ASSERT_EQ(Do(c), 0);
    EXPECT_EQ(f.n, 5);
    f.cap = 100;
    f.n = 0;
    c.off = f.next;
    ASSERT_EQ(Do(c), 0);
    EXPECT_EQ(f.n, 7) << "the rest: 12 entries with . and ..";
}

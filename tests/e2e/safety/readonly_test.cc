// tests/e2e/safety/readonly_test.cc - a read-only device (`cisc up -o ro`,
// mount.ciscfs -o ro) refuses every change through every door with EROFS,
// writes nothing to its image, says so in `cisc status`, and refuses an
// image that would need writes to be read (journal replay) unless
// --replay.
#include "tests/e2e/progs/progs_fixture.h"

#include <cisc/cisc.h>
#include <cisc/fused.h>
#include <cisc/progs.h>

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

namespace e2e {
namespace {

class ReadOnly : public ProgsTest {
protected:
    struct cisc_session *s = nullptr;
    struct cisc_queue *q = nullptr;

    void TearDown() override
    {
        CloseSession();
        ProgsTest::TearDown();
    }

    void OpenSession()
    {
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }

    void CloseSession()
    {
        if (s)
            cisc_session_close(s);
        s = nullptr;
        q = nullptr;
    }

    // The image's bytes, hashed (the image is sparse: sha256sum reads it all).
    std::string ImageHash()
    {
        RunResult r = Sh("sha256sum " + img);
        EXPECT_EQ(r.status, 0) << r.out;
        return r.out.substr(0, 64);
    }

    // A file, a directory and a program, made read-write; then the device stops.
    void Populate()
    {
        ASSERT_TRUE(WriteFile(P("f"), "one\ntwo\nthree\n"));
        ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
        LoadOk(CorpusObj("count"));
        Down();
    }

    void ExpectRiscRefused()
    {
        uint64_t fh;
        EXPECT_EQ(cisc_open(q, "/f", O_WRONLY, 0, &fh), -EROFS);
        EXPECT_EQ(cisc_open(q, "/f", O_RDONLY | O_TRUNC, 0, &fh), -EROFS);
        EXPECT_EQ(cisc_open(q, "/new", O_RDWR | O_CREAT, 0644, &fh), -EROFS);
        EXPECT_EQ(cisc_mkdir(q, "/d2", 0755), -EROFS);
        EXPECT_EQ(cisc_rmdir(q, "/d"), -EROFS);
        EXPECT_EQ(cisc_unlink(q, "/f"), -EROFS);
        EXPECT_EQ(cisc_rename(q, "/f", "/g", 0), -EROFS);
        EXPECT_EQ(cisc_setxattr(q, "/f", "user.k", "v", 1, 0), -EROFS);
        EXPECT_EQ(cisc_removexattr(q, "/f", "user.k"), -EROFS);
        // reading works
        EXPECT_EQ(cisc_getxattr(q, "/f", "user.k", nullptr, 0), -ENODATA);
        EXPECT_EQ(cisc_listxattr(q, "/f", nullptr, 0), 0);
        ASSERT_EQ(cisc_open(q, "/f", O_RDONLY, 0, &fh), 0);
        EXPECT_EQ(cisc_fallocate(q, fh, 0, 0, 4096), -EROFS);
        char buf[64];
        EXPECT_EQ(cisc_read(q, fh, buf, sizeof(buf)), 14);
        EXPECT_EQ(cisc_close(q, fh), 0);
    }

    void ExpectFusedRefused()
    {
        struct cisc_vec v;
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        int f = cisc_vec_open(&v, "/f", O_RDONLY, 0);
        cisc_vec_crc32c(&v, CISC_IN_STEP(cisc_vec_read(&v, f, 0, 64)), 0);
        int g = cisc_vec_open(&v, "/out", O_WRONLY | O_CREAT, 0644);
        cisc_vec_write(&v, g, 0, CISC_IN_BUF("x", 1));
        EXPECT_EQ(cisc_vec_submit(&v), -EROFS);
        EXPECT_EQ(cisc_vec_ret(&v, 3), -EROFS) << "the refusal names the first mutating step";
        cisc_vec_free(&v);
        for (int tx : { CISC_TX_MACRO, CISC_TX_MICRO, CISC_TX_AUTOREC }) {
            // a vector that changes nothing runs in every mode (autorec needs no log)
            ASSERT_EQ(cisc_vec_init(&v, q), 0);
            ASSERT_EQ(cisc_vec_set_tx(&v, tx), 0);
            f = cisc_vec_open(&v, "/f", O_RDONLY, 0);
            cisc_vec_read(&v, f, 0, 64);
            EXPECT_EQ(cisc_vec_submit(&v), 0) << "tx " << tx;
            EXPECT_EQ(cisc_vec_ret(&v, 1), 14);
            cisc_vec_free(&v);
        }
        ASSERT_EQ(cisc_vec_init(&v, q), 0);
        cisc_vec_unlink(&v, "/f");
        EXPECT_EQ(cisc_vec_submit(&v), -EROFS);
        cisc_vec_free(&v);
    }

    void ExpectFuseRefused()
    {
        EXPECT_EQ(open(P("f").c_str(), O_WRONLY), -1);
        EXPECT_EQ(errno, EROFS);
        EXPECT_EQ(mkdir(P("d3").c_str(), 0755), -1);
        EXPECT_EQ(errno, EROFS);
        EXPECT_EQ(open(mnt.c_str(), O_TMPFILE | O_RDWR, 0600), -1);
        EXPECT_EQ(errno, EROFS);
        EXPECT_EQ(ReadFile(P("f")), "one\ntwo\nthree\n");
    }

    void ExpectCliRefused()
    {
        RunResult r = Sh(cisc + " run " + mnt + " --prog count --input /f");
        EXPECT_EQ(r.status, 0) << r.out;   // to standard output: reads only
        EXPECT_EQ(r.out, "3\n");
        r = Sh(cisc + " run " + mnt + " --prog count --input /f --output /result");
        EXPECT_NE(r.status, 0) << r.out;
        struct stat st;
        EXPECT_EQ(stat(P("result").c_str(), &st), -1);
        r = Prog("load " + mnt + " " + CorpusObj("count") + " --name other");
        EXPECT_NE(r.status, 0) << r.out;
        EXPECT_NE(r.out.find("read-only"), std::string::npos) << r.out;
        r = Prog("unload " + mnt + " count");
        EXPECT_NE(r.status, 0) << r.out;
        EXPECT_NE(Prog("list " + mnt).out.find("count"), std::string::npos);
        EXPECT_EQ(cisc_recovery_ack(s, "0000000000000001"), -EROFS);
    }
};

TEST_F(ReadOnly, EveryDoorRefusesAndTheImageIsUntouched)
{
    ASSERT_NO_FATAL_FAILURE(Populate());
    std::string before = ImageHash();
    Up("-o ro");
    EXPECT_EQ(StatusLine("access"), "access read-only");
    ASSERT_NO_FATAL_FAILURE(OpenSession());
    ExpectRiscRefused();
    ExpectFusedRefused();
    ExpectFuseRefused();
    ExpectCliRefused();
    CloseSession();
    Down();
    EXPECT_EQ(ImageHash(), before) << "a read-only device wrote to its image";
    Up();   // and read-write again, as it was
    EXPECT_EQ(StatusLine("access"), "access read-write");
    EXPECT_EQ(ReadFile(P("f")), "one\ntwo\nthree\n");
    ASSERT_TRUE(WriteFile(P("f2"), "x"));
}

TEST_F(ReadOnly, MountHelperOptionAndLongSpelling)
{
    ASSERT_NO_FATAL_FAILURE(Populate());
    std::string helper = std::string(getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR")
                                                               : CISC_BINARY_DIR) +
                         "/cmd/mount.ciscfs";
    RunResult r = Sh(helper + " " + img + " " + mnt + " -o ro,cores=2,log=" + log);
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    EXPECT_EQ(StatusLine("access"), "access read-only");
    ASSERT_NO_FATAL_FAILURE(OpenSession());
    uint64_t fh;
    EXPECT_EQ(cisc_open(q, "/f", O_WRONLY, 0, &fh), -EROFS);
    CloseSession();
    Down();
    Up("--read-only");
    EXPECT_EQ(StatusLine("access"), "access read-only");
    EXPECT_EQ(mkdir(P("x").c_str(), 0755), -1);
    EXPECT_EQ(errno, EROFS);
    r = Sh(cisc + " up --replay " + img + " " + mnt);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("--replay (-o replay) goes with --read-only"), std::string::npos) << r.out;
}

// An image whose journal holds committed transactions needs writes to be
// read as it is: refused read-only, unless --replay.
TEST_F(ReadOnly, ImageNeedingReplayIsRefusedUnlessReplay)
{
    int fd = open(P("late").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "committed\n", 10), 10);
    ASSERT_EQ(fsync(fd), 0);   // committed to the journal, not checkpointed
    close(fd);
    pid_t pid = DaemonPid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(kill(pid, SIGKILL), 0);   // no checkpoint, no clean mark
    for (int i = 0; i < 1000 && !ProcessEnded(pid); i++)
        usleep(10000);
    ASSERT_TRUE(ProcessEnded(pid));
    if (IsCiscMount(mnt))
        Sh("umount -l " + mnt);
    up = false;
    RunResult info = Sh(cisc + " info " + img);
    ASSERT_NE(info.out.find("awaiting replay"), std::string::npos) << info.out;
    std::string before = ImageHash();
    RunResult r = Sh(UpCmd("-o ro"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("needs its journal replayed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--replay"), std::string::npos) << r.out;
    EXPECT_EQ(ImageHash(), before) << "a refused read-only start wrote to the image";
    Up("-o ro --replay");
    EXPECT_EQ(StatusLine("access"), "access read-only");
    EXPECT_EQ(ReadFile(P("late")), "committed\n");
    Down();
    Up("-o ro");   // replayed once: read-only starts need nothing more
    EXPECT_EQ(ReadFile(P("late")), "committed\n");
}

// An autorec op cut short by a crash is finished by the device at its next
// start, which writes: a read-only start refuses it unless --replay, which
// finishes it first.
TEST_F(ReadOnly, UnfinishedLoggedOpIsRefusedUnlessReplay)
{
    ASSERT_TRUE(WriteFile(P("v"), "old"));
    Down();
    RunResult r = Sh("CISC_CRASH_POINT=after-log " + UpCmd("--tx autorec"));
    ASSERT_EQ(r.status, 0) << r.out;
    up = true;
    pid_t dev = DaemonPid();
    ASSERT_GT(dev, 0);
    pid_t child = fork();
    if (child == 0) {   // the device dies under this op, once its log is durable
        struct cisc_session *cs;
        struct cisc_queue *cq;
        if (cisc_session_open(mnt.c_str(), &cs) || cisc_queue_create(cs, &cq))
            _exit(1);
        struct cisc_vec v;
        cisc_vec_init(&v, cq);
        int f = cisc_vec_open(&v, "/v", O_WRONLY | O_TRUNC, 0);
        cisc_vec_write(&v, f, 0, CISC_IN_BUF("new", 3));
        cisc_vec_submit(&v);
        _exit(0);
    }
    for (int i = 0; i < 1000 && !ProcessEnded(dev); i++)
        usleep(10000);
    ASSERT_TRUE(ProcessEnded(dev));
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    up = false;
    for (int i = 0; i < 200 && IsCiscMount(mnt); i++)
        usleep(10000);
    if (IsCiscMount(mnt))
        Sh("umount -l " + mnt);
    std::string before = ImageHash();
    r = Sh(UpCmd("-o ro"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("--replay"), std::string::npos) << r.out;
    EXPECT_EQ(ImageHash(), before) << "a refused read-only start wrote to the image";
    Up("-o ro --replay");
    EXPECT_EQ(ReadFile(P("v")), "new") << "the logged op was finished first";
    EXPECT_EQ(StatusLine("access"), "access read-only");
    // its recovery record can be read, not acknowledged (that removes it)
    ASSERT_NO_FATAL_FAILURE(OpenSession());
    char text[4096];
    ssize_t n = cisc_recovery_list(s, text, sizeof(text));
    ASSERT_GT(n, 0);
    std::string list(text, (size_t)n);
    ASSERT_EQ(list.rfind("recovery op ", 0), 0u) << list;
    std::string name = list.substr(12, list.find(' ', 12) - 12);
    EXPECT_EQ(cisc_recovery_ack(s, name.c_str()), -EROFS);
    EXPECT_EQ(cisc_recovery_list(s, text, sizeof(text)), n);
}

}  // namespace
}  // namespace e2e

// Malformed and hostile program requests on the real control socket: the
// device answers each with a clear error, stores nothing, and keeps
// serving (the last request of every test is a good one).
#include "tests/e2e/progs/progs_fixture.h"

#include "common/le.h"
#include "device/control.h"
#include "proto/progs_wire.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <fstream>
#include <sstream>

using e2e::CorpusObj;
using e2e::ProgsTest;

namespace {

std::string Slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

int Memfd(const std::string &data, unsigned seals)
{
    int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || write(fd, data.data(), data.size()) != (ssize_t)data.size())
        return -1;
    if (seals && fcntl(fd, F_ADD_SEALS, seals))
        return -1;
    return fd;
}

}  // namespace

class HostileCtl : public ProgsTest {
protected:
    int fd = -1;

    void SetUp() override
    {
        ProgsTest::SetUp();
        char sock[4096];
        ASSERT_EQ(ctl_socket_path(mnt.c_str(), sock, sizeof(sock)), 0);
        fd = ctl_connect(sock);
        ASSERT_GE(fd, 0);
    }

    void TearDown() override
    {
        close(fd);
        ProgsTest::TearDown();
    }

    // A load request; returns the status (or the call's error), the reply
    // text in *text.
    int Load(int objfd, const char *name = "x", size_t reqlen = PW_LOAD_REQ_SIZE,
             std::string *text = nullptr)
    {
        uint8_t req[PW_LOAD_REQ_SIZE + 8] = {};
        pw_put_name(req + 8, name);
        char rep[CTL_MAX_PAYLOAD];
        int32_t st = 0;
        ssize_t n = ctl_call_pass(fd, CTL_PROG_LOAD, req, reqlen, objfd, &st, rep, sizeof(rep));
        EXPECT_GE(n, 0);
        if (text)
            text->assign(rep, n > 0 ? (size_t)n : 0);
        return n < 0 ? (int)n : st;   // no reply: not a success either
    }
};

TEST_F(HostileCtl, ObjectMustBeASealedMemfd)
{
    std::string obj = Slurp(CorpusObj("count")), text;
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    EXPECT_EQ(Load(pipefd[0], "x", PW_LOAD_REQ_SIZE, &text), -EINVAL);   // would block
    EXPECT_NE(text.find("sealed"), std::string::npos) << text;
    close(pipefd[0]);
    close(pipefd[1]);
    int unsealed = Memfd(obj, 0);
    EXPECT_EQ(Load(unsealed), -EINVAL);                                  // could change
    close(unsealed);
    int file = open(CorpusObj("count").c_str(), O_RDONLY);
    EXPECT_EQ(Load(file), -EINVAL);                                      // a plain file
    close(file);
    EXPECT_EQ(Load(-1, "x", PW_LOAD_REQ_SIZE, &text), -EBADF);            // none at all
    EXPECT_NE(text.find("no object descriptor"), std::string::npos) << text;
    int sealed = Memfd(obj, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    EXPECT_EQ(Load(sealed), 0);
    close(sealed);
}

TEST_F(HostileCtl, SizesAndFieldsAreChecked)
{
    std::string obj = Slurp(CorpusObj("count")), text;
    int sealed = Memfd(obj, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    EXPECT_EQ(Load(sealed, "x", PW_LOAD_REQ_SIZE - 1), -EINVAL);   // short request
    uint8_t req[PW_LOAD_REQ_SIZE];
    memset(req, 'A', sizeof(req));                                  // names without a NUL
    le32_put(req, 0);
    le32_put(req + 4, 0);
    int32_t st = 0;
    char rep[256];
    ASSERT_GE(ctl_call_pass(fd, CTL_PROG_LOAD, req, sizeof(req), sealed, &st, rep, sizeof(rep)),
              0);
    EXPECT_EQ(st, -EINVAL);
    std::string big(PROGS_OBJ_MAX + 1, '\0');
    int huge = Memfd(big, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    EXPECT_EQ(Load(huge, "x", PW_LOAD_REQ_SIZE, &text), -EFBIG);
    EXPECT_NE(text.find("over the device's limit"), std::string::npos) << text;
    close(huge);
    // SHOW / UNLOAD / STREAM with short or bad payloads
    uint8_t small[2] = { 0, 0 };
    ASSERT_GE(ctl_call(fd, CTL_PROG_SHOW, small, sizeof(small), &st, rep, sizeof(rep)), 0);
    EXPECT_EQ(st, -EINVAL);
    ASSERT_GE(ctl_call(fd, CTL_PROG_UNLOAD, small, sizeof(small), &st, rep, sizeof(rep)), 0);
    EXPECT_EQ(st, -EINVAL);
    uint8_t sreq[PW_STREAM_SIZE] = {};
    le32_put(sreq, 77);   // unknown op
    ASSERT_GE(ctl_call(fd, CTL_PROG_STREAM, sreq, sizeof(sreq), &st, rep, sizeof(rep)), 0);
    EXPECT_EQ(st, -EINVAL);
    EXPECT_EQ(Prog("list " + mnt).out.find("count"), std::string::npos);   // nothing stored
    EXPECT_EQ(Load(sealed, "good"), 0);
    close(sealed);
    EXPECT_NE(Prog("list " + mnt).out.find("good"), std::string::npos);
}

TEST_F(HostileCtl, GarbageObjectsAreRefusedWithAMessage)
{
    std::string obj = Slurp(CorpusObj("count")), text;
    for (size_t cut : { (size_t)0, (size_t)4, (size_t)64, obj.size() / 2, obj.size() - 1 }) {
        int f = Memfd(obj.substr(0, cut), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
        int st = Load(f, "cut", PW_LOAD_REQ_SIZE, &text);
        EXPECT_LT(st, 0) << cut;
        EXPECT_FALSE(text.empty()) << cut;
        close(f);
    }
    std::string flipped = obj;
    for (size_t i = 0; i < flipped.size(); i += 97)
        flipped[i] ^= 0x5a;
    int f = Memfd(flipped, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    EXPECT_LT(Load(f, "flip"), 0);
    close(f);
    EXPECT_EQ(e2e::Sh(cisc + " status " + mnt).status, 0);   // still serving
}

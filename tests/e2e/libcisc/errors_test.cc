// tests/e2e/libcisc/errors_test.cc - libcisc says what is wrong:
// cisc_strerror's own meanings, cisc_session_open on a directory that is
// not a ciscfs mount, and the per-op size limits that cisc_limits returns
// and a too-large step runs into.
#include "tests/e2e/libcisc/cisc_fixture.h"

namespace e2e {
namespace {

using Errors = CiscTest;

TEST_F(Errors, StrerrorHasLibciscsMeanings)
{
    EXPECT_STREQ(cisc_strerror(-ENOENT), strerror(ENOENT));
    EXPECT_STREQ(cisc_strerror(ENOENT), strerror(ENOENT));   // either sign
    EXPECT_NE(std::string(cisc_strerror(-ENODEV)).find("not a ciscfs mount point"),
              std::string::npos);
    EXPECT_NE(std::string(cisc_strerror(-E2BIG)).find("64 MiB"), std::string::npos);
    EXPECT_NE(std::string(cisc_strerror(-E2BIG)).find("cisc_limits"), std::string::npos);
    EXPECT_NE(std::string(cisc_strerror(-ENOTCONN)).find("device went away"), std::string::npos);
}

TEST_F(Errors, SessionOnADirectoryThatIsNotAMount)
{
    struct cisc_session *x = nullptr;
    EXPECT_EQ(cisc_session_open(dir.c_str(), &x), -ENODEV);   // exists, no device
    EXPECT_EQ(cisc_session_open("/nonexistent-dir-for-cisc", &x), -ENOENT);
    std::string sub = P("sub");   // inside the mount, but not its root
    ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
    EXPECT_EQ(cisc_session_open(sub.c_str(), &x), -ENODEV);
}

TEST_F(Errors, LimitsAreTheDevicesAndATooLargeStepRunsIntoThem)
{
    struct cisc_limits lim;
    ASSERT_EQ(cisc_limits(s, &lim), 0);
    EXPECT_EQ(lim.steps, (uint32_t)CISC_VEC_MAX);
    EXPECT_EQ(lim.handles, (uint32_t)CISC_VEC_MAX_FH);
    EXPECT_EQ(lim.path_bytes, 4095u);
    EXPECT_EQ(lim.step_bytes, 64ull << 20);
    EXPECT_EQ(lim.op_bytes, 256ull << 20);
    EXPECT_EQ(lim.prog_object_bytes, 16ull << 20);
    EXPECT_EQ(lim.prog_block_bytes, 64u << 20);
    EXPECT_EQ(cisc_limits(nullptr, &lim), -EINVAL);

    ASSERT_TRUE(WriteFile(P("f"), "data"));
    struct cisc_vec v;
    ASSERT_EQ(cisc_vec_init(&v, q), 0);
    int f = cisc_vec_open(&v, "f", O_RDONLY, 0);
    cisc_vec_read(&v, f, 0, lim.step_bytes);       // at the limit: fine
    EXPECT_EQ(cisc_vec_submit(&v), 0);
    cisc_vec_reset(&v);
    f = cisc_vec_open(&v, "f", O_RDONLY, 0);
    cisc_vec_read(&v, f, 0, lim.step_bytes + 1);   // one byte over
    int64_t st = cisc_vec_submit(&v);
    EXPECT_EQ(st, -E2BIG);
    EXPECT_NE(std::string(cisc_strerror((int)st)).find("size limit"), std::string::npos);
    cisc_vec_free(&v);
}

// With less device memory, the limits shrink, and cisc_limits says so.
TEST_F(Errors, LimitsFollowTheDevicesMemory)
{
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    Down();
    Up("--device-ram 16M");
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    struct cisc_limits lim;
    ASSERT_EQ(cisc_limits(s, &lim), 0);
    EXPECT_EQ(lim.step_bytes, 16ull << 20);
    EXPECT_EQ(lim.op_bytes, 16ull << 20);
}

}  // namespace
}  // namespace e2e

// tests/e2e/libcisc/doc_test.cc - docs/LIBCISC.md works as written: the
// library installs (cmake --install, here into a staging DESTDIR), every
// C example of the guide builds with `cc x.c $(pkg-config --cflags --libs
// libcisc)` and runs against a real device, taking the mount point as its
// only argument.
#include "tests/e2e/libcisc/cisc_fixture.h"

extern "C" {
#include "common/crc32c.h"
}

namespace e2e {
namespace {

using Doc = CiscTest;

static std::vector<std::string> CExamples(const std::string &md)
{
    std::vector<std::string> out;
    size_t p = 0;
    while ((p = md.find("```c\n", p)) != std::string::npos) {
        size_t e = md.find("```\n", p + 5);
        if (e == std::string::npos)
            break;
        out.push_back(md.substr(p + 5, e - p - 5));
        p = e + 4;
    }
    return out;
}

TEST_F(Doc, GuideExamplesBuildAndRunAgainstTheInstalledLibrary)
{
#if CISC_SANITIZED
    GTEST_SKIP() << "an instrumented libcisc.so cannot be loaded by a plain program";
#endif
    std::string bin = getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR") : CISC_BINARY_DIR;
    std::string stage = dir + "/stage";
    RunResult r = Sh("DESTDIR=" + stage + " cmake --install " + bin);
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("find " + stage + " -name libcisc.pc");
    ASSERT_EQ(r.status, 0);
    std::string pc = r.out.substr(0, r.out.find('\n'));
    ASSERT_FALSE(pc.empty()) << "libcisc.pc not installed";
    std::string pcdir = pc.substr(0, pc.rfind('/'));
    std::string libdir = pcdir.substr(0, pcdir.rfind('/'));
    std::string pkg = "PKG_CONFIG_PATH=" + pcdir + " PKG_CONFIG_SYSROOT_DIR=" + stage +
                      " pkg-config --cflags --libs libcisc";
    r = Sh(pkg);
    ASSERT_EQ(r.status, 0) << r.out;
    auto ex = CExamples(ReadFile(std::string(CISC_SOURCE_DIR) + "/docs/LIBCISC.md"));
    ASSERT_GE(ex.size(), 2u);
    for (size_t i = 0; i < ex.size(); i++) {
        std::string src = dir + "/ex" + std::to_string(i) + ".c";
        ASSERT_TRUE(WriteFile(src, ex[i]));
        std::string exe = dir + "/ex" + std::to_string(i);
        r = Sh("cc -Wall -Werror " + src + " $(" + pkg + ") -o " + exe);
        ASSERT_EQ(r.status, 0) << "example " << i << ":\n" << ex[i] << r.out;
        r = Sh("LD_LIBRARY_PATH=" + libdir + " " + exe + " " + mnt);
        EXPECT_EQ(r.status, 0) << "example " << i << ":\n" << r.out;
    }
    r = Sh("env -u LD_LIBRARY_PATH $(find " + stage + " -path '*/bin/cisc') --version");
    EXPECT_EQ(r.status, 0) << "the installed cisc finds its libraries: " << r.out;
    std::string log = ReadFile(P("hello.log"));   // the record, then its CRC-32C
    ASSERT_EQ(log.size(), 14u + 4u);
    EXPECT_EQ(log.substr(0, 14), "hello, device\n");
    EXPECT_EQ(le32_get(log.data() + 14), crc32c(0, "hello, device\n", 14));
    EXPECT_EQ(ReadFile(P("copy")), "some data\n");
}

}  // namespace
}  // namespace e2e

// tests/e2e/libcisc/doc_test.cc - docs/LIBCISC.md works as written: the
// library installs (cmake --install, here into a staging DESTDIR), every
// C example of the guide builds with `cc x.c $(pkg-config --cflags --libs
// libcisc)` and runs against a real device, taking the mount point as its
// only argument. And the installed tree is relocatable: installed under
// another prefix, it works from there for clients and program authors.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <sstream>

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
    RunResult r = Sh("DESTDIR=" + stage + " flock " + bin + "/.install.lock cmake --install " +
                     bin);   // the lock: install_test.cc
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("find " + stage + " -name libcisc.pc");
    ASSERT_EQ(r.status, 0);
    std::string pc = r.out.substr(0, r.out.find('\n'));
    ASSERT_FALSE(pc.empty()) << "libcisc.pc not installed";
    std::string pcdir = pc.substr(0, pc.rfind('/'));
    std::string libdir = pcdir.substr(0, pcdir.rfind('/'));
    // No PKG_CONFIG_SYSROOT_DIR: libcisc.pc finds its prefix from its own place.
    std::string pkg = "PKG_CONFIG_PATH=" + pcdir + " pkg-config --cflags --libs libcisc";
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

// Installed into a prefix other than the configured one (a packager's
// staging tree, a user's ~/opt), everything lands under it and works from
// there: libcisc.pc points into it (not at the configured /usr/local), a
// client built with `pkg-config --cflags --libs libcisc` runs against the
// device with the installed library, and an eBPF program compiles with
// clang -target bpf against the installed cisc_bpf.h alone and passes the
// installed cisc's verifier.
TEST_F(Doc, InstallIntoAnotherPrefixWorksFromThere)
{
#if CISC_SANITIZED
    GTEST_SKIP() << "an instrumented libcisc.so cannot be loaded by a plain program";
#endif
    std::string bin = getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR") : CISC_BINARY_DIR;
    std::string prefix = dir + "/opt/ciscfs";
    RunResult r = Sh("flock " + bin + "/.install.lock cmake --install " + bin + " --prefix " +
                     prefix);
    ASSERT_EQ(r.status, 0) << r.out;
    std::istringstream lines(r.out);
    int files = 0;
    for (std::string l; std::getline(lines, l);) {
        for (const char *tag : {"-- Installing: ", "-- Up-to-date: "}) {
            if (l.rfind(tag, 0) == 0) {
                files++;
                EXPECT_EQ(l.compare(strlen(tag), prefix.size() + 1, prefix + "/"), 0)
                    << "installed outside the prefix: " << l;
            }
        }
    }
    EXPECT_GE(files, 5) << r.out;   // cisc, libcisc, its headers, libcisc.pc, cisc_bpf.h

    r = Sh("find " + prefix + " -name libcisc.pc");
    ASSERT_EQ(r.status, 0);
    std::string pc = r.out.substr(0, r.out.find('\n'));
    ASSERT_FALSE(pc.empty()) << "libcisc.pc not installed";
    std::string pctext = ReadFile(pc);
    EXPECT_EQ(pctext.find("/usr/local"), std::string::npos) << pctext;
    std::string pkg = "PKG_CONFIG_PATH=" + pc.substr(0, pc.rfind('/')) + " pkg-config ";
    // Its directories are the installed ones (compared without symlinks and "..").
    r = Sh("cd \"$(" + pkg + "--variable=libdir libcisc)\" && pwd -P && cd " + prefix +
           " && pwd -P");
    ASSERT_EQ(r.status, 0) << r.out;
    std::istringstream dirs(r.out);
    std::string libdir, realprefix;
    std::getline(dirs, libdir);
    std::getline(dirs, realprefix);
    EXPECT_EQ(libdir.rfind(realprefix + "/", 0), 0u) << libdir << " not under " << realprefix;
    EXPECT_EQ(access((libdir + "/libcisc.so").c_str(), F_OK), 0) << libdir;
    r = Sh(pkg + "--variable=includedir libcisc");
    ASSERT_EQ(r.status, 0) << r.out;
    std::string incdir = r.out.substr(0, r.out.find('\n'));
    EXPECT_EQ(access((incdir + "/cisc/cisc.h").c_str(), F_OK), 0) << incdir;
    EXPECT_EQ(access((incdir + "/cisc_bpf.h").c_str(), F_OK), 0) << incdir;

    // A client, built with pkg-config's flags alone and run with the
    // library they name (rpath, no LD_LIBRARY_PATH).
    std::string src = dir + "/client.c", exe = dir + "/client";
    ASSERT_TRUE(WriteFile(src, "#include <cisc/cisc.h>\n"
                               "int main(int argc, char **argv)\n"
                               "{\n"
                               "    struct cisc_session *s;\n"
                               "    if (argc != 2 || cisc_session_open(argv[1], &s) != 0)\n"
                               "        return 1;\n"
                               "    cisc_session_close(s);\n"
                               "    return 0;\n"
                               "}\n"));
    r = Sh("cc -Wall -Werror " + src + " $(" + pkg + "--cflags --libs libcisc) -Wl,-rpath,$(" +
           pkg + "--variable=libdir libcisc) -o " + exe);
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("env -u LD_LIBRARY_PATH " + exe + " " + mnt);
    EXPECT_EQ(r.status, 0) << r.out;
    r = Sh("env -u LD_LIBRARY_PATH ldd " + exe);
    EXPECT_NE(r.out.find(realprefix + "/"), std::string::npos)
        << "the client does not load the installed libcisc:\n" << r.out;

    // A program author: the installed cisc_bpf.h is all a program needs.
    std::string bsrc = dir + "/count.bpf.c", bobj = dir + "/count.bpf.o";
    ASSERT_TRUE(WriteFile(bsrc, "#include <cisc_bpf.h>\n"
                                "SEC(\"cisc\")\n"
                                "int count_bytes(struct cisc_ctx *ctx)\n"
                                "{\n"
                                "    if ((__u8 *)ctx->out + 8 > (__u8 *)ctx->out_end)\n"
                                "        return -CISC_ENOSPC;\n"
                                "    *(__u64 *)ctx->out = ctx->len;\n"
                                "    return 8;\n"
                                "}\n"));
    r = Sh(std::string(CISC_CLANG) + " -O2 -g -target bpf -Wall -Werror -I" + incdir + " -c " +
           bsrc + " -o " + bobj);
    ASSERT_EQ(r.status, 0) << r.out;
    r = Sh("env -u LD_LIBRARY_PATH " + prefix + "/bin/cisc bpf verify " + bobj);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("count_bytes: verified"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace e2e

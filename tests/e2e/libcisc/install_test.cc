// tests/e2e/libcisc/install_test.cc - installed, it just works: `cmake
// --install --prefix DIR` puts the whole system under DIR (binaries, the
// library, the mount(8) helpers, a man page for cisc, each subcommand and
// each libcisc call, bash completion that completes from the installed
// cisc, the systemd unit pointing at it, the fstab example with nofail),
// and the uninstall script removes every file the install wrote.
//
// A real install into / (the default prefix, no DESTDIR) runs in a
// private mount namespace whose /etc, /usr/sbin and /usr/local are
// overlays over the real ones: the machine itself is never changed.
//
// Installs share the build directory's install_manifest.txt: every test
// that installs holds BIN/.install.lock meanwhile (flock).
#include "tests/e2e/fuse/mount_fixture.h"

#include <regex>
#include <set>

#include <limits.h>

namespace e2e {
namespace {

class Install : public ::testing::Test {
protected:
    std::string dir, bin, src = CISC_SOURCE_DIR;

    void SetUp() override
    {
        char tmpl[] = "/tmp/ciscfs-install-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        bin = getenv("CISC_BINARY_DIR") ? getenv("CISC_BINARY_DIR") : CISC_BINARY_DIR;
    }
    void TearDown() override { Sh("rm -rf " + dir); }

    bool Exists(const std::string &p)
    {
        struct stat st;
        return lstat(p.c_str(), &st) == 0;
    }
};

// Every CISC_API call of the public headers.
static std::set<std::string> ApiCalls(const std::string &src)
{
    std::set<std::string> out;
    std::regex decl("CISC_API[^;{(]*\\b(cisc_[a-z0-9_]+)\\s*\\(");
    for (const char *h : { "cisc.h", "fused.h", "progs.h" }) {
        std::string text = ReadFile(src + "/libcisc/include/cisc/" + h);
        for (std::sregex_iterator i(text.begin(), text.end(), decl), e; i != e; ++i)
            out.insert((*i)[1]);
    }
    return out;
}

TEST_F(Install, APrefixGetsTheWholeSystemAndUninstallRemovesIt)
{
    std::string p = dir + "/prefix";
    RunResult r = Sh("flock " + bin + "/.install.lock sh -c 'cmake --install " + bin +
                     " --prefix " + p + " && cp " + bin + "/install_manifest.txt " + dir +
                     "/manifest'");
    ASSERT_EQ(r.status, 0) << r.out;
    // binaries and the mount(8) helpers, relative links into the prefix
    EXPECT_TRUE(Exists(p + "/bin/cisc"));
    for (const char *h : { "mount.ciscfs", "mount.fuse.ciscfs" }) {
        char real[PATH_MAX];
        std::string link = p + "/sbin/" + h;
        ASSERT_NE(realpath(link.c_str(), real), nullptr) << link;
        EXPECT_EQ(std::string(real), p + "/bin/cisc") << link;
    }
    // a man page for cisc, every subcommand, libcisc and every call
    std::string man = p + "/share/man";
    EXPECT_EQ(ReadFile(man + "/man1/cisc.1").rfind(".TH \"CISC\" \"1\"", 0), 0u);
    RunResult help = Sh(p + "/bin/cisc --help");
    std::regex row("\n  ([a-z]+) ");
    int cmds = 0;
    for (std::sregex_iterator i(help.out.begin(), help.out.end(), row), e; i != e; ++i, cmds++) {
        std::string page = ReadFile(man + "/man1/cisc-" + std::string((*i)[1]) + ".1");
        EXPECT_NE(page.find(".SH SYNOPSIS"), std::string::npos) << (*i)[1];
        EXPECT_NE(page.find(".SH EXIT STATUS"), std::string::npos) << (*i)[1];
    }
    EXPECT_GE(cmds, 12);
    std::set<std::string> calls = ApiCalls(src);
    EXPECT_GE(calls.size(), 80u);
    for (const std::string &c : calls) {
        std::string page = ReadFile(man + "/man3/" + c + ".3");
        EXPECT_NE(page.find(c + "("), std::string::npos) << c << " has no man page";
    }
    EXPECT_NE(ReadFile(man + "/man3/cisc_limits.3").find("-E2BIG"), std::string::npos);
    EXPECT_TRUE(Exists(man + "/man3/libcisc.3"));
    // bash completion, from the installed cisc's own help
    std::string comp = p + "/share/bash-completion/completions/cisc";
    r = Sh("bash -c 'source " + comp + "; COMP_WORDS=(" + p + "/bin/cisc st); COMP_CWORD=1; "
           "_cisc; echo ${COMPREPLY[@]}; COMP_WORDS=(" + p + "/bin/cisc run --pr); COMP_CWORD=2; "
           "_cisc; echo ${COMPREPLY[@]}'");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("status"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--prog"), std::string::npos) << r.out;
    // systemd template unit (pointing at this prefix) and the fstab example
    std::string unit = ReadFile(p + "/lib/systemd/system/ciscfs@.service");
    EXPECT_NE(unit.find("ExecStart=" + p + "/bin/cisc up "), std::string::npos) << unit;
    EXPECT_NE(unit.find("ExecStop=" + p + "/bin/cisc down "), std::string::npos) << unit;
    EXPECT_NE(unit.find("Type=notify"), std::string::npos) << unit;   // cisc up -f speaks sd_notify
    std::string fstab = ReadFile(p + "/share/doc/ciscfs/fstab.example");
    EXPECT_TRUE(std::regex_search(fstab, std::regex("\n/\\S+ +/\\S+ +ciscfs +nofail,"))) << fstab;
    EXPECT_TRUE(Exists(p + "/share/doc/ciscfs/ciscfs.conf.example"));
    // uninstall: every file the install wrote is gone
    r = Sh("cmake -DMANIFEST=" + dir + "/manifest -P " + src + "/cmake/uninstall.cmake");
    EXPECT_EQ(r.status, 0) << r.out;
    r = Sh("find " + p + " ! -type d");
    EXPECT_EQ(r.out, "") << "left behind:\n" << r.out;
}

// `make install` as root into the live system: the library is in the
// dynamic linker's cache (a client built with plain -lcisc runs without
// LD_LIBRARY_PATH), mount(8) finds the helper in /sbin and mounts an
// image, the man pages are where man looks; `make uninstall` takes it
// all back out, the cache entry too.
TEST_F(Install, RealInstallIntoTheSystemAndBack)
{
#if CISC_SANITIZED
    GTEST_SKIP() << "an instrumented libcisc.so cannot be loaded by a plain program";
#endif
    if (geteuid() != 0 || Sh("unshare -m --propagation private true").status != 0)
        GTEST_SKIP() << "needs root and mount namespaces";
    bool helper_before = Exists("/sbin/mount.ciscfs");
    bool conf_before = Exists("/etc/ld.so.conf.d/ciscfs.conf");
    std::string client = dir + "/client.c";
    ASSERT_TRUE(WriteFile(client, "#include <cisc/cisc.h>\n#include <errno.h>\n#include <stdio.h>\n"
                                  "int main(void) { puts(cisc_strerror(-ENODEV)); return 0; }\n"));
    std::string script = dir + "/real.sh";
    ASSERT_TRUE(WriteFile(script,
        "set -e\n"
        "for d in /etc /usr/sbin /usr/local; do\n"
        "  o=" + dir + "/ov$(echo $d | tr / _); mkdir -p $o/u $o/w\n"
        "  mount -t overlay overlay -o lowerdir=$d,upperdir=$o/u,workdir=$o/w $d || exit 77\n"
        "done\n"
        "cmake --install " + bin + " >" + dir + "/install.out\n"
        "echo helper: $(readlink -f /sbin/mount.ciscfs)\n"
        "ldconfig -p | grep -q 'libcisc.so.0 ' && echo cached\n"
        "cc " + client + " -o " + dir + "/client -lcisc && env -u LD_LIBRARY_PATH " + dir +
        "/client\n"
        "test -f /usr/local/share/man/man1/cisc-up.1 && echo man\n"
        "mkdir -p " + dir + "/m\n"
        "mount -t ciscfs -o size=64M,cores=1 " + dir + "/img " + dir + "/m\n"
        "echo hello >" + dir + "/m/f && cat " + dir + "/m/f\n"
        "/usr/local/bin/cisc down " + dir + "/m >/dev/null\n"
        "cmake --build " + bin + " --target uninstall >" + dir + "/uninstall.out\n"
        "test -e /sbin/mount.ciscfs || echo helper gone\n"
        "ldconfig -p | grep -q libcisc || echo cache clean\n"
        "echo left: $(find /usr/local /etc/ld.so.conf.d -name '*cisc*' ! -type d)\n"));
    RunResult r = Sh("flock " + bin + "/.install.lock unshare -m --propagation private sh " + script);
    if (r.status == 77)
        GTEST_SKIP() << "no overlay file system here: " << r.out;
    ASSERT_EQ(r.status, 0) << r.out << ReadFile(dir + "/install.out");
    EXPECT_NE(r.out.find("helper: /usr/local/bin/cisc\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cached\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("not a ciscfs mount point"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("man\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("hello\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("helper gone\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cache clean\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("left:\n"), std::string::npos) << r.out;
    // and the machine itself is as it was
    EXPECT_EQ(Exists("/sbin/mount.ciscfs"), helper_before);
    EXPECT_EQ(Exists("/etc/ld.so.conf.d/ciscfs.conf"), conf_before);
}

}  // namespace
}  // namespace e2e

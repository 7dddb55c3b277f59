// tests/e2e/fuse/upopts_test.cc - `cisc up` and the mount(8) helper read
// their options from one table (cmd/upopts.h): a bad value fails both
// with exit status 2 and the same message, which names the option, and
// nothing is mounted. The devices these options start are in
// lifecycle_test.cc (MountHelper*).
#include "tests/e2e/fuse/mount_fixture.h"

#include <algorithm>

using e2e::RunResult;
using e2e::Sh;

namespace {

struct BadOption {
    const char *name;    // cisc up --NAME VALUE
    const char *key;     // mount.ciscfs ... -o KEY=VALUE
    const char *value;
    const char *says;    // in both messages
};

void PrintTo(const BadOption &b, std::ostream *os)
{
    *os << b.name << "=" << b.value;
}

class UpOptions : public ::testing::Test {
protected:
    std::string dir, img, mnt, cisc, helper;

    void SetUp() override
    {
        char tmpl[] = "/tmp/ciscfs-upopts-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        img = dir + "/img";
        mnt = dir + "/m";
        ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
        cisc = e2e::CiscBin();
        helper = cisc.substr(0, cisc.rfind('/')) + "/mount.ciscfs";
    }

    void TearDown() override
    {
        if (e2e::IsCiscMount(mnt))
            Sh(cisc + " down " + mnt + " || umount -l " + mnt);
        Sh("rm -rf " + dir);
    }

    // The message with its prefix and the option's spelling cut out.
    static std::string After(const std::string &out, const std::string &spelled)
    {
        std::string head = "cisc up: " + spelled + " ";
        return out.compare(0, head.size(), head) == 0 ? out.substr(head.size()) : "<" + out + ">";
    }
};

class UpBadValue : public UpOptions, public ::testing::WithParamInterface<BadOption> {};

TEST_P(UpBadValue, HelperAndUpRejectItAlike)
{
    const BadOption &b = GetParam();
    RunResult up = Sh(cisc + " up --size 64M --" + b.name + " '" + b.value + "' " + img + " " + mnt);
    RunResult mh = Sh(helper + " " + img + " " + mnt + " -o size=64M," + b.key + "='" + b.value +
                      "'");
    EXPECT_EQ(up.status, 2) << up.out;
    EXPECT_EQ(mh.status, 2) << mh.out;
    std::string u = After(up.out, std::string("--") + b.name);
    std::string m = After(mh.out, std::string("-o ") + b.key);
    EXPECT_EQ(u, m) << "cisc up: " << up.out << "helper: " << mh.out;
    EXPECT_NE(u.find(b.says), std::string::npos) << up.out;
    EXPECT_NE(u.find(b.value), std::string::npos) << up.out;
    EXPECT_EQ(std::count(up.out.begin(), up.out.end(), '\n'), 1) << "one line: " << up.out;
    EXPECT_FALSE(e2e::IsCiscMount(mnt));
    EXPECT_NE(access(img.c_str(), F_OK), 0) << "refused before the image was made";
}

INSTANTIATE_TEST_SUITE_P(
    Table, UpBadValue,
    ::testing::Values(BadOption{ "cores", "cores", "0", "wants 1..64" },
                      BadOption{ "cores", "cores", "65", "wants 1..64" },
                      BadOption{ "cores", "cores", "two", "wants 1..64" },
                      BadOption{ "sched", "sched", "lottery", "wants fifo" },
                      BadOption{ "sched", "sched", "CFS", "wants fifo" },
                      BadOption{ "tenant", "tenant", "gid", "wants uid or pid" },
                      BadOption{ "max-queues-per-tenant", "max_queues_per_tenant", "-1",
                                 "wants 0..1048576" },
                      BadOption{ "device-ram", "device_ram", "1K",
                                 "wants a size from 1M to 1T" },
                      BadOption{ "dispatch", "dispatch", "fast", "wants direct or queue" },
                      BadOption{ "link-latency-ns", "link_latency_ns", "1000001",
                                 "wants 0..1000000" },
                      BadOption{ "core-speed", "core_speed", "0.5", "wants 1..1000" },
                      BadOption{ "pollers", "pollers", "17", "wants 1..16" },
                      BadOption{ "poll-us", "poll_us", "-1", "wants 0..1000000" },
                      BadOption{ "max-progs", "max_progs", "0", "wants 1..65536" },
                      BadOption{ "max-prog-insns", "max_prog_insns", "4294967297",
                                 "wants 1..4294967296" },
                      BadOption{ "prog-budget", "prog_budget", "0", "wants 1.." },
                      BadOption{ "size", "size", "1K", "wants a size of at least 1M" },
                      BadOption{ "log", "log", "/nonexistent-ciscfs-dir/log",
                                 "No such file or directory" },
                      BadOption{ "flash-ftl", "flash_ftl", "threads", "wants locks or cores" }),
    [](const ::testing::TestParamInfo<BadOption> &i) {
        std::string n = std::string(i.param.key) + "_" + std::to_string(i.index);
        return n;
    });

// Spellings only a -o list has: a flag given a value, a value missing.
TEST_F(UpOptions, HelperRefusesAFlagWithAValueAndAKeyWithout)
{
    RunResult r = Sh(helper + " " + img + " " + mnt + " -o size=64M,trace=1");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "cisc up: -o trace takes no value\n");
    r = Sh(helper + " " + img + " " + mnt + " -o size=64M,cores");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "cisc up: -o cores needs a value (cores=...)\n");
    r = Sh(cisc + " up -o size=64M,dispatch=fast " + img + " " + mnt);   // cisc up's -o too
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "cisc up: -o dispatch wants direct or queue, not 'fast'\n");
    EXPECT_FALSE(e2e::IsCiscMount(mnt));
}

// The help lists every option with its mount key, from the same table.
TEST_F(UpOptions, HelpShowsOptionsAndTheirMountKeys)
{
    RunResult r = Sh(cisc + " up --help");
    EXPECT_EQ(r.status, 0);
    for (const char *s : { "--dispatch direct|queue", "dispatch=direct|queue", "--cores N",
                           "cores=N", "link_latency_ns=N", "--prog-budget N", "(1..64, default 4)",
                           "-f, --foreground", "-o OPTS" })
        EXPECT_NE(r.out.find(s), std::string::npos) << s << " in:\n" << r.out;
    EXPECT_EQ(Sh(cisc + " help up").out, r.out);
}

}  // namespace

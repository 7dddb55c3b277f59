// tests/e2e/progs/progs_fixture.h - a real device (`cisc up`, the FUSE
// fixture's) plus helpers for `cisc prog`, `cisc run` and the compiled
// test, corpus and example objects.
#pragma once

#include "tests/e2e/fuse/mount_fixture.h"

#include <cisc/cisc.h>

#include <string>

namespace e2e {

inline std::string DevObj(const std::string &n) { return std::string(DEVICE_OBJS) + "/" + n + ".o"; }
inline std::string CorpusObj(const std::string &n) { return std::string(CORPUS_OBJS) + "/" + n + ".o"; }
inline std::string ExampleObj(const std::string &n) { return std::string(EXAMPLE_OBJS) + "/" + n + ".o"; }

// What the `upper` test program makes of s: ASCII letters upper-cased.
inline std::string Upper(std::string s)
{
    for (char &c : s)
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 32);
    return s;
}

class ProgsTest : public MountTest {
protected:
    RunResult Prog(const std::string &args) { return Sh(cisc + " prog " + args); }

    // Loads an object with the CLI; fails the test unless it worked.
    void LoadOk(const std::string &obj, const std::string &opts = "")
    {
        RunResult r = Prog("load " + mnt + " " + obj + " " + opts);
        ASSERT_EQ(r.status, 0) << r.out;
    }

    // The device's `status --raw` line starting with `key `.
    std::string StatusLine(const std::string &key)
    {
        RunResult r = Sh(cisc + " status --raw " + mnt);
        size_t p = r.out.find("\n" + key + " ");
        return p == std::string::npos ? "" : r.out.substr(p + 1, r.out.find('\n', p + 1) - p - 1);
    }
};

}  // namespace e2e

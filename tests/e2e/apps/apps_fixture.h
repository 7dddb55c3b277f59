// tests/e2e/apps/apps_fixture.h - what the LevelDB and RocksDB end-to-end
// tests share: the workload's keys and values, the build's binaries, and
// running a crash writer (writer_loop.h) until it has made enough puts
// durable, then killing it.
#pragma once

#include "tests/e2e/apps/writer_loop.h"
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <sys/wait.h>

#include <csignal>
#include <string>

namespace e2e::apps {

constexpr int kKeys = 10000;

// Key i of the workload: kKeys keys, not in key order.
inline std::string Key(int i)
{
    char b[16];
    snprintf(b, sizeof(b), "k%07d", (i * 7919) % kKeys);
    return b;
}

inline std::string Value(int i, int round)
{
    return std::to_string(round) + ":" + std::string((size_t)(i % 700), (char)('a' + i % 26));
}

// A file of the build tree (CISC_BINARY_DIR overrides where it is).
inline std::string Bin(const std::string &name)
{
    const char *b = getenv("CISC_BINARY_DIR");
    return std::string(b ? b : CISC_BINARY_DIR) + "/" + name;
}

// Runs the build's tests/e2e/apps/WRITER MNT DB, reads the numbers it
// prints until one is at least want (or it stops), kills it. Returns the
// last number it printed, -1 for none.
inline long RunAndKill(const std::string &writer, const std::string &mnt, const std::string &db,
                       long want)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    std::string w = Bin("tests/e2e/apps/" + writer);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(w.c_str(), writer.c_str(), mnt.c_str(), db.c_str(), (char *)nullptr);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    long last = -1, n;
    while (last < want && fscanf(in, "%ld", &n) == 1)
        last = n;
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    fclose(in);
    return last;
}

// Expects every put a killed writer printed (0 to last) to be there:
// get(key, &value) tells whether key was found.
template <class Get> void ExpectWritten(long last, Get get)
{
    std::string v;
    for (long i = 0; i <= last; i++) {
        ASSERT_TRUE(get(WriterKey(i), &v)) << WriterKey(i);
        ASSERT_EQ(v, WriterValue(i));
    }
}

}  // namespace e2e::apps

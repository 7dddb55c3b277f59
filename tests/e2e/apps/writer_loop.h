// tests/e2e/apps/writer_loop.h - what the crash writers (ldb_writer.cc,
// rdb_writer.cc) share with the tests that kill them: key i's value, and
// the loop that puts key i = value of i for i = 0, 1, ... forever,
// printing i on stdout once the put returned (so the parent knows it is
// durable).
#pragma once

#include <cstdio>
#include <string>

namespace e2e::apps {

inline std::string WriterKey(long i)
{
    return "key" + std::to_string(i);
}

inline std::string WriterValue(long i)
{
    return "value of " + WriterKey(i) + std::string((size_t)(i % 300), 'v');
}

// Runs put(key, value) -> error text ("" when it succeeded) until it
// fails; prints each i whose put succeeded. Returns 1 (the exit status)
// after naming the failure on stderr as `who: error`.
template <class Put> int WriterLoop(const char *who, const std::string &open_error, Put put)
{
    std::string err = open_error;
    for (long i = 0; err.empty(); i++) {
        err = put(WriterKey(i), WriterValue(i));
        if (err.empty() && printf("%ld\n", i) > 0)
            fflush(stdout);
    }
    fprintf(stderr, "%s: %s\n", who, err.c_str());
    return 1;
}

}  // namespace e2e::apps

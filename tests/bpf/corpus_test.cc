// The eBPF program corpus (tests/bpf/progs/*.c, compiled at build time with
// clang -O2 -g -target bpf): one parameterized test over a table of cases.
// Each case loads an object, verifies one program and then either expects
// a rejection whose message holds a fragment, or runs the program over an
// input block by block (bpf/blocks.h) in both the fast and the
// bounds-checking interpreter and compares the output with a reference
// computed here in C++, or expects a run-time error (the budget).
#include <gtest/gtest.h>

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <vector>

extern "C" {
#include "bpf/blocks.h"
#include "bpf/interp.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
#include "common/crc32c.h"
}

namespace {

using Bytes = std::string;

enum class Expect { Output, Reject, RunError };

struct Case {
    const char *name;       // test name suffix
    const char *file;       // object in the corpus, without .o
    const char *prog;       // program name
    Expect expect;
    const char *fragment;   // Reject: part of the verifier's message
    std::function<Bytes()> input;
    // Output: checks the run's output against the input (gtest assertions).
    std::function<void(const Bytes &in, const Bytes &out)> check;
    uint64_t arg[4];
    uint32_t block_size;    // 0 = default
    int run_error;          // RunError: expected vm_blocks_run() result
    uint32_t out_cap;       // 0 = default
};

std::string corpus_path(const char *file)
{
    return std::string(CORPUS_DIR) + "/" + file + ".o";
}

// ---- inputs (deterministic) ----------------------------------------------------

uint64_t rng_next(uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

// Text with short lines and some long ones (about 1500 bytes, below
// grep.c's 2048-byte line limit), words, digits and marker words; lines
// cross block boundaries at every block size.
Bytes text_input()
{
    static const char *const words[] = {"alpha", "beta", "gamma", "ERROR", "disk",
                                        "42",    "7",    "x",     "warning", "ok"};
    uint64_t s = 0x9e3779b97f4a7c15ull;
    Bytes t;
    for (int line = 0; line < 900; line++) {
        int n = line % 97 == 5 ? 250 : (int)(rng_next(s) % 12);
        for (int w = 0; w < n; w++) {
            if (w)
                t += rng_next(s) % 5 ? " " : "\t";
            t += words[rng_next(s) % 10];
        }
        t += "\n";
    }
    t += "last line without newline ERROR";
    return t;
}

Bytes binary_input(size_t n)
{
    uint64_t s = 12345;
    Bytes b(n, '\0');
    for (auto &c : b)
        c = (char)(rng_next(s) >> 24);
    return b;
}

// Records for records.c: each block holds whole records, then zero padding.
Bytes records_input()
{
    uint64_t s = 777;
    Bytes all;
    for (int blk = 0; blk < 5; blk++) {
        Bytes b;
        for (;;) {
            uint8_t type = (uint8_t)(1 + rng_next(s) % 3), len = (uint8_t)(rng_next(s) % 40);
            if (b.size() + 2 + len > 4096 - (blk == 4 ? 2000 : 0))
                break;
            b += (char)type;
            b += (char)len;
            for (int i = 0; i < len; i++)
                b += (char)rng_next(s);
        }
        if (blk < 4)
            b.resize(4096, '\0');
        all += b;
    }
    return all;
}

// ---- references ------------------------------------------------------------------

Bytes grep_ref(const Bytes &in, const std::string &pat)
{
    Bytes out;
    size_t pos = 0;
    while (pos < in.size()) {
        size_t nl = in.find('\n', pos);
        size_t end = nl == Bytes::npos ? in.size() : nl + 1;
        Bytes line = in.substr(pos, end - pos);
        if (line.find(pat) != Bytes::npos)
            out += line;
        pos = end;
    }
    return out;
}

Bytes le32(uint32_t v)
{
    Bytes b(4, '\0');
    for (int i = 0; i < 4; i++)
        b[i] = (char)(v >> (8 * i));
    return b;
}

Bytes le64s(std::initializer_list<uint64_t> vs)
{
    Bytes b;
    for (uint64_t v : vs)
        for (int i = 0; i < 8; i++)
            b += (char)(v >> (8 * i));
    return b;
}

Bytes records_ref(const Bytes &in)
{
    Bytes out;
    for (size_t blk = 0; blk < in.size(); blk += 4096) {
        size_t end = std::min(in.size(), blk + 4096), p = blk;
        while (p + 2 <= end && in[p] != 0) {
            uint8_t type = (uint8_t)in[p], len = (uint8_t)in[p + 1];
            if (type == 1 && len >= 4)
                out += in.substr(p + 2, 4);
            p += 2 + len;
        }
    }
    return out;
}

Bytes wc_ref(const Bytes &in)
{
    uint64_t lines = 0, words = 0;
    bool in_word = false;
    for (char c : in) {
        bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
        lines += c == '\n';
        words += !space && !in_word;
        in_word = !space;
    }
    return le64s({lines, words, (uint64_t)in.size()});
}

Bytes charstats_ref(const Bytes &in)
{
    uint64_t n[4] = {0, 0, 0, 0}, h = 0xcbf29ce484222325ull;
    for (unsigned char c : in) {
        int k = (unsigned)(c - '0') < 10u ? 1 : ((c | 32u) - 'a' < 26u) ? 2
                : (c == ' ' || c == '\n' || c == '\t' || c == '\r') ? 3 : 0;
        n[k]++;
        if (k == 1)
            h = (h ^ c) * 0x100000001b3ull;
    }
    return le64s({n[0], n[1], n[2], n[3], h});
}

Bytes hex_ref(const Bytes &in)
{
    static const char d[] = "0123456789abcdef";
    Bytes out;
    for (unsigned char c : in) {
        out += d[c >> 4];
        out += d[c & 15];
    }
    return out;
}

Bytes upper_ref(const Bytes &in)
{
    Bytes out = in;
    for (auto &c : out)
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 32);
    return out;
}

Bytes crc_blocks_ref(const Bytes &in, size_t bs)
{
    Bytes out;
    for (size_t p = 0; p < in.size(); p += bs)
        out += le32(crc32c(0, in.data() + p, std::min(bs, in.size() - p)));
    return out;
}

uint64_t pattern_arg(const char *s, int word)
{
    uint64_t v = 0;
    size_t n = strlen(s);
    for (int i = 0; i < 8 && word * 8 + i < (int)n; i++)
        v |= (uint64_t)(uint8_t)s[word * 8 + i] << (8 * i);
    return v;
}

auto equals(std::function<Bytes(const Bytes &)> ref)
{
    return [ref](const Bytes &in, const Bytes &out) {
        Bytes want = ref(in);
        ASSERT_EQ(out.size(), want.size());
        EXPECT_TRUE(out == want) << "output differs from the reference";
    };
}

void zstd_roundtrip(const Bytes &in, const Bytes &out)
{
    Bytes back(in.size() + 1, '\0');
    size_t n = ZSTD_decompress(&back[0], back.size(), out.data(), out.size());
    ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
    back.resize(n);
    EXPECT_TRUE(back == in) << "decompressed output differs from the input";
    EXPECT_LT(out.size(), in.size()) << "text should compress";
}

// count.c (the docs/BPF.md example): the count as a decimal line.
std::function<Bytes(const Bytes &)> count_ref(char c)
{
    return [c](const Bytes &in) {
        return std::to_string(std::count(in.begin(), in.end(), c)) + "\n";
    };
}

// ---- the table ------------------------------------------------------------------

Case ok(const char *name, const char *file, const char *prog, std::function<Bytes()> in,
        std::function<void(const Bytes &, const Bytes &)> check, uint32_t bs = 0,
        std::initializer_list<uint64_t> args = {})
{
    Case c{name, file, prog, Expect::Output, nullptr, std::move(in), std::move(check),
           {0, 0, 0, 0}, bs, 0};
    int i = 0;
    for (uint64_t a : args)
        c.arg[i++] = a;
    return c;
}

Case with_out_cap(Case c, uint32_t cap)
{
    c.out_cap = cap;
    return c;
}

Case reject(const char *file, const char *fragment)
{
    return Case{file, file, file, Expect::Reject, fragment, nullptr, nullptr, {0, 0, 0, 0}, 0, 0};
}

std::vector<Case> cases()
{
    const char *pat = "ERROR";
    return {
        ok("grep", "grep", "grep", text_input,
           equals([pat](const Bytes &in) { return grep_ref(in, pat); }), 0,
           {pattern_arg(pat, 0), pattern_arg(pat, 1)}),
        // Lines span several blocks; the output buffer must hold a carried line.
        with_out_cap(ok("grep_small_blocks", "grep", "grep", text_input,
                        equals([](const Bytes &in) { return grep_ref(in, "gamma beta"); }),
                        333, {pattern_arg("gamma beta", 0), pattern_arg("gamma beta", 1)}),
                     4096),
        ok("grep_empty_pattern", "grep", "grep", text_input,
           equals([](const Bytes &in) { return in; })),
        ok("grep_empty_input", "grep", "grep", [] { return Bytes(); },
           equals([](const Bytes &) { return Bytes(); }), 0, {pattern_arg(pat, 0)}),
        ok("crc32c_helper", "checksum", "crc32c_helper", [] { return binary_input(50000); },
           equals([](const Bytes &in) { return le32(crc32c(0, in.data(), in.size())); })),
        ok("crc32c_loop", "checksum", "crc32c_loop", [] { return binary_input(50000); },
           equals([](const Bytes &in) { return le32(crc32c(0, in.data(), in.size())); })),
        ok("crc32c_blocks", "checksum", "crc32c_blocks", [] { return binary_input(10000); },
           equals([](const Bytes &in) { return crc_blocks_ref(in, 4096); })),
        ok("crc32c_blocks_1000", "checksum", "crc32c_blocks", [] { return binary_input(10000); },
           equals([](const Bytes &in) { return crc_blocks_ref(in, 1000); }), 1000),
        ok("records", "records", "records", records_input, equals(records_ref)),
        ok("hex", "lookup", "hex", [] { return binary_input(9000); }, equals(hex_ref)),
        ok("upper", "lookup", "upper", text_input, equals(upper_ref)),
        ok("charstats", "subprog", "charstats", text_input, equals(charstats_ref)),
        ok("wc", "wc", "wc", text_input, equals(wc_ref)),
        ok("wc_blocks_100", "wc", "wc", text_input, equals(wc_ref), 100),
        ok("zstd", "zstd", "zstd", text_input, zstd_roundtrip),
        ok("count_newlines", "count", "count", text_input, equals(count_ref('\n'))),
        ok("count_hash", "count", "count", [] { return binary_input(20000); },
           equals(count_ref('#')), 0, {'#'}),
        ok("count_empty", "count", "count", [] { return Bytes(); },
           equals(count_ref('\n'))),
        reject("oob_by_one", "oob_by_one.c:10: R2 points to input buffer, offset 4 size 1 is "
                             "outside the checked range [0, 4)"),
        reject("unchecked_input", "unchecked_input.c:8: R1 points to input buffer, offset 0 "
                                  "size 1 is outside the checked range [0, 0)"),
        reject("uninit_stack", "uninit_stack.c:9: R0 loads uninitialised stack byte fp-8"),
        reject("ptr_leak", "ptr_leak.c:10: pointer leak: storing a pointer to input buffer "
                           "into output buffer"),
        reject("helper_size", "helper_size.c:10: R2 points to input buffer, offset 0 size 32 is "
                              "outside the checked range [0, 16)"),
        reject("jump_into_ldimm64", "jump into the middle of an ld_imm64 at pc 2"),
        reject("ctx_write", "ctx_write.c:7: R1 points to the context, which is read-only"),
        Case{"infinite_loop", "infinite_loop", "infinite_loop", Expect::RunError, nullptr,
             [] { return Bytes("x"); }, nullptr, {0, 0, 0, 0}, 0, -ETIME},
    };
}

// ---- the test -------------------------------------------------------------------

void PrintTo(const Case &c, std::ostream *os)
{
    *os << c.name;
}

struct Collect {
    Bytes out;
    std::vector<std::string> trace;
};

int collect_block(void *arg, const vm_block_result *r)
{
    auto *c = static_cast<Collect *>(arg);
    if (r->rc == 0 && r->ret > 0)
        c->out.append(reinterpret_cast<const char *>(r->out), (size_t)r->ret);
    return 0;
}

void collect_trace(void *arg, const char *msg)
{
    static_cast<Collect *>(arg)->trace.push_back(msg);
}

class Corpus : public ::testing::TestWithParam<Case>
{
  protected:
    void SetUp() override
    {
        char err[512] = "";
        int rc = vm_object_load_file(corpus_path(GetParam().file).c_str(), nullptr, &obj_, err,
                                     sizeof(err));
        ASSERT_EQ(rc, 0) << err;
        prog_ = vm_object_find(obj_, GetParam().prog);
        ASSERT_NE(prog_, nullptr) << "no program " << GetParam().prog;
    }
    void TearDown() override { vm_object_free(obj_); }

    int run(const Bytes &in, bool checked, Collect *c)
    {
        vm_blocks_opts o{};
        o.block_size = GetParam().block_size;
        o.out_cap = GetParam().out_cap;
        std::memcpy(o.arg, GetParam().arg, sizeof(o.arg));
        o.checked = checked;
        o.on_block = collect_block;
        o.on_block_arg = c;
        o.trace = collect_trace;
        o.trace_arg = c;
        return vm_blocks_run(prog_, in.data(), in.size(), &o, nullptr);
    }

    vm_object *obj_ = nullptr;
    vm_prog *prog_ = nullptr;
};

TEST_P(Corpus, Case)
{
    const Case &c = GetParam();
    vm_verify_result res;
    std::memset(&res, 0, sizeof(res));
    int rc = vm_verify(prog_, nullptr, &res);
    if (c.expect == Expect::Reject) {
        ASSERT_NE(rc, 0) << c.prog << " was accepted";
        EXPECT_NE(std::string(res.msg).find(c.fragment), std::string::npos)
            << "message: " << res.msg;
        return;
    }
    ASSERT_EQ(rc, 0) << "rejected: " << res.msg;
    ASSERT_EQ(vm_prepare(prog_), 0);
    Bytes in = c.input();
    Collect fast, checked;
    int rc_fast = run(in, false, &fast);
    int rc_checked = run(in, true, &checked);
    EXPECT_EQ(rc_fast, rc_checked);
    EXPECT_TRUE(fast.out == checked.out) << "fast and checked runs differ";
    if (c.expect == Expect::RunError) {
        EXPECT_EQ(rc_fast, c.run_error);
        return;
    }
    ASSERT_EQ(rc_checked, 0) << "run failed";
    c.check(in, checked.out);
}

INSTANTIATE_TEST_SUITE_P(Progs, Corpus, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

// Every program of every corpus object loads with line info for its
// first instruction, naming its source file.
TEST(CorpusObjects, CarryLineInfo)
{
    for (const Case &c : cases()) {
        vm_object *obj = nullptr;
        char err[512];
        ASSERT_EQ(vm_object_load_file(corpus_path(c.file).c_str(), nullptr, &obj, err,
                                      sizeof(err)), 0) << err;
        vm_prog *p = vm_object_find(obj, c.prog);
        ASSERT_NE(p, nullptr);
        const vm_line_info *li = vm_prog_line(p, 0);
        ASSERT_NE(li, nullptr) << c.file;
        EXPECT_EQ(std::string(li->file), std::string(c.file) + ".c");
        vm_object_free(obj);
    }
}

// docs/BPF.md shows tests/bpf/progs/count.c verbatim: the example users
// copy is the one this suite verifies and runs.
TEST(Docs, ExampleIsTheCorpusProgram)
{
    auto slurp = [](const std::string &p) {
        std::ifstream f(p);
        return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    };
    std::string doc = slurp(std::string(CISC_SOURCE_DIR) + "/docs/BPF.md");
    std::string prog = slurp(std::string(CISC_SOURCE_DIR) + "/tests/bpf/progs/count.c");
    ASSERT_FALSE(prog.empty());
    size_t start = doc.find("```c\n");
    ASSERT_NE(start, std::string::npos);
    start += 5;
    size_t end = doc.find("```", start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_EQ(doc.substr(start, end - start), prog);
}

}  // namespace

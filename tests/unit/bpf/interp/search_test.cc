/* The search helpers (10 cisc_memmem, 11 cisc_memchr, 12 cisc_input_find,
 * 13 cisc_input_rchr) and bpf/search.c under them: results against a
 * reference on many small random cases (both search paths: the rare-byte
 * prefilter and its memmem fallback), the 32-bit size convention, the
 * input span [from, min(to, len)), the context check, checked mode, and
 * helper work charged to the budget. */
#include "vm_test_util.h"

#include <algorithm>

extern "C" {
#include "bpf/search.h"
}

namespace {

uint64_t P(const void *p) { return (uint64_t)(uintptr_t)p; }

uint64_t call(uint32_t id, vm_env *env, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0,
              uint64_t d = 0, uint64_t e = 0)
{
    const vm_helper *h = vm_helper_find(id);
    if (!h) {                    // nothing to call
        ADD_FAILURE() << "no helper " << id;
        return ~0ull;
    }
    return h->fn(env, a, b, c, d, e);
}

int64_t ref_find(const std::string &hay, const std::string &needle)
{
    if (needle.empty() || needle.size() > hay.size())
        return -1;
    size_t i = hay.find(needle);
    return i == std::string::npos ? -1 : (int64_t)i;
}

uint64_t rng(uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

std::string random_text(uint64_t &s, size_t n, const char *alphabet)
{
    std::string t(n, ' ');
    size_t k = strlen(alphabet);
    for (auto &c : t)
        c = alphabet[rng(s) % k];
    return t;
}

int64_t fwd(const std::string &hay, const std::string &needle)
{
    return vm_search_fwd((const uint8_t *)hay.data(), hay.size(), (const uint8_t *)needle.data(),
                         needle.size());
}

TEST(Search, ForwardMatchesReferenceOnRandomCases)
{
    uint64_t s = 0x1234567;
    for (const char *alpha : {"ab", "abc", "a\nb x_", "abcdefghijklmnopqrstuvwxyz"}) {
        for (int t = 0; t < 3000; t++) {
            std::string hay = random_text(s, rng(s) % 200, alpha);
            std::string needle = random_text(s, 1 + rng(s) % 8, alpha);
            if (t % 3 == 0 && hay.size() > 10) {   /* often a planted match */
                size_t at = rng(s) % hay.size(), n = std::min<size_t>(1 + rng(s) % 12,
                                                                      hay.size() - at);
                needle = hay.substr(at, n);
            }
            ASSERT_EQ(fwd(hay, needle), ref_find(hay, needle))
                << "hay '" << hay << "' needle '" << needle << "'";
        }
    }
}

TEST(Search, ForwardEdges)
{
    EXPECT_EQ(fwd("", "a"), -1);
    EXPECT_EQ(fwd("abc", ""), -1);
    EXPECT_EQ(fwd("abc", "abcd"), -1);
    EXPECT_EQ(fwd("abc", "abc"), 0);
    EXPECT_EQ(fwd("xxabc", "abc"), 2);   /* at the very end */
    EXPECT_EQ(fwd("abcabc", "bc"), 1);   /* the first of two */
}

/* Many false candidates for the rarest byte: the prefilter hands over to
 * memmem and the result is still exact. */
TEST(Search, ForwardFallbackIsExact)
{
    std::string hay(200000, 'a'), needle = std::string(40, 'a') + "b";
    EXPECT_EQ(fwd(hay, needle), -1);
    hay[150000] = 'b';
    EXPECT_EQ(fwd(hay, needle), 150000 - 40);
    std::string q(100000, 'q');   /* 'q' ranks rarer than 'e': anchors on q */
    std::string n2 = "qqqe";
    EXPECT_EQ(fwd(q, n2), -1);
    q += "e";
    EXPECT_EQ(fwd(q, n2), (int64_t)q.size() - 4);
}

TEST(Search, ReverseByte)
{
    const uint8_t b[] = {'a', '\n', 'b', '\n', 'c'};
    EXPECT_EQ(vm_search_rchr(b, 5, '\n'), 3);
    EXPECT_EQ(vm_search_rchr(b, 3, '\n'), 1);
    EXPECT_EQ(vm_search_rchr(b, 1, '\n'), -1);
    EXPECT_EQ(vm_search_rchr(b, 0, 'a'), -1);
}

TEST(SearchHelpers, MemmemAndMemchrNative)
{
    std::string hay = "GET /a 200\nPOST /b 500 ERR_X\n";
    vm_env env{};
    EXPECT_EQ(call(10, &env, P(hay.data()), hay.size(), P("ERR_X"), 5), hay.find("ERR_X"));
    EXPECT_EQ((int64_t)call(10, &env, P(hay.data()), hay.size(), P("ERR_Y"), 5), -1);
    EXPECT_EQ((int64_t)call(10, &env, P(hay.data()), 0, P("G"), 1), -1);
    /* sizes are the low 32 bits, as the C signature (__u32) says */
    EXPECT_EQ(call(10, &env, P(hay.data()), 0x100000000ull | 15, P("POST"), 4), 11u);
    EXPECT_EQ((int64_t)call(10, &env, P(hay.data()), 0x100000000ull | 14, P("POST"), 4), -1);
    EXPECT_EQ(call(11, &env, P(hay.data()), hay.size(), '\n'), 10u);
    EXPECT_EQ(call(11, &env, P(hay.data()), hay.size(), 0x100 | 'P'), 11u);   /* low byte */
    EXPECT_EQ((int64_t)call(11, &env, P(hay.data()), 10, '\n'), -1);
    EXPECT_EQ((int64_t)call(11, &env, P(hay.data()), 0, 'G'), -1);
}

/* r0 = cisc_input_find(ctx, arg0, arg1, rodata, rodata size) */
std::vector<vm_insn> find_prog(uint32_t needle_len)
{
    return {I_LDX(VM_DW, 2, 1, 64), I_LDX(VM_DW, 3, 1, 72), I_LD_RODATA(4, 0),
            I_MOV64_IMM(5, (int32_t)needle_len), I_CALL_HELPER(12), I_EXIT()};
}

/* r0 = cisc_input_rchr(ctx, arg0, arg1, arg2) */
std::vector<vm_insn> rchr_prog()
{
    return {I_LDX(VM_DW, 2, 1, 64), I_LDX(VM_DW, 3, 1, 72), I_LDX(VM_DW, 4, 1, 80),
            I_CALL_HELPER(13), I_EXIT()};
}

struct Input {
    std::string data;
    std::vector<uint8_t> out = std::vector<uint8_t>(64);
    vm_ctx ctx{};
    explicit Input(std::string d) : data(std::move(d))
    {
        ctx.data = P(data.data());
        ctx.data_end = ctx.data + data.size();
        ctx.len = data.size();
        ctx.out = P(out.data());
        ctx.out_end = ctx.out + out.size();
    }
    /* Runs p fast and checked with arg[0..2]; both must agree. */
    int64_t run(TestProg &p, uint64_t a0, uint64_t a1, uint64_t a2 = 0)
    {
        ctx.arg[0] = a0, ctx.arg[1] = a1, ctx.arg[2] = a2;
        uint64_t r[2] = {1, 2};
        for (int checked = 0; checked < 2; checked++) {
            vm_env env{};
            env.checked = checked;
            EXPECT_EQ(vm_run(p.prog(), &ctx, &env, &r[checked]), 0) << env.fault;
            EXPECT_EQ(env.ctx, nullptr) << "the context must not outlive the run";
        }
        EXPECT_EQ(r[0], r[1]);
        return (int64_t)r[0];
    }
};

TEST(SearchHelpers, InputFindSearchesFromToClampedToTheInput)
{
    std::string pat = "ERR";
    TestProg p(find_prog(3), std::vector<uint8_t>(pat.begin(), pat.end()));
    Input in("ok\nERR one\nfine\nERR two\n");   /* ERR at 3 and 16 */
    EXPECT_EQ(in.run(p, 0, 1000), 3);
    EXPECT_EQ(in.run(p, 3, 1000), 3);
    EXPECT_EQ(in.run(p, 4, 1000), 16);
    EXPECT_EQ(in.run(p, 4, 19), 16);               /* ends exactly at to */
    EXPECT_EQ(in.run(p, 4, 18), -1);               /* would cross to */
    EXPECT_EQ(in.run(p, 17, ~0ull), -1);
    EXPECT_EQ(in.run(p, 10, 5), -1);               /* from >= to */
    EXPECT_EQ(in.run(p, ~0ull, ~0ull), -1);
    Input empty("");
    EXPECT_EQ(empty.run(p, 0, 100), -1);
}

TEST(SearchHelpers, InputRchrFindsTheLastByteBeforeTo)
{
    TestProg p(rchr_prog());
    Input in("a\nbb\nccc\nd");   /* '\n' at 1, 4, 8 */
    EXPECT_EQ(in.run(p, 0, 100, '\n'), 8);
    EXPECT_EQ(in.run(p, 0, 8, '\n'), 4);
    EXPECT_EQ(in.run(p, 2, 4, '\n'), -1);
    EXPECT_EQ(in.run(p, 1, 2, '\n'), 1);
    EXPECT_EQ(in.run(p, 5, 5, '\n'), -1);
    EXPECT_EQ(in.run(p, 0, 100, 0x100 | 'a'), 0);   /* the low byte of c */
}

/* Only the run's own context is searched: without one (vm_run_raw) or
 * with another pointer the helpers find nothing; checked mode reports an
 * argument that is not the context. */
TEST(SearchHelpers, InputHelpersNeedTheRunsContext)
{
    Input in("needle");
    vm_env env{};
    EXPECT_EQ((int64_t)call(12, &env, P(&in.ctx), 0, 100, P("n"), 1), -1);
    env.ctx = &in.ctx;
    EXPECT_EQ((int64_t)call(12, &env, P(&in.ctx), 0, 100, P("d"), 1), 3);
    vm_ctx other = in.ctx;
    EXPECT_EQ((int64_t)call(12, &env, P(&other), 0, 100, P("d"), 1), -1);
    EXPECT_EQ((int64_t)call(13, &env, P(&other), 0, 100, 'e'), -1);

    TestProg p({I_MOV64_IMM(2, 0), I_MOV64_IMM(3, 100), I_MOV64_IMM(4, 'n'), I_CALL_HELPER(13),
                I_EXIT()});
    uint64_t r0 = 0;
    ASSERT_EQ(p.run_raw(&r0, false, in.data.data(), in.data.size()), 0);
    EXPECT_EQ((int64_t)r0, -1);
    vm_env e2{};
    EXPECT_EQ(p.run_raw(&r0, true, in.data.data(), in.data.size(), &e2), -EFAULT);
    EXPECT_NE(std::string(e2.fault).find("cisc_input_rchr arg 1 is not the context"),
              std::string::npos) << e2.fault;
}

/* A helper's work counts against the budget: a loop that searches a
 * 1 MiB input without a match runs out after few calls (each charges
 * 1 MiB / VM_HELPER_COST_BYTES instructions), however cheap the loop. */
TEST(SearchHelpers, WorkIsChargedToTheBudget)
{
    /* loop: input_find(ctx, 0, -1, "z", 1); state[0]++ */
    TestProg p({I_MOV64_REG(6, 1), I_MOV64_REG(1, 6), I_MOV64_IMM(2, 0), I_MOV64_IMM(3, -1),
                I_LD_RODATA(4, 0), I_MOV64_IMM(5, 1), I_CALL_HELPER(12), I_CALL_HELPER(9),
                I_LDX(VM_DW, 1, 0, 0), I_ALU64_IMM(VM_ADD, 1, 1), I_STX(VM_DW, 0, 1, 0),
                I_JA(-12)},
               {'z'});
    Input in(std::string(1 << 20, 'a'));
    std::vector<uint8_t> state(VM_STATE_SIZE, 0);
    vm_env env{};
    env.budget = 1000000;
    env.state = state.data();
    uint64_t r0;
    EXPECT_EQ(vm_run(p.prog(), &in.ctx, &env, &r0), -ETIME);
    uint64_t calls;
    memcpy(&calls, state.data(), 8);
    uint64_t per_call = (1 << 20) / VM_HELPER_COST_BYTES;
    EXPECT_GE(calls, 1u);
    EXPECT_LE(calls, env.budget / per_call + 1) << "calls were not charged";
    EXPECT_GE(env.used, env.budget);

    /* a memchr over 4096 bytes costs its instructions plus 4096 / 64 */
    TestProg m({I_MOV64_IMM(3, 'z'), I_CALL_HELPER(11), I_EXIT()});
    std::string buf(4096, 'a');
    vm_env e4{};
    ASSERT_EQ(m.run_raw(&r0, false, buf.data(), buf.size(), &e4), 0);
    EXPECT_EQ((int64_t)r0, -1);
    EXPECT_EQ(e4.used, 3u + 4096 / VM_HELPER_COST_BYTES);
}

} // namespace

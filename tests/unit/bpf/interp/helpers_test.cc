/* Helpers: the table (ids, names, argument kinds), each native helper
 * called from a program, zstd round trips and errors, trace formatting
 * with hostile formats, the state area. */
#include "vm_test_util.h"

#include <xxhash.h>
#include <zstd.h>

extern "C" {
#include "common/crc32c.h"
}

namespace {

std::vector<uint8_t> sample(size_t n)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (uint8_t)(i * 7 + (i >> 5));
    return v;
}

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

uint64_t P(const void *p) { return (uint64_t)(uintptr_t)p; }

TEST(HelperTable, IdsAndNamesMatchCiscBpfH)
{
    const char *names[] = {"cisc_crc32c", "cisc_xxh64", "cisc_xxh3_64", "cisc_copy",
                           "cisc_zstd_compress", "cisc_zstd_decompress", "cisc_trace",
                           "cisc_ktime_ns", "cisc_state", "cisc_memmem", "cisc_memchr",
                           "cisc_input_find", "cisc_input_rchr"};
    for (uint32_t id = 1; id <= 13; id++) {
        const vm_helper *h = vm_helper_find(id);
        ASSERT_NE(h, nullptr) << id;
        EXPECT_EQ(h->id, id);
        EXPECT_STREQ(h->name, names[id - 1]);
        EXPECT_NE(h->fn, nullptr);
    }
    EXPECT_EQ(vm_helper_find(0), nullptr);
    EXPECT_EQ(vm_helper_find(14), nullptr);
    EXPECT_EQ(vm_helper_find(UINT32_MAX), nullptr);
}

TEST(HelperTable, EveryMemArgumentHasAFollowingSize)
{
    for (uint32_t id = 1; id <= 13; id++) {
        const vm_helper *h = vm_helper_find(id);
        for (int i = 0; i < 5; i++) {
            if (h->args[i] != VM_ARG_MEM_R && h->args[i] != VM_ARG_MEM_W)
                continue;
            bool sized = i + 1 < 5 && (h->args[i + 1] == VM_ARG_SIZE ||
                                       h->args[i + 1] == VM_ARG_SIZE_OR_ZERO);
            EXPECT_TRUE(sized) << h->name << " arg " << i;
        }
    }
    EXPECT_EQ(vm_helper_find(9)->ret, VM_RET_MEM);
    EXPECT_EQ(vm_helper_find(9)->ret_size, (uint32_t)VM_STATE_SIZE);
    EXPECT_EQ(vm_helper_find(4)->args[0], VM_ARG_MEM_W);
    EXPECT_EQ(vm_helper_find(7)->args[0], VM_ARG_MEM_R);
}

TEST(HelperTable, IndexHelpersNameTheArgumentThatBoundsThem)
{
    for (uint32_t id = 1; id <= 13; id++) {
        const vm_helper *h = vm_helper_find(id);
        if (h->ret != VM_RET_INDEX)
            continue;
        ASSERT_TRUE(h->ret_arg >= 1 && h->ret_arg <= 5) << h->name;
        enum vm_arg_kind k = h->args[h->ret_arg - 1];
        EXPECT_TRUE(k == VM_ARG_SIZE || k == VM_ARG_SIZE_OR_ZERO || k == VM_ARG_SCALAR)
            << h->name;
    }
    EXPECT_EQ(vm_helper_find(10)->ret_arg, 2);   /* hay_len */
    EXPECT_EQ(vm_helper_find(12)->args[0], VM_ARG_CTX);
    EXPECT_EQ(vm_helper_find(12)->ret_arg, 3);   /* to */
}

TEST(CtxFields, TableMatchesStruct)
{
    ASSERT_EQ(vm_ctx_nfields, 12u);
    EXPECT_STREQ(vm_ctx_fields[0].name, "data");
    EXPECT_EQ(vm_ctx_fields[0].kind, VM_CTXF_INPUT);
    EXPECT_EQ(vm_ctx_fields[1].kind, VM_CTXF_INPUT_END);
    EXPECT_EQ(vm_ctx_fields[2].kind, VM_CTXF_OUTPUT);
    EXPECT_EQ(vm_ctx_fields[3].kind, VM_CTXF_OUTPUT_END);
    EXPECT_EQ(vm_ctx_fields[5].offset, offsetof(vm_ctx, len));
    EXPECT_EQ(vm_ctx_fields[11].offset, offsetof(vm_ctx, arg) + 24);
    for (unsigned i = 0; i < vm_ctx_nfields; i++) {
        EXPECT_EQ(vm_ctx_fields[i].offset, i * 8);
        EXPECT_EQ(vm_ctx_fields[i].size, 8u);
        if (i >= 4) {
            EXPECT_EQ(vm_ctx_fields[i].kind, VM_CTXF_SCALAR);
        }
    }
}

/* r1 = mem, r2 = len on entry. */
TEST(Helpers, Crc32cFromProgramMatchesCommon)
{
    auto mem = sample(1000);
    TestProg p({I_MOV64_REG(3, 2), I_MOV64_REG(2, 1), I_MOV64_IMM(1, 0), I_CALL_HELPER(1),
                /* continue over the same bytes */
                I_EXIT()});
    EXPECT_EQ(run_both(p, mem.data(), mem.size()), crc32c(0, mem.data(), mem.size()));
    const char *s = "123456789";
    vm_env env{};
    EXPECT_EQ(call(1, &env, 0, P(s), 9), 0xE3069283u);
    EXPECT_EQ(call(1, &env, call(1, &env, 0, P(s), 4), P(s + 4), 5), 0xE3069283u);
    EXPECT_EQ(call(1, &env, 0, P(s), 0), 0u);
}

TEST(Helpers, Xxh64AndXxh3MatchLibrary)
{
    auto mem = sample(777);
    TestProg p64({I_LD_IMM64(3, 0x1234567890ull), I_CALL_HELPER(2), I_EXIT()});
    EXPECT_EQ(run_both(p64, mem.data(), mem.size()), XXH64(mem.data(), mem.size(), 0x1234567890ull));
    TestProg p3({I_CALL_HELPER(3), I_EXIT()});
    EXPECT_EQ(run_both(p3, mem.data(), mem.size()), XXH3_64bits(mem.data(), mem.size()));
    vm_env env{};
    /* the size is the low 32 bits, as the C signature (__u32) says */
    EXPECT_EQ(call(3, &env, P(mem.data()), 0x100000010ull), XXH3_64bits(mem.data(), 16));
}

TEST(Helpers, CopyCopiesTheSmallerLength)
{
    auto mem = sample(32);
    /* copy 16 of the input's 32 bytes to the stack (dst_len 16), then
     * 8 of those 16 from the stack back to mem[16..24) (dst_len 8) */
    TestProg p({I_MOV64_REG(6, 1), I_MOV64_REG(3, 1), I_MOV64_IMM(4, 32), I_MOV64_REG(1, 10),
                I_ALU64_IMM(VM_ADD, 1, -16), I_MOV64_IMM(2, 16), I_CALL_HELPER(4),
                I_MOV64_REG(7, 0), I_MOV64_REG(1, 6), I_ALU64_IMM(VM_ADD, 1, 16),
                I_MOV64_IMM(2, 8), I_MOV64_REG(3, 10), I_ALU64_IMM(VM_ADD, 3, -16),
                I_MOV64_IMM(4, 16), I_CALL_HELPER(4), I_ALU64_IMM(VM_LSH, 0, 8),
                I_ALU64_REG(VM_OR, 0, 7), I_EXIT()});
    auto orig = mem;
    EXPECT_EQ(run_both(p, mem.data(), mem.size()), (8u << 8) | 16u);
    EXPECT_EQ(0, memcmp(mem.data() + 16, orig.data(), 8));
    EXPECT_EQ(0, memcmp(mem.data() + 24, orig.data() + 24, 8));
    EXPECT_EQ(0, memcmp(mem.data(), orig.data(), 16));
    vm_env env{};
    EXPECT_EQ(call(4, &env, 0, 0, 0, 0), 0u);
}

TEST(Helpers, ZstdRoundTrip)
{
    auto src = sample(64 * 1024);
    std::vector<uint8_t> z(ZSTD_compressBound(src.size())), back(src.size());
    vm_env env{};
    int64_t zn = (int64_t)call(5, &env, P(z.data()), z.size(), P(src.data()), src.size(), 3);
    ASSERT_GT(zn, 0);
    ASSERT_LT(zn, (int64_t)src.size());
    int64_t bn = (int64_t)call(6, &env, P(back.data()), back.size(), P(z.data()), (uint64_t)zn);
    ASSERT_EQ(bn, (int64_t)src.size());
    EXPECT_EQ(back, src);
    /* negative (fast) levels and the default level 0 work too */
    EXPECT_GT((int64_t)call(5, &env, P(z.data()), z.size(), P(src.data()), src.size(),
                            (uint64_t)(int64_t)-5), 0);
    EXPECT_GT((int64_t)call(5, &env, P(z.data()), z.size(), P(src.data()), src.size(), 0), 0);
}

TEST(Helpers, ZstdErrorsAreNegativeErrno)
{
    auto src = sample(4096);
    std::vector<uint8_t> z(ZSTD_compressBound(src.size())), small(16), back(4096);
    vm_env env{};
    EXPECT_EQ((int64_t)call(5, &env, P(small.data()), small.size(), P(src.data()), src.size(), 3),
              -ENOSPC);
    EXPECT_EQ((int64_t)call(5, &env, P(z.data()), z.size(), P(src.data()), src.size(), 1000),
              -EINVAL);
    int64_t zn = (int64_t)call(5, &env, P(z.data()), z.size(), P(src.data()), src.size(), 1);
    ASSERT_GT(zn, 0);
    EXPECT_EQ((int64_t)call(6, &env, P(small.data()), small.size(), P(z.data()), (uint64_t)zn),
              -ENOSPC);
    EXPECT_EQ((int64_t)call(6, &env, P(back.data()), back.size(), P(src.data()), 100), -EBADMSG);
    EXPECT_EQ((int64_t)call(6, &env, P(back.data()), back.size(), P(z.data()), (uint64_t)zn - 1),
              -EBADMSG);
}

TEST(Helpers, ZstdCompressFromProgramIntoOutput)
{
    auto in = std::vector<uint8_t>(8192, 'a');
    std::vector<uint8_t> out(1024);
    vm_ctx ctx{};
    ctx.data = P(in.data());
    ctx.data_end = ctx.data + in.size();
    ctx.out = P(out.data());
    ctx.out_end = ctx.out + out.size();
    /* r0 = zstd_compress(out, out_end - out, data, data_end - data, 1) */
    TestProg p({I_LDX(VM_DW, 3, 1, 0), I_LDX(VM_DW, 4, 1, 8), I_ALU64_REG(VM_SUB, 4, 3),
                I_LDX(VM_DW, 2, 1, 24), I_LDX(VM_DW, 6, 1, 16), I_ALU64_REG(VM_SUB, 2, 6),
                I_MOV64_REG(1, 6), I_MOV64_IMM(5, 1), I_CALL_HELPER(5), I_EXIT()});
    for (bool checked : {false, true}) {
        vm_env env{};
        env.checked = checked;
        uint64_t r0 = 0;
        ASSERT_EQ(vm_run(p.prog(), &ctx, &env, &r0), 0) << env.fault;
        ASSERT_GT((int64_t)r0, 0);
        std::vector<uint8_t> back(in.size());
        EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), out.data(), r0), in.size());
        EXPECT_EQ(back, in);
    }
}

/* ---- trace ---- */

struct TraceCase {
    const char *name;
    std::string fmt;   /* bytes passed, fmt_size = fmt.size() */
    uint64_t a, b, c;
    int64_t ret;       /* expected r0: message length or -EINVAL */
    const char *msg;   /* expected message (when ret >= 0) */
};

class Trace : public ::testing::TestWithParam<TraceCase>
{
};

void capture(void *arg, const char *msg)
{
    static_cast<std::vector<std::string> *>(arg)->push_back(msg);
}

TEST_P(Trace, Formats)
{
    const TraceCase &c = GetParam();
    std::vector<std::string> got;
    vm_env env{};
    env.trace = capture;
    env.trace_arg = &got;
    int64_t r = (int64_t)call(7, &env, P(c.fmt.data()), c.fmt.size(), c.a, c.b, c.c);
    EXPECT_EQ(r, c.ret);
    if (c.ret >= 0) {
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0], c.msg);
        EXPECT_EQ((int64_t)got[0].size(), c.ret);
    } else {
        EXPECT_TRUE(got.empty()) << "a refused format must record nothing";
    }
}

const uint64_t NEG1 = ~0ull;

INSTANTIATE_TEST_SUITE_P(
    Helpers, Trace,
    ::testing::Values(
        TraceCase{"plain", std::string("hello\0", 6), 0, 0, 0, 5, "hello"},
        TraceCase{"trailing_newline_dropped", std::string("x\n\0", 3), 0, 0, 0, 1, "x"},
        TraceCase{"d_is_32bit_signed", std::string("%d\0", 3), 0xffffffffull, 0, 0, 2, "-1"},
        TraceCase{"i", std::string("%i\0", 3), (uint64_t)-42, 0, 0, 3, "-42"},
        TraceCase{"u_is_32bit", std::string("%u\0", 3), NEG1, 0, 0, 10, "4294967295"},
        TraceCase{"x", std::string("%x\0", 3), 0x1abcdef12ull, 0, 0, 8, "abcdef12"},
        TraceCase{"ld", std::string("%ld\0", 4), NEG1, 0, 0, 2, "-1"},
        TraceCase{"lu", std::string("%lu\0", 4), NEG1, 0, 0, 20, "18446744073709551615"},
        TraceCase{"lx", std::string("%lx\0", 4), NEG1, 0, 0, 16, "ffffffffffffffff"},
        TraceCase{"lld_llu_llx", std::string("%lld %llu %llx\0", 15), (uint64_t)-5, 7, 255, 7,
                  "-5 7 ff"},
        TraceCase{"c", std::string("[%c]\0", 5), 'A', 0, 0, 3, "[A]"},
        TraceCase{"percent", std::string("100%%\0", 6), 0, 0, 0, 4, "100%"},
        TraceCase{"width_and_zero_pad", std::string("%08x|%-4d|\0", 11), 0xbeef, 7, 0, 14,
                  "0000beef|7   |"},
        TraceCase{"three_args", std::string("%d,%d,%d\0", 9), 1, 2, 3, 5, "1,2,3"},
        TraceCase{"not_nul_terminated", std::string("abc%d", 5), 9, 0, 0, 4, "abc9"},
        TraceCase{"stops_at_nul_inside", std::string("ab\0%s", 5), 0, 0, 0, 2, "ab"},
        TraceCase{"fmt_size_limits", std::string("abcdef", 3), 0, 0, 0, 3, "abc"},
        TraceCase{"empty", std::string(""), 0, 0, 0, 0, ""},
        TraceCase{"refuse_s", std::string("%s\0", 3), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_p", std::string("%p\0", 3), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_n", std::string("%n\0", 3), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_ls", std::string("%ls\0", 4), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_lc", std::string("%lc\0", 4), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_lll", std::string("%llld\0", 6), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_star_width", std::string("%*d\0", 4), 5, 1, 0, -EINVAL, ""},
        TraceCase{"refuse_precision", std::string("%.3d\0", 5), 5, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_huge_width", std::string("%999d\0", 6), 5, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_fourth_arg", std::string("%d%d%d%d\0", 9), 1, 2, 3, -EINVAL, ""},
        TraceCase{"refuse_trailing_percent", std::string("abc%", 4), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_percent_at_nul", std::string("abc%\0", 5), 0, 0, 0, -EINVAL, ""},
        TraceCase{"refuse_X", std::string("%X\0", 3), 0, 0, 0, -EINVAL, ""}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(TraceMisc, LongMessagesAreTruncated)
{
    std::string fmt(1000, 'z');
    std::vector<std::string> got;
    vm_env env{};
    env.trace = capture;
    env.trace_arg = &got;
    EXPECT_EQ((int64_t)call(7, &env, P(fmt.data()), fmt.size()), VM_TRACE_MSG_MAX - 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], std::string(VM_TRACE_MSG_MAX - 1, 'z'));
    std::string many;
    for (int i = 0; i < 100; i++)
        many += "%lld";
    EXPECT_EQ((int64_t)call(7, &env, P(many.data()), many.size(), 1, 2, 3), -EINVAL);
}

TEST(TraceMisc, NoCallbackDropsMessage)
{
    vm_env env{};
    EXPECT_EQ(call(7, &env, P("hi"), 3), 2u);
}

TEST(TraceMisc, FromProgramWithRodataFormat)
{
    std::string f = "n=%d";
    std::vector<uint8_t> ro(f.begin(), f.end());
    TestProg p({I_LD_RODATA(1, 0), I_MOV64_IMM(2, (int32_t)ro.size()), I_MOV64_IMM(3, 42),
                I_CALL_HELPER(7), I_EXIT()},
               ro);
    std::vector<std::string> got;
    for (bool checked : {false, true}) {
        vm_env env{};
        env.checked = checked;
        env.trace = capture;
        env.trace_arg = &got;
        uint64_t r0;
        ASSERT_EQ(vm_run_raw(p.prog(), nullptr, 0, &env, &r0), 0) << env.fault;
        EXPECT_EQ(r0, 4u);
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1], "n=42");
}

TEST(Helpers, KtimeIsMonotonic)
{
    TestProg p({I_CALL_HELPER(8), I_MOV64_REG(6, 0), I_CALL_HELPER(8), I_ALU64_REG(VM_SUB, 0, 6),
                I_EXIT()});
    vm_env env{};
    for (bool checked : {false, true}) {
        uint64_t d = ~0ull;
        ASSERT_EQ(p.run_raw(&d, checked), 0);
        EXPECT_LT(d, 10ull * 1000 * 1000 * 1000);   /* non-negative (no wrap) */
    }
    EXPECT_GT(call(8, &env), 0u);
}

/* state()[0] += 1; return state()[0] */
std::vector<vm_insn> counter()
{
    return {I_CALL_HELPER(9), I_LDX(VM_DW, 1, 0, 0), I_ALU64_IMM(VM_ADD, 1, 1),
            I_STX(VM_DW, 0, 1, 0), I_LDX(VM_DW, 0, 0, 0), I_EXIT()};
}

TEST(State, PersistsAcrossRunsWhenCallerProvidesIt)
{
    TestProg p(counter());
    std::vector<uint8_t> state(VM_STATE_SIZE, 0);
    for (int i = 1; i <= 3; i++) {
        vm_env env{};
        env.state = state.data();
        env.checked = i == 2;
        uint64_t r0 = 0;
        ASSERT_EQ(vm_run_raw(p.prog(), nullptr, 0, &env, &r0), 0) << env.fault;
        EXPECT_EQ(r0, (uint64_t)i);
        EXPECT_EQ(env.state, state.data());
    }
}

TEST(State, WithoutCallerStateEachRunGetsAZeroedArea)
{
    TestProg p(counter());
    for (int i = 0; i < 3; i++) {
        vm_env env{};
        env.checked = i == 1;
        uint64_t r0 = 0;
        ASSERT_EQ(vm_run_raw(p.prog(), nullptr, 0, &env, &r0), 0) << env.fault;
        EXPECT_EQ(r0, 1u);
        EXPECT_EQ(env.state, nullptr) << "the interpreter's area must not leak out";
    }
}

} // namespace

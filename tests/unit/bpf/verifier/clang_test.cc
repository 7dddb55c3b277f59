// Real clang output (progs/*.c, compiled at build time like program
// authors do): loop shapes, subprograms, helpers must verify; known-bad
// programs must be rejected naming the source line. Accepted programs are
// also run in the bounds-checking interpreter over a few inputs: a fault
// there would be a verifier bug.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include "bpf/interp.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
}

namespace {

struct ClangCase {
    const char *obj, *prog;
    int rc;
    const char *frag;   // rejections: expected in the message
    bool joined;        // accepted by the first exploration (with joins), not the exact one
};

std::ostream &operator<<(std::ostream &os, const ClangCase &c)
{
    return os << c.prog;
}

const ClangCase kClang[] = {
    // the joins keep what the loop needs: a distance from the buffer's start
    // beside pointers rebased from it (ptr_walk, stride3), a pointer and a
    // counter that move together (base_walk)
    {"loops", "ptr_walk", 0, nullptr, true},
    {"loops", "nested", 0, nullptr},
    {"loops", "stride3", 0, nullptr, true},
    {"loops", "base_walk", 0, nullptr, true},
    {"loops", "deltas", 0, nullptr},
    {"loops", "histogram", 0, nullptr},
    {"loops", "first_columns", 0, nullptr},
    {"calls", "stack_buffers", 0, nullptr},
    {"calls", "reader", 0, nullptr},
    {"calls", "hashes", 0, nullptr},
    {"bad", "off_by_one_loop", -EACCES,
     "bad.c:12: R4 points to input buffer, offset 1 size 1 is outside the checked range [0, 1)"},
    {"bad", "leak_to_state", -EACCES, "bad.c:21: pointer leak"},
    {"bad", "unbounded_helper", -EACCES, "bad.c:31: R3: size passed to cisc_crc32c is not bounded"},
    {"bad", "uninit_read", -EACCES, "bad.c:39: variable-offset stack write may reach uninitialised"},
};

class ClangProg : public ::testing::TestWithParam<ClangCase> {};

void run_checked(vm_prog *p, uint32_t in_len, uint32_t out_len, uint64_t arg0)
{
    std::vector<uint8_t> in(in_len + 1), out(out_len + 1), state(VM_STATE_SIZE);
    for (uint32_t k = 0; k < in_len; k++)
        in[k] = (uint8_t)(k * 7 + (k % 13 == 0 ? '\n' : 'a'));
    vm_ctx ctx{};
    ctx.data = (uintptr_t)in.data();
    ctx.data_end = ctx.data + in_len;
    ctx.out = (uintptr_t)out.data();
    ctx.out_end = ctx.out + out_len;
    ctx.len = in_len;
    ctx.flags = 3;
    ctx.arg[0] = arg0;
    vm_env env{};
    env.checked = true;
    env.state = state.data();
    uint64_t r0 = 0;
    int rc = vm_run(p, &ctx, &env, &r0);
    EXPECT_NE(rc, -EFAULT) << p->name << " faulted: " << env.fault;
}

TEST_P(ClangProg, Verdict)
{
    const ClangCase &c = GetParam();
    std::string path = std::string(PROGS_DIR) + "/" + c.obj + ".o";
    vm_object *obj = nullptr;
    char err[256] = "";
    ASSERT_EQ(vm_object_load_file(path.c_str(), nullptr, &obj, err, sizeof(err)), 0) << err;
    vm_prog *p = vm_object_find(obj, c.prog);
    ASSERT_NE(p, nullptr);
    vm_verify_result res;
    int rc = vm_verify(p, nullptr, &res);
    EXPECT_EQ(rc, c.rc) << res.msg;
    if (c.joined) {
        EXPECT_EQ(res.exact_insns, 0u) << c.prog << " needed the exploration without joins";
    }
    if (c.frag) {
        EXPECT_NE(std::string(res.msg).find(c.frag), std::string::npos) << res.msg;
    }
    if (rc == 0) {
        ASSERT_EQ(vm_prepare(p), 0);
        for (uint32_t len : {0u, 1u, 7u, 100u, 4096u})
            for (uint64_t arg : {0ull, 5ull, 1000ull, ~0ull})
                run_checked(p, len, len / 2 + 1, arg);
    }
    vm_object_free(obj);
}

INSTANTIATE_TEST_SUITE_P(Objects, ClangProg, ::testing::ValuesIn(kClang),
                         [](const ::testing::TestParamInfo<ClangCase> &i) {
                             return std::string(i.param.prog);
                         });

} // namespace

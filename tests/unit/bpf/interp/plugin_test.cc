/* The cisc-bpf-conformance plugin, run as the conformance suite runs it:
 * memory (hex) as argv[1], the program as hex on stdin, r0 in hex on
 * stdout, errors on stderr with a non-zero exit. Covers the suite's own
 * helper 5 and runtime calls, which the plugin provides itself. */
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "vm_asm.h"

namespace {

struct Result {
    int status = -1;
    std::string out, err;
};

std::string hex(const std::vector<vm_insn> &code)
{
    std::string s;
    char b[4];
    for (const vm_insn &in : code) {
        const uint8_t *p = reinterpret_cast<const uint8_t *>(&in);
        for (size_t i = 0; i < sizeof(in); i++) {
            snprintf(b, sizeof(b), "%02x ", p[i]);
            s += b;
        }
    }
    return s;
}

std::string slurp(const std::string &path)
{
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/* Runs the plugin with argv (already shell-quoted) and the given stdin. */
Result run_plugin(const std::string &args, const std::string &input)
{
    static int seq;
    std::string base = ::testing::TempDir() + "/cisc_plugin_" + std::to_string(getpid()) + "_" +
                       std::to_string(seq++);
    std::string in = base + ".in", out = base + ".out", err = base + ".err";
    std::ofstream(in) << input << "\n";
    std::string cmd = std::string(CISC_BINARY_DIR) + "/tests/bpf/conformance/cisc-bpf-conformance " +
                      args + " <" + in + " >" + out + " 2>" + err;
    Result r;
    int rc = system(cmd.c_str());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    for (const std::string &f : {in, out, err})
        unlink(f.c_str());
    return r;
}

Result run_plugin(const std::vector<vm_insn> &code, const std::string &args = "")
{
    return run_plugin(args, hex(code));
}

const char *const kModes[] = {"", "--fast", "--checked", "--jit"};

TEST(Plugin, SuiteHelper5ReturnsItsFirstArgument)
{
    /* uBPF's test helper 5 ("unwind") returns r1. With memory present r2 is
     * its length, so a device helper taking (ptr, len) would fault here. */
    std::vector<vm_insn> code = {I_MOV64_IMM(1, 7), I_CALL_HELPER(5), I_EXIT()};
    for (const char *mode : kModes) {
        Result r = run_plugin(code, std::string("'00 11 22 33' ") + mode);
        EXPECT_EQ(r.status, 0) << mode << ": " << r.err;
        EXPECT_EQ(r.out, "7\n") << mode;
        r = run_plugin(code, mode);
        EXPECT_EQ(r.out, "7\n") << mode << ": " << r.err;
    }
}

TEST(Plugin, CallUnwindFailProgramWithMemory)
{
    /* tests/call_unwind_fail.data: mov r1, -1; call 5; mov r0, 2; exit */
    std::vector<vm_insn> code = {I_MOV64_IMM(1, -1), I_CALL_HELPER(5), I_MOV64_IMM(0, 2),
                                 I_EXIT()};
    for (const char *mode : kModes) {
        Result r = run_plugin(code, std::string("'aa bb cc dd ee ff' ") + mode);
        EXPECT_EQ(r.status, 0) << mode << ": " << r.err;
        EXPECT_EQ(r.out, "2\n") << mode;
    }
}

TEST(Plugin, RuntimeCallReturnsZero)
{
    /* tests/call_runtime.data: call runtime 0x2a (CALL with src 2). */
    std::vector<vm_insn> code = {I_MOV64_IMM(0, 9), vm_ins(VM_CLS_JMP | VM_CALL, 0, 2, 0, 0x2a),
                                 I_EXIT()};
    Result r = run_plugin(code);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "0\n");
}

TEST(Plugin, MemoryIsR1AndItsLengthR2)
{
    Result r = run_plugin({I_MOV64_REG(0, 2), I_EXIT()}, "'01 02 03'");
    EXPECT_EQ(r.out, "3\n") << r.err;
    r = run_plugin({I_LDX(VM_B, 0, 1, 1), I_ST(VM_B, 1, 2, 0x7f), I_LDX(VM_B, 2, 1, 2),
                    I_ALU64_REG(VM_ADD, 0, 2), I_EXIT()},
                   "'01 02 03'");
    EXPECT_EQ(r.out, "81\n") << r.err;
    r = run_plugin({I_MOV64_REG(0, 2), I_EXIT()});
    EXPECT_EQ(r.out, "0\n") << r.err;
}

TEST(Plugin, JitRunsTheProgramNatively)
{
    /* The same program under the interpreter and the JIT: 3 + mem[1] * 2. */
    std::vector<vm_insn> code = {I_LDX(VM_B, 0, 1, 1), I_ALU64_IMM(VM_MUL, 0, 2),
                                 I_ALU64_REG(VM_ADD, 0, 2), I_EXIT()};
    for (const char *mode : {"--interp", "--jit"}) {
        Result r = run_plugin(code, std::string("'01 20 03' ") + mode);
        EXPECT_EQ(r.status, 0) << mode << ": " << r.err;
        EXPECT_EQ(r.out, "43\n") << mode;
    }
}

TEST(Plugin, PrintsR0AsSixtyFourBitHex)
{
    Result r = run_plugin({I_MOV64_IMM(0, -2), I_EXIT()});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "fffffffffffffffe\n");
}

TEST(Plugin, CheckedFaultIsAnErrorOnStderr)
{
    Result r = run_plugin({I_LDX(VM_W, 0, 1, 4), I_EXIT()}, "'01 02 03 04'");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("pc 0: load of 4 bytes at mem+4 out of bounds"), std::string::npos)
        << r.err;
}

TEST(Plugin, RejectsBadInputWithAReason)
{
    Result r = run_plugin("", "b7 00 00 00 00 00 00");   /* 7 bytes */
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("not a whole number of 8-byte instructions"), std::string::npos);
    r = run_plugin("", "b7 0g");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("not hex"), std::string::npos);
    r = run_plugin("'zz'", hex({I_EXIT()}));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("memory argument is not hex"), std::string::npos);
    r = run_plugin({I_EXIT()}, "--elf");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("ELF input is not supported"), std::string::npos);
    r = run_plugin({vm_ins(VM_CLS_JMP | VM_CALL | VM_X, 2, 0, 0, 0), I_EXIT()});
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("pc 0: callx r2: the plugin cannot tell which helper"),
              std::string::npos) << r.err;
}

}  // namespace

// tests/unit/bpf/verifier/verify_util.h - running the verifier on a
// hand-assembled program in tests.
#ifndef CISC_TEST_VM_VERIFY_UTIL_H
#define CISC_TEST_VM_VERIFY_UTIL_H

#include <cerrno>
#include <string>
#include <vector>

#include "asm.h"

extern "C" {
#include "bpf/prog.h"
#include "bpf/verifier.h"
}

struct Verdict {
    int rc = 0;
    std::string msg;
    vm_verify_result res{};
    uint32_t stack_depth = 0;
    std::string log;
};

inline void collect_log(void *arg, const char *line)
{
    auto *s = static_cast<std::string *>(arg);
    *s += line;
    *s += '\n';
}

inline Verdict run_verifier(std::vector<vm_insn> insns, std::vector<uint8_t> rodata = {},
                            vm_verify_opts opts = {}, bool want_log = false)
{
    Verdict v;
    vm_prog p{};
    p.insns = insns.data();
    p.ninsns = (uint32_t)insns.size();
    p.rodata = rodata.empty() ? nullptr : rodata.data();
    p.rodata_size = (uint32_t)rodata.size();
    if (want_log) {
        opts.log = collect_log;
        opts.log_arg = &v.log;
    }
    v.rc = vm_verify(&p, &opts, &v.res);
    v.msg = v.res.msg;
    v.stack_depth = p.stack_depth;
    return v;
}

#endif

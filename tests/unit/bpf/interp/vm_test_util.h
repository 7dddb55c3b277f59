/* tests/unit/bpf/interp/vm_test_util.h - runs hand-built programs in tests. */
#ifndef CISC_TESTS_VM_TEST_UTIL_H
#define CISC_TESTS_VM_TEST_UTIL_H

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

extern "C" {
#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
}
#include "vm_asm.h"

/* A prepared program built from a list of instructions; frees itself. */
class TestProg
{
  public:
    TestProg(std::initializer_list<vm_insn> code, std::vector<uint8_t> rodata = {})
        : insns_(code), rodata_(std::move(rodata))
    {
        init();
    }
    explicit TestProg(std::vector<vm_insn> code, std::vector<uint8_t> rodata = {})
        : insns_(std::move(code)), rodata_(std::move(rodata))
    {
        init();
    }
    ~TestProg() { vm_unprepare(&p_); }
    TestProg(const TestProg &) = delete;
    TestProg &operator=(const TestProg &) = delete;

    vm_prog *prog() { return &p_; }
    int prepare_rc() const { return prepare_rc_; }

    /* Runs with r1 = mem, r2 = len. Returns the vm_run_raw() code of the
     * interpreter. Unchecked runs also run the JIT-compiled code first, on
     * copies of the memory and state, and expect the same code, r0,
     * instruction count, fault and bytes (the differential check every
     * hand-built program goes through). */
    int run_raw(uint64_t *r0, bool checked, void *mem = nullptr, uint64_t len = 0,
                vm_env *env = nullptr)
    {
        vm_env local{};
        vm_env *e = env ? env : &local;
        e->checked = checked;
        if (!checked && p_.jit && !e->trace)
            run_jit_compare(mem, len, e);
        e->interp = true;
        int rc = vm_run_raw(&p_, mem, len, e, r0);
        e->interp = false;
        return rc;
    }

  private:
    struct Outcome {
        int rc;
        uint64_t r0, used;
        uint32_t fault_pc;
        std::string fault;
        std::vector<uint8_t> mem, state;
    };

    Outcome run_engine(bool interp, const std::vector<uint8_t> &mem, const vm_env &proto)
    {
        Outcome o{};
        o.mem = mem;
        vm_env e = proto;
        std::vector<uint8_t> state;
        if (proto.state) {
            state.assign((uint8_t *)proto.state, (uint8_t *)proto.state + VM_STATE_SIZE);
            e.state = state.data();
        }
        e.interp = interp;
        o.r0 = 0x5a5a;
        o.rc = vm_run_raw(&p_, mem.empty() ? nullptr : o.mem.data(), o.mem.size(), &e, &o.r0);
        o.used = e.used;
        o.fault_pc = e.fault_pc;
        o.fault = e.fault;
        o.state = state;
        return o;
    }

    /* cisc_ktime_ns() makes r0 differ between any two runs. */
    bool calls_clock() const
    {
        for (const vm_insn &in : insns_)
            if (in.code == (VM_CLS_JMP | VM_CALL) && vm_src(&in) == 0 && in.imm == 8)
                return true;
        return false;
    }

    void run_jit_compare(void *mem, uint64_t len, const vm_env *e)
    {
        std::vector<uint8_t> m(static_cast<uint8_t *>(mem), static_cast<uint8_t *>(mem) + len);
        if (!mem)
            m.clear();
        Outcome j = run_engine(false, m, *e), i = run_engine(true, m, *e);
        EXPECT_EQ(j.rc, i.rc) << "jit vs interpreter: " << j.fault << " / " << i.fault;
        if (!calls_clock()) {
            EXPECT_EQ(j.r0, i.r0) << "jit vs interpreter r0";
        }
        EXPECT_EQ(j.used, i.used) << "jit vs interpreter instruction count";
        EXPECT_EQ(j.fault_pc, i.fault_pc);
        EXPECT_EQ(j.fault, i.fault);
        EXPECT_TRUE(j.mem == i.mem) << "jit vs interpreter memory";
        EXPECT_TRUE(j.state == i.state) << "jit vs interpreter state";
    }

  public:

  private:
    void init()
    {
        std::memset(&p_, 0, sizeof(p_));
        p_.insns = insns_.data();
        p_.ninsns = (uint32_t)insns_.size();
        if (!rodata_.empty()) {
            p_.rodata = rodata_.data();
            p_.rodata_size = (uint32_t)rodata_.size();
        }
        prepare_rc_ = vm_prepare(&p_);
        /* Hand-built programs are trusted test vectors: compile them even
         * though they are not verified, so both engines run each one. */
        if (prepare_rc_ == 0 && vm_jit_available()) {
            p_.verified = true;
            EXPECT_EQ(vm_jit_compile(&p_), 0);
            p_.verified = false;
        }
    }
    std::vector<vm_insn> insns_;
    std::vector<uint8_t> rodata_;
    vm_prog p_;
    int prepare_rc_ = 0;
};

/* Runs code in both fast and checked mode; expects success and the same
 * r0 from both, and returns it. */
static inline uint64_t run_both(TestProg &p, void *mem = nullptr, uint64_t len = 0)
{
    uint64_t fast = 0xdead, checked = 0xbeef;
    std::vector<uint8_t> copy(static_cast<uint8_t *>(mem), static_cast<uint8_t *>(mem) + len);
    vm_env e1{}, e2{};
    int rc1 = p.run_raw(&fast, false, mem, len, &e1);
    EXPECT_EQ(rc1, 0) << e1.fault;
    int rc2 = p.run_raw(&checked, true, copy.data(), len, &e2);
    EXPECT_EQ(rc2, 0) << e2.fault;
    EXPECT_EQ(fast, checked);
    EXPECT_EQ(e1.used, e2.used);
    if (len) {
        EXPECT_EQ(0, std::memcmp(mem, copy.data(), len)) << "fast and checked memory differ";
    }
    return fast;
}

#endif

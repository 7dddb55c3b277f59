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

    /* Runs with r1 = mem, r2 = len. Returns the vm_run_raw() code. */
    int run_raw(uint64_t *r0, bool checked, void *mem = nullptr, uint64_t len = 0,
                vm_env *env = nullptr)
    {
        vm_env local{};
        vm_env *e = env ? env : &local;
        e->checked = checked;
        return vm_run_raw(&p_, mem, len, e, r0);
    }

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

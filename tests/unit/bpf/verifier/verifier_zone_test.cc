// Relations between scalars (bpf/verifier_zone.c, invariant 13):
// rec_pascal's shape by hand. s = o + len is checked against the output's
// size (s + 1 <= oend - out), k < len is tested, and out[o + k] is written:
// only the facts s = o + len and k - len <= -1 prove that store. Each near
// miss is one step off and must stay rejected.
#include <gtest/gtest.h>

#include "verify_util.h"

namespace {

struct Shape {
    int plus = 1;             // the check is o + len + plus <= oend - out
    unsigned kcmp = VM_JGE;   // leave when `k kcmp len` (JGE: k < len after it)
    int store_off = 0;        // out[o + k + store_off]
    bool signed_k = false;    // k is a sign-extended byte (may be negative)
    bool wide_o = false;      // o is any 64-bit value (o + len may wrap)
};

std::vector<vm_insn> program(const Shape &s)
{
    std::vector<vm_insn> p = {
        LDX(VM_DW, 2, 1, CTX_OUT), LDX(VM_DW, 3, 1, CTX_OUT_END),
        ALU64_REG(VM_SUB, 3, 2),                                  // r3 = oend - out
        LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 0xff),   // len
        LDX(VM_DW, 7, 1, CTX_ARG0 + 8),                           // o
    };
    if (!s.wide_o)
        p.push_back(ALU64_IMM(VM_AND, 7, 0xffff));
    if (s.signed_k)
        p.insert(p.end(), {LDX(VM_DW, 9, 1, CTX_ARG0 + 16),
                           MOVSX64(9, 9, 8)});                    // k in [-128, 127]
    else
        p.insert(p.end(), {LDX(VM_DW, 9, 1, CTX_ARG0 + 16), ALU64_IMM(VM_AND, 9, 0xff)});
    std::vector<vm_insn> rest = {
        MOV64_REG(8, 7), ALU64_REG(VM_ADD, 8, 6),                 // r8 = o + len
        MOV64_REG(4, 8), ALU64_IMM(VM_ADD, 4, s.plus),
        JMP_REG(VM_JSGT, 4, 3, 11),                               // s + plus > oend - out
        JMP_REG(s.signed_k ? VM_JSGE : s.kcmp, 9, 6, 10),          // leave unless k < len
        MOV64_REG(0, 7), ALU64_REG(VM_ADD, 0, 9),                 // r0 = o + k
        ALU64_IMM(VM_ADD, 0, s.store_off),
        MOV64_REG(5, 2), ALU64_REG(VM_ADD, 5, 0), ST(VM_B, 5, 0, 0),   // out[o + k]
        MOV64_REG(5, 2), ALU64_REG(VM_ADD, 5, 8), ST(VM_B, 5, 0, 0),   // out[o + len]
        JMP_IMM(VM_JGT, 6, 200, 0),                               // len is used after
        MOV64_IMM(0, 0), EXIT(),
    };
    p.insert(p.end(), rest.begin(), rest.end());
    return p;
}

TEST(VerifierZone, SumAndDifferenceProveTheIndex)
{
    Verdict v = run_verifier(program(Shape{}));
    EXPECT_EQ(v.rc, 0) << v.msg;
}

TEST(VerifierZone, TheBoundIsTight)
{
    Shape s;
    s.store_off = 1;   // out[o + k + 1] <= out[o + len]: the last byte checked
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, 0) << v.msg;
}

TEST(VerifierZone, NearMissLeInsteadOfLt)
{
    Shape s;
    s.kcmp = VM_JGT;   // k <= len: out[o + k + 1] is one past at k = len
    s.store_off = 1;
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, -EACCES);
}

TEST(VerifierZone, NearMissMissingPlusOne)
{
    Shape s;
    s.plus = 0;   // o + len <= size: out[o + len] (the second store) is one past
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, -EACCES);
}

TEST(VerifierZone, NearMissOneFurther)
{
    Shape s;
    s.store_off = 2;   // out[o + k + 2] with k <= len - 1: one past at k = len - 1
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, -EACCES);
}

TEST(VerifierZone, NearMissSignedIndex)
{
    Shape s;
    s.signed_k = true;   // k = -1 writes out[o - 1]
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, -EACCES);
}

TEST(VerifierZone, NearMissUnboundedBase)
{
    Shape s;
    s.wide_o = true;   // o + len may wrap
    Verdict v = run_verifier(program(s));
    EXPECT_EQ(v.rc, -EACCES);
}

// A new member of a sum's group has the group's range, not the range of
// its terms' interval sum (clang -O1's str_reverse_lines: `len + start`
// computed again beside the `i` it equals, which the loop bounds). s = x +
// y is bounded by `s <= lim`, 11 bytes of out are checked, and out[x + y]
// is written: x and y alone are [0, 255].
std::vector<vm_insn> new_member(int lim)
{
    return {
        LDX(VM_DW, 2, 1, CTX_OUT), LDX(VM_DW, 3, 1, CTX_OUT_END),
        LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 0xff),       // x
        LDX(VM_DW, 7, 1, CTX_ARG0 + 8), ALU64_IMM(VM_AND, 7, 0xff),   // y
        MOV64_REG(8, 6), ALU64_REG(VM_ADD, 8, 7),                     // s = x + y
        MOV64_REG(9, 8),                                              // (a fact now)
        JMP_IMM(VM_JGT, 9, lim, 8),                                   // s <= lim
        MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 11),
        JMP_REG(VM_JGT, 4, 3, 5),                                     // 11 bytes of out
        MOV64_REG(0, 6), ALU64_REG(VM_ADD, 0, 7),                     // x + y again
        MOV64_REG(5, 2), ALU64_REG(VM_ADD, 5, 0), ST(VM_B, 5, 0, 0),   // out[x + y]
        JMP_IMM(VM_JGT, 8, 200, 0),                                   // s is used after
        MOV64_IMM(0, 0), EXIT(),
    };
}

TEST(VerifierZone, NewMemberOfASumHasTheGroupsRange)
{
    Verdict v = run_verifier(new_member(10));
    EXPECT_EQ(v.rc, 0) << v.msg;
}

TEST(VerifierZone, NearMissNewMemberOneFurther)
{
    Verdict v = run_verifier(new_member(11));   // out[11] is past the 11 bytes
    EXPECT_EQ(v.rc, -EACCES);
}

// A term of a sum gets the sum's distance bounds: x = s - z - k <= s -
// min(z) - k (after the loop head's join has dropped x's own loosening
// bound, -O1's str_reverse_lines). s = x + z + plus <= oend - out is
// checked, then out[x] is written; z is [0, 255], or [-128, 127].
std::vector<vm_insn> term_dist(int plus, bool signed_z)
{
    std::vector<vm_insn> p = {
        LDX(VM_DW, 2, 1, CTX_OUT), LDX(VM_DW, 3, 1, CTX_OUT_END),
        ALU64_REG(VM_SUB, 3, 2),                                      // r3 = oend - out
    };
    p.push_back(LDX(VM_DW, 6, 1, CTX_ARG0));
    if (signed_z)
        p.push_back(MOVSX64(6, 6, 8));                                // z in [-128, 127]
    else
        p.push_back(ALU64_IMM(VM_AND, 6, 0xff));                      // z in [0, 255]
    std::vector<vm_insn> rest = {
        LDX(VM_DW, 7, 1, CTX_ARG0 + 8), ALU64_IMM(VM_AND, 7, 0xffff),   // x
        MOV64_REG(8, 7), ALU64_REG(VM_ADD, 8, 6),                     // s = x + z
        MOV64_REG(9, 8),                                              // (a fact now)
        MOV64_REG(4, 8), ALU64_IMM(VM_ADD, 4, plus),
        JMP_REG(VM_JSGT, 4, 3, 5),                                    // s + plus > oend - out
        MOV64_REG(5, 2), ALU64_REG(VM_ADD, 5, 7), ST(VM_B, 5, 0, 0),   // out[x]
        JMP_IMM(VM_JGT, 8, 200, 0), JMP_IMM(VM_JGT, 6, 200, 0),       // s, z used after
        MOV64_IMM(0, 0), EXIT(),
    };
    p.insert(p.end(), rest.begin(), rest.end());
    return p;
}

TEST(VerifierZone, TermGetsTheSumsDistance)
{
    Verdict v = run_verifier(term_dist(1, false));
    EXPECT_EQ(v.rc, 0) << v.msg;
}

TEST(VerifierZone, NearMissTermWithoutRoom)
{
    Verdict v = run_verifier(term_dist(0, false));   // z = 0: out[x] = out[oend - out]
    EXPECT_EQ(v.rc, -EACCES);
}

TEST(VerifierZone, NearMissTermBesideANegativeOne)
{
    Verdict v = run_verifier(term_dist(1, true));   // z = -1: x = s + 1
    EXPECT_EQ(v.rc, -EACCES);
}

}  // namespace

// Soundness of the verifier's abstract scalar domain (bpf/vscalar.c): for
// random abstract values and concrete members of them, the concrete result
// of every ALU operation (RFC 9669 semantics, computed here independently)
// must be a member of the abstract result, and branch refinement must keep
// every pair of members for which the condition holds.
#include <gtest/gtest.h>

#include <random>
#include <vector>

extern "C" {
#include "bpf/insn.h"
#include "bpf/tnum.h"
#include "bpf/vscalar.h"
}

namespace {

std::mt19937_64 rng(12345);

uint64_t rnd()
{
    return rng();
}

// Interesting 64-bit values: small, near the sign boundaries, random.
uint64_t interesting()
{
    static const uint64_t edges[] = {0, 1, 2, 7, 8, 31, 32, 63, 64, 255, 4095, 4096,
                                     0x7fffffffull, 0x80000000ull, 0xffffffffull,
                                     0x100000000ull, 0x7fffffffffffffffull,
                                     0x8000000000000000ull, ~0ull, ~0ull - 1};
    switch (rnd() % 4) {
    case 0: return edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
    case 1: return rnd() % 300;
    case 2: return (uint64_t)-(int64_t)(rnd() % 300);
    default: return rnd() >> (rnd() % 64);
    }
}

vm_scalar random_scalar()
{
    uint64_t a = interesting(), b = interesting();
    switch (rnd() % 6) {
    case 0: return vs_const(a);
    case 1: return vs_urange(std::min(a, b), std::max(a, b));
    case 2: return vs_srange(std::min((int64_t)a, (int64_t)b), std::max((int64_t)a, (int64_t)b));
    case 3: {
        vm_scalar s = vs_unknown();
        uint64_t mask = rnd() & rnd();
        s.t = vm_tnum{a & ~mask, mask};
        vs_sync(&s);
        return s;
    }
    case 4: {
        uint64_t lo = a % 5000;
        return vs_urange(lo, lo + b % 5000);
    }
    default: return vs_unknown();
    }
}

std::vector<uint64_t> members(const vm_scalar &s)
{
    std::vector<uint64_t> out;
    uint64_t cand[] = {s.umin, s.umax, (uint64_t)s.smin, (uint64_t)s.smax, s.t.value,
                       s.t.value | s.t.mask, s.umin + 1, s.umax - 1};
    for (uint64_t c : cand)
        if (vs_contains(&s, c))
            out.push_back(c);
    for (int k = 0; k < 40; k++) {
        uint64_t c = (rnd() & s.t.mask) | s.t.value;
        if (s.umax > s.umin && k % 2)
            c = s.umax - s.umin == ~0ull ? rnd() : s.umin + rnd() % (s.umax - s.umin + 1);
        if (vs_contains(&s, c))
            out.push_back(c);
    }
    return out;
}

uint64_t alu_ref(unsigned op, bool is64, bool sgn, uint64_t a, uint64_t b)
{
    if (!is64) {
        uint32_t x = (uint32_t)a, y = (uint32_t)b, r;
        switch (op) {
        case VM_ADD: r = x + y; break;
        case VM_SUB: r = x - y; break;
        case VM_MUL: r = x * y; break;
        case VM_DIV:
            if (sgn)
                r = y == 0 ? 0 : (int32_t)y == -1 ? 0u - x : (uint32_t)((int32_t)x / (int32_t)y);
            else
                r = y ? x / y : 0;
            break;
        case VM_MOD:
            if (sgn)
                r = y == 0 ? x : (int32_t)y == -1 ? 0 : (uint32_t)((int32_t)x % (int32_t)y);
            else
                r = y ? x % y : x;
            break;
        case VM_OR: r = x | y; break;
        case VM_AND: r = x & y; break;
        case VM_XOR: r = x ^ y; break;
        case VM_LSH: r = x << (y & 31); break;
        case VM_RSH: r = x >> (y & 31); break;
        default: r = (uint32_t)((int32_t)x >> (y & 31)); break;
        }
        return r;
    }
    switch (op) {
    case VM_ADD: return a + b;
    case VM_SUB: return a - b;
    case VM_MUL: return a * b;
    case VM_DIV:
        if (sgn)
            return b == 0 ? 0 : (int64_t)b == -1 ? 0 - a : (uint64_t)((int64_t)a / (int64_t)b);
        return b ? a / b : 0;
    case VM_MOD:
        if (sgn)
            return b == 0 ? a : (int64_t)b == -1 ? 0 : (uint64_t)((int64_t)a % (int64_t)b);
        return b ? a % b : a;
    case VM_OR: return a | b;
    case VM_AND: return a & b;
    case VM_XOR: return a ^ b;
    case VM_LSH: return a << (b & 63);
    case VM_RSH: return a >> (b & 63);
    default: return (uint64_t)((int64_t)a >> (b & 63));
    }
}

bool cond_ref(unsigned op, bool is64, uint64_t a, uint64_t b)
{
    if (!is64) {
        a = (uint32_t)a;
        b = (uint32_t)b;
    }
    int64_t sa = is64 ? (int64_t)a : (int32_t)a, sb = is64 ? (int64_t)b : (int32_t)b;
    switch (op) {
    case VM_JEQ: return a == b;
    case VM_JNE: return a != b;
    case VM_JGT: return a > b;
    case VM_JGE: return a >= b;
    case VM_JLT: return a < b;
    case VM_JLE: return a <= b;
    case VM_JSGT: return sa > sb;
    case VM_JSGE: return sa >= sb;
    case VM_JSLT: return sa < sb;
    case VM_JSLE: return sa <= sb;
    default: return (a & b) != 0;
    }
}

std::string show(const vm_scalar &s)
{
    char buf[256];
    vs_format(&s, buf, sizeof(buf));
    char t[80];
    tn_format(s.t, t, sizeof(t));
    return std::string(buf) + " t=" + t + " u32=[" + std::to_string(s.u32min) + "," +
           std::to_string(s.u32max) + "] s32=[" + std::to_string(s.s32min) + "," +
           std::to_string(s.s32max) + "]";
}

// Random abstract values per property; each checks every pair of up to
// ~50 members of its operands.
const int kIters = 6000;

const unsigned kOps[] = {VM_ADD, VM_SUB, VM_MUL, VM_DIV, VM_OR,  VM_AND,
                         VM_LSH, VM_RSH, VM_MOD, VM_XOR, VM_ARSH};

} // namespace

TEST(VScalar, ConstantsAndRanges)
{
    vm_scalar c = vs_const(42);
    EXPECT_TRUE(vs_is_const(&c));
    EXPECT_TRUE(vs_contains(&c, 42));
    EXPECT_FALSE(vs_contains(&c, 43));
    vm_scalar r = vs_urange(10, 20);
    EXPECT_TRUE(vs_contains(&r, 10));
    EXPECT_TRUE(vs_contains(&r, 20));
    EXPECT_FALSE(vs_contains(&r, 21));
    EXPECT_EQ(r.smin, 10);
    EXPECT_EQ(r.u32max, 20u);
    vm_scalar u = vs_unknown();
    EXPECT_TRUE(vs_subset(&u, &r));
    EXPECT_FALSE(vs_subset(&r, &u));
}

TEST(VScalar, AluIsSound)
{
    for (int iter = 0; iter < kIters; iter++) {
        vm_scalar a = random_scalar(), b = random_scalar();
        unsigned op = kOps[rnd() % (sizeof(kOps) / sizeof(kOps[0]))];
        bool is64 = rnd() % 2, sgn = (op == VM_DIV || op == VM_MOD) && rnd() % 2;
        vm_scalar r = a;
        vs_alu(&r, &b, op, is64, sgn);
        for (uint64_t x : members(a))
            for (uint64_t y : members(b)) {
                uint64_t z = alu_ref(op, is64, sgn, x, y);
                ASSERT_TRUE(vs_contains(&r, z))
                    << "op " << op << (is64 ? " 64" : " 32") << (sgn ? " signed" : "")
                    << " x=" << x << " y=" << y << " z=" << z << "\n a=" << show(a)
                    << "\n b=" << show(b) << "\n r=" << show(r);
            }
    }
}

TEST(VScalar, UnaryIsSound)
{
    for (int iter = 0; iter < kIters; iter++) {
        vm_scalar a = random_scalar();
        unsigned kind = rnd() % 5, bits = 8u << (rnd() % 4);
        vm_scalar r = a;
        switch (kind) {
        case 0: vs_neg(&r, bits == 64); break;
        case 1: vs_trunc(&r, bits / 8); break;
        case 2: vs_sext(&r, bits); break;
        default: bits = bits == 8 ? 16 : bits; vs_bswap(&r, bits); break;
        }
        for (uint64_t x : members(a)) {
            uint64_t z;
            uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1;
            switch (kind) {
            case 0: z = bits == 64 ? 0 - x : (uint32_t)(0 - (uint32_t)x); break;
            case 1: z = x & m; break;
            case 2: z = bits == 64 ? x : (uint64_t)((int64_t)(x << (64 - bits)) >> (64 - bits)); break;
            default:
                z = bits == 16 ? __builtin_bswap16((uint16_t)x)
                    : bits == 32 ? __builtin_bswap32((uint32_t)x) : __builtin_bswap64(x);
                break;
            }
            ASSERT_TRUE(vs_contains(&r, z)) << "kind " << kind << " bits " << bits << " x=" << x
                                            << "\n a=" << show(a) << "\n r=" << show(r);
        }
    }
}

TEST(VScalar, RefineIsSound)
{
    const unsigned ops[] = {VM_JEQ, VM_JNE, VM_JGT, VM_JGE, VM_JLT, VM_JLE,
                            VM_JSGT, VM_JSGE, VM_JSLT, VM_JSLE, VM_JSET};
    for (int iter = 0; iter < kIters; iter++) {
        vm_scalar a = random_scalar(), b = rnd() % 3 ? random_scalar() : vs_const(interesting());
        unsigned op = ops[rnd() % 11];
        bool is64 = rnd() % 2;
        for (int taken = 0; taken < 2; taken++) {
            vm_scalar ra = a, rb = b;
            bool ok = vs_refine(&ra, &rb, op, is64, taken);
            for (uint64_t x : members(a))
                for (uint64_t y : members(b)) {
                    if (cond_ref(op, is64, x, y) != (bool)taken)
                        continue;
                    ASSERT_TRUE(ok) << "op " << op << " taken " << taken << " x=" << x
                                    << " y=" << y << "\n a=" << show(a) << "\n b=" << show(b);
                    ASSERT_TRUE(vs_contains(&ra, x) && vs_contains(&rb, y))
                        << "op " << op << (is64 ? " 64" : " 32") << " taken " << taken
                        << " x=" << x << " y=" << y << "\n a=" << show(a) << "\n b=" << show(b)
                        << "\n ra=" << show(ra) << "\n rb=" << show(rb);
                }
        }
    }
}

TEST(VScalar, RefineDecidesConstants)
{
    vm_scalar a = vs_const(5), b = vs_const(7);
    EXPECT_FALSE(vs_refine(&a, &b, VM_JGT, true, true));   // 5 > 7 is impossible
    a = vs_const(5), b = vs_const(7);
    EXPECT_TRUE(vs_refine(&a, &b, VM_JGT, true, false));
    vm_scalar i = vs_urange(0, 4096), lim = vs_const(4096);
    ASSERT_TRUE(vs_refine(&i, &lim, VM_JLT, true, true));
    EXPECT_EQ(i.umax, 4095u);
    vm_scalar j = vs_urange(0, 100), k = vs_const(0);
    ASSERT_TRUE(vs_refine(&j, &k, VM_JNE, true, true));
    EXPECT_EQ(j.umin, 1u);
    vm_scalar w = vs_unknown(), c = vs_const(10);   // JMP32: w32 < 10 unsigned
    ASSERT_TRUE(vs_refine(&w, &c, VM_JLT, false, true));
    EXPECT_EQ(w.u32max, 9u);
}

TEST(VScalar, DivisionByZeroIsDefined)
{
    vm_scalar a = vs_const(100), z = vs_const(0);
    vs_alu(&a, &z, VM_DIV, true, false);
    EXPECT_TRUE(vs_is_const(&a));
    EXPECT_EQ(a.t.value, 0u);
    vm_scalar m = vs_const(100);
    z = vs_const(0);
    vs_alu(&m, &z, VM_MOD, true, false);
    EXPECT_EQ(m.t.value, 100u);
    vm_scalar s = vs_const(0x8000000000000000ull), neg1 = vs_const(~0ull);
    vs_alu(&s, &neg1, VM_DIV, true, true);   // INT64_MIN / -1 wraps
    EXPECT_EQ(s.t.value, 0x8000000000000000ull);
}

TEST(VScalar, ShiftAmountsAreMasked)
{
    vm_scalar a = vs_const(1), k = vs_const(65);
    vs_alu(&a, &k, VM_LSH, true, false);
    EXPECT_EQ(a.t.value, 2u);
    vm_scalar b = vs_const(1), k32 = vs_const(33);
    vs_alu(&b, &k32, VM_LSH, false, false);
    EXPECT_EQ(b.t.value, 2u);
}

TEST(VScalar, Alu32ZeroExtends)
{
    vm_scalar a = vs_const(0xffffffffffffffffull), one = vs_const(1);
    vs_alu(&a, &one, VM_ADD, false, false);
    EXPECT_TRUE(vs_is_const(&a));
    EXPECT_EQ(a.t.value, 0u);
    vm_scalar b = vs_unknown();
    vs_alu(&b, &one, VM_AND, false, false);
    EXPECT_EQ(b.umax, 1u);
}

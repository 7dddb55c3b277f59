// Tables of pointers in read-only data (R_BPF_64_ABS64 in .rel.rodata*,
// docs/BPF.md "What the loader accepts"): the loader brings the target
// sections along, writes each slot's target address into the program's
// final image and records the object it points into (prog.h invariant 5);
// relocations it cannot honour are refused with one line. The verifier's
// side (verifier_int.h invariant 14) is checked on the same objects: a
// whole entry loaded is a pointer into its object and nothing else, no
// other access to the entry's bytes passes. tests/bpf/loader/ptr_table.c
// then runs in the checked interpreter, the fast one and the JIT.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "elf_builder.h"
#include "prog_check.h"

extern "C" {
#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
}

namespace {

using Buf = std::vector<uint8_t>;

struct Loaded {
    int rc = 0;
    std::string err;
    vm_object *obj = nullptr;
    explicit Loaded(const Buf &b)
    {
        char e[512] = "";
        rc = vm_object_load(b.data(), b.size(), nullptr, &obj, e, sizeof(e));
        err = e;
    }
    ~Loaded() { vm_object_free(obj); }
    vm_prog *prog() { return vm_object_find(obj, nullptr); }
};

vm_insn LDX(uint8_t size, uint8_t dst, uint8_t src, int16_t off)
{
    return I(VM_CLS_LDX | VM_MEM | size, dst, src, off);
}

Buf le64(uint64_t a, uint64_t b)
{
    Buf d(16);
    le64_put(&d[0], a);
    le64_put(&d[8], b);
    return d;
}

// .rodata: two entries (slots 0 and 8, implicit addends 0 and 4) into
// .rodata.str1.1 = "GET\0POST\0"; cisc: `r1 = .rodata ll` then `code`.
// Sections: cisc 1, .rodata 2, .rodata.str1.1 3; symbols: prog 1, the
// string section 2.
struct Table {
    ElfBuilder b;
    uint32_t cisc, ro, str, strsym;
    explicit Table(std::vector<vm_insn> code, Buf rodata = le64(0, 4),
                   std::vector<vm_insn> pre = {})
    {
        code.insert(code.begin(), {LD_IMM64_LO(1, 0), LD_IMM64_HI(0)});
        code.insert(code.begin(), pre.begin(), pre.end());
        cisc = b.code("cisc", code);
        ro = b.rodata(".rodata", std::move(rodata));
        str = b.section(".rodata.str1.1", VM_ELF_SHT_PROGBITS,
                        VM_ELF_SHF_ALLOC | VM_ELF_SHF_MERGE | VM_ELF_SHF_STRINGS,
                        {'G', 'E', 'T', 0, 'P', 'O', 'S', 'T', 0});
        b.secs_.back().entsize = 1;
        b.func("prog", cisc, 0, (uint32_t)code.size());
        strsym = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)str, 0, 0);
        uint32_t rosym = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
        b.reloc(cisc, pre.size(), VM_R_BPF_64_64, rosym);
    }
    Table &entries()
    {
        b.reloc_at(ro, 0, VM_R_BPF_64_ABS64, strsym);
        b.reloc_at(ro, 8, VM_R_BPF_64_ABS64, strsym);
        return *this;
    }
};

void refused(const Buf &b, int rc, const char *fragment)
{
    Loaded l(b);
    EXPECT_EQ(l.rc, rc) << l.err;
    EXPECT_NE(l.err.find(fragment), std::string::npos) << "message: " << l.err;
    EXPECT_EQ(l.err.find('\n'), std::string::npos) << "not one line: " << l.err;
    EXPECT_EQ(l.obj, nullptr);
}

TEST(RodataPtr, EntriesHoldTheirStringsAddresses)
{
    Loaded l(Table({MOV64_IMM(0, 0), EXIT()}).entries().b.build());
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = l.prog();
    EXPECT_EQ(vm_test_prog_check(p), nullptr);
    ASSERT_EQ(p->rodata_size, 16u + 9u);   // the strings came along, 8-aligned
    ASSERT_EQ(p->nrptrs, 2u);
    // "GET" and "POST": each its bytes and its NUL
    EXPECT_EQ(p->rptrs[0].slot, 0u);
    EXPECT_EQ(p->rptrs[0].target, 16u);
    EXPECT_EQ(p->rptrs[0].lo, 16u);
    EXPECT_EQ(p->rptrs[0].hi, 20u);
    EXPECT_EQ(p->rptrs[1].slot, 8u);
    EXPECT_EQ(p->rptrs[1].target, 20u);
    EXPECT_EQ(p->rptrs[1].hi, 25u);
    const char *s0, *s1;
    memcpy(&s0, p->rodata, 8);
    memcpy(&s1, p->rodata + 8, 8);
    EXPECT_EQ(s0, reinterpret_cast<const char *>(p->rodata) + 16);
    EXPECT_STREQ(s0, "GET");
    EXPECT_STREQ(s1, "POST");
}

TEST(RodataPtr, TargetInsideASymbolGetsTheSymbol)
{
    // .rodata: one entry at 0 pointing at .rodata+12, inside `arr` [8, 24)
    ElfBuilder b;
    uint32_t cisc = b.code("cisc", {LD_IMM64_LO(1, 0), LD_IMM64_HI(0), MOV64_IMM(0, 0), EXIT()});
    Buf ro(24, 0);
    le64_put(&ro[0], 12);
    uint32_t rs = b.rodata(".rodata", ro);
    b.func("prog", cisc, 0, 4);
    uint32_t sec = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)rs, 0, 0);
    b.symbol("arr", VM_ELF_STB_LOCAL, VM_ELF_STT_OBJECT, (uint16_t)rs, 8, 16);
    // a symbol running past the section's end (a damaged object) is no object
    b.symbol("big", VM_ELF_STB_LOCAL, VM_ELF_STT_OBJECT, (uint16_t)rs, 10, 15);   // to 25
    b.reloc(cisc, 0, VM_R_BPF_64_64, sec);
    b.reloc_at(rs, 0, VM_R_BPF_64_ABS64, sec);
    Loaded l(b.build());
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = l.prog();
    EXPECT_EQ(vm_test_prog_check(p), nullptr);
    ASSERT_EQ(p->nrptrs, 1u);
    EXPECT_EQ(p->rptrs[0].target, 12u);
    EXPECT_EQ(p->rptrs[0].lo, 8u);
    EXPECT_EQ(p->rptrs[0].hi, 24u);
}

TEST(RodataPtr, AStringIsSearchedForItsNulUpTo4KiB)
{
    // one entry into a 5000-byte string section without a NUL
    ElfBuilder b;
    uint32_t cisc = b.code("cisc", {LD_IMM64_LO(1, 0), LD_IMM64_HI(0), MOV64_IMM(0, 0), EXIT()});
    uint32_t ro = b.rodata(".rodata", Buf(8, 0));
    uint32_t str = b.section(".rodata.str1.1", VM_ELF_SHT_PROGBITS,
                             VM_ELF_SHF_ALLOC | VM_ELF_SHF_MERGE | VM_ELF_SHF_STRINGS,
                             Buf(5000, 'x'));
    b.secs_.back().entsize = 1;
    b.func("prog", cisc, 0, 4);
    uint32_t rosym = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
    uint32_t strsym = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)str, 0, 0);
    b.reloc(cisc, 0, VM_R_BPF_64_64, rosym);
    b.reloc_at(ro, 0, VM_R_BPF_64_ABS64, strsym);
    Loaded l(b.build());
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = l.prog();
    EXPECT_EQ(vm_test_prog_check(p), nullptr);
    ASSERT_EQ(p->nrptrs, 1u);
    EXPECT_EQ(p->rptrs[0].lo, 8u);
    EXPECT_EQ(p->rptrs[0].hi, 8u + 4096u);   // the first 4 KiB: a smaller object, still safe
}

TEST(RodataPtr, RefusesWhatItCannotHonour)
{
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.b.reloc_at(t.ro, 4, VM_R_BPF_64_ABS64, t.strsym);
        refused(t.b.build(), -EINVAL, "not 8-byte aligned");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.b.reloc_at(t.ro, 16, VM_R_BPF_64_ABS64, t.strsym);
        refused(t.b.build(), -EINVAL, "outside section .rodata");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()}, le64(0, 10));   // "POST\0" ends at 9
        t.entries();
        refused(t.b.build(), -EINVAL, "'.rodata.str1.1'+10 is outside section");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.b.reloc_at(t.ro, 0, VM_R_BPF_64_ABS32, t.strsym);
        refused(t.b.build(), -EOPNOTSUPP, "32-bit address");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.b.reloc_at(t.ro, 0, VM_R_BPF_64_64, t.strsym);
        refused(t.b.build(), -EINVAL, "relocation type 1 in read-only data");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.entries();
        t.b.reloc_at(t.ro, 8, VM_R_BPF_64_ABS64, t.strsym);
        refused(t.b.build(), -EINVAL, "two relocations");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        uint32_t ext = t.b.symbol("ext", VM_ELF_STB_GLOBAL, VM_ELF_STT_NOTYPE, 0, 0, 0);
        t.b.reloc_at(t.ro, 0, VM_R_BPF_64_ABS64, ext);
        refused(t.b.build(), -EOPNOTSUPP, "extern variable 'ext'");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        uint32_t data = t.b.section(".data", VM_ELF_SHT_PROGBITS,
                                    VM_ELF_SHF_ALLOC | VM_ELF_SHF_WRITE, Buf(8, 0));
        uint32_t ds = t.b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)data, 0, 0);
        t.b.reloc_at(t.ro, 0, VM_R_BPF_64_ABS64, ds);
        refused(t.b.build(), -EOPNOTSUPP, "writable global");
    }
    {
        Table t({MOV64_IMM(0, 0), EXIT()});
        t.b.reloc_at(t.ro, 0, VM_R_BPF_64_ABS64, 1);   // symbol 1: the function prog
        refused(t.b.build(), -EOPNOTSUPP, "address of function 'prog'");
    }
}

TEST(RodataPtr, UnreferencedTablesAreNotCopied)
{
    ElfBuilder b;
    uint32_t cisc = b.code("cisc", {MOV64_IMM(0, 0), EXIT()});
    uint32_t ro = b.rodata(".rodata", Buf(8, 0));
    b.func("prog", cisc, 0, 2);
    uint32_t sec = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
    b.reloc_at(ro, 0, VM_R_BPF_64_ABS64, sec);
    Loaded l(b.build());
    ASSERT_EQ(l.rc, 0) << l.err;
    EXPECT_EQ(l.prog()->rodata_size, 0u);
    EXPECT_EQ(l.prog()->nrptrs, 0u);
}

// The verifier on programs reading a table: r1 = .rodata, then code.
struct Verdict {
    int rc;
    std::string msg;
};

Verdict verify(std::vector<vm_insn> code, bool entries = true)
{
    Table t(std::move(code));
    if (entries)
        t.entries();
    Loaded l(t.b.build());
    EXPECT_EQ(l.rc, 0) << l.err;
    if (l.rc)
        return {l.rc, l.err};
    vm_verify_result res;
    int rc = vm_verify(l.prog(), nullptr, &res);
    return {rc, res.msg};
}

TEST(RodataPtr, AWholeEntryIsAPointerIntoItsString)
{
    // r1 = entry 1 ("POST"); r0 = r1[4] (its NUL)
    Verdict v = verify({LDX(VM_DW, 1, 1, 8), LDX(VM_B, 0, 1, 4), EXIT()});
    EXPECT_EQ(v.rc, 0) << v.msg;
    // without the relocations the entry is a number: no access through it
    v = verify({LDX(VM_DW, 1, 1, 8), LDX(VM_B, 0, 1, 4), EXIT()}, false);
    EXPECT_EQ(v.rc, -EACCES);
    EXPECT_NE(v.msg.find("is a scalar, not a pointer"), std::string::npos) << v.msg;
}

TEST(RodataPtr, NearMissesAreRejected)
{
    struct Case {
        const char *name;
        std::vector<vm_insn> code;
        const char *fragment;
    } cases[] = {
        {"past the NUL", {LDX(VM_DW, 1, 1, 0), LDX(VM_B, 0, 1, 4), EXIT()},
         "bytes [20, 21) are outside it"},
        {"before the string", {LDX(VM_DW, 1, 1, 8), LDX(VM_B, 0, 1, -1), EXIT()},
         "bytes [19, 20) are outside it"},
        {"a word across the NUL", {LDX(VM_DW, 1, 1, 0), LDX(VM_W, 0, 1, 1), EXIT()},
         "bytes [17, 21) are outside it"},
        {"part of an entry", {LDX(VM_W, 0, 1, 8), EXIT()}, "part of the pointer stored"},
        {"a byte of an entry", {LDX(VM_B, 0, 1, 15), EXIT()}, "part of the pointer stored"},
        {"an entry misaligned", {LDX(VM_DW, 0, 1, 4), EXIT()}, "part of the pointer stored"},
        {"the entry as the result", {LDX(VM_DW, 0, 1, 0), EXIT()}, "pointer"},
        {"writing the string",
         {LDX(VM_DW, 1, 1, 0), I(VM_CLS_ST | VM_MEM | VM_B, 1, 0, 0, 1), MOV64_IMM(0, 0), EXIT()},
         "cannot be written"},
        // cisc_crc32c(0, table, 16): the helper would read the addresses
        {"a helper reading entries",
         {I(VM_CLS_ALU64 | VM_MOV | VM_X, 2, 1), MOV64_IMM(1, 0), MOV64_IMM(3, 16),
          CALL_HELPER(1), EXIT()},
         "the helper may read the pointer stored at rodata+0"},
    };
    for (const Case &c : cases) {
        Verdict v = verify(c.code);
        EXPECT_EQ(v.rc, -EACCES) << c.name << ": " << v.msg;
        EXPECT_NE(v.msg.find(c.fragment), std::string::npos) << c.name << ": " << v.msg;
    }
}

// clang's bit test of a constant (`r2 = 3; r2 >>= x; r2 &= 1; if r2 != 0`)
// splits the state per value of x; here x = arg0 & 7 and values 0 and 1
// leave, x >= 3 then reads past the image (x = 2 reads the strings). The
// shift is a pruning point (the fall-through of a jump): the paths of the
// other values must not be pruned by the state stored there before the
// split, which covers them.
TEST(RodataPtr, BitTestSplitExploresEveryValue)
{
    const std::vector<vm_insn> pre = {LDX(VM_DW, 6, 1, 64),
                                      I(VM_CLS_ALU64 | VM_AND | VM_K, 6, 0, 0, 7)};
    auto prog = [](int32_t mask, int32_t leave_below) {
        return std::vector<vm_insn>{
            MOV64_IMM(2, mask),
            I(VM_CLS_JMP | VM_JEQ | VM_K, 6, 0, 0, 100),   // makes the shift a pruning point
            I(VM_CLS_ALU64 | VM_RSH | VM_X, 2, 6), I(VM_CLS_ALU64 | VM_AND | VM_K, 2, 0, 0, 1),
            I(VM_CLS_JMP | VM_JNE | VM_K, 2, 0, 6, 0),
            I(VM_CLS_JMP | VM_JLT | VM_K, 6, 0, 5, leave_below),
            I(VM_CLS_ALU64 | VM_LSH | VM_K, 6, 0, 0, 3), I(VM_CLS_ALU64 | VM_ADD | VM_X, 1, 6),
            LDX(VM_DW, 0, 1, 0), MOV64_IMM(0, 0), EXIT(),
            MOV64_IMM(0, 0), EXIT()};
    };
    for (int32_t mask : {3, 0xfb}) {   // leave on 0, 1 / on all but 2
        Table t(prog(mask, 0), le64(0, 4), pre);
        Loaded l(t.entries().b.build());
        ASSERT_EQ(l.rc, 0) << l.err;
        vm_verify_result res;
        int rc = vm_verify(l.prog(), nullptr, &res);
        if (mask == 3) {
            EXPECT_EQ(rc, -EACCES) << res.msg;
            EXPECT_NE(std::string(res.msg).find("outside [0, 25)"), std::string::npos) << res.msg;
        } else {
            EXPECT_EQ(rc, 0) << res.msg;   // only x = 2 goes on: rodata+16, 8 bytes
        }
    }
}

TEST(RodataPtr, TamperedEntriesAreRefusedByTheVerifier)
{
    Table t({LDX(VM_DW, 1, 1, 8), LDX(VM_B, 0, 1, 0), EXIT()});
    Loaded l(t.entries().b.build());
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = l.prog();
    vm_verify_result res;
    p->rodata[8] ^= 1;   // the slot no longer holds its target's address
    EXPECT_EQ(vm_verify(p, nullptr, &res), -EINVAL);
    EXPECT_NE(std::string(res.msg).find("malformed"), std::string::npos) << res.msg;
    p->rodata[8] ^= 1;
    p->rptrs[1].hi = p->rodata_size + 1;   // an object past the image
    EXPECT_EQ(vm_verify(p, nullptr, &res), -EINVAL);
    p->rptrs[1].hi = 25;
    EXPECT_EQ(vm_verify(p, nullptr, &res), 0) << res.msg;
}

// tests/bpf/loader/ptr_table.c at every -O level in all three engines.
struct Result {
    int rc;
    uint64_t r0;
    std::string out;
};

Result run(vm_prog *p, const std::string &in, uint64_t a0, uint64_t a1, int engine)
{
    std::vector<uint8_t> data(in.begin(), in.end()), out(16, 0), state(VM_STATE_SIZE);
    data.push_back(0);
    vm_ctx ctx{};
    ctx.data = (uintptr_t)data.data();
    ctx.data_end = ctx.data + in.size();
    ctx.out = (uintptr_t)out.data();
    ctx.out_end = ctx.out + out.size();
    ctx.len = in.size();
    ctx.arg[0] = a0;
    ctx.arg[1] = a1;
    vm_env env{};
    env.checked = engine == 0;
    env.interp = engine == 1;
    env.state = state.data();
    Result r{0, 0, ""};
    r.rc = vm_run(p, &ctx, &env, &r.r0);
    EXPECT_EQ(r.rc, 0) << env.fault;
    r.out = reinterpret_cast<const char *>(out.data());
    return r;
}

TEST(RodataPtr, ClangTablesRunInEveryEngine)
{
    for (const char *opt : {"1", "2", "3"}) {
        std::string path = std::string(OBJS_DIR) + "/ptr_table.O" + opt + ".o";
        char err[512] = "";
        vm_object *obj = nullptr;
        ASSERT_EQ(vm_object_load_file(path.c_str(), nullptr, &obj, err, sizeof(err)), 0) << err;
        for (const char *name : {"http_method", "row_name"}) {
            vm_prog *p = vm_object_find(obj, name);
            ASSERT_NE(p, nullptr);
            EXPECT_EQ(vm_test_prog_check(p), nullptr);
            vm_verify_result res;
            ASSERT_EQ(vm_verify(p, nullptr, &res), 0) << name << " -O" << opt << ": " << res.msg;
            ASSERT_EQ(vm_prepare(p), 0);
            int jrc = vm_jit_compile(p);
            ASSERT_TRUE(jrc == 0 || (jrc == -ENOTSUP && !vm_jit_available()));
        }
        vm_prog *hm = vm_object_find(obj, "http_method"), *rn = vm_object_find(obj, "row_name");
        for (int engine = 0; engine < 3; engine++) {
            SCOPED_TRACE(std::string("-O") + opt + " engine " + std::to_string(engine));
            EXPECT_EQ((int32_t)run(hm, "GET / HTTP/1.1", 0, 0, engine).r0, 3);
            EXPECT_EQ((int32_t)run(hm, "POST /x", 0, 0, engine).r0, 4);
            EXPECT_EQ((int32_t)run(hm, "DELETE /x", 0, 0, engine).r0, 6);
            EXPECT_EQ((int32_t)run(hm, "OPTIONS *", 0, 0, engine).r0, 7);
            EXPECT_EQ((int32_t)run(hm, "PUT /x", 0, 0, engine).r0, -22);
            EXPECT_EQ((int32_t)run(hm, "GOT /", 0, 0, engine).r0, -22);
            EXPECT_EQ((int32_t)run(hm, "GET", 0, 0, engine).r0, -22);
            const char *names[2][2] = {{"two", "four"}, {"one", "three"}};
            for (uint64_t a = 0; a < 2; a++)
                for (uint64_t b = 0; b < 2; b++) {
                    Result r = run(rn, "", a, b, engine);
                    EXPECT_EQ(r.out, names[a][b]);
                    EXPECT_EQ(r.r0, strlen(names[a][b]));
                }
        }
        vm_object_free(obj);
    }
}

} // namespace

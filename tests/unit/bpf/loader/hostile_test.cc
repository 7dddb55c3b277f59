// Malformed and hostile objects: each one is refused with -errno and a
// one-line message naming the problem, never a crash; objects that load
// still keep every invariant of bpf/prog.h. Objects are built byte by byte
// (elf_builder.h) or derived from a real clang object by truncation and
// bit flips.
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "elf_builder.h"
#include "prog_check.h"

extern "C" {
#include "bpf/loader.h"
}

namespace {

using Buf = std::vector<uint8_t>;

struct Loaded {
    int rc = 0;
    std::string err;
    vm_object *obj = nullptr;
    ~Loaded() { vm_object_free(obj); }
};

void load(const Buf &b, Loaded &l, const vm_load_opts *opts = nullptr)
{
    char err[512] = "";
    l.rc = vm_object_load(b.data(), b.size(), opts, &l.obj, err, sizeof(err));
    l.err = err;
    if (l.rc == 0)
        for (unsigned i = 0; i < vm_object_nprogs(l.obj); i++) {
            const char *why = vm_test_prog_check(vm_object_prog(l.obj, i));
            EXPECT_EQ(why, nullptr) << why;
        }
}

// Expects b to be refused with rc and a message containing fragment.
void refused(const Buf &b, int rc, const char *fragment, const vm_load_opts *opts = nullptr)
{
    Loaded l;
    load(b, l, opts);
    EXPECT_EQ(l.rc, rc) << l.err;
    EXPECT_NE(l.err.find(fragment), std::string::npos) << "message: " << l.err;
    EXPECT_EQ(l.err.find('\n'), std::string::npos) << "not one line: " << l.err;
    EXPECT_EQ(l.obj, nullptr);
}

// .text: helper (2 insns); cisc: prog calls helper through a relocation;
// .rodata: 8 bytes. Section indices: .text 1, cisc 2, .rodata 3.
ElfBuilder base()
{
    ElfBuilder b;
    uint32_t text = b.code(".text", {MOV64_IMM(0, 7), EXIT()});
    uint32_t cisc = b.code("cisc", {CALL_LOCAL(-1), EXIT()});
    b.rodata(".rodata", {1, 2, 3, 4, 5, 6, 7, 8});
    uint32_t f = b.func("helper", text, 0, 2);
    b.func("prog", cisc, 0, 2);
    b.reloc(cisc, 0, VM_R_BPF_64_32, f);
    return b;
}

TEST(Hostile, BaseObjectLoadsAndLinks)
{
    Loaded l;
    load(base().build(), l);
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = vm_object_find(l.obj, nullptr);
    ASSERT_NE(p, nullptr);
    EXPECT_STREQ(p->name, "prog");
    EXPECT_STREQ(p->section, "cisc");
    ASSERT_EQ(p->ninsns, 4u);
    EXPECT_EQ(p->insns[0].imm, 1);       // call lands on index 2
    EXPECT_EQ(p->insns[2].imm, 7);
    EXPECT_EQ(p->rodata_size, 0u);       // not referenced
}

TEST(Hostile, RodataThroughSectionSymbolAndAddend)
{
    ElfBuilder b;
    uint32_t cisc = b.code("cisc", {LD_IMM64_LO(1, 4), LD_IMM64_HI(0), EXIT()});
    uint32_t ro = b.rodata(".rodata.str1.1", {'a', 'b', 'c', 'd', 'e', 'f', 0});
    uint32_t s = b.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
    b.func("prog", cisc, 0, 3);
    b.reloc(cisc, 0, VM_R_BPF_64_64, s);
    Loaded l;
    load(b.build(), l);
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = vm_object_prog(l.obj, 0);
    EXPECT_EQ(vm_src(&p->insns[0]), (unsigned)VM_PSEUDO_RODATA);
    ASSERT_EQ(p->rodata_size, 7u);
    EXPECT_STREQ(reinterpret_cast<const char *>(p->rodata) + p->insns[0].imm, "ef");
}

TEST(Hostile, RecursionIsLinkedOnce)
{
    ElfBuilder b;
    // even: calls odd; odd: calls even (mutual recursion in .text), and
    // prog calls even.
    uint32_t text = b.code(".text", {CALL_LOCAL(1), EXIT(), CALL_LOCAL(-3), EXIT()});
    uint32_t cisc = b.code("cisc", {CALL_LOCAL(-1), CALL_LOCAL(-2), EXIT()});
    uint32_t even = b.func("even", text, 0, 2);
    b.func("odd", text, 2, 2);
    b.func("prog", cisc, 0, 3);
    b.reloc(cisc, 0, VM_R_BPF_64_32, even);
    Loaded l;
    load(b.build(), l);
    ASSERT_EQ(l.rc, 0) << l.err;
    vm_prog *p = vm_object_prog(l.obj, 0);
    ASSERT_EQ(p->ninsns, 7u);                // 3 + even 2 + odd 2
    EXPECT_EQ(p->insns[0].imm, 2);           // -> 3 (even)
    EXPECT_EQ(p->insns[1].imm, -2);          // pc-relative call to itself
    EXPECT_EQ(p->insns[3].imm, 1);           // even -> odd at 5
    EXPECT_EQ(p->insns[5].imm, -3);          // odd -> even at 3
}

TEST(Hostile, NotAnElf)
{
    refused(Buf{}, -ENOEXEC, "shorter than an ELF header");
    refused(Buf(100, 0x41), -ENOEXEC, "bad magic");
}

TEST(Hostile, WrongClassEndianTypeMachine)
{
    Buf b = base().build();
    Buf c = b;
    c[4] = 1;
    refused(c, -ENOEXEC, "not 64-bit");
    c = b;
    c[5] = 2;
    refused(c, -ENOEXEC, "not little-endian");
    c = b;
    le16_put(&c[16], 2);
    refused(c, -ENOEXEC, "not a relocatable object");
    c = b;
    le16_put(&c[18], 62);
    refused(c, -ENOEXEC, "machine 62 is not eBPF");
}

TEST(Hostile, SectionHeaderTable)
{
    Buf b = base().build();
    Buf c = b;
    le64_put(&c[40], b.size() - 10);
    refused(c, -EINVAL, "section header table");
    c = b;
    le64_put(&c[40], ~0ull - 100);
    refused(c, -EINVAL, "section header table");
    c = b;
    le16_put(&c[60], 0);
    refused(c, -EINVAL, "no section headers");
    c = b;
    le16_put(&c[58], 40);
    refused(c, -EINVAL, "section header size 40");
    c = b;
    le16_put(&c[62], 1);                     // .text is not a string table
    refused(c, -EINVAL, "section name table");
}

TEST(Hostile, AbsurdSectionCount)
{
    Buf b = base().build();
    b.resize(le64_get(&b[40]) + 5000 * 64ull, 0);
    le16_put(&b[60], 5000);
    refused(b, -E2BIG, "5000 sections");
}

TEST(Hostile, SectionDataOutsideTheFile)
{
    Buf b = base().build();
    Buf c = b;
    le64_put(&c[shdr_field(c, 1, 24)], b.size());              // .text offset = end
    refused(c, -EINVAL, "outside the");
    c = b;
    le64_put(&c[shdr_field(c, 1, 24)], ~0ull - 8);             // offset + size wraps
    refused(c, -EINVAL, "outside the");
    c = b;
    le64_put(&c[shdr_field(c, 1, 32)], ~0ull);                 // absurd size
    refused(c, -EINVAL, "outside the");
}

TEST(Hostile, OverlappingSections)
{
    Buf b = base().build();
    le64_put(&b[shdr_field(b, 3, 24)], le64_get(&b[shdr_field(b, 2, 24)]));
    refused(b, -EINVAL, "overlap");
    Buf c = base().build();
    le64_put(&c[shdr_field(c, 1, 24)], 8);                     // inside the ELF header
    refused(c, -EINVAL, "the ELF headers");
}

TEST(Hostile, SectionNameOutsideStringTable)
{
    Buf b = base().build();
    le32_put(&b[shdr_field(b, 2, 0)], 100000);
    refused(b, -EINVAL, "name offset 100000");
}

TEST(Hostile, BadSymbols)
{
    ElfBuilder e = base();
    e.symbol("ghost", VM_ELF_STB_GLOBAL, VM_ELF_STT_FUNC, 500, 0, 8);
    refused(e.build(), -EINVAL, "section index 500");

    // A symbol name past the end of .strtab: patch the first symbol's name.
    Buf b = base().build();
    vm_elf elf;
    vm_diag d{};
    ASSERT_EQ(vm_elf_open(&elf, b.data(), b.size(), &d), 0);
    uint32_t symtab = vm_elf_find_sec(&elf, ".symtab");
    uint64_t symoff = elf.secs[symtab].offset;
    vm_elf_close(&elf);
    le32_put(&b[symoff + 24], 0x7fffffff);
    refused(b, -EINVAL, "name offset");
}

TEST(Hostile, TwoSymbolTables)
{
    ElfBuilder e = base();
    e.section(".symtab2", VM_ELF_SHT_SYMTAB, 0, Buf(24, 0));
    e.secs_.back().entsize = 24;
    refused(e.build(), -EINVAL, "two symbol tables");
}

TEST(Hostile, RelocationsOutOfRange)
{
    ElfBuilder e = base();
    e.reloc(2, 1, VM_R_BPF_64_32, 99);                          // no symbol 99
    refused(e.build(), -EINVAL, "refers to symbol 99");
    e = base();
    e.rels_[2][0].offset = 4;                                  // mid-instruction
    refused(e.build(), -EINVAL, "not on an instruction");
    e = base();
    e.rels_[2][0].offset = 800;                                // past the section
    refused(e.build(), -EINVAL, "not on an instruction");
    e = base();
    e.reloc(2, 0, VM_R_BPF_64_32, 1);                          // two at one insn
    refused(e.build(), -EINVAL, "two relocations");
}

TEST(Hostile, RelocationOnOtherInstructions)
{
    ElfBuilder e = base();
    e.reloc(2, 1, VM_R_BPF_64_32, 1);                          // on exit
    refused(e.build(), -EINVAL, "not a call or ld_imm64");
    e = base();
    e.rels_[2][0].type = VM_R_BPF_64_ABS64;
    refused(e.build(), -EINVAL, "relocation type 2");
}

TEST(Hostile, CallTargets)
{
    ElfBuilder e = base();
    le32_put(&e.secs_[1].data[4], 0);                          // imm -1 -> 0: insn 1
    refused(e.build(), -EINVAL, "not the start of a function");

    ElfBuilder f;                                              // pc-relative, no reloc
    uint32_t cisc = f.code("cisc", {CALL_LOCAL(1000), EXIT()});
    f.func("prog", cisc, 0, 2);
    refused(f.build(), -EINVAL, "call target cisc+1001");

    ElfBuilder g;
    cisc = g.code("cisc", {I(VM_CLS_JMP | VM_CALL, 0, 2, 0, 5), EXIT()});
    g.func("prog", cisc, 0, 2);
    refused(g.build(), -EINVAL, "source register 2");

    ElfBuilder h = base();                                     // reloc against data
    h.rels_[2][0].sym = h.symbol("blob", VM_ELF_STB_LOCAL, VM_ELF_STT_OBJECT, 3, 0, 8);
    refused(h.build(), -EINVAL, "'blob', which is not code");
}

TEST(Hostile, LdImm64Problems)
{
    ElfBuilder e;
    uint32_t cisc = e.code("cisc", {MOV64_IMM(0, 0), LD_IMM64_LO(1, 5)});
    e.func("prog", cisc, 0, 2);
    refused(e.build(), -EINVAL, "cut off by the end of the function");

    ElfBuilder f;
    cisc = f.code("cisc", {LD_IMM64_LO(1, 5, 1), LD_IMM64_HI(0), EXIT()});
    f.func("prog", cisc, 0, 3);
    refused(f.build(), -EINVAL, "pseudo source 1 and no relocation");

    ElfBuilder g;                                              // forged rodata ref
    cisc = g.code("cisc", {LD_IMM64_LO(1, 0, VM_PSEUDO_RODATA), LD_IMM64_HI(0), EXIT()});
    g.func("prog", cisc, 0, 3);
    refused(g.build(), -EINVAL, "pseudo source 2");

    ElfBuilder h;
    cisc = h.code("cisc", {LD_IMM64_LO(1, 9), LD_IMM64_HI(0), EXIT()});
    uint32_t ro = h.rodata(".rodata", Buf(8, 0));
    uint32_t s = h.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
    h.func("prog", cisc, 0, 3);
    h.reloc(cisc, 0, VM_R_BPF_64_64, s);
    refused(h.build(), -EINVAL, "outside section .rodata");
}

TEST(Hostile, RelocationOnSecondHalfOfLdImm64)
{
    ElfBuilder h;
    uint32_t cisc = h.code("cisc", {LD_IMM64_LO(1, 0), LD_IMM64_HI(0), EXIT()});
    uint32_t ro = h.rodata(".rodata", Buf(8, 0));
    uint32_t s = h.symbol("", VM_ELF_STB_LOCAL, VM_ELF_STT_SECTION, (uint16_t)ro, 0, 0);
    h.func("prog", cisc, 0, 3);
    h.reloc(cisc, 1, VM_R_BPF_64_64, s);
    refused(h.build(), -EINVAL, "second half of an ld_imm64");
}

TEST(Hostile, ReferencesToForbiddenData)
{
    auto with_target = [](const char *secname, uint64_t flags, uint32_t type) {
        ElfBuilder h;
        uint32_t cisc = h.code("cisc", {LD_IMM64_LO(1, 0), LD_IMM64_HI(0), EXIT()});
        uint32_t d = h.section(secname, type, flags, Buf(8, 0));
        uint32_t s = h.symbol("thing", VM_ELF_STB_GLOBAL, VM_ELF_STT_OBJECT, (uint16_t)d, 0, 8);
        h.func("prog", cisc, 0, 3);
        h.reloc(cisc, 0, VM_R_BPF_64_64, s);
        return h.build();
    };
    const uint64_t A = VM_ELF_SHF_ALLOC, W = VM_ELF_SHF_WRITE;
    refused(with_target(".bss", A | W, VM_ELF_SHT_NOBITS), -EOPNOTSUPP,
            "writable global 'thing' in section .bss");
    refused(with_target(".maps", A | W, VM_ELF_SHT_PROGBITS), -EOPNOTSUPP,
            "map 'thing' in section .maps");
    refused(with_target(".comment", 0, VM_ELF_SHT_PROGBITS), -EOPNOTSUPP,
            "'thing' in section .comment is not read-only data");
}

TEST(Hostile, JumpLeavingItsFunction)
{
    ElfBuilder e;
    uint32_t cisc = e.code("cisc", {JA(1), EXIT(), MOV64_IMM(0, 1), EXIT()});
    e.func("prog", cisc, 0, 2);
    e.func("other", cisc, 2, 2);
    refused(e.build(), -EINVAL, "jump to +1 leaves the function");
    ElfBuilder f;
    cisc = f.code("cisc", {JA(-2), EXIT()});
    f.func("prog", cisc, 0, 2);
    refused(f.build(), -EINVAL, "leaves the function");
}

TEST(Hostile, InstructionLimit)
{
    vm_load_opts o{};
    o.max_insns = 3;
    refused(base().build(), -E2BIG, "more than 3 instructions", &o);
    o.max_insns = 4;
    Loaded l;
    load(base().build(), l, &o);
    EXPECT_EQ(l.rc, 0) << l.err;
}

TEST(Hostile, ObjectSizeLimit)
{
    vm_load_opts o{};
    o.max_object_size = 100;
    refused(base().build(), -E2BIG, "limit 100", &o);
}

TEST(Hostile, CodeSectionShape)
{
    ElfBuilder e = base();
    e.secs_[1].data.resize(20);                               // not whole insns
    refused(e.build(), -EINVAL, "not a whole number of instructions");
    e = base();
    e.syms_[1].value = 4;                                      // prog misaligned
    refused(e.build(), -EINVAL, "function 'prog'");
    e = base();
    e.syms_[1].size = 800;                                     // past the section
    refused(e.build(), -EINVAL, "function 'prog'");
}

TEST(Hostile, SizelessFunctionsRunToTheNextOne)
{
    ElfBuilder e;
    uint32_t cisc = e.code("cisc", {MOV64_IMM(0, 1), EXIT(), MOV64_IMM(0, 2), EXIT()});
    e.func("a", cisc, 0, 0);
    e.func("b", cisc, 2, 0);
    Loaded l;
    load(e.build(), l);
    ASSERT_EQ(l.rc, 0) << l.err;
    EXPECT_EQ(vm_object_find(l.obj, "a")->ninsns, 2u);
    EXPECT_EQ(vm_object_find(l.obj, "b")->ninsns, 2u);
}

TEST(Hostile, RelaOnCodeIsRefused)
{
    ElfBuilder e = base();
    Buf rela(24, 0);
    uint32_t r = e.section(".rela.cisc", VM_ELF_SHT_RELA, 0, rela);
    e.secs_[r - 1].info = 2;
    refused(e.build(), -EINVAL, "RELA");
}

TEST(Hostile, NoPrograms)
{
    ElfBuilder e;
    uint32_t text = e.code(".text", {MOV64_IMM(0, 7), EXIT()});
    e.func("helper", text, 0, 2);
    refused(e.build(), -ENOENT, "no programs");
}

TEST(Hostile, ProgramNames)
{
    ElfBuilder e;
    uint32_t cisc = e.code("cisc", {MOV64_IMM(0, 7), EXIT()});
    e.func(std::string(70, 'x'), cisc, 0, 2);
    refused(e.build(), -ENAMETOOLONG, "limited to 63 bytes");
    ElfBuilder f;
    cisc = f.code("cisc", {MOV64_IMM(0, 7), EXIT()});
    uint32_t other = f.code("cisc2", {MOV64_IMM(0, 8), EXIT()});
    f.func("same", cisc, 0, 2);
    f.func("same", other, 0, 2);
    refused(f.build(), -EINVAL, "two programs are called 'same'");
}

TEST(Hostile, AbiMarker)
{
    ElfBuilder e = base();
    Buf v(4, 0);
    le32_put(v.data(), 1);
    uint32_t abi = e.rodata("cisc.abi", v);
    Loaded ok;
    load(e.build(), ok);
    EXPECT_EQ(ok.rc, 0) << ok.err;
    le32_put(e.secs_[abi - 1].data.data(), 2);
    refused(e.build(), -EOPNOTSUPP, "cisc ABI version 2");
    e.secs_[abi - 1].data = {1, 0, 0, 0, 1, 0, 0, 0};    // two linked objects
    Loaded linked;
    load(e.build(), linked);
    EXPECT_EQ(linked.rc, 0) << linked.err;
    e.secs_[abi - 1].data = {1, 0, 0, 0, 3, 0, 0, 0};
    refused(e.build(), -EOPNOTSUPP, "cisc ABI version 3");
    e.secs_[abi - 1].data.resize(6);
    refused(e.build(), -EINVAL, "want 4-byte versions");
}

TEST(Hostile, BtfSections)
{
    ElfBuilder e = base();
    e.section(".BTF.ext", VM_ELF_SHT_PROGBITS, 0, Buf(32, 0));
    refused(e.build(), -EINVAL, "no .BTF");
    ElfBuilder f = base();
    f.section(".BTF", VM_ELF_SHT_PROGBITS, 0, Buf(40, 0xee));
    refused(f.build(), -EINVAL, "section .BTF: bad header");
    ElfBuilder g = base();
    g.section(".BTF", VM_ELF_SHT_PROGBITS, 0, Buf(10, 0));
    refused(g.build(), -EINVAL, "section .BTF");
}

// ---- mutations of a real clang object -------------------------------------------

Buf read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return Buf(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

const std::string kCharstats = std::string(CORPUS_DIR) + "/subprog.o";

TEST(Mutations, EveryTruncationIsRefused)
{
    Buf b = read_file(kCharstats);
    ASSERT_GT(b.size(), 1000u);
    for (size_t n = 0; n < b.size(); n++) {
        Buf c(b.begin(), b.begin() + (long)n);
        Loaded l;
        load(c, l);
        ASSERT_NE(l.rc, 0) << "truncated to " << n << " bytes was accepted";
        ASSERT_FALSE(l.err.empty()) << "no message at " << n;
    }
    Loaded whole;
    load(b, whole);
    EXPECT_EQ(whole.rc, 0) << whole.err;
}

TEST(Mutations, BitFlipsNeverBreakInvariants)
{
    Buf b = read_file(kCharstats);
    ASSERT_GT(b.size(), 1000u);
    unsigned accepted = 0, refused_count = 0;
    for (size_t i = 0; i < b.size(); i++) {
        for (uint8_t mask : {0x01, 0x80, 0xff}) {
            Buf c = b;
            c[i] ^= mask;
            Loaded l;
            load(c, l);                       // checks invariants when accepted
            if (l.rc == 0)
                accepted++;
            else {
                refused_count++;
                ASSERT_FALSE(l.err.empty()) << "no message, byte " << i;
            }
        }
    }
    EXPECT_GT(refused_count, 0u);
    EXPECT_GT(accepted, 0u);                  // flips in debug info are harmless
}

}  // namespace

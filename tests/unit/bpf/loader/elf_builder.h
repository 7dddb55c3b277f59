// tests/unit/bpf/loader/elf_builder.h - builds small eBPF ELF objects byte by
// byte, so that tests can make exactly the malformed or unusual object they
// need (clang never emits most of them).
//
// Layout of build(): ELF header, then each section's data (8-byte aligned)
// in section order, then the section header table. Section 0 is the null
// section; .shstrtab, .strtab and .symtab are appended automatically, and
// one .rel<name> section per code section that has relocations.
#ifndef CISC_TESTS_ELF_BUILDER_H
#define CISC_TESTS_ELF_BUILDER_H

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "bpf/elf.h"
#include "bpf/insn.h"
#include "common/le.h"
}

class ElfBuilder
{
  public:
    struct Sec {
        std::string name;
        uint32_t type;
        uint64_t flags;
        std::vector<uint8_t> data;
        uint32_t link = 0, info = 0;
        uint64_t entsize = 0;
    };
    struct Sym {
        std::string name;
        uint8_t bind, type;
        uint16_t shndx;
        uint64_t value, size;
    };
    struct Rel {
        uint64_t offset;
        uint32_t type;
        uint32_t sym;
    };

    // Adds a section; returns its index (1-based; 0 is the null section).
    uint32_t section(const std::string &name, uint32_t type, uint64_t flags,
                     std::vector<uint8_t> data)
    {
        secs_.push_back(Sec{name, type, flags, std::move(data)});
        return (uint32_t)secs_.size();
    }

    uint32_t code(const std::string &name, const std::vector<vm_insn> &insns)
    {
        std::vector<uint8_t> d(insns.size() * 8);
        for (size_t i = 0; i < insns.size(); i++) {
            d[i * 8] = insns[i].code;
            d[i * 8 + 1] = insns[i].regs;
            le16_put(&d[i * 8 + 2], (uint16_t)insns[i].off);
            le32_put(&d[i * 8 + 4], (uint32_t)insns[i].imm);
        }
        return section(name, VM_ELF_SHT_PROGBITS, VM_ELF_SHF_ALLOC | VM_ELF_SHF_EXECINSTR, d);
    }

    uint32_t rodata(const std::string &name, std::vector<uint8_t> data)
    {
        return section(name, VM_ELF_SHT_PROGBITS, VM_ELF_SHF_ALLOC, std::move(data));
    }

    // Adds a symbol; returns its index (1-based; 0 is the null symbol).
    uint32_t symbol(const std::string &name, uint8_t bind, uint8_t type, uint16_t shndx,
                    uint64_t value, uint64_t size)
    {
        syms_.push_back(Sym{name, bind, type, shndx, value, size});
        return (uint32_t)syms_.size();
    }

    // A global function of n instructions at instruction `at` of section sec.
    uint32_t func(const std::string &name, uint32_t sec, uint32_t at, uint32_t n,
                  uint8_t bind = VM_ELF_STB_GLOBAL)
    {
        return symbol(name, bind, VM_ELF_STT_FUNC, (uint16_t)sec, at * 8ull, n * 8ull);
    }

    void reloc(uint32_t sec, uint64_t insn, uint32_t type, uint32_t sym)
    {
        rels_[sec].push_back(Rel{insn * 8, type, sym});
    }

    // A relocation at byte offset `at` of section sec (data sections).
    void reloc_at(uint32_t sec, uint64_t at, uint32_t type, uint32_t sym)
    {
        rels_[sec].push_back(Rel{at, type, sym});
    }

    std::vector<uint8_t> build() const
    {
        std::vector<Sec> all = secs_;
        std::string shstr(1, '\0'), str(1, '\0');
        std::vector<uint32_t> name_off;
        uint32_t symtab = 0;
        add_rel_sections(all);
        all.push_back(Sec{".symtab", VM_ELF_SHT_SYMTAB, 0, symtab_bytes(str)});
        symtab = (uint32_t)all.size();
        all.back().entsize = 24;
        all.push_back(Sec{".strtab", VM_ELF_SHT_STRTAB, 0, to_bytes(str)});
        all[symtab - 1].link = (uint32_t)all.size();
        for (auto &s : all)
            if (s.type == VM_ELF_SHT_REL)
                s.link = symtab;
        all.push_back(Sec{".shstrtab", VM_ELF_SHT_STRTAB, 0, {}});
        for (auto &s : all) {
            name_off.push_back((uint32_t)shstr.size());
            shstr += s.name + '\0';
        }
        all.back().data = to_bytes(shstr);
        return layout(all, name_off);
    }

    std::vector<Sec> secs_;
    std::vector<Sym> syms_;
    std::map<uint32_t, std::vector<Rel>> rels_;

  private:
    static std::vector<uint8_t> to_bytes(const std::string &s)
    {
        return std::vector<uint8_t>(s.begin(), s.end());
    }

    void add_rel_sections(std::vector<Sec> &all) const
    {
        for (const auto &[sec, rels] : rels_) {
            std::vector<uint8_t> d(rels.size() * 16);
            for (size_t i = 0; i < rels.size(); i++) {
                le64_put(&d[i * 16], rels[i].offset);
                le64_put(&d[i * 16 + 8], (uint64_t)rels[i].sym << 32 | rels[i].type);
            }
            Sec r{".rel" + secs_[sec - 1].name, VM_ELF_SHT_REL, 0, d};
            r.info = sec;
            r.entsize = 16;
            all.push_back(r);
        }
    }

    std::vector<uint8_t> symtab_bytes(std::string &str) const
    {
        std::vector<uint8_t> d((syms_.size() + 1) * 24, 0);
        for (size_t i = 0; i < syms_.size(); i++) {
            uint8_t *p = &d[(i + 1) * 24];
            le32_put(p, (uint32_t)str.size());
            str += syms_[i].name + '\0';
            p[4] = (uint8_t)(syms_[i].bind << 4 | syms_[i].type);
            le16_put(p + 6, syms_[i].shndx);
            le64_put(p + 8, syms_[i].value);
            le64_put(p + 16, syms_[i].size);
        }
        return d;
    }

    static std::vector<uint8_t> layout(const std::vector<Sec> &all,
                                       const std::vector<uint32_t> &name_off)
    {
        std::vector<uint8_t> f(64, 0);
        std::vector<uint64_t> offs;
        for (const auto &s : all) {
            f.resize((f.size() + 7) & ~size_t(7), 0);
            offs.push_back(f.size());
            f.insert(f.end(), s.data.begin(), s.data.end());
        }
        f.resize((f.size() + 7) & ~size_t(7), 0);
        uint64_t shoff = f.size();
        f.resize(f.size() + (all.size() + 1) * 64, 0);
        for (size_t i = 0; i < all.size(); i++) {
            uint8_t *p = &f[shoff + (i + 1) * 64];
            le32_put(p, name_off[i]);
            le32_put(p + 4, all[i].type);
            le64_put(p + 8, all[i].flags);
            le64_put(p + 24, offs[i]);
            le64_put(p + 32, all[i].data.size());
            le32_put(p + 40, all[i].link);
            le32_put(p + 44, all[i].info);
            le64_put(p + 48, 8);
            le64_put(p + 56, all[i].entsize);
        }
        std::memcpy(&f[0], "\177ELF\2\1\1", 7);
        le16_put(&f[16], 1);          // ET_REL
        le16_put(&f[18], 247);        // EM_BPF
        le32_put(&f[20], 1);
        le64_put(&f[40], shoff);
        le16_put(&f[52], 64);
        le16_put(&f[58], 64);
        le16_put(&f[60], (uint16_t)(all.size() + 1));
        le16_put(&f[62], (uint16_t)all.size());   // .shstrtab is last
        return f;
    }
};

// Instruction constructors for builder tests.
inline vm_insn I(uint8_t code, uint8_t dst = 0, uint8_t src = 0, int16_t off = 0,
                 int32_t imm = 0)
{
    return vm_insn{code, (uint8_t)(src << 4 | dst), off, imm};
}
inline vm_insn MOV64_IMM(uint8_t dst, int32_t imm)
{
    return I(VM_CLS_ALU64 | VM_MOV | VM_K, dst, 0, 0, imm);
}
inline vm_insn EXIT()
{
    return I(VM_CLS_JMP | VM_EXIT);
}
inline vm_insn CALL_LOCAL(int32_t imm)
{
    return I(VM_CLS_JMP | VM_CALL, 0, VM_PSEUDO_CALL, 0, imm);
}
inline vm_insn CALL_HELPER(int32_t id)
{
    return I(VM_CLS_JMP | VM_CALL, 0, 0, 0, id);
}
inline vm_insn JA(int16_t off)
{
    return I(VM_CLS_JMP | VM_JA, 0, 0, off);
}
inline vm_insn LD_IMM64_LO(uint8_t dst, int32_t imm, uint8_t src = 0)
{
    return I(VM_OPC_LD_IMM64, dst, src, 0, imm);
}
inline vm_insn LD_IMM64_HI(int32_t imm)
{
    return I(0, 0, 0, 0, imm);
}

// Offset of field `at` of section header i (1-based section index).
inline size_t shdr_field(const std::vector<uint8_t> &f, uint32_t i, size_t at)
{
    return le64_get(&f[40]) + i * 64ull + at;
}

#endif

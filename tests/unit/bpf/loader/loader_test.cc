// The loader on objects clang builds (tests/bpf/loader/*.c and the corpus): program
// discovery and selection, subprogram linking, read-only data, line info,
// and the rejection of what ABI v1 does not support, with messages naming
// the symbol and section.
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "prog_check.h"

extern "C" {
#include "bpf/elf.h"
#include "bpf/loader.h"
#include "common/le.h"
}

namespace {

std::string obj_path(const char *name)
{
    return std::string(OBJS_DIR) + "/" + name + ".o";
}

std::string corpus_path(const char *name)
{
    return std::string(CORPUS_DIR) + "/" + name + ".o";
}

struct Obj {
    vm_object *obj = nullptr;
    int rc = 0;
    std::string err;
    explicit Obj(const std::string &path)
    {
        char buf[512] = "";
        rc = vm_object_load_file(path.c_str(), nullptr, &obj, buf, sizeof(buf));
        err = buf;
    }
    ~Obj() { vm_object_free(obj); }
};

TEST(Loader, FindsEveryProgramOfEverySection)
{
    Obj o(obj_path("multi"));
    ASSERT_EQ(o.rc, 0) << o.err;
    ASSERT_EQ(vm_object_nprogs(o.obj), 4u);
    std::set<std::string> names;
    for (unsigned i = 0; i < 4; i++) {
        vm_prog *p = vm_object_prog(o.obj, i);
        EXPECT_EQ(vm_test_prog_check(p), nullptr);
        names.insert(p->name);
    }
    EXPECT_EQ(names, (std::set<std::string>{"first", "second", "third", "leaf"}));
    EXPECT_STREQ(vm_object_find(o.obj, "third")->section, "cisc/other");
    EXPECT_EQ(vm_object_prog(o.obj, 4), nullptr);
    EXPECT_EQ(vm_object_find(o.obj, "weigh"), nullptr) << ".text functions are not programs";
    EXPECT_EQ(vm_object_find(o.obj, "in_section"), nullptr) << "static: not a program";
    EXPECT_EQ(vm_object_find(o.obj, nullptr), nullptr) << "ambiguous without a name";
}

TEST(Loader, SingleProgramIsFoundWithoutAName)
{
    Obj o(corpus_path("wc"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, nullptr);
    ASSERT_NE(p, nullptr);
    EXPECT_STREQ(p->name, "wc");
}

TEST(Loader, TakeTransfersOwnership)
{
    Obj o(obj_path("multi"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "leaf");
    EXPECT_EQ(vm_object_take(o.obj, p), p);
    EXPECT_EQ(vm_object_find(o.obj, "leaf"), nullptr);
    EXPECT_EQ(vm_object_take(o.obj, p), nullptr);
    vm_object_free(o.obj);
    o.obj = nullptr;
    EXPECT_EQ(p->ninsns, 2u);           // still valid after the object is gone
    EXPECT_EQ(p->insns[0].imm, 42);
    vm_prog_free(p);
}

// Each program carries the .text functions it reaches, once, after its
// own body; every local call lands on the first instruction of one.
TEST(Loader, AppendsReachableSubprograms)
{
    Obj o(obj_path("multi"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *second = vm_object_find(o.obj, "second");
    vm_prog *leaf = vm_object_find(o.obj, "leaf");
    vm_prog *third = vm_object_find(o.obj, "third");
    std::set<int64_t> targets;
    for (uint32_t pc = 0; pc < second->ninsns; pc++) {
        const vm_insn &in = second->insns[pc];
        if (in.code == (VM_CLS_JMP | VM_CALL) && vm_src(&in) == VM_PSEUDO_CALL)
            targets.insert((int64_t)pc + 1 + in.imm);
    }
    EXPECT_EQ(targets.size(), 3u) << "weigh, twice, in_section";
    EXPECT_EQ(leaf->ninsns, 2u) << "calls nothing, carries nothing";
    EXPECT_EQ(third->ninsns, 6u) << "third + twice";
}

TEST(Loader, CopiesReadOnlyData)
{
    Obj o(corpus_path("lookup"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "hex");
    ASSERT_NE(p, nullptr);
    bool found = false;
    for (uint32_t pc = 0; pc + 1 < p->ninsns; pc++) {
        const vm_insn &in = p->insns[pc];
        if (in.code != VM_OPC_LD_IMM64 || vm_src(&in) == 0)
            continue;                       // constants stay as they are
        ASSERT_EQ(vm_src(&in), (unsigned)VM_PSEUDO_RODATA);
        ASSERT_LE((uint32_t)in.imm + 16, p->rodata_size);
        found |= !memcmp(p->rodata + in.imm, "0123456789abcdef", 16);
        pc++;
    }
    EXPECT_TRUE(found) << "the hex digit table is not in rodata";
    vm_prog *u = vm_object_find(o.obj, "upper");
    ASSERT_NE(u, nullptr);
    EXPECT_GE(u->rodata_size, 256u);
}

TEST(Loader, LineInfoNamesFileLineAndText)
{
    Obj o(corpus_path("wc"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "wc");
    ASSERT_GT(p->nlines, 5u);
    const vm_line_info *first = vm_prog_line(p, 0);
    ASSERT_NE(first, nullptr);
    EXPECT_STREQ(first->file, "wc.c");
    EXPECT_NE(std::string(first->src).find("int wc(struct cisc_ctx *ctx)"), std::string::npos)
        << first->src;
    EXPECT_GT(first->line, 10u);
    for (uint32_t i = 1; i < p->nlines; i++)
        EXPECT_LE(p->lines[i - 1].insn_off, p->lines[i].insn_off);
    const vm_line_info *last = vm_prog_line(p, p->ninsns - 1);
    EXPECT_EQ(last, &p->lines[p->nlines - 1]);
}

// Line info of appended subprograms moves with them.
TEST(Loader, LineInfoFollowsSubprograms)
{
    Obj o(corpus_path("subprog"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "charstats");
    std::set<std::string> callee_lines;
    for (uint32_t pc = 0; pc < p->ninsns; pc++) {
        const vm_insn &in = p->insns[pc];
        if (in.code == (VM_CLS_JMP | VM_CALL) && vm_src(&in) == VM_PSEUDO_CALL) {
            const vm_line_info *li = vm_prog_line(p, (uint32_t)(pc + 1 + in.imm));
            ASSERT_NE(li, nullptr);
            EXPECT_EQ(li->insn_off, (uint32_t)(pc + 1 + in.imm)) << "no line at a callee start";
            callee_lines.insert(li->src);
        }
    }
    bool classify = false, bump = false;
    for (const auto &s : callee_lines) {
        classify |= s.find("classify(") != std::string::npos;
        bump |= s.find("*counter += 1;") != std::string::npos;
    }
    EXPECT_TRUE(classify && bump) << "callee line info lost";
}

TEST(Loader, ObjectWithoutBtfHasNoLineInfo)
{
    Obj o(obj_path("nobtf"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "sum8");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->nlines, 0u);
    EXPECT_EQ(vm_prog_line(p, 0), nullptr);
}

TEST(Loader, LicenseSectionIsAccepted)
{
    Obj o(obj_path("multi"));
    EXPECT_EQ(o.rc, 0) << o.err;
}

struct Refusal {
    const char *obj;
    int rc;
    const char *fragment;
};

class Refused : public ::testing::TestWithParam<Refusal>
{
};

TEST_P(Refused, WithMessageNamingSymbolAndSection)
{
    Obj o(obj_path(GetParam().obj));
    EXPECT_EQ(o.rc, GetParam().rc) << o.err;
    EXPECT_NE(o.err.find(GetParam().fragment), std::string::npos) << "message: " << o.err;
    EXPECT_EQ(o.obj, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Unsupported, Refused,
    ::testing::Values(
        Refusal{"maps", -EOPNOTSUPP, "map 'counts' in section .maps"},
        Refusal{"legacy_maps", -EOPNOTSUPP, "map 'hits' in section maps"},
        Refusal{"bss", -EOPNOTSUPP, "writable global 'counter' in section .bss"},
        Refusal{"data", -EOPNOTSUPP, "writable global 'limit' in section .data"},
        Refusal{"kfunc", -EOPNOTSUPP,
                "section cisc, insn 1 (function call_kfunc): call to extern function "
                "'bpf_kfunc_example'"},
        Refusal{"extern_var", -EOPNOTSUPP,
                "(function use_kconfig): extern variable 'LINUX_KERNEL_VERSION'"},
        Refusal{"core", -EOPNOTSUPP,
                "section cisc, insn 1: CO-RE relocation against 'struct task'"},
        Refusal{"callback", -EOPNOTSUPP,
                "(function take_address): address of function 'twice' taken"},
        Refusal{"unoptimised", -EOPNOTSUPP,
                "helper 'cisc_state' is a variable in section .data: build with "
                "optimisation"}),
    [](const ::testing::TestParamInfo<Refusal> &i) { return std::string(i.param.obj); });

// Objects linked by `bpftool gen object` carry several ABI markers and
// functions, data and line info from several source files.
TEST(Loader, StaticallyLinkedObject)
{
    Obj o(obj_path("linked"));
    ASSERT_EQ(o.rc, 0) << o.err;
    vm_prog *p = vm_object_find(o.obj, "linked_first");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(vm_test_prog_check(p), nullptr);
    const vm_insn *call = nullptr;
    uint32_t pc = 0;
    for (; pc < p->ninsns && !call; pc++)
        if (p->insns[pc].code == (VM_CLS_JMP | VM_CALL) && vm_src(&p->insns[pc]) == 1)
            call = &p->insns[pc];
    ASSERT_NE(call, nullptr);
    const vm_line_info *callee = vm_prog_line(p, (uint32_t)(pc + call->imm));
    ASSERT_NE(callee, nullptr);
    EXPECT_STREQ(callee->file, "linked_b.c");
    EXPECT_STREQ(vm_prog_line(p, 0)->file, "linked_a.c");
    EXPECT_GE(p->rodata_size, 2u);
    EXPECT_NE(vm_object_find(o.obj, "linked_second"), nullptr);
}

TEST(Loader, FileErrors)
{
    Obj missing("/nonexistent/x.o");
    EXPECT_EQ(missing.rc, -ENOENT);
    EXPECT_NE(missing.err.find("/nonexistent/x.o"), std::string::npos);
    Obj dir(OBJS_DIR);
    EXPECT_EQ(dir.rc, -EINVAL);
    EXPECT_NE(dir.err.find("not a regular file"), std::string::npos);
}

TEST(Loader, AbiMarkerOfTheCorpusIsVersion1AndChecked)
{
    std::ifstream f(corpus_path("wc"), std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    vm_elf e;
    vm_diag d{};
    ASSERT_EQ(vm_elf_open(&e, b.data(), b.size(), &d), 0);
    uint32_t s = vm_elf_find_sec(&e, "cisc.abi");
    ASSERT_NE(s, 0u) << "cisc_bpf.h should emit the ABI marker";
    uint64_t off = e.secs[s].offset;
    EXPECT_EQ(le32_get(&b[off]), 1u);
    vm_elf_close(&e);
    le32_put(&b[off], 7);
    vm_object *obj = nullptr;
    char err[256];
    EXPECT_EQ(vm_object_load(b.data(), b.size(), nullptr, &obj, err, sizeof(err)), -EOPNOTSUPP);
    EXPECT_NE(std::string(err).find("version 7"), std::string::npos) << err;
}

// Loads may run on many threads at once (loader.h invariant 4): every
// thread gets the same programs and, for a bad object, the same message.
TEST(Loader, ConcurrentLoadsAgree)
{
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t, &ok] {
            for (int i = 0; i < 25; i++) {
                Obj good(corpus_path("grep"));
                Obj bad(obj_path("core"));
                vm_prog *p = vm_object_find(good.obj, "grep");
                bool same = good.rc == 0 && p && p->nlines > 10 &&
                            !strcmp(vm_prog_line(p, 0)->file, "grep.c") &&
                            bad.err.find("CO-RE relocation against 'struct task'") !=
                                std::string::npos;
                ok[t] += same;
            }
        });
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < 4; t++)
        EXPECT_EQ(ok[t], 25) << "thread " << t;
}

}  // namespace

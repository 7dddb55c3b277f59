// The verifier's precision corpus (tests/bpf/precision): one parameterized
// test over every program of every object in safe/ and unsafe/, at -O1,
// -O2 and -O3.
//   safe/    must verify, and then run in the bounds-checking interpreter
//            over a few inputs without a fault (a fault would be a
//            verifier bug). Programs listed in known_rejections.txt are
//            the ones the verifier still refuses: they must be refused (so
//            that the list shrinks when the verifier learns).
//   unsafe/  must be rejected, and the message must name the source line
//            marked `// REJECT` inside the program's function (or the line
//            marked `// REJECT: <program>` anywhere in the file). An
//            unsafe program in known_rejections.txt is one still refused
//            at an earlier line (for a reason that is a false alarm): it
//            must be refused, and not yet at the marked line.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "bpf/interp.h"
#include "bpf/jit_x86_64.h"
#include "bpf/loader.h"
#include "bpf/verifier.h"
}

namespace {

struct PCase {
    std::string kind, file, prog;   // kind: "safe" or "unsafe"; file without .c
    int opt;
};

std::ostream &operator<<(std::ostream &os, const PCase &c)
{
    return os << c.kind << "/" << c.file << ".c:" << c.prog << " -O" << c.opt;
}

std::string obj_path(const PCase &c)
{
    return std::string(PRECISION_OBJ) + "/O" + std::to_string(c.opt) + "/" + c.kind + "/" +
           c.file + ".o";
}

std::vector<std::string> sources(const std::string &kind)
{
    std::vector<std::string> names;
    std::string dir = std::string(PRECISION_SRC) + "/" + kind;
    DIR *d = opendir(dir.c_str());
    if (!d)
        return names;
    while (dirent *e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 2 && n.compare(n.size() - 2, 2, ".c") == 0)
            names.push_back(n.substr(0, n.size() - 2));
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

// Every program of every object, at every -O level (the objects are built
// before the test binary is listed).
std::vector<PCase> all_cases()
{
    std::vector<PCase> cases;
    for (const char *kind : {"safe", "unsafe"})
        for (const std::string &file : sources(kind))
            for (int opt = 1; opt <= 3; opt++) {
                PCase c{kind, file, "", opt};
                vm_object *obj = nullptr;
                char err[256];
                if (vm_object_load_file(obj_path(c).c_str(), nullptr, &obj, err, sizeof(err)))
                    continue;
                for (unsigned i = 0; i < vm_object_nprogs(obj); i++) {
                    vm_prog *p = vm_object_prog(obj, i);
                    if (p) {
                        c.prog = p->name;
                        cases.push_back(c);
                    }
                }
                vm_object_free(obj);
            }
    return cases;
}

// "prog -O2" lines of known_rejections.txt ('#' starts a comment).
std::set<std::string> known_rejections()
{
    std::set<std::string> known;
    std::ifstream f(std::string(PRECISION_SRC) + "/known_rejections.txt");
    std::string line;
    while (std::getline(f, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ls(line);
        std::string prog, opt;
        if (ls >> prog >> opt)
            known.insert(prog + " " + opt);
    }
    return known;
}

// The line the rejection must name: `// REJECT: prog` anywhere, else the
// `// REJECT` inside prog's function (from its definition to the next
// SEC). Returns 0 when the source has no marker for prog.
unsigned reject_line(const PCase &c)
{
    std::ifstream f(std::string(PRECISION_SRC) + "/" + c.kind + "/" + c.file + ".c");
    std::string line, def = " " + c.prog + "(";
    unsigned n = 0, in_func = 0, found = 0;
    while (std::getline(f, line)) {
        n++;
        size_t at = line.find("// REJECT");
        if (at != std::string::npos && line.find("// REJECT: " + c.prog) == at)
            return n;
        if (line.find("SEC(") == 0)
            in_func = 0;
        else if (line.find(def) != std::string::npos && line.find(';') == std::string::npos)
            in_func = 1;
        if (in_func && at != std::string::npos && line.compare(at, 10, "// REJECT:") != 0 &&
            !found)
            found = n;
    }
    return found;
}

struct Run {
    int rc;
    uint64_t r0, used;
    uint32_t fault_pc;
    std::vector<uint8_t> out, state;
};

// One run over the input of the given shape: checked (bounds-checking
// interpreter), fast interpreter, or JIT code.
Run run_one(vm_prog *p, uint32_t in_len, uint32_t out_len, uint64_t arg, int shape,
            bool checked, bool interp, uint64_t budget)
{
    static const char text[] = "alpha,beta 42\t\"id\":17 {\"name\":\"x\"} [1,[2]] if  else\n";
    std::vector<uint8_t> in(in_len + 1);
    Run r{0, 0, 0, 0, std::vector<uint8_t>(out_len + 1), std::vector<uint8_t>(VM_STATE_SIZE)};
    for (uint32_t k = 0; k < in_len; k++)
        in[k] = shape == 0 ? (uint8_t)text[k % (sizeof(text) - 1)]
                           : (uint8_t)(k * 2654435761u >> (shape * 3));
    vm_ctx ctx{};
    ctx.data = (uintptr_t)in.data();
    ctx.data_end = ctx.data + in_len;
    ctx.out = (uintptr_t)r.out.data();
    ctx.out_end = ctx.out + out_len;
    ctx.len = in_len;
    ctx.flags = 3;
    ctx.arg[0] = arg;
    ctx.arg[1] = arg * 3;
    vm_env env{};
    env.checked = checked;
    env.interp = interp;
    env.budget = budget;
    env.state = r.state.data();
    r.rc = vm_run(p, &ctx, &env, &r.r0);
    EXPECT_NE(r.rc, -EFAULT) << p->name << " faulted on " << in_len << " bytes: " << env.fault;
    r.used = env.used;
    r.fault_pc = env.fault_pc;
    return r;
}

// The checked run must not fault (a fault would be a verifier bug); the
// JIT's code must do what the fast interpreter does, with the budget the
// run needs and with half of it (a budget stop at the same pc and count).
void run_checked(vm_prog *p, uint32_t in_len, uint32_t out_len, uint64_t arg, int shape)
{
    Run c = run_one(p, in_len, out_len, arg, shape, true, true, 0);
    if (!p->jit)
        return;
    for (uint64_t budget : {(uint64_t)0, c.used / 2 + 1}) {
        Run i = run_one(p, in_len, out_len, arg, shape, false, true, budget);
        Run j = run_one(p, in_len, out_len, arg, shape, false, false, budget);
        EXPECT_EQ(i.rc, j.rc) << p->name << " budget " << budget;
        EXPECT_EQ(i.used, j.used) << p->name << " budget " << budget;
        EXPECT_EQ(i.fault_pc, j.fault_pc) << p->name << " budget " << budget;
        if (i.rc == 0) {
            EXPECT_EQ(i.r0, j.r0) << p->name;
            EXPECT_TRUE(i.out == j.out && i.state == j.state) << p->name << ": JIT output differs";
        }
    }
}

class Precision : public ::testing::TestWithParam<PCase> {};

TEST_P(Precision, Verdict)
{
    const PCase &c = GetParam();
    vm_object *obj = nullptr;
    char err[256] = "";
    ASSERT_EQ(vm_object_load_file(obj_path(c).c_str(), nullptr, &obj, err, sizeof(err)), 0)
        << err;
    vm_prog *p = vm_object_find(obj, c.prog.c_str());
    ASSERT_NE(p, nullptr);
    vm_verify_result res;
    int rc = vm_verify(p, nullptr, &res);
    bool known = known_rejections().count(c.prog + " -O" + std::to_string(c.opt)) != 0;
    if (rc != 0) {   // a rejection's second, no-join pass stays within its budget
        // (VM_EXACT_MIN_INSNS in bpf/verifier.c)
        uint64_t first = res.insns_processed - res.exact_insns;
        EXPECT_LE(res.exact_insns, std::max<uint64_t>(4096, 2 * first) + 1) << res.msg;
    }
    if (c.kind == "unsafe") {
        EXPECT_EQ(rc, -EACCES) << res.msg;
        unsigned line = reject_line(c);
        ASSERT_NE(line, 0u) << "no // REJECT marker for " << c.prog;
        std::string where = c.file + ".c:" + std::to_string(line) + ": ";
        bool at_line = std::string(res.msg).rfind(where, 0) == 0;
        EXPECT_NE(at_line, known) << (known ? "rejected at the marked line now: remove it from "
                                              "known_rejections.txt\n"
                                            : "expected ")
                                  << where << "\n"
                                  << res.msg;
    } else if (known) {
        EXPECT_NE(rc, 0) << "verifies now: remove '" << c.prog << " -O" << c.opt
                         << "' from known_rejections.txt";
    } else {
        EXPECT_EQ(rc, 0) << res.msg;
        if (rc == 0) {
            ASSERT_EQ(vm_prepare(p), 0);
            int jrc = vm_jit_compile(p);   // the JIT is compared with the interpreter
            EXPECT_TRUE(jrc == 0 || (jrc == -ENOTSUP && !vm_jit_available()));
            for (uint32_t len : {0u, 1u, 2u, 7u, 100u, 4096u, 5000u})
                for (uint64_t arg : {0ull, 1ull, 5ull, 1000ull, ~0ull})
                    for (int shape : {0, 1, 2})
                        run_checked(p, len, len / 2 + (uint32_t)shape * len, arg, shape);
        }
    }
    vm_object_free(obj);
}

INSTANTIATE_TEST_SUITE_P(Corpus, Precision, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<PCase> &i) {
                             return i.param.kind + "_" + i.param.prog + "_O" +
                                    std::to_string(i.param.opt);
                         });

} // namespace

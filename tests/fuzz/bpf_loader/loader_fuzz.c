/*
 * tests/fuzz/bpf_loader/loader_fuzz.c - libFuzzer target: mutated ELF
 * objects into vm_object_load().
 *
 * Every input must either be refused with a negative errno and a one-line
 * message, or load into programs that keep the invariants of bpf/prog.h
 * (tests/unit/bpf/loader/prog_check.h) and that the disassembler and
 * vm_prog_line() handle at every pc. Anything else aborts (a finding);
 * ASan/UBSan catch memory errors on the way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/loader.h"
#include "tests/unit/bpf/loader/prog_check.h"

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "loader_fuzz: %s: %s\n", what, detail);
    abort();
}

static void exercise(const struct vm_prog *p)
{
    const char *why = vm_test_prog_check(p);
    char buf[160], tiny[5];
    if (why)
        fail("invariant broken", why);
    for (uint32_t pc = 0; pc < p->ninsns; pc++) {
        vm_disasm_insn(p, pc, buf, sizeof(buf));
        vm_disasm_insn(p, pc, tiny, sizeof(tiny));
        if (!memchr(buf, '\0', sizeof(buf)) || !memchr(tiny, '\0', sizeof(tiny)))
            fail("disassembly", "not terminated");
        const struct vm_line_info *li = vm_prog_line(p, pc);
        if (li && li->insn_off > pc)
            fail("vm_prog_line", "entry after pc");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vm_load_opts o = {.max_insns = 4096, .max_object_size = 1u << 20};
    struct vm_object *obj = NULL;
    char err[512] = "";
    int rc = vm_object_load(data, size, &o, &obj, err, sizeof(err));
    if (rc) {
        if (rc > 0 || obj)
            fail("refusal", "positive code or an object returned");
        if (!err[0] || strchr(err, '\n'))
            fail("refusal message empty or not one line", err);
        return 0;
    }
    for (unsigned i = 0; i < vm_object_nprogs(obj); i++)
        exercise(vm_object_prog(obj, i));
    struct vm_prog *p = vm_object_take(obj, vm_object_prog(obj, 0));
    vm_object_free(obj);
    vm_prog_free(p);
    return 0;
}

// Hand-assembled programs the verifier must accept, and ones it must
// reject with a given error code and message fragment (table-driven).
#include <gtest/gtest.h>

#include "verify_util.h"

namespace {

struct Case {
    const char *name;
    std::vector<vm_insn> insns;
    int rc;              // 0, -EACCES, -EINVAL, -E2BIG
    const char *frag;    // expected in the message (rejections)
    std::vector<uint8_t> rodata;
};

std::ostream &operator<<(std::ostream &os, const Case &c)
{
    return os << c.name;
}

// r2 = data, r3 = data_end, and "if r2 + n > r3 goto out" with out = the
// instruction `skip` further on.
#define LOAD_IN() LDX(VM_DW, 2, 1, CTX_DATA), LDX(VM_DW, 3, 1, CTX_DATA_END)
#define LOAD_OUT() LDX(VM_DW, 4, 1, CTX_OUT), LDX(VM_DW, 5, 1, CTX_OUT_END)
#define RET0() MOV64_IMM(0, 0), EXIT()

const Case kCases[] = {
    // --- accepted -------------------------------------------------------------
    {"minimal", {RET0()}, 0, nullptr, {}},
    {"ctx_scalar_fields",
     {LDX(VM_DW, 0, 1, CTX_OFFSET), LDX(VM_DW, 2, 1, CTX_LEN), LDX(VM_DW, 2, 1, CTX_FLAGS),
      LDX(VM_DW, 2, 1, CTX_BLOCK), LDX(VM_DW, 2, 1, CTX_ARG0), LDX(VM_DW, 2, 1, CTX_ARG0 + 24),
      LDX(VM_W, 2, 1, CTX_LEN), LDXSX(VM_W, 2, 1, CTX_ARG0 + 8), EXIT()},
     0, nullptr, {}},
    {"ctx_pointer_fields",
     {LOAD_IN(), LOAD_OUT(), MOV64_REG(6, 1), ALU64_IMM(VM_ADD, 6, 8), LDX(VM_DW, 3, 6, 0),
      RET0()},
     0, nullptr, {}},
    {"input_checked_jgt",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 3),
      LDX(VM_DW, 0, 2, 0), LDX(VM_B, 0, 2, 7), EXIT(), RET0()},
     0, nullptr, {}},
    {"input_checked_jge_gives_one_more",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGE, 4, 3, 2),
      LDX(VM_B, 0, 2, 8), EXIT(), RET0()},
     0, nullptr, {}},
    {"input_checked_jlt_taken_side",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 4), JMP_REG(VM_JLT, 4, 3, 2), RET0(),
      LDX(VM_W, 0, 2, 0), LDX(VM_B, 0, 2, 4), EXIT()},
     0, nullptr, {}},
    {"input_checked_jle_taken_side",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 4), JMP_REG(VM_JLE, 4, 3, 2), RET0(),
      LDX(VM_W, 0, 2, 0), EXIT()},
     0, nullptr, {}},
    {"input_checked_end_on_left",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 2), JMP_REG(VM_JLT, 3, 4, 2),
      LDX(VM_H, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"input_checked_end_minus_const",
     {LOAD_IN(), ALU64_IMM(VM_ADD, 3, -8), JMP_REG(VM_JGT, 2, 3, 2), LDX(VM_DW, 0, 2, 0),
      EXIT(), RET0()},
     0, nullptr, {}},
    {"input_variable_offset_checked",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 4095),
      ALU64_REG(VM_ADD, 2, 6), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1),
      JMP_REG(VM_JGT, 4, 3, 2), LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"output_checked_write_scalar",
     {LOAD_OUT(), MOV64_REG(6, 4), ALU64_IMM(VM_ADD, 6, 16), JMP_REG(VM_JGT, 6, 5, 5),
      ST(VM_DW, 4, 0, 7), MOV64_IMM(7, 3), STX(VM_DW, 4, 7, 8), MOV64_IMM(0, 16), EXIT(),
      RET0()},
     0, nullptr, {}},
    {"stack_write_read",
     {ST(VM_DW, 10, -8, 5), LDX(VM_DW, 0, 10, -8), ST(VM_B, 10, -512, 1),
      LDX(VM_B, 2, 10, -512), EXIT()},
     0, nullptr, {}},
    {"stack_unaligned_bytes",
     {ST(VM_W, 10, -7, 1), LDX(VM_H, 0, 10, -6), EXIT()}, 0, nullptr, {}},
    {"spill_fill_pointer_keeps_type",
     {STX(VM_DW, 10, 1, -16), MOV64_IMM(1, 0), LDX(VM_DW, 6, 10, -16), LDX(VM_DW, 2, 6, CTX_DATA),
      RET0()},
     0, nullptr, {}},
    {"spill_fill_scalar_keeps_bounds",
     // r6 in [0,7] survives a spill; 8 checked bytes leave 1 after adding it
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), STX(VM_DW, 10, 6, -8),
      MOV64_IMM(6, 0), LDX(VM_DW, 6, 10, -8), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8),
      JMP_REG(VM_JGT, 4, 3, 3), ALU64_REG(VM_ADD, 2, 6), LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"variable_offset_keeps_only_rest_of_range",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), MOV64_REG(4, 2),
      ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 3), ALU64_REG(VM_ADD, 2, 6),
      LDX(VM_H, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "offset 0 size 2 is outside the checked range [0, 1)", {}},
    {"spill_through_other_pointer_keeps_value",
     // a scalar stored through a copy of r10 keeps its value: the static
     // analysis makes it precise at the store (verifier_flow.c lp_store)
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), MOV64_REG(7, 10),
      STX(VM_DW, 7, 6, -8), LDX(VM_DW, 6, 10, -8), ALU64_REG(VM_ADD, 2, 6), RET0()},
     0, nullptr, {}},
    {"spill_through_other_pointer_read_through_it_is_unknown",
     // read back through the copy, it is unknown (the analysis cannot tell
     // which slot a load through another pointer reads)
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), MOV64_REG(7, 10),
      STX(VM_DW, 7, 6, -8), LDX(VM_DW, 6, 7, -8), ALU64_REG(VM_ADD, 2, 6), RET0()},
     -EACCES, "adding an unbounded value", {}},
    {"spill_fill_scalar_indexes_stack",
     {LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), STX(VM_DW, 10, 6, -8),
      MOV64_IMM(6, 0), LDX(VM_DW, 6, 10, -8), ST(VM_DW, 10, -16, 0), MOV64_REG(7, 10),
      ALU64_IMM(VM_ADD, 7, -16), ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 0, 7, 0), EXIT()},
     0, nullptr, {}},
    {"rodata_read",
     {LD_RODATA(2, 4), LDX(VM_W, 0, 2, 0), LDX(VM_B, 3, 2, 3), EXIT()}, 0, nullptr,
     {1, 2, 3, 4, 5, 6, 7, 8}},
    {"rodata_constant_value_known",
     // rodata[0] is 3: indexes a 4-byte stack buffer safely.
     {LD_RODATA(2, 0), LDX(VM_B, 3, 2, 0), ST(VM_W, 10, -4, 0), MOV64_REG(4, 10),
      ALU64_IMM(VM_ADD, 4, -4), ALU64_REG(VM_ADD, 4, 3), LDX(VM_B, 0, 4, 0), EXIT()},
     0, nullptr, {3}},
    {"helper_crc32c_over_checked_input",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 64), JMP_REG(VM_JGT, 4, 3, 4),
      MOV64_IMM(1, 0), MOV64_IMM(3, 64), CALL(1), EXIT(), RET0()},
     0, nullptr, {}},
    {"helper_crc32c_args_in_order",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 64), JMP_REG(VM_JGT, 4, 3, 6),
      MOV64_IMM(1, 0), MOV64_REG(6, 2), MOV64_REG(2, 6), MOV64_IMM(3, 64), CALL(1), EXIT(),
      RET0()},
     0, nullptr, {}},
    // callx (RFC 9669 BPF_CALL | BPF_X): the helper whose number is in dst,
    // checked as `call N` where the number is known.
    {"callx_known_number_checked_as_call",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 64), JMP_REG(VM_JGT, 4, 3, 5),
      MOV64_IMM(1, 0), MOV64_IMM(3, 64), MOV64_IMM(6, 1), CALLX(6), EXIT(), RET0()},
     0, nullptr, {}},
    {"callx_arguments_of_the_named_helper",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 5),
      MOV64_IMM(1, 0), MOV64_IMM(3, 16), MOV64_IMM(7, 1), CALLX(7), EXIT(), RET0()},
     -EACCES, "R2 points to input buffer, offset 0 size 16 is outside the checked range [0, 8)",
     {}},
    {"callx_number_of_no_helper",
     {MOV64_IMM(6, 999), CALLX(6), EXIT()}, -EACCES, "callx R6: 999 is not the number", {}},
    {"callx_number_above_32_bits",
     // 2^32 + 8 truncated would be cisc_ktime_ns
     {MOV64_IMM(6, 1), ALU64_IMM(VM_LSH, 6, 32), ALU64_IMM(VM_ADD, 6, 8), CALLX(6), EXIT()},
     -EACCES, "4294967304 is not the number", {}},
    {"callx_number_unknown",
     {LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 1), CALLX(6), EXIT()}, -EACCES,
     "callx R6: the helper's number must be known here", {}},
    {"callx_through_a_pointer",
     {MOV64_REG(6, 1), CALLX(6), EXIT()}, -EACCES, "callx R6: the register must hold", {}},
    {"callx_uninitialised",
     {CALLX(6), EXIT()}, -EACCES, "callx R6: the register must hold a helper's number, not "
     "an uninitialised value", {}},
    {"callx_reserved_fields",
     {MOV64_IMM(6, 8), I(VM_CLS_JMP | VM_CALL | VM_X, 6, 0, 0, 8), EXIT()}, -EINVAL,
     "reserved field of callx is not 0", {}},
    {"callx_frame_pointer",
     {CALLX(10), EXIT()}, -EINVAL, "callx through R10", {}},
    {"callx_number_differs_between_paths",
     // one path calls cisc_ktime_ns (no arguments), the other cisc_trace,
     // whose r1 must point to memory: the second path must be checked on its
     // own (the number is precise, so the paths are never pruned together)
     {LDX(VM_DW, 7, 1, CTX_ARG0), MOV64_IMM(6, 8), JMP_IMM(VM_JEQ, 7, 0, 1), MOV64_IMM(6, 7),
      MOV64_IMM(1, 0), MOV64_IMM(2, 4), CALLX(6), EXIT()},
     -EACCES, "R1", {}},
    {"callx_number_differs_between_paths_fall_through_first",
     // the same with the paths the other way round (the fall-through, taken
     // first, calls cisc_ktime_ns)
     {LDX(VM_DW, 7, 1, CTX_ARG0), MOV64_IMM(6, 7), JMP_IMM(VM_JEQ, 7, 0, 1), MOV64_IMM(6, 8),
      MOV64_IMM(1, 0), MOV64_IMM(2, 4), CALLX(6), EXIT()},
     -EACCES, "R1", {}},
    {"helper_state_read_write",
     {CALL(9), ST(VM_DW, 0, 4088, 1), LDX(VM_DW, 2, 0, 0), ATOMIC(VM_DW, 0, 2, 8, VM_ADD),
      RET0()},
     0, nullptr, {}},
    {"helper_ktime",
     {CALL(8), EXIT()}, 0, nullptr, {}},
    {"helper_trace_from_rodata",
     {LD_RODATA(1, 0), MOV64_IMM(2, 4), MOV64_IMM(3, 1), MOV64_IMM(4, 2), MOV64_IMM(5, 3),
      CALL(7), EXIT()},
     0, nullptr, {'h', 'i', '\n', 0}},
    {"helper_copy_into_stack_then_read_needs_init",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(2, 8),
      LD_RODATA(3, 0), MOV64_IMM(4, 4), CALL(4), LDX(VM_DW, 0, 10, -8), EXIT()},
     0, nullptr, {1, 2, 3, 4}},
    {"helper_copy_leaves_uninit_stack_uninit",
     {MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(2, 8), LD_RODATA(3, 0),
      MOV64_IMM(4, 4), CALL(4), LDX(VM_DW, 0, 10, -8), EXIT()},
     -EACCES, "uninitialised stack byte fp-8", {1, 2, 3, 4}},
    // The search helpers' index: [-1, bound - 1] (helpers.h, invariant 4).
    // input_find(ctx, 0, 4096, "\n", 1); i >= 0 makes data + i a bounded
    // pointer; the byte still needs a data_end check.
    {"helper_input_find_index_as_offset",
     {MOV64_REG(6, 1), MOV64_IMM(2, 0), MOV64_IMM(3, 4096), LD_RODATA(4, 0), MOV64_IMM(5, 1),
      CALL(12), JMP_IMM(VM_JSLT, 0, 0, 7), LDX(VM_DW, 2, 6, CTX_DATA),
      LDX(VM_DW, 3, 6, CTX_DATA_END), ALU64_REG(VM_ADD, 2, 0), MOV64_REG(4, 2),
      ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 2), LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {'\n'}},
    // `to` unknown: the index is still below VM_MAX_BUF_SIZE.
    {"helper_input_find_unbounded_to",
     {MOV64_REG(6, 1), MOV64_IMM(2, 0), LDX(VM_DW, 3, 1, CTX_ARG0), LD_RODATA(4, 0),
      MOV64_IMM(5, 1), CALL(12), JMP_IMM(VM_JSLT, 0, 0, 2), LDX(VM_DW, 2, 6, CTX_DATA),
      ALU64_REG(VM_ADD, 2, 0), RET0()},
     0, nullptr, {'\n'}},
    // memchr over an 8-byte stack buffer: i in [0, 7] indexes it, no check.
    {"helper_memchr_index_inside_buffer",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(2, 8),
      MOV64_IMM(3, 'x'), CALL(11), JMP_IMM(VM_JSLT, 0, 0, 4), MOV64_REG(1, 10),
      ALU64_IMM(VM_ADD, 1, -8), ALU64_REG(VM_ADD, 1, 0), LDX(VM_B, 0, 1, 0), EXIT()},
     0, nullptr, {}},
    {"helper_memmem_index_inside_buffer",
     {ST(VM_DW, 10, -16, 0), ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -16),
      MOV64_IMM(2, 16), LD_RODATA(3, 0), MOV64_IMM(4, 2), CALL(10), JMP_IMM(VM_JSLT, 0, 0, 4),
      MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -16), ALU64_REG(VM_ADD, 1, 0), LDX(VM_B, 0, 1, 0),
      EXIT()},
     0, nullptr, {'a', 'b'}},
    {"helper_input_rchr_index",
     {MOV64_REG(6, 1), MOV64_IMM(2, 0), MOV64_IMM(3, 64), MOV64_IMM(4, '\n'), CALL(13),
      JMP_IMM(VM_JSLT, 0, 0, 7), LDX(VM_DW, 2, 6, CTX_DATA), LDX(VM_DW, 3, 6, CTX_DATA_END),
      MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 64), JMP_REG(VM_JGT, 4, 3, 3),
      ALU64_REG(VM_ADD, 2, 0), LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"div_by_zero_is_defined",
     {MOV64_IMM(0, 10), MOV64_IMM(2, 0), ALU64_REG(VM_DIV, 0, 2), ST(VM_B, 10, -1, 0),
      MOV64_REG(3, 10), ALU64_IMM(VM_ADD, 3, -1), ALU64_REG(VM_ADD, 3, 0), LDX(VM_B, 0, 3, 0),
      EXIT()},
     0, nullptr, {}},
    {"mod_by_zero_keeps_dividend",
     {MOV64_IMM(0, 1), MOV64_IMM(2, 0), ALU64_REG(VM_MOD, 0, 2), ST(VM_H, 10, -2, 0),
      MOV64_REG(3, 10), ALU64_IMM(VM_ADD, 3, -2), ALU64_REG(VM_ADD, 3, 0), LDX(VM_B, 0, 3, 0),
      EXIT()},
     0, nullptr, {}},
    {"mod_by_zero_tracked_not_zero",
     // 1 % 0 == 1, so indexing a 1-byte buffer with it is out of bounds.
     {MOV64_IMM(0, 1), MOV64_IMM(2, 0), ALU64_REG(VM_MOD, 0, 2), ST(VM_B, 10, -1, 0),
      MOV64_REG(3, 10), ALU64_IMM(VM_ADD, 3, -1), ALU64_REG(VM_ADD, 3, 0), LDX(VM_B, 0, 3, 0),
      EXIT()},
     -EACCES, "outside the frame", {}},
    {"shift_masks_amount",
     // 1 << 65 == 2 (amount masked to 1): index 2 of a 4-byte buffer is fine, 4 is not.
     {MOV64_IMM(0, 1), ALU64_IMM(VM_LSH, 0, 65), ST(VM_W, 10, -4, 0), MOV64_REG(3, 10),
      ALU64_IMM(VM_ADD, 3, -4), ALU64_REG(VM_ADD, 3, 0), LDX(VM_H, 0, 3, 0), EXIT()},
     0, nullptr, {}},
    {"jmp32_refines_low_half",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV32_REG(6, 6), JMP32_IMM(VM_JGT, 6, 15, 5),
      ALU64_REG(VM_ADD, 2, 6), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1),
      JMP_REG(VM_JGT, 4, 3, 1), LDX(VM_B, 0, 2, 0), RET0()},
     0, nullptr, {}},
    {"local_call_passes_stack_pointer",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(6, 7),
      CALL_LOCAL(3), LDX(VM_DW, 0, 10, -8), ALU64_REG(VM_ADD, 0, 6), EXIT(),
      // f(r1): *r1 = 42; return 0
      ST(VM_DW, 1, 0, 42), MOV64_IMM(0, 0), EXIT()},
     0, nullptr, {}},
    {"local_call_clobbers_r1_to_r5",
     {MOV64_IMM(2, 1), CALL_LOCAL(2), ALU64_REG(VM_ADD, 0, 2), EXIT(), MOV64_IMM(0, 0), EXIT()},
     -EACCES, "R2 is read before it is initialised", {}},
    {"local_call_preserves_r6",
     {MOV64_IMM(6, 1), CALL_LOCAL(2), MOV64_REG(0, 6), EXIT(), MOV64_IMM(6, 9), EXIT()},
     0, nullptr, {}},
    {"callee_r6_starts_uninit",
     {MOV64_IMM(6, 1), CALL_LOCAL(2), MOV64_REG(0, 6), EXIT(), MOV64_IMM(0, 0),
      ALU64_REG(VM_ADD, 0, 6), EXIT()},
     -EACCES, "R6 is read before it is initialised", {}},
    {"void_callee_result_unusable",
     {CALL_LOCAL(1), EXIT(), MOV64_IMM(1, 0), EXIT()},
     -EACCES, "R0 is not initialised at exit", {}},
    {"local_call_returns_value",
     {MOV64_IMM(1, 5), CALL_LOCAL(1), EXIT(), MOV64_REG(0, 1), ALU64_IMM(VM_ADD, 0, 1), EXIT()},
     0, nullptr, {}},
    {"bounded_loop_over_input",
     // for (i = 0; i < 4096; i++) { if (data + i + 1 > end) break; sum += data[i]; }
     {LOAD_IN(), MOV64_IMM(0, 0), MOV64_IMM(6, 0),
      /*4*/ MOV64_REG(4, 2), ALU64_REG(VM_ADD, 4, 6), MOV64_REG(5, 4),
      ALU64_IMM(VM_ADD, 5, 1), JMP_REG(VM_JGT, 5, 3, 4), LDX(VM_B, 7, 4, 0),
      ALU64_REG(VM_ADD, 0, 7), ALU64_IMM(VM_ADD, 6, 1), JMP_IMM(VM_JLT, 6, 4096, -10),
      EXIT()},
     0, nullptr, {}},
    {"infinite_safe_loop_is_accepted",
     {MOV64_IMM(0, 0), ST(VM_DW, 10, -8, 0), LDX(VM_DW, 2, 10, -8), JA(-2)}, 0, nullptr, {}},
    {"counter_loop_without_bound_is_accepted",
     // memory-safe; whether it ends is the run-time budget's business
     {MOV64_IMM(0, 0), ALU64_IMM(VM_ADD, 0, 1), JMP_IMM(VM_JNE, 0, 0, -2), EXIT()}, 0, nullptr,
     {}},
    {"short_loop_initialises_stack_buffer",
     // for (i = 0; i != 64; i += 8) *(u64 *)(fp - 64 + i) = 0; then read it all
     {MOV64_IMM(6, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -64), ALU64_REG(VM_ADD, 7, 6),
      ST(VM_DW, 7, 0, 0), ALU64_IMM(VM_ADD, 6, 8), JMP_IMM(VM_JNE, 6, 64, -6),
      LDX(VM_DW, 0, 10, -64), LDX(VM_DW, 0, 10, -8), EXIT()},
     0, nullptr, {}},
    {"loop_reading_initialised_stack",
     {ST(VM_DW, 10, -8, 0), ST(VM_DW, 10, -16, 0), ST(VM_DW, 10, -24, 0), ST(VM_DW, 10, -32, 0),
      MOV64_IMM(6, 0), MOV64_IMM(0, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -32),
      ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 8, 7, 0), ALU64_REG(VM_ADD, 0, 8),
      ALU64_IMM(VM_ADD, 6, 1), JMP_IMM(VM_JLT, 6, 32, -7), EXIT()},
     0, nullptr, {}},
    {"loop_reading_one_past_stack_buffer",
     {ST(VM_DW, 10, -8, 0), ST(VM_DW, 10, -16, 0), ST(VM_DW, 10, -24, 0), ST(VM_DW, 10, -32, 0),
      MOV64_IMM(6, 0), MOV64_IMM(0, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -32),
      ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 8, 7, 0), ALU64_REG(VM_ADD, 0, 8),
      ALU64_IMM(VM_ADD, 6, 1), JMP_IMM(VM_JLE, 6, 32, -7), EXIT()},
     -EACCES, "outside the frame", {}},
    {"linked_copy_refined_by_branch",
     // r7 = r6; if r7 < 16: r6 is bounded too
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(7, 6), JMP_IMM(VM_JGE, 7, 16, 5),
      ALU64_REG(VM_ADD, 2, 6), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 1),
      LDX(VM_B, 0, 2, 0), RET0()},
     0, nullptr, {}},
    {"linked_zext_idiom_refines_source",
     // r7 = r6; r7 <<= 32; r7 >>= 32; if r7 < 16: low half of r6 known; w6 bounded
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 32),
      ALU64_IMM(VM_RSH, 7, 32), JMP_IMM(VM_JGE, 7, 16, 6), MOV32_REG(6, 6),
      ALU64_REG(VM_ADD, 2, 6), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 1),
      LDX(VM_B, 0, 2, 0), RET0()},
     0, nullptr, {}},
    {"linked_with_delta",
     // r7 = r6 + 1; if r6 < 15 (so r7 <= 15): index with r7
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(7, 6), ALU64_IMM(VM_ADD, 7, 1),
      JMP_IMM(VM_JGE, 6, 15, 5), ALU64_REG(VM_ADD, 2, 7), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1),
      JMP_REG(VM_JGT, 4, 3, 1), LDX(VM_B, 0, 2, 0), RET0()},
     0, nullptr, {}},
    {"w_move_of_shifted_value_is_not_linked",
     // r7 = r6 << 32 (linked as a shift); w8 = w7 is 0, not the low half of
     // r6: bounding w8 must not bound r6
     {LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 32), MOV32_REG(8, 7),
      JMP_IMM(VM_JGE, 8, 8, 6), MOV32_REG(6, 6), ST(VM_DW, 10, -8, 0), MOV64_REG(9, 10),
      ALU64_IMM(VM_ADD, 9, -8), ALU64_REG(VM_ADD, 9, 6), LDX(VM_B, 0, 9, 0), MOV64_IMM(0, 0),
      EXIT()},
     -EACCES, "adding an unbounded value", {}},
    {"unlinked_copy_is_not_refined",
     // r7 = r6; r7 += r8 (unknown) breaks the link: r6 stays unbounded
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 8, 1, CTX_ARG0 + 8),
      ALU64_IMM(VM_AND, 8, 1), MOV64_REG(7, 6), ALU64_REG(VM_ADD, 7, 8),
      JMP_IMM(VM_JGE, 7, 16, 1), ALU64_REG(VM_ADD, 2, 6), RET0()},
     -EACCES, "adding an unbounded value", {}},
    {"copy_plus_a_known_register_stays_linked",
     // r7 = r6; r7 += r8 with r8 known to be 0 is r6 + 0: the test bounds r6
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_IMM(8, 0), MOV64_REG(7, 6),
      ALU64_REG(VM_ADD, 7, 8), JMP_IMM(VM_JGE, 7, 16, 1), ALU64_REG(VM_ADD, 2, 6), RET0()},
     0, nullptr, {}},
    {"zext_pair_of_a_fitting_value_keeps_its_distance",
     // r6 in [0,100]; data + r6 + 1 <= end bounds r6 by the distance; r7 =
     // r6 << 32 >> 32 is r6 itself (it fits), so data + r7 has a byte
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JGT, 6, 100, 10), MOV64_REG(4, 2),
      ALU64_REG(VM_ADD, 4, 6), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 6),
      MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 32), ALU64_IMM(VM_RSH, 7, 32),
      ALU64_REG(VM_ADD, 2, 7), LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"zext_pair_of_a_negative_value_is_not_a_no_op",
     // r6 in [-8,-1]: zext32 makes it [2^32-8, 2^32-1], not a stack offset
     {ST(VM_DW, 10, -8, 0), LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JSGT, 6, -1, 8),
      JMP_IMM(VM_JSLT, 6, -8, 7), MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 32),
      ALU64_IMM(VM_RSH, 7, 32), MOV64_REG(8, 10), ALU64_REG(VM_ADD, 8, 7), LDX(VM_B, 0, 8, 0),
      EXIT(), RET0()},
     -EACCES, "adding an unbounded value", {}},
    {"scaled_index_checked_through_its_pointer",
     // for (n = 0;; n++) { q = out + (n << 2); if (q + 4 > oend) break; *(u32 *)q = 0; }
     // the check bounds n through the scaled link, so n << 2 stays bounded
     {LOAD_OUT(), MOV64_IMM(6, 0), MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 2), MOV64_REG(8, 4),
      ALU64_REG(VM_ADD, 8, 7), MOV64_REG(9, 8), ALU64_IMM(VM_ADD, 9, 4),
      JMP_REG(VM_JGT, 9, 5, 3), ST(VM_W, 8, 0, 0), ALU64_IMM(VM_ADD, 6, 1), JA(-10), RET0()},
     0, nullptr, {}},
    {"scaled_index_checked_one_element_short",
     // the same loop checking q + 2: the 4-byte store is outside what was proved
     {LOAD_OUT(), MOV64_IMM(6, 0), MOV64_REG(7, 6), ALU64_IMM(VM_LSH, 7, 2), MOV64_REG(8, 4),
      ALU64_REG(VM_ADD, 8, 7), MOV64_REG(9, 8), ALU64_IMM(VM_ADD, 9, 2),
      JMP_REG(VM_JGT, 9, 5, 3), ST(VM_W, 8, 0, 0), ALU64_IMM(VM_ADD, 6, 1), JA(-10), RET0()},
     -EACCES, "outside the checked range [0, 2)", {}},
    {"length_checked_from_a_moved_pointer_bounds_an_index",
     // p = data + (arg & 7) (a pointer group); len = *p; if (p + len > end) out;
     // i = arg1; if (i >= len) out; p[i]: len is bounded by the distance from p
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), ALU64_REG(VM_ADD, 2, 6),
      MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 9), LDX(VM_B, 7, 2, 0),
      MOV64_REG(4, 2), ALU64_REG(VM_ADD, 4, 7), JMP_REG(VM_JGT, 4, 3, 5),
      LDX(VM_DW, 8, 1, CTX_ARG0 + 8), JMP_REG(VM_JGE, 8, 7, 3), ALU64_REG(VM_ADD, 2, 8),
      LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"length_checked_from_a_moved_pointer_index_one_past",
     // the same with i <= len: p[len] is the byte after the checked range
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), ALU64_REG(VM_ADD, 2, 6),
      MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JGT, 4, 3, 9), LDX(VM_B, 7, 2, 0),
      MOV64_REG(4, 2), ALU64_REG(VM_ADD, 4, 7), JMP_REG(VM_JGT, 4, 3, 5),
      LDX(VM_DW, 8, 1, CTX_ARG0 + 8), JMP_REG(VM_JGT, 8, 7, 3), ALU64_REG(VM_ADD, 2, 8),
      LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "outside the checked range [0, 0)", {}},
    {"end_pointer_walking_back_names_the_idiom",
     // e = data_end; e[-1]: the message names the idiom
     {LOAD_IN(), LDX(VM_B, 0, 3, -1), EXIT()},
     -EACCES, "walks back from the end", {}},
    {"jset_refines_bit",
     // if (r6 & 8) skip; else r6 & 8 == 0: r6 & 15 is at most 7
     {LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 15), JMP_IMM(VM_JSET, 6, 8, 6),
      ST(VM_DW, 10, -8, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -8), ALU64_REG(VM_ADD, 7, 6),
      LDX(VM_B, 0, 7, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"signed_refinement_both_sides",
     // if (r6 s> 7) skip; if (r6 s< 0) skip: r6 in [0,7]
     {LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JSGT, 6, 7, 7), JMP_IMM(VM_JSLT, 6, 0, 6),
      ST(VM_DW, 10, -8, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -8), ALU64_REG(VM_ADD, 7, 6),
      LDX(VM_B, 0, 7, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"signed_refinement_one_side_only",
     {LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JSGT, 6, 7, 6), ST(VM_DW, 10, -8, 0),
      MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -8), ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 0, 7, 0),
      EXIT(), RET0()},
     -EACCES, "adding an unbounded value", {}},
    {"jmp32_signed_refinement",
     {LDX(VM_DW, 6, 1, CTX_ARG0), MOVSX64(6, 6, 32), JMP32_IMM(VM_JSGT, 6, 7, 7),
      JMP32_IMM(VM_JSLT, 6, 0, 6), ST(VM_DW, 10, -8, 0), MOV64_REG(7, 10),
      ALU64_IMM(VM_ADD, 7, -8), ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 0, 7, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"dead_branch_not_explored",
     // r6 = 5; if r6 > 10 { read uninit stack } : never taken
     {MOV64_IMM(6, 5), JMP_IMM(VM_JGT, 6, 10, 2), RET0(), LDX(VM_DW, 0, 10, -8), EXIT()}, 0,
     nullptr, {}},
    {"bswap_and_movsx_on_scalars",
     {LDX(VM_DW, 0, 1, CTX_ARG0), BSWAP64(0, 16), TO_BE(0, 32), TO_LE(0, 64), MOVSX64(2, 0, 8),
      MOVSX64(2, 0, 32), NEG64(2), SDIV64_IMM(2, -1), SMOD64_IMM(2, 3), EXIT()},
     0, nullptr, {}},
    {"atomics_on_stack",
     {ST(VM_DW, 10, -8, 1), MOV64_IMM(2, 5), ATOMIC(VM_DW, 10, 2, -8, VM_ADD | VM_FETCH),
      MOV64_IMM(0, 0), ATOMIC(VM_DW, 10, 2, -8, VM_CMPXCHG), ATOMIC(VM_W, 10, 2, -8, VM_XCHG),
      EXIT()},
     0, nullptr, {}},

    // --- pruning must not hide an unsafe path: in each, the safe path reaches
    // the merge point first and is stored; the unsafe one must not be pruned
    {"prune_respects_packet_range",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8),
      JMP_IMM(VM_JEQ, 6, 0, 1), JMP_REG(VM_JGT, 4, 3, 3), LDX(VM_B, 0, 2, 0), MOV64_IMM(0, 0),
      EXIT(), MOV64_IMM(0, 1), EXIT()},
     -EACCES, "R2 points to input buffer, offset 0 size 1 is outside the checked range [0, 0)",
     {}},
    {"prune_respects_stack_init",
     {LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JEQ, 6, 0, 1), ST(VM_DW, 10, -8, 0),
      LDX(VM_DW, 0, 10, -8), EXIT()},
     -EACCES, "uninitialised stack byte fp-8", {}},
    {"prune_respects_precise_scalar",
     {LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_IMM(7, 100), JMP_IMM(VM_JEQ, 6, 0, 1), MOV64_IMM(7, 0),
      ST(VM_DW, 10, -8, 0), MOV64_REG(8, 10), ALU64_IMM(VM_ADD, 8, -8), ALU64_REG(VM_ADD, 8, 7),
      LDX(VM_B, 0, 8, 0), EXIT()},
     -EACCES, "outside the frame", {}},
    {"prune_respects_register_type",
     {ST(VM_DW, 10, -8, 0), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_IMM(7, 8),
      JMP_IMM(VM_JEQ, 6, 0, 2), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -8), LDX(VM_B, 0, 7, 0),
      EXIT()},
     -EACCES, "R7 is a scalar, not a pointer", {}},
    {"prune_respects_spilled_pointer",
     {ST(VM_DW, 10, -16, 0), MOV64_REG(7, 10), ALU64_IMM(VM_ADD, 7, -16), ST(VM_DW, 10, -8, 64),
      LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JEQ, 6, 0, 1), STX(VM_DW, 10, 7, -8),
      LDX(VM_DW, 7, 10, -8), LDX(VM_B, 0, 7, 0), EXIT()},
     -EACCES, "R7 is a scalar, not a pointer", {}},
    {"prune_respects_linked_scalars",
     // path A: r7 = r6 (linked) then r7 < 8 bounds r6; path B: r7 unrelated
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 8, 1, CTX_ARG0 + 8), MOV64_REG(7, 8),
      JMP_IMM(VM_JEQ, 8, 0, 1), MOV64_REG(7, 6), JMP_IMM(VM_JGE, 7, 8, 6), ST(VM_DW, 10, -8, 0),
      MOV64_REG(9, 10), ALU64_IMM(VM_ADD, 9, -8), ALU64_REG(VM_ADD, 9, 6), LDX(VM_B, 0, 9, 0),
      EXIT(), MOV64_IMM(0, 0), EXIT()},
     -EACCES, "adding an unbounded value", {}},
    {"prune_respects_links_of_spilled_scalars",
     // A: fp-8 holds a copy of r6, so "r6 < 8" bounds it; B: fp-8 holds
     // an unrelated number. A reaches the merge first.
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 8, 1, CTX_ARG0 + 8), LDX(VM_DW, 5, 1, CTX_ARG0 + 16),
      JMP_IMM(VM_JNE, 5, 0, 3), MOV64_REG(7, 6), STX(VM_DW, 10, 7, -8), JA(1), STX(VM_DW, 10, 8, -8),
      JMP_IMM(VM_JGE, 6, 8, 6), LDX(VM_DW, 8, 10, -8), ST(VM_DW, 10, -16, 0), MOV64_REG(9, 10),
      ALU64_IMM(VM_ADD, 9, -16), ALU64_REG(VM_ADD, 9, 8), LDX(VM_B, 0, 9, 0), MOV64_IMM(0, 0),
      EXIT()},
     -EACCES, "adding an unbounded value", {}},
    {"merge_of_safe_paths_is_accepted",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8),
      JMP_REG(VM_JGT, 4, 3, 4), JMP_IMM(VM_JEQ, 6, 0, 1), LDX(VM_B, 7, 2, 7), LDX(VM_B, 0, 2, 0),
      EXIT(), MOV64_IMM(0, 1), EXIT()},
     0, nullptr, {}},

    // --- rejected: memory -----------------------------------------------------
    {"input_unchecked",
     {LOAD_IN(), LDX(VM_B, 0, 2, 0), EXIT()},
     -EACCES, "R2 points to input buffer, offset 0 size 1 is outside the checked range [0, 0)",
     {}},
    {"input_off_by_one",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 2),
      LDX(VM_B, 0, 2, 8), EXIT(), RET0()},
     -EACCES, "offset 8 size 1 is outside the checked range [0, 8)", {}},
    {"input_wrong_side",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 2), RET0(),
      LDX(VM_B, 0, 2, 0), EXIT()},
     -EACCES, "outside the checked range [0, 0)", {}},
    {"input_jmp32_does_not_check",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP32_REG(VM_JGT, 4, 3, 2),
      LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "32-bit comparison of pointers", {}},
    {"input_negative_offset",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 2),
      LDX(VM_B, 0, 2, -1), EXIT(), RET0()},
     -EACCES, "offset -1 size 1", {}},
    {"input_is_read_only",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 2),
      ST(VM_B, 2, 0, 1), EXIT(), RET0()},
     -EACCES, "input buffer, which is read-only", {}},
    {"input_end_not_dereferenceable",
     {LOAD_IN(), LDX(VM_B, 0, 3, -1), EXIT()}, -EACCES, "cannot be dereferenced", {}},
    {"output_unchecked",
     {LOAD_OUT(), ST(VM_B, 4, 0, 1), RET0()}, -EACCES,
     "R4 points to output buffer, offset 0 size 1 is outside the checked range [0, 0)", {}},
    {"input_range_not_valid_for_output",
     {LOAD_IN(), LOAD_OUT(), MOV64_REG(6, 2), ALU64_IMM(VM_ADD, 6, 8), JMP_REG(VM_JGT, 6, 3, 2),
      ST(VM_B, 4, 0, 1), EXIT(), RET0()},
     -EACCES, "output buffer, offset 0 size 1", {}},
    {"ctx_write",
     {ST(VM_DW, 1, CTX_ARG0, 1), RET0()}, -EACCES, "context, which is read-only", {}},
    {"ctx_wrong_size",
     {LDX(VM_W, 0, 1, CTX_DATA), EXIT()}, -EACCES, "field data is 8 bytes", {}},
    {"ctx_byte_of_scalar",
     {LDX(VM_B, 0, 1, CTX_LEN), EXIT()}, -EACCES, "field len is 8 bytes", {}},
    {"ctx_misaligned",
     {LDX(VM_W, 0, 1, CTX_LEN + 4), EXIT()}, -EACCES, "not at the start of field len", {}},
    {"ctx_beyond",
     {LDX(VM_DW, 0, 1, 96), EXIT()}, -EACCES, "outside the 96-byte context", {}},
    {"ctx_variable_offset",
     {LDX(VM_DW, 2, 1, CTX_ARG0), ALU64_IMM(VM_AND, 2, 8), ALU64_REG(VM_ADD, 1, 2),
      LDX(VM_DW, 0, 1, 0), EXIT()},
     -EACCES, "variable offset", {}},
    {"ctx_sign_extending_pointer_read",
     {LDXSX(VM_W, 0, 1, CTX_DATA), EXIT()}, -EACCES, "field data is 8 bytes", {}},
    {"stack_uninit_read",
     {LDX(VM_DW, 0, 10, -8), EXIT()}, -EACCES, "R0 loads uninitialised stack byte fp-8", {}},
    {"stack_partly_uninit_read",
     {ST(VM_W, 10, -8, 1), LDX(VM_DW, 0, 10, -8), EXIT()}, -EACCES,
     "uninitialised stack byte fp-4", {}},
    {"stack_below_frame",
     {ST(VM_DW, 10, -520, 1), RET0()}, -EACCES, "outside the frame [-512, 0)", {}},
    {"stack_above_frame",
     {ST(VM_B, 10, 0, 1), RET0()}, -EACCES, "outside the frame", {}},
    {"stack_var_write_into_uninit",
     {LDX(VM_DW, 2, 1, CTX_ARG0), ALU64_IMM(VM_AND, 2, 15), MOV64_REG(3, 10),
      ALU64_IMM(VM_ADD, 3, -16), ALU64_REG(VM_ADD, 3, 2), ST(VM_B, 3, 0, 1), RET0()},
     -EACCES, "initialise the buffer first", {}},
    {"stack_var_read_out_of_frame",
     {ST(VM_DW, 10, -8, 0), ST(VM_DW, 10, -16, 0), LDX(VM_DW, 2, 1, CTX_ARG0),
      ALU64_IMM(VM_AND, 2, 31), MOV64_REG(3, 10), ALU64_IMM(VM_ADD, 3, -16),
      ALU64_REG(VM_ADD, 3, 2), LDX(VM_B, 0, 3, 0), EXIT()},
     -EACCES, "outside the frame", {}},
    {"partial_pointer_store",
     {STX(VM_W, 10, 1, -8), RET0()}, -EACCES, "storing part of a pointer", {}},
    {"partial_pointer_read",
     {STX(VM_DW, 10, 1, -8), LDX(VM_W, 0, 10, -8), EXIT()}, -EACCES,
     "R0 loads part of a pointer spilled at fp-8", {}},
    {"overwritten_pointer_rest_unreadable",
     {STX(VM_DW, 10, 1, -8), ST(VM_W, 10, -8, 0), LDX(VM_W, 0, 10, -4), EXIT()}, -EACCES,
     "R0 loads stack byte fp-4: pointer clobbered", {}},
    {"pointer_leak_to_output",
     {LOAD_OUT(), MOV64_REG(6, 4), ALU64_IMM(VM_ADD, 6, 8), JMP_REG(VM_JGT, 6, 5, 3),
      STX(VM_DW, 4, 1, 0), RET0(), RET0()},
     -EACCES, "pointer leak: storing a pointer to the context into output buffer", {}},
    {"pointer_leak_to_state",
     {MOV64_REG(6, 1), CALL(9), STX(VM_DW, 0, 6, 0), RET0()}, -EACCES,
     "pointer leak: storing a pointer to the context into the state area", {}},
    {"pointer_leak_via_return",
     {MOV64_REG(0, 10), EXIT()}, -EACCES, "R0 points to the stack at exit", {}},
    {"pointer_leak_via_helper_scalar",
     {LD_RODATA(1, 0), MOV64_IMM(2, 4), MOV64_REG(3, 10), MOV64_IMM(4, 2), MOV64_IMM(5, 3),
      CALL(7), EXIT()},
     -EACCES, "R3: cisc_trace takes a number here, not a pointer", {'a', 'b', 'c', 0}},
    {"pointer_leak_via_helper_copy_from_stack",
     {LOAD_OUT(), MOV64_REG(6, 4), ALU64_IMM(VM_ADD, 6, 8), JMP_REG(VM_JGT, 6, 5, 7),
      STX(VM_DW, 10, 1, -8), MOV64_REG(1, 4), MOV64_IMM(2, 8), MOV64_REG(3, 10),
      ALU64_IMM(VM_ADD, 3, -8), MOV64_IMM(4, 8), CALL(4), RET0()},
     -EACCES, "reads part of a pointer spilled at fp-8", {}},

    // --- distances to a buffer's end (verifier_dist.c) ----------------------------
    {"dist_end_minus_p_checked",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), JMP_IMM(VM_JSLT, 4, 8, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"dist_size_to_helper",
     {LOAD_IN(), ALU64_REG(VM_SUB, 3, 2), MOV64_IMM(1, 0), CALL(1), EXIT()}, 0, nullptr, {}},
    {"dist_bounds_a_smaller_length",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), MOV64_REG(5, 3), ALU64_REG(VM_SUB, 5, 2),
      JMP_REG(VM_JGT, 4, 5, 4), MOV64_IMM(1, 0), MOV64_REG(3, 4), CALL(1), EXIT(), RET0()},
     0, nullptr, {}},
    {"dist_checked_too_short",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), JMP_IMM(VM_JSLT, 4, 4, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "offset 0 size 8 is outside the checked range [0, 4)", {}},
    {"dist_wrong_side_of_the_check",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), JMP_IMM(VM_JSGE, 4, 8, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "is outside the checked range", {}},
    {"dist_of_the_other_buffer",
     {LOAD_IN(), LOAD_OUT(), MOV64_REG(6, 5), ALU64_REG(VM_SUB, 6, 4), JMP_IMM(VM_JSLT, 6, 8, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "R2 points to input buffer, offset 0 size 8 is outside the checked range", {}},
    {"dist_size_for_a_later_pointer",
     {LOAD_IN(), ALU64_REG(VM_SUB, 3, 2), ALU64_IMM(VM_ADD, 2, 1), MOV64_IMM(1, 0), CALL(1),
      EXIT()},
     -EACCES, "is outside the checked range", {}},
    {"dist_length_one_past_the_end",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), MOV64_REG(5, 3), ALU64_REG(VM_SUB, 5, 2),
      ALU64_IMM(VM_ADD, 5, 1), JMP_REG(VM_JGT, 4, 5, 4), MOV64_IMM(1, 0), MOV64_REG(3, 4),
      CALL(1), EXIT(), RET0()},
     -EACCES, "is outside the checked range", {}},

    {"dist_minus_a_nonnegative_number",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), LDX(VM_DW, 5, 1, CTX_ARG0),
      ALU64_IMM(VM_AND, 5, 7), ALU64_REG(VM_SUB, 4, 5), JMP_IMM(VM_JSLT, 4, 8, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},
    {"dist_plus_a_nonnegative_number",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), LDX(VM_DW, 5, 1, CTX_ARG0),
      ALU64_IMM(VM_AND, 5, 7), ALU64_REG(VM_ADD, 4, 5), JMP_IMM(VM_JSLT, 4, 8, 2),
      LDX(VM_DW, 0, 2, 0), EXIT(), RET0()},
     -EACCES, "is outside the checked range", {}},
    {"ptr_ne_end_from_the_start",
     {LOAD_OUT(), JMP_REG(VM_JEQ, 4, 5, 1), ST(VM_B, 4, 0, 1), RET0()}, 0, nullptr, {}},
    {"ptr_ne_end_unknown_position",
     {LOAD_OUT(), ALU64_IMM(VM_ADD, 4, 1), JMP_REG(VM_JEQ, 4, 5, 1), ST(VM_B, 4, 0, 1), RET0()},
     -EACCES, "is outside the checked range", {}},

    // `(__u8)(c - 'a') <= 25` (clang's `c >= 'a' && c <= 'z'`) bounds c to
    // [97, 122]: c - 97 indexes a 32-byte stack table (26 would not fit 40)
#define LOW8_TABLE(limit, AND)                                                             \
    ST(VM_DW, 10, -8, 0), ST(VM_DW, 10, -16, 0), ST(VM_DW, 10, -24, 0), ST(VM_DW, 10, -32, 0), \
        LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 255), MOV64_REG(5, 4),                \
        ALU64_IMM(VM_ADD, 5, -97), AND(VM_AND, 5, 255), JMP_IMM(VM_JGT, 5, limit, 6),          \
        ALU64_IMM(VM_SUB, 4, 97), MOV64_REG(2, 10), ALU64_IMM(VM_ADD, 2, -32),                 \
        ALU64_REG(VM_ADD, 2, 4), LDX(VM_B, 0, 2, 0), EXIT(), RET0()
    {"low_byte_of_a_difference_bounds_it", {LOW8_TABLE(25, ALU64_IMM)}, 0, nullptr, {}},
    {"low_byte_of_a_difference_too_large", {LOW8_TABLE(40, ALU64_IMM)}, -EACCES,
     "outside the frame", {}},
    {"low_byte_of_a_difference_32_bit_mask", {LOW8_TABLE(25, ALU32_IMM)}, 0, nullptr, {}},
    {"low_byte_of_a_difference_32_bit_too_large", {LOW8_TABLE(40, ALU32_IMM)}, -EACCES,
     "outside the frame", {}},
    // -O2's `(__u32)(len - 1) > 6` for `len < 1 || len > 7` bounds len to
    // [1, 7] (the window below 0 holds only len - 1 = -1, whose low half is
    // 0xffffffff): len indexes an 8-byte stack buffer (8 would not fit)
#define ZEXT_MINUS_ONE(limit)                                                              \
    ST(VM_DW, 10, -8, 0), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 0xffff),          \
        MOV64_REG(5, 4), ALU64_IMM(VM_ADD, 5, -1), ALU64_IMM(VM_LSH, 5, 32),                   \
        ALU64_IMM(VM_RSH, 5, 32), JMP_IMM(VM_JGT, 5, limit, 5), MOV64_REG(2, 10),              \
        ALU64_IMM(VM_ADD, 2, -8), ALU64_REG(VM_ADD, 2, 4), LDX(VM_B, 0, 2, 0), EXIT(), RET0()
    {"zext_of_a_difference_bounds_it", {ZEXT_MINUS_ONE(6)}, 0, nullptr, {}},
    {"zext_of_a_difference_one_too_large", {ZEXT_MINUS_ONE(7)}, -EACCES, "outside the frame",
     {}},
    {"low_byte_wraps_past_256",   // (c + 200) & 0xff <= 10: c in [56, 66]
     {ST(VM_DW, 10, -8, 0), ST(VM_DW, 10, -16, 0), LDX(VM_DW, 4, 1, CTX_ARG0),
      ALU64_IMM(VM_AND, 4, 255), MOV64_REG(5, 4), ALU64_IMM(VM_ADD, 5, 200),
      ALU64_IMM(VM_AND, 5, 255), JMP_IMM(VM_JGT, 5, 10, 6), ALU64_IMM(VM_SUB, 4, 56),
      MOV64_REG(2, 10), ALU64_IMM(VM_ADD, 2, -16), ALU64_REG(VM_ADD, 2, 4),
      LDX(VM_B, 0, 2, 0), EXIT(), RET0()},
     0, nullptr, {}},

    // out_end[-11] after `out + 21 <= out_end` (END - out >= 21, a fact of
    // the path, verifier_back.c end_lo); where the paths meet, the path that
    // failed the test, with out dead, must not be pruned by the one that
    // passed it: it reads before the buffer when out is short (found by
    // bpf_jit_diff, seed 99)
#define END_MINUS_11(skip)                                                                 \
    LOAD_OUT(), MOV64_REG(6, 4), ALU64_IMM(VM_ADD, 6, 21), JMP_REG(VM_JGT, 6, 5, skip),     \
        ST(VM_B, 4, 5, 0), MOV64_IMM(0, 0), LDX(VM_B, 0, 5, -11), EXIT()
    {"end_minus_k_after_a_check", {END_MINUS_11(4), RET0()}, 0, nullptr, {}},
    {"end_minus_k_where_the_check_failed", {END_MINUS_11(1)}, -EACCES,
     "R5 points to the end of the output buffer and cannot be dereferenced", {}},

    // two pointers into the input (verifier_jmp.c pointer_pair): q = data +
    // k with one byte checked; `q > data` bounds k from below, so the byte
    // before q is the buffer's (with `>=` it may be the one before data)
#define WALK_BACK(op)                                                                      \
    LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 7), MOV64_REG(5, 2),        \
        ALU64_REG(VM_ADD, 5, 4), MOV64_REG(6, 5), ALU64_IMM(VM_ADD, 6, 1),                   \
        JMP_REG(VM_JGT, 6, 3, 3), JMP_REG(op, 2, 5, 2), LDX(VM_B, 0, 5, -1), EXIT(), RET0()
    {"pointer_pair_walk_back", {WALK_BACK(VM_JGE)}, 0, nullptr, {}},
    {"pointer_pair_walk_back_one_too_far", {WALK_BACK(VM_JGT)}, -EACCES,
     "may be before the buffer's start", {}},
    // equal pointers: `p > q` is never taken, so its side (reading past
    // every checked byte) is never explored
    {"pointer_pair_decided",
     {LOAD_IN(), MOV64_REG(4, 2), JMP_REG(VM_JGT, 4, 2, 2), RET0(), LDX(VM_B, 0, 2, 100),
      EXIT()},
     0, nullptr, {}},
    // q below a pointer with 8 checked bytes has the bytes up to it: q =
    // data + k (k < 65536, nothing checked for q), e = data + 8; `q < e`
    // proves q's byte
#define BELOW(op)                                                                          \
    LOAD_IN(), MOV64_REG(6, 2), ALU64_IMM(VM_ADD, 6, 8), JMP_REG(VM_JGT, 6, 3, 7),          \
        LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 0xffff), MOV64_REG(5, 2),           \
        ALU64_REG(VM_ADD, 5, 4), JMP_REG(op, 6, 5, 2), LDX(VM_B, 0, 5, 0), EXIT(), RET0()
    {"pointer_pair_below_a_checked_one", {BELOW(VM_JLE)}, 0, nullptr, {}},
    {"pointer_pair_at_a_checked_ones_end", {BELOW(VM_JLT)}, -EACCES, "outside the checked range",
     {}},

    // clang writes out[n + 1] of an even n as out[n | 1]: with bit 0 known
    // zero the or adds 1 and keeps n's link, so `out + n + 2 <= oend`
    // proves the byte (with bit 0 unknown it is no add: rejected)
#define OR_ONE(mask)                                                                       \
    LOAD_OUT(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, mask), MOV64_REG(7, 4),    \
        ALU64_REG(VM_ADD, 7, 6), ALU64_IMM(VM_ADD, 7, 2), JMP_REG(VM_JGT, 7, 5, 5),          \
        MOV64_REG(8, 6), ALU64_IMM(VM_OR, 8, 1), MOV64_REG(2, 4), ALU64_REG(VM_ADD, 2, 8),   \
        ST(VM_B, 2, 0, 1), RET0()
    {"or_of_known_zero_bits_is_an_add", {OR_ONE(0x3e)}, 0, nullptr, {}},
    {"or_of_an_unknown_bit_is_no_add", {OR_ONE(0x3f)}, -EACCES, "is outside the checked range",
     {}},

    // p + i + 1 with i >= -1 (a helper's index added before its test): the
    // fixed offset makes up for the negative variable part
    {"negative_variable_part_offset_by_the_fixed_one",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 7), ALU64_IMM(VM_SUB, 4, 1),
      ALU64_REG(VM_ADD, 2, 4), MOV64_REG(5, 2), ALU64_IMM(VM_ADD, 5, 2),
      JMP_REG(VM_JGT, 5, 3, 2), LDX(VM_B, 0, 2, 1), EXIT(), RET0()},
     0, nullptr, {}},
    {"negative_variable_part_read_before_the_start",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 7), ALU64_IMM(VM_SUB, 4, 2),
      ALU64_REG(VM_ADD, 2, 4), MOV64_REG(5, 2), ALU64_IMM(VM_ADD, 5, 2),
      JMP_REG(VM_JGT, 5, 3, 2), LDX(VM_B, 0, 2, 1), EXIT(), RET0()},
     -EACCES, "may be negative", {}},

    // `int n`: clang sign-extends with `<<= 32; s>>= 32`; when n fits an
    // int that is no change, so `out + n` checked still bounds n itself
#define SEXT_COUNTER(mask)                                                                 \
    LOAD_OUT(), LDX(VM_DW, 0, 1, CTX_ARG0), ALU64_IMM(VM_AND, 0, mask), MOV64_REG(2, 0),      \
        ALU64_IMM(VM_LSH, 2, 32), ALU64_IMM(VM_ARSH, 2, 32), MOV64_REG(6, 4),                  \
        ALU64_REG(VM_ADD, 6, 2), ALU64_IMM(VM_ADD, 6, 1), JMP_REG(VM_JGT, 6, 5, 2),            \
        ALU64_REG(VM_ADD, 4, 0), ST(VM_B, 4, 0, 7), RET0()
    {"sign_extended_counter_stays_linked", {SEXT_COUNTER(0xffff)}, 0, nullptr, {}},
    {"sign_extension_of_a_value_beyond_int", {SEXT_COUNTER(-1)}, -EACCES,
     "adding an unbounded value", {}},

    // --- messages that say what to write instead ------------------------------------
    // a pointer-or-NULL result tested against 0: both sides go on, unrefined
    {"null_test_of_a_pointer",
     {LOAD_IN(), JMP_IMM(VM_JEQ, 2, 0, 0), RET0()}, 0, nullptr, {}},
    {"null_test_of_a_pointer_checks_both_sides",
     {LOAD_IN(), JMP_IMM(VM_JNE, 2, 0, 1), LDX(VM_B, 0, 2, 0), RET0()}, -EACCES,
     "is outside the checked range", {}},
    {"null_test_of_a_pointer_checks_the_taken_side",
     {LOAD_IN(), JMP_IMM(VM_JEQ, 2, 0, 2), RET0(), LDX(VM_B, 0, 2, 0), EXIT()}, -EACCES,
     "is outside the checked range", {}},
    {"null_test_32_bit_refused",
     {LOAD_IN(), JMP32_IMM(VM_JEQ, 2, 0, 0), RET0()}, -EACCES, "compared with a scalar", {}},
    {"hint_pointer_table",
     {LDX(VM_DW, 2, 1, CTX_ARG0), LDX(VM_B, 0, 2, 0), EXIT()}, -EACCES,
     "such as one read from a table of pointers past its end", {}},
    {"hint_index_before_its_test",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_IMM(VM_AND, 4, 7), ALU64_IMM(VM_SUB, 4, 1),
      ALU64_REG(VM_ADD, 2, 4), LDX(VM_B, 0, 2, 0), EXIT()},
     -EACCES, "add it as unsigned after the test: `p += (__u32)i + 1`", {}},
    {"hint_index_checked_elsewhere",
     {LOAD_IN(), LDX(VM_DW, 4, 1, CTX_ARG0), ALU64_REG(VM_ADD, 2, 4), RET0()}, -EACCES,
     "compare the pointer you access itself", {}},

    // a copy of a register never set is itself unset: only a use is refused,
    // and the message names the register copied and where
    {"hint_copy_of_uninitialised",
     {MOV64_REG(0, 5), EXIT()}, -EACCES,
     "R0 is not initialised at exit: the program must return a value (a copy of R5, made at pc "
     "0, which was never set; if clang -O1 made that copy on a path that never uses it",
     {}},
    {"unused_copy_of_uninitialised",
     {MOV64_REG(3, 5), ALU32_REG(VM_MOV, 4, 3), MOV64_IMM(0, 0), EXIT()}, 0, nullptr, {}},
    {"used_copy_of_a_copy_of_uninitialised",
     {MOV64_REG(3, 5), MOV64_REG(4, 3), MOV64_IMM(0, 0), ALU64_REG(VM_ADD, 0, 4), EXIT()},
     -EACCES, "R4 is read before it is initialised (a copy of R5, made at pc 0,", {}},
    {"spilled_copy_of_uninitialised",
     {MOV64_REG(3, 5), STX(VM_DW, 10, 3, -8), RET0()}, -EACCES, "R3", {}},

    // --- rejected: registers and pointers ---------------------------------------
    {"uninit_register",
     {MOV64_IMM(0, 0), ALU64_REG(VM_ADD, 0, 2), EXIT()}, -EACCES,
     "R2 is read before it is initialised", {}},
    {"uninit_r0_at_exit", {EXIT()}, -EACCES, "R0 is not initialised at exit", {}},
    {"pointer_compared_with_scalar",
     {LOAD_IN(), JMP_IMM(VM_JEQ, 2, 5, 0), RET0()}, -EACCES, "compared with a scalar", {}},
    {"pointer_ordered_against_null",
     {LOAD_IN(), JMP_IMM(VM_JGT, 2, 0, 0), RET0()}, -EACCES, "compared with a scalar", {}},
    {"pointer_compared_with_other_region",
     {LOAD_IN(), LOAD_OUT(), JMP_REG(VM_JGT, 2, 5, 0), RET0()}, -EACCES,
     "comparing a pointer to input buffer with a pointer to the end of the output buffer", {}},
    {"pointer_signed_compare",
     {LOAD_IN(), JMP_REG(VM_JSGT, 2, 3, 0), RET0()}, -EACCES, "unsigned comparisons", {}},
    {"pointer_mul",
     {ALU64_IMM(VM_MUL, 1, 2), RET0()}, -EACCES, "pointer arithmetic with mul", {}},
    {"pointer_and",
     {MOV64_REG(2, 10), ALU64_IMM(VM_AND, 2, -8), RET0()}, -EACCES, "pointer arithmetic with and",
     {}},
    {"pointer_32bit_add",
     {ALU32_IMM(VM_ADD, 1, 2), RET0()}, -EACCES, "32-bit add on a pointer", {}},
    {"pointer_32bit_mov",
     {MOV32_REG(2, 1), RET0()}, -EACCES, "32-bit move of a pointer", {}},
    {"pointer_neg",
     {NEG64(1), RET0()}, -EACCES, "neg of a pointer", {}},
    {"pointer_plus_pointer",
     {MOV64_REG(2, 10), ALU64_REG(VM_ADD, 2, 10), RET0()}, -EACCES, "adding two pointers", {}},
    {"pointer_plus_unbounded",
     {LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_REG(VM_ADD, 2, 6), RET0()}, -EACCES,
     "adding an unbounded value", {}},
    {"scalar_minus_pointer",
     {MOV64_IMM(2, 5), ALU64_REG(VM_SUB, 2, 10), RET0()}, -EACCES,
     "subtracting a pointer from a scalar", {}},
    {"pointer_difference_other_regions",
     {LOAD_IN(), LOAD_OUT(), ALU64_REG(VM_SUB, 2, 4), RET0()}, -EACCES,
     "subtracting pointers into different regions", {}},
    {"pointer_difference_is_scalar",
     {LOAD_IN(), ALU64_REG(VM_SUB, 3, 2), MOV64_REG(0, 3), EXIT()}, 0, nullptr, {}},
    {"scalar_as_pointer",
     {MOV64_IMM(2, 4096), LDX(VM_B, 0, 2, 0), EXIT()}, -EACCES,
     "R2 is a scalar, not a pointer", {}},

    // --- rejected: helpers --------------------------------------------------------
    {"helper_unknown", {CALL(999), EXIT()}, -EACCES, "unknown helper 999", {}},
    {"helper_size_bigger_than_region",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 4),
      MOV64_IMM(1, 0), MOV64_IMM(3, 16), CALL(1), EXIT(), RET0()},
     -EACCES, "R2 points to input buffer, offset 0 size 16 is outside the checked range [0, 8)",
     {}},
    {"helper_size_unbounded",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 4),
      MOV64_IMM(1, 0), LDX(VM_DW, 3, 1, CTX_LEN), CALL(1), EXIT(), RET0()},
     -EACCES, "R1 is a scalar", {}},
    {"helper_size_unbounded_2",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 4),
      LDX(VM_DW, 3, 1, CTX_LEN), MOV64_IMM(1, 0), CALL(1), EXIT(), RET0()},
     -EACCES, "R3: size passed to cisc_crc32c is not bounded", {}},
    {"helper_size_bounded_by_check",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 5),
      LDX(VM_DW, 3, 1, CTX_LEN), JMP_IMM(VM_JGT, 3, 8, 3), MOV64_IMM(1, 0), CALL(1), EXIT(),
      RET0()},
     0, nullptr, {}},
    {"helper_size_zero_not_allowed",
     {LD_RODATA(1, 0), MOV64_IMM(2, 0), MOV64_IMM(3, 1), MOV64_IMM(4, 2), MOV64_IMM(5, 3),
      CALL(7), EXIT()},
     -EACCES, "size passed to cisc_trace may be 0", {'x', 0}},
    {"helper_mem_r_uninit_stack",
     {MOV64_IMM(1, 0), MOV64_REG(2, 10), ALU64_IMM(VM_ADD, 2, -16), MOV64_IMM(3, 16), CALL(1),
      EXIT()},
     -EACCES, "uninitialised stack byte", {}},
    {"helper_mem_w_into_input",
     {LOAD_IN(), MOV64_REG(6, 2), ALU64_IMM(VM_ADD, 6, 8), JMP_REG(VM_JGT, 6, 3, 6),
      MOV64_REG(1, 2), MOV64_IMM(2, 8), LD_RODATA(3, 0), MOV64_IMM(4, 1), CALL(4), RET0()},
     -EACCES, "must point to writable", {9}},
    {"helper_mem_scalar",
     {MOV64_IMM(1, 0), MOV64_IMM(2, 64), MOV64_IMM(3, 8), CALL(1), EXIT()}, -EACCES,
     "R2: cisc_crc32c expects a pointer", {}},
    {"helper_index_may_be_minus_one",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(2, 8),
      MOV64_IMM(3, 'x'), CALL(11), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8),
      ALU64_REG(VM_ADD, 1, 0), LDX(VM_B, 0, 1, 0), EXIT()},
     -EACCES, "uninitialised stack byte fp-9", {}},
    {"helper_index_plus_one_past_buffer",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), MOV64_IMM(2, 8),
      MOV64_IMM(3, 'x'), CALL(11), JMP_IMM(VM_JSLT, 0, 0, 4), MOV64_REG(1, 10),
      ALU64_IMM(VM_ADD, 1, -8), ALU64_REG(VM_ADD, 1, 0), LDX(VM_B, 0, 1, 1), EXIT()},
     -EACCES, "fp-7+[0,7] size 1 is outside the frame", {}},
    // An index into the input is not a proof that the byte is inside it.
    {"helper_input_find_index_unchecked_access",
     {MOV64_REG(6, 1), MOV64_IMM(2, 0), MOV64_IMM(3, 4096), LD_RODATA(4, 0), MOV64_IMM(5, 1),
      CALL(12), JMP_IMM(VM_JSLT, 0, 0, 3), LDX(VM_DW, 2, 6, CTX_DATA),
      ALU64_REG(VM_ADD, 2, 0), LDX(VM_B, 0, 2, 0), RET0()},
     -EACCES, "offset 0 size 1 is outside the checked range [0, 0)", {'\n'}},
    {"helper_input_find_needs_ctx",
     {MOV64_REG(1, 10), MOV64_IMM(2, 0), MOV64_IMM(3, 8), LD_RODATA(4, 0), MOV64_IMM(5, 1),
      CALL(12), EXIT()},
     -EACCES, "R1: cisc_input_find takes the context pointer itself", {'\n'}},
    {"helper_input_rchr_ctx_plus_offset",
     {ALU64_IMM(VM_ADD, 1, 8), MOV64_IMM(2, 0), MOV64_IMM(3, 8), MOV64_IMM(4, 10), CALL(13),
      EXIT()},
     -EACCES, "takes the context pointer itself", {}},
    {"helper_input_find_needle_size_zero",
     {MOV64_IMM(2, 0), MOV64_IMM(3, 8), LD_RODATA(4, 0), MOV64_IMM(5, 0), CALL(12), EXIT()},
     -EACCES, "size passed to cisc_input_find may be 0", {'\n'}},
    // The bound `to` is precise: the paths with to = 16 and to = 32 must not
    // be pruned into one; only the second overflows the 16-byte buffer.
    {"helper_index_bound_is_precise",
     {ST(VM_DW, 10, -16, 0), ST(VM_DW, 10, -8, 0), MOV64_IMM(3, 32), LDX(VM_DW, 2, 1, CTX_ARG0),
      JMP_IMM(VM_JEQ, 2, 0, 1), MOV64_IMM(3, 16), MOV64_IMM(2, 0), LD_RODATA(4, 0),
      MOV64_IMM(5, 1), CALL(12), JMP_IMM(VM_JSLT, 0, 0, 4), MOV64_REG(1, 10),
      ALU64_IMM(VM_ADD, 1, -16), ALU64_REG(VM_ADD, 1, 0), LDX(VM_B, 0, 1, 0), EXIT()},
     -EACCES, "fp-16+[0,31] size 1 is outside the frame", {'\n'}},
    {"helper_clobbers_args",
     {CALL(8), ALU64_REG(VM_ADD, 0, 1), EXIT()}, -EACCES, "R1 is read before it is initialised",
     {}},

    // --- rejected: control flow and encodings -----------------------------------------
    {"jump_out_of_range", {JA(5), RET0()}, -EINVAL, "jump out of range", {}},
    {"jump_backward_out_of_range", {JA(-3), RET0()}, -EINVAL, "jump out of range", {}},
    {"jump_into_ld_imm64",
     {JMP_IMM(VM_JEQ, 1, 0, 1), LD_IMM64(0, 5), EXIT()}, -EINVAL,
     "jump into the middle of an ld_imm64", {}},
    {"fall_off_end", {MOV64_IMM(0, 0)}, -EINVAL, "falls off the end", {}},
    {"unreachable_code", {RET0(), MOV64_IMM(0, 1), EXIT()}, -EINVAL, "unreachable instruction",
     {}},
    {"unknown_opcode", {I(0xff, 0, 0, 0, 0), RET0()}, -EINVAL, "invalid instruction", {}},
    {"unknown_alu_op", {I(VM_CLS_ALU64 | 0xe0, 0, 0, 0, 0), RET0()}, -EINVAL,
     "unknown ALU operation", {}},
    {"legacy_ld_abs", {I(VM_CLS_LD | VM_ABS | VM_W, 0, 0, 0, 0), RET0()}, -EINVAL,
     "legacy packet access", {}},
    {"write_r10", {MOV64_IMM(10, 0), RET0()}, -EINVAL, "r10 (frame pointer) is read-only", {}},
    {"load_into_r10", {LDX(VM_DW, 10, 1, 0), RET0()}, -EINVAL, "read-only", {}},
    {"bad_register", {MOV64_REG(0, 11), EXIT()}, -EINVAL, "register r11 does not exist", {}},
    {"reserved_imm_nonzero", {I(VM_CLS_ALU64 | VM_X | VM_ADD, 0, 1, 0, 5), RET0()}, -EINVAL,
     "reserved immediate", {}},
    {"reserved_off_nonzero", {I(VM_CLS_ALU64 | VM_K | VM_ADD, 0, 0, 3, 5), RET0()}, -EINVAL,
     "reserved offset", {}},
    {"reserved_src_nonzero", {I(VM_CLS_ALU64 | VM_K | VM_MOV, 0, 3, 0, 5), EXIT()}, -EINVAL,
     "reserved source register", {}},
    {"bad_bswap_width", {MOV64_IMM(0, 0), BSWAP64(0, 24), EXIT()}, -EINVAL, "byte swap width",
     {}},
    {"bad_movsx_width", {MOVSX64(0, 1, 24), EXIT()}, -EINVAL, "sign-extension width", {}},
    {"ld_imm64_bad_second_slot",
     {I(VM_OPC_LD_IMM64, 0, 0, 0, 1), I(0x07, 0, 0, 0, 0), EXIT()}, -EINVAL,
     "malformed second slot", {}},
    {"ld_imm64_map_fd", {I(VM_OPC_LD_IMM64, 0, 1, 0, 1), I(0, 0, 0, 0, 0), EXIT()}, -EINVAL,
     "unsupported ld_imm64 kind", {}},
    {"rodata_offset_outside", {LD_RODATA(0, 8), EXIT()}, -EINVAL, "outside the read-only data",
     {1, 2}},
    {"rodata_read_outside",
     {LD_RODATA(2, 0), LDX(VM_W, 0, 2, 0), EXIT()}, -EACCES,
     "R2 points to read-only data, offset 0 size 4 is outside [0, 2)", {1, 2}},
    {"rodata_write", {LD_RODATA(2, 0), ST(VM_B, 2, 0, 0), RET0()}, -EACCES,
     "cannot be written", {1, 2}},
    {"kfunc_call", {I(VM_CLS_JMP | VM_CALL, 0, 2, 0, 1), RET0()}, -EINVAL,
     "unsupported call kind", {}},
    {"recursion", {CALL_LOCAL(-1), RET0()}, -EINVAL, "recursive call", {}},
    {"mutual_recursion",
     {CALL_LOCAL(1), EXIT(), CALL_LOCAL(1), EXIT(), CALL_LOCAL(-3), EXIT()}, -EINVAL,
     "recursive call", {}},
    {"jump_into_another_function",
     {CALL_LOCAL(2), JA(2), EXIT(), MOV64_IMM(0, 1), EXIT()}, -EINVAL, "jump from one function",
     {}},
    {"callee_stack_pointer_returned",
     {CALL_LOCAL(1), EXIT(), MOV64_REG(0, 10), EXIT()}, -EACCES, "own stack", {}},
    {"callee_stack_pointer_stored_in_caller",
     {ST(VM_DW, 10, -8, 0), MOV64_REG(1, 10), ALU64_IMM(VM_ADD, 1, -8), CALL_LOCAL(2), RET0(),
      MOV64_REG(2, 10), STX(VM_DW, 1, 2, 0), RET0()},
     -EACCES, "callee's stack cannot be stored", {}},

    // --- tables in read-only data: an entry read at a bounded index is one of the
    // entries it can reach (lens[w] gives the range of lens[0..3]); the value
    // indexes an 8-byte stack slot, so an entry of 8 is one too many
#define TABLE_READ(...)                                                                   \
    ST(VM_DW, 10, -8, 0), LDX(VM_DW, 6, 1, CTX_ARG0), __VA_ARGS__, LD_RODATA(7, 0),         \
        ALU64_REG(VM_ADD, 7, 6), LDX(VM_B, 7, 7, 0), MOV64_REG(2, 10),                      \
        ALU64_IMM(VM_ADD, 2, -8), ALU64_REG(VM_ADD, 2, 7), LDX(VM_B, 0, 2, 0), EXIT()
    {"table_read_gives_the_entries_range", {TABLE_READ(ALU64_IMM(VM_AND, 6, 3))}, 0, nullptr,
     {2, 5, 3, 7}},
    {"table_read_entry_past_the_slot", {TABLE_READ(ALU64_IMM(VM_AND, 6, 3))}, -EACCES,
     "is outside the frame", {2, 5, 3, 8}},
    {"table_read_only_entries_the_index_reaches", {TABLE_READ(ALU64_IMM(VM_AND, 6, 3))}, 0,
     nullptr, {2, 5, 3, 7, 200}},
    {"table_read_sparse_index",   // (arg & 1) << 1: entries 0 and 2 only
     {TABLE_READ(ALU64_IMM(VM_AND, 6, 1), ALU64_IMM(VM_LSH, 6, 1))}, 0, nullptr,
     {2, 200, 7, 200}},
    {"table_read_sparse_index_reaches_a_big_one",
     {TABLE_READ(ALU64_IMM(VM_AND, 6, 1), ALU64_IMM(VM_LSH, 6, 1))}, -EACCES,
     "is outside the frame", {2, 7, 200, 7}},

    // --- narrow stores into the stack keep their value (invariant 8): a u32 in
    // [0, 7] stored at fp-4 and read back indexes the 8 bytes at fp-16
#define NARROW_SPILL(...)                                                                 \
    LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 7), ST(VM_DW, 10, -16, 0),             \
        STX(VM_W, 10, 6, -4), __VA_ARGS__, MOV64_REG(2, 10), ALU64_IMM(VM_ADD, 2, -16),      \
        ALU64_REG(VM_ADD, 2, 7), LDX(VM_B, 0, 2, 0), EXIT()
    {"narrow_spill_read_back", {NARROW_SPILL(LDX(VM_W, 7, 10, -4))}, 0, nullptr, {}},
    {"narrow_spill_low_half_read_back", {NARROW_SPILL(LDX(VM_H, 7, 10, -4))}, 0, nullptr, {}},
    {"narrow_spill_survives_a_write_beside_it",   // (unaligned: no narrow store itself)
     {NARROW_SPILL(STX(VM_H, 10, 6, -7), LDX(VM_W, 7, 10, -4))}, 0, nullptr, {}},
    {"narrow_spill_byte_overwritten",
     {NARROW_SPILL(STX(VM_B, 10, 6, -2), LDX(VM_W, 7, 10, -4))}, -EACCES,
     "adding an unbounded value", {}},
    {"narrow_spill_one_per_slot",   // a second narrow store in the slot replaces it
     {NARROW_SPILL(STX(VM_B, 10, 6, -8), LDX(VM_W, 7, 10, -4))}, -EACCES,
     "adding an unbounded value", {}},
    {"narrow_spill_high_half_is_data", {NARROW_SPILL(LDX(VM_H, 7, 10, -2))}, -EACCES,
     "is outside the frame", {}},
    // the callee stores through the caller's stack pointer (`*used = n`)
#define CALLEE_STORE(mask)                                                                \
    ST(VM_W, 10, -4, 0), ST(VM_DW, 10, -16, 0), LDX(VM_DW, 2, 1, CTX_ARG0), MOV64_REG(1, 10), \
        ALU64_IMM(VM_ADD, 1, -4), CALL_LOCAL(6), LDX(VM_W, 7, 10, -4), MOV64_REG(2, 10),     \
        ALU64_IMM(VM_ADD, 2, -16), ALU64_REG(VM_ADD, 2, 7), LDX(VM_B, 0, 2, 0), EXIT(),      \
        ALU64_IMM(VM_AND, 2, mask), STX(VM_W, 1, 2, 0), RET0()
    {"narrow_store_through_a_callers_pointer", {CALLEE_STORE(7)}, 0, nullptr, {}},
    {"narrow_store_through_a_callers_pointer_too_big", {CALLEE_STORE(8)}, -EACCES,
     "reads uninitialised stack byte fp-8", {}},

    // --- exact distances (invariant 6): r4 = end - p, then p < end proves r4 >= 1
#define EXACT_DIST(lim, ...)                                                              \
    LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), __VA_ARGS__,                       \
        JMP_REG(VM_JGE, 2, 3, 4), JMP_IMM(VM_JSLT, 4, lim, 1), JA(2), MOV64_REG(0, 9), EXIT(), \
        RET0()
    {"exact_distance_bounded_below_by_a_check", {EXACT_DIST(1, MOV64_REG(4, 4))}, 0, nullptr,
     {}},
    {"exact_distance_one_more_not_proved", {EXACT_DIST(2, MOV64_REG(4, 4))}, -EACCES,
     "not initialised", {}},
    {"exact_distance_moved_by_a_constant", {EXACT_DIST(0, ALU64_IMM(VM_ADD, 4, -1))}, 0,
     nullptr, {}},
    {"exact_distance_lost_by_masking", {EXACT_DIST(1, ALU64_IMM(VM_AND, 4, 0xffff))},
     -EACCES, "not initialised", {}},
    // r6 <= r4 gave r6 r4's bound; after p += 2, r4 -= 2 the test r6 > r4 must
    // not replace r4's exact bound by r6's looser one (then r4 >= 1 below)
    {"distance_test_keeps_an_exact_bound",
     {LOAD_IN(), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2), LDX(VM_DW, 6, 1, CTX_ARG0),
      ALU64_IMM(VM_AND, 6, 7), JMP_REG(VM_JSGT, 6, 4, 9), ALU64_IMM(VM_ADD, 2, 2),
      ALU64_IMM(VM_ADD, 4, -2), JMP_REG(VM_JSGT, 6, 4, 1), JA(5), JMP_REG(VM_JGE, 2, 3, 4),
      JMP_IMM(VM_JSLT, 4, 1, 1), JA(2), MOV64_REG(0, 9), EXIT(), RET0()},
     0, nullptr, {}},

    // --- values known to differ (invariant 9): the `!=` side of a test decides
    // the same test later (clang -O1's merged exits), the `==` side would read
    // a register never set
    {"neq_decides_the_second_test",
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 7, 1, CTX_ARG0 + 8), JMP_REG(VM_JEQ, 6, 7, 3),
      JMP_REG(VM_JNE, 6, 7, 2), MOV64_REG(0, 9), EXIT(), RET0()},
     0, nullptr, {}},
    {"neq_of_a_recomputed_value",   // (__u32)arg recomputed between the tests
     {LDX(VM_W, 7, 1, CTX_ARG0 + 8), LDX(VM_DW, 1, 1, CTX_ARG0), MOV64_REG(6, 1),
      ALU64_IMM(VM_LSH, 6, 32), ALU64_IMM(VM_RSH, 6, 32), JMP_REG(VM_JEQ, 6, 7, 6),
      MOV64_REG(6, 1), ALU64_IMM(VM_LSH, 6, 32), ALU64_IMM(VM_RSH, 6, 32),
      JMP_REG(VM_JNE, 6, 7, 2), MOV64_REG(0, 9), EXIT(), RET0()},
     0, nullptr, {}},
    {"neq_of_a_constant",
     {LDX(VM_DW, 6, 1, CTX_ARG0), JMP_IMM(VM_JEQ, 6, 443, 3), JMP_IMM(VM_JNE, 6, 443, 2),
      MOV64_REG(0, 9), EXIT(), RET0()},
     0, nullptr, {}},
    {"neq_lost_when_the_value_changes",
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 7, 1, CTX_ARG0 + 8), JMP_REG(VM_JEQ, 6, 7, 4),
      ALU64_IMM(VM_ADD, 6, 1), JMP_REG(VM_JNE, 6, 7, 2), MOV64_REG(0, 9), EXIT(), RET0()},
     -EACCES, "not initialised", {}},
    {"neq_of_64_bits_does_not_decide_32",
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 7, 1, CTX_ARG0 + 8), JMP_REG(VM_JEQ, 6, 7, 3),
      JMP32_REG(VM_JNE, 6, 7, 2), MOV64_REG(0, 9), EXIT(), RET0()},
     -EACCES, "not initialised", {}},
    {"neq_not_on_the_equal_side",   // the `==` side's second test may be taken
     {LDX(VM_DW, 6, 1, CTX_ARG0), LDX(VM_DW, 7, 1, CTX_ARG0 + 8), JMP_REG(VM_JNE, 6, 7, 3),
      JMP_REG(VM_JEQ, 6, 7, 4), RET0(), RET0(), MOV64_REG(0, 9), EXIT()},
     -EACCES, "not initialised", {}},

    // --- sums of two counters (invariant 10): `n + k < oend - out` tested, then
    // `(out + n) + k` written. r6 = n, r8 = k (bytes), r3 = oend - out
#define SUM_LINK(CMP, ...)                                                                \
    LOAD_OUT(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 255),                     \
        LDX(VM_DW, 8, 1, CTX_ARG0 + 8), ALU64_IMM(VM_AND, 8, 255), MOV64_REG(3, 5),        \
        ALU64_REG(VM_SUB, 3, 4), MOV64_REG(9, 4), ALU64_REG(VM_ADD, 9, 6), MOV64_REG(2, 6), \
        ALU64_REG(VM_ADD, 2, 8), __VA_ARGS__, JMP_REG(CMP, 2, 3, 4), ALU64_REG(VM_ADD, 9, 8),  \
        ST(VM_B, 9, 0, 32), RET0(), RET0()
    {"sum_of_counters_bounds_the_pointer", {SUM_LINK(VM_JSGE, MOV64_REG(2, 2))}, 0, nullptr,
     {}},
    {"sum_of_counters_one_short", {SUM_LINK(VM_JSGT, MOV64_REG(2, 2))}, -EACCES,
     "outside the checked range", {}},
    {"sum_of_counters_term_moved_after", {SUM_LINK(VM_JSGE, ALU64_IMM(VM_ADD, 8, 1))},
     -EACCES, "outside the checked range", {}},
    {"sum_of_counters_ended_by_a_mask", {SUM_LINK(VM_JSGE, ALU64_IMM(VM_AND, 2, 511))},
     -EACCES, "outside the checked range", {}},

    // p + n with n <= end - p stays within the buffer's largest size from its
    // start, whatever p's and n's ranges add up to: p (var [0, 2^28)) + n
    // (n <= end - p) + n again is a sane pointer
#define VAR_LIMIT(...)                                                                    \
    LOAD_IN(), LDX(VM_DW, 6, 1, CTX_ARG0), ALU64_IMM(VM_AND, 6, 0xfffffff),                 \
        ALU64_REG(VM_ADD, 2, 6), MOV64_REG(4, 3), ALU64_REG(VM_SUB, 4, 2),                  \
        LDX(VM_DW, 7, 1, CTX_ARG0 + 8), ALU64_IMM(VM_AND, 7, 0xfffffff), __VA_ARGS__,       \
        ALU64_REG(VM_ADD, 2, 7), ALU64_REG(VM_ADD, 2, 7), RET0()
    {"pointer_plus_a_distance_stays_in_the_buffer", {VAR_LIMIT(JMP_REG(VM_JGT, 7, 4, 2))}, 0,
     nullptr, {}},
    {"pointer_plus_an_unrelated_length", {VAR_LIMIT(JMP_REG(VM_JGT, 7, 6, 2))}, -EACCES,
     "pointer offset out of range", {}},

    // --- table rows (invariant 11): r4 walks the 6-byte rows of an 18-byte table
    // beside its index r5 (`words[w][k]` at -O1) inside a loop over the input, so
    // the exploration without joins cannot unroll it; byte k of every row is read
#define ROW_WALK(k, ...)                                                                  \
    LOAD_IN(), LDX(VM_DW, 8, 1, CTX_ARG0), MOV64_IMM(0, 0), JMP_REG(VM_JGE, 2, 3, 12),      \
        LD_RODATA(4, 0), MOV64_IMM(5, 0), LDX(VM_B, 6, 4, k), ALU64_REG(VM_ADD, 0, 6),       \
        ALU64_IMM(VM_ADD, 4, 6), ALU64_IMM(VM_ADD, 5, 1), __VA_ARGS__,                      \
        JMP_IMM(VM_JSLT, 5, 3, -7), ALU64_IMM(VM_ADD, 2, 1), JA(-13), EXIT()
#define ROWS {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
    {"row_link_bounds_the_row",
     {ROW_WALK(5, JMP_IMM(VM_JEQ, 8, 0, 1), ALU64_IMM(VM_ADD, 0, -1))}, 0, nullptr, ROWS},
    {"row_link_one_past_the_row",
     {ROW_WALK(6, JMP_IMM(VM_JEQ, 8, 0, 1), ALU64_IMM(VM_ADD, 0, -1))}, -EACCES,
     "offset 18 size 1 is outside [0, 18)", ROWS},
    {"row_link_index_moved_alone",   // w-- on some paths: the row runs past the table
     {ROW_WALK(5, JMP_IMM(VM_JEQ, 8, 0, 1), ALU64_IMM(VM_ADD, 5, -1))}, -EACCES,
     "outside [0, 18)", ROWS},
#undef ROWS

    // --- joins keep apart a register set in one state and never set in the other
    // (clang -O1's `r2 = r4` on a path where r4 was never set, used only where a
    // second test of the same value says it was set): r9 = 1 where the byte is
    // not 0, used where it is not 0; the near miss uses it where it is 0
#define UNSET_JOIN(op)                                                                    \
    LOAD_IN(), MOV64_IMM(7, 0), JMP_REG(VM_JGE, 2, 3, 7), LDX(VM_B, 0, 2, 0),               \
        JMP_IMM(VM_JEQ, 0, 0, 1), MOV64_IMM(9, 1), JMP_IMM(op, 0, 0, 1),                    \
        ALU64_REG(VM_ADD, 7, 9), ALU64_IMM(VM_ADD, 2, 1), JA(-8), MOV64_REG(0, 7), EXIT()
    {"join_keeps_an_unset_register_apart", {UNSET_JOIN(VM_JEQ)}, 0, nullptr, {}},
    {"join_unset_register_used_where_unset", {UNSET_JOIN(VM_JNE)}, -EACCES,
     "R9 is read before it is initialised", {}},
    // --- a join pairs each buffer group of one state with one of the other; where
    // r2 pairs p's group with another, r4 = p and r5 = p + 1 still share a group
    // (they share a variable part in both states): r5 + 1 <= end proves the byte
    // at r4 + 1, not the one at r4 + 2
#define PAIR_CLASH(k)                                                                     \
    LOAD_IN(), LDX(VM_DW, 8, 1, CTX_ARG0), ALU64_IMM(VM_AND, 8, 7), MOV64_REG(4, 2),        \
        LDX(VM_DW, 9, 1, CTX_ARG0 + 8), JMP_REG(VM_JGE, 4, 3, 15), MOV64_REG(5, 4),          \
        ALU64_IMM(VM_ADD, 5, 1), JMP_IMM(VM_JEQ, 9, 0, 3), MOV64_REG(2, 4),                  \
        ALU64_IMM(VM_ADD, 2, 2), JA(2), MOV64_REG(2, 4), ALU64_REG(VM_ADD, 2, 8),            \
        MOV64_REG(6, 5), ALU64_IMM(VM_ADD, 6, 1), JMP_REG(VM_JGT, 6, 3, 2),                  \
        LDX(VM_B, 0, 4, k), ALU64_REG(VM_SUB, 2, 4), ALU64_IMM(VM_ADD, 4, 1), JA(-16),       \
        MOV64_IMM(0, 0), EXIT()
    {"join_pairing_clash_keeps_shared_groups", {PAIR_CLASH(1)}, 0, nullptr, {}},
    {"join_pairing_clash_one_past", {PAIR_CLASH(2)}, -EACCES, "outside the checked range", {}},

    // --- an end pointer walking back (invariant 12): `while (e > data && e[-1] ==
    // ' ') e--;` - e[-1] of the end itself by the byte data < end proved, then by
    // e's lower bound from `e > data`; the near misses test e >= data, read e[-2]
#define BACK_WALK(cmp, k)                                                                 \
    LOAD_IN(), JMP_REG(VM_JGE, 2, 3, 4), LDX(VM_B, 0, 3, k), JMP_IMM(VM_JNE, 0, 32, 2),     \
        ALU64_IMM(VM_ADD, 3, -1), JMP_REG(cmp, 3, 2, -4), MOV64_IMM(0, 0), EXIT()
    {"end_walking_back_bounded_by_the_start", {BACK_WALK(VM_JGT, -1)}, 0, nullptr, {}},
    {"end_walking_back_to_the_start_itself", {BACK_WALK(VM_JGE, -1)}, -EACCES,
     "cannot be dereferenced", {}},
    {"end_walking_back_two_bytes", {BACK_WALK(VM_JGT, -2)}, -EACCES, "cannot be dereferenced",
     {}},

    // --- atomics -------------------------------------------------------------------
    {"atomic_on_input",
     {LOAD_IN(), MOV64_REG(4, 2), ALU64_IMM(VM_ADD, 4, 8), JMP_REG(VM_JGT, 4, 3, 3),
      MOV64_IMM(5, 1), ATOMIC(VM_DW, 2, 5, 0, VM_ADD), EXIT(), RET0()},
     -EACCES, "read-only", {}},
    {"atomic_misaligned",
     {CALL(9), MOV64_IMM(2, 1), ATOMIC(VM_DW, 0, 2, 4, VM_ADD), RET0()}, -EACCES,
     "not aligned", {}},
    {"atomic_pointer_operand",
     {MOV64_REG(6, 1), CALL(9), ATOMIC(VM_DW, 0, 6, 0, VM_XCHG), RET0()}, -EACCES, "scalar operand", {}},
};

class VerifierCase : public ::testing::TestWithParam<Case> {};

TEST_P(VerifierCase, Verdict)
{
    const Case &c = GetParam();
    Verdict v = run_verifier(c.insns, c.rodata);
    EXPECT_EQ(v.rc, c.rc) << c.name << ": " << v.msg;
    if (c.frag) {
        EXPECT_NE(v.msg.find(c.frag), std::string::npos)
            << c.name << ": expected \"" << c.frag << "\" in:\n" << v.msg;
    }
    if (c.rc == 0) {
        EXPECT_EQ(v.msg, "");
    }
}

INSTANTIATE_TEST_SUITE_P(Programs, VerifierCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) {
                             return std::string(i.param.name);
                         });

} // namespace

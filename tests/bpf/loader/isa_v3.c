/* Compiled with -mcpu=v3 (see CMakeLists.txt): atomics, ALU32, byte swaps,
 * legacy packet loads, for comparing the disassembler with llvm-objdump.
 * Never run. */
#include <cisc_bpf.h>
SEC("cisc")
int isa(struct cisc_ctx *ctx)
{
    __u64 *p = cisc_state();
    __u32 *q = (__u32 *)p + 4;
    __u64 v = ctx->arg[0];
    __u32 w = (__u32)ctx->arg[1];
    __sync_fetch_and_add(p, v);
    __sync_fetch_and_add(q, w);
    __sync_fetch_and_or(p, v);
    v += __sync_fetch_and_add(p, v);
    w += __sync_fetch_and_xor(q, w);
    v += __sync_lock_test_and_set(p, v);
    w += __sync_lock_test_and_set(q, w);
    v += __sync_val_compare_and_swap(p, v, 7);
    w += __sync_val_compare_and_swap(q, w, 9);
    asm volatile(
        "w1 += w2\n"
        "w1 = -w1\n"
        "r1 = -r1\n"
        "w1 s>>= 3\n"
        "r1 = be16 r1\n"
        "r1 = le64 r1\n"
        "if w1 > w2 goto +1\n"
        "if w1 s< -3 goto +0\n"
        "*(u16 *)(r10 - 6) = w1\n"
        "w1 = *(u16 *)(r10 - 6)\n"
        "r0 = *(u8 *)skb[5]\n"
        "r0 = *(u32 *)skb[r1]\n"
        ::: "r0", "r1", "r2", "memory");
    return v + w;
}

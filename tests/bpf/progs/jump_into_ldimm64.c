/* Rejected: a conditional jump lands on the second half of an ld_imm64
 * (inline asm: the compiler never emits this). */
#include <cisc_bpf.h>

SEC("cisc")
int jump_into_ldimm64(struct cisc_ctx *ctx)
{
    __u64 v;
    asm volatile("r0 = 0\n"
                 "if r1 == 0 goto +1\n"
                 "r0 = 0x1234567890 ll\n"
                 "%0 = r0\n"
                 : "=r"(v)
                 :
                 : "r0");
    return (int)v;
}

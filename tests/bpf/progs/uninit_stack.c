/* Rejected: reads a stack slot nothing wrote (inline asm, because the C
 * compiler would not emit this for well-defined C). */
#include <cisc_bpf.h>

SEC("cisc")
int uninit_stack(struct cisc_ctx *ctx)
{
    __u64 v;
    asm volatile("%0 = *(u64 *)(r10 - 8)" : "=r"(v));
    return (int)v;
}

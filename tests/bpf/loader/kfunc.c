/* Rejected by the loader: a call to an extern (kernel) function. */
#include <cisc_bpf.h>

extern int bpf_kfunc_example(int x) __attribute__((section(".ksyms")));

SEC("cisc")
int call_kfunc(struct cisc_ctx *ctx)
{
    return bpf_kfunc_example((int)ctx->len);
}

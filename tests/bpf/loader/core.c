/* Rejected by the loader: a BTF CO-RE field relocation. */
#include <cisc_bpf.h>

struct task {
    int pid;
    int tgid;
} __attribute__((preserve_access_index));

SEC("cisc")
int read_task(struct cisc_ctx *ctx)
{
    const struct task *t = (const struct task *)ctx->arg[0];
    return t->tgid;
}

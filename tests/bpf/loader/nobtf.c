/* Accepted: built without -g (see CMakeLists.txt), so no BTF and no line
 * info; sums the first 8 input bytes. */
#include <cisc_bpf.h>

SEC("cisc")
int sum8(struct cisc_ctx *ctx)
{
    const __u8 *p = ctx->data;
    int s = 0;
    if (p + 8 > (const __u8 *)ctx->data_end)
        return 0;
    for (int i = 0; i < 8; i++)
        s += p[i];
    return s;
}

/* Rejected by the loader: an extern variable (libbpf's .kconfig). */
#include <cisc_bpf.h>

extern const int LINUX_KERNEL_VERSION __attribute__((section(".kconfig")));

SEC("cisc")
int use_kconfig(struct cisc_ctx *ctx)
{
    return LINUX_KERNEL_VERSION;
}

/* Rejected by the loader: a BTF-defined map in section .maps. */
#include <cisc_bpf.h>

struct {
    int *type;
    int *max_entries;
} counts SEC(".maps");

SEC("cisc")
int use_map(struct cisc_ctx *ctx)
{
    return (long)&counts != 0;
}

/* Rejected by the loader: a legacy map definition in section "maps". */
#include <cisc_bpf.h>

struct map_def {
    __u32 type, key_size, value_size, max_entries;
};
struct map_def hits SEC("maps") = {1, 4, 8, 16};

SEC("cisc")
int use_legacy_map(struct cisc_ctx *ctx)
{
    return (long)&hits != 0;
}

/* device/compute/compute.c - dispatch, output bounds, and the small
 * built-in steps (checksums, VERIFY, PATCH, CONCAT). zstd is in zstd.c,
 * encryption in crypt.c. */
#include "device/compute/compute.h"

#include "common/crc32c.h"
#include "common/le.h"
#include "proto/steps.h"

#include <errno.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

/* The built-in compute steps, by kind (the others are NULL). */
static int (*const runners[])(struct cmp_io *) = {
    [WIRE_STEP_CRC32C] = cmp_crc32c,
    [WIRE_STEP_XXH3] = cmp_xxh3,
    [WIRE_STEP_ZSTD_COMPRESS] = cmp_zstd_compress,
    [WIRE_STEP_ZSTD_DECOMPRESS] = cmp_zstd_decompress,
    [WIRE_STEP_ENCRYPT] = cmp_encrypt,
    [WIRE_STEP_DECRYPT] = cmp_decrypt,
    [WIRE_STEP_VERIFY] = cmp_verify,
    [WIRE_STEP_PATCH] = cmp_patch,
    [WIRE_STEP_CONCAT] = cmp_concat,
};

int cmp_is_compute(unsigned kind)
{
    return kind < sizeof(runners) / sizeof(runners[0]) && runners[kind];
}

int cmp_check_args(unsigned kind, const uint64_t arg[4])
{
    if (kind == WIRE_STEP_ZSTD_COMPRESS) {
        int64_t level = (int64_t)arg[0];
        if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
            return -EINVAL;
    }
    return cmp_is_compute(kind) ? 0 : -EINVAL;
}

uint64_t cmp_zstd_bound(uint64_t n)
{
    /* ZSTD_COMPRESSBOUND without overflow for absurd sizes. */
    return n > (1ull << 40) ? UINT64_MAX / 2 : (uint64_t)ZSTD_compressBound((size_t)n);
}

static int64_t bounded(uint64_t need, uint64_t req)
{
    return (int64_t)(req && req < need ? req : need);
}

/* Output capacity of the kinds whose output size depends on the data. */
static int64_t data_out_cap(unsigned kind, uint64_t in_cap, uint64_t in2_cap,
                            uint64_t req, const uint64_t arg[4])
{
    switch (kind) {
    case WIRE_STEP_ZSTD_COMPRESS: return bounded(cmp_zstd_bound(in_cap), req);
    case WIRE_STEP_ZSTD_DECOMPRESS: return req ? (int64_t)req : -EINVAL;
    case WIRE_STEP_ENCRYPT: return bounded(in_cap + CMP_SEAL_BYTES, req);
    case WIRE_STEP_DECRYPT:
        return bounded(in_cap > CMP_SEAL_BYTES ? in_cap - CMP_SEAL_BYTES : 0, req);
    case WIRE_STEP_CONCAT: return bounded(in_cap + in2_cap, req);
    case WIRE_STEP_PATCH: {
        if (arg[0] > (1ull << 40))
            return -EINVAL;
        uint64_t end = arg[0] + in2_cap;
        return bounded(end > in_cap ? end : in_cap, req);
    }
    default: return -EINVAL;
    }
}

int64_t cmp_out_cap(unsigned kind, uint64_t in_cap, uint64_t in2_cap, uint64_t req,
                    const uint64_t arg[4])
{
    if (!cmp_is_compute(kind))
        return -EINVAL;
    const struct step_kind *k = step_kind(kind);
    if (!(k->props & STEP_OUTPUT))
        return 0;   /* VERIFY */
    if (k->out_size)
        return k->out_size;   /* the checksums */
    return data_out_cap(kind, in_cap, in2_cap, req, arg);
}

int cmp_crc32c(struct cmp_io *io)
{
    if (io->out_cap < 4)
        return -EOVERFLOW;
    le32_put(io->out, crc32c((uint32_t)io->arg[0], io->in, io->in_len));
    io->out_len = 4;
    return 0;
}

int cmp_xxh3(struct cmp_io *io)
{
    if (io->out_cap < 8)
        return -EOVERFLOW;
    le64_put(io->out, XXH3_64bits_withSeed(io->in, io->in_len, io->arg[0]));
    io->out_len = 8;
    return 0;
}

int cmp_verify(struct cmp_io *io)
{
    io->out_len = 0;
    if (io->in_len != io->in2_len || (io->in_len && memcmp(io->in, io->in2, io->in_len)))
        return -EBADMSG;
    return 0;
}

int cmp_patch(struct cmp_io *io)
{
    uint64_t at = io->arg[0];
    if (at > io->out_cap || io->in2_len > io->out_cap - at)
        return -EOVERFLOW;
    size_t end = (size_t)at + io->in2_len;
    size_t len = end > io->in_len ? end : io->in_len;
    if (len > io->out_cap)
        return -EOVERFLOW;
    if (io->out != io->in)   /* the same buffer: patched in place (compute.h) */
        memcpy(io->out, io->in, io->in_len);
    if (at > io->in_len)
        memset(io->out + io->in_len, 0, (size_t)at - io->in_len);
    memcpy(io->out + at, io->in2, io->in2_len);
    io->out_len = len;
    return 0;
}

int cmp_concat(struct cmp_io *io)
{
    if (io->in_len > io->out_cap || io->in2_len > io->out_cap - io->in_len)
        return -EOVERFLOW;
    memcpy(io->out, io->in, io->in_len);
    memcpy(io->out + io->in_len, io->in2, io->in2_len);
    io->out_len = io->in_len + io->in2_len;
    return 0;
}

int cmp_run(unsigned kind, struct cmp_io *io)
{
    io->out_len = 0;
    return cmp_is_compute(kind) ? runners[kind](io) : -EINVAL;
}

/*
 * device/compute/compute.h - the built-in compute steps of CISC vectors:
 * checksums (crc32c, xxh3-64), zstd compression, authenticated encryption
 * (XChaCha20-Poly1305 IETF, libsodium), and the byte-shuffling steps
 * VERIFY, PATCH and CONCAT (wire.h describes each kind).
 *
 * A compute step is a pure function of its inputs: one or two input
 * buffers, an output buffer of a fixed capacity, four 64-bit arguments
 * and (for encryption) a key id resolved in the session's key registry.
 * The operand rules of each kind (inputs, output, fixed output sizes) are
 * the table of step kinds, proto/steps.h. The bpf step (WIRE_STEP_BPF) is
 * a compute kind of that table too, but not of this module:
 * device/engine/fused/bpfstep.c runs it.
 *
 * Output formats:
 *   CRC32C   4 bytes, little-endian, crc32c(seed = arg0, input)
 *   XXH3     8 bytes, little-endian, XXH3_64bits_withSeed(input, arg0)
 *   ENCRYPT  nonce (24, random per call) || ciphertext || tag (16)
 *   DECRYPT  plaintext; forged or truncated input -> -EBADMSG
 *   ZSTD_*   one zstd frame; decompression is bounded by out_cap
 *            (-EOVERFLOW when the content does not fit; -EBADMSG when
 *            the input is not valid zstd)
 *   VERIFY   no output; -EBADMSG unless input == in2
 *   PATCH    input with in2 copied over it at offset arg0 (zero gap,
 *            output grows to arg0 + in2_len if needed); out may be in
 *            itself (patched in place; in2 must not overlap it)
 *   CONCAT   input || in2
 *
 * Invariants:
 *   1. A step never writes more than out_cap bytes to out and never reads
 *      outside [in, in + in_len) and [in2, in2 + in2_len).
 *   2. cmp_out_cap() is an upper bound of what cmp_run() can produce for
 *      inputs of at most the given sizes; callers size buffers with it.
 *   3. Every failure is a negative errno; no step crashes on any input.
 *   4. Functions are thread-safe (zstd contexts are per thread).
 */
#ifndef CISC_DEVICE_COMPUTE_H
#define CISC_DEVICE_COMPUTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ckey_table;

#define CMP_NONCE_BYTES 24u
#define CMP_TAG_BYTES   16u
#define CMP_SEAL_BYTES  (CMP_NONCE_BYTES + CMP_TAG_BYTES)   /* encryption overhead */

struct cmp_io {
    const uint8_t *in;          /* first input */
    size_t in_len;
    const uint8_t *in2;         /* second input (VERIFY, PATCH, CONCAT) */
    size_t in2_len;
    uint8_t *out;               /* output buffer, out_cap bytes */
    size_t out_cap;
    uint64_t arg[4];            /* seed, level, patch offset */
    uint32_t key_id;            /* ENCRYPT/DECRYPT */
    struct ckey_table *keys;    /* the session's key registry (may be NULL) */
    size_t out_len;             /* result: bytes produced */
};

/* True when kind (enum wire_step_kind) is a built-in compute step, one
 * that cmp_run runs (every compute kind of proto/steps.h but BPF). */
int cmp_is_compute(unsigned kind);

/* Validates the static arguments of a built-in compute step (level in
 * range, ...). Returns 0 or -EINVAL (also for any other kind). */
int cmp_check_args(unsigned kind, const uint64_t arg[4]);

/* Output capacity a step of `kind` needs for inputs of at most in_cap and
 * in2_cap bytes; `req` is the caller's out_cap (0 = automatic), which
 * bounds it for the kinds whose output size is data dependent
 * (ZSTD_DECOMPRESS needs req > 0). Returns the capacity, or -EINVAL. */
int64_t cmp_out_cap(unsigned kind, uint64_t in_cap, uint64_t in2_cap, uint64_t req,
                    const uint64_t arg[4]);

/* Runs compute step `kind` on io; sets io->out_len. Returns 0 or -errno:
 * -EBADMSG (forged/corrupt input, VERIFY mismatch), -EOVERFLOW (output
 * does not fit out_cap), -ENOKEY (unknown key id), -ENOMEM. */
int cmp_run(unsigned kind, struct cmp_io *io);

/* The individual steps (same contract as cmp_run). */
int cmp_crc32c(struct cmp_io *io);
int cmp_xxh3(struct cmp_io *io);
int cmp_zstd_compress(struct cmp_io *io);
int cmp_zstd_decompress(struct cmp_io *io);
int cmp_encrypt(struct cmp_io *io);
int cmp_decrypt(struct cmp_io *io);
int cmp_verify(struct cmp_io *io);
int cmp_patch(struct cmp_io *io);
int cmp_concat(struct cmp_io *io);

/* Worst-case zstd frame size for n input bytes. */
uint64_t cmp_zstd_bound(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif

/*
 * common/crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Used for every metadata block checksum on the image, by the built-in
 * crc32c compute step and by the eBPF crc32c helper, so all three agree.
 * Invariants:
 *   1. crc32c(crc32c(0, a), b) == crc32c(0, a || b)  (chainable).
 *   2. The SSE4.2 instruction is used when the CPU has it; the table
 *      fallback gives identical results.
 * The seed/result convention is the usual one: pass 0 to start, pass the
 * previous result to continue. crc32c(0, "123456789", 9) == 0xE3069283.
 */
#ifndef CISC_COMMON_CRC32C_H
#define CISC_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Returns the CRC-32C of buf[0..len) continued from crc. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* Table-only implementation; exposed so tests can compare both paths. */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif

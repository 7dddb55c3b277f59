// Pins down CRC-32C: the standard check value, chaining, and that the
// hardware and table paths agree on every length and alignment.
#include <gtest/gtest.h>

#include <random>
#include <vector>

extern "C" {
#include "common/crc32c.h"
}

TEST(Crc32c, CheckValue)
{
    EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c_sw(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32c(0, "", 0), 0u);
}

TEST(Crc32c, ChainsAcrossSplits)
{
    const char *s = "the quick brown fox jumps over the lazy dog";
    size_t n = strlen(s);
    uint32_t whole = crc32c(0, s, n);
    for (size_t k = 0; k <= n; k++)
        EXPECT_EQ(crc32c(crc32c(0, s, k), s + k, n - k), whole) << k;
}

TEST(Crc32c, HardwareMatchesTable)
{
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(5000);
    for (auto &b : buf)
        b = (uint8_t)rng();
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 600; len += 7)
            ASSERT_EQ(crc32c(off, buf.data() + off, len),
                      crc32c_sw(off, buf.data() + off, len)) << off << " " << len;
}

// Pins down the little-endian helpers: byte order and unaligned access.
#include <gtest/gtest.h>

extern "C" {
#include "common/corrupt.h"
#include "common/le.h"
}

TEST(Le, ByteOrder)
{
    uint8_t b[9] = {0};
    le32_put(b + 1, 0x11223344u);
    EXPECT_EQ(b[1], 0x44);
    EXPECT_EQ(b[4], 0x11);
    EXPECT_EQ(le32_get(b + 1), 0x11223344u);
    le64_put(b + 1, 0x0102030405060708ull);
    EXPECT_EQ(b[1], 0x08);
    EXPECT_EQ(le64_get(b + 1), 0x0102030405060708ull);
    le16_put(b, 0xBEEF);
    EXPECT_EQ(le16_get(b), 0xBEEF);
}

TEST(Corrupt, ReportsSourceLineAndReturnsEuclean)
{
    cisc_corrupt_clear();
    EXPECT_EQ(CISC_CORRUPT("block %d: bad magic", 17), -EUCLEAN);
    std::string msg = cisc_corrupt_last();
    EXPECT_NE(msg.find("block 17: bad magic"), std::string::npos);
    EXPECT_NE(msg.find("le_test.cc:"), std::string::npos);
}

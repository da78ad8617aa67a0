// SPDX-License-Identifier: BSD-2-Clause
// CRC32c (Castagnoli) against published check values and a bitwise reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "wire/crc32c.h"

namespace softrdma::wire {
namespace {

// Slow, obviously-correct reference (reflected, init/xorout ~0), independent of the table and
// the SSE4.2 path in crc32c.cpp.
uint32_t reference_crc32c(const uint8_t *p, size_t len) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 131 + 7);
    return v;
}

TEST(Crc32c, StandardCheckValue) {
    const char *s = "123456789";
    EXPECT_EQ(crc32c(0, s, 9), 0xE3069283u);
}

TEST(Crc32c, EmptyInputIsIdentity) {
    EXPECT_EQ(crc32c(0, nullptr, 0), 0u);
    // An empty chunk must not disturb a running CRC either.
    const uint32_t running = crc32c(0, "abc", 3);
    EXPECT_EQ(crc32c(running, nullptr, 0), running);
}

// RFC 3720 (iSCSI) appendix B.4 test vectors.
TEST(Crc32c, IscsiVectors) {
    std::vector<uint8_t> zeros(32, 0x00);
    std::vector<uint8_t> ones(32, 0xFF);
    EXPECT_EQ(crc32c(0, zeros.data(), zeros.size()), 0x8A9136AAu);
    EXPECT_EQ(crc32c(0, ones.data(), ones.size()), 0x62A8AB43u);

    std::vector<uint8_t> inc(32), dec(32);
    for (int i = 0; i < 32; ++i) {
        inc[i] = uint8_t(i);
        dec[i] = uint8_t(31 - i);
    }
    EXPECT_EQ(crc32c(0, inc.data(), inc.size()), 0x46DD794Eu);
    EXPECT_EQ(crc32c(0, dec.data(), dec.size()), 0x113FDB5Cu);
}

TEST(Crc32c, IncrementalEqualsOneShotAtEverySplit) {
    const auto data = pattern(67);
    const uint32_t whole = crc32c(0, data.data(), data.size());
    for (size_t split = 0; split <= data.size(); ++split) {
        const uint32_t a = crc32c(0, data.data(), split);
        const uint32_t b = crc32c(a, data.data() + split, data.size() - split);
        EXPECT_EQ(b, whole) << "split at " << split;
    }
    // Byte at a time, too.
    uint32_t c = 0;
    for (uint8_t byte : data) c = crc32c(c, &byte, 1);
    EXPECT_EQ(c, whole);
}

// Every length 0..70 at every alignment 0..7 exercises the 8-byte loop and its tail.
TEST(Crc32c, MatchesBitwiseReferenceForAllLengthsAndAlignments) {
    const auto data = pattern(80);
    for (size_t off = 0; off < 8; ++off) {
        for (size_t len = 0; off + len <= 78 && len <= 70; ++len) {
            EXPECT_EQ(crc32c(0, data.data() + off, len), reference_crc32c(data.data() + off, len))
                << "off " << off << " len " << len;
        }
    }
}

TEST(Crc32c, DiffersOnSingleBitFlip) {
    auto data = pattern(40);
    const uint32_t before = crc32c(0, data.data(), data.size());
    data[17] ^= 0x04;
    EXPECT_NE(crc32c(0, data.data(), data.size()), before);
}

}  // namespace
}  // namespace softrdma::wire

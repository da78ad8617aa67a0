// SPDX-License-Identifier: BSD-2-Clause
// The UD datagram header (docs/wire.md §8): byte layout, round trip, and rejection of
// anything that is not one of ours.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire/ud_header.h"

using namespace softrdma::wire;

TEST(WireUdHeader, LayoutIsBigEndianAndFixed) {
    UdHeader h;
    h.flags = kUdFlagImm | kUdFlagSolicited;
    h.dst_qpn = 0x12ab34;
    h.src_qpn = 0x00ff01;
    h.qkey = 0x11223344;
    h.imm = 0xa1b2c3d4;
    uint8_t b[kUdHeaderLen];
    encode_ud_header(h, b);
    const uint8_t want[kUdHeaderLen] = {0x55, 0x01, 0x03, 0x00, 0x00, 0x12, 0xab, 0x34, 0x00, 0x00,
                                        0xff, 0x01, 0x11, 0x22, 0x33, 0x44, 0xa1, 0xb2, 0xc3, 0xd4};
    EXPECT_EQ(std::memcmp(b, want, sizeof want), 0);
    UdHeader d;
    ASSERT_TRUE(decode_ud_header(std::span<const uint8_t>(b, sizeof b), d));
    EXPECT_EQ(d.flags, h.flags);
    EXPECT_EQ(d.dst_qpn, h.dst_qpn);
    EXPECT_EQ(d.src_qpn, h.src_qpn);
    EXPECT_EQ(d.qkey, h.qkey);
    EXPECT_EQ(d.imm, h.imm);
}

TEST(WireUdHeader, RejectsForeignOrDamagedHeaders) {
    UdHeader h;
    h.dst_qpn = 0x0100ff;
    uint8_t good[kUdHeaderLen];
    encode_ud_header(h, good);
    UdHeader d;
    for (size_t n = 0; n < kUdHeaderLen; ++n)  // every truncation
        EXPECT_FALSE(decode_ud_header(std::span<const uint8_t>(good, n), d)) << n;
    auto bad = [&](size_t at, uint8_t v) {
        uint8_t b[kUdHeaderLen];
        std::memcpy(b, good, sizeof b);
        b[at] = v;
        return !decode_ud_header(std::span<const uint8_t>(b, sizeof b), d);
    };
    EXPECT_TRUE(bad(0, 0x56));                             // magic
    EXPECT_TRUE(bad(1, 2));                                // version
    EXPECT_TRUE(bad(2, 0x10));                             // unknown flag
    EXPECT_TRUE(bad(2, kUdFlagRestart));                   // a restart outside a grant
    EXPECT_FALSE(bad(2, kUdFlagCredit));                   // a flow-control grant
    EXPECT_FALSE(bad(2, kUdFlagCredit | kUdFlagRestart));  // the first grant of a count
    EXPECT_TRUE(bad(4, 0x01));                             // destination QPN above 24 bits
    EXPECT_TRUE(bad(8, 0x80));                             // source QPN above 24 bits
    EXPECT_TRUE(decode_ud_header(std::span<const uint8_t>(good, sizeof good), d));
}

TEST(WireUdHeader, RandomBytesNeverDecodeOutOfRange) {
    std::mt19937 rng(7);
    std::vector<uint8_t> b(64);
    for (int i = 0; i < 20000; ++i) {
        const size_t n = rng() % b.size();
        for (auto &x : b) x = uint8_t(rng());
        if (i % 2) b[0] = kUdMagic, b[1] = kUdVersion;
        UdHeader d;
        if (decode_ud_header(std::span<const uint8_t>(b.data(), n), d)) {
            EXPECT_GE(n, kUdHeaderLen);
            EXPECT_EQ(d.dst_qpn >> 24, 0u);
            EXPECT_EQ(d.src_qpn >> 24, 0u);
        }
    }
}

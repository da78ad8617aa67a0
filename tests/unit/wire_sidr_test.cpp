// SPDX-License-Identifier: BSD-2-Clause
// SIDR request/reply datagrams (docs/wire.md §8.2): layout, round trip and rejection of
// damaged or oversized messages.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire/sidr.h"

using namespace softrdma::wire;

TEST(WireSidr, ReplyLayoutAndRoundTrip) {
    const uint8_t pd[3] = {0xaa, 0xbb, 0xcc};
    SidrMsg m;
    m.type = SidrType::kReply;
    m.status = kSidrReject;
    m.req_id = 0x01020304;
    m.qpn = 0x00abcdef;
    m.qkey = 0x01234567;
    m.private_data = pd;
    const auto b = encode_sidr(m);
    const std::vector<uint8_t> want = {0x53, 0x01, 0x02, 0x02, 0x01, 0x02, 0x03, 0x04,
                                       0x00, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
                                       0x03, 0x00, 0x00, 0x00, 0xaa, 0xbb, 0xcc};
    EXPECT_EQ(b, want);
    SidrMsg d;
    ASSERT_TRUE(decode_sidr(b, d));
    EXPECT_EQ(d.type, SidrType::kReply);
    EXPECT_EQ(d.status, kSidrReject);
    EXPECT_EQ(d.req_id, m.req_id);
    EXPECT_EQ(d.qpn, m.qpn);
    EXPECT_EQ(d.qkey, m.qkey);
    ASSERT_EQ(d.private_data.size(), 3u);
    EXPECT_EQ(std::memcmp(d.private_data.data(), pd, 3), 0);
}

TEST(WireSidr, RejectsDamagedAndOversized) {
    std::vector<uint8_t> pd(kSidrReqPrivateData);
    SidrMsg m;
    m.private_data = pd;
    auto b = encode_sidr(m);
    SidrMsg d;
    EXPECT_TRUE(decode_sidr(b, d));  // a request may carry 180 bytes
    b[2] = uint8_t(SidrType::kReply);
    EXPECT_FALSE(decode_sidr(b, d));  // a reply may not
    b = encode_sidr(m);
    EXPECT_FALSE(decode_sidr(std::span<const uint8_t>(b.data(), b.size() - 1), d));  // truncated
    for (size_t n = 0; n < kSidrHeaderLen; ++n)
        EXPECT_FALSE(decode_sidr(std::span<const uint8_t>(b.data(), n), d));
    auto bad = [&](size_t at, uint8_t v) {
        auto c = encode_sidr(m);
        c[at] = v;
        return !decode_sidr(c, d);
    };
    EXPECT_TRUE(bad(0, 0x54));  // magic
    EXPECT_TRUE(bad(1, 9));     // version
    EXPECT_TRUE(bad(2, 3));     // type
    EXPECT_TRUE(bad(8, 1));     // QPN above 24 bits
    EXPECT_TRUE(bad(16, 181));  // private data longer than allowed
}

TEST(WireSidr, RandomBytesStayInBounds) {
    std::mt19937 rng(11);
    std::vector<uint8_t> b(256);
    for (int i = 0; i < 20000; ++i) {
        const size_t n = rng() % b.size();
        for (auto &x : b) x = uint8_t(rng());
        if (i % 2) b[0] = kSidrMagic, b[1] = kSidrVersion, b[2] = uint8_t(1 + i % 4 / 2);
        SidrMsg d;
        if (decode_sidr(std::span<const uint8_t>(b.data(), n), d)) {
            EXPECT_LE(kSidrHeaderLen + d.private_data.size(), n);
            EXPECT_EQ(d.qpn >> 24, 0u);
        }
    }
}

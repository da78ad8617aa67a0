// SPDX-License-Identifier: BSD-2-Clause
// The QP hello carried in the MPA private data of raw-verbs RC/UC connections.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "wire/qp_hello.h"

namespace softrdma::wire {
namespace {

using Bytes = std::vector<uint8_t>;

QpHello sample() {
    QpHello h;
    h.status = QpHelloStatus::kAccept;
    h.qp_type = IBV_QPT_UC;
    h.dst_qpn = 0x00ABCDEF;
    h.src_qpn = 0x00123456;
    for (int i = 0; i < 16; ++i) {
        h.src_gid[i] = uint8_t(0x10 + i);
        h.dst_gid[i] = uint8_t(0xE0 + i);
    }
    return h;
}

Bytes encode(const QpHello &h) {
    Bytes b(kQpHelloLen);
    encode_qp_hello(h, b.data());
    return b;
}

bool decode(const Bytes &b, QpHello &out) {
    return decode_qp_hello(std::span<const uint8_t>(b.data(), b.size()), out);
}

TEST(QpHello, ByteLayout) {
    const Bytes b = encode(sample());
    ASSERT_EQ(b.size(), 48u);
    const Bytes head = {'S',
                        'R',
                        'Q',
                        'P',   // magic 0x53525150
                        0x01,  // version
                        0x01,  // status: accept
                        uint8_t(IBV_QPT_UC),
                        0x00,
                        0x00,
                        0xAB,
                        0xCD,
                        0xEF,
                        0x00,
                        0x12,
                        0x34,
                        0x56};
    EXPECT_EQ(Bytes(b.begin(), b.begin() + 16), head);
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(b[16 + i], 0x10 + i);
        EXPECT_EQ(b[32 + i], 0xE0 + i);
    }
}

TEST(QpHello, RoundTripEveryStatus) {
    for (uint8_t s = 0; s <= uint8_t(QpHelloStatus::kBadType); ++s) {
        QpHello in = sample();
        in.status = QpHelloStatus(s);
        in.qp_type = IBV_QPT_RC;
        QpHello out;
        ASSERT_TRUE(decode(encode(in), out)) << int(s);
        EXPECT_EQ(out.status, in.status);
        EXPECT_EQ(out.qp_type, in.qp_type);
        EXPECT_EQ(out.dst_qpn, in.dst_qpn);
        EXPECT_EQ(out.src_qpn, in.src_qpn);
        EXPECT_EQ(0, std::memcmp(out.src_gid, in.src_gid, 16));
        EXPECT_EQ(0, std::memcmp(out.dst_gid, in.dst_gid, 16));
    }
}

TEST(QpHello, RoundTripQpnLimits) {
    for (uint32_t qpn : {0u, 1u, 0x00FFFFFFu}) {
        QpHello in = sample();
        in.dst_qpn = qpn;
        in.src_qpn = 0x00FFFFFFu - qpn;
        QpHello out;
        ASSERT_TRUE(decode(encode(in), out));
        EXPECT_EQ(out.dst_qpn, in.dst_qpn);
        EXPECT_EQ(out.src_qpn, in.src_qpn);
    }
}

TEST(QpHello, RejectsWrongMagic) {
    for (int i = 0; i < 4; ++i) {
        Bytes b = encode(sample());
        b[i] ^= 0x20;
        QpHello out;
        EXPECT_FALSE(decode(b, out)) << i;
    }
}

TEST(QpHello, RejectsWrongVersion) {
    for (uint8_t v : {uint8_t(0), uint8_t(2), uint8_t(0xFF)}) {
        Bytes b = encode(sample());
        b[4] = v;
        QpHello out;
        EXPECT_FALSE(decode(b, out)) << int(v);
    }
}

TEST(QpHello, RejectsStatusOutOfRange) {
    for (uint8_t s : {uint8_t(5), uint8_t(0x80), uint8_t(0xFF)}) {
        Bytes b = encode(sample());
        b[5] = s;
        QpHello out;
        EXPECT_FALSE(decode(b, out)) << int(s);
    }
}

TEST(QpHello, RejectsWrongLength) {
    const Bytes b = encode(sample());
    QpHello out;
    for (size_t n : {size_t(0), size_t(16), size_t(47)}) {
        EXPECT_FALSE(decode_qp_hello(std::span<const uint8_t>(b.data(), n), out)) << n;
    }
    Bytes longer = b;
    longer.push_back(0);
    EXPECT_FALSE(decode(longer, out));
}

TEST(QpHello, RejectsQpnAbove24Bits) {
    // Byte 8 is the top byte of dst_qpn, byte 12 of src_qpn.
    for (size_t pos : {size_t(8), size_t(12)}) {
        for (uint8_t v : {uint8_t(0x01), uint8_t(0x80)}) {
            Bytes b = encode(sample());
            b[pos] = v;
            QpHello out;
            EXPECT_FALSE(decode(b, out)) << pos << " " << int(v);
        }
    }
}

}  // namespace
}  // namespace softrdma::wire

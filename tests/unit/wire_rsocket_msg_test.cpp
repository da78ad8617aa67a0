// SPDX-License-Identifier: BSD-2-Clause
// The rsocket protocol's codecs: connect data, immediates, control messages, datagram headers.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "wire/rsocket_msg.h"

namespace softrdma::wire {
namespace {

RsConnData sample_conn() {
    RsConnData c;
    c.credits = 384;
    c.iomap_size = 3;
    c.ring_addr = 0x00007f1234560000ull;
    c.ring_rkey = 0xabcdef01;
    c.ring_size = 1 << 20;
    return c;
}

TEST(RsocketWire, ConnDataRoundTripsBigEndian) {
    uint8_t b[kRsConnDataLen];
    encode_rs_conn_data(sample_conn(), b);
    EXPECT_EQ(b[0], kRsVersion);
    EXPECT_EQ(b[2], 0x01);  // 384 = 0x0180, big-endian
    EXPECT_EQ(b[3], 0x80);
    EXPECT_EQ(b[7], 3);
    EXPECT_EQ(b[16], 0xab);
    RsConnData c;
    ASSERT_TRUE(decode_rs_conn_data(b, c));
    EXPECT_EQ(c.credits, 384);
    EXPECT_EQ(c.iomap_size, 3);
    EXPECT_EQ(c.ring_addr, 0x00007f1234560000ull);
    EXPECT_EQ(c.ring_rkey, 0xabcdef01u);
    EXPECT_EQ(c.ring_size, 1u << 20);
}

TEST(RsocketWire, ConnDataRefusesWhatCannotBeAnRsocket) {
    uint8_t b[kRsConnDataLen];
    RsConnData c;
    encode_rs_conn_data(sample_conn(), b);
    EXPECT_FALSE(decode_rs_conn_data({b, kRsConnDataLen - 1}, c)) << "short";
    b[0] = 2;
    EXPECT_FALSE(decode_rs_conn_data(b, c)) << "another version";
    RsConnData bad = sample_conn();
    bad.ring_size = 0;
    encode_rs_conn_data(bad, b);
    EXPECT_FALSE(decode_rs_conn_data(b, c)) << "no ring";
    bad.ring_size = kRsImmValueMask + 1;
    encode_rs_conn_data(bad, b);
    EXPECT_FALSE(decode_rs_conn_data(b, c)) << "a ring the immediate cannot describe";
    bad = sample_conn();
    bad.credits = 0;
    encode_rs_conn_data(bad, b);
    EXPECT_FALSE(decode_rs_conn_data(b, c)) << "no receive credits";
}

TEST(RsocketWire, ImmediateCarriesOpAndLength) {
    const uint32_t imm = rs_imm(RsOp::kData, 65536);
    EXPECT_EQ(rs_imm_op(imm), RsOp::kData);
    EXPECT_EQ(rs_imm_value(imm), 65536u);
    EXPECT_EQ(rs_imm_value(rs_imm(RsOp::kData, 0xffffffff)), kRsImmValueMask) << "masked";
    EXPECT_NE(rs_imm_op(0xe0000000), RsOp::kData);
}

TEST(RsocketWire, ControlMessagesRoundTrip) {
    RsCtrlMsg m;
    m.type = RsCtrl::kIomap;
    m.a = 0x1122334455667788ull;
    m.b = 0x99aabbccddeeff00ull;
    m.c = 0x01020304;
    m.d = 4096;
    uint8_t b[kRsCtrlLen];
    encode_rs_ctrl(m, b);
    RsCtrlMsg g;
    ASSERT_TRUE(decode_rs_ctrl(b, g));
    EXPECT_EQ(g.type, RsCtrl::kIomap);
    EXPECT_EQ(g.a, m.a);
    EXPECT_EQ(g.b, m.b);
    EXPECT_EQ(g.c, m.c);
    EXPECT_EQ(g.d, m.d);
    EXPECT_FALSE(decode_rs_ctrl({b, kRsCtrlLen - 1}, g)) << "a receive of another length";
    b[0] = 0;
    EXPECT_FALSE(decode_rs_ctrl(b, g)) << "type 0";
    b[0] = 9;
    EXPECT_FALSE(decode_rs_ctrl(b, g)) << "unknown type";
}

TEST(RsocketWire, DatagramHeaders) {
    RsUdpHdr h;
    h.op = RsUdpOp::kResolved;
    h.qpn = 0xabcdef;
    uint8_t b[kRsUdpHdrLen];
    encode_rs_udp_hdr(h, b);
    RsUdpHdr g;
    ASSERT_TRUE(decode_rs_udp_hdr(b, g));
    EXPECT_EQ(g.op, RsUdpOp::kResolved);
    EXPECT_EQ(g.qpn, 0xabcdefu);
    b[0] ^= 1;
    EXPECT_FALSE(decode_rs_udp_hdr(b, g)) << "someone else's UDP datagram";

    RsUdHdr u;
    u.src_port = 7174;
    u.src_qpn = 0x123456;
    uint8_t ub[kRsUdHdrLen];
    encode_rs_ud_hdr(u, ub);
    RsUdHdr ug;
    ASSERT_TRUE(decode_rs_ud_hdr(ub, ug));
    EXPECT_EQ(ug.src_port, 7174);
    EXPECT_EQ(ug.src_qpn, 0x123456u);
    EXPECT_FALSE(decode_rs_ud_hdr({ub, 7}, ug));
}

}  // namespace
}  // namespace softrdma::wire

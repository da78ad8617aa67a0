// SPDX-License-Identifier: BSD-2-Clause
#include "wire/rsocket_msg.h"

#include <cstring>

#include "wire/byte_order.h"

namespace softrdma::wire {

// 0 version | 1 flags | 2-3 credits | 4-6 reserved | 7 iomap_size | 8-15 ring_addr
// 16-19 ring_rkey | 20-23 ring_size | 24-39 reserved
void encode_rs_conn_data(const RsConnData &c, uint8_t *out) {
    std::memset(out, 0, kRsConnDataLen);
    out[0] = c.version;
    out[1] = c.flags;
    put16(out + 2, c.credits);
    out[7] = c.iomap_size;
    put64(out + 8, c.ring_addr);
    put32(out + 16, c.ring_rkey);
    put32(out + 20, c.ring_size);
    put64(out + 24, c.reserved);
}

bool decode_rs_conn_data(std::span<const uint8_t> in, RsConnData &out) {
    if (in.size() < kRsConnDataLen) return false;
    const uint8_t *p = in.data();
    if (p[0] != kRsVersion) return false;
    out.version = p[0];
    out.flags = p[1];
    out.credits = get16(p + 2);
    out.iomap_size = p[7];
    out.ring_addr = get64(p + 8);
    out.ring_rkey = get32(p + 16);
    out.ring_size = get32(p + 20);
    out.reserved = get64(p + 24);
    // A ring the data immediates cannot describe, or one with no room, is no ring.
    if (out.ring_size == 0 || out.ring_size > kRsImmValueMask || out.credits == 0) return false;
    return true;
}

// 0 type | 1-3 zero | 4-7 c | 8-15 a | 16-23 b | 24-27 d | 28-31 zero
void encode_rs_ctrl(const RsCtrlMsg &m, uint8_t *out) {
    std::memset(out, 0, kRsCtrlLen);
    out[0] = uint8_t(m.type);
    put32(out + 4, m.c);
    put64(out + 8, m.a);
    put64(out + 16, m.b);
    put32(out + 24, m.d);
}

bool decode_rs_ctrl(std::span<const uint8_t> in, RsCtrlMsg &out) {
    if (in.size() != kRsCtrlLen) return false;
    const uint8_t *p = in.data();
    if (p[0] < uint8_t(RsCtrl::kCredit) || p[0] > uint8_t(RsCtrl::kIomap)) return false;
    out.type = RsCtrl(p[0]);
    out.c = get32(p + 4);
    out.a = get64(p + 8);
    out.b = get64(p + 16);
    out.d = get32(p + 24);
    return true;
}

// 0-3 tag | 4 version | 5 op | 6-7 zero | 8-11 qpn | 12-15 zero
void encode_rs_udp_hdr(const RsUdpHdr &h, uint8_t *out) {
    std::memset(out, 0, kRsUdpHdrLen);
    put32(out, kRsUdpTag);
    out[4] = kRsVersion;
    out[5] = uint8_t(h.op);
    put32(out + 8, h.qpn);
}

bool decode_rs_udp_hdr(std::span<const uint8_t> in, RsUdpHdr &out) {
    if (in.size() < kRsUdpHdrLen) return false;
    const uint8_t *p = in.data();
    if (get32(p) != kRsUdpTag || p[4] != kRsVersion) return false;
    if (p[5] != uint8_t(RsUdpOp::kData) && p[5] != uint8_t(RsUdpOp::kResolved)) return false;
    out.op = RsUdpOp(p[5]);
    out.qpn = get32(p + 8) & 0xffffff;
    return true;
}

// 0 version | 1 zero | 2-3 src_port | 4-7 src_qpn
void encode_rs_ud_hdr(const RsUdHdr &h, uint8_t *out) {
    out[0] = kRsVersion;
    out[1] = 0;
    put16(out + 2, h.src_port);
    put32(out + 4, h.src_qpn);
}

bool decode_rs_ud_hdr(std::span<const uint8_t> in, RsUdHdr &out) {
    if (in.size() < kRsUdHdrLen || in[0] != kRsVersion) return false;
    out.src_port = get16(in.data() + 2);
    out.src_qpn = get32(in.data() + 4) & 0xffffff;
    return true;
}

}  // namespace softrdma::wire

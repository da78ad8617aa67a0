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

}  // namespace softrdma::wire

// SPDX-License-Identifier: BSD-2-Clause
#include "wire/ud_header.h"

#include "wire/byte_order.h"

namespace softrdma::wire {

void encode_ud_header(const UdHeader &h, uint8_t *out) {
    out[0] = kUdMagic;
    out[1] = kUdVersion;
    out[2] = h.flags;
    out[3] = 0;
    put32(out + 4, h.dst_qpn);
    put32(out + 8, h.src_qpn);
    put32(out + 12, h.qkey);
    put32(out + 16, h.imm);
}

bool decode_ud_header(std::span<const uint8_t> in, UdHeader &out) {
    if (in.size() < kUdHeaderLen || in[0] != kUdMagic || in[1] != kUdVersion) return false;
    if (in[2] & ~uint8_t(kUdFlagImm | kUdFlagSolicited | kUdFlagCredit | kUdFlagRestart))
        return false;
    if ((in[2] & kUdFlagRestart) && !(in[2] & kUdFlagCredit)) return false;
    out.flags = in[2];
    out.dst_qpn = get32(&in[4]);
    out.src_qpn = get32(&in[8]);
    out.qkey = get32(&in[12]);
    out.imm = get32(&in[16]);
    return (out.dst_qpn >> 24) == 0 && (out.src_qpn >> 24) == 0;
}

}  // namespace softrdma::wire

// SPDX-License-Identifier: BSD-2-Clause
#include "wire/qp_hello.h"

#include <cstring>

#include "wire/byte_order.h"

namespace softrdma::wire {

void encode_qp_hello(const QpHello &h, uint8_t *out) {
    put32(out, kQpHelloMagic);
    out[4] = kQpHelloVersion;
    out[5] = uint8_t(h.status);
    out[6] = h.qp_type;
    out[7] = 0;
    put32(out + 8, h.dst_qpn);
    put32(out + 12, h.src_qpn);
    std::memcpy(out + 16, h.src_gid, 16);
    std::memcpy(out + 32, h.dst_gid, 16);
}

bool decode_qp_hello(std::span<const uint8_t> in, QpHello &out) {
    if (in.size() != kQpHelloLen) return false;
    if (get32(in.data()) != kQpHelloMagic || in[4] != kQpHelloVersion) return false;
    if (in[5] > uint8_t(QpHelloStatus::kBadType)) return false;
    out.status = QpHelloStatus(in[5]);
    out.qp_type = in[6];
    out.dst_qpn = get32(&in[8]);
    out.src_qpn = get32(&in[12]);
    if ((out.dst_qpn >> 24) != 0 || (out.src_qpn >> 24) != 0) return false;
    std::memcpy(out.src_gid, &in[16], 16);
    std::memcpy(out.dst_gid, &in[32], 16);
    return true;
}

}  // namespace softrdma::wire

// SPDX-License-Identifier: BSD-2-Clause
#include "wire/sidr.h"

#include "wire/byte_order.h"

namespace softrdma::wire {

std::vector<uint8_t> encode_sidr(const SidrMsg &m) {
    std::vector<uint8_t> out(kSidrHeaderLen + m.private_data.size());
    out[0] = kSidrMagic;
    out[1] = kSidrVersion;
    out[2] = uint8_t(m.type);
    out[3] = m.status;
    put32(&out[4], m.req_id);
    put32(&out[8], m.qpn);
    put32(&out[12], m.qkey);
    out[16] = uint8_t(m.private_data.size());
    for (size_t i = 0; i < m.private_data.size(); ++i) out[kSidrHeaderLen + i] = m.private_data[i];
    return out;
}

bool decode_sidr(std::span<const uint8_t> in, SidrMsg &out) {
    if (in.size() < kSidrHeaderLen || in[0] != kSidrMagic || in[1] != kSidrVersion) return false;
    if (in[2] != uint8_t(SidrType::kRequest) && in[2] != uint8_t(SidrType::kReply)) return false;
    out.type = SidrType(in[2]);
    out.status = in[3];
    out.req_id = get32(&in[4]);
    out.qpn = get32(&in[8]);
    out.qkey = get32(&in[12]);
    const size_t len = in[16];
    const size_t max = out.type == SidrType::kRequest ? kSidrReqPrivateData : kSidrRepPrivateData;
    if (len > max || kSidrHeaderLen + len > in.size() || (out.qpn >> 24) != 0) return false;
    out.private_data = in.subspan(kSidrHeaderLen, len);
    return true;
}

}  // namespace softrdma::wire

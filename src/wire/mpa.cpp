// SPDX-License-Identifier: BSD-2-Clause
#include "wire/mpa.h"

#include <cstring>

#include "wire/byte_order.h"

namespace softrdma::wire {
namespace {
constexpr char kReqKey[] = "MPA ID Req Frame";
constexpr char kRepKey[] = "MPA ID Rep Frame";
static_assert(sizeof(kReqKey) == kMpaKeyLen + 1 && sizeof(kRepKey) == kMpaKeyLen + 1);
}  // namespace

std::vector<uint8_t> encode_mpa_frame(const MpaFrame &f) {
    const bool v2 = f.flags & kMpaFlagEnhanced;
    const size_t pd_len = f.private_data.size() + (v2 ? kMpaV2DataLen : 0);
    std::vector<uint8_t> out(kMpaFixedLen + pd_len);
    std::memcpy(out.data(), f.reply ? kRepKey : kReqKey, kMpaKeyLen);
    put16(&out[16], uint16_t((f.flags & 0xff00) | f.revision));
    put16(&out[18], uint16_t(pd_len));
    size_t off = kMpaFixedLen;
    if (v2) {
        put16(&out[off], f.ird);
        put16(&out[off + 2], f.ord);
        off += kMpaV2DataLen;
    }
    if (!f.private_data.empty()) std::memcpy(&out[off], f.private_data.data(), f.private_data.size());
    return out;
}

MpaDecodeResult decode_mpa_frame(std::span<const uint8_t> in, bool expect_reply, MpaFrame &out) {
    if (in.size() < kMpaFixedLen) return {DecodeStatus::kNeedMore, kMpaFixedLen};
    if (std::memcmp(in.data(), expect_reply ? kRepKey : kReqKey, kMpaKeyLen) != 0)
        return {DecodeStatus::kMalformed, 0};
    const uint16_t word = get16(&in[16]);
    const uint16_t pd_len = get16(&in[18]);
    if (pd_len > kMpaMaxPrivateData + kMpaV2DataLen) return {DecodeStatus::kMalformed, 0};
    const size_t total = kMpaFixedLen + pd_len;
    if (in.size() < total) return {DecodeStatus::kNeedMore, total};
    out.reply = expect_reply;
    out.flags = word & 0xff00;
    out.revision = uint8_t(word & 0xff);
    if (out.revision != 1 && out.revision != 2) return {DecodeStatus::kMalformed, 0};
    size_t off = kMpaFixedLen;
    size_t left = pd_len;
    out.ird = out.ord = 0;
    if ((out.flags & kMpaFlagEnhanced) && out.revision == 2) {
        if (left < kMpaV2DataLen) return {DecodeStatus::kMalformed, 0};
        out.ird = get16(&in[off]);
        out.ord = get16(&in[off + 2]);
        off += kMpaV2DataLen;
        left -= kMpaV2DataLen;
    } else {
        out.flags &= uint16_t(~kMpaFlagEnhanced);
    }
    if (left > kMpaMaxPrivateData) return {DecodeStatus::kMalformed, 0};
    out.private_data.assign(in.begin() + off, in.begin() + off + left);
    return {DecodeStatus::kOk, total};
}

}  // namespace softrdma::wire

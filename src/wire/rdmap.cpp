// SPDX-License-Identifier: BSD-2-Clause
#include "wire/rdmap.h"

#include <cstdio>
#include <iterator>

#include "wire/byte_order.h"

namespace softrdma::wire {
namespace {
constexpr uint8_t kDdpTagged = 0x80;
constexpr uint8_t kDdpLast = 0x40;
constexpr uint8_t kDdpVersion = 0x01;
constexpr uint8_t kRdmapVersion = 0x40;  // RV = 01 in the top two bits
}  // namespace

bool op_is_tagged(RdmapOp op) {
    return op == RdmapOp::kWrite || op == RdmapOp::kReadResponse;
}

bool op_is_extension(RdmapOp op) {
    return uint8_t(op) >= uint8_t(RdmapOp::kImmediate);
}

size_t encode_segment_header(const SegmentHeader &h, uint8_t *out) {
    const bool tagged = op_is_tagged(h.op);
    const size_t hl = tagged ? kTaggedHeaderLen : kUntaggedHeaderLen;
    put16(out, uint16_t(hl - kMpaLenField + h.payload_len));
    out[2] = uint8_t((tagged ? kDdpTagged : 0) | (h.last ? kDdpLast : 0) | kDdpVersion);
    out[3] = uint8_t(kRdmapVersion | uint8_t(h.op));
    if (tagged) {
        put32(out + 4, h.stag);
        put64(out + 8, h.to);
    } else {
        put32(out + 4, h.ulp);
        put32(out + 8, h.qn);
        put32(out + 12, h.msn);
        put32(out + 16, h.mo);
    }
    return hl;
}

SegmentDecodeResult decode_segment_header(std::span<const uint8_t> in, SegmentHeader &out) {
    if (in.size() < 4) return {DecodeStatus::kNeedMore, 4};
    const uint16_t ulpdu = get16(in.data());
    const uint8_t ddp = in[2];
    const uint8_t rdmap = in[3];
    if ((ddp & 0x03) != kDdpVersion || (ddp & 0x3c) != 0) return {DecodeStatus::kMalformed, 0};
    if ((rdmap & 0xf0) != kRdmapVersion) return {DecodeStatus::kMalformed, 0};
    const auto op = RdmapOp(rdmap & 0x0f);
    if (op == RdmapOp(0xf)) return {DecodeStatus::kMalformed, 0};
    const bool tagged = ddp & kDdpTagged;
    if (tagged != op_is_tagged(op)) return {DecodeStatus::kMalformed, 0};
    const size_t hl = tagged ? kTaggedHeaderLen : kUntaggedHeaderLen;
    if (size_t(ulpdu) + kMpaLenField < hl) return {DecodeStatus::kMalformed, 0};
    if (in.size() < hl) return {DecodeStatus::kNeedMore, hl};
    out.op = op;
    out.last = ddp & kDdpLast;
    out.payload_len = uint16_t(ulpdu + kMpaLenField - hl);
    if (tagged) {
        out.stag = get32(&in[4]);
        out.to = get64(&in[8]);
        out.ulp = out.qn = out.msn = out.mo = 0;
    } else {
        out.ulp = get32(&in[4]);
        out.qn = get32(&in[8]);
        out.msn = get32(&in[12]);
        out.mo = get32(&in[16]);
        out.stag = 0;
        out.to = 0;
    }
    return {DecodeStatus::kOk, hl};
}

void encode_read_request(const ReadRequest &r, uint8_t *out) {
    put32(out, r.sink_stag);
    put64(out + 4, r.sink_to);
    put32(out + 12, r.length);
    put32(out + 16, r.src_stag);
    put64(out + 20, r.src_to);
}

ReadRequest decode_read_request(const uint8_t *in) {
    return {get32(in), get64(in + 4), get32(in + 12), get32(in + 16), get64(in + 20)};
}

void encode_atomic_request(const AtomicRequest &r, uint8_t *out) {
    put32(out, uint32_t(r.op));
    put32(out + 4, r.stag);
    put64(out + 8, r.to);
    put64(out + 16, r.add_or_swap);
    put64(out + 24, r.compare);
}

bool decode_atomic_request(const uint8_t *in, AtomicRequest &out) {
    const uint32_t op = get32(in);
    if (op > uint32_t(AtomicOp::kWrite)) return false;
    out = {AtomicOp(op), get32(in + 4), get64(in + 8), get64(in + 16), get64(in + 24)};
    return true;
}

void encode_immediate(const ImmediatePayload &p, uint8_t *out) {
    put32(out, p.imm);
    put32(out + 4, p.write_len);
}

ImmediatePayload decode_immediate(const uint8_t *in) {
    return {get32(in), get32(in + 4)};
}

void encode_control(const ControlPayload &c, uint8_t *out) {
    out[0] = uint8_t(c.type);
    out[1] = out[2] = out[3] = 0;
    put32(out + 4, c.seq);
    put32(out + 8, c.arg);
}

bool decode_control(const uint8_t *in, ControlPayload &out) {
    if (in[0] < uint8_t(ControlType::kAck) || in[0] > uint8_t(ControlType::kShmSwitch))
        return false;
    out = {ControlType(in[0]), get32(in + 4), get32(in + 8)};
    return true;
}

void encode_terminate(const TerminatePayload &t, uint8_t *out) {
    out[0] = uint8_t(uint8_t(t.layer) << 4 | (t.etype & 0x0f));
    out[1] = t.ecode;
    out[2] = out[3] = 0;  // no echoed headers
}

TerminatePayload terminate_for_bad_header(std::span<const uint8_t> in) {
    const TerminatePayload unspecified{TermLayer::kRdmap, kTermEtypeRemoteOperation,
                                       kTermEcodeUnspecified};
    if (in.size() < 4) return unspecified;
    const uint8_t ddp = in[2], rdmap = in[3];
    const bool tagged = ddp & kDdpTagged;
    if ((ddp & 0x03) != kDdpVersion)
        return {TermLayer::kDdp, uint8_t(tagged ? 1 : 2),
                tagged ? kTermEcodeDdpTaggedVersion : kTermEcodeDdpUntaggedVersion};
    if ((rdmap & 0xc0) != kRdmapVersion)
        return {TermLayer::kRdmap, kTermEtypeRemoteOperation, kTermEcodeRdmapVersion};
    const auto op = RdmapOp(rdmap & 0x0f);
    if ((rdmap & 0x30) == 0 && (op == RdmapOp(0xf) || tagged != op_is_tagged(op)))
        return {TermLayer::kRdmap, kTermEtypeRemoteOperation, kTermEcodeInvalidOpcode};
    return unspecified;
}

TerminatePayload decode_terminate(const uint8_t *in) {
    return {TermLayer(in[0] >> 4), uint8_t(in[0] & 0x0f), in[1]};
}

const char *nak_name(NakCode c) {
    switch (c) {
        case NakCode::kRemoteAccess:
            return "remote access error";
        case NakCode::kInvalidRequest:
            return "invalid request";
        case NakCode::kRemoteOperation:
            return "remote operation error";
    }
    return "unknown NAK";
}

namespace {

// An error type's name and its codes' names by value (nullptr: no name).
struct ErrorType {
    const char *name;
    const char *codes[10];
};
// RFC 5040 §7 (RDMAP) and RFC 5041 §7 (DDP), indexed by error type; MPA has one kind.
constexpr ErrorType kRdmapErrors[] = {
    {"local catastrophic error", {}},
    {"remote protection error",
     {"invalid STag", "base or bounds violation", "access rights violation",
      "STag not associated with this stream", "tagged offset wrap", nullptr, nullptr, nullptr,
      nullptr, "STag cannot be invalidated"}},
    {"remote operation error",
     {nullptr, nullptr, nullptr, nullptr, nullptr, "invalid RDMAP version", "unexpected opcode",
      "catastrophic error, localized to the stream", "catastrophic error, global",
      "STag cannot be invalidated"}},
};
constexpr ErrorType kDdpErrors[] = {
    {"local catastrophic error", {}},
    {"tagged buffer error",
     {"invalid STag", "base or bounds violation", "STag not associated with this stream",
      "tagged offset wrap", "invalid DDP version"}},
    {"untagged buffer error",
     {nullptr, "invalid queue number", "no buffer for this message",
      "message sequence number out of range", "invalid message offset", "message too long",
      "invalid DDP version"}},
};
constexpr ErrorType kMpaError = {"framing error", {nullptr, nullptr, "CRC error"}};
constexpr ErrorType kUnknownType = {"unknown error type", {}};

template <size_t N>
const ErrorType &error_type(const ErrorType (&types)[N], unsigned etype) {
    return etype < N ? types[etype] : kUnknownType;
}

}  // namespace

std::string describe_terminate(const TerminatePayload &t) {
    const char *layer = "?";
    const ErrorType *type = nullptr;
    if (t.layer == TermLayer::kRdmap) {
        layer = "RDMAP";
        type = &error_type(kRdmapErrors, t.etype);
    } else if (t.layer == TermLayer::kDdp) {
        layer = "DDP";
        type = &error_type(kDdpErrors, t.etype);
    } else if (t.layer == TermLayer::kMpa) {
        layer = "MPA";
        type = &kMpaError;
    }
    std::string s = std::string(layer) + " " + (type ? type->name : "?") + ": ";
    const unsigned c = t.ecode;
    if (c == kTermEcodeUnspecified) return s + "unspecified";
    if (type && c < std::size(type->codes) && type->codes[c]) return s + type->codes[c];
    char buf[16];
    std::snprintf(buf, sizeof buf, "code 0x%02x", c);
    return s + buf;
}

}  // namespace softrdma::wire

// SPDX-License-Identifier: BSD-2-Clause
// DDP (RFC 5041) + RDMAP (RFC 5040) segment headers inside MPA FPDUs, and the payload layouts
// of the control-like messages. Pure encode/decode, no I/O. Byte layouts: docs/wire.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "wire/mpa.h"

namespace softrdma::wire {

enum class RdmapOp : uint8_t {
    kWrite = 0x0,
    kReadRequest = 0x1,
    kReadResponse = 0x2,
    kSend = 0x3,
    kSendInv = 0x4,
    kSendSe = 0x5,
    kSendSeInv = 0x6,
    kTerminate = 0x7,
    // Extension opcodes: sent only when both ends set kMpaFlagSoftrdmaExt.
    kImmediate = 0x8,  // completes an RDMA WRITE WITH IMM at the responder
    kImmediateSe = 0x9,
    kAtomicRequest = 0xA,
    kAtomicResponse = 0xB,
    kSendImm = 0xC,  // SEND WITH IMM: immediate in the untagged header's ULP word
    kSendImmSe = 0xD,
    kControl = 0xE,  // ACK / NAK / RNR NAK / RESYNC
};

// Whether segments of `op` carry application data (what the byte counters count).
constexpr bool op_carries_data(RdmapOp op) {
    switch (op) {
        case RdmapOp::kWrite:
        case RdmapOp::kReadResponse:
        case RdmapOp::kSend:
        case RdmapOp::kSendInv:
        case RdmapOp::kSendSe:
        case RdmapOp::kSendSeInv:
        case RdmapOp::kSendImm:
        case RdmapOp::kSendImmSe:
            return true;
        default:
            return false;
    }
}

// Untagged queue numbers.
enum : uint32_t {
    kQnSend = 0,
    kQnReadRequest = 1,
    kQnTerminate = 2,
    kQnAtomicRequest = 3,
    kQnAtomicResponse = 4,
    kQnControl = 5,
};

constexpr size_t kMpaLenField = 2;
constexpr size_t kTaggedHeaderLen = 16;    // MPA length + DDP/RDMAP control + STag + TO
constexpr size_t kUntaggedHeaderLen = 20;  // MPA length + control + ULP word + QN + MSN + MO
constexpr size_t kMaxHeaderLen = kUntaggedHeaderLen;
constexpr size_t kCrcLen = 4;
// Largest payload we put in one FPDU (the 16-bit ULPDU length bounds header + payload).
constexpr size_t kMaxSegmentPayload = 65280;

struct SegmentHeader {
    RdmapOp op = RdmapOp::kSend;
    bool last = true;
    uint16_t payload_len = 0;
    // Tagged (WRITE, READ RESPONSE).
    uint32_t stag = 0;
    uint64_t to = 0;
    // Untagged.
    uint32_t ulp = 0;  // invalidate STag (SEND_INV) or immediate data (SEND_IMM)
    uint32_t qn = 0;
    uint32_t msn = 0;
    uint32_t mo = 0;
};

bool op_is_tagged(RdmapOp op);
bool op_is_extension(RdmapOp op);
inline size_t header_len(RdmapOp op) {
    return op_is_tagged(op) ? kTaggedHeaderLen : kUntaggedHeaderLen;
}
// Bytes of padding after the payload so that the FPDU (without CRC) is a multiple of 4.
inline size_t pad_len(size_t hdr_len, size_t payload_len) {
    return (4 - ((hdr_len + payload_len) & 3)) & 3;
}

// Writes header_len(h.op) bytes.
size_t encode_segment_header(const SegmentHeader &h, uint8_t *out);

struct SegmentDecodeResult {
    DecodeStatus status;
    size_t header_len;  // valid when kOk
};
// Needs at least 4 bytes to know the header length; returns kNeedMore with header_len set to
// the bytes required. kMalformed for a bad version, an unknown opcode, a tagged bit that does
// not fit the opcode, or a ULPDU length shorter than the header.
SegmentDecodeResult decode_segment_header(std::span<const uint8_t> in, SegmentHeader &out);

// --- payloads ---------------------------------------------------------------------------

struct ReadRequest {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t length;
    uint32_t src_stag;
    uint64_t src_to;
};
constexpr size_t kReadRequestLen = 28;
void encode_read_request(const ReadRequest &r, uint8_t *out);
ReadRequest decode_read_request(const uint8_t *in);

// kWrite: IBA's ATOMIC WRITE, the 8 bytes of add_or_swap stored at once (no original value).
enum class AtomicOp : uint32_t { kFetchAdd = 0, kCompareSwap = 1, kWrite = 2 };
struct AtomicRequest {
    AtomicOp op;
    uint32_t stag;
    uint64_t to;
    uint64_t add_or_swap;
    uint64_t compare;
};
constexpr size_t kAtomicRequestLen = 32;
void encode_atomic_request(const AtomicRequest &r, uint8_t *out);
bool decode_atomic_request(const uint8_t *in, AtomicRequest &out);
constexpr size_t kAtomicResponseLen = 8;  // the original 64-bit value

// Immediate message completing an RDMA WRITE WITH IMM.
struct ImmediatePayload {
    uint32_t imm;        // as the application wrote it (network order is the app's business)
    uint32_t write_len;  // bytes of the preceding WRITE, reported as byte_len
};
constexpr size_t kImmediateLen = 8;
void encode_immediate(const ImmediatePayload &p, uint8_t *out);
ImmediatePayload decode_immediate(const uint8_t *in);

enum class ControlType : uint8_t {
    kAck = 1,      // seq = requests executed so far (cumulative)
    kNak = 2,      // seq = failing request, arg = NakCode; a TERMINATE follows
    kRnrNak = 3,   // seq = request with no receive buffer, arg = min_rnr_timer code
    kResync = 4,   // requester restarts at request seq after an RNR NAK
    kCredits = 5,  // arg = responder's max_dest_rd_atomic (sent once after setup)
    kRtu = 6,      // CM connections, active to passive: the IB CM's RTU (docs/wire.md §7)
    kXrcSrq = 7,   // XRC: arg = the SRQ number the requests after it are for (IB's XRCETH)
    // Same-host shared memory (docs/wire.md §3.6), only between ends that both set the MPA
    // flag kMpaFlagSoftrdmaShm:
    kShmOffer = 8,     // seq = offerer's pid, arg = its fd of the segment
    kShmAccept = 9,    // the accepter's last frame on TCP; its frames after it use the ring
    kShmDecline = 10,  // arg = why (ShmDecline)
    kShmSwitch = 11,   // the offerer's last frame on TCP; its frames after it use the ring
};
enum class ShmDecline : uint32_t {  // 1 is not used (an end that has it off never offers)
    kNotSameHost = 2,
    kCannotOpen = 3,
    kBadSegment = 4
};
enum class NakCode : uint32_t {
    kRemoteAccess = 1,    // bad key / bounds / access flags
    kInvalidRequest = 2,  // message too long for the receive buffer, bad opcode for QP type
    kRemoteOperation = 3,
};
struct ControlPayload {
    ControlType type;
    uint32_t seq;
    uint32_t arg;
};
constexpr size_t kControlLen = 12;
void encode_control(const ControlPayload &c, uint8_t *out);
bool decode_control(const uint8_t *in, ControlPayload &out);

// TERMINATE control word (RFC 5040 §4.8): layer, error type, error code.
enum class TermLayer : uint8_t { kRdmap = 0, kDdp = 1, kMpa = 2 };
struct TerminatePayload {
    TermLayer layer;
    uint8_t etype;
    uint8_t ecode;
};
constexpr size_t kTerminateLen = 4;
void encode_terminate(const TerminatePayload &t, uint8_t *out);
// The TERMINATE that answers a header decode_segment_header called malformed (`in` holds at
// least its first 4 bytes), numbered as RFC 5040/5041: a wrong DDP version is a DDP
// tagged/untagged buffer error, a wrong RDMAP version or an impossible opcode an RDMAP remote
// operation error; anything else (reserved bits, a length shorter than the header) unspecified.
TerminatePayload terminate_for_bad_header(std::span<const uint8_t> in);
TerminatePayload decode_terminate(const uint8_t *in);
// In words, for debug lines: "RDMAP remote protection error: base or bounds violation".
std::string describe_terminate(const TerminatePayload &t);
// "remote access error", "invalid request", "remote operation error".
const char *nak_name(NakCode c);

// RDMAP error types / codes we emit (RFC 5040 §7).
enum : uint8_t {
    kTermEtypeRemoteProtection = 0x1,  // RDMAP error types: 0 local catastrophic, 1 remote
                                       // protection, 2 remote operation
    kTermEtypeRemoteOperation = 0x2,
    kTermEcodeInvalidStag = 0x00,
    kTermEcodeBaseBounds = 0x01,
    kTermEcodeAccessRights = 0x02,
    kTermEcodeRdmapVersion = 0x05,
    kTermEcodeInvalidOpcode = 0x06,
    kTermEcodeDdpTaggedVersion = 0x04,    // DDP tagged buffer error (error type 1)
    kTermEcodeDdpUntaggedVersion = 0x06,  // DDP untagged buffer error (error type 2)
    kTermEcodeMpaCrc = 0x02,              // LLP (MPA) error type 0
    kTermEcodeUnspecified = 0xff,         // "unspecified error" (RFC 5040 / siw)
};

}  // namespace softrdma::wire

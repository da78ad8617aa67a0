// SPDX-License-Identifier: BSD-2-Clause
// The rsocket protocol between two softrdma rsockets (docs/wire.md §9): the private data of the
// CM exchange, the immediate value of a data write, and the control messages. Pure codecs.
//
// The shape follows rdma-core's rsockets (docs/rsocket): stream data is an RDMA WRITE WITH
// IMMEDIATE into the peer's receive ring, the immediate holding an op code and a length; the
// receiver returns ring space and receive credits as it consumes. Control messages here are
// SENDs into small per-receive slots rather than rdma-core's writes into a shared SGL array,
// so a credit update can never be read half-written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrdma::wire {

constexpr uint8_t kRsVersion = 1;
constexpr size_t kRsConnDataLen = 40;

// What each side tells the other when connecting (CM private data, both directions).
struct RsConnData {
    uint8_t version = kRsVersion;
    uint8_t flags = 0;
    uint16_t credits = 0;    // data messages the sender may have in flight to me
    uint8_t iomap_size = 0;  // entries of my direct-placement map (riomap)
    uint64_t ring_addr = 0;  // my receive ring
    uint32_t ring_rkey = 0;
    uint32_t ring_size = 0;
    uint64_t reserved = 0;
};

void encode_rs_conn_data(const RsConnData &c, uint8_t *out);
bool decode_rs_conn_data(std::span<const uint8_t> in, RsConnData &out);

// Immediate of a data write: op in the top 3 bits, a 29-bit value below.
enum class RsOp : uint8_t {
    kData = 0,  // value = bytes placed at the ring's write position
};
constexpr uint32_t kRsImmValueMask = (1u << 29) - 1;
inline uint32_t rs_imm(RsOp op, uint32_t value) {
    return uint32_t(op) << 29 | (value & kRsImmValueMask);
}
inline RsOp rs_imm_op(uint32_t imm) {
    return RsOp(imm >> 29);
}
inline uint32_t rs_imm_value(uint32_t imm) {
    return imm & kRsImmValueMask;
}

// A control message, carried by a SEND into one receive slot.
constexpr size_t kRsCtrlLen = 32;
enum class RsCtrl : uint8_t {
    kCredit = 1,    // a = ring bytes freed (cumulative), b = data messages allowed (cumulative)
    kShutdown = 2,  // no more data from the sender (EOF after what came before)
    kKeepalive = 3,
    kIomap = 4,  // a = offset, b = addr, c = rkey, d = length of a direct-placement buffer
};
struct RsCtrlMsg {
    RsCtrl type = RsCtrl::kCredit;
    uint64_t a = 0;
    uint64_t b = 0;
    uint32_t c = 0;
    uint32_t d = 0;
};

void encode_rs_ctrl(const RsCtrlMsg &m, uint8_t *out);
bool decode_rs_ctrl(std::span<const uint8_t> in, RsCtrlMsg &out);

}  // namespace softrdma::wire

namespace softrdma::wire {

// Datagram rsockets. Over UDP (before the peer's QP is known), each datagram starts with:
constexpr uint32_t kRsUdpTag = 0x53524447;  // "SRDG"
constexpr size_t kRsUdpHdrLen = 16;
enum class RsUdpOp : uint8_t {
    kData = 1,      // payload follows; answer with kResolved
    kResolved = 2,  // no payload: here is my QP number
};
struct RsUdpHdr {
    RsUdpOp op = RsUdpOp::kData;
    uint32_t qpn = 0;  // the sender's UD QP
};
void encode_rs_udp_hdr(const RsUdpHdr &h, uint8_t *out);
bool decode_rs_udp_hdr(std::span<const uint8_t> in, RsUdpHdr &out);

// Over UD, after the 40-byte GRH (whose source GID gives the sender's IP):
constexpr size_t kRsUdHdrLen = 8;
struct RsUdHdr {
    uint16_t src_port = 0;  // the sender's UDP port: together with the IP, its address
    uint32_t src_qpn = 0;
};
void encode_rs_ud_hdr(const RsUdHdr &h, uint8_t *out);
bool decode_rs_ud_hdr(std::span<const uint8_t> in, RsUdHdr &out);

}  // namespace softrdma::wire

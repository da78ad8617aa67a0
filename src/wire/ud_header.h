// SPDX-License-Identifier: BSD-2-Clause
// The header in front of every UD datagram (one UDP datagram per message). Pure codec.
// Layout: docs/wire.md §8.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrdma::wire {

constexpr uint8_t kUdMagic = 0x55;  // 'U'
constexpr uint8_t kUdVersion = 1;
constexpr size_t kUdHeaderLen = 20;

enum : uint8_t {
    kUdFlagImm = 0x01,        // imm carries immediate data (SEND WITH IMM)
    kUdFlagSolicited = 0x02,  // the sender asked for a solicited event
    // Flow-control grant, no payload: imm = datagrams consumed from the addressee (mod 2^32),
    // qkey = datagrams it may have in flight.
    kUdFlagCredit = 0x04,
    // With kUdFlagCredit only: the receiver's count for the addressee started afresh (it had
    // never seen it, or forgot it), so the addressee takes imm as its new base.
    kUdFlagRestart = 0x08,
};

struct UdHeader {
    uint8_t flags = 0;
    uint32_t dst_qpn = 0;
    uint32_t src_qpn = 0;
    uint32_t qkey = 0;
    uint32_t imm = 0;  // as the application wrote it, big-endian on the wire
};

void encode_ud_header(const UdHeader &h, uint8_t *out);
// False for a short datagram, a wrong magic/version, unknown flags (or a restart without a
// credit) or QPNs above 24 bits.
bool decode_ud_header(std::span<const uint8_t> in, UdHeader &out);

}  // namespace softrdma::wire

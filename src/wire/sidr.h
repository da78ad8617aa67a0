// SPDX-License-Identifier: BSD-2-Clause
// SIDR-style resolution of RDMA_PS_UDP ids: one request and one reply datagram between the
// active id's UDP socket and the listener's UDP port. Pure codec. Layout: docs/wire.md §8.2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace softrdma::wire {

constexpr uint8_t kSidrMagic = 0x53;  // 'S'
constexpr uint8_t kSidrVersion = 1;
constexpr size_t kSidrHeaderLen = 20;
constexpr size_t kSidrReqPrivateData = 180;
constexpr size_t kSidrRepPrivateData = 136;

enum class SidrType : uint8_t { kRequest = 1, kReply = 2 };
// Reply status, numbered as IB's SIDR REP status.
enum : uint8_t { kSidrSuccess = 0, kSidrReject = 2 };

struct SidrMsg {
    SidrType type = SidrType::kRequest;
    uint8_t status = kSidrSuccess;
    uint32_t req_id = 0;  // chosen by the requester; the reply echoes it
    uint32_t qpn = 0;     // reply: the responder's UD QPN
    uint32_t qkey = 0;    // reply: its Q_Key
    std::span<const uint8_t> private_data;
};

std::vector<uint8_t> encode_sidr(const SidrMsg &m);
// False for a short or foreign datagram, an unknown type, QPN above 24 bits or private data
// longer than the type allows or than the datagram holds.
bool decode_sidr(std::span<const uint8_t> in, SidrMsg &out);

}  // namespace softrdma::wire

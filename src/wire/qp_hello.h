// SPDX-License-Identifier: BSD-2-Clause
// The private data of the MPA exchange that joins two raw-verbs QPs (connected by
// ibv_modify_qp with a remote GID + QPN, not by the CM). Only ever sent to a softrdma QP
// listener, so it never meets another stack. Layout: docs/wire.md §3.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrdma::wire {

constexpr uint32_t kQpHelloMagic = 0x53525150;  // "SRQP"
constexpr uint8_t kQpHelloVersion = 1;
constexpr size_t kQpHelloLen = 48;

enum class QpHelloStatus : uint8_t {
    kRequest = 0,
    kAccept = 1,
    kNoSuchQp = 2,     // slot empty or QP destroyed
    kWrongPeer = 3,    // the QP exists but is connected to someone else
    kBadType = 4,      // RC vs UC mismatch
};

struct QpHello {
    QpHelloStatus status = QpHelloStatus::kRequest;
    uint8_t qp_type = 0;  // IBV_QPT_RC / IBV_QPT_UC
    uint32_t dst_qpn = 0;
    uint32_t src_qpn = 0;
    uint8_t src_gid[16] = {};
    uint8_t dst_gid[16] = {};
};

void encode_qp_hello(const QpHello &h, uint8_t *out);
bool decode_qp_hello(std::span<const uint8_t> in, QpHello &out);

}  // namespace softrdma::wire

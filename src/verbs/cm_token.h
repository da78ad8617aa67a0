// SPDX-License-Identifier: BSD-2-Clause
// rdma_init_qp_attr hands applications that manage their own QP (rping -q, perftest) a
// small "destination QPN" that is really a token for the CM connection; when the QP moves
// to RTR with it, the QP is remembered here so the CM can give it the connection's stream.
// Real QPNs are listener port << 8 | slot, so values below 0x100 never collide with them.
#pragma once
#include <cstdint>
#include <memory>

namespace softrdma::verbs {

class Qp;

constexpr uint32_t kCmTokenMin = 2, kCmTokenMax = 0xff;
inline bool is_cm_token(uint32_t qpn) {
    return qpn >= kCmTokenMin && qpn <= kCmTokenMax;
}

uint32_t cm_token_alloc();  // 0 when all are in use
void cm_token_free(uint32_t token);
void cm_token_bind(uint32_t token, const std::shared_ptr<Qp> &qp);
std::shared_ptr<Qp> cm_token_qp(uint32_t token);

}  // namespace softrdma::verbs

// SPDX-License-Identifier: BSD-2-Clause
// Which QP state transitions are legal and which attributes each one requires or allows, per
// QP type, as the kernel's ib_modify_qp_is_ok() decides. Pure table, unit-tested.
#pragma once
#include <infiniband/verbs.h>

namespace softrdma::verbs {

// True if moving a QP of `type` from `cur` to `next` with `mask` is legal.
bool qp_transition_ok(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type, int mask);

// Names for diagnostics ("RTR", "RC", "RDMA_READ"); "?" for a value outside the enum.
const char *qp_state_name(ibv_qp_state s);
const char *qp_type_name(ibv_qp_type t);
const char *wr_opcode_name(ibv_wr_opcode op);

// Requests the responder answers with data (READ response, atomic response): they complete
// on that answer, not on an ACK, and count against the initiator depth.
inline bool wr_has_response(ibv_wr_opcode op) {
    return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
           op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_WRITE;
}

}  // namespace softrdma::verbs

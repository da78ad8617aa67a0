// SPDX-License-Identifier: BSD-2-Clause
// Raw-verbs RC QPs that share one context and PD (the harness's Endpoint opens a context of
// its own per QP). Peers learn each other through sr_test::Wire records on the socketpair.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>

#include "process/harness.h"

namespace sr_load {

// The loopback device, chosen as the harness chooses it.
ibv_context *open_loopback_context();
// An RC QP in INIT that accepts remote WRITEs.
ibv_qp *create_rc_qp(ibv_pd *pd, ibv_cq *cq, uint32_t max_send_wr, uint32_t max_recv_wr);
// What the peer needs: QPN and GID, plus where it may WRITE (addr 0 / rkey 0 if nowhere).
sr_test::Wire wire_of(ibv_qp *qp, uint64_t addr, uint32_t rkey);
// INIT → RTR → RTS towards `peer`.
void connect_rc_qp(ibv_qp *qp, const sr_test::Wire &peer);

}  // namespace sr_load

// SPDX-License-Identifier: BSD-2-Clause
// Helpers the CM process tests share: bounded event waits and loopback ids.
#pragma once
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <cstdint>

#include "process/harness.h"

namespace sr_test {

// The next event on `ch`; the child fails if none comes within `timeout_ms`.
rdma_cm_event *next_event(rdma_event_channel *ch, int timeout_ms = 15000);
// The next event, which must be `want` (the child exits 4 otherwise).
rdma_cm_event *wait_event(rdma_event_channel *ch, rdma_cm_event_type want, int timeout_ms = 10000);
sockaddr_in loopback(uint16_t port);
// Connection parameters for an id without a QP of the CM's (rdma-core refuses NULL there):
// READ depth 1, the default retry counts, `qp_num` for an application's own QP.
rdma_conn_param qp_less_param(uint32_t qp_num = 0);
// Server side: an id of `ps` listening on an allocated loopback port, told to the peer.
rdma_cm_id *listen_any(rdma_event_channel *ch, Oob &oob, rdma_port_space ps = RDMA_PS_TCP);
// Client side: an id of `ps` with address and route resolved to `dst`, or to the server's port
// on 127.0.0.1.
rdma_cm_id *resolved_id(rdma_event_channel *ch, const sockaddr *dst,
                        rdma_port_space ps = RDMA_PS_TCP);
rdma_cm_id *resolved_id(rdma_event_channel *ch, uint16_t port, rdma_port_space ps = RDMA_PS_TCP);
// Client side: a resolved id with a QP of `qa` made by the CM, connecting (no event taken).
rdma_cm_id *connecting_id(rdma_event_channel *ch, uint16_t port, ibv_qp_init_attr qa);
// Server side: the next connection request, given a QP of `qa` made by the CM, accepted and
// ESTABLISHED.
rdma_cm_id *accepted_id(rdma_event_channel *ch, ibv_qp_init_attr qa);

}  // namespace sr_test

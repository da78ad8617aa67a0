// SPDX-License-Identifier: BSD-2-Clause
// Owning handles for the verbs and CM objects an rsocket holds, released in reverse order of
// declaration by the members that hold them.
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace softrdma::rs {

struct ChannelFree {
    void operator()(rdma_event_channel *c) const { rdma_destroy_event_channel(c); }
};
struct IdFree {
    void operator()(rdma_cm_id *id) const {
        if (id->qp) rdma_destroy_qp(id);
        rdma_destroy_id(id);
    }
};
struct PdFree {
    void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); }
};
struct CompChannelFree {
    void operator()(ibv_comp_channel *c) const { ibv_destroy_comp_channel(c); }
};
struct CqFree {
    void operator()(ibv_cq *c) const { ibv_destroy_cq(c); }
};
struct MrFree {
    void operator()(ibv_mr *m) const { ibv_dereg_mr(m); }
};
struct CmEventAck {
    void operator()(rdma_cm_event *e) const { rdma_ack_cm_event(e); }
};

// Takes (and acknowledges) every CQ event the channel holds, so the next arm starts clean.
// The channel's fd is non-blocking: this never waits.
inline void drain_cq_events(ibv_comp_channel *cc) {
    ibv_cq *cq = nullptr;
    void *ctx = nullptr;
    while (ibv_get_cq_event(cc, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

using ChannelPtr = std::unique_ptr<rdma_event_channel, ChannelFree>;
using IdPtr = std::unique_ptr<rdma_cm_id, IdFree>;
using PdPtr = std::unique_ptr<ibv_pd, PdFree>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelFree>;
using CqPtr = std::unique_ptr<ibv_cq, CqFree>;
using MrPtr = std::unique_ptr<ibv_mr, MrFree>;
using CmEventPtr = std::unique_ptr<rdma_cm_event, CmEventAck>;

}  // namespace softrdma::rs

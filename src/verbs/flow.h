// SPDX-License-Identifier: BSD-2-Clause
// Flow steering (ibv_create_flow): the rules that choose which Ethernet frames a raw packet QP
// receives. A raw QP with no rule receives nothing, as on a NIC.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>

#include "wire/eth_frame.h"

namespace softrdma::verbs {

class Qp;
struct Counters;

struct Flow : ibv_flow {
    Qp *qp = nullptr;
    ibv_flow_attr_type kind = IBV_FLOW_ATTR_NORMAL;
    uint16_t priority = 0;
    bool drop = false;             // IBV_FLOW_SPEC_ACTION_DROP: matching frames go nowhere
    Counters *counters = nullptr;  // IBV_FLOW_SPEC_ACTION_COUNT: where matches are counted
    wire::FrameMatch match;

    static Flow *from(ibv_flow *f) { return static_cast<Flow *>(f); }
    // Whether a frame (parsed as `f`; `outgoing`: sent from this host) is this rule's.
    bool takes(const wire::EthFrame &f, bool outgoing) const;
};

// The verbs (verbs_context ops). Errors as the kernel gives them: EINVAL for a malformed
// attribute or spec, EOPNOTSUPP for a spec type or flag we do not steer on.
ibv_flow *create_flow(ibv_qp *qp, ibv_flow_attr *attr);
int destroy_flow(ibv_flow *flow);

}  // namespace softrdma::verbs

// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/counters.h"

#include <cerrno>
#include <memory>

#include "common/log.h"

namespace softrdma::verbs {

ibv_counters *create_counters(ibv_context *ctx, ibv_counters_init_attr *attr) {
    if (!ctx) return fail<ibv_counters>(EINVAL);
    if (attr && attr->comp_mask)
        return fail<ibv_counters>(refuse(EOPNOTSUPP, "ibv_create_counters",
                                         "comp_mask 0x%x: none is defined", attr->comp_mask));
    auto c = std::make_unique<Counters>();
    c->context = ctx;
    return c.release();
}

int destroy_counters(ibv_counters *c) {
    if (!c) return EINVAL;
    if (Counters::from(c)->bound.load())
        return refuse(EBUSY, "ibv_destroy_counters", "flows still count into it");
    std::unique_ptr<Counters> owned(Counters::from(c));
    return 0;
}

int attach_counters_point_flow(ibv_counters *cs, ibv_counter_attach_attr *attr, ibv_flow *flow) {
    static constexpr const char *kVerb = "ibv_attach_counters_point_flow";
    if (!cs || !attr) return refuse(EINVAL, kVerb, "NULL counters or attributes");
    if (flow)
        return refuse(EOPNOTSUPP, kVerb,
                      "attach to an existing flow: attach with flow NULL, then name the "
                      "counters in the flow's IBV_FLOW_SPEC_ACTION_COUNT (as mlx5)");
    if (attr->comp_mask) return refuse(EINVAL, kVerb, "comp_mask 0x%x", attr->comp_mask);
    if (attr->counter_desc != IBV_COUNTER_PACKETS && attr->counter_desc != IBV_COUNTER_BYTES)
        return refuse(ENOTSUP, kVerb, "counter_desc %d: packets (0) and bytes (1) exist",
                      int(attr->counter_desc));
    if (attr->index >= Counters::kMaxIndex)
        return refuse(EINVAL, kVerb, "index %u: at most %u", attr->index, Counters::kMaxIndex - 1);
    Counters &c = *Counters::from(cs);
    std::lock_guard lk(c.mu);
    if (c.bound.load())
        return refuse(EBUSY, kVerb, "the counters are bound to a flow: no more attaching");
    for (const Counters::Point &p : c.points)
        if (p.index == attr->index) return refuse(EINVAL, kVerb, "index %u is taken", attr->index);
    c.points.push_back({attr->counter_desc, attr->index});
    return 0;
}

int read_counters(ibv_counters *cs, uint64_t *values, uint32_t n, uint32_t flags) {
    if (!cs || (n && !values)) return refuse(EINVAL, "ibv_read_counters", "NULL argument");
    if (flags & ~uint32_t(IBV_READ_COUNTERS_ATTR_PREFER_CACHED))
        return refuse(EINVAL, "ibv_read_counters", "flags 0x%x", flags);
    Counters &c = *Counters::from(cs);
    for (uint32_t i = 0; i < n; ++i) values[i] = 0;
    std::lock_guard lk(c.mu);
    for (const Counters::Point &p : c.points)
        if (p.index < n)
            values[p.index] = p.desc == IBV_COUNTER_PACKETS ? c.packets.load() : c.bytes.load();
    return 0;
}

}  // namespace softrdma::verbs

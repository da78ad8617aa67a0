// SPDX-License-Identifier: BSD-2-Clause
// Counters objects (ibv_create_counters): packets and bytes of the frames a raw packet QP's
// flow rules match, read with ibv_read_counters, as mlx5 offers them. Descriptions are
// attached statically (flow NULL) and the object is bound by a flow's
// IBV_FLOW_SPEC_ACTION_COUNT spec; several flows bound to one object add up.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace softrdma::verbs {

struct Counters : ibv_counters {
    static constexpr uint32_t kMaxIndex = 64;
    struct Point {
        ibv_counter_description desc;
        uint32_t index;
    };
    std::mutex mu;
    std::vector<Point> points;  // under mu
    std::atomic<int> bound{0};  // flows counting into it
    std::atomic<uint64_t> packets{0}, bytes{0};
    static Counters *from(ibv_counters *c) { return static_cast<Counters *>(c); }
    void count(size_t frame_len) {
        packets.fetch_add(1, std::memory_order_relaxed);
        bytes.fetch_add(frame_len, std::memory_order_relaxed);
    }
};

ibv_counters *create_counters(ibv_context *ctx, ibv_counters_init_attr *attr);
int destroy_counters(ibv_counters *c);
int attach_counters_point_flow(ibv_counters *c, ibv_counter_attach_attr *attr, ibv_flow *flow);
int read_counters(ibv_counters *c, uint64_t *values, uint32_t n, uint32_t flags);

}  // namespace softrdma::verbs

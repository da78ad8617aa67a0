#pragma once
#include <infiniband/verbs.h>

#include <atomic>

namespace softrdma::verbs {

class Context;

struct Pd : ibv_pd {
    explicit Pd(ibv_context *c) : ibv_pd{} { context = c; }
    // Objects created on this PD (MR, QP, SRQ, AH, MW): dealloc fails with EBUSY while > 0.
    std::atomic<int> users{0};
    static Pd *from(ibv_pd *p) { return static_cast<Pd *>(p); }
};

}  // namespace softrdma::verbs

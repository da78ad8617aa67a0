// SPDX-License-Identifier: BSD-2-Clause
#pragma once
#include <infiniband/verbs.h>

namespace softrdma::verbs {

// Address handle: the resolved address vector (UD traffic uses it in a later stage).
struct Ah : ibv_ah {
    ibv_ah_attr attr{};
    static Ah *from(ibv_ah *a) { return static_cast<Ah *>(a); }
};

}  // namespace softrdma::verbs

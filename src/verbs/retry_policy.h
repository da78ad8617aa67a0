// SPDX-License-Identifier: BSD-2-Clause
// When a silent RC requester gives up with IBV_WC_RETRY_EXC_ERR. Pure (no clock, no socket),
// so each rule is unit-tested; Qp feeds it TCP's view of the path. See docs/compatibility.md.
#pragma once
#include <cstdint>

#include "transport/path_health.h"

namespace softrdma::verbs {

using transport::PathHealth;

struct RetryBudget {
    uint64_t last_progress_ns = 0;  // the last acknowledgement, or the start of the wait
    uint64_t hw_ns = 0;             // timeout x (retry_cnt + 1), as hardware counts it
    uint64_t tcp_ns = 0;            // the same with each attempt lasting TCP's minimum RTO
    uint32_t retry_cnt = 0;
};

// The budget ran out at `now`: 0 to give up, or the time to look again.
uint64_t retry_grace_until(const RetryBudget &b, const PathHealth &path, uint64_t now);

}  // namespace softrdma::verbs

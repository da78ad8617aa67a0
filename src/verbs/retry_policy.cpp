// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/retry_policy.h"

#include <algorithm>

namespace softrdma::verbs {

// A NIC acknowledges whatever its host's CPU is doing; here the peer's "NIC" is its process,
// which a loaded machine, a debugger or a sanitizer can hold back. So TCP decides:
//  * the peer's kernel answers: only its process is slow. Wait another budget;
//  * it does not: the path or the host is silent. Our retransmissions are TCP's, so the
//    deadline moves to TCP's pace: each attempt lasts at least its minimum RTO. And as
//    hardware gives up only after retry_cnt unanswered retransmissions, a TCP that backed off
//    exponentially and made fewer gets its next attempt, within one more budget: a lossy path
//    then needs far more losses in a row to fail the QP, while a cut one still fails it.
uint64_t retry_grace_until(const RetryBudget &b, const PathHealth &path, uint64_t now) {
    if (path.answering) return now + b.hw_ns;
    const uint64_t tcp_deadline = b.last_progress_ns + b.tcp_ns;
    if (now < tcp_deadline) return tcp_deadline;
    const uint64_t last_chance = b.last_progress_ns + 2 * b.tcp_ns;
    if (path.retransmits >= b.retry_cnt || now >= last_chance) return 0;
    // Never a busy re-check, whatever TCP reported.
    constexpr uint64_t kMinLookNs = 10'000'000;
    return std::min(now + std::max(path.next_attempt_ns, kMinLookNs), last_chance);
}

}  // namespace softrdma::verbs

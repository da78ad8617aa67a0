// SPDX-License-Identifier: BSD-2-Clause
// When a silent RC requester gives up: the rules of verbs/retry_policy.cpp on made-up clocks.
#include "verbs/retry_policy.h"

#include <gtest/gtest.h>

namespace softrdma::verbs {
namespace {

constexpr uint64_t kMs = 1'000'000;

// The CM's default: timeout 17 (0.54 s) x 8 attempts = 4.3 s; at TCP's 200 ms minimum RTO the
// attempts last no less, so both budgets are 4.3 s.
RetryBudget cm_default() {
    return {1000 * kMs, 4295 * kMs, 4295 * kMs, 7};
}

// timeout 14 (67 ms) x 3 attempts: 0.2 s as hardware counts, 0.6 s at TCP's pace.
RetryBudget short_budget() {
    return {1000 * kMs, 201 * kMs, 600 * kMs, 2};
}

PathHealth silent(uint32_t retransmits, uint64_t next_ms) {
    return {false, retransmits, next_ms * kMs};
}

TEST(RetryPolicy, AnsweringPeerKernelGetsAnotherWholeBudget) {
    const RetryBudget b = cm_default();
    const uint64_t now = b.last_progress_ns + 30'000 * kMs;  // however long it has been
    EXPECT_EQ(retry_grace_until(b, {true, 9, 0}, now), now + b.hw_ns);
}

TEST(RetryPolicy, SilentPathWaitsForTcpPacedBudget) {
    const RetryBudget b = short_budget();
    const uint64_t now = b.last_progress_ns + b.hw_ns;  // 0.2 s: hardware would give up
    EXPECT_EQ(retry_grace_until(b, silent(1, 400), now), b.last_progress_ns + b.tcp_ns);
}

TEST(RetryPolicy, BackedOffTcpGetsItsNextAttempt) {
    // 4.3 s without an answer, but TCP retransmitted only 4 times (0.2, 0.6, 1.4, 3.0 s):
    // hardware would have made 7. Its fifth comes within 3.2 s.
    const RetryBudget b = cm_default();
    const uint64_t now = b.last_progress_ns + b.tcp_ns;
    EXPECT_EQ(retry_grace_until(b, silent(4, 3200), now), now + 3200 * kMs);
}

TEST(RetryPolicy, TheExtraWaitEndsAfterOneMoreBudget) {
    const RetryBudget b = cm_default();
    const uint64_t last_chance = b.last_progress_ns + 2 * b.tcp_ns;
    // TCP's next attempt would come after the last chance: look then, not later.
    EXPECT_EQ(retry_grace_until(b, silent(5, 6400), b.last_progress_ns + 6200 * kMs), last_chance);
    // At the last chance, with still no answer: give up.
    EXPECT_EQ(retry_grace_until(b, silent(5, 6400), last_chance), 0u);
}

TEST(RetryPolicy, AsManyRetransmissionsAsHardwareMakesEndIt) {
    const RetryBudget b = short_budget();
    const uint64_t now = b.last_progress_ns + b.tcp_ns;
    EXPECT_EQ(retry_grace_until(b, silent(2, 800), now), 0u);
    EXPECT_EQ(retry_grace_until(b, silent(3, 1600), now), 0u);
    EXPECT_NE(retry_grace_until(b, silent(1, 400), now), 0u);
}

TEST(RetryPolicy, ZeroRetryCountGivesUpAtTheBudget) {
    RetryBudget b = short_budget();
    b.retry_cnt = 0;
    EXPECT_EQ(retry_grace_until(b, silent(0, 200), b.last_progress_ns + b.tcp_ns), 0u);
}

TEST(RetryPolicy, NeverAskedToLookAgainAtOnce) {
    // TCP_INFO unreadable or an RTO of 0: still no busy re-check.
    const RetryBudget b = cm_default();
    const uint64_t now = b.last_progress_ns + b.tcp_ns;
    EXPECT_GE(retry_grace_until(b, silent(0, 0), now), now + 10 * kMs);
}

}  // namespace
}  // namespace softrdma::verbs

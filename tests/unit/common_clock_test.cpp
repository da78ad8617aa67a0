// SPDX-License-Identifier: BSD-2-Clause
// The library's clock (common/clock.h): the kernel's CLOCK_MONOTONIC, read now and then and
// carried on by the TSC in between. It must never run backwards for a thread and must stay
// with the kernel's clock, across the re-reads and across sleeps.
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "common/clock.h"

using namespace softrdma;

namespace {

// Bounds every reading of now_ns() by kernel readings taken before and after it.
void expect_with_kernel(uint64_t slack_ns, int samples, bool nap) {
    uint64_t last = 0, worst = 0;
    for (int i = 0; i < samples; ++i) {
        if (nap && i % 64 == 0) {
            timespec ts{0, 300'000};  // 0.3 ms: some samples land after a re-read
            nanosleep(&ts, nullptr);
        }
        const uint64_t before = clock_ns();
        const uint64_t v = now_ns();
        const uint64_t after = clock_ns();
        ASSERT_GE(v, last) << "backwards at sample " << i;
        last = v;
        // A reused reading may be older than `before`, by up to the reuse window.
        if (v + slack_ns < before) worst = std::max(worst, before - v);
        if (v > after + slack_ns) worst = std::max(worst, v - after);
    }
    EXPECT_EQ(worst, 0u) << "a reading strayed from the kernel's clock by " << worst << " ns";
}

}  // namespace

TEST(Clock, FollowsTheKernelsClockAndNeverRunsBackwards) {
    // Long enough for the TSC rate to be learnt (two readings ~25 ms apart), then more.
    const uint64_t end = clock_ns() + 120'000'000;
    while (clock_ns() < end) expect_with_kernel(1'000, 2000, true);
#if defined(__x86_64__)
    if (tsc_invariant()) {
        EXPECT_NE(clock_detail::tsc_rate.q32.load(), 0u) << "rate not learnt";
    }
#endif
    // With the rate known: in a tight loop, across the ~1.6 ms re-reads, and after naps.
    expect_with_kernel(1'000, 200'000, false);
    expect_with_kernel(1'000, 20'000, true);
}

TEST(Clock, EachThreadKeepsItsOwnOrder) {
    std::vector<std::thread> ts;
    std::vector<int> failures(4, 0);
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([t, &failures] {
            uint64_t last = 0;
            for (int i = 0; i < 300'000; ++i) {
                const uint64_t v = now_ns();
                if (v < last) ++failures[size_t(t)];
                last = v;
            }
        });
    for (auto &t : ts) t.join();
    for (int f : failures) EXPECT_EQ(f, 0);
}

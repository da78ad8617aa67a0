// SPDX-License-Identifier: BSD-2-Clause
#pragma once
#include <time.h>

#include <atomic>
#include <cstdint>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace softrdma {

// CLOCK_MONOTONIC in nanoseconds, read from the kernel every time: for values an application
// sees (completion timestamps, the device clock).
inline uint64_t clock_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

#if defined(__x86_64__)
// An invariant TSC ticks at one rate whatever the core's frequency or sleep state.
inline bool tsc_invariant() {
    static const bool ok = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)) != 0;
    }();
    return ok;
}
#endif

namespace clock_detail {
// A thread's last reading of the kernel's clock, with the TSC when it was taken.
struct Anchor {
    uint64_t tsc = 0, ns = 0;
    uint64_t out = 0;                    // the last value returned: never returned smaller
    uint64_t base_tsc = 0, base_ns = 0;  // its first undisturbed reading, to learn the rate from
};
// Nanoseconds per TSC tick, 32.32 fixed point (0: not learnt yet), and the span of ticks it
// was learnt over: the longest any thread has seen, so it only gets more exact.
struct TscRate {
    std::atomic<uint64_t> q32{0};
    std::atomic<uint64_t> span{0};
};
inline TscRate tsc_rate;
inline thread_local Anchor anchor;
constexpr uint64_t kReuseTicks = 1024;
// How far a reading is carried on by the TSC before the kernel is asked again (~1.6 ms at
// 2.6 GHz). A reading counts as placed on the TSC when the TSC values read around it lie
// under kTightTicks apart (it is then within half of that, ~0.1 µs), and the rate comes from
// two such readings at least kMinSpanTicks apart: carried on, it drifts at most
// ~kAnchorTicks / 2^17 ticks (~15 ns) more.
constexpr uint64_t kAnchorTicks = uint64_t(1) << 22;
constexpr uint64_t kMinSpanTicks = uint64_t(1) << 26;
constexpr uint64_t kTightTicks = 512;
uint64_t reanchor(uint64_t tsc);  // common/clock.cpp
}  // namespace clock_detail

// The clock of the library's timers, windows and activity stamps: CLOCK_MONOTONIC to within
// ~0.1 µs. The data path reads it on every post and every poll, and clock_gettime costs
// ~23 ns on these VMs against ~10 for a TSC read. So a thread reads the kernel's clock about
// every 1.6 ms and carries that reading on with the TSC, at the rate learnt from two of its
// readings at least ~25 ms apart (until then, it reuses a reading for 1024 ticks, under
// 0.5 µs at any TSC above 2 GHz, and reads afresh after). Per thread, and never backwards for
// its caller; a thread moved to a CPU whose TSC lags sees a huge difference and reads afresh.
inline uint64_t now_ns() {
#if defined(__x86_64__)
    using namespace clock_detail;
    if (tsc_invariant()) {
        Anchor &a = anchor;
        const uint64_t t = __rdtsc();
        const uint64_t d = t - a.tsc;
        if (d < kAnchorTicks) {
            if (const uint64_t q = tsc_rate.q32.load(std::memory_order_relaxed)) {
                const uint64_t v = a.ns + ((d * q) >> 32);
                if (v > a.out) a.out = v;
                return a.out;
            }
            if (d < kReuseTicks) return a.out;
        }
        return reanchor(t);
    }
#endif
    return clock_ns();
}

// True if `then` lies less than `window` before `now`. A `then` at or after `now` counts as
// now: `now` may be a reading taken earlier (a progress pass's), `then` a later stamp.
inline bool within_ns(uint64_t now, uint64_t then, uint64_t window) {
    return then >= now || now - then < window;
}

}  // namespace softrdma

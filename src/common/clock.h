// SPDX-License-Identifier: BSD-2-Clause
#pragma once
#include <time.h>

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

// The clock of the library's timers, windows and activity stamps: CLOCK_MONOTONIC, at most
// about half a microsecond old. The data path reads it on every post and every poll, and
// clock_gettime costs ~24 ns on these VMs against ~10 for a TSC read, so a thread reuses its
// last kernel reading until the TSC has moved kReuseTicks on (under 0.5 µs at any TSC above
// 2 GHz; the shortest window here is 50 µs). Per thread, so it never runs backwards for its
// caller; a thread moved to a CPU whose TSC lags sees a huge difference and reads afresh.
inline uint64_t now_ns() {
#if defined(__x86_64__)
    constexpr uint64_t kReuseTicks = 1024;
    struct Last {
        uint64_t tsc = 0, ns = 0;
    };
    static thread_local Last last;
    if (tsc_invariant()) {
        const uint64_t t = __rdtsc();
        if (t - last.tsc < kReuseTicks) return last.ns;
        last.tsc = t;
        last.ns = clock_ns();
        return last.ns;
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

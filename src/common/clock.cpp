// SPDX-License-Identifier: BSD-2-Clause
#include "common/clock.h"

#include <algorithm>

namespace softrdma::clock_detail {

#if defined(__x86_64__)
uint64_t reanchor(uint64_t tsc) {
    Anchor &a = anchor;
    // The kernel's reading lies somewhere between the TSC values read before and after it:
    // with them close (not interrupted, not slowed), their middle is its TSC to within half
    // their distance. An interrupted one is read again, a few times; if none comes close, the
    // later TSC value stands for it, so the clock carried on from it can only lag.
    uint64_t ns = 0, at = tsc, before = tsc;
    bool tight = false;
    for (int attempt = 0; attempt < 4 && !tight; ++attempt) {
        if (attempt) before = __rdtsc();
        ns = clock_ns();
        const uint64_t after = __rdtsc();
        tight = after - before < kTightTicks;
        at = tight ? before + (after - before) / 2 : after;
    }
    tsc = at;
    if (tight && !a.base_tsc) {
        a.base_tsc = tsc;
        a.base_ns = ns;
    } else if (tight && tsc > a.base_tsc && ns > a.base_ns) {
        const uint64_t span = tsc - a.base_tsc;
        // A longer span than the rate was learnt over, by half again: a few stores over the
        // life of the process, as the spans grow.
        const uint64_t known = tsc_rate.span.load(std::memory_order_relaxed);
        if (span >= kMinSpanTicks && span > known + known / 2) {
            const unsigned __int128 q = (unsigned __int128)(ns - a.base_ns) << 32;
            tsc_rate.q32.store(uint64_t(q / span), std::memory_order_relaxed);
            tsc_rate.span.store(span, std::memory_order_relaxed);
        }
    }
    a.tsc = tsc;
    a.ns = ns;
    a.out = std::max(a.out, ns);
    return a.out;
}
#endif

}  // namespace softrdma::clock_detail

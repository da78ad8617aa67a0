// SPDX-License-Identifier: BSD-2-Clause
#include "common/clock.h"

#include <algorithm>

namespace softrdma::clock_detail {

#if defined(__x86_64__)
uint64_t reanchor(uint64_t tsc) {
    Anchor &a = anchor;
    const uint64_t ns = clock_ns();
    // A reading whose two TSC values lie far apart was interrupted: fine as a time, but too
    // loose to learn the rate from.
    const bool tight = __rdtsc() - tsc < kTightTicks;
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

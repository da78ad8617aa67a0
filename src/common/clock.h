// SPDX-License-Identifier: BSD-2-Clause
#pragma once
#include <time.h>

#include <cstdint>

namespace softrdma {

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// True if `then` lies less than `window` before `now`. A `then` at or after `now` counts as
// now: `now` may be a reading taken earlier (a progress pass's), `then` a later stamp.
inline bool within_ns(uint64_t now, uint64_t then, uint64_t window) {
    return then >= now || now - then < window;
}

}  // namespace softrdma

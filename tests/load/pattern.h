// SPDX-License-Identifier: BSD-2-Clause
// The bytes the load tests move: a function of who sent them and when, so a byte that lands
// in the wrong place, the wrong round or not at all does not pass the check.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sr_load {

inline void fill_pattern(uint8_t *p, size_t len, uint32_t who, uint32_t seq) {
    for (size_t k = 0; k < len; ++k)
        p[k] = uint8_t(who * 151 + seq * 59 + k * 17 + (seq >> 8) + (who >> 8) * 3);
    // Spelled out at the front too: adjacent (who, seq) pairs can collide in the hash above.
    if (len >= 8) {
        std::memcpy(p, &who, 4);
        std::memcpy(p + 4, &seq, 4);
    }
}

inline bool check_pattern(const uint8_t *p, size_t len, uint32_t who, uint32_t seq) {
    uint8_t want[4096];
    if (len > sizeof want) return false;
    fill_pattern(want, len, who, seq);
    return std::memcmp(p, want, len) == 0;
}

}  // namespace sr_load

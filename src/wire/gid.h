// SPDX-License-Identifier: BSD-2-Clause
// GIDs as RoCE v2 uses them: an IPv6 address, with IPv4 as ::ffff:a.b.c.d. Pure helpers.
#pragma once
#include <cstdint>
#include <cstring>

namespace softrdma::wire {

inline bool gid_is_v4_mapped(const uint8_t gid[16]) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(gid, kPrefix, sizeof kPrefix) == 0;
}

}  // namespace softrdma::wire

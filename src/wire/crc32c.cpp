// SPDX-License-Identifier: BSD-2-Clause
#include "wire/crc32c.h"

#include <array>
#include <cstring>

namespace softrdma::wire {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> make_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto kTable = make_table();

uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len) {
    uint64_t c = crc;
    while (len >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = uint32_t(c);
    while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
bool have_hw() {
    static const bool ok = __builtin_cpu_supports("sse4.2");
    return ok;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
    auto *p = static_cast<const uint8_t *>(data);
    crc = ~crc;
#if defined(__x86_64__)
    if (have_hw()) return ~crc_hw(crc, p, len);
#endif
    return ~crc_table(crc, p, len);
}

}  // namespace softrdma::wire

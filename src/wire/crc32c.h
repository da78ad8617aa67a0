// SPDX-License-Identifier: BSD-2-Clause
// CRC32c (Castagnoli), as MPA uses for its optional FPDU trailer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace softrdma::wire {

// Continues a running CRC: pass the previous return value (start with 0).
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

}  // namespace softrdma::wire

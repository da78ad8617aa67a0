// SPDX-License-Identifier: BSD-2-Clause
// What a same-host ring carries: the stream's bytes, in chunks. A literal chunk holds bytes;
// a reference chunk names bytes in the writer's own memory (a registered region's payload),
// which the reader copies straight into their destination with process_vm_readv: one copy
// from region to region, as a NIC's DMA would do, instead of two through the ring. The
// logical byte stream is the same either way, so the FPDU parser above never sees a chunk.
// Layout: docs/wire.md §6.10.
#pragma once
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "transport/shm_ring.h"

namespace softrdma::transport {

constexpr uint32_t kChunkRef = 0x80000000u;  // header bit: a reference chunk
constexpr uint32_t kChunkLenMask = 0x7fffffffu;
constexpr size_t kChunkHeader = 4;              // little-endian word: kind bit, length
constexpr size_t kRefChunk = kChunkHeader + 8;  // + the writer's address, little-endian

// Which pieces the writer may send by reference.
struct ShmRefRule {
    bool enabled = false;
    size_t min_len = 0;  // shorter pieces are cheaper to copy
    // Pieces in this range are always copied: the writer reuses that memory at once.
    const uint8_t *keep_lo = nullptr, *keep_hi = nullptr;
};

// Writes the iovecs as chunks, as far as the ring has room; returns the stream bytes taken
// (0: full), or -1 if the peer's ring indices are impossible. A reference stays valid until
// the reader has consumed it: the caller sends by reference only memory that lives that long.
int64_t shm_write_chunks(ShmRing &r, const iovec *v, int cnt, const ShmRefRule &rule);

// The reader's position inside the current chunk.
struct ShmChunkCursor {
    uint64_t left = 0;  // stream bytes still to take from it
    bool ref = false;
    uint64_t addr = 0;  // reference: where the next byte is in the writer's memory
};

// Fills the iovecs from the ring's chunks; returns the stream bytes read (0: empty), or -1
// with errno: EPROTO for an impossible index or chunk, or what process_vm_readv said of a
// reference (the writer's memory is gone, or the kernel refuses). When `direct` is false the
// read stops before a reference chunk once it has any bytes, so that a reference's bytes go
// straight to their destination (the caller's next, direct, read) and not through a buffer.
int64_t shm_read_chunks(ShmRing &r, ShmChunkCursor &c, pid_t writer, const iovec *v, int cnt,
                        bool direct);

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
// Shared-memory regions (SOFTRDMA_SHM_MR=1): the pages of a region registered for remote
// access are moved into one memfd per process, at the same addresses, so that a peer on this
// host maps them and a WRITE or READ is a memcpy between the two regions instead of frames
// through the rings. The file starts with a table of the published regions (key, PD, rights,
// bounds, where their pages are in the file), which the peer checks before it touches a byte,
// exactly as the responder would. docs/wire.md §3.7 has the layout.
//
// Why opt-in: the move copies the pages and swaps the mapping under the application, so a
// write another thread makes to those pages during ibv_reg_mr or ibv_dereg_mr can be lost,
// which hardware never does (docs/compatibility.md §9).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrdma::verbs {

// One published region, as both ends read it. seq is even while the entry is stable (0:
// never used) and odd while it changes or after it was withdrawn; busy counts peers that are
// inside the region's memory, so that withdrawing waits for them.
struct RegionEntry {
    std::atomic<uint32_t> seq;
    std::atomic<uint32_t> busy;
    std::atomic<uint32_t> key;
    std::atomic<uint32_t> access;
    std::atomic<uint64_t> pd;         // the protecting PD (its address in the owner: an id)
    std::atomic<uint64_t> iova, len;  // where the key is valid
    std::atomic<uint64_t> page_iova;  // the iova of the first page in the file
    std::atomic<uint64_t> page_len;   // whole pages in the file (a region's ends may not be)
    std::atomic<uint64_t> file_off;   // where those pages are in the file
};
static_assert(sizeof(RegionEntry) == 64);

constexpr uint64_t kRegionMagic = 0x3130524d48535253ull;  // "SRSHMR01", little-endian
constexpr uint32_t kRegionEntries = 65536;                // keys whose slot index is below
constexpr uint64_t kRegionTableOff = 4096;                // after the header page
constexpr uint64_t kRegionDataOff = kRegionTableOff + uint64_t(kRegionEntries) * 64;
constexpr uint64_t kRegionFileMax = uint64_t(64) << 30;  // what a peer reserves to map

struct RegionFileHeader {
    uint64_t magic;
    uint32_t pid;  // the owner
    uint32_t entries;
};

bool shm_regions_enabled();

// The process's file, made on first use; null (no shared regions) when they are off or the
// kernel refuses. fd() is what a peer opens through /proc/<pid>/fd/<n>.
class RegionFile;
RegionFile *region_file();
int region_file_fd(RegionFile *f);

// ibv_reg_mr / ibv_rereg_mr of a region with remote access: moves its whole pages into the
// file (if they are plain private anonymous memory, not shared with another region) and
// publishes it. False: the region stays as it is, and peers reach it through the rings.
struct Mr;
bool region_share(Mr &mr);
// ibv_dereg_mr, ibv_rereg_mr: withdraws the publication, waits until no peer is inside, and
// gives the pages back to private memory once no region uses them.
void region_unshare(Mr &mr);

}  // namespace softrdma::verbs

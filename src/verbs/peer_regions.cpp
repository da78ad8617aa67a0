// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/peer_regions.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/log.h"
#include "common/tsan_annotations.h"
#include "verbs/region_file.h"

namespace softrdma::verbs {

namespace {

// One view per peer file, shared by all QPs to it; by (pid, inode) so that a reused pid is
// never mistaken for the process that had it.
std::mutex g_views_mu;
std::map<std::pair<pid_t, ino_t>, std::weak_ptr<PeerRegions>> &views() {
    static auto *v =
        std::make_unique<std::map<std::pair<pid_t, ino_t>, std::weak_ptr<PeerRegions>>>().release();
    return *v;
}

}  // namespace

PeerRegions::~PeerRegions() {
    if (base_) munmap(base_, kRegionFileMax);
}

std::shared_ptr<PeerRegions> PeerRegions::open(pid_t pid, int fd) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", int(pid), fd);
    UniqueFd f(::open(path, O_RDWR | O_CLOEXEC));
    struct stat st;
    if (!f || fstat(f.get(), &st) != 0) return nullptr;
    std::lock_guard lk(g_views_mu);
    auto &slot = views()[{pid, st.st_ino}];
    if (auto v = slot.lock()) return v;
    RegionFileHeader h{};
    const int seals = fcntl(f.get(), F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK) || uint64_t(st.st_size) < kRegionDataOff ||
        pread(f.get(), &h, sizeof h, 0) != ssize_t(sizeof h) || h.magic != kRegionMagic ||
        h.pid != uint32_t(pid) || h.entries != kRegionEntries)
        return nullptr;
    auto v = std::make_shared<PeerRegions>(Token{});
    void *res = mmap(nullptr, kRegionFileMax, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED) return nullptr;
    v->base_ = static_cast<uint8_t *>(res);
    v->fd_ = std::move(f);
    if (!v->map_upto(kRegionDataOff)) return nullptr;
    slot = v;
    return v;
}

// Maps the file up to at least `end` (it only grows, and is sealed against shrinking).
bool PeerRegions::map_upto(uint64_t end) {
    std::lock_guard lk(map_mu_);
    if (end <= mapped_) return true;
    struct stat st;
    if (end > kRegionFileMax || fstat(fd_.get(), &st) != 0 || uint64_t(st.st_size) < end)
        return false;
    const uint64_t to = std::min<uint64_t>(uint64_t(st.st_size), kRegionFileMax) & ~uint64_t(4095);
    if (to < end) return false;
    if (mmap(base_ + mapped_, to - mapped_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             fd_.get(), off_t(mapped_)) == MAP_FAILED)
        return false;
    mapped_ = to;
    return true;
}

bool PeerRegions::write(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *src, int cnt,
                        uint64_t n) {
    return copy(r, rkey, iova, src, cnt, n, true);
}

bool PeerRegions::read(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *dst, int cnt,
                       uint64_t n) {
    return copy(r, rkey, iova, dst, cnt, n, false);
}

bool PeerRegions::copy(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *v, int cnt,
                       uint64_t n, bool to_peer) {
    if ((rkey >> 8) >= kRegionEntries || n == 0) return false;
    auto *e = reinterpret_cast<RegionEntry *>(base_ + kRegionTableOff) + (rkey >> 8);
    // Inside first, then look: against the owner's withdrawal (seq odd, then busy read), one
    // of the two sees the other.
    e->busy.fetch_add(1, std::memory_order_seq_cst);
    bool ok = false;
    do {
        const uint32_t s = e->seq.load(std::memory_order_seq_cst);
        if (s == 0 || (s & 1)) break;
        const uint32_t key = e->key.load(std::memory_order_relaxed);
        const int access = int(e->access.load(std::memory_order_relaxed));
        const uint64_t pd = e->pd.load(std::memory_order_relaxed);
        const uint64_t base = e->iova.load(std::memory_order_relaxed);
        const uint64_t len = e->len.load(std::memory_order_relaxed);
        const uint64_t pbase = e->page_iova.load(std::memory_order_relaxed);
        const uint64_t plen = e->page_len.load(std::memory_order_relaxed);
        const uint64_t off = e->file_off.load(std::memory_order_relaxed);
        if (e->seq.load(std::memory_order_acquire) != s) break;  // changed while read
        const int need = to_peer ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
        // The responder's checks: key, PD, the region's and the QP's rights, bounds.
        if (key != rkey || pd != r.pd || !(access & need) || !(r.access & need)) break;
        if (iova < base || n > len || iova - base > len - n) break;
        // Only what lies in whole pages is in the file; the ends of a region may not be.
        if (iova < pbase || n > plen || iova - pbase > plen - n) break;
        const uint64_t at = off + (iova - pbase);
        if (off < kRegionDataOff || at < off || at + n < at || !map_upto(at + n)) break;
        uint8_t *p = base_ + at;
        AppMemoryAccess app;  // both sides are application memory
        for (int i = 0; i < cnt; ++i) {
            if (to_peer)
                std::memcpy(p, v[i].iov_base, v[i].iov_len);
            else
                std::memcpy(v[i].iov_base, p, v[i].iov_len);
            p += v[i].iov_len;
        }
        ok = true;
    } while (false);
    e->busy.fetch_sub(1, std::memory_order_release);
    return ok;
}

}  // namespace softrdma::verbs

// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/region_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "common/clock.h"
#include "common/log.h"
#include "common/tsan_annotations.h"
#include "common/unique_fd.h"
#include "verbs/key_table.h"
#include "verbs/mr.h"
#include "verbs/pd.h"

namespace softrdma::verbs {

namespace {

constexpr uint64_t kPage = 4096;

// The mapping calls go to the kernel directly: UCX and Open MPI patch mmap/munmap/mremap to
// learn of memory going away, and a move of pages they registered would make them drop it.
void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return reinterpret_cast<void *>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
void *sys_mremap(void *from, size_t len, void *to) {
    return reinterpret_cast<void *>(
        syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to));
}
int sys_munmap(void *addr, size_t len) {
    return int(syscall(SYS_munmap, addr, len));
}

bool page_is_zero(const uint8_t *p) {
    const auto *w = reinterpret_cast<const uint64_t *>(p);
    uint64_t acc = 0;
    for (size_t i = 0; i < kPage / 8; ++i) acc |= w[i];
    return acc == 0;
}

// Copies the pages that are not all zeros (a fresh file and fresh anonymous memory read as
// zeros, so a sparse region stays sparse).
void copy_pages(uint8_t *dst, const uint8_t *src, size_t len) {
    AppMemoryAccess app;
    for (size_t at = 0; at < len; at += kPage)
        if (!page_is_zero(src + at)) std::memcpy(dst + at, src + at, kPage);
}

// True if every byte of [lo, hi) is mapped by one or more private anonymous read-write
// mappings (not a file, not the stack, not shared): memory we may move into the file. With
// `file_off` set, instead: mapped by our file at that offset (the move is still in place).
bool mapping_is(uint64_t lo, uint64_t hi, const char *want_path, uint64_t file_off) {
    FILE *f = std::fopen("/proc/self/maps", "re");
    if (!f) return false;
    char line[512];
    uint64_t covered = lo;
    while (covered < hi && std::fgets(line, sizeof line, f)) {
        uint64_t a, b, off;
        char perms[8] = {}, path[256] = {};
        unsigned long inode;
        int pos = 0;
        if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %lu%n", &a, &b, perms,
                        &off, &inode, &pos) < 5)
            continue;
        if (b <= covered || a >= hi) continue;
        if (a > covered) break;  // a hole
        std::sscanf(line + pos, " %255[^\n]", path);
        if (want_path) {
            if (std::strncmp(path, want_path, std::strlen(want_path)) != 0 || perms[3] != 's' ||
                off + (covered - a) != file_off + (covered - lo))
                break;
        } else {
            const bool anon = inode == 0 && (path[0] == 0 || std::strcmp(path, "[heap]") == 0);
            if (!anon || std::strcmp(perms, "rw-p") != 0) break;
        }
        covered = b;
    }
    std::fclose(f);
    return covered >= hi;
}

// Another registered region (shared or not) has bytes in [lo, hi): the engine may be placing
// into them, so the pages must not be copied and swapped now.
bool other_region_overlaps(uint64_t lo, uint64_t hi, const Mr &self) {
    KeyTable &t = key_table();
    std::shared_lock lk(t.mu);
    for (const KeySlot &s : t.slots) {
        if (!s.mr || s.mr == &self || s.mr->foreign) continue;
        const uint64_t a = uint64_t(uintptr_t(s.mr->host));
        if (a < hi && a + s.mr->length > lo) return true;
    }
    return false;
}

}  // namespace

class RegionFile {
  public:
    static std::unique_ptr<RegionFile> make();
    int fd() const { return fd_.get(); }
    bool share(Mr &mr);
    void unshare(Mr &mr);
    void lock() { mu_.lock(); }
    void unlock() { mu_.unlock(); }
    void after_fork_in_child();

  private:
    struct Extent {
        uint64_t hi;  // the key of the map is lo
        uint64_t file_off;
        int users;
    };
    RegionEntry *entry(uint32_t key) const {
        return reinterpret_cast<RegionEntry *>(table_) + (key >> 8);
    }
    bool alloc(uint64_t len, uint64_t &off);
    void release_pages(uint64_t lo, Extent &e, bool punch);

    UniqueFd fd_;
    void *table_ = nullptr;  // the header page and the entries
    std::mutex mu_;
    std::map<uint64_t, Extent> extents_;      // moved pages, by their first address
    std::multimap<uint64_t, uint64_t> free_;  // free file ranges: length -> offset
    uint64_t end_ = kRegionDataOff;           // file offsets below this are taken
};

bool shm_regions_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("SOFTRDMA_SHM_MR");
        return v && std::strcmp(v, "1") == 0;
    }();
    return on;
}

namespace {

std::mutex g_make_mu;
RegionFile *g_file = nullptr;  // never destroyed: peers may use it until the process ends
bool g_tried = false;

void fork_prepare() {
    if (g_file) g_file->lock();
}
void fork_parent() {
    if (g_file) g_file->unlock();
}
void fork_child() {
    if (!g_file) return;
    g_file->unlock();
    g_file->after_fork_in_child();
}

}  // namespace

std::unique_ptr<RegionFile> RegionFile::make() {
    auto f = std::make_unique<RegionFile>();
    // Sealed against shrinking: a peer maps what it saw of the file and must never fault.
    f->fd_.reset(memfd_create("softrdma-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!f->fd_ || ftruncate(f->fd_.get(), off_t(kRegionDataOff)) != 0 ||
        fcntl(f->fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
        return nullptr;
    f->table_ =
        sys_mmap(nullptr, kRegionDataOff, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd_.get(), 0);
    if (f->table_ == MAP_FAILED) return nullptr;
    auto *h = static_cast<RegionFileHeader *>(f->table_);
    h->pid = uint32_t(getpid());
    h->entries = kRegionEntries;
    __atomic_store_n(&h->magic, kRegionMagic, __ATOMIC_RELEASE);
    f->table_ = static_cast<uint8_t *>(f->table_) + kRegionTableOff;
    return f;
}

RegionFile *region_file() {
    if (!shm_regions_enabled()) return nullptr;
    std::lock_guard lk(g_make_mu);
    if (!g_file && !g_tried) {
        g_tried = true;
        auto f = RegionFile::make();
        if (!f) {
            SR_DEBUG("shared regions: no region file (%s): regions stay private",
                     std::strerror(errno));
            return nullptr;
        }
        g_file = f.release();
        pthread_atfork(fork_prepare, fork_parent, fork_child);
    }
    return g_file;
}

int region_file_fd(RegionFile *f) {
    return f ? f->fd() : -1;
}

bool RegionFile::alloc(uint64_t len, uint64_t &off) {
    auto it = free_.lower_bound(len);
    if (it != free_.end()) {
        off = it->second;
        if (it->first > len) free_.emplace(it->first - len, off + len);
        free_.erase(it);
        return true;
    }
    if (end_ + len > kRegionFileMax) return false;
    if (ftruncate(fd_.get(), off_t(end_ + len)) != 0) return false;
    off = end_;
    end_ += len;
    return true;
}

bool RegionFile::share(Mr &mr) {
    const uint64_t start = uint64_t(uintptr_t(mr.host));
    const uint64_t lo = (start + kPage - 1) & ~(kPage - 1);
    const uint64_t hi = (start + mr.length) & ~(kPage - 1);
    if ((mr.lkey >> 8) >= kRegionEntries || hi <= lo) return false;
    std::lock_guard lk(mu_);
    // The same pages as another region (registered twice): share the move. Pages that
    // overlap another region's differently stay private: moving them would copy under a
    // region the engine may be placing into.
    auto next = extents_.lower_bound(lo);
    Extent *ext = nullptr;
    if (next != extents_.end() && next->first == lo && next->second.hi == hi) {
        ext = &next->second;
    } else {
        if (next != extents_.end() && next->first < hi) return false;
        if (next != extents_.begin() && std::prev(next)->second.hi > lo) return false;
        if (other_region_overlaps(lo, hi, mr) || !mapping_is(lo, hi, nullptr, 0)) return false;
        uint64_t off;
        if (!alloc(hi - lo, off)) return false;
        // Build the shared copy aside, then swap it in with one mremap: the range is never
        // unmapped, so other threads only ever see one mapping or the other.
        void *tmp =
            sys_mmap(nullptr, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), off_t(off));
        if (tmp == MAP_FAILED) {
            free_.emplace(hi - lo, off);
            return false;
        }
        copy_pages(static_cast<uint8_t *>(tmp), reinterpret_cast<const uint8_t *>(lo), hi - lo);
        if (sys_mremap(tmp, hi - lo, reinterpret_cast<void *>(lo)) == MAP_FAILED) {
            sys_munmap(tmp, hi - lo);
            fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(off),
                      off_t(hi - lo));
            free_.emplace(hi - lo, off);
            return false;
        }
        ext = &extents_.emplace(lo, Extent{hi, off, 0}).first->second;
    }
    ++ext->users;
    mr.shared_lo = lo;
    RegionEntry *e = entry(mr.lkey);
    const uint32_t s = e->seq.load(std::memory_order_relaxed);
    e->seq.store(s | 1, std::memory_order_seq_cst);  // odd: changing
    e->key.store(mr.lkey, std::memory_order_relaxed);
    e->access.store(uint32_t(mr.access), std::memory_order_relaxed);
    e->pd.store(uint64_t(uintptr_t(mr.owner)), std::memory_order_relaxed);
    e->iova.store(mr.iova, std::memory_order_relaxed);
    e->len.store(mr.length, std::memory_order_relaxed);
    e->page_iova.store(mr.iova + (lo - start), std::memory_order_relaxed);
    e->page_len.store(hi - lo, std::memory_order_relaxed);
    e->file_off.store(ext->file_off, std::memory_order_relaxed);
    e->seq.store((s | 1) + 1, std::memory_order_release);  // even: stable
    SR_DEBUG("shared regions: key %#x: %llu KiB at file offset %llu", mr.lkey,
             (unsigned long long)((hi - lo) / 1024), (unsigned long long)ext->file_off);
    return true;
}

void RegionFile::unshare(Mr &mr) {
    std::lock_guard lk(mu_);
    RegionEntry *e = entry(mr.lkey);
    const uint32_t s = e->seq.load(std::memory_order_relaxed);
    // Odd first, then wait for the peers inside: seq_cst against their busy increment and
    // seq load, so either they see the withdrawal or we see them.
    e->seq.store(s | 1, std::memory_order_seq_cst);
    const uint64_t give_up = now_ns() + 2'000'000'000ull;
    while (e->busy.load(std::memory_order_seq_cst) != 0 && now_ns() < give_up) sched_yield();
    if (e->busy.load(std::memory_order_seq_cst) != 0)
        SR_DEBUG("shared regions: key %#x withdrawn with a peer still inside (stopped?)", mr.lkey);
    auto it = extents_.find(mr.shared_lo);
    mr.shared_lo = 0;
    if (it == extents_.end() || --it->second.users > 0) return;
    // Pages that another region still covers stay in the file (unpublished, reused if the
    // same pages are registered again): moving them back could lose the engine's placement.
    if (other_region_overlaps(it->first, it->second.hi, mr)) return;
    release_pages(it->first, it->second, true);
    extents_.erase(it);
}

// Moves the pages back into private memory, if they are still ours (the application may have
// unmapped them), and frees their place in the file.
void RegionFile::release_pages(uint64_t lo, Extent &x, bool punch) {
    const uint64_t len = x.hi - lo;
    if (!punch || mapping_is(lo, x.hi, "/memfd:softrdma-mr", x.file_off)) {
        void *tmp =
            sys_mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tmp != MAP_FAILED) {
            copy_pages(static_cast<uint8_t *>(tmp), reinterpret_cast<const uint8_t *>(lo), len);
            if (sys_mremap(tmp, len, reinterpret_cast<void *>(lo)) == MAP_FAILED)
                sys_munmap(tmp, len);
        }
    }
    if (!punch) return;
    fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(x.file_off), off_t(len));
    free_.emplace(len, x.file_off);
}

// A forked child gets private copies (as pinned pages are copied at fork on hardware), and
// the file stays the parent's: the child neither publishes into it nor frees its pages.
void RegionFile::after_fork_in_child() {
    for (auto &[lo, x] : extents_) release_pages(lo, x, false);
    extents_.clear();
    g_file = nullptr;  // the child makes its own file if it registers regions
    g_tried = false;
}

bool region_share(Mr &mr) {
    if (mr.foreign || mr.dm || (mr.access & IBV_ACCESS_ON_DEMAND) ||
        !(mr.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
        return false;
    RegionFile *f = region_file();
    return f && f->share(mr);
}

void region_unshare(Mr &mr) {
    if (!mr.shared_lo) return;
    if (RegionFile *f = g_file) f->unshare(mr);
}

}  // namespace softrdma::verbs

// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/export_table.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace softrdma::verbs {
namespace {

constexpr uint64_t kMagic = 0x31544f5845525353ull;  // "SSREXOT1"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kCapacity = 4096;
constexpr size_t kHeaderBytes = 4096;

enum SlotState : uint32_t { kFree, kWriting, kPd, kMr, kRetiring };

bool process_gone(pid_t pid) {
    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

// Every field another process reads is atomic: the table lives in shared memory, and its
// writer and readers are different programs.
struct ExportTable::Header {
    uint64_t magic;
    uint32_t version;
    uint32_t capacity;
    char device[64];
    pid_t creator;
    std::atomic<uint32_t> next_handle;
    std::atomic<uint32_t> high_water;  // slots [0, high_water) have been used
    std::atomic<pid_t> atomics_owner;  // 0: free
    std::atomic<uint32_t> used;        // slots not free
    std::atomic<uint32_t> hint;        // where the next search for a free slot starts
};

struct ExportTable::Slot {
    std::atomic<uint32_t> state;
    std::atomic<uint32_t> version;  // changes whenever the slot is withdrawn
    std::atomic<uint32_t> users;    // importers inside the region's memory
    std::atomic<uint32_t> handle;
    std::atomic<uint32_t> pd_handle;
    std::atomic<int32_t> pid;
    std::atomic<uint64_t> addr, length, iova;
    std::atomic<int32_t> access;
    std::atomic<uint32_t> key;
};

static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "the table is shared between processes: its atomics must be lock-free");

namespace {
constexpr size_t table_bytes() {
    return kHeaderBytes + size_t(kCapacity) * 64;
}
}  // namespace

ExportTable::ExportTable(void *map, size_t len) : map_(map), len_(len) {}

ExportTable::~ExportTable() {
    munmap(map_, len_);
}

ExportTable::Header *ExportTable::header() const {
    return static_cast<Header *>(map_);
}

ExportTable::Slot *ExportTable::slot(int i) const {
    static_assert(sizeof(Slot) <= 64);
    return reinterpret_cast<Slot *>(static_cast<uint8_t *>(map_) + kHeaderBytes + size_t(i) * 64);
}

std::unique_ptr<ExportTable> ExportTable::create(int fd, const char *device) {
    if (ftruncate(fd, off_t(table_bytes())) != 0) return nullptr;
    void *m = mmap(nullptr, table_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return nullptr;
    std::unique_ptr<ExportTable> t(new ExportTable(m, table_bytes()));  // private constructor
    Header *h = t->header();
    h->version = kVersion;
    h->capacity = kCapacity;
    std::strncpy(h->device, device, sizeof h->device - 1);
    h->creator = getpid();
    h->next_handle.store(1);
    std::atomic_ref<uint64_t>(h->magic).store(kMagic, std::memory_order_release);
    return t;
}

std::unique_ptr<ExportTable> ExportTable::attach(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) != table_bytes()) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    void *m = mmap(nullptr, table_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    std::unique_ptr<ExportTable> t(new ExportTable(m, table_bytes()));
    Header *h = t->header();
    if (std::atomic_ref<uint64_t>(h->magic).load(std::memory_order_acquire) != kMagic ||
        h->version != kVersion || h->capacity != kCapacity ||
        memchr(h->device, 0, sizeof h->device) == nullptr) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    return t;
}

const char *ExportTable::device() const {
    return header()->device;
}
pid_t ExportTable::creator() const {
    return header()->creator;
}

uint32_t ExportTable::next_handle() {
    uint32_t h;
    do h = header()->next_handle.fetch_add(1);
    while (h == 0);
    return h;
}

// Claims a free slot (kFree -> kWriting), or -1.
int ExportTable::claim() {
    Header *h = header();
    // A full table is the common case of a program with thousands of regions: no search.
    if (h->used.load(std::memory_order_relaxed) >= kCapacity) return -1;
    const uint32_t start = h->hint.load(std::memory_order_relaxed);
    for (uint32_t n = 0; n < kCapacity; ++n) {
        const uint32_t i = (start + n) % kCapacity;
        uint32_t expect = kFree;
        if (slot(int(i))->state.compare_exchange_strong(expect, kWriting)) {
            h->used.fetch_add(1);
            h->hint.store((i + 1) % kCapacity, std::memory_order_relaxed);
            uint32_t hw = h->high_water.load();
            while (hw < i + 1 && !h->high_water.compare_exchange_weak(hw, i + 1)) {
            }
            return int(i);
        }
    }
    return -1;
}

int ExportTable::publish_pd(uint32_t handle) {
    const int i = claim();
    if (i < 0) return -1;
    Slot *s = slot(i);
    s->handle.store(handle, std::memory_order_relaxed);
    s->pid.store(getpid(), std::memory_order_relaxed);
    s->state.store(kPd, std::memory_order_release);
    return i;
}

int ExportTable::publish_mr(const ExportedObject &o) {
    const int i = claim();
    if (i < 0) return -1;
    Slot *s = slot(i);
    s->handle.store(o.handle, std::memory_order_relaxed);
    s->pd_handle.store(o.pd_handle, std::memory_order_relaxed);
    s->pid.store(getpid(), std::memory_order_relaxed);
    s->addr.store(o.addr, std::memory_order_relaxed);
    s->length.store(o.length, std::memory_order_relaxed);
    s->iova.store(o.iova, std::memory_order_relaxed);
    s->access.store(o.access, std::memory_order_relaxed);
    s->key.store(o.key, std::memory_order_relaxed);
    s->state.store(kMr, std::memory_order_release);
    return i;
}

void ExportTable::retire(int i) {
    if (i < 0 || uint32_t(i) >= kCapacity) return;
    Slot *s = slot(i);
    const uint32_t st = s->state.load();
    if (st != kPd && st != kMr) return;
    s->state.store(kRetiring);  // seq_cst, as enter()'s users increment: one sees the other
    // An importer leaves as soon as its process_vm call returns; one that died inside
    // never will, so the wait is bounded.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (s->users.load() && std::chrono::steady_clock::now() < until) sched_yield();
    s->users.store(0);
    s->version.fetch_add(1);
    s->state.store(kFree, std::memory_order_release);
    header()->used.fetch_sub(1);
}

bool ExportTable::find_pd(uint32_t handle) const {
    const uint32_t n = header()->high_water.load();
    for (uint32_t i = 0; i < n && i < kCapacity; ++i) {
        const Slot *s = slot(int(i));
        if (s->state.load(std::memory_order_acquire) == kPd &&
            s->handle.load(std::memory_order_relaxed) == handle &&
            s->pid.load(std::memory_order_relaxed) != getpid())
            return true;
    }
    return false;
}

bool ExportTable::find_mr(uint32_t handle, uint32_t pd_handle, ExportedObject &out,
                          ExportRef &ref) const {
    const uint32_t n = header()->high_water.load();
    for (uint32_t i = 0; i < n && i < kCapacity; ++i) {
        const Slot *s = slot(int(i));
        const uint32_t v = s->version.load(std::memory_order_acquire);
        if (s->state.load(std::memory_order_acquire) != kMr ||
            s->handle.load(std::memory_order_relaxed) != handle)
            continue;
        ExportedObject o;
        o.handle = handle;
        o.pd_handle = s->pd_handle.load(std::memory_order_acquire);
        o.pid = s->pid.load(std::memory_order_acquire);
        o.addr = s->addr.load(std::memory_order_acquire);
        o.length = s->length.load(std::memory_order_acquire);
        o.iova = s->iova.load(std::memory_order_acquire);
        o.access = s->access.load(std::memory_order_acquire);
        o.key = s->key.load(std::memory_order_acquire);
        // Withdrawn while we read it: the values may be of another object.
        if (s->state.load(std::memory_order_relaxed) != kMr ||
            s->version.load(std::memory_order_relaxed) != v)
            continue;
        if (o.pid == getpid() || o.pd_handle != pd_handle) continue;
        out = o;
        ref = {int(i), v};
        return true;
    }
    return false;
}

bool ExportTable::enter(const ExportRef &ref) {
    if (ref.slot < 0 || uint32_t(ref.slot) >= kCapacity) return false;
    Slot *s = slot(ref.slot);
    s->users.fetch_add(1);
    if (s->state.load() == kMr && s->version.load() == ref.version) return true;
    s->users.fetch_sub(1);
    return false;
}

void ExportTable::leave(const ExportRef &ref) {
    slot(ref.slot)->users.fetch_sub(1);
}

void ExportTable::lock_atomics() {
    std::atomic<pid_t> &owner = header()->atomics_owner;
    const pid_t self = getpid();
    for (uint32_t spins = 0;; ++spins) {
        pid_t cur = 0;
        if (owner.compare_exchange_weak(cur, self, std::memory_order_acquire)) return;
        // A holder that died with the lock would hold it forever: take it over.
        if ((spins & 4095) == 4095 && cur != 0 && cur != self && process_gone(cur) &&
            owner.compare_exchange_strong(cur, self, std::memory_order_acquire))
            return;
        if ((spins & 63) == 63) sched_yield();
    }
}

void ExportTable::unlock_atomics() {
    header()->atomics_owner.store(0, std::memory_order_release);
}

}  // namespace softrdma::verbs

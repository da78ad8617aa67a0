// SPDX-License-Identifier: BSD-2-Clause
#include "transport/shm_link.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace softrdma::transport {
namespace {

constexpr uint64_t kMagic = 0x3130304d48535253ull;  // "SRSHM001", little-endian
constexpr uint32_t kVersion = 2;                    // 2: the rings carry chunks (shm_channel.h)
constexpr size_t kHeaderBytes = 4096;               // header page, then the two control blocks
constexpr size_t kCtlBytes = 4096;

// Both ends' TCP endpoints as the offerer sees them: the accepter checks they are its own
// connection's, so a segment of some other connection (a reused pid) is never taken.
struct Endpoint {
    std::array<uint8_t, 16> addr;
    uint16_t port;
    bool operator==(const Endpoint &) const = default;
};

struct Header {
    uint64_t magic;
    uint32_t version;
    uint32_t offerer_pid;
    uint64_t ring_bytes;
    Endpoint offerer, accepter;
};
static_assert(sizeof(Header) <= kHeaderBytes);

}  // namespace

// In the header page, apart from the header the offerer writes whole: each end's mapping
// address (what the other probes), whether each end can read the other's memory, and what
// each end's reader understands (kReadsNotes). An older end leaves its features 0.
struct CmaWords {
    std::atomic<uint64_t> mapped_at[2];
    std::atomic<uint32_t> can_read[2];
    std::atomic<uint32_t> features[2];
};
constexpr uint32_t kReadsNotes = 1;  // reads the note in the control of the ring it reads
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free);

struct SideWords {
    std::atomic<uint64_t> w[2][ShmLink::kWordCount];
};

namespace {

constexpr size_t kCmaWordsAt = 2048;
static_assert(sizeof(Header) <= kCmaWordsAt && kCmaWordsAt + sizeof(CmaWords) <= kHeaderBytes);
constexpr size_t kSideWordsAt = 2304;
static_assert(kCmaWordsAt + sizeof(CmaWords) <= kSideWordsAt &&
              kSideWordsAt + sizeof(SideWords) <= kHeaderBytes);

bool endpoint_of(const sockaddr_storage &ss, Endpoint &e) {
    e.addr.fill(0);
    if (ss.ss_family == AF_INET6) {
        const auto &s6 = reinterpret_cast<const sockaddr_in6 &>(ss);
        std::memcpy(e.addr.data(), &s6.sin6_addr, 16);
        e.port = ntohs(s6.sin6_port);
        return true;
    }
    if (ss.ss_family == AF_INET) {  // as an IPv4-mapped address, as a dual-stack socket says it
        const auto &s4 = reinterpret_cast<const sockaddr_in &>(ss);
        e.addr[10] = e.addr[11] = 0xff;
        std::memcpy(e.addr.data() + 12, &s4.sin_addr, 4);
        e.port = ntohs(s4.sin_port);
        return true;
    }
    return false;
}

bool endpoints(int sock, Endpoint &local, Endpoint &peer) {
    sockaddr_storage l{}, p{};
    socklen_t ll = sizeof l, pl = sizeof p;
    return getsockname(sock, reinterpret_cast<sockaddr *>(&l), &ll) == 0 &&
           getpeername(sock, reinterpret_cast<sockaddr *>(&p), &pl) == 0 && endpoint_of(l, local) &&
           endpoint_of(p, peer);
}

// Both directions' rings of this process's live links, offered or opened.
std::atomic<uint64_t> g_live_ring_bytes{0};
constexpr uint64_t kLargeRing = uint64_t(2) << 20;
constexpr uint64_t kSmallRing = uint64_t(256) << 10;

uint64_t ring_budget() {
    // SOFTRDMA_SHM_RING_BUDGET_MB: how much ring memory large rings may take (default 64 MiB).
    static const uint64_t b = [] {
        const char *v = std::getenv("SOFTRDMA_SHM_RING_BUDGET_MB");
        const long mb = v ? std::atol(v) : 64;
        return uint64_t(mb < 0 ? 0 : mb > 65536 ? 65536 : mb) << 20;
    }();
    return b;
}

uint64_t ring_bytes_wanted() {
    // SOFTRDMA_SHM_RING_KB: each direction's ring, 64 KiB to 64 MiB, for every connection.
    if (const char *v = std::getenv("SOFTRDMA_SHM_RING_KB")) {
        long kb = std::atol(v);
        if (kb < 64) kb = 64;
        if (kb > 65536) kb = 65536;
        return uint64_t(kb) * 1024;
    }
    // A bulk stream needs several large messages in flight: 256 KiB rings halve what a 1 MiB
    // stream moves (6 against 13-16 GB/s here). The first connections get 2 MiB rings; once
    // they fill the budget, later ones get 256 KiB (an MPI job's thousands stay cheap). Pages
    // are allocated as traffic first touches them.
    const uint64_t live = g_live_ring_bytes.load(std::memory_order_relaxed);
    return live + 2 * kLargeRing <= ring_budget() ? kLargeRing : kSmallRing;
}

}  // namespace

bool shm_enabled() {
    // Read at every connection (cheap next to one), so a process can change its mind.
    const char *v = std::getenv("SOFTRDMA_SHM");
    return !v || std::strcmp(v, "0") != 0;
}

bool shm_notes_enabled() {
    const char *v = std::getenv("SOFTRDMA_SHM_NOTES");
    return !v || std::strcmp(v, "0") != 0;
}

bool shm_cma_enabled() {
    const char *v = std::getenv("SOFTRDMA_SHM_CMA");
    return v && std::strcmp(v, "1") == 0;
}

size_t shm_cma_min() {
    static const size_t n = [] {
        const char *v = std::getenv("SOFTRDMA_SHM_CMA_MIN");
        const long b = v ? std::atol(v) : 16384;
        return size_t(b < 4096 ? 4096 : b);
    }();
    return n;
}

bool shm_same_host(int sock) {
    Endpoint l, p;
    return endpoints(sock, l, p) && l.addr == p.addr;
}

ShmLink::~ShmLink() {
    if (!base_) return;
    munmap(base_, size_);
    g_live_ring_bytes.fetch_sub(2 * ring_bytes_, std::memory_order_relaxed);
}

bool ShmLink::map(bool offerer) {
    base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (base_ == MAP_FAILED) {
        base_ = nullptr;
        return false;
    }
    auto *b = static_cast<uint8_t *>(base_);
    auto *ctl0 = reinterpret_cast<ShmRingCtl *>(b + kHeaderBytes);
    auto *ctl1 = reinterpret_cast<ShmRingCtl *>(b + kHeaderBytes + sizeof(ShmRingCtl));
    uint8_t *data0 = b + kHeaderBytes + kCtlBytes;
    uint8_t *data1 = data0 + ring_bytes_;
    // Ring 0 carries the offerer's frames, ring 1 the accepter's.
    ShmRing r0(ctl0, data0, ring_bytes_), r1(ctl1, data1, ring_bytes_);
    tx_ = offerer ? r0 : r1;
    rx_ = offerer ? r1 : r0;
    side_ = offerer ? 0 : 1;
    g_live_ring_bytes.fetch_add(2 * ring_bytes_, std::memory_order_relaxed);
    cma()->mapped_at[side_].store(uint64_t(uintptr_t(base_)), std::memory_order_relaxed);
    // Before the offer or the accept: the peer looks only once those arrived. Our own copy is
    // what we go by: the peer can write the shared word.
    reads_notes_ = shm_notes_enabled();
    cma()->features[side_].store(reads_notes_ ? kReadsNotes : 0, std::memory_order_release);
    return true;
}

CmaWords *ShmLink::cma() const {
    return reinterpret_cast<CmaWords *>(static_cast<uint8_t *>(base_) + kCmaWordsAt);
}

SideWords *ShmLink::words() const {
    return reinterpret_cast<SideWords *>(static_cast<uint8_t *>(base_) + kSideWordsAt);
}

void ShmLink::publish(Word w, uint64_t v) {
    words()->w[side_][w].store(v, std::memory_order_release);
}

uint64_t ShmLink::peer_word(Word w) const {
    return words()->w[1 - side_][w].load(std::memory_order_acquire);
}

void ShmLink::set_peer(uint32_t pid) {
    peer_pid_ = pid;
    if (!pid || !shm_cma_enabled()) return;
    // Read the magic at the start of the peer's own mapping of this segment.
    uint64_t got = 0;
    const iovec local{&got, sizeof got};
    const uint64_t at = cma()->mapped_at[1 - side_].load(std::memory_order_relaxed);
    const iovec remote{reinterpret_cast<void *>(uintptr_t(at)), sizeof got};
    if (process_vm_readv(pid_t(pid), &local, 1, &remote, 1, 0) == ssize_t(sizeof got) &&
        got == kMagic) {
        cma()->can_read[side_].store(1, std::memory_order_release);
        return;
    }
    SR_DEBUG(
        "shared memory: cannot read pid %u's memory (%s; side %d, at %#llx, mine %#llx): "
        "payloads go through the rings",
        pid, got ? "not our segment there" : std::strerror(errno), side_, (unsigned long long)at,
        (unsigned long long)cma()->mapped_at[side_].load(std::memory_order_relaxed));
}

bool ShmLink::peer_reads_notes() const {
    return (cma()->features[1 - side_].load(std::memory_order_acquire) & kReadsNotes) != 0;
}

bool ShmLink::peer_reads_me() const {
    return peer_pid_ && cma()->can_read[1 - side_].load(std::memory_order_acquire);
}

std::unique_ptr<ShmLink> ShmLink::create(int sock) {
    Endpoint local, peer;
    if (!endpoints(sock, local, peer)) return nullptr;
    auto l = std::make_unique<ShmLink>(Token{});
    l->ring_bytes_ = ring_bytes_wanted();
    l->size_ = kHeaderBytes + kCtlBytes + 2 * l->ring_bytes_;
    l->fd_.reset(memfd_create("softrdma-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    // Sealed at its size: neither end can shrink it under the other's mapping (SIGBUS).
    if (!l->fd_ || ftruncate(l->fd_.get(), off_t(l->size_)) != 0 ||
        fcntl(l->fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        !l->map(true))
        return nullptr;
    // A fresh memfd reads as zeros: the rings start empty, nobody asleep.
    Header h{kMagic, kVersion, uint32_t(getpid()), l->ring_bytes_, local, peer};
    std::memcpy(l->base_, &h, sizeof h);
    return l;
}

std::unique_ptr<ShmLink> ShmLink::open(int sock, uint32_t pid, uint32_t fd, OpenError &err) {
    err = OpenError::kBadSegment;
    Endpoint local, peer;
    if (!endpoints(sock, local, peer)) return nullptr;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, fd);
    auto l = std::make_unique<ShmLink>(Token{});
    l->fd_.reset(::open(path, O_RDWR | O_CLOEXEC));
    if (!l->fd_) {
        err = OpenError::kCannotOpen;
        return nullptr;
    }
    struct stat st;
    Header h;
    const int seals = fcntl(l->fd_.get(), F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(l->fd_.get(), &st) != 0 ||
        size_t(st.st_size) < kHeaderBytes + kCtlBytes ||
        pread(l->fd_.get(), &h, sizeof h, 0) != ssize_t(sizeof h))
        return nullptr;
    // Its own connection's segment, laid out as we expect, and no larger than the file.
    if (h.magic != kMagic || h.version != kVersion || h.offerer_pid != pid ||
        !(h.offerer == peer) || !(h.accepter == local) || h.ring_bytes < 4096 ||
        h.ring_bytes > (uint64_t(64) << 20) ||
        kHeaderBytes + kCtlBytes + 2 * h.ring_bytes != uint64_t(st.st_size))
        return nullptr;
    l->ring_bytes_ = h.ring_bytes;
    l->size_ = size_t(st.st_size);
    if (!l->map(false)) return nullptr;
    l->fd_.reset();  // the mapping keeps the segment
    l->set_peer(pid);
    err = OpenError::kNone;
    return l;
}

}  // namespace softrdma::transport

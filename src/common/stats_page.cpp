// SPDX-License-Identifier: BSD-2-Clause
#include "common/stats_page.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace softrdma::stats {

const char *const kQpCounterNames[kQpCounterCount] = {
    "sent_pkts",         "sent_bytes",          "rcvd_pkts",         "rcvd_bytes",
    "send_rnr_err",      "rcvd_rnr_err",        "rnr_retries",       "remote_access_err",
    "completion_err",    "ud_drop_no_recv",     "ud_drop_qkey",      "ud_drop_malformed",
    "ud_drop_not_ready", "ud_drop_send_failed", "ud_drop_own_mcast", "ud_drop_socket_full",
    "raw_drop_rule",     "shm_direct",          "ud_flow_released",
};

const char *const kProcCounterNames[kProcCounterCount] = {
    "cm_connect_sent", "cm_request_rcvd", "cm_established", "cm_reject_sent",
    "cm_reject_rcvd",  "cm_disconnected", "cm_addr_error",
};

namespace {

struct Page {
    std::mutex mu;
    int fd = -1;
    uint8_t *base = nullptr;  // null: no page (memfd or mmap refused); slots are private
    std::vector<uint32_t> free_qp, free_mr, free_cm;
    uint32_t next_qp = 0, next_mr = 0, next_cm = 0;
};

// Slots handed out when the page is full or missing: written, never read.
QpSlot g_spare_qp;
MrSlot g_spare_mr;
CmSlot g_spare_cm;
Header g_spare_header;

Page &page() {
    static Page *p = std::make_unique<Page>().release();  // never destroyed: used at exit
    return *p;
}

Header *header_of(uint8_t *base) {
    return reinterpret_cast<Header *>(base);
}

uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void fill_header(Header *h) {
    h->version = kVersion;
    h->pid = getpid();
    std::strncpy(h->program, program_invocation_short_name, sizeof h->program - 1);
    h->start_realtime_ns = realtime_ns();
    h->qp_slots = kQpSlots;
    h->mr_slots = kMrSlots;
    h->cm_slots = kCmSlots;
    h->qp_offset = kQpOffset;
    h->mr_offset = kMrOffset;
    h->cm_offset = kCmOffset;
    std::atomic_ref<uint64_t>(h->magic).store(kMagic, std::memory_order_release);
}

// A forked child must not write into its parent's page: it gets its own copy, mapped where
// the parent's was, so every slot pointer the child inherited stays valid.
void after_fork_in_child() {
    Page &p = page();
    if (!p.base) return;
    const int fd = memfd_create(kMemfdName, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, kPageBytes) != 0 ||
        pwrite(fd, p.base, kPageBytes, 0) != ssize_t(kPageBytes) ||
        mmap(p.base, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
        // No page of its own: make the inherited mapping private instead (copy on write).
        if (fd >= 0) close(fd);
        mmap(p.base, kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS,
             -1, 0);
        close(p.fd);
        p.fd = -1;
        return;
    }
    close(p.fd);
    p.fd = fd;
    Header *h = header_of(p.base);
    h->pid = getpid();
    h->start_realtime_ns = realtime_ns();
}

// Caller holds p.mu.
uint8_t *ensure(Page &p) {
    if (p.base || p.fd == -2) return p.base;
    p.fd = -2;  // tried
    const int fd = memfd_create(kMemfdName, MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    void *m = MAP_FAILED;
    if (ftruncate(fd, kPageBytes) == 0)
        m = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return nullptr;
    }
    p.fd = fd;
    p.base = static_cast<uint8_t *>(m);
    fill_header(header_of(p.base));
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return p.base;
}

Header *header() {
    Page &p = page();
    std::lock_guard lk(p.mu);
    uint8_t *b = ensure(p);
    return b ? header_of(b) : &g_spare_header;
}

template <typename Slot>
Slot *claim(uint32_t offset, uint32_t size, uint32_t capacity, std::vector<uint32_t> &free_list,
            uint32_t &next, Slot &spare, std::atomic<uint32_t> Header::*unlisted) {
    Page &p = page();
    std::lock_guard lk(p.mu);
    uint8_t *b = ensure(p);
    if (!b) return &spare;
    uint32_t i;
    if (!free_list.empty()) {
        i = free_list.back();
        free_list.pop_back();
    } else if (next < capacity) {
        i = next++;
    } else {
        (header_of(b)->*unlisted).fetch_add(1, std::memory_order_relaxed);
        return &spare;
    }
    auto *s = new (b + offset + size_t(i) * size) Slot{};  // zeroed
    return s;
}

template <typename Slot>
void release(Slot *s, uint32_t offset, uint32_t size, std::vector<uint32_t> &free_list) {
    Page &p = page();
    std::lock_guard lk(p.mu);
    const auto *u = reinterpret_cast<uint8_t *>(s);
    if (!p.base || u < p.base + offset || u >= p.base + kPageBytes) return;  // a spare
    s->live.store(0, std::memory_order_release);
    free_list.push_back(uint32_t(size_t(u - (p.base + offset)) / size));
}

}  // namespace

QpSlot *claim_qp() {
    Page &p = page();
    return claim(kQpOffset, 256, kQpSlots, p.free_qp, p.next_qp, g_spare_qp, &Header::qps_unlisted);
}
MrSlot *claim_mr() {
    Page &p = page();
    return claim(kMrOffset, 64, kMrSlots, p.free_mr, p.next_mr, g_spare_mr, &Header::mrs_unlisted);
}
CmSlot *claim_cm() {
    Page &p = page();
    return claim(kCmOffset, 128, kCmSlots, p.free_cm, p.next_cm, g_spare_cm, &Header::cms_unlisted);
}
void release(QpSlot *s) {
    release(s, kQpOffset, 256, page().free_qp);
}
void release(MrSlot *s) {
    release(s, kMrOffset, 64, page().free_mr);
}
void release(CmSlot *s) {
    release(s, kCmOffset, 128, page().free_cm);
}

void count(ProcCounter k, uint64_t n) {
    header()->c[k].fetch_add(n, std::memory_order_relaxed);
}

namespace {
std::atomic<uint32_t> &resource(Resource r) {
    Header *h = header();
    switch (r) {
        case Resource::kContext:
            return h->contexts;
        case Resource::kPd:
            return h->pds;
        case Resource::kCq:
            return h->cqs;
        case Resource::kSrq:
            break;
    }
    return h->srqs;
}
}  // namespace

void opened(Resource r) {
    resource(r).fetch_add(1, std::memory_order_relaxed);
}
void closed(Resource r) {
    resource(r).fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace softrdma::stats

// SPDX-License-Identifier: BSD-2-Clause
#include "transport/shm_ring.h"

#include <algorithm>
#include <cstring>

#include "common/tsan_annotations.h"

namespace softrdma::transport {

namespace {
uint64_t iov_bytes(const iovec *iov, int cnt) {
    uint64_t n = 0;
    for (int i = 0; i < cnt; ++i) n += iov[i].iov_len;
    return n;
}
}  // namespace

int64_t ShmRing::write(const iovec *iov, int cnt) {
    const uint64_t head = wpos_;
    uint64_t room = room_for(iov_bytes(iov, cnt));
    if (room == 0 && head - seen_tail_ > cap_) return -1;
    uint64_t pos = head;
    for (int i = 0; i < cnt && room; ++i) {
        AppMemoryAccess app;  // gathers from registered memory
        const auto *src = static_cast<const uint8_t *>(iov[i].iov_base);
        uint64_t len = std::min<uint64_t>(iov[i].iov_len, room);
        room -= len;
        while (len) {
            const uint64_t a = at(pos);
            const uint64_t k = std::min(len, cap_ - a);
            std::memcpy(data_ + a, src, k);
            src += k;
            pos += k;
            len -= k;
        }
    }
    // seq_cst, as the flag load in take_reader_wake: against the reader's flag store and head
    // load in sleep() (both seq_cst), one of the two sees the other, so no wake-up is lost.
    if (pos != head) {
        wpos_ = pos;
        ctl_->head.store(pos, std::memory_order_seq_cst);
    }
    return int64_t(pos - head);
}

// A fresh tail is loaded seq_cst (a plain load on x86) so that wait_for_room can use this.
uint64_t ShmRing::room_for(uint64_t want) {
    const uint64_t head = wpos_;
    uint64_t used = head - seen_tail_;
    if (used <= cap_ && cap_ - used >= want) return cap_ - used;
    seen_tail_ = ctl_->tail.load(std::memory_order_seq_cst);
    used = head - seen_tail_;
    return used > cap_ ? 0 : cap_ - used;
}

bool ShmRing::wait_for_room() {
    // Flag store, then tail load, both seq_cst, against the consumer's tail store and flag
    // load: either it sees our flag, or we see its new tail.
    ctl_->writer_waiting.store(1, std::memory_order_seq_cst);
    return room() > 0;
}

bool ShmRing::take_reader_wake() {
    return ctl_->reader_sleeping.load(std::memory_order_seq_cst) &&
           ctl_->reader_sleeping.exchange(0, std::memory_order_relaxed);
}

int64_t ShmRing::read(const iovec *iov, int cnt) {
    const int64_t n = take(iov, cnt);
    release();
    return n;
}

void ShmRing::release() {
    // seq_cst, as in write(): against the producer's flag store and tail load in
    // wait_for_room (both seq_cst), one of the two sees the other.
    if (released_ != rpos_) {
        released_ = rpos_;
        ctl_->tail.store(rpos_, std::memory_order_seq_cst);
    }
}

int64_t ShmRing::take(const iovec *iov, int cnt) {
    const uint64_t tail = rpos_;
    const uint64_t avail = readable_for(iov_bytes(iov, cnt));
    if (avail > cap_) return -1;
    uint64_t left = avail;
    uint64_t pos = tail;
    for (int i = 0; i < cnt && left; ++i) {
        AppMemoryAccess app;  // places into registered memory
        auto *dst = static_cast<uint8_t *>(iov[i].iov_base);
        uint64_t len = std::min<uint64_t>(iov[i].iov_len, left);
        left -= len;
        while (len) {
            const uint64_t a = at(pos);
            const uint64_t k = std::min(len, cap_ - a);
            std::memcpy(dst, data_ + a, k);
            dst += k;
            pos += k;
            len -= k;
        }
    }
    rpos_ = pos;
    return int64_t(pos - tail);
}

uint64_t ShmRing::readable_for(uint64_t want) {
    if (seen_head_ - rpos_ < want) seen_head_ = ctl_->head.load(std::memory_order_acquire);
    return seen_head_ - rpos_;
}

int ShmRing::take_exact(uint8_t *dst, uint64_t n) {
    const uint64_t tail = rpos_;
    const uint64_t avail = readable_for(n);
    if (avail == 0) return 0;
    if (avail > cap_ || avail < n) return -1;
    for (uint64_t i = 0; i < n; ++i) dst[i] = data_[at(tail + i)];  // a few bytes: no call
    rpos_ = tail + n;
    return 1;
}

uint64_t ShmRing::peek(const uint8_t *&p, uint64_t max) {
    const uint64_t avail = readable_for(max);
    if (avail > cap_) return 0;
    const uint64_t a = at(rpos_);
    p = data_ + a;
    return std::min({avail, max, cap_ - a});
}

// A fresh head is loaded seq_cst (a plain load on x86) so that sleep can use this.
bool ShmRing::readable() {
    if (seen_head_ != rpos_) return true;
    // The next bytes land at rpos_: ask for that line with the head's, so that when both
    // changed they cross from the producer's core together, not one after the other.
    __builtin_prefetch(data_ + at(rpos_));
    __builtin_prefetch(data_ + at(rpos_ + 64));
    seen_head_ = ctl_->head.load(std::memory_order_seq_cst);
    return seen_head_ != rpos_;
}

bool ShmRing::sleep() {
    // Flag store, then head load, both seq_cst: see write().
    ctl_->reader_sleeping.store(1, std::memory_order_seq_cst);
    return readable();
}

bool ShmRing::take_writer_wake() {
    return ctl_->writer_waiting.load(std::memory_order_seq_cst) &&
           ctl_->writer_waiting.exchange(0, std::memory_order_relaxed);
}

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
// One direction of a same-host connection: a single-producer, single-consumer byte ring in
// shared memory. It carries exactly the bytes the TCP stream would (the same frames), so the
// QP's protocol is the same on both paths; only the copy and the wake-ups differ.
//
// The peer is another process: it can write anything into the control words. Every index
// it publishes is checked before a byte is copied, and copies never leave the ring's data.
#pragma once
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrdma::transport {

// The shared part. head and tail count bytes ever written and read; each lives on its own
// cache line, as do the two wake-up flags. The producer's note shares head's line: the
// consumer, which loads head anyway, reads it at no extra miss.
struct ShmRingCtl {
    alignas(64) std::atomic<uint64_t> head;  // written by the producer
    // A word the producer publishes with its next write (bit 32: set at all; bits 0-31: the
    // value). What it means belongs to the layer above (verbs/qp_rx.cpp: an ACK).
    std::atomic<uint64_t> note;
    alignas(64) std::atomic<uint64_t> tail;  // written by the consumer
    // Set by a consumer about to sleep: the producer wakes it after its next write.
    alignas(64) std::atomic<uint32_t> reader_sleeping;
    // Set by a producer that found the ring full: the consumer wakes it after its next read.
    alignas(64) std::atomic<uint32_t> writer_waiting;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(ShmRingCtl) == 256);

class ShmRing {
  public:
    ShmRing() = default;
    ShmRing(ShmRingCtl *ctl, uint8_t *data, uint64_t capacity)
        : ctl_(ctl),
          data_(data),
          cap_(capacity),
          mask_((capacity & (capacity - 1)) == 0 ? capacity - 1 : 0),
          wpos_(ctl->head.load(std::memory_order_relaxed)),
          rpos_(ctl->tail.load(std::memory_order_relaxed)),
          released_(rpos_),
          seen_head_(rpos_),
          seen_tail_(rpos_) {}

    // ---- producer
    // Copies as much of the iovecs as fits; returns the bytes written (0: full), or -1 if the
    // peer's tail is impossible (a corrupt or hostile peer).
    int64_t write(const iovec *iov, int cnt);
    // The free space, from the consumer's index as last seen if that leaves at least `want`
    // bytes, else as it is now: the consumer's index lives on a line the consumer dirties at
    // every read, and fetching it is a cross-core miss per message. 0 if the index is
    // impossible. room() always reads it.
    uint64_t room_for(uint64_t want);
    uint64_t room() { return room_for(UINT64_MAX); }
    // The ring was full: asks the consumer for a wake-up after its next read. True if there
    // is room by now after all (write again instead of waiting).
    bool wait_for_room();
    // After a write: true (once) if the consumer asked to be woken.
    bool take_reader_wake();
    // Sets the note. The consumer sees it at the latest with the bytes of the next write
    // (the head store publishes it), maybe earlier.
    void set_note(uint32_t v) { ctl_->note.store(kNoteSet | v, std::memory_order_relaxed); }

    // ---- consumer
    // Copies up to the iovecs' length; returns the bytes read (0: empty), or -1 if the peer's
    // head is impossible. read() = take() then release().
    int64_t read(const iovec *iov, int cnt);
    // take() copies without giving the space back to the producer; release() gives back all
    // that was taken, in one store: a reader that takes a chunk's header and then its body
    // publishes once (each publication is a full fence, and the producer's cache line moves).
    int64_t take(const iovec *iov, int cnt);
    // take() of exactly `n` (a few) bytes: 1 if taken, 0 if nothing is readable, -1 if fewer
    // than `n` are (a unit cut short) or the index is impossible.
    int take_exact(uint8_t *dst, uint64_t n);
    // The next readable bytes where they lie in the ring, without taking them: at most `max`,
    // and no further than the ring's end. 0 if none, or if the head is impossible (the next
    // take() says so). skip() then takes `n` of them without a copy; release() as for take().
    uint64_t peek(const uint8_t *&p, uint64_t max);
    void skip(uint64_t n) { rpos_ += n; }
    void release();
    bool readable();
    // About to sleep: asks the producer for a wake-up after its next write. True if there is
    // data by now after all (do not sleep).
    bool sleep();
    // After a read: true (once) if the producer asked to be woken.
    bool take_writer_wake();
    // The producer's note as of the bytes read so far (or later); false if it never set one.
    bool note(uint32_t &v) const {
        const uint64_t n = ctl_->note.load(std::memory_order_relaxed);
        v = uint32_t(n);
        return (n & kNoteSet) != 0;
    }

  private:
    static constexpr uint64_t kNoteSet = uint64_t(1) << 32;
    uint64_t at(uint64_t pos) const { return mask_ ? pos & mask_ : pos % cap_; }
    // The bytes readable from rpos_, the producer's index read again only if what was seen
    // of it does not cover `want`; above cap_ if the index is impossible.
    uint64_t readable_for(uint64_t want);
    ShmRingCtl *ctl_ = nullptr;
    uint8_t *data_ = nullptr;
    uint64_t cap_ = 0;
    uint64_t mask_ = 0;  // cap_ - 1 when cap_ is a power of two
    // Producer: bytes written, published as head by write(). Its own copy: the consumer reads
    // head at every poll, and loading it back from the shared line missed on every write.
    uint64_t wpos_ = 0;
    uint64_t rpos_ = 0;      // consumer: bytes taken, published as tail by release()
    uint64_t released_ = 0;  // consumer: the tail it last published (its own copy, as wpos_)
    // The other side's index as this side last read it (it only moves forward), so that a
    // side reads the other's cache line only when what it saw is not enough.
    uint64_t seen_head_ = 0;  // consumer
    uint64_t seen_tail_ = 0;  // producer
};

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
// An established MPA stream on a non-blocking TCP socket: parses incoming FPDUs and places
// their payload straight into the memory the owner names (no staging copy for bulk data),
// and writes outgoing FPDUs gathered from the owner's buffers with writev.
// Not thread-safe: the owner serialises calls (the QP lock).
#pragma once
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/unique_fd.h"
#include "transport/shm_channel.h"
#include "transport/shm_link.h"
#include "transport/path_health.h"
#include "wire/rdmap.h"

namespace softrdma::transport {

constexpr int kMaxPlacementIov = 32;

// Where the payload of one incoming segment goes.
struct Placement {
    enum class Kind { kIov, kScratch, kDiscard } kind = Kind::kScratch;
    std::array<iovec, kMaxPlacementIov> iov{};
    int iovcnt = 0;
};

// Copies `n` bytes into the iovec list at position (idx, off), advancing the position. The
// caller guarantees room (and holds an AppMemoryAccess when the iovecs are application memory).
void copy_to_iov(const iovec *iov, int &idx, size_t &off, const uint8_t *src, size_t n);

// Small payloads (control messages, read requests) that the stream keeps for the owner.
constexpr size_t kScratchPayloadMax = 64;

class StreamHandler;

// Builds one writev batch: fixed header slots plus gathered payload pieces.
class TxBatch {
  public:
    static constexpr int kMaxSegments = 32;
    static constexpr int kMaxIov = 128;
    static constexpr size_t kSlotInline = 64;

    // Appends one FPDU. `payload` may point into application memory: it must stay valid until
    // the owner learns (by an ACK) that the peer has it. `inline_payload` (≤ kSlotInline bytes)
    // is copied. Returns false when the batch has no room; nothing is appended then.
    bool add(const wire::SegmentHeader &h, std::span<const iovec> payload,
             std::span<const uint8_t> inline_payload = {});
    bool full_for(size_t payload_iovs) const {
        return nseg_ >= kMaxSegments || niov_ + int(payload_iovs) + 3 > kMaxIov;
    }
    bool empty() const { return nseg_ == 0; }
    // The handler stopped for want of room (add refused, or a staging area of its own is
    // full): once this batch is out, it has more to add. Without it, the batch held all.
    void stop_full() { stopped_full_ = true; }
    size_t bytes() const { return bytes_; }
    int segments() const { return nseg_; }
    uint64_t data_bytes() const { return data_bytes_; }  // payload of data-carrying segments

  private:
    friend class FpduStream;
    // Headers, small payloads and trailers are laid end to end in one arena, so a run of
    // small frames (an ACK and a SEND, say) leaves in a single iovec: one plain send().
    static constexpr size_t kFrameBytes = wire::kMaxHeaderLen + kSlotInline + 3 + wire::kCrcLen;
    void append_copy(const void *p, size_t n);
    void append_ref(const iovec &v);
    void clear() {
        nseg_ = niov_ = 0;
        bytes_ = 0;
        data_bytes_ = 0;
        arena_len_ = 0;
        stopped_full_ = false;
    }
    // Left uninitialized (make_unique_for_overwrite): only the first arena_len_ bytes and
    // niov_ entries are ever read, and clearing 6 KiB per connection showed in connection
    // storms (a page fault and a memset each).
    std::array<uint8_t, kMaxSegments * kFrameBytes> arena_;
    size_t arena_len_ = 0;
    std::array<iovec, kMaxIov> iov_;
    int nseg_ = 0;
    int niov_ = 0;
    size_t bytes_ = 0;
    uint64_t data_bytes_ = 0;
    bool crc_ = false;
    bool stopped_full_ = false;
};

enum class IoStatus { kOk, kClosed, kError };

class StreamHandler {
  public:
    virtual ~StreamHandler() = default;
    // A header arrived: say where its payload goes. Return false for a protocol violation
    // (the caller terminates the stream).
    virtual bool place(const wire::SegmentHeader &h, Placement &p) = 0;
    // The whole segment (payload and trailer) has arrived. `scratch` holds the payload when
    // place() asked for kScratch. Return false for a protocol violation.
    virtual bool on_segment(const wire::SegmentHeader &h, std::span<const uint8_t> scratch) = 0;
    // Add outgoing segments to `batch` (stop when it is full, and say so with stop_full()
    // where add() did not refuse). Return true if anything was added.
    virtual bool fill_tx(TxBatch &batch) = 0;
    // Segments came through the ring: the peer's note as of them (FpduStream::shm_note).
    // Return false for a protocol violation.
    virtual bool on_note(uint32_t note) {
        (void)note;
        return true;
    }
};

class FpduStream {
  public:
    FpduStream(UniqueFd fd, bool crc);
    int fd() const { return fd_.get(); }
    bool crc() const { return crc_; }

    // Reads and dispatches segments until the socket would block or `max_segments` were
    // handled. `progressed` tells whether at least one segment completed.
    IoStatus pump_rx(StreamHandler &h, int max_segments, bool &progressed);
    // Writes what the handler has to send until the socket would block. `blocked` is set
    // when output remains (the caller then waits for EPOLLOUT).
    IoStatus pump_tx(StreamHandler &h, bool &blocked);
    bool tx_pending() const { return batch_ && cur_iov_ < batch_->niov_; }
    // TCP's view of the path (a syscall: only when a retry budget runs out); `recent_ns`
    // is how recent an acknowledgement must be to count as an answer.
    PathHealth path_health(uint64_t recent_ns) const;
    // A protocol error detected on receive (bad header, CRC, or a segment the handler
    // refused), and the TERMINATE that names it.
    bool protocol_error() const { return proto_error_; }
    const wire::TerminatePayload &rx_fault() const { return rx_fault_; }
    // Writes one small frame (payload up to kScratchPayloadMax; padding and CRC added) now,
    // unless a frame is half written (the peer could not find it then). Never blocks; false
    // if it did not go out whole. For frames that must leave outside the batch: an ACK at
    // teardown, a TERMINATE before the connection is closed.
    bool send_now(const wire::SegmentHeader &h, std::span<const uint8_t> payload);
    bool send_terminate(const wire::TerminatePayload &t);

    // ---- same-host shared memory (docs/wire.md §3.6). The TCP connection stays: it carries
    // the frames up to each direction's switch, then only wake-up bytes, and its end is the
    // connection's end.
    void shm_attach(std::unique_ptr<ShmLink> link);
    void shm_detach();  // the offer was declined
    ShmLink *shm() const { return shm_.get(); }
    // Sends `h` (a control frame) as the last frame on TCP once what is queued before it has
    // gone, then writes every later frame to the ring.
    void shm_switch_tx_after(const wire::SegmentHeader &h, std::span<const uint8_t> payload);
    // Called for the peer's switch frame (from on_segment): later frames come from the ring.
    void shm_switch_rx();
    bool shm_rx() const { return rx_shm_; }
    // The owner's promise that payload it hands over stays valid until the peer acknowledges
    // it (reliable QPs): only then may pieces go by reference (transport/shm_channel.h).
    void shm_allow_refs(bool on) { shm_refs_ = on; }
    bool shm_tx() const { return tx_shm_; }
    // On the ring, to a peer that reads notes: a word the handler may publish instead of a
    // frame of its own. Called while filling a batch, it goes out with that batch's bytes
    // (the peer's handler gets it in on_note once it has read them).
    bool shm_notes() const { return tx_notes_; }
    void shm_note(uint32_t v) { shm_->tx().set_note(v); }
    // Both directions on the rings, nothing half written, nothing waiting in the ring or the
    // socket: a poll would find nothing to do (one load of the peer's head).
    bool shm_idle() const {
        return rx_shm_ && tx_shm_ && !sock_event_ && !tx_pending() && !shm_->rx().readable();
    }
    // Nobody will poll: asks the peer to wake us (through TCP) when it writes. True if there
    // is something to read by now (do not sleep).
    bool shm_sleep();
    // Our writes wait for room and nobody will poll: asks the peer to wake us (through TCP)
    // once it has read. True if there is room by now (write again instead of sleeping).
    bool shm_wait_room();
    // The engine saw the socket readable: look at it (wake-ups, or the end) on the next read.
    void socket_event() { sock_event_ = true; }

  private:
    enum class RxState { kHeader, kPayload, kTrailer };
    IoStatus parse_rx(StreamHandler &h, int max_segments, bool &progressed);
    bool refill(IoStatus &st);
    size_t staged() const { return wr_ - rd_; }
    // The bytes the parser reads: the staging buffer, or a window onto the ring.
    const uint8_t *rx_at() const { return (ring_win_ ? ring_win_ : stage_.get()) + rd_; }
    // On the ring the parser reads a literal chunk where it lies, without copying it to the
    // staging buffer first; the bytes it read are taken from the ring when the window closes,
    // and a frame the window's end cut is read again through the staging buffer.
    bool open_ring_window();
    void close_ring_window();
    const uint8_t *ring_win_ = nullptr;
    IoStatus fault(const wire::TerminatePayload &t);
    static constexpr wire::TerminatePayload kUnspecifiedFault{
        wire::TermLayer::kRdmap, wire::kTermEtypeRemoteOperation, wire::kTermEcodeUnspecified};
    IoStatus finish_payload_from_socket();
    // Where bytes come from and go to: the socket, or the ring after the switch.
    // `direct`: into the payload's destination (a reference chunk is then resolved into it).
    ssize_t rx_readv(const iovec *v, int cnt, bool direct);
    ssize_t tx_writev(const iovec *v, int cnt);
    int drain_socket();
    size_t encode_frame(const wire::SegmentHeader &h, std::span<const uint8_t> payload,
                        uint8_t *out) const;  // 0: open, 1: closed, -1: error (errno)
    void kick_peer();

    UniqueFd fd_;
    bool crc_;
    bool proto_error_ = false;
    wire::TerminatePayload rx_fault_{};

    // RX
    std::unique_ptr<uint8_t[]> stage_;
    size_t stage_cap_ = 0;
    size_t rd_ = 0, wr_ = 0;
    RxState rx_state_ = RxState::kHeader;
    wire::SegmentHeader hdr_{};
    Placement place_{};
    int place_idx_ = 0;
    size_t place_off_ = 0;
    size_t payload_left_ = 0;
    size_t trailer_len_ = 0;
    uint32_t rx_crc_ = 0;
    uint8_t scratch_[kScratchPayloadMax];
    size_t scratch_len_ = 0;

    // TX. A stream holds a batch only while output it could not send waits in it; otherwise
    // it borrows its thread's (pump_tx), so an idle connection costs none of its 5 KiB.
    IoStatus pump_tx_batch(StreamHandler &h, bool &blocked);
    std::unique_ptr<TxBatch> batch_;
    int cur_iov_ = 0;

    // Shared memory
    std::unique_ptr<ShmLink> shm_;
    bool rx_shm_ = false, tx_shm_ = false;
    bool tx_notes_ = false;  // tx_shm_, and the peer reads notes
    bool rx_notes_ = false;  // rx_shm_, and we read them
    bool sock_event_ = false;
    bool kick_owed_ = false;  // a wake-up asked for before our own switch
    bool shm_refs_ = false;
    ShmChunkCursor rx_chunk_;
    uint64_t next_sock_check_ns_ = 0;
    uint32_t empty_reads_ = 0;
    static constexpr size_t kMaxSmallFrame =
        wire::kMaxHeaderLen + kScratchPayloadMax + 3 + wire::kCrcLen;
    std::array<uint8_t, kMaxSmallFrame> marker_{};  // the frame our switch comes after
    size_t marker_len_ = 0;
};

}  // namespace softrdma::transport

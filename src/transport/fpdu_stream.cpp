// SPDX-License-Identifier: BSD-2-Clause
#include "transport/fpdu_stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/tsan_annotations.h"
#include "wire/crc32c.h"

namespace softrdma::transport {
namespace {

constexpr size_t kStageSize = 64 * 1024;
// A stream that has only seen small frames (the CM's RTU, ACKs, short SENDs) stages them in
// this much. The first read that fills it moves the stream to kStageSize: a connection storm
// then grows the heap by 64 KiB per connection (an mprotect and page faults each) no more.
constexpr size_t kSmallStageSize = 512;
// Below this the payload is copied out of the staging buffer; above it we read straight into
// the destination so bulk data is touched once.
constexpr size_t kDirectThreshold = 4096;
// How often a poller looks at the socket of a connection moved to shared memory (for its end).
constexpr uint64_t kSocketCheckNs = 50'000;
constexpr uint8_t kZeros[4] = {};

void put_le32(uint8_t *p, uint32_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v >> 16);
    p[3] = uint8_t(v >> 24);
}
uint32_t get_le32(const uint8_t *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

void TxBatch::append_copy(const void *p, size_t n) {
    uint8_t *dst = arena_.data() + arena_len_;
    std::memcpy(dst, p, n);
    arena_len_ += n;
    if (niov_ > 0) {
        iovec &last = iov_[size_t(niov_ - 1)];
        if (static_cast<uint8_t *>(last.iov_base) + last.iov_len == dst) {
            last.iov_len += n;  // continues the previous piece of the arena
            return;
        }
    }
    iov_[size_t(niov_++)] = {dst, n};
}

void TxBatch::append_ref(const iovec &v) {
    iov_[size_t(niov_++)] = v;
}

bool TxBatch::add(const wire::SegmentHeader &h, std::span<const iovec> payload,
                  std::span<const uint8_t> inline_payload) {
    if (inline_payload.size() > kSlotInline || full_for(payload.size())) {
        stopped_full_ = true;
        return false;
    }
    uint8_t head[wire::kMaxHeaderLen];
    const size_t hl = wire::encode_segment_header(h, head);
    size_t body = inline_payload.size();
    for (const iovec &v : payload) body += v.iov_len;
    uint32_t c = crc_ ? wire::crc32c(0, head, hl) : 0;
    append_copy(head, hl);
    AppMemoryAccess app;
    if (!inline_payload.empty()) {
        if (crc_) c = wire::crc32c(c, inline_payload.data(), inline_payload.size());
        append_copy(inline_payload.data(), inline_payload.size());
    }
    // A small payload in application memory is copied too: one copy of a few bytes is
    // cheaper than an iovec of its own, and the frame stays one piece with its header.
    const bool copy = body <= kSlotInline;
    for (const iovec &v : payload) {
        if (v.iov_len == 0) continue;
        if (crc_) c = wire::crc32c(c, v.iov_base, v.iov_len);
        if (copy)
            append_copy(v.iov_base, v.iov_len);
        else
            append_ref(v);
    }
    const size_t pad = wire::pad_len(hl, body);
    uint8_t tail[3 + wire::kCrcLen] = {};
    size_t tail_len = pad;
    if (crc_) {
        c = wire::crc32c(c, kZeros, pad);
        put_le32(tail + pad, c);
        tail_len += wire::kCrcLen;
    }
    if (tail_len) append_copy(tail, tail_len);
    bytes_ += hl + body + tail_len;
    if (wire::op_carries_data(h.op)) data_bytes_ += body;
    ++nseg_;
    return true;
}

FpduStream::FpduStream(UniqueFd fd, bool crc) : fd_(std::move(fd)), crc_(crc) {}

PathHealth FpduStream::path_health(uint64_t recent_ns) const {
    return tcp_path_health(fd_.get(), recent_ns);
}

namespace {

// A recv() that returned no bytes: closed, nothing yet, or an error.
bool recv_failed(ssize_t n, IoStatus &st) {
    if (n == 0) {
        st = IoStatus::kClosed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        st = IoStatus::kOk;
    } else {
        st = IoStatus::kError;
    }
    return false;
}

}  // namespace

bool FpduStream::open_ring_window() {
    ShmRing &r = shm_->rx();
    const uint8_t *p;
    if (!rx_chunk_.left) {
        // A literal chunk's word and at least its first byte, in one piece of the ring; the
        // rest (a reference, a word cut by the ring's end, a bad word) takes the copying path,
        // which judges it.
        if (r.peek(p, kChunkHeader + 1) < kChunkHeader + 1) return false;
        uint8_t w[kChunkHeader];
        std::memcpy(w, p, sizeof w);  // read once: the peer can write the ring at any time
        const uint32_t word = get_le32(w);
        if ((word & kChunkRef) || !(word & kChunkLenMask)) return false;
        r.skip(kChunkHeader);
        rx_chunk_.ref = false;
        rx_chunk_.left = word & kChunkLenMask;
    } else if (rx_chunk_.ref) {
        return false;
    }
    const uint64_t n = r.peek(p, rx_chunk_.left);
    if (!n) return false;  // a word without its body: the copying path reports it
    ring_win_ = p;
    rd_ = 0;
    wr_ = size_t(n);
    return true;
}

// Takes what the parser read from the ring; what it did not (frames left for the next pass,
// or the start of one the window's end cut) stays there.
void FpduStream::close_ring_window() {
    ShmRing &r = shm_->rx();
    r.skip(rd_);
    rx_chunk_.left -= rd_;
    r.release();
    ring_win_ = nullptr;
    rd_ = wr_ = 0;
    if (r.take_writer_wake()) kick_peer();
}

bool FpduStream::refill(IoStatus &st) {
    // A window the parser wants more than: the frame its end cut (at the ring's end, or the
    // chunk's) is copied to the staging buffer below, where the rest of it joins it.
    bool window = true;
    if (ring_win_) {
        window = staged() == 0;
        close_ring_window();
    }
    if (rx_shm_ && window && rd_ == wr_ && open_ring_window()) return true;
    if (!stage_) {
        // Allocated when the first bytes arrive (not zero-filled): a connection opened and
        // closed without data costs nothing here.
        uint8_t first[kSmallStageSize];
        const iovec v{first, sizeof first};
        const ssize_t n = rx_readv(&v, 1, false);
        if (n <= 0) return recv_failed(n, st);
        stage_cap_ = size_t(n) == sizeof first ? kStageSize : kSmallStageSize;
        stage_ = std::make_unique_for_overwrite<uint8_t[]>(stage_cap_);
        std::memcpy(stage_.get(), first, size_t(n));
        wr_ = size_t(n);
        return true;
    }
    if (rd_ == wr_) {
        rd_ = wr_ = 0;
    } else if (wr_ == stage_cap_ || stage_cap_ - wr_ < wire::kMaxHeaderLen + wire::kCrcLen) {
        std::memmove(stage_.get(), stage_.get() + rd_, wr_ - rd_);
        wr_ -= rd_;
        rd_ = 0;
    }
    const size_t room = stage_cap_ - wr_;
    const iovec v{stage_.get() + wr_, room};
    const ssize_t n = rx_readv(&v, 1, false);
    if (n <= 0) return recv_failed(n, st);
    wr_ += size_t(n);
    if (size_t(n) == room && stage_cap_ < kStageSize) {
        // More may wait than the small stage holds: this stream carries traffic.
        auto big = std::make_unique_for_overwrite<uint8_t[]>(kStageSize);
        std::memcpy(big.get(), stage_.get() + rd_, wr_ - rd_);
        wr_ -= rd_;
        rd_ = 0;
        stage_ = std::move(big);
        stage_cap_ = kStageSize;
    }
    return true;
}

void copy_to_iov(const iovec *iov, int &idx, size_t &off, const uint8_t *src, size_t n) {
    while (n) {
        const iovec &v = iov[idx];
        const size_t k = std::min(n, v.iov_len - off);
        std::memcpy(static_cast<uint8_t *>(v.iov_base) + off, src, k);
        src += k;
        n -= k;
        off += k;
        if (off == v.iov_len) {
            ++idx;
            off = 0;
        }
    }
}

// Copies `n` staged bytes to the current placement position.
static void place_bytes(Placement &p, int &idx, size_t &off, const uint8_t *src, size_t n,
                        uint8_t *scratch, size_t &scratch_len) {
    AppMemoryAccess app;
    switch (p.kind) {
        case Placement::Kind::kDiscard:
            return;
        case Placement::Kind::kScratch:
            std::memcpy(scratch + scratch_len, src, n);
            scratch_len += n;
            return;
        case Placement::Kind::kIov:
            copy_to_iov(p.iov.data(), idx, off, src, n);
            return;
    }
}

IoStatus FpduStream::finish_payload_from_socket() {
    // Direct read into the destination: only the remaining iov pieces of this segment.
    iovec v[kMaxPlacementIov];
    int cnt = 0;
    for (int i = place_idx_; i < place_.iovcnt; ++i) {
        v[cnt] = place_.iov[i];
        if (i == place_idx_) {
            v[cnt].iov_base = static_cast<uint8_t *>(v[cnt].iov_base) + place_off_;
            v[cnt].iov_len -= place_off_;
        }
        ++cnt;
    }
    AppMemoryAccess app;
    const ssize_t n = rx_readv(v, cnt, true);
    if (n == 0) return IoStatus::kClosed;
    if (n < 0) {
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? IoStatus::kOk
                                                                           : IoStatus::kError;
    }
    size_t left = size_t(n);
    payload_left_ -= left;
    for (int i = 0; left; ++i) {
        const size_t k = std::min(left, v[i].iov_len);
        if (crc_) rx_crc_ = wire::crc32c(rx_crc_, v[i].iov_base, k);
        left -= k;
        place_off_ += k;
        if (place_off_ == place_.iov[place_idx_].iov_len) {
            ++place_idx_;
            place_off_ = 0;
        }
    }
    return IoStatus::kOk;
}

IoStatus FpduStream::fault(const wire::TerminatePayload &t) {
    proto_error_ = true;
    rx_fault_ = t;
    return IoStatus::kError;
}

// One small frame, whole: header, payload, padding and (if on) CRC. Returns its length.
size_t FpduStream::encode_frame(const wire::SegmentHeader &h, std::span<const uint8_t> payload,
                                uint8_t *f) const {
    const size_t hl = wire::encode_segment_header(h, f);
    size_t n = hl;
    if (!payload.empty()) std::memcpy(f + n, payload.data(), payload.size());
    n += payload.size();
    const size_t pad = wire::pad_len(hl, payload.size());
    std::memset(f + n, 0, pad);
    n += pad;
    if (crc_) {
        put_le32(f + n, wire::crc32c(0, f, n));
        n += wire::kCrcLen;
    }
    return n;
}

bool FpduStream::send_now(const wire::SegmentHeader &h, std::span<const uint8_t> payload) {
    if (tx_pending() || marker_len_ || payload.size() > kScratchPayloadMax) return false;
    uint8_t f[kMaxSmallFrame];
    const size_t n = encode_frame(h, payload, f);
    // All or nothing: half a frame would leave the peer lost in the stream.
    if (tx_shm_ && shm_->tx().room_for(n) < n) return false;
    const iovec v{f, n};
    return tx_writev(&v, 1) == ssize_t(n);
}

bool FpduStream::send_terminate(const wire::TerminatePayload &t) {
    wire::SegmentHeader h;
    h.op = wire::RdmapOp::kTerminate;
    h.qn = wire::kQnTerminate;
    h.payload_len = wire::kTerminateLen;
    uint8_t p[wire::kTerminateLen];
    wire::encode_terminate(t, p);
    return send_now(h, p);
}

ssize_t FpduStream::rx_readv(const iovec *v, int cnt, bool direct) {
    if (!rx_shm_)
        return cnt == 1 ? ::recv(fd_.get(), v->iov_base, v->iov_len, 0)
                        : ::readv(fd_.get(), v, cnt);
    ShmRing &r = shm_->rx();
    const pid_t writer = pid_t(shm_->peer_pid());
    int64_t n = shm_read_chunks(r, rx_chunk_, writer, v, cnt, direct);
    if (n == 0) {
        // The ring is empty. The socket now carries only wake-ups and the connection's end:
        // look at it when the engine saw it readable, else now and then (a poller calls here
        // in a loop; a syscall per poll would cost more than the ring saves).
        // The clock is read only every 32nd empty read: a poller spins through here.
        if (!sock_event_ && (++empty_reads_ % 32 != 0 || now_ns() < next_sock_check_ns_)) {
            errno = EAGAIN;
            return -1;
        }
        sock_event_ = false;
        next_sock_check_ns_ = now_ns() + kSocketCheckNs;
        const int s = drain_socket();
        if (s == 0) {
            errno = EAGAIN;
            return -1;
        }
        // The peer wrote its last frames before it closed: read them first.
        n = shm_read_chunks(r, rx_chunk_, writer, v, cnt, direct);
        if (n == 0) return s > 0 ? 0 : -1;
    }
    if (n < 0) {  // impossible ring indices or chunks, or memory the peer named is gone
        if (errno != EPROTO)
            SR_DEBUG("shared memory: cannot read the peer's memory (pid %d): %s", int(writer),
                     std::strerror(errno));
        proto_error_ = true;
        rx_fault_ = kUnspecifiedFault;
        errno = EPROTO;
        return -1;
    }
    if (r.take_writer_wake()) kick_peer();
    return ssize_t(n);
}

ssize_t FpduStream::tx_writev(const iovec *v, int cnt) {
    if (!tx_shm_) {
        AppMemoryAccess app;  // gathers from registered memory
        if (cnt == 1)
            return ::send(fd_.get(), v->iov_base, v->iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        msghdr msg{};
        msg.msg_iov = const_cast<iovec *>(v);
        msg.msg_iovlen = size_t(cnt);
        return ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ShmRing &r = shm_->tx();
    // Payload pieces outside the batch's own arena live until the peer has them (an ACK
    // retires their work request; see TxBatch::add): those may go by reference.
    ShmRefRule rule;
    rule.enabled = shm_refs_ && shm_->peer_reads_me();
    rule.min_len = shm_cma_min();
    if (batch_) {  // send_now's frames come from outside any batch
        rule.keep_lo = batch_->arena_.data();
        rule.keep_hi = batch_->arena_.data() + batch_->arena_.size();
    }
    // A full ring asks for no wake-up here: a polling owner simply tries again at its next
    // poll, and one that is about to leave it to the engine asks (shm_wait_room). A wake-up
    // per full ring, while both sides poll, costs a send() and an engine wake-up each time.
    const int64_t n = shm_write_chunks(r, v, cnt, rule);
    if (n < 0) {
        errno = EPROTO;
        return -1;
    }
    if (n == 0) {  // full
        errno = EAGAIN;
        return -1;
    }
    if (r.take_reader_wake()) kick_peer();
    return ssize_t(n);
}

int FpduStream::drain_socket() {
    uint8_t junk[256];
    for (;;) {
        const ssize_t n = ::recv(fd_.get(), junk, sizeof junk, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n == 0) return 1;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        if (errno == EINTR) continue;
        return -1;
    }
}

// One byte on TCP wakes the peer's engine; our frames no longer travel there, so the peer
// takes any byte after our switch for a wake-up. Before our switch it would land inside a
// frame: it waits until the switch.
void FpduStream::kick_peer() {
    if (!tx_shm_) {
        kick_owed_ = true;
        return;
    }
    kick_owed_ = false;
    const uint8_t b = 0;
    ::send(fd_.get(), &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);  // a full buffer holds wake-ups enough
}

void FpduStream::shm_attach(std::unique_ptr<ShmLink> link) {
    shm_ = std::move(link);
}

void FpduStream::shm_detach() {
    if (!rx_shm_ && !tx_shm_ && !marker_len_) shm_.reset();
}

void FpduStream::shm_switch_tx_after(const wire::SegmentHeader &h,
                                     std::span<const uint8_t> payload) {
    if (payload.size() > kScratchPayloadMax) return;
    marker_len_ = encode_frame(h, payload, marker_.data());
}

void FpduStream::shm_switch_rx() {
    rx_shm_ = true;
    rx_notes_ = shm_->reads_notes();
    // Whatever TCP brought after the switch frame is wake-ups.
    rd_ = wr_;
    sock_event_ = true;
}

bool FpduStream::shm_sleep() {
    return rx_shm_ && shm_->rx().sleep();
}

bool FpduStream::shm_wait_room() {
    return tx_shm_ && shm_->tx().wait_for_room();
}

IoStatus FpduStream::pump_rx(StreamHandler &h, int max_segments, bool &progressed) {
    const IoStatus st = parse_rx(h, max_segments, progressed);
    if (ring_win_) close_ring_window();  // what was read leaves the ring; a cut frame waits
    uint32_t note;
    if (progressed && rx_notes_ && st == IoStatus::kOk && shm_->rx().note(note) && !h.on_note(note))
        return fault(kUnspecifiedFault);
    return st;
}

IoStatus FpduStream::parse_rx(StreamHandler &h, int max_segments, bool &progressed) {
    progressed = false;
    int handled = 0;
    IoStatus st = IoStatus::kOk;
    for (;;) {
        switch (rx_state_) {
            case RxState::kHeader: {
                const auto r = wire::decode_segment_header({rx_at(), staged()}, hdr_);
                if (r.status == wire::DecodeStatus::kMalformed)
                    return fault(wire::terminate_for_bad_header({rx_at(), staged()}));
                if (r.status == wire::DecodeStatus::kNeedMore) {
                    // Everything read so far is handled: report it now rather than spend a
                    // recv() that most likely finds nothing before the caller sees it.
                    // (On the ring that costs no syscall: keep reading, so everything the
                    // peer wrote is read before the caller writes.)
                    if (handled && staged() == 0 && !rx_shm_) return IoStatus::kOk;
                    if (!refill(st)) return st;
                    continue;
                }
                if (crc_) rx_crc_ = wire::crc32c(0, rx_at(), r.header_len);
                rd_ += r.header_len;
                // Only the count says which pieces are valid: no 0.5 KiB clear per frame.
                place_.kind = Placement::Kind::kScratch;
                place_.iovcnt = 0;
                if (!h.place(hdr_, place_)) {
                    return fault(kUnspecifiedFault);
                }
                if (place_.kind == Placement::Kind::kScratch &&
                    hdr_.payload_len > kScratchPayloadMax) {
                    return fault(kUnspecifiedFault);
                }
                if (place_.kind == Placement::Kind::kIov) {
                    size_t total = 0;
                    for (int i = 0; i < place_.iovcnt; ++i) total += place_.iov[i].iov_len;
                    if (total != hdr_.payload_len) {
                        return fault(kUnspecifiedFault);
                    }
                    // Zero-length pieces would stall the cursor.
                    int k = 0;
                    for (int i = 0; i < place_.iovcnt; ++i)
                        if (place_.iov[i].iov_len) place_.iov[k++] = place_.iov[i];
                    place_.iovcnt = k;
                }
                place_idx_ = 0;
                place_off_ = 0;
                scratch_len_ = 0;
                payload_left_ = hdr_.payload_len;
                trailer_len_ =
                    wire::pad_len(r.header_len, hdr_.payload_len) + (crc_ ? wire::kCrcLen : 0);
                rx_state_ = RxState::kPayload;
                break;
            }
            case RxState::kPayload: {
                while (payload_left_) {
                    if (staged()) {
                        const size_t n = std::min(staged(), payload_left_);
                        const uint8_t *src = rx_at();
                        if (crc_) rx_crc_ = wire::crc32c(rx_crc_, src, n);
                        place_bytes(place_, place_idx_, place_off_, src, n, scratch_, scratch_len_);
                        rd_ += n;
                        payload_left_ -= n;
                        continue;
                    }
                    if (place_.kind == Placement::Kind::kIov && payload_left_ >= kDirectThreshold) {
                        if (ring_win_) close_ring_window();  // the read goes on from its end
                        const size_t before = payload_left_;
                        st = finish_payload_from_socket();
                        if (st != IoStatus::kOk) return st;
                        if (payload_left_ == before) return IoStatus::kOk;  // would block
                        continue;
                    }
                    if (!refill(st)) return st;
                }
                rx_state_ = RxState::kTrailer;
                break;
            }
            case RxState::kTrailer: {
                if (staged() < trailer_len_) {
                    if (!refill(st)) return st;
                    continue;
                }
                if (crc_) {
                    const size_t pad = trailer_len_ - wire::kCrcLen;
                    const uint8_t *t = rx_at();
                    const uint32_t c = wire::crc32c(rx_crc_, t, pad);
                    if (c != get_le32(t + pad))
                        return fault({wire::TermLayer::kMpa, 0, wire::kTermEcodeMpaCrc});
                }
                rd_ += trailer_len_;
                rx_state_ = RxState::kHeader;
                if (!h.on_segment(hdr_, {scratch_, scratch_len_})) {
                    return fault(kUnspecifiedFault);
                }
                progressed = true;
                if (++handled >= max_segments) return IoStatus::kOk;
                break;
            }
        }
    }
}

IoStatus FpduStream::pump_tx(StreamHandler &h, bool &blocked) {
    thread_local std::unique_ptr<TxBatch> spare;
    if (!batch_) {
        batch_ = spare ? std::move(spare) : std::make_unique_for_overwrite<TxBatch>();
        batch_->clear();
        batch_->crc_ = crc_;
        cur_iov_ = 0;
    }
    const IoStatus st = pump_tx_batch(h, blocked);
    if (cur_iov_ >= batch_->niov_) {
        if (spare)
            batch_.reset();
        else
            spare = std::move(batch_);
    }
    return st;
}

IoStatus FpduStream::pump_tx_batch(StreamHandler &h, bool &blocked) {
    blocked = false;
    bool filled = false;
    for (;;) {
        TxBatch &b = *batch_;
        if (cur_iov_ >= b.niov_) {
            // The batch just sent held everything the handler had: asking again finds nothing.
            if (filled && !b.stopped_full_ && !marker_len_) return IoStatus::kOk;
            b.clear();
            cur_iov_ = 0;
            if (marker_len_) {
                // Everything before the switch has left on TCP: the marker goes last there.
                const ssize_t m =
                    ::send(fd_.get(), marker_.data(), marker_len_, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (m < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                    blocked = true;
                    return IoStatus::kOk;
                }
                if (m != ssize_t(marker_len_)) return IoStatus::kError;
                marker_len_ = 0;
                tx_shm_ = true;
                tx_notes_ = shm_->peer_reads_notes();
                if (kick_owed_) kick_peer();
            }
            if (!h.fill_tx(b) || b.niov_ == 0) return IoStatus::kOk;
            filled = true;
        }
        const ssize_t n =
            tx_writev(&b.iov_[size_t(cur_iov_)], std::min(b.niov_ - cur_iov_, IOV_MAX));
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                blocked = true;
                return IoStatus::kOk;
            }
            return (errno == EPIPE || errno == ECONNRESET) ? IoStatus::kClosed : IoStatus::kError;
        }
        size_t left = size_t(n);
        while (left) {
            iovec &v = b.iov_[cur_iov_];
            if (left >= v.iov_len) {
                left -= v.iov_len;
                ++cur_iov_;
            } else {
                v.iov_base = static_cast<uint8_t *>(v.iov_base) + left;
                v.iov_len -= left;
                left = 0;
            }
        }
    }
}

}  // namespace softrdma::transport

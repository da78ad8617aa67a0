// SPDX-License-Identifier: BSD-2-Clause
// The FPDU stream over a socket pair, both ends real: the receiver's staging buffer starts
// small and grows in the middle of traffic, and streams share their thread's TX batch except
// while output waits in one.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include <cstring>
#include <deque>
#include <vector>

#include "transport/fpdu_stream.h"
#include "transport/shm_link.h"
#include "tcp_pair.h"

using namespace softrdma;
using namespace softrdma::transport;

namespace {

uint8_t pattern(uint32_t msg, size_t i) {
    return uint8_t(msg * 131 + i * 7 + 1);
}

// Sends SENDs of the given sizes, each payload a pattern of its message number.
class Sender : public StreamHandler {
  public:
    void queue(uint16_t len) {
        const uint32_t msn = next_msn_++;
        std::vector<uint8_t> p(len);
        for (size_t i = 0; i < len; ++i) p[i] = pattern(msn, i);
        payloads_.push_back(std::move(p));  // a deque: earlier payloads never move
        pending_.push_back(msn);
    }
    bool place(const wire::SegmentHeader &, Placement &) override { return false; }
    bool on_segment(const wire::SegmentHeader &, std::span<const uint8_t>) override {
        return false;
    }
    bool fill_tx(TxBatch &b) override {
        bool added = false;
        while (!pending_.empty()) {
            const uint32_t msn = pending_.front();
            auto &p = payloads_[msn - 1];
            wire::SegmentHeader h;
            h.op = wire::RdmapOp::kSend;
            h.payload_len = uint16_t(p.size());
            h.msn = msn;
            const iovec v{p.data(), p.size()};
            if (!b.add(h, {&v, 1})) break;
            pending_.pop_front();
            added = true;
        }
        return added;
    }

  private:
    uint32_t next_msn_ = 1;
    std::deque<std::vector<uint8_t>> payloads_;
    std::deque<uint32_t> pending_;
};

// Places every SEND into a buffer of its own and checks it byte for byte when it completes.
// A SEND with MSN 0 is the sender's switch to shared memory: later frames come from the ring.
class Receiver : public StreamHandler {
  public:
    FpduStream *switch_on_marker = nullptr;
    bool place(const wire::SegmentHeader &h, Placement &p) override {
        if (h.op != wire::RdmapOp::kSend) return false;
        buf_.assign(h.payload_len, 0);
        p.kind = Placement::Kind::kIov;
        p.iov[0] = {buf_.data(), buf_.size()};
        p.iovcnt = 1;
        return true;
    }
    bool on_segment(const wire::SegmentHeader &h, std::span<const uint8_t>) override {
        if (h.msn == 0 && switch_on_marker) {
            switch_on_marker->shm_switch_rx();
            return true;
        }
        if (h.msn != received + 1) return false;
        for (size_t i = 0; i < buf_.size(); ++i)
            if (buf_[i] != pattern(h.msn, i)) return false;
        ++received;
        bytes += buf_.size();
        return true;
    }
    bool fill_tx(TxBatch &) override { return false; }
    uint32_t received = 0;
    size_t bytes = 0;

  private:
    std::vector<uint8_t> buf_;
};

struct Pair {
    explicit Pair(bool crc, int sndbuf = 0) {
        int sv[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        if (sndbuf) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        tx = std::make_unique<FpduStream>(UniqueFd(sv[0]), crc);
        rx = std::make_unique<FpduStream>(UniqueFd(sv[1]), crc);
    }
    // Moves bytes until `want` messages arrived; false on a stream error or no progress.
    bool run_until(uint32_t want) {
        for (int round = 0; round < 100000 && r.received < want; ++round) {
            bool blocked = false, progressed = false;
            if (tx->pump_tx(s, blocked) != IoStatus::kOk) return false;
            if (rx->pump_rx(r, 64, progressed) != IoStatus::kOk) return false;
        }
        return r.received == want;
    }
    std::unique_ptr<FpduStream> tx, rx;
    Sender s;
    Receiver r;
};

// The bytes of `sizes.size()` SEND frames, as a sender's stream writes them.
std::vector<uint8_t> frames_of(bool crc, const std::vector<uint16_t> &sizes) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    int big = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    UniqueFd out(sv[1]);
    FpduStream tx(UniqueFd(sv[0]), crc);
    Sender s;
    for (uint16_t n : sizes) s.queue(n);
    bool blocked = false;
    EXPECT_EQ(tx.pump_tx(s, blocked), IoStatus::kOk);
    EXPECT_FALSE(blocked);
    std::vector<uint8_t> bytes;
    uint8_t buf[65536];
    for (ssize_t n; (n = ::read(out.get(), buf, sizeof buf)) > 0;)
        bytes.insert(bytes.end(), buf, buf + n);
    return bytes;
}

// Small frames first (the receiver stages them in its small buffer), then a burst. The bytes
// arrive in chunks of one size per round, so the read that fills the small buffer ends at
// every kind of place (mid-header, mid-payload, mid-trailer, with a frame's start still
// unread before it): the frames cut there arrive whole after the buffer has grown.
TEST(FpduStream, StagingGrowsInTheMiddleOfTraffic) {
    std::vector<uint16_t> sizes(5, 20);
    for (int i = 0; i < 60; ++i) sizes.push_back(uint16_t(300 + 97 * i % 3000));
    for (int i = 0; i < 4; ++i) sizes.push_back(9000);  // read straight into place
    for (int i = 0; i < 40; ++i) sizes.push_back(uint16_t(1 + i));
    for (bool crc : {false, true}) {
        const std::vector<uint8_t> bytes = frames_of(crc, sizes);
        ASSERT_GT(bytes.size(), 100000u);
        for (size_t chunk : {7, 13, 200, 500, 509, 512, 999, 1021, 1024, 1500, 4096, 70000}) {
            int sv[2];
            ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
            UniqueFd in(sv[0]);
            FpduStream rx(UniqueFd(sv[1]), crc);
            Receiver r;
            for (size_t at = 0; at < bytes.size();) {
                const size_t n = std::min(chunk, bytes.size() - at);
                ASSERT_EQ(::write(in.get(), bytes.data() + at, n), ssize_t(n));
                at += n;
                bool progressed = true;
                for (int k = 0; k < 1000 && progressed; ++k)
                    ASSERT_EQ(rx.pump_rx(r, 64, progressed), IoStatus::kOk)
                        << "crc " << crc << " chunk " << chunk << " message " << r.received + 1;
            }
            EXPECT_EQ(r.received, sizes.size()) << "crc " << crc << " chunk " << chunk;
        }
    }
}

// One stream's socket is full, so its output waits in a batch of its own; another stream on
// the same thread sends meanwhile with the shared one. Both arrive whole and in order.
TEST(FpduStream, BlockedOutputKeepsItsBatchWhileOthersSend) {
    Pair slow(true, 4096), fast(true);
    for (int i = 0; i < 64; ++i) slow.s.queue(4000);
    bool blocked = false;
    ASSERT_EQ(slow.tx->pump_tx(slow.s, blocked), IoStatus::kOk);
    ASSERT_TRUE(blocked);
    ASSERT_TRUE(slow.tx->tx_pending());
    for (int i = 0; i < 100; ++i) fast.s.queue(uint16_t(10 + i * 13));
    ASSERT_TRUE(fast.run_until(100));
    EXPECT_FALSE(fast.tx->tx_pending());
    EXPECT_TRUE(slow.tx->tx_pending());
    EXPECT_EQ(slow.r.received, 0u);
    ASSERT_TRUE(slow.run_until(64));
    EXPECT_EQ(slow.r.bytes, 64u * 4000);
}

// On shared memory the receiver parses the ring's bytes where they lie. Small rings (64 KiB,
// the least) wrap many times; frames of every size (some read straight into place), with and
// without CRC, and a receiver that handles only a few frames per pass (the rest wait in the
// ring) or reads while the sender is mid-batch: every frame arrives whole and in order.
TEST(FpduStream, RingFramesAreReadInPlaceAcrossChunkAndRingEnds) {
    ASSERT_EQ(setenv("SOFTRDMA_SHM_RING_KB", "64", 1), 0);
    for (bool crc : {false, true}) {
        for (int per_pass : {1, 3, 64}) {
            TcpPair p(true);
            UniqueFd a = std::move(p.client), b = std::move(p.server);
            auto offer = ShmLink::create(a.get());
            ASSERT_TRUE(offer);
            ShmLink::OpenError err;
            auto accept = ShmLink::open(b.get(), uint32_t(getpid()), uint32_t(offer->fd()), err);
            ASSERT_TRUE(accept) << int(err);
            offer->close_fd();
            FpduStream tx(std::move(a), crc), rx(std::move(b), crc);
            tx.shm_attach(std::move(offer));
            rx.shm_attach(std::move(accept));
            Sender s;
            Receiver r;
            r.switch_on_marker = &rx;
            wire::SegmentHeader marker;
            marker.op = wire::RdmapOp::kSend;
            marker.msn = 0;
            tx.shm_switch_tx_after(marker, {});
            std::mt19937 rng(crc * 10 + uint32_t(per_pass));
            uint32_t queued = 0;
            bool blocked = false, progressed = false;
            for (int round = 0; round < 200000 && r.received < 3000; ++round) {
                if (queued < 3000 && queued - r.received < 200) {
                    const uint32_t kind = rng() % 10;
                    s.queue(uint16_t(kind == 0 ? 4096 + rng() % 5000 : 1 + rng() % 300));
                    ++queued;
                }
                ASSERT_EQ(tx.pump_tx(s, blocked), IoStatus::kOk);
                if (rng() % 3 == 0) continue;  // let the sender get ahead now and then
                ASSERT_EQ(rx.pump_rx(r, per_pass, progressed), IoStatus::kOk)
                    << "crc " << crc << " per pass " << per_pass << " message " << r.received + 1;
            }
            EXPECT_TRUE(tx.shm_tx());
            EXPECT_TRUE(rx.shm_rx());
            EXPECT_EQ(r.received, 3000u) << "crc " << crc << " per pass " << per_pass;
        }
    }
    unsetenv("SOFTRDMA_SHM_RING_KB");
}

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause
// The same-host path's pieces: the byte ring (wrap-around, partial writes, wake-up requests,
// indices a hostile peer corrupted) and the segment (found through /proc, refused when it is
// another connection's).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "transport/shm_link.h"
#include "transport/shm_ring.h"

using namespace softrdma;
using namespace softrdma::transport;

namespace {

struct Ring {
    explicit Ring(uint64_t cap) : data(cap), ring(ctl.get(), data.data(), cap) {}
    std::unique_ptr<ShmRingCtl> ctl = std::make_unique<ShmRingCtl>();
    std::vector<uint8_t> data;
    ShmRing ring;
};

int64_t put(ShmRing &r, const std::string &s) {
    iovec v{const_cast<char *>(s.data()), s.size()};
    return r.write(&v, 1);
}

std::string take(ShmRing &r, size_t n) {
    std::string s(n, '\0');
    iovec v{s.data(), n};
    const int64_t k = r.read(&v, 1);
    s.resize(k < 0 ? 0 : size_t(k));
    return s;
}

// A connected loopback TCP pair.
struct TcpPair {
    TcpPair() {
        UniqueFd l(socket(AF_INET, SOCK_STREAM, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        EXPECT_EQ(bind(l.get(), reinterpret_cast<sockaddr *>(&a), len), 0);
        EXPECT_EQ(listen(l.get(), 4), 0);
        EXPECT_EQ(getsockname(l.get(), reinterpret_cast<sockaddr *>(&a), &len), 0);
        client.reset(socket(AF_INET, SOCK_STREAM, 0));
        EXPECT_EQ(connect(client.get(), reinterpret_cast<sockaddr *>(&a), len), 0);
        server.reset(accept(l.get(), nullptr, nullptr));
    }
    UniqueFd client, server;
};

}  // namespace

TEST(ShmRing, WrapsAroundAndWritesOnlyWhatFits) {
    Ring t(16);
    EXPECT_EQ(put(t.ring, "0123456789"), 10);
    EXPECT_EQ(take(t.ring, 6), "012345");
    EXPECT_EQ(t.ring.room(), 12u);
    // 12 fit of 14: the write wraps past the end of the data.
    EXPECT_EQ(put(t.ring, "abcdefghijklmn"), 12);
    EXPECT_EQ(put(t.ring, "x"), 0);  // full
    EXPECT_EQ(take(t.ring, 100), "6789abcdefghijkl");
    EXPECT_FALSE(t.ring.readable());
    EXPECT_EQ(take(t.ring, 4), "");
}

TEST(ShmRing, GathersAndScattersIovecs) {
    Ring t(32);
    char a[] = "hello ", b[] = "shared ", c[] = "world";
    iovec in[3] = {{a, 6}, {b, 7}, {c, 5}};
    EXPECT_EQ(t.ring.write(in, 3), 18);
    char x[4], y[20] = {};
    iovec out[2] = {{x, 4}, {y, sizeof y}};
    EXPECT_EQ(t.ring.read(out, 2), 18);
    EXPECT_EQ(std::string(x, 4), "hell");
    EXPECT_EQ(std::string(y, 14), "o shared world");
}

TEST(ShmRing, WakeUpRequestsAreAnsweredOnce) {
    Ring t(8);
    EXPECT_FALSE(t.ring.sleep());  // empty: the reader may sleep
    EXPECT_EQ(put(t.ring, "ab"), 2);
    EXPECT_TRUE(t.ring.take_reader_wake());
    EXPECT_FALSE(t.ring.take_reader_wake());  // one byte on TCP per sleep, not per write
    EXPECT_TRUE(t.ring.sleep());              // data came: do not sleep
    EXPECT_EQ(put(t.ring, "cdefgh"), 6);
    EXPECT_FALSE(t.ring.wait_for_room());  // full: the writer waits
    EXPECT_EQ(take(t.ring, 3), "abc");
    EXPECT_TRUE(t.ring.take_writer_wake());
    EXPECT_FALSE(t.ring.take_writer_wake());
    EXPECT_TRUE(t.ring.wait_for_room());  // room already: write instead of waiting
}

// The peer owns half the control words: impossible indices fail the stream, and no byte is
// copied from or to outside the ring.
TEST(ShmRing, ImpossibleIndicesFromThePeerAreRefused) {
    Ring t(16);
    t.ctl->head.store(17);  // more than the ring holds
    EXPECT_EQ(take(t.ring, 4).size(), 0u);
    std::string s(4, '\0');
    iovec v{s.data(), 4};
    EXPECT_EQ(t.ring.read(&v, 1), -1);
    Ring w(16);
    w.ctl->tail.store(5);  // read more than was ever written
    EXPECT_EQ(put(w.ring, "abc"), -1);
    EXPECT_EQ(w.ring.room(), 0u);
}

// One producer thread, one consumer thread, odd chunk sizes: every byte arrives, in order.
TEST(ShmRing, TwoThreadsMoveAStreamIntact) {
    Ring t(4096);
    constexpr size_t kTotal = 8 << 20;
    std::thread producer([&] {
        std::mt19937 rng(1);
        std::vector<uint8_t> chunk(3000);
        size_t sent = 0;
        while (sent < kTotal) {
            const size_t n = std::min<size_t>(kTotal - sent, 1 + rng() % chunk.size());
            for (size_t i = 0; i < n; ++i) chunk[i] = uint8_t((sent + i) * 31);
            size_t off = 0;
            while (off < n) {
                iovec v{chunk.data() + off, n - off};
                const int64_t k = t.ring.write(&v, 1);
                ASSERT_GE(k, 0);
                off += size_t(k);
            }
            sent += n;
        }
    });
    std::mt19937 rng(2);
    std::vector<uint8_t> buf(5000);
    size_t got = 0;
    bool ok = true;
    while (got < kTotal) {
        iovec v{buf.data(), 1 + rng() % buf.size()};
        const int64_t k = t.ring.read(&v, 1);
        ASSERT_GE(k, 0);
        for (int64_t i = 0; i < k; ++i) ok &= buf[size_t(i)] == uint8_t((got + size_t(i)) * 31);
        got += size_t(k);
    }
    producer.join();
    EXPECT_TRUE(ok);
}

TEST(ShmLink, TheAccepterFindsTheOfferersSegment) {
    TcpPair p;
    EXPECT_TRUE(shm_same_host(p.client.get()));
    EXPECT_TRUE(shm_same_host(p.server.get()));
    const int offer_sock = p.server.get(), accept_sock = p.client.get();
    auto offer = ShmLink::create(offer_sock);
    ASSERT_TRUE(offer);
    ShmLink::OpenError err;
    auto accept = ShmLink::open(accept_sock, uint32_t(getpid()), uint32_t(offer->fd()), err);
    ASSERT_TRUE(accept) << int(err);
    EXPECT_EQ(accept->ring_bytes(), offer->ring_bytes());
    offer->close_fd();  // the mappings keep the segment
    EXPECT_EQ(put(offer->tx(), "to the accepter"), 15);
    EXPECT_EQ(take(accept->rx(), 64), "to the accepter");
    EXPECT_EQ(put(accept->tx(), "back"), 4);
    EXPECT_EQ(take(offer->rx(), 64), "back");
}

TEST(ShmLink, AnotherConnectionsSegmentOrAnyOtherFileIsRefused) {
    TcpPair p, q;
    const int offer_sock = p.server.get(), accept_sock = p.client.get();
    auto offer = ShmLink::create(offer_sock);
    ASSERT_TRUE(offer);
    ShmLink::OpenError err;
    // The right segment, seen from another connection's socket.
    EXPECT_FALSE(ShmLink::open(q.client.get(), uint32_t(getpid()), uint32_t(offer->fd()), err));
    EXPECT_EQ(err, ShmLink::OpenError::kBadSegment);
    EXPECT_FALSE(ShmLink::open(q.server.get(), uint32_t(getpid()), uint32_t(offer->fd()), err));
    EXPECT_EQ(err, ShmLink::OpenError::kBadSegment);
    // A file descriptor that is no segment (a socket, a pipe), or none at all.
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    EXPECT_FALSE(ShmLink::open(accept_sock, uint32_t(getpid()), uint32_t(pipefd[0]), err));
    EXPECT_FALSE(ShmLink::open(accept_sock, uint32_t(getpid()), 999999, err));
    EXPECT_EQ(err, ShmLink::OpenError::kCannotOpen);
    close(pipefd[0]);
    close(pipefd[1]);
    // The segment's size is sealed: no end can shrink it under the other's mapping.
    EXPECT_NE(ftruncate(offer->fd(), 4096), 0);
}

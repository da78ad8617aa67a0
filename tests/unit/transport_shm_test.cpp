// SPDX-License-Identifier: BSD-2-Clause
// The same-host path's pieces: the byte ring (wrap-around, partial writes, wake-up requests,
// indices a hostile peer corrupted) and the segment (found through /proc, refused when it is
// another connection's).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "transport/shm_channel.h"
#include "transport/shm_link.h"
#include "transport/shm_ring.h"
#include "tcp_pair.h"

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
    w.ctl->tail.store(5);          // read more than was ever written
    EXPECT_EQ(w.ring.room(), 0u);  // room() always reads the tail
    EXPECT_EQ(put(w.ring, "abc"), -1);
    // A writer that still has room by the tail it last saw reads the tail again only when it
    // needs more: the bogus tail is refused then.
    Ring u(16);
    EXPECT_EQ(put(u.ring, "0123456789"), 10);
    u.ctl->tail.store(14);             // beyond the head (13 once "abc" is in)
    EXPECT_EQ(put(u.ring, "abc"), 3);  // fits by the tail seen (0): the tail is not read
    EXPECT_EQ(put(u.ring, "defg"), -1);
}

// Each side keeps its own copy of the index it publishes: a peer that overwrites it (or a
// stale copy of the shared line) neither moves the writer back over unread bytes nor the
// reader back over bytes it gave up.
TEST(ShmRing, EachSideKeepsTheIndexItPublishes) {
    Ring t(16);
    EXPECT_EQ(put(t.ring, "abc"), 3);
    t.ctl->head.store(0);  // the peer writes our head
    EXPECT_EQ(put(t.ring, "de"), 2);
    EXPECT_EQ(t.ctl->head.load(), 5u);  // after "abc", not over it
    EXPECT_EQ(std::string(reinterpret_cast<char *>(t.data.data()), 5), "abcde");
    Ring u(16);
    EXPECT_EQ(put(u.ring, "0123456789"), 10);
    EXPECT_EQ(take(u.ring, 4), "0123");
    u.ctl->tail.store(0);  // the peer writes our tail
    EXPECT_EQ(take(u.ring, 2), "45");
    EXPECT_EQ(u.ctl->tail.load(), 6u);  // published again from our own count
}

// The producer's note: unset until set, then the last value, on the head's own cache line.
TEST(ShmRing, NoteTravelsOnTheHeadLine) {
    Ring t(64);
    uint32_t v = 7;
    EXPECT_FALSE(t.ring.note(v));
    t.ring.set_note(0);  // zero is a value, not "unset"
    EXPECT_TRUE(t.ring.note(v));
    EXPECT_EQ(v, 0u);
    t.ring.set_note(0xfffffffeu);
    EXPECT_EQ(put(t.ring, "x"), 1);
    EXPECT_EQ(take(t.ring, 1), "x");
    EXPECT_TRUE(t.ring.note(v));
    EXPECT_EQ(v, 0xfffffffeu);
    EXPECT_EQ(offsetof(ShmRingCtl, note) / 64, offsetof(ShmRingCtl, head) / 64);
}

// Each side reads the other's index only when what it saw of it is not enough.
TEST(ShmRing, IndicesAreReadAgainOnlyWhenNeeded) {
    Ring t(16);
    EXPECT_EQ(put(t.ring, "0123456789"), 10);
    EXPECT_EQ(take(t.ring, 10), "0123456789");
    // Room 6 by the tail seen at the first write (0): the second write needs the new tail.
    EXPECT_EQ(put(t.ring, "abcdefgh"), 8);
    EXPECT_EQ(take(t.ring, 3), "abc");
    // The reader saw head 18 when it took "abc": a head moved back is not noticed while the
    // read stays within what was seen, and is refused once it needs more.
    t.ctl->head.store(12);
    EXPECT_EQ(take(t.ring, 5), "defgh");
    EXPECT_TRUE(t.ring.readable());  // the head moved: the read that follows judges it
    char c;
    iovec v{&c, 1};
    EXPECT_EQ(t.ring.read(&v, 1), -1);
}

// One producer thread, one consumer thread, odd chunk sizes: every byte arrives, in order, and
// the note read after some bytes is never older than the one set before them.
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
            // Before the write that publishes them: the reader never sees an older note.
            t.ring.set_note(uint32_t(sent + n));
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
        uint32_t note = 0;
        if (k > 0) ok &= t.ring.note(note) && note >= got;
    }
    producer.join();
    EXPECT_TRUE(ok);
}

// Without SOFTRDMA_SHM_RING_KB: 2 MiB rings while the process's rings (both directions of
// every live link, offered or opened) stay within the 64 MiB budget, 256 KiB after that, and
// the budget comes back when links close.
TEST(ShmLink, LargeRingsWhileTheBudgetLastsThenSmallOnes) {
    ASSERT_EQ(std::getenv("SOFTRDMA_SHM_RING_KB"), nullptr);
    std::vector<std::unique_ptr<TcpPair>> pairs;
    std::vector<std::unique_ptr<ShmLink>> links;
    for (int i = 0; i < 17; ++i) {
        pairs.push_back(std::make_unique<TcpPair>());
        links.push_back(ShmLink::create(pairs.back()->server.get()));
        ASSERT_TRUE(links.back());
    }
    for (int i = 0; i < 16; ++i) EXPECT_EQ(links[size_t(i)]->ring_bytes(), 2u << 20) << i;
    EXPECT_EQ(links[16]->ring_bytes(), 256u << 10);
    links[0].reset();
    links[16].reset();
    auto again = ShmLink::create(pairs[0]->server.get());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->ring_bytes(), 2u << 20);
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

// ---- chunks (transport/shm_channel.h): literal and by-reference pieces of one stream.

namespace {

// Writes `pieces` through the chunk layer, then reads the stream back in reads of `step`
// bytes, direct or staged, resolving references in this very process.
std::vector<uint8_t> chunk_round_trip(std::vector<std::vector<uint8_t>> &pieces, bool refs,
                                      size_t step, bool direct, size_t *chunk_bytes = nullptr) {
    Ring r(1 << 18);  // room for the whole stream as literal bytes
    std::vector<iovec> v;
    size_t total = 0;
    for (auto &p : pieces) {
        v.push_back({p.data(), p.size()});
        total += p.size();
    }
    ShmRefRule rule;
    rule.enabled = refs;
    rule.min_len = 4096;
    EXPECT_EQ(shm_write_chunks(r.ring, v.data(), int(v.size()), rule), int64_t(total));
    if (chunk_bytes) *chunk_bytes = size_t(r.ctl->head.load());
    std::vector<uint8_t> out(total);
    ShmChunkCursor c;
    size_t got = 0;
    for (int guard = 0; got < total && guard < 100000; ++guard) {
        iovec dst{out.data() + got, std::min(step, total - got)};
        const int64_t n = shm_read_chunks(r.ring, c, getpid(), &dst, 1, direct);
        EXPECT_GT(n, 0);
        if (n <= 0) break;
        got += size_t(n);
    }
    EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), nullptr, 0, true), 0);
    return out;
}

}  // namespace

// The reader sees the same bytes whether large pieces went by reference or through the
// ring; by reference they take a few bytes of ring instead of their length.
TEST(ShmChunks, ReferencesCarryTheSameStream) {
    std::mt19937 rng(3);
    std::vector<std::vector<uint8_t>> pieces;
    std::vector<uint8_t> want;
    for (size_t len : {20u, 40000u, 3u, 4096u, 100u, 65280u}) {
        std::vector<uint8_t> p(len);
        for (auto &b : p) b = uint8_t(rng());
        want.insert(want.end(), p.begin(), p.end());
        pieces.push_back(std::move(p));
    }
    for (bool refs : {false, true})
        for (size_t step : {size_t(7), size_t(4096), size_t(1) << 20})
            for (bool direct : {false, true}) {
                size_t used = 0;
                EXPECT_EQ(chunk_round_trip(pieces, refs, step, direct, &used), want)
                    << refs << " " << step << " " << direct;
                if (refs)
                    EXPECT_LT(used, 200u);  // three references and three short literals
                else
                    EXPECT_GT(used, want.size());
            }
}

// A staged (not direct) read stops in front of a reference once it has bytes, so that the
// reference's bytes go straight to where the next, direct, read puts them.
TEST(ShmChunks, StagedReadStopsAtAReference) {
    Ring r(1 << 12);
    std::vector<uint8_t> head(16, 0xab), body(8192, 0xcd);
    iovec v[2] = {{head.data(), head.size()}, {body.data(), body.size()}};
    ShmRefRule rule;
    rule.enabled = true;
    rule.min_len = 4096;
    ASSERT_EQ(shm_write_chunks(r.ring, v, 2, rule), int64_t(head.size() + body.size()));
    std::vector<uint8_t> stage(1 << 16);
    ShmChunkCursor c;
    iovec s{stage.data(), stage.size()};
    EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), &s, 1, false), 16);
    std::vector<uint8_t> dst(8192);
    iovec d{dst.data(), dst.size()};
    EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), &d, 1, true), 8192);
    EXPECT_EQ(dst, body);
}

// What a broken or hostile writer can put in the ring ends the stream: a chunk of length 0,
// a reference to memory the writer does not have, a writer that is gone.
TEST(ShmChunks, BadChunksAreErrors) {
    uint8_t out[64];
    iovec d{out, sizeof out};
    {
        Ring r(4096);
        uint32_t zero = 0;
        iovec h{&zero, 4};
        ASSERT_EQ(r.ring.write(&h, 1), 4);
        ShmChunkCursor c;
        errno = 0;
        EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), &d, 1, true), -1);
        EXPECT_EQ(errno, EPROTO);
    }
    {
        Ring r(4096);
        uint8_t ref[kRefChunk] = {64, 0, 0, 0x80};  // 64 bytes at address 8: never mapped
        ref[4] = 8;
        iovec h{ref, sizeof ref};
        ASSERT_EQ(r.ring.write(&h, 1), int64_t(sizeof ref));
        ShmChunkCursor c;
        errno = 0;
        EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), &d, 1, true), -1);
        EXPECT_EQ(errno, EFAULT);
    }
    {
        Ring r(4096);
        std::vector<uint8_t> big(8192, 1);
        iovec p{big.data(), big.size()};
        ShmRefRule rule;
        rule.enabled = true;
        rule.min_len = 4096;
        ASSERT_EQ(shm_write_chunks(r.ring, &p, 1, rule), 8192);
        pid_t gone = fork();
        if (gone == 0) _exit(0);
        ASSERT_GT(gone, 0);
        waitpid(gone, nullptr, 0);
        ShmChunkCursor c;
        errno = 0;
        EXPECT_EQ(shm_read_chunks(r.ring, c, gone, &d, 1, true), -1);
        EXPECT_EQ(errno, ESRCH);
    }
}

// A small ring wraps many times under the reader: chunk headers and bodies cut by the ring's
// end, reads into one piece (a staging buffer) and into several (a scatter list), of every
// size. The stream comes out whole and in order.
TEST(ShmChunks, ReadsAcrossTheRingsEndIntoOneOrManyPieces) {
    Ring r(97);  // not a power of two, and no multiple of a header: every offset occurs
    std::mt19937 rng(11);
    std::vector<uint8_t> sent, got;
    ShmChunkCursor c;
    ShmRefRule literal;
    for (int round = 0; round < 4000 && got.size() < 60000; ++round) {
        std::vector<uint8_t> p(1 + rng() % 40);
        for (auto &b : p) b = uint8_t(rng());
        iovec v{p.data(), p.size()};
        const int64_t w = shm_write_chunks(r.ring, &v, 1, literal);
        ASSERT_GE(w, 0);
        sent.insert(sent.end(), p.begin(), p.begin() + w);
        uint8_t a[64], b[5];
        const size_t want = 1 + rng() % 60;
        iovec d[2] = {{a, want}, {b, sizeof b}};
        const int pieces = 1 + int(rng() % 2);
        const int64_t n = shm_read_chunks(r.ring, c, getpid(), d, pieces, true);
        ASSERT_GE(n, 0);
        const size_t first = std::min<size_t>(size_t(n), want);
        got.insert(got.end(), a, a + first);
        got.insert(got.end(), b, b + (size_t(n) - first));
    }
    for (int guard = 0; guard < 1000 && got.size() < sent.size(); ++guard) {
        uint8_t a[64];
        iovec d{a, sizeof a};
        const int64_t n = shm_read_chunks(r.ring, c, getpid(), &d, 1, true);
        ASSERT_GE(n, 0);
        got.insert(got.end(), a, a + n);
    }
    ASSERT_GT(sent.size(), 20000u);
    EXPECT_EQ(got, sent);
}

// A header cut short (fewer than its 4 bytes published) or a reference without its address
// is corrupt, wherever the ring's end falls.
TEST(ShmChunks, ShortHeadersAreErrors) {
    for (uint64_t start : {0u, 30u, 31u, 33u}) {
        for (size_t len : {1u, 3u, 6u}) {  // 6: a reference's word and 2 of its 8 address bytes
            Ring r(34);
            std::string pad(start, 'x');
            ASSERT_EQ(put(r.ring, pad), int64_t(start));
            ASSERT_EQ(take(r.ring, start), pad);
            const uint8_t bytes[6] = {16, 0, 0, 0x80, 1, 2};
            iovec h{const_cast<uint8_t *>(bytes), len};
            ASSERT_EQ(r.ring.write(&h, 1), int64_t(len));
            uint8_t out[32];
            iovec d{out, sizeof out};
            ShmChunkCursor c;
            errno = 0;
            EXPECT_EQ(shm_read_chunks(r.ring, c, getpid(), &d, 1, true), -1) << start << " " << len;
            EXPECT_EQ(errno, EPROTO);
        }
    }
}

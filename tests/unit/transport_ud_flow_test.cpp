// SPDX-License-Identifier: BSD-2-Clause
// UD flow-control bookkeeping: windows, grants, the watchdog, resynchronisation and the
// bounded peer tables.
#include <gtest/gtest.h>

#include <cstring>

#include "transport/ud_flow.h"

using softrdma::transport::UdFlow;

namespace {

struct Gid {
    uint8_t raw[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
};

constexpr uint64_t kMs = 1'000'000;

// Sends while allowed; returns how many went.
int send_all(UdFlow &f, const Gid &g, uint32_t qpn, uint64_t now, int max = 100000) {
    int n = 0;
    while (n < max && f.may_send(g.raw, qpn, now)) {
        f.sent(g.raw, qpn, now);
        ++n;
    }
    return n;
}

}  // namespace

TEST(UdFlow, InitialWindowThenGrantsOpenIt) {
    UdFlow f;
    Gid g;
    EXPECT_EQ(send_all(f, g, 0x100ff, 1), int(UdFlow::kInitialWindow));
    f.granted(g.raw, 0x100ff, 2, 100);  // 2 consumed, 100 may be in flight
    EXPECT_EQ(send_all(f, g, 0x100ff, 2), 100 - 6);
    EXPECT_FALSE(f.may_send(g.raw, 0x100ff, 3));
    f.granted(g.raw, 0x100ff, 102, 100);  // everything consumed
    EXPECT_EQ(send_all(f, g, 0x100ff, 4), 100);
}

TEST(UdFlow, WatchdogReleasesASilentPeerAndAGrantMetersItAgain) {
    UdFlow f;
    Gid g;
    const uint64_t t0 = 10 * kMs;
    EXPECT_EQ(send_all(f, g, 7, t0), int(UdFlow::kInitialWindow));
    EXPECT_EQ(f.retry_at(g.raw, 7), t0 + UdFlow::kWatchdogNs);
    EXPECT_FALSE(f.may_send(g.raw, 7, t0 + UdFlow::kWatchdogNs - 1));
    EXPECT_EQ(send_all(f, g, 7, t0 + UdFlow::kWatchdogNs, 1000), 1000);  // released
    // The peer was alive after all: its count becomes the truth (the released datagrams
    // were not counted, some may be lost), and the window applies again.
    f.granted(g.raw, 7, 50, 16);
    EXPECT_EQ(send_all(f, g, 7, t0 + UdFlow::kWatchdogNs + 1), 16);
}

// The clock readings come from several threads (the application's posts, the engine's
// passes), each carried on by its own TSC reading: one may be a little behind the stamp
// another left. An earlier reading is "now", not an unsigned wrap to "ages ago" (that
// released a stopped receiver's window at once).
TEST(UdFlow, AReadingBehindTheBlockedStampDoesNotReleaseThePeer) {
    UdFlow f;
    Gid g;
    const uint64_t t0 = 10 * kMs;
    EXPECT_EQ(send_all(f, g, 7, t0), int(UdFlow::kInitialWindow));
    EXPECT_FALSE(f.may_send(g.raw, 7, t0));  // blocked since t0
    EXPECT_FALSE(f.may_send(g.raw, 7, t0 - 200));
    EXPECT_FALSE(f.may_send(g.raw, 7, t0 + UdFlow::kWatchdogNs - 1));
    EXPECT_TRUE(f.may_send(g.raw, 7, t0 + UdFlow::kWatchdogNs));
}

TEST(UdFlow, UnreachablePeerIsReleasedAtOnce) {
    UdFlow f;
    Gid g, other;
    other.raw[15] = 9;
    EXPECT_EQ(send_all(f, g, 7, 1), int(UdFlow::kInitialWindow));
    EXPECT_FALSE(f.unreachable(other.raw, 7));  // another host's QP 7: not this one
    EXPECT_FALSE(f.unreachable(g.raw, 8));
    EXPECT_FALSE(f.may_send(g.raw, 7, 2));
    EXPECT_TRUE(f.unreachable(g.raw, 7));
    EXPECT_EQ(f.retry_at(g.raw, 7), 0u);
    EXPECT_EQ(send_all(f, g, 7, 3, 1000), 1000);  // long before the watchdog
    EXPECT_FALSE(f.unreachable(g.raw, 7));        // already released
    f.granted(g.raw, 7, 20, 16);                  // a new QP on that port meters it again
    EXPECT_EQ(send_all(f, g, 7, 4), 16);
}

TEST(UdFlow, PeerThatForgotUsIsResynchronised) {
    UdFlow f;
    Gid g;
    send_all(f, g, 9, 1);
    f.granted(g.raw, 9, 8, 8);
    send_all(f, g, 9, 2);       // 16 sent
    f.granted(g.raw, 9, 3, 8);  // went backwards: the peer restarted its count
    EXPECT_EQ(send_all(f, g, 9, 3), 8);
    f.granted(g.raw, 9, 1000, 8);  // more than we ever sent: we were the one who forgot
    EXPECT_EQ(send_all(f, g, 9, 4), 8);
}

TEST(UdFlow, GrantFromAnotherAddressOfTheSamePeer) {
    UdFlow f;
    Gid g, other;
    other.raw[15] = 9;
    send_all(f, g, 0x2200ff, 1);
    f.granted(other.raw, 0x2200ff, 8, 8);  // unique QPN: accepted
    EXPECT_EQ(send_all(f, g, 0x2200ff, 2), 8);
    f.granted(g.raw, 0x3300ff, 100, 100);  // a QPN we never sent to: ignored
    EXPECT_FALSE(f.may_send(g.raw, 0x2200ff, 3));
}

TEST(UdFlow, ReceiverGrantsAtOnceThenEveryQuarterWindow) {
    UdFlow f;
    Gid g;
    uint32_t c = 0;
    bool restart = false;
    std::vector<std::pair<uint32_t, bool>> grants;
    for (int i = 0; i < 300; ++i)
        if (f.consumed(g.raw, 5, uint64_t(i), 100, c, restart)) grants.emplace_back(c, restart);
    ASSERT_GE(grants.size(), 3u);
    EXPECT_EQ(grants[0], std::make_pair(1u, true));  // a new sender: its count starts here
    EXPECT_EQ(grants[1], std::make_pair(26u, false));
    EXPECT_EQ(grants[2], std::make_pair(51u, false));
}

TEST(UdFlow, RestartGrantKeepsUncountedDatagramsInFlight) {
    UdFlow f;
    Gid g;
    EXPECT_EQ(send_all(f, g, 9, 1), int(UdFlow::kInitialWindow));
    // The peer's first grant counts from the first datagram it took: the other 7 are still
    // in its socket, and only 1 more fits a window of 8.
    f.granted(g.raw, 9, 1, 8, true);
    EXPECT_EQ(send_all(f, g, 9, 2), 1);
    f.granted(g.raw, 9, 8, 8, false);  // it took them all
    EXPECT_EQ(send_all(f, g, 9, 3), 7);
    // It forgot us and counted afresh: 3 of our 8 in flight taken since.
    f.granted(g.raw, 9, 3, 8, true);
    EXPECT_EQ(send_all(f, g, 9, 4), 3);
    // The same count again without a restart is no news.
    f.granted(g.raw, 9, 3, 8, false);
    EXPECT_FALSE(f.may_send(g.raw, 9, 5));
    // A restart counting more than we have in flight leaves nothing in flight.
    f.granted(g.raw, 9, 100, 8, true);
    EXPECT_EQ(send_all(f, g, 9, 6), 8);
}

// More senders than the receiver's table holds, interleaved so that every one is forgotten
// before its next datagram: each is still granted, and none waits for the watchdog.
TEST(UdFlow, ChurnedReceiverTableNeverStallsASender) {
    UdFlow sender, receiver;
    Gid g;
    uint32_t c = 0;
    bool restart = false;
    uint64_t now = 1;
    for (int i = 0; i < 2000; ++i, ++now) {
        ASSERT_TRUE(sender.may_send(g.raw, 0x200ff, now)) << "blocked at datagram " << i;
        sender.sent(g.raw, 0x200ff, now);
        if (receiver.consumed(g.raw, 0x100ff, now, 64, c, restart))
            sender.granted(g.raw, 0x200ff, c, 64, restart);      // the receiver is QP 0x200ff
        for (uint32_t q = 0; q < UdFlow::kTableSize + 1; ++q) {  // strangers flush the table
            Gid other;
            other.raw[15] = uint8_t(q);
            receiver.consumed(other.raw, 0x300ff + (q << 8), now, 64, c, restart);
        }
    }
}

TEST(UdFlow, TablesAreBoundedAndForgetTheOldest) {
    UdFlow f;
    uint32_t c;
    for (uint32_t q = 1; q <= 1000; ++q) {
        Gid g;
        g.raw[14] = uint8_t(q >> 8);
        g.raw[15] = uint8_t(q);
        EXPECT_TRUE(f.may_send(g.raw, q, q));
        f.sent(g.raw, q, q);
        bool r;
        f.consumed(g.raw, q, q, 64, c, r);
    }
    Gid first;
    first.raw[14] = 0;
    first.raw[15] = 1;
    EXPECT_EQ(f.retry_at(first.raw, 1), 0u);  // forgotten: starts afresh
    EXPECT_EQ(send_all(f, first, 1, 2000), int(UdFlow::kInitialWindow));
}

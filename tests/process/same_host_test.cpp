// SPDX-License-Identifier: BSD-2-Clause
// Same-host connections move from TCP to shared memory (docs/wire.md §6.10) without the
// application noticing: data, ordering, wake-ups of a sleeping receiver, a writer held by a
// full ring, and the TCP path when one end turns it off.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "process/harness.h"

using namespace sr_test;

namespace {

// The shared-memory segments of ours this process has mapped: how many, and where the first is.
struct ShmMappings {
    int count = 0;
    uint8_t *first = nullptr;
};
ShmMappings shm_mappings() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    ShmMappings m;
    while (std::getline(maps, line)) {
        if (line.find("softrdma-shm") == std::string::npos) continue;
        if (m.count++ == 0)
            m.first = reinterpret_cast<uint8_t *>(std::strtoull(line.c_str(), nullptr, 16));
    }
    return m;
}

int shm_segments() {
    return shm_mappings().count;
}

uint8_t pattern(size_t msg, size_t i) {
    return uint8_t(msg * 37 + i * 131 + (i >> 9));
}

constexpr uint32_t kMsg = 40000;  // 200 of them: 8 MB through a ring of 2 MiB at most
constexpr int kCount = 200;
constexpr int kWindow = 16;

// Streams kCount checked SENDs, at most kWindow in flight.
int stream_sender(Oob &oob, int expect_segments) {
    EpOptions o;
    o.buf_size = size_t(kWindow) * kMsg;
    Endpoint ep(o);
    ep.exchange_and_connect(oob);
    oob.barrier();  // receives posted
    int posted = 0, done = 0;
    while (done < kCount) {
        while (posted < kCount && posted - done < kWindow) {
            uint8_t *p = ep.buf + size_t(posted % kWindow) * kMsg;
            for (size_t i = 0; i < kMsg; ++i) p[i] = pattern(size_t(posted), i);
            PCHECK(ep.post(IBV_WR_SEND, uint64_t(posted), size_t(posted % kWindow) * kMsg, kMsg) ==
                   0);
            ++posted;
        }
        const ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, uint64_t(done));  // in order
        ++done;
    }
    PCHECK_EQ(shm_segments(), expect_segments);
    oob.barrier();
    return 0;
}

int stream_receiver(Oob &oob, int expect_segments) {
    EpOptions o;
    o.buf_size = size_t(kCount) * kMsg;
    o.max_recv_wr = kCount;
    o.cqe = 2 * kCount;
    Endpoint ep(o);
    for (int i = 0; i < kCount; ++i) ep.post_recv(uint64_t(i), size_t(i) * kMsg, kMsg);
    ep.exchange_and_connect(oob);
    oob.barrier();
    for (int i = 0; i < kCount; ++i) {
        const ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, uint64_t(i));
        PCHECK_EQ(wc.byte_len, kMsg);
        const uint8_t *p = ep.buf + size_t(i) * kMsg;
        for (size_t k = 0; k < kMsg; ++k) PCHECK_EQ(p[k], pattern(size_t(i), k));
    }
    PCHECK_EQ(shm_segments(), expect_segments);
    oob.barrier();
    return 0;
}

// The next completion, sleeping on the completion channel (never polling in between).
ibv_wc wait_wc_sleeping(Endpoint &ep) {
    ibv_wc wc;
    for (int round = 0; round < 1000; ++round) {
        PCHECK_EQ(ibv_req_notify_cq(ep.cq, 0), 0);
        const int n = ibv_poll_cq(ep.cq, 1, &wc);  // what came before the request
        PCHECK(n >= 0);
        if (n == 1) return wc;
        pollfd pfd{ep.chan->fd, POLLIN, 0};
        PCHECK_EQ(poll(&pfd, 1, 20000), 1);
        ibv_cq *cq;
        void *ctx;
        PCHECK_EQ(ibv_get_cq_event(ep.chan, &cq, &ctx), 0);
        ibv_ack_cq_events(cq, 1);
    }
    PCHECK(false);
    return wc;
}

constexpr int kPings = 1000;
constexpr uint32_t kPingLen = 64;
constexpr uint64_t kRecvId = 1 << 20;  // receives' wr_ids start here, sends' at 0

uint64_t sent_pkts(const Endpoint &ep) {
    int st = 0;
    const std::string s = run_cli("stat --json " + std::to_string(getpid()), st);
    PCHECK_EQ(st, 0);
    return qp_value(s, ep.qp->qp_num, "sent_pkts");
}

// Takes completions until the receive of message `i` (its data checked) and, unless
// `send` is negative, the completion of our send `send` have both come.
void take_ping(Endpoint &ep, int i, int send, uint8_t salt) {
    bool recvd = false, sent = send < 0;
    while (!recvd || !sent) {
        const ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        if (wc.opcode == IBV_WC_RECV) {
            PCHECK_EQ(wc.wr_id, kRecvId + uint64_t(i));
            PCHECK_EQ(wc.byte_len, kPingLen);
            const uint8_t *p = ep.buf + 4096 + size_t(i) * kPingLen;
            for (uint32_t k = 0; k < kPingLen; ++k) PCHECK_EQ(p[k], uint8_t(pattern(i, k) ^ salt));
            recvd = true;
        } else {
            PCHECK_EQ(wc.wr_id, uint64_t(send));
            sent = true;
        }
    }
}

void post_ping(Endpoint &ep, int i, uint8_t salt) {
    uint8_t *p = ep.buf + size_t(i % 2) * kPingLen;  // the previous one's is still ours
    for (uint32_t k = 0; k < kPingLen; ++k) p[k] = uint8_t(pattern(i, k) ^ salt);
    PCHECK(ep.post(IBV_WR_SEND, uint64_t(i), size_t(i % 2) * kPingLen, kPingLen) == 0);
}

Endpoint ping_endpoint(ibv_qp_type type = IBV_QPT_RC) {
    EpOptions o;
    o.type = type;
    o.max_recv_wr = kPings;
    o.cqe = 2 * kPings + 8;
    return Endpoint(o);
}

// Posts the receives, connects, and waits for the peer to have done the same.
void connect_pinger(Endpoint &ep, Oob &oob) {
    for (int i = 0; i < kPings; ++i)
        ep.post_recv(kRecvId + uint64_t(i), 4096 + size_t(i) * kPingLen, kPingLen);
    ep.exchange_and_connect(oob);
    oob.barrier();
}

// Round `i` of a ping-pong. The end that opens sends first, then takes the answer and the
// completion of its send; the other takes the message and the completion of its previous
// answer, then answers.
void ping_round(Endpoint &ep, int i, bool opens) {
    if (opens) {
        post_ping(ep, i, 0);
        take_ping(ep, i, i, 0xa5);
    } else {
        take_ping(ep, i, i - 1, 0);
        post_ping(ep, i, 0xa5);
    }
}

// A ping-pong of kPings checked SENDs; returns the segments this end sent meanwhile. Each
// side's ACK of the other's message can ride on its answer.
uint64_t ping_pong(Oob &oob, bool opens, ibv_qp_type type = IBV_QPT_RC) {
    Endpoint ep = ping_endpoint(type);
    connect_pinger(ep, oob);
    const uint64_t before = sent_pkts(ep);
    for (int i = 0; i < kPings; ++i) ping_round(ep, i, opens);
    if (!opens) PCHECK_EQ(ep.wait_wc().wr_id, uint64_t(kPings - 1));
    PCHECK_EQ(shm_segments(), 1);
    const uint64_t n = sent_pkts(ep) - before;
    std::fprintf(stderr, "%s: %llu segments for %d messages\n", opens ? "ping" : "pong",
                 (unsigned long long)n, kPings);
    oob.barrier();
    return n;
}

}  // namespace

// What a ping-pong end sends when its ACKs ride beside the ring's head: one segment per
// message, and a few lone ACKs at most.
bool one_segment_per_message(uint64_t n) {
    return n >= uint64_t(kPings) && n <= uint64_t(kPings) * 5 / 4;
}

// On the rings an ACK that can ride on a message is a word beside the ring's head, not a
// frame of its own: a ping-pong sends one segment per message, not two.
TEST(SameHost, AcksRideBesideTheRingHead) {
    EXPECT_PAIR_OK(
        run_pair([](Oob &o) { return one_segment_per_message(ping_pong(o, true)) ? 0 : 1; },
                 [](Oob &o) { return one_segment_per_message(ping_pong(o, false)) ? 0 : 1; }));
}

// UC's sends complete on ACKs too: the same ping-pong, one segment per message.
TEST(SameHost, UcAcksRideBesideTheRingHead) {
    EXPECT_PAIR_OK(run_pair(
        [](Oob &o) { return one_segment_per_message(ping_pong(o, true, IBV_QPT_UC)) ? 0 : 1; },
        [](Oob &o) { return one_segment_per_message(ping_pong(o, false, IBV_QPT_UC)) ? 0 : 1; }));
}

// An end that does not read notes (SOFTRDMA_SHM_NOTES=0, as an older one) gets its ACKs as
// frames, and the traffic is the same.
TEST(SameHost, PeerThatReadsNoNotesGetsAckFrames) {
    auto old_end = [](Oob &o) {
        setenv("SOFTRDMA_SHM_NOTES", "0", 1);
        const uint64_t n = ping_pong(o, true);
        return one_segment_per_message(n) ? 0 : 1;
    };
    auto new_end = [](Oob &o) { return ping_pong(o, false) >= uint64_t(kPings) * 3 / 2 ? 0 : 1; };
    EXPECT_PAIR_OK(run_pair(old_end, new_end));
}

// Takes completions until the QP has flushed (the receives still posted fail with
// WR_FLUSH_ERR) and, unless `send` is negative, send `send` has completed; returns that
// send's completion and the others before the first flush.
struct Ended {
    std::vector<ibv_wc> before;
    ibv_wc send{};
    bool send_seen = false;
};
Ended drain_until_flushed(Endpoint &ep, int send) {
    Ended e;
    bool flushed = false;
    for (int guard = 0; guard < 2 * kPings && (!flushed || (send >= 0 && !e.send_seen)); ++guard) {
        const ibv_wc wc = ep.wait_wc();
        if (send >= 0 && wc.wr_id == uint64_t(send)) {
            e.send = wc;
            e.send_seen = true;
        } else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
            flushed = true;
        } else {
            PCHECK(!flushed);
            e.before.push_back(wc);
        }
    }
    PCHECK(flushed);
    return e;
}

// A peer that publishes a note acknowledging requests it was never sent breaks the protocol,
// as an ACK frame of that kind would: the receiving end terminates the connection (both QPs
// end in ERR), and the request the note claimed to acknowledge does not complete as done.
TEST(SameHost, ANoteAckingWhatWasNeverSentEndsTheConnection) {
    constexpr int kWarm = 20;  // both directions are on the rings well before this
    auto forger = [](Oob &oob) {
        Endpoint ep = ping_endpoint();
        connect_pinger(ep, oob);
        for (int i = 0; i < kWarm; ++i) ping_round(ep, i, true);
        // This one carries our real ACK of the last answer: after it we owe none, so the
        // next post leaves the note as we set it.
        post_ping(ep, kWarm, 0);
        PCHECK_EQ(ep.wait_wc().wr_id, uint64_t(kWarm));
        const ShmMappings m = shm_mappings();
        PCHECK_EQ(m.count, 1);
        uint8_t *seg = m.first;
        // The ring we write: ring 0 if we offered the segment (its pid is at offset 12).
        uint32_t offerer;
        std::memcpy(&offerer, seg + 12, 4);
        auto *note = reinterpret_cast<std::atomic<uint64_t> *>(
            seg + (offerer == uint32_t(getpid()) ? 4096 : 4352) + 8);
        note->store((uint64_t(1) << 32) | 0x40000000u);
        post_ping(ep, kWarm + 1, 0);
        const Ended e = drain_until_flushed(ep, kWarm + 1);
        PCHECK(e.send_seen);
        PCHECK(e.send.status != IBV_WC_SUCCESS);  // executed, but never acknowledged
        PCHECK(e.before.empty());
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    auto victim = [](Oob &oob) {
        Endpoint ep = ping_endpoint();
        connect_pinger(ep, oob);
        for (int i = 0; i < kWarm; ++i) ping_round(ep, i, false);
        // Message kWarm and its real ACK of our last answer; message kWarm + 1 may arrive
        // too (its frame comes before the note); then the connection ends.
        take_ping(ep, kWarm, kWarm - 1, 0);
        const Ended e = drain_until_flushed(ep, -1);
        PCHECK(e.before.size() <= 1);
        for (const ibv_wc &wc : e.before) {
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, kRecvId + uint64_t(kWarm + 1));
        }
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(forger, victim));
}

// Both ends map the segment, and 8 MB of SENDs wrap the ring many times, intact and in order.
TEST(SameHost, StreamMovesToSharedMemory) {
    EXPECT_PAIR_OK(run_pair([](Oob &o) { return stream_sender(o, 1); },
                            [](Oob &o) { return stream_receiver(o, 1); }));
}

// One end with SOFTRDMA_SHM=0: neither maps anything, the same traffic goes over TCP.
TEST(SameHost, OneEndTurnedOffStaysOnTcp) {
    auto off_sender = [](Oob &o) {
        setenv("SOFTRDMA_SHM", "0", 1);
        return stream_sender(o, 0);
    };
    EXPECT_PAIR_OK(run_pair(off_sender, [](Oob &o) { return stream_receiver(o, 0); }));
}

// A receiver that sleeps on its completion channel is woken through the socket for each
// message; nobody polls on its side.
TEST(SameHost, SleepingReceiverIsWoken) {
    constexpr int kRounds = 50;
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < kRounds; ++i) {
            oob.barrier();  // the receiver is about to sleep
            usleep(2000);   // long enough for it to hand its QP to the engine
            ep.buf[0] = uint8_t(i);
            PCHECK(ep.post(IBV_WR_SEND, uint64_t(i), 0, 1) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        PCHECK_EQ(shm_segments(), 1);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.channel = true;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (int i = 0; i < kRounds; ++i) {
            ep.post_recv(uint64_t(i), 64, 1);
            oob.barrier();
            const ibv_wc wc = wait_wc_sleeping(ep);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(ep.buf[64], uint8_t(i));
        }
        PCHECK_EQ(shm_segments(), 1);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// The receiving process is stopped: the writer fills the ring and waits (its sends do not
// complete, nothing fails), and, asleep on its completion channel, is woken once the
// receiver runs and makes room.
TEST(SameHost, WriterHeldByAFullRingIsWoken) {
    constexpr uint32_t kLen = 1 << 20;
    constexpr int kWrites = 8;  // 8 MiB: far more than the ring holds
    auto writer = [](Oob &oob) {
        EpOptions o;
        o.buf_size = kLen;
        o.channel = true;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (uint32_t i = 0; i < kLen; ++i) ep.buf[i] = uint8_t(i * 7);
        PCHECK(wait_stopped(oob.get<pid_t>(), 5000));
        for (int i = 0; i < kWrites; ++i)
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, uint64_t(i), 0, kLen, size_t(i) * kLen) == 0);
        usleep(300000);
        ibv_wc wc;
        PCHECK_EQ(ibv_poll_cq(ep.cq, 1, &wc), 0);  // held, not failed
        oob.put<char>('c');
        for (int i = 0; i < kWrites; ++i) {
            wc = wait_wc_sleeping(ep);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, uint64_t(i));
        }
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        EpOptions o;
        o.buf_size = size_t(kWrites) * kLen;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        stop_until_continued(oob);
        oob.barrier();
        for (size_t i = 0; i < size_t(kWrites) * kLen; ++i)
            PCHECK_EQ(ep.buf[i], uint8_t(uint32_t(i % kLen) * 7));
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(writer, target));
}

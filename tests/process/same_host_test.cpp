// SPDX-License-Identifier: BSD-2-Clause
// Same-host connections move from TCP to shared memory (docs/wire.md §6.10) without the
// application noticing: data, ordering, wake-ups of a sleeping receiver, a writer held by a
// full ring, and the TCP path when one end turns it off.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "process/harness.h"

using namespace sr_test;

namespace {

// How many shared-memory segments of ours this process has mapped.
int shm_segments() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(maps, line)) n += line.find("softrdma-shm") != std::string::npos;
    return n;
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

}  // namespace

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

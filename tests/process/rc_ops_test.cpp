// SPDX-License-Identifier: BSD-2-Clause
// Every RC opcode between two processes, with the data checked byte for byte.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstring>

#include "process/harness.h"

using namespace sr_test;

namespace {

void fill(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}
bool check(const uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != uint8_t((i * 131 + seed * 7 + (i >> 8)) & 0xff)) {
            std::fprintf(stderr, "data mismatch at byte %zu\n", i);
            return false;
        }
    return true;
}

// The batching tests' two halves. burst_and_stop: a poller posts sends [first, total) of
// `len` bytes each (only the last signalled), then stays out of the library until the peer
// has them all, then takes the last completion. receive_all: `total` receives, each checked
// in order and byte for byte (message i is filled with base + i), then says so.
void burst_and_stop(Endpoint &ep, Oob &oob, int first, int total, uint32_t len) {
    ibv_wc wc;
    PCHECK(ibv_poll_cq(ep.cq, 1, &wc) == 0);  // a poller: batching applies
    for (int i = first; i < total - 1; ++i)
        PCHECK(ep.post(IBV_WR_SEND, uint64_t(i), size_t(i) * len, len, 0, 0) == 0);
    PCHECK(ep.post(IBV_WR_SEND, uint64_t(total - 1), size_t(total - 1) * len, len) == 0);
    // No call into the library until the receiver has everything (Oob::get blocks outside).
    PCHECK(oob.get<char>() == 'r');
    wc = ep.wait_wc();
    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
    PCHECK_EQ(wc.wr_id, uint64_t(total - 1));
    oob.barrier();
}

int receive_all(Oob &oob, const EpOptions &o, int total, uint32_t len, uint8_t base) {
    Endpoint ep(o);
    ep.exchange_and_connect(oob);
    for (int i = 0; i < total; ++i) ep.post_recv(uint64_t(i), size_t(i) * len, len);
    oob.barrier();
    for (int i = 0; i < total; ++i) {
        const ibv_wc wc = ep.wait_wc(10000);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, uint64_t(i));
        PCHECK_EQ(wc.byte_len, len);
        for (uint32_t b = 0; b < len; ++b)
            PCHECK_EQ(ep.buf[size_t(i) * len + b], uint8_t(base + i));
    }
    oob.put<char>('r');
    oob.barrier();
    return 0;
}

}  // namespace

TEST(RcOps, SendRecvManySizes) {
    static const uint32_t kSizes[] = {0, 1, 63, 4096, 65280, 65281, 200000, 1 << 20};
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (uint32_t i = 0; i < std::size(kSizes); ++i) {
            fill(ep.buf, kSizes[i], i);
            oob.barrier();  // the receiver has posted its buffer
            PCHECK(ep.post(IBV_WR_SEND, 100 + i, 0, kSizes[i]) == 0);
            ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_SEND);
            PCHECK_EQ(wc.wr_id, 100 + i);
        }
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (uint32_t i = 0; i < std::size(kSizes); ++i) {
            std::memset(ep.buf, 0xee, ep.opt.buf_size);
            ep.post_recv(7 + i, 0, 1 << 20);
            oob.barrier();
            ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_RECV);
            PCHECK_EQ(wc.wr_id, 7 + i);
            PCHECK_EQ(wc.byte_len, kSizes[i]);
            PCHECK_EQ(wc.qp_num, ep.qp->qp_num);
            PCHECK(check(ep.buf, kSizes[i], i));
            if (kSizes[i] < (1 << 20)) PCHECK_EQ(ep.buf[kSizes[i]], 0xee);  // nothing beyond
        }
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

TEST(RcOps, SendWithImmAndInv) {
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        const uint32_t window = oob.get<uint32_t>();
        std::memcpy(ep.buf, "imm!", 4);
        PCHECK(ep.post(IBV_WR_SEND_WITH_IMM, 1, 0, 4, 0, IBV_SEND_SIGNALED, htonl(0xdeadbeef)) ==
               0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_SEND_WITH_INV, 2, 0, 4, 0, IBV_SEND_SIGNALED, window) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.mr_access |= IBV_ACCESS_MW_BIND;
        Endpoint ep(o);
        ep.post_recv(1, 0, 64);
        ep.post_recv(2, 64, 64);
        ep.exchange_and_connect(oob);
        // SEND WITH INVALIDATE names a window to invalidate: bind one.
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        PCHECK(mw != nullptr);
        ibv_send_wr bind{};
        bind.opcode = IBV_WR_BIND_MW;
        bind.bind_mw.mw = mw;
        bind.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
        bind.bind_mw.bind_info = {ep.mr, uint64_t(uintptr_t(ep.buf)), 4096,
                                  IBV_ACCESS_REMOTE_WRITE};
        ibv_send_wr *bad = nullptr;
        PCHECK(ibv_post_send(ep.qp, &bind, &bad) == 0);
        oob.put(bind.bind_mw.rkey);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_RECV);
        PCHECK(wc.wc_flags & IBV_WC_WITH_IMM);
        PCHECK_EQ(ntohl(wc.imm_data), 0xdeadbeefu);
        PCHECK_EQ(wc.byte_len, 4u);
        PCHECK(std::memcmp(ep.buf, "imm!", 4) == 0);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(wc.wc_flags & IBV_WC_WITH_INV);
        PCHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
        PCHECK_EQ(wc.invalidated_rkey, bind.bind_mw.rkey);
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// One-sided operations complete while the target process only sleeps in a blocking read.
TEST(RcOps, WriteAndReadWhileTargetSleeps) {
    auto initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        const uint32_t half = 1 << 19;
        fill(ep.buf, half, 5);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, half, 0) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        // Read back the target's second half, which it filled before going to sleep.
        PCHECK(ep.post(IBV_WR_RDMA_READ, 2, half, half, half) == 0);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
        PCHECK_EQ(wc.byte_len, half);
        PCHECK(check(ep.buf + half, half, 9));
        // Zero-length WRITE and READ are legal.
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 3, 0, 0, 0) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_RDMA_READ, 4, 0, 0, 0) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.put<char>('x');  // wake the target
        return 0;
    };
    auto target = [](Oob &oob) {
        Endpoint ep;
        fill(ep.buf + (1 << 19), 1 << 19, 9);
        ep.exchange_and_connect(oob);
        (void)oob.get<char>();  // blocks: no polling, no library call
        PCHECK(check(ep.buf, 1 << 19, 5));
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

TEST(RcOps, WriteWithImmediate) {
    auto initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        fill(ep.buf, 100000, 3);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE_WITH_IMM, 1, 0, 100000, 4096, IBV_SEND_SIGNALED,
                       htonl(77)) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        Endpoint ep;
        ep.post_recv(9, 0, 0);  // a WRITE WITH IMM consumes a receive but places no data in it
        ep.exchange_and_connect(oob);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
        PCHECK_EQ(wc.wr_id, 9u);
        PCHECK(wc.wc_flags & IBV_WC_WITH_IMM);
        PCHECK_EQ(ntohl(wc.imm_data), 77u);
        PCHECK_EQ(wc.byte_len, 100000u);
        PCHECK(check(ep.buf + 4096, 100000, 3));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

TEST(RcOps, AtomicsWhileTargetSleeps) {
    auto initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        auto *res = reinterpret_cast<uint64_t *>(ep.buf);
        PCHECK(ep.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 8, 5, 0) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_FETCH_ADD);
        PCHECK_EQ(wc.byte_len, 8u);
        PCHECK_EQ(res[0], 1000u);
        // Compare fails: memory unchanged, original returned.
        PCHECK(ep.post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 2, 8, 8, 1, 42) == 0);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_COMP_SWAP);
        PCHECK_EQ(res[1], 1005u);
        // Compare matches: swapped.
        PCHECK(ep.post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 3, 16, 8, 1005, 42) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK_EQ(res[2], 1005u);
        oob.put<char>('x');
        return 0;
    };
    auto target = [](Oob &oob) {
        Endpoint ep;
        reinterpret_cast<uint64_t *>(ep.buf)[1] = 1000;
        ep.exchange_and_connect(oob);
        (void)oob.get<char>();
        PCHECK_EQ(reinterpret_cast<uint64_t *>(ep.buf)[1], 42u);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

TEST(RcOps, ScatterGatherAndInline) {
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.max_inline = 256;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        // Gather from four pieces.
        fill(ep.buf, 8192, 1);
        ibv_sge sg[4] = {{uint64_t(uintptr_t(ep.buf)), 100, ep.mr->lkey},
                         {uint64_t(uintptr_t(ep.buf + 100)), 4000, ep.mr->lkey},
                         {uint64_t(uintptr_t(ep.buf + 4100)), 0, ep.mr->lkey},
                         {uint64_t(uintptr_t(ep.buf + 4100)), 4092, ep.mr->lkey}};
        ibv_send_wr wr{};
        wr.wr_id = 1;
        wr.sg_list = sg;
        wr.num_sge = 4;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr *bad;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        // Inline: the buffer is reused right after posting; lkey is ignored.
        std::memcpy(ep.buf + 10000, "inline data", 12);
        ibv_sge is{uint64_t(uintptr_t(ep.buf + 10000)), 12, 0};
        wr.sg_list = &is;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
        std::memset(ep.buf + 10000, 0, 12);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        ibv_sge sg[3] = {{uint64_t(uintptr_t(ep.buf + 50000)), 5000, ep.mr->lkey},
                         {uint64_t(uintptr_t(ep.buf + 20000)), 1, ep.mr->lkey},
                         {uint64_t(uintptr_t(ep.buf + 30000)), 8000, ep.mr->lkey}};
        ibv_recv_wr wr{};
        wr.wr_id = 5;
        wr.sg_list = sg;
        wr.num_sge = 3;
        ibv_recv_wr *bad;
        PCHECK(ibv_post_recv(ep.qp, &wr, &bad) == 0);
        ep.post_recv(6, 0, 64);
        ep.exchange_and_connect(oob);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 8192u);
        uint8_t got[8192];
        std::memcpy(got, ep.buf + 50000, 5000);
        got[5000] = ep.buf[20000];
        std::memcpy(got + 5001, ep.buf + 30000, 8192 - 5001);
        PCHECK(check(got, 8192, 1));
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 12u);
        PCHECK(std::memcmp(ep.buf, "inline data", 12) == 0);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

TEST(RcOps, UnsignaledAndSigAll) {
    auto sender = [](Oob &oob) {
        {
            Endpoint ep;  // sq_sig_all = 0: only the signalled WR completes
            ep.exchange_and_connect(oob);
            for (int i = 0; i < 9; ++i)
                PCHECK(ep.post(IBV_WR_RDMA_WRITE, 10 + i, 0, 64, 0, 0) == 0);
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, 99, 0, 64, 0) == 0);
            ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.wr_id, 99u);
            PCHECK(ep.quiet_for(100));
            oob.barrier();
        }
        {
            EpOptions o;
            o.sig_all = true;
            Endpoint ep(o);
            ep.exchange_and_connect(oob);
            for (int i = 0; i < 5; ++i)
                PCHECK(ep.post(IBV_WR_RDMA_WRITE, 20 + i, 0, 64, 0, 0) == 0);
            for (int i = 0; i < 5; ++i) PCHECK_EQ(ep.wait_wc().wr_id, uint64_t(20 + i));
            oob.barrier();
        }
        return 0;
    };
    auto target = [](Oob &oob) {
        {
            Endpoint ep;
            ep.exchange_and_connect(oob);
            oob.barrier();
        }
        Endpoint ep;
        ep.exchange_and_connect(oob);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, target));
}

// Doorbell batching holds small sends posted behind a pipeline of unacknowledged ones, to leave
// together. A sender that posts a burst and then stops calling into the library (computing,
// or blocked elsewhere) must still get every message out, in order and intact: the held ones
// leave on the engine's timer, not at the next poll.
TEST(RcOps, BatchedSendsLeaveWithoutAnotherPoll) {
    constexpr int kMsgs = 45;  // 4 go at once, then two full batches of 16 and 9 left over
    constexpr uint32_t kLen = 64;
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < kMsgs; ++i) std::memset(ep.buf + i * kLen, 0x40 + i, kLen);
        oob.barrier();  // the receives are posted
        burst_and_stop(ep, oob, 0, kMsgs, kLen);
        return 0;
    };
    auto receiver = [](Oob &oob) { return receive_all(oob, {}, kMsgs, kLen, 0x40); };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// While the application's own polls flush held sends, no short engine timer is armed for them
// (it would wake the engine thread once per batch); the backstop is then the poller-window
// timer. A sender that streamed with polls, then posts a burst and stops calling in, still
// gets every message out, in order and intact.
TEST(RcOps, BatchedSendsLeaveAfterPollsStopFlushingThem) {
    constexpr int kStream = 200, kBurst = 45;
    constexpr int kMsgs = kStream + kBurst;
    constexpr uint32_t kLen = 64;
    static const EpOptions deep = [] {
        EpOptions o;
        o.max_send_wr = o.max_recv_wr = 256;
        o.cqe = 1024;
        return o;
    }();
    auto sender = [](Oob &oob) {
        Endpoint ep(deep);
        ep.exchange_and_connect(oob);
        for (int i = 0; i < kMsgs; ++i) std::memset(ep.buf + i * kLen, uint8_t(i), kLen);
        oob.barrier();  // the receives are posted
        // A stream, with a poll after every post: each batch leaves at a poll.
        int done = 0;
        ibv_wc wc;
        for (int i = 0; i < kStream; ++i) {
            PCHECK(ep.post(IBV_WR_SEND, uint64_t(i), size_t(i) * kLen, kLen) == 0);
            const int n = ibv_poll_cq(ep.cq, 1, &wc);
            PCHECK(n >= 0);
            if (n) {
                PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
                ++done;
            }
        }
        while (done < kStream) {
            wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            ++done;
        }
        burst_and_stop(ep, oob, kStream, kMsgs, kLen);
        return 0;
    };
    auto receiver = [](Oob &oob) { return receive_all(oob, deep, kMsgs, kLen, 0); };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// IB ordering: a SEND that follows WRITEs is delivered after their data is visible.
TEST(RcOps, WritesVisibleBeforeLaterSend) {
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 16; ++i) {
            fill(ep.buf + size_t(i) * 32768, 32768, uint32_t(i));
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, uint64_t(i), size_t(i) * 32768, 32768,
                           size_t(i) * 32768, 0) == 0);
        }
        PCHECK(ep.post(IBV_WR_SEND, 100, 0, 8) == 0);
        PCHECK_EQ(ep.wait_wc().wr_id, 100u);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        ep.post_recv(1, 600000, 64);
        ep.exchange_and_connect(oob);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        for (int i = 0; i < 16; ++i) PCHECK(check(ep.buf + size_t(i) * 32768, 32768, uint32_t(i)));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// max_rd_atomic bounds the READs in flight; all of them still complete, in order.
TEST(RcOps, ManyReadsWithSmallInitiatorDepth) {
    auto initiator = [](Oob &oob) {
        EpOptions o;
        o.max_rd_atomic = 2;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 32; ++i)
            PCHECK(ep.post(IBV_WR_RDMA_READ, uint64_t(i), size_t(i) * 4096, 4096,
                           size_t(i) * 4096) == 0);
        for (int i = 0; i < 32; ++i) {
            ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, uint64_t(i));
        }
        PCHECK(check(ep.buf, 32 * 4096, 11));
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        EpOptions o;
        o.max_dest_rd_atomic = 2;
        Endpoint ep(o);
        fill(ep.buf, 32 * 4096, 11);
        ep.exchange_and_connect(oob);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

// Completion channel: the fd is a real pollable fd (poll and epoll), and events arrive.
TEST(RcOps, CompletionChannelPollAndEpoll) {
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 4; ++i) {
            oob.barrier();
            PCHECK(ep.post(IBV_WR_SEND, uint64_t(i), 0, 16) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.channel = true;
        Endpoint ep(o);
        for (int i = 0; i < 4; ++i) ep.post_recv(uint64_t(i), size_t(i) * 64, 64);
        ep.exchange_and_connect(oob);
        const int ep_fd = epoll_create1(0);
        epoll_event ev{};
        ev.events = EPOLLIN;
        PCHECK(epoll_ctl(ep_fd, EPOLL_CTL_ADD, ep.chan->fd, &ev) == 0);
        for (int i = 0; i < 4; ++i) {
            PCHECK(ibv_req_notify_cq(ep.cq, 0) == 0);
            // Nothing yet: the fd must not be readable.
            pollfd pfd{ep.chan->fd, POLLIN, 0};
            PCHECK_EQ(poll(&pfd, 1, 0), 0);
            oob.barrier();
            if (i % 2 == 0) {
                PCHECK_EQ(poll(&pfd, 1, 10000), 1);
            } else {
                epoll_event out;
                PCHECK_EQ(epoll_wait(ep_fd, &out, 1, 10000), 1);
            }
            ibv_cq *cq;
            void *cq_ctx;
            PCHECK(ibv_get_cq_event(ep.chan, &cq, &cq_ctx) == 0);
            PCHECK(cq == ep.cq);
            PCHECK(cq_ctx == &ep);
            ibv_ack_cq_events(cq, 1);
            ibv_wc wc;
            PCHECK_EQ(ibv_poll_cq(ep.cq, 1, &wc), 1);
            PCHECK_EQ(wc.wr_id, uint64_t(i));
        }
        close(ep_fd);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// With MPA CRCs, a receiver that polls its CQ (so its ACKs wait up to 20 us to ride on its
// own traffic) and destroys its QP as soon as the message is there still acknowledges it on
// the way out: the sender's SEND completes instead of running out of retries. Whether the
// destroy lands inside those 20 us depends on the scheduler (a receiver descheduled for 1 ms
// no longer counts as polling, and its engine thread sends the ACK at once), so several
// rounds, each with new QPs.
TEST(RcOps, CrcAckFlushedWhenReceiverDestroysRightAfterPolling) {
    constexpr int kRounds = 5;
    EpOptions o;
    o.buf_size = 4096;
    o.timeout = 12;  // 16.8 ms
    o.retry_cnt = 2;
    auto sender = [o](Oob &oob) {
        setenv("SOFTRDMA_MPA_CRC", "1", 1);
        for (int r = 0; r < kRounds; ++r) {
            Endpoint ep(o);
            ep.exchange_and_connect(oob);
            (void)oob.get<char>();  // the receiver is polling
            PCHECK(ep.post(IBV_WR_SEND, uint64_t(r), 0, 64) == 0);
            // Poll lazily: the receiver needs a CPU more than we do.
            ibv_wc wc{};
            int n = 0;
            for (int i = 0; i < 5000 && (n = ibv_poll_cq(ep.cq, 1, &wc)) == 0; ++i) usleep(1000);
            PCHECK_EQ(n, 1);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            oob.barrier();
        }
        return 0;
    };
    auto receiver = [o](Oob &oob) {
        setenv("SOFTRDMA_MPA_CRC", "1", 1);
        for (int r = 0; r < kRounds; ++r) {
            Endpoint ep(o);
            ep.post_recv(1, 0, 64);
            ep.exchange_and_connect(oob);
            // Poll before the SEND can arrive: it must land while we poll.
            ibv_wc wc;
            int n = ibv_poll_cq(ep.cq, 1, &wc);
            PCHECK_EQ(n, 0);
            oob.put('p');
            const uint64_t deadline = now_ms() + 5000;
            while ((n = ibv_poll_cq(ep.cq, 1, &wc)) == 0 && now_ms() < deadline) {
            }
            PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);  // at once: no poll, no sleep in between
            ep.qp = nullptr;
            PCHECK_EQ(n, 1);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            oob.barrier();
        }
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

TEST(UcOps, SendAndWrite) {
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        o.qp_access = IBV_ACCESS_REMOTE_WRITE;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        fill(ep.buf, 70000, 2);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 70000, 0) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_SEND, 2, 0, 100) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        // UC has no READ or atomics.
        PCHECK_EQ(ep.post(IBV_WR_RDMA_READ, 3, 0, 8, 0), EINVAL);
        PCHECK_EQ(ep.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 4, 0, 0, 1, 0), EINVAL);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        o.qp_access = IBV_ACCESS_REMOTE_WRITE;
        Endpoint ep(o);
        ep.post_recv(1, 200000, 128);
        ep.exchange_and_connect(oob);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 100u);
        PCHECK(check(ep.buf, 70000, 2));
        PCHECK(check(ep.buf + 200000, 100, 2));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// UC drops what it cannot deliver, silently for the sender, and the stream goes on: a
// multi-segment message with no receive posted, then one too long for its buffer, then one
// that fits.
TEST(UcOps, DropsKeepTheStreamInStep) {
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        fill(ep.buf, 200000, 4);
        PCHECK(ep.post(IBV_WR_SEND, 1, 0, 200000) == 0);  // no receive posted: dropped
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();  // now the receiver posts a 1 KiB buffer and a 256 KiB one
        oob.barrier();
        PCHECK(ep.post(IBV_WR_SEND, 2, 0, 70000) == 0);  // too long for 1 KiB
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_SEND, 3, 0, 100000) == 0);  // fits
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        oob.barrier();
        ep.post_recv(10, 0, 1024);
        ep.post_recv(11, 4096, 256 * 1024);
        oob.barrier();
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.wr_id, 10u);
        PCHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.wr_id, 11u);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 100000u);
        PCHECK(check(ep.buf + 4096, 100000, 4));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// UC receive errors in every position of a multi-segment message (65280-byte segments) are
// drops: the sender's completion for each message comes when the receiver has taken it (no
// lag behind a message whose last segment overflowed), and the connection stays up for the
// message that fits. Each completion is awaited alone, so a lagging count shows as a timeout.
TEST(UcOps, OverflowingSendsAreDroppedAndCompletionsStayExact) {
    struct Msg {
        uint32_t len, recv_len;  // recv_len 0: no receive posted
    };
    // No receive; overflow in a middle segment; a one-segment overflow; an overflow in the
    // last of two segments; then one that fits.
    static const Msg kMsgs[] = {
        {200000, 0}, {200000, 100000}, {2000, 1024}, {100000, 70000}, {150000, 256 * 1024}};
    constexpr uint32_t kGood = std::size(kMsgs) - 1;
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (uint32_t i = 0; i < std::size(kMsgs); ++i) {
            oob.barrier();  // the receiver has posted (or not) its buffer
            fill(ep.buf, kMsgs[i].len, i);
            PCHECK(ep.post(IBV_WR_SEND, 100 + i, 0, kMsgs[i].len) == 0);
            const ibv_wc wc = ep.wait_wc(5000);
            PCHECK_EQ(wc.wr_id, 100 + i);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            oob.barrier();  // taken: the receiver may post the next buffer
        }
        oob.barrier();
        PCHECK_EQ(ep.qp_state(), IBV_QPS_RTS);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.type = IBV_QPT_UC;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (uint32_t i = 0; i < std::size(kMsgs); ++i) {
            if (kMsgs[i].recv_len) ep.post_recv(10 + i, 0, kMsgs[i].recv_len);
            oob.barrier();
            oob.barrier();  // the sender has its completion: the message was taken
            if (!kMsgs[i].recv_len) continue;
            const ibv_wc wc = ep.wait_wc(5000);
            PCHECK_EQ(wc.wr_id, 10 + i);
            PCHECK_EQ(wc.status, i == kGood ? IBV_WC_SUCCESS : IBV_WC_LOC_LEN_ERR);
            if (i == kGood) PCHECK_EQ(wc.byte_len, kMsgs[i].len);
        }
        PCHECK(check(ep.buf, kMsgs[kGood].len, kGood));
        PCHECK(ep.quiet_for(50));  // nothing else: the dropped messages took no receive
        PCHECK_EQ(ep.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// ATOMIC WRITE (IBA 1.5, rxe on kernel 6.2+): 8 bytes stored at once, needing remote write
// rights only, from a scatter entry or inline (rdma-core's suite drives ibv_wr_atomic_write).
TEST(RcOps, AtomicWrite) {
    auto target = [](Oob &oob) {
        EpOptions o;
        o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;  // no atomic rights
        Endpoint ep(o);
        std::memset(ep.buf, 0, 64);
        ep.exchange_and_connect(oob);
        oob.barrier();
        uint64_t v[3];
        std::memcpy(v, ep.buf, sizeof v);
        PCHECK_EQ(v[0], 0x1122334455667788ull);
        PCHECK_EQ(v[1], 0x99aabbccddeeff00ull);
        PCHECK_EQ(v[2], 0x0102030405060708ull);
        oob.barrier();
        oob.barrier();  // the misaligned one was refused
        return 0;
    };
    auto initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        const uint64_t a = 0x1122334455667788ull, b = 0x99aabbccddeeff00ull,
                       c = 0x0102030405060708ull;
        std::memcpy(ep.buf, &a, 8);
        PCHECK(ep.post(IBV_WR_ATOMIC_WRITE, 1, 0, 8, 0) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_ATOMIC_WRITE);
        uint64_t src = b;
        ibv_sge sge{uint64_t(uintptr_t(&src)), 8, 0};
        ibv_send_wr wr{};
        wr.wr_id = 2;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_ATOMIC_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        wr.wr.rdma.remote_addr = ep.peer.addr + 8;
        wr.wr.rdma.rkey = ep.peer.rkey;
        ibv_send_wr *bad = nullptr;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
        src = 0;
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        std::memcpy(ep.buf, &c, 8);
        wr.opcode = IBV_WR_ATOMIC_WRITE;
        wr.wr_id = 3;
        wr.send_flags = IBV_SEND_SIGNALED;
        sge = {uint64_t(uintptr_t(ep.buf)), 8, ep.mr->lkey};
        wr.wr.rdma.remote_addr = ep.peer.addr + 16;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        oob.barrier();
        // Misaligned: an invalid request.
        PCHECK(ep.post(IBV_WR_ATOMIC_WRITE, 4, 0, 8, 4) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_INV_REQ_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

// SPDX-License-Identifier: BSD-2-Clause
// Errors reported as hardware reports them: RNR, remote access, length, vanished peers,
// flushes; and the memory of the target is never touched by a rejected operation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "process/harness.h"

using namespace sr_test;

namespace {

// Guard pattern over the whole target buffer, to prove nothing was written.
void guard(Endpoint &ep) {
    std::memset(ep.buf, 0x5a, ep.opt.buf_size);
}
bool guard_intact(const Endpoint &ep) {
    for (size_t i = 0; i < ep.opt.buf_size; ++i)
        if (ep.buf[i] != 0x5a) {
            std::fprintf(stderr, "guard byte %zu changed\n", i);
            return false;
        }
    return true;
}

}  // namespace

TEST(RcErrors, RnrRetriedUntilReceivePosted) {
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.rnr_retry = 7;  // forever
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        std::memcpy(ep.buf, "late", 4);
        PCHECK(ep.post(IBV_WR_SEND, 1, 0, 4) == 0);
        // A WRITE posted behind the SEND must not overtake it.
        std::memcpy(ep.buf + 64, "after", 5);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 64, 5, 4096) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, 1u);
        PCHECK_EQ(ep.wait_wc().wr_id, 2u);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.min_rnr_timer = 5;  // 60 us
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        PCHECK(ep.quiet_for(200));   // the sender is being NAKed meanwhile
        PCHECK_EQ(ep.buf[4096], 0);  // the WRITE behind the SEND waited too
        ep.post_recv(3, 0, 64);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(ep.buf, "late", 4) == 0);
        oob.barrier();
        PCHECK(std::memcmp(ep.buf + 4096, "after", 5) == 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

TEST(RcErrors, RnrRetryExceeded) {
    auto sender = [](Oob &oob) {
        EpOptions o;
        o.rnr_retry = 2;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        PCHECK(ep.post(IBV_WR_SEND, 1, 0, 4) == 0);
        PCHECK(ep.post(IBV_WR_SEND, 2, 0, 4) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
        PCHECK_EQ(wc.wr_id, 1u);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(wc.wr_id, 2u);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        EpOptions o;
        o.min_rnr_timer = 1;  // 10 us
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// A READ whose response arrives after the QP has failed is flushed, as hardware flushes
// it; its data is not placed, so it must not complete with success. The READ and a SEND
// leave together (one post, one send()); the peer has no receive and answers, in one send(),
// with an RNR NAK that ends our QP (rnr_retry 0) followed by the READ's response.
TEST(RcErrors, ReadResponseAfterFatalErrorIsFlushed) {
    auto requester = [](Oob &oob) {
        EpOptions o;
        o.rnr_retry = 0;
        Endpoint ep(o);
        guard(ep);
        ep.exchange_and_connect(oob);
        ibv_sge rs{uint64_t(uintptr_t(ep.buf)), 64, ep.mr->lkey};
        ibv_sge ss{uint64_t(uintptr_t(ep.buf + 4096)), 8, ep.mr->lkey};
        ibv_send_wr read{}, send{};
        read.wr_id = 1;
        read.sg_list = &rs;
        read.num_sge = 1;
        read.opcode = IBV_WR_RDMA_READ;
        read.send_flags = IBV_SEND_SIGNALED;
        read.wr.rdma.remote_addr = ep.peer.addr;
        read.wr.rdma.rkey = ep.peer.rkey;
        read.next = &send;
        send.wr_id = 2;
        send.sg_list = &ss;
        send.num_sge = 1;
        send.opcode = IBV_WR_SEND;
        send.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr *bad = nullptr;
        PCHECK(ibv_post_send(ep.qp, &read, &bad) == 0);
        ibv_wc wc[2];
        for (ibv_wc &w : wc) w = ep.wait_wc(5000);
        if (wc[0].wr_id == 2) std::swap(wc[0], wc[1]);
        PCHECK_EQ(wc[0].wr_id, 1u);
        PCHECK_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(wc[1].wr_id, 2u);
        PCHECK_EQ(wc[1].status, IBV_WC_RNR_RETRY_EXC_ERR);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        PCHECK(guard_intact(ep));  // the response was not placed
        oob.barrier();
        return 0;
    };
    auto responder = [](Oob &oob) {
        Endpoint ep;
        std::memset(ep.buf, 0x33, 64);
        ep.exchange_and_connect(oob);  // and no receive posted
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, responder));
}

struct AccessCase {
    const char *name;
    ibv_wr_opcode op;
    int target_mr_access;
    int target_qp_access;
    uint32_t rkey_xor;    // corrupts the rkey
    uint64_t remote_off;  // relative to the target buffer
    uint32_t len;
};

class RcAccess : public ::testing::TestWithParam<AccessCase> {};

TEST_P(RcAccess, RemoteAccessErrorAndNothingWritten) {
    const AccessCase c = GetParam();
    auto initiator = [c](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        std::memset(ep.buf, 0x11, 4096);
        ep.peer.rkey ^= c.rkey_xor;
        int rc;
        if (c.op == IBV_WR_ATOMIC_FETCH_AND_ADD)
            rc = ep.post_atomic(c.op, 1, 0, c.remote_off, 1, 0);
        else
            rc = ep.post(c.op, 1, 0, c.len, c.remote_off);
        PCHECK(rc == 0);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 0, 8, 0) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
        PCHECK_EQ(wc.wr_id, 1u);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    auto target = [c](Oob &oob) {
        EpOptions o;
        o.mr_access = c.target_mr_access;
        o.qp_access = c.target_qp_access;
        Endpoint ep(o);
        guard(ep);
        ep.post_recv(5, 0, 0);
        ep.exchange_and_connect(oob);
        // The responder's QP goes to ERR too: its posted receive is flushed.
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(wc.wr_id, 5u);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        // ep.buf has the guard pattern except the receive buffer (zero length).
        PCHECK(guard_intact(ep));
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kQpAll = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

INSTANTIATE_TEST_SUITE_P(
    Cases, RcAccess,
    ::testing::Values(
        AccessCase{"WriteBadRkey", IBV_WR_RDMA_WRITE, kAll, kQpAll, 0x100, 0, 64},
        AccessCase{"WriteOutOfBounds", IBV_WR_RDMA_WRITE, kAll, kQpAll, 0, (1 << 20) - 32, 64},
        AccessCase{"WriteBeforeRegion", IBV_WR_RDMA_WRITE, kAll, kQpAll, 0, uint64_t(-64), 64},
        AccessCase{"WriteReadOnlyMr", IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_READ, kQpAll, 0, 0, 64},
        AccessCase{"WriteQpDisallows", IBV_WR_RDMA_WRITE, kAll, IBV_ACCESS_REMOTE_READ, 0, 0, 64},
        AccessCase{"ReadBadRkey", IBV_WR_RDMA_READ, kAll, kQpAll, 0x100, 0, 64},
        AccessCase{"ReadBeyondMr", IBV_WR_RDMA_READ, kAll, kQpAll, 0, (1 << 20) - 8, 64},
        AccessCase{"ReadWriteOnlyMr", IBV_WR_RDMA_READ,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, kQpAll, 0, 0, 64},
        AccessCase{"AtomicNoAccess", IBV_WR_ATOMIC_FETCH_AND_ADD,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, kQpAll, 0, 0, 8},
        AccessCase{"AtomicBadRkey", IBV_WR_ATOMIC_FETCH_AND_ADD, kAll, kQpAll, 0x200, 0, 8}),
    [](const ::testing::TestParamInfo<AccessCase> &i) { return std::string(i.param.name); });

TEST(RcErrors, ReceiveBufferTooSmall) {
    auto sender = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        PCHECK(ep.post(IBV_WR_SEND, 1, 0, 100) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        ep.post_recv(1, 0, 16);
        ep.post_recv(2, 64, 16);
        ep.exchange_and_connect(oob);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
        PCHECK_EQ(wc.wr_id, 1u);
        wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(wc.wr_id, 2u);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// The peer process dies (kill -9): outstanding work fails with RETRY_EXC_ERR well within
// timeout x (retry_cnt + 1).
TEST(RcErrors, PeerKilled) {
    auto survivor = [](Oob &oob) {
        EpOptions o;
        o.timeout = 14;  // 67 ms
        o.retry_cnt = 3;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        (void)oob.get<char>();  // the peer is about to die
        usleep(100000);
        const uint64_t t0 = now_ms();
        PCHECK(ep.post(IBV_WR_SEND, 1, 0, 64) == 0);
        ibv_wc wc = ep.wait_wc(5000);
        PCHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
        PCHECK(now_ms() - t0 < 4 * 68 + 500);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        return 0;
    };
    auto victim = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        oob.put<char>('k');
        raise(SIGKILL);
        return 0;
    };
    const PairResult r = run_pair(survivor, victim);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status_a, 0);
    EXPECT_EQ(r.status_b, 128 + SIGKILL);
}

// The peer process is stopped (SIGSTOP, a debugger, a starved machine) for six times the
// retry budget, but its kernel still takes our bytes. A NIC would have acknowledged the WRITE
// whatever its host's CPU was doing, so the connection is not declared dead: the WRITE
// completes successfully once the peer runs again, and the data is there.
TEST(RcErrors, StoppedPeerIsNotDead) {
    auto survivor = [](Oob &oob) {
        EpOptions o;
        o.timeout = 12;   // 16.8 ms
        o.retry_cnt = 2;  // a 50 ms budget
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        // The connection carries a first WRITE before the peer stops: RTS on both sides does
        // not mean the QPs' TCP connection is up yet, and a peer stopped before it answered
        // our dial leaves nothing that speaks for it (seen under load).
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 0, 64, 64, 64) == 0);
        PCHECK_EQ(ep.wait_wc(5000).status, IBV_WC_SUCCESS);
        oob.put<char>('s');
        // Post only once the peer is really stopped: a peer still running (a loaded machine
        // is slow to fork the helper) would rightly complete the WRITE at once.
        PCHECK(wait_stopped(oob.get<pid_t>(), 5000));
        for (int i = 0; i < 64; ++i) ep.buf[i] = uint8_t(0xa0 + i);
        const uint64_t t0 = now_ms();
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 64, 0) == 0);
        PCHECK(ep.quiet_for(300));  // nothing: no completion, and no RETRY_EXC_ERR either
        oob.put<char>('c');         // let it run again
        ibv_wc wc = ep.wait_wc(5000);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(now_ms() - t0 >= 300);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    auto stopped = [](Oob &oob) {
        Endpoint ep;
        std::memset(ep.buf, 0, 64);
        ep.exchange_and_connect(oob);
        (void)oob.get<char>();  // the connection is up
        stop_until_continued(oob);
        oob.barrier();
        for (int i = 0; i < 64; ++i) PCHECK_EQ(ep.buf[i], uint8_t(0xa0 + i));
        return 0;
    };
    const PairResult r = run_pair(survivor, stopped);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status_a, 0);
    EXPECT_EQ(r.status_b, 0);
}

// As above, but the peer stops before its QP answered our dial: the QPs' TCP connection is
// made (the peer's kernel accepts it and takes our hello) but its handshake cannot finish.
// That connection speaks for the peer, so the WRITE waits, then completes. The side with the
// smaller QPN dials (same GID), so the roles follow the QPNs.
TEST(RcErrors, PeerStoppedBeforeAnsweringOurDialIsNotDead) {
    auto side = [](Oob &oob) {
        EpOptions o;
        o.timeout = 12;   // 16.8 ms
        o.retry_cnt = 2;  // a 50 ms budget
        Endpoint ep(o);
        oob.put(ep.local());
        const Wire peer = oob.get<Wire>();
        if (ep.local().qpn > peer.qpn) {  // the side that is dialed, and stops
            std::memset(ep.buf, 0, 64);
            ep.connect(peer);
            stop_until_continued(oob);
            oob.barrier();
            for (int i = 0; i < 64; ++i) PCHECK_EQ(ep.buf[i], uint8_t(0x50 + i));
            return 0;
        }
        PCHECK(wait_stopped(oob.get<pid_t>(), 5000));
        ep.connect(peer);  // RTR: dials the stopped peer
        for (int i = 0; i < 64; ++i) ep.buf[i] = uint8_t(0x50 + i);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 64, 0) == 0);
        const bool quiet = ep.quiet_for(300);  // no completion, and no RETRY_EXC_ERR either
        oob.put<char>('c');                    // let it run again, whatever happened
        PCHECK(quiet);
        PCHECK_EQ(ep.wait_wc(5000).status, IBV_WC_SUCCESS);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    const PairResult r = run_pair(side, side);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status_a, 0);
    EXPECT_EQ(r.status_b, 0);
}

TEST(RcErrors, ErrorStateFlushesEverything) {
    auto a = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 3; ++i) ep.post_recv(uint64_t(10 + i), 0, 64);
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_ERR;
        PCHECK(ibv_modify_qp(ep.qp, &at, IBV_QP_STATE) == 0);
        for (int i = 0; i < 3; ++i) {
            ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
            PCHECK_EQ(wc.wr_id, uint64_t(10 + i));
        }
        // Work posted in ERR completes at once, flushed (even unsignalled sends).
        PCHECK(ep.post(IBV_WR_SEND, 20, 0, 8, 0, 0) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(wc.wr_id, 20u);
        ep.post_recv(21, 0, 8);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_WR_FLUSH_ERR);
        oob.barrier();
        return 0;
    };
    auto b = [](Oob &oob) { return connected_idle_peer(oob); };
    EXPECT_PAIR_OK(run_pair(a, b));
}

TEST(RcErrors, PostingChecks) {
    auto a = [](Oob &oob) {
        EpOptions o;
        o.max_send_wr = 4;
        o.max_recv_wr = 2;
        Endpoint ep(o);
        // INIT: sends are refused, receives accepted.
        PCHECK_EQ(ep.post(IBV_WR_SEND, 1, 0, 8), EINVAL);
        ep.post_recv(1, 0, 8);
        ep.post_recv(2, 0, 8);
        ibv_sge sge{uint64_t(uintptr_t(ep.buf)), 8, ep.mr->lkey};
        ibv_recv_wr rwr{};
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        ibv_recv_wr *rbad = nullptr;
        PCHECK_EQ(ibv_post_recv(ep.qp, &rwr, &rbad), ENOMEM);  // RQ full
        PCHECK(rbad == &rwr);
        ep.exchange_and_connect(oob);
        // Too many SGEs, bad opcode, inline too large.
        ibv_sge sg[8];
        for (auto &s : sg) s = sge;
        ibv_send_wr wr{};
        wr.sg_list = sg;
        wr.num_sge = 8;
        wr.opcode = IBV_WR_SEND;
        ibv_send_wr *bad = nullptr;
        PCHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
        PCHECK(bad == &wr);
        wr.num_sge = 1;
        const int garbage = 77;  // what a C caller can store in the enum field
        std::memcpy(&wr.opcode, &garbage, sizeof garbage);
        PCHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_INLINE;
        sge.length = 4096;
        wr.sg_list = &sge;
        PCHECK_EQ(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
        // A chain stops at the first bad WR and reports it.
        ibv_send_wr w1{}, w2{};
        sge.length = 8;
        w1.sg_list = w2.sg_list = &sge;
        w1.num_sge = 1;
        w2.num_sge = 9;
        w1.opcode = w2.opcode = IBV_WR_RDMA_WRITE;
        w1.send_flags = IBV_SEND_SIGNALED;
        w1.wr.rdma.remote_addr = ep.peer.addr;
        w1.wr.rdma.rkey = ep.peer.rkey;
        w1.next = &w2;
        PCHECK_EQ(ibv_post_send(ep.qp, &w1, &bad), EINVAL);
        PCHECK(bad == &w2);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);  // w1 went through
        oob.barrier();
        return 0;
    };
    auto b = [](Oob &oob) { return connected_idle_peer(oob); };
    EXPECT_PAIR_OK(run_pair(a, b));
}

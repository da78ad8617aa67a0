// SPDX-License-Identifier: BSD-2-Clause
// Memory windows between two processes: remote access through a window reaches exactly its
// bytes with exactly its rights, and stops the moment it is invalidated or freed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kWinOff = 4096;  // the window: 8 KiB in the middle of the target's region
constexpr size_t kWinLen = 8192;

EpOptions window_target() {
    EpOptions o;
    o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
    return o;
}

// Binds `mw` over the window with `access`, through a work request (type 2) or ibv_bind_mw
// (type 1); returns the key the peer must use, or 0 with the completion's status in `st`.
uint32_t bind(Endpoint &ep, ibv_mw *mw, int access, ibv_wc_status &st, uint64_t len = kWinLen) {
    ibv_mw_bind_info info{ep.mr, uint64_t(uintptr_t(ep.buf + kWinOff)), len, unsigned(access)};
    uint32_t key;
    if (mw->type == IBV_MW_TYPE_2) {
        ibv_send_wr wr{};
        wr.wr_id = 77;
        wr.opcode = IBV_WR_BIND_MW;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.bind_mw.mw = mw;
        wr.bind_mw.rkey = key = ibv_inc_rkey(mw->rkey);
        wr.bind_mw.bind_info = info;
        ibv_send_wr *bad = nullptr;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
    } else {
        ibv_mw_bind b{77, IBV_SEND_SIGNALED, info};
        PCHECK(ibv_bind_mw(ep.qp, mw, &b) == 0);
        key = mw->rkey;  // ibv_bind_mw gave the window its next key
    }
    const ibv_wc wc = ep.wait_wc();
    PCHECK_EQ(wc.wr_id, 77u);
    st = wc.status;
    if (st == IBV_WC_SUCCESS) PCHECK_EQ(wc.opcode, IBV_WC_BIND_MW);
    return st == IBV_WC_SUCCESS ? key : 0;
}

void fill(uint8_t *p, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(i * 7 + seed);
}

// The initiator: WRITE then READ back through the window, then the same past its end.
int initiator(Oob &oob, bool expect_write_ok) {
    Endpoint ep;
    ep.exchange_and_connect(oob);
    ep.peer.rkey = oob.get<uint32_t>();
    ep.peer.addr = oob.get<uint64_t>();
    fill(ep.buf, kWinLen, 3);
    PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, kWinLen) == 0);
    ibv_wc wc = ep.wait_wc();
    PCHECK_EQ(wc.status, expect_write_ok ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR);
    if (!expect_write_ok) {
        oob.barrier();
        return 0;
    }
    PCHECK(ep.post(IBV_WR_RDMA_READ, 2, kWinLen, kWinLen) == 0);
    wc = ep.wait_wc();
    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
    PCHECK(std::memcmp(ep.buf, ep.buf + kWinLen, kWinLen) == 0);
    oob.barrier();  // the target checks its region
    // One byte past the window: refused, and nothing lands.
    PCHECK(ep.post(IBV_WR_RDMA_WRITE, 3, 0, 16, kWinLen - 15) == 0);
    PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
    oob.barrier();
    return 0;
}

}  // namespace

TEST(MemoryWindows, Type2WindowReachesOnlyItsBytes) {
    auto target = [](Oob &oob) {
        Endpoint ep(window_target());
        std::memset(ep.buf, 0xee, ep.opt.buf_size);
        ep.exchange_and_connect(oob);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        PCHECK(mw != nullptr);
        ibv_wc_status st;
        const uint32_t key = bind(ep, mw, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, st);
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        PCHECK(key != ep.mr->rkey);
        // The region itself has no remote write right: only the window grants it.
        PCHECK_EQ(ibv_dereg_mr(ep.mr), EINVAL);  // a window is bound to it
        oob.put(key);
        oob.put(uint64_t(uintptr_t(ep.buf + kWinOff)));
        oob.barrier();
        uint8_t want[kWinLen];
        fill(want, kWinLen, 3);
        PCHECK(std::memcmp(ep.buf + kWinOff, want, kWinLen) == 0);
        PCHECK_EQ(ep.buf[kWinOff - 1], 0xee);
        PCHECK_EQ(ep.buf[kWinOff + kWinLen], 0xee);
        oob.barrier();
        PCHECK_EQ(ep.buf[kWinOff + kWinLen], 0xee);  // the refused write left nothing
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair([](Oob &o) { return initiator(o, true); }, target));
}

TEST(MemoryWindows, Type1WindowRightsAndZeroLengthRebind) {
    auto target = [](Oob &oob) {
        Endpoint ep(window_target());
        ep.exchange_and_connect(oob);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
        PCHECK(mw != nullptr);
        const uint32_t before = mw->rkey;
        ibv_wc_status st;
        const uint32_t key = bind(ep, mw, IBV_ACCESS_REMOTE_READ, st);  // read only
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        PCHECK_EQ(key, ibv_inc_rkey(before));
        oob.put(key);
        oob.put(uint64_t(uintptr_t(ep.buf + kWinOff)));
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        return 0;
    };
    // The window grants READ only: the initiator's WRITE is a remote access error.
    EXPECT_PAIR_OK(run_pair([](Oob &o) { return initiator(o, false); }, target));

    // Rebinding a type 1 window with length 0 takes its memory away.
    auto target2 = [](Oob &oob) {
        Endpoint ep(window_target());
        ep.exchange_and_connect(oob);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
        ibv_wc_status st;
        bind(ep, mw, IBV_ACCESS_REMOTE_WRITE, st);
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        const uint32_t key = bind(ep, mw, 0, st, 0);
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        PCHECK_EQ(ibv_dereg_mr(ep.mr), 0);  // no window holds the region any more
        ep.mr = nullptr;
        oob.put(key);
        oob.put(uint64_t(uintptr_t(ep.buf + kWinOff)));
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair([](Oob &o) { return initiator(o, false); }, target2));
}

// SEND WITH INVALIDATE from the peer ends the window: the receive says which key it
// invalidated and the next WRITE through it is refused.
TEST(MemoryWindows, SendWithInvalidateEndsTheWindow) {
    auto initiator_inv = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        ep.peer.rkey = oob.get<uint32_t>();
        ep.peer.addr = oob.get<uint64_t>();
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 64) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_SEND_WITH_INV, 2, 0, 4, 0, IBV_SEND_SIGNALED, ep.peer.rkey) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();  // the target has seen the invalidation
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 3, 0, 64) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        Endpoint ep(window_target());
        ep.post_recv(9, 0, 64);
        ep.exchange_and_connect(oob);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        ibv_wc_status st;
        const uint32_t key = bind(ep, mw, IBV_ACCESS_REMOTE_WRITE, st);
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        oob.put(key);
        oob.put(uint64_t(uintptr_t(ep.buf + kWinOff)));
        const ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(wc.wc_flags & IBV_WC_WITH_INV);
        PCHECK_EQ(wc.invalidated_rkey, key);
        oob.barrier();
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(initiator_inv, target));

    // Invalidating a key that names no bound type 2 window (here: the region's own key) is
    // an invalid request: both ends go to ERR, as IBA's class J error says.
    auto bad_initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        PCHECK(ep.post(IBV_WR_SEND_WITH_INV, 2, 0, 4, 0, IBV_SEND_SIGNALED, ep.peer.rkey) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_INV_REQ_ERR);
        oob.barrier();
        return 0;
    };
    auto bad_target = [](Oob &oob) {
        Endpoint ep;
        ep.post_recv(9, 0, 64);
        ep.exchange_and_connect(oob);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_INV_REQ_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(bad_initiator, bad_target));
}

// Local invalidation and deallocation end a window too.
TEST(MemoryWindows, LocalInvalidateAndDeallocEndWindows) {
    auto target = [](Oob &oob) {
        Endpoint ep(window_target());
        ep.exchange_and_connect(oob);
        ibv_mw *a = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        ibv_mw *b = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        ibv_wc_status st;
        const uint32_t ka = bind(ep, a, IBV_ACCESS_REMOTE_WRITE, st);
        const uint32_t kb = bind(ep, b, IBV_ACCESS_REMOTE_WRITE, st);
        PCHECK(ka && kb);
        oob.put(ka);
        oob.put(kb);
        oob.put(uint64_t(uintptr_t(ep.buf + kWinOff)));
        oob.barrier();  // both keys work
        ibv_send_wr wr{};
        wr.wr_id = 5;
        wr.opcode = IBV_WR_LOCAL_INV;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.invalidate_rkey = ka;
        ibv_send_wr *bad = nullptr;
        PCHECK(ibv_post_send(ep.qp, &wr, &bad) == 0);
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.opcode, IBV_WC_LOCAL_INV);
        PCHECK_EQ(ibv_dealloc_mw(b), 0);
        oob.barrier();  // both keys are dead now
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_mw(a), 0);
        return 0;
    };
    auto init = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        const uint32_t ka = oob.get<uint32_t>(), kb = oob.get<uint32_t>();
        ep.peer.addr = oob.get<uint64_t>();
        for (uint32_t k : {ka, kb}) {
            ep.peer.rkey = k;
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, k, 0, 64) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        oob.barrier();
        oob.barrier();
        ep.peer.rkey = ka;
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 64) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(init, target));
}

// Allocation and bind rules: type 3 does not exist; a window holds its PD; a bound type 2
// window cannot be bound again before it is invalidated, and a region without
// IBV_ACCESS_MW_BIND cannot carry one. A refused bind completes with IBV_WC_MW_BIND_ERR and
// moves the QP to ERR.
TEST(MemoryWindows, AllocationAndBindRules) {
    auto peer = [](Oob &oob) { return connected_idle_peer(oob); };
    auto rebind = [](Oob &oob) {
        Endpoint ep(window_target());
        ep.exchange_and_connect(oob);
        errno = 0;
        PCHECK(ibv_alloc_mw(ep.pd, ibv_mw_type(3)) == nullptr);
        PCHECK_EQ(errno, EINVAL);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        PCHECK(mw != nullptr);
        PCHECK_EQ(ibv_dealloc_pd(ep.pd), EBUSY);  // the window holds its PD
        ibv_wc_status st;
        bind(ep, mw, IBV_ACCESS_REMOTE_WRITE, st);
        PCHECK_EQ(st, IBV_WC_SUCCESS);
        bind(ep, mw, IBV_ACCESS_REMOTE_WRITE, st);
        PCHECK_EQ(st, IBV_WC_MW_BIND_ERR);
        PCHECK_EQ(qp_state_of(ep.qp), IBV_QPS_ERR);
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(peer, rebind));
    auto no_bind_right = [](Oob &oob) {
        Endpoint ep;  // its region lacks IBV_ACCESS_MW_BIND
        ep.exchange_and_connect(oob);
        ibv_mw *mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
        ibv_wc_status st;
        bind(ep, mw, IBV_ACCESS_REMOTE_READ, st);
        PCHECK_EQ(st, IBV_WC_MW_BIND_ERR);
        PCHECK_EQ(ibv_dealloc_mw(mw), 0);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(peer, no_bind_right));
}

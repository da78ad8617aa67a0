// SPDX-License-Identifier: BSD-2-Clause
// Issue 5, load: 64 threads of one process post on 64 RC QPs of one context, each thread on
// its own QP with its own CQ, polling its own completions; a second process checks every byte
// of every SEND and RDMA WRITE they carried.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "load/pattern.h"
#include "load/rc_qp.h"

using namespace sr_load;
using sr_test::now_ms;
using sr_test::Oob;
using sr_test::Wire;

namespace {

constexpr uint32_t kThreads = 64;
constexpr uint32_t kOps = 2000;   // per thread: this many WRITEs and as many SENDs
constexpr uint32_t kWindow = 16;  // WRITE+SEND pairs in flight per QP
constexpr size_t kWriteLen = 256, kSendLen = 64;
constexpr int kTimeLimitS = 120;
// Pattern owners: the thread, and which of its two streams.
constexpr uint32_t kWriteBytes = 1u << 16, kSendBytes = 2u << 16;

uint8_t *zeroed(size_t len) {
    len = (len + 4095) & ~size_t(4095);
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(4096, len));
    PCHECK(p);
    std::memset(p, 0, len);
    return p;
}

// ---------------------------------------------------------------------------- posting side

struct Poster {
    ibv_cq *cq = nullptr;
    ibv_qp *qp = nullptr;
    uint8_t *src = nullptr;  // kWindow slots of WRITE bytes + SEND bytes, reused in turn
    Wire peer{};
    uint64_t next_wc = 0;  // RC completes in order: WRITE 2s, then SEND 2s+1
};

void post(Poster &p, ibv_wr_opcode op, uint64_t wr_id, uint8_t *from, uint32_t len, uint32_t lkey,
          uint64_t remote) {
    ibv_sge sge{uint64_t(uintptr_t(from)), len, lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = p.peer.rkey;
    ibv_send_wr *bad = nullptr;
    PCHECK(ibv_post_send(p.qp, &wr, &bad) == 0);
}

// Takes whatever completed; each must be the next one of this QP, and successful.
void reap(Poster &p, uint64_t deadline_ms) {
    ibv_wc wcs[16];
    const int n = ibv_poll_cq(p.cq, 16, wcs);
    PCHECK(n >= 0);
    if (n == 0) {
        PCHECK(now_ms() < deadline_ms);
        // 65 busy pollers on 2 vCPUs would starve the verifying process, which is what
        // these completions wait for; the QP still counts as polled (window 1 ms).
        usleep(50);
        return;
    }
    for (int k = 0; k < n; ++k) {
        if (wcs[k].status != IBV_WC_SUCCESS) {
            std::fprintf(stderr, "[posters] wr %llu: %s\n", (unsigned long long)wcs[k].wr_id,
                         ibv_wc_status_str(wcs[k].status));
            _exit(5);
        }
        PCHECK_EQ(wcs[k].wr_id, p.next_wc);
        PCHECK_EQ(wcs[k].opcode, (p.next_wc & 1) ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
        ++p.next_wc;
    }
}

void run_poster(Poster &p, uint32_t t, uint32_t lkey, uint64_t deadline_ms) {
    for (uint32_t s = 0; s < kOps; ++s) {
        while (s - p.next_wc / 2 >= kWindow) reap(p, deadline_ms);
        // The slot's previous pair has completed, so its bytes may change now.
        uint8_t *w = p.src + (s % kWindow) * (kWriteLen + kSendLen);
        uint8_t *m = w + kWriteLen;
        fill_pattern(w, kWriteLen, t | kWriteBytes, s);
        post(p, IBV_WR_RDMA_WRITE, 2 * uint64_t(s), w, kWriteLen, lkey,
             p.peer.addr + s * kWriteLen);
        fill_pattern(m, kSendLen, t | kSendBytes, s);
        post(p, IBV_WR_SEND, 2 * uint64_t(s) + 1, m, kSendLen, lkey, 0);
    }
    while (p.next_wc < 2 * uint64_t(kOps)) reap(p, deadline_ms);
}

int posters(Oob &oob) {
    alarm(kTimeLimitS + 20);  // outlives the test process if ctest kills it
    const uint64_t deadline = now_ms() + uint64_t(kTimeLimitS) * 1000;
    ibv_context *ctx = open_loopback_context();
    ibv_pd *pd = ibv_alloc_pd(ctx);
    PCHECK(pd);
    const size_t per_thread = kWindow * (kWriteLen + kSendLen);
    uint8_t *buf = zeroed(kThreads * per_thread);
    ibv_mr *mr = ibv_reg_mr(pd, buf, kThreads * per_thread, IBV_ACCESS_LOCAL_WRITE);
    PCHECK(mr);
    std::vector<Poster> ps(kThreads);
    for (uint32_t t = 0; t < kThreads; ++t) {
        Poster &p = ps[t];
        p.cq = ibv_create_cq(ctx, 2 * kWindow + 8, nullptr, nullptr, 0);
        PCHECK(p.cq);
        p.qp = create_rc_qp(pd, p.cq, 2 * kWindow, 1);
        p.src = buf + t * per_thread;
        oob.put(wire_of(p.qp, 0, 0));
    }
    for (Poster &p : ps) {
        p.peer = oob.get<Wire>();
        connect_rc_qp(p.qp, p.peer);
    }
    oob.barrier();  // the verifier's receives are posted

    std::atomic<uint32_t> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();  // all start posting together
            run_poster(ps[t], t, mr->lkey, deadline);
        });
    while (ready.load() < kThreads) std::this_thread::yield();
    const uint64_t t0 = now_ms();
    go = true;
    for (auto &th : threads) th.join();
    const double s = double(now_ms() - t0) / 1000;
    const double ops = 2.0 * kThreads * kOps;
    std::printf(
        "[posters] %u threads x %u WRITEs (%zu B) + %u SENDs (%zu B) on one context: "
        "%.0f completions in %.2f s (%.0f ops/s, %.1f MiB/s of payload)\n",
        kThreads, kOps, kWriteLen, kOps, kSendLen, ops, s, ops / s,
        double(kThreads) * kOps * (kWriteLen + kSendLen) / s / (1 << 20));
    std::fflush(stdout);
    oob.barrier();  // the verifier has checked everything

    for (Poster &p : ps) {
        PCHECK(ibv_destroy_qp(p.qp) == 0);
        PCHECK(ibv_destroy_cq(p.cq) == 0);
    }
    PCHECK(ibv_dereg_mr(mr) == 0);
    PCHECK(ibv_dealloc_pd(pd) == 0);
    PCHECK(ibv_close_device(ctx) == 0);
    std::free(buf);
    return 0;
}

// ---------------------------------------------------------------------------- checking side

int verifier(Oob &oob) {
    alarm(kTimeLimitS + 20);
    const uint64_t deadline = now_ms() + uint64_t(kTimeLimitS) * 1000;
    ibv_context *ctx = open_loopback_context();
    ibv_pd *pd = ibv_alloc_pd(ctx);
    PCHECK(pd);
    // Nothing is reused: every WRITE has its own bytes and every SEND its own receive, so what
    // is checked is exactly what that operation delivered.
    const size_t writes = size_t(kThreads) * kOps * kWriteLen;
    const size_t len = writes + size_t(kThreads) * kOps * kSendLen;
    uint8_t *buf = zeroed(len);
    ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    PCHECK(mr);
    auto write_at = [&](uint32_t t, uint32_t s) {
        return buf + (size_t(t) * kOps + s) * kWriteLen;
    };
    auto recv_at = [&](uint32_t t, uint32_t s) {
        return buf + writes + (size_t(t) * kOps + s) * kSendLen;
    };
    ibv_cq *cq = ibv_create_cq(ctx, int(kThreads * kOps) + 16, nullptr, nullptr, 0);
    PCHECK(cq);
    std::vector<ibv_qp *> qps(kThreads);
    for (uint32_t t = 0; t < kThreads; ++t) {
        qps[t] = create_rc_qp(pd, cq, 1, kOps);
        for (uint32_t s = 0; s < kOps; ++s) {
            ibv_sge sge{uint64_t(uintptr_t(recv_at(t, s))), kSendLen, mr->lkey};
            ibv_recv_wr wr{};
            wr.wr_id = uint64_t(t) * kOps + s;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            ibv_recv_wr *bad = nullptr;
            PCHECK(ibv_post_recv(qps[t], &wr, &bad) == 0);
        }
        oob.put(wire_of(qps[t], uint64_t(uintptr_t(write_at(t, 0))), mr->rkey));
    }
    for (uint32_t t = 0; t < kThreads; ++t) connect_rc_qp(qps[t], oob.get<Wire>());
    oob.barrier();

    std::vector<uint32_t> next(kThreads, 0);
    uint64_t got = 0;
    ibv_wc wcs[64];
    while (got < uint64_t(kThreads) * kOps) {
        const int n = ibv_poll_cq(cq, 64, wcs);
        PCHECK(n >= 0);
        if (n == 0) PCHECK(now_ms() < deadline);
        for (int k = 0; k < n; ++k) {
            const ibv_wc &wc = wcs[k];
            if (wc.status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "[verifier] receive %llu: %s\n", (unsigned long long)wc.wr_id,
                             ibv_wc_status_str(wc.status));
                _exit(5);
            }
            PCHECK_EQ(wc.opcode, IBV_WC_RECV);
            PCHECK_EQ(wc.byte_len, kSendLen);
            const uint32_t t = uint32_t(wc.wr_id / kOps), s = uint32_t(wc.wr_id % kOps);
            PCHECK(t < kThreads);
            PCHECK_EQ(wc.qp_num, qps[t]->qp_num);
            PCHECK_EQ(s, next[t]);  // receives complete in order on a QP
            ++next[t];
            PCHECK(check_pattern(recv_at(t, s), kSendLen, t | kSendBytes, s));
            // The WRITE went before this SEND on the same QP, so it must have landed.
            PCHECK(check_pattern(write_at(t, s), kWriteLen, t | kWriteBytes, s));
        }
        got += uint64_t(n);
    }
    std::printf("[verifier] %llu SENDs and %llu WRITEs from %u QPs checked byte for byte\n",
                (unsigned long long)got, (unsigned long long)got, kThreads);
    std::fflush(stdout);
    oob.barrier();
    ibv_wc extra;
    PCHECK_EQ(ibv_poll_cq(cq, 1, &extra), 0);  // nothing beyond what was sent
    for (ibv_qp *qp : qps) PCHECK(ibv_destroy_qp(qp) == 0);
    PCHECK(ibv_destroy_cq(cq) == 0);
    PCHECK(ibv_dereg_mr(mr) == 0);
    PCHECK(ibv_dealloc_pd(pd) == 0);
    PCHECK(ibv_close_device(ctx) == 0);
    std::free(buf);
    return 0;
}

}  // namespace

TEST(LoadThreads, SixtyFourThreadsOnOneContext) {
    EXPECT_PAIR_OK(sr_test::run_pair(posters, verifier, (kTimeLimitS + 10) * 1000));
}

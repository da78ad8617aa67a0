// SPDX-License-Identifier: BSD-2-Clause
// UD QPs between two processes: datagrams with a GRH, immediate data, Q_Key checks, lost
// datagrams (no receive, wrong Q_Key, hostile bytes) and the one-MTU limit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kGrh = 40;

EpOptions ud_opts() {
    EpOptions o;
    o.type = IBV_QPT_UD;
    o.buf_size = 1 << 16;
    o.mr_access = IBV_ACCESS_LOCAL_WRITE;
    o.max_inline = 64;
    return o;
}

ibv_ah *make_ah(Endpoint &e) {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.port_num = 1;
    a.grh.hop_limit = 1;
    std::memcpy(a.grh.dgid.raw, e.peer.gid, 16);
    ibv_ah *ah = ibv_create_ah(e.pd, &a);
    PCHECK(ah);
    return ah;
}

int ud_send(Endpoint &e, ibv_ah *ah, uint64_t wr_id, size_t off, uint32_t len, uint32_t qkey,
            bool imm = false, uint32_t imm_val = 0, ibv_wr_opcode op = IBV_WR_SEND) {
    ibv_sge sge{uint64_t(uintptr_t(e.buf + off)), len, e.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm_val);
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = e.peer.qpn;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr *bad = nullptr;
    return ibv_post_send(e.qp, &wr, &bad);
}

void expect_send_ok(Endpoint &e, uint64_t wr_id) {
    const ibv_wc wc = e.wait_wc();
    PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
    PCHECK_EQ(wc.opcode, IBV_WC_SEND);
    PCHECK_EQ(wc.wr_id, wr_id);
}

}  // namespace

// Three datagrams (with and without immediate data, up to one MTU) arrive intact, each
// behind a GRH that names the sender; src_qp and byte_len are what hardware reports.
TEST(Ud, DatagramsCarryGrhImmAndSource) {
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        for (uint32_t i = 0; i < 4096; ++i) e.buf[i] = uint8_t(i * 7 + 1);
        oob.barrier();  // receives are posted
        PCHECK_EQ(ud_send(e, ah, 1, 0, 100, e.opt.qkey), 0);
        expect_send_ok(e, 1);
        PCHECK_EQ(ud_send(e, ah, 2, 0, 4096, e.opt.qkey, true, 0xa1b2c3d4), 0);
        expect_send_ok(e, 2);
        e.post_recv(20, 8192, 1024);  // for the reply
        PCHECK_EQ(ud_send(e, ah, 3, 0, 0, e.opt.qkey), 0);
        expect_send_ok(e, 3);
        const ibv_wc r = e.wait_wc();  // the receiver answers through ibv_create_ah_from_wc
        PCHECK_EQ(r.status, IBV_WC_SUCCESS);
        PCHECK_EQ(r.wr_id, 20u);
        PCHECK_EQ(r.byte_len, kGrh + 16);
        PCHECK_EQ(r.src_qp, e.peer.qpn);
        for (int k = 0; k < 16; ++k) PCHECK_EQ(e.buf[8192 + kGrh + size_t(k)], uint8_t(0xe0 + k));
        oob.barrier();
        PCHECK_EQ(ibv_destroy_ah(ah), 0);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        for (int i = 0; i < 3; ++i) e.post_recv(uint64_t(10 + i), size_t(i) * 8192, 8192);
        oob.barrier();
        const uint32_t lens[3] = {100, 4096, 0};
        for (int i = 0; i < 3; ++i) {
            const ibv_wc wc = e.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_RECV);
            PCHECK_EQ(wc.wr_id, uint64_t(10 + i));
            PCHECK_EQ(wc.byte_len, kGrh + lens[i]);
            PCHECK_EQ(wc.src_qp, e.peer.qpn);
            PCHECK_EQ(wc.qp_num, e.qp->qp_num);
            PCHECK(wc.wc_flags & IBV_WC_GRH);
            PCHECK_EQ(bool(wc.wc_flags & IBV_WC_WITH_IMM), i == 1);
            if (i == 1) PCHECK_EQ(ntohl(wc.imm_data), 0xa1b2c3d4u);
            const uint8_t *grh = e.buf + size_t(i) * 8192;
            PCHECK_EQ(grh[0] >> 4, 6);                          // IPv6-style GRH
            PCHECK_EQ((grh[4] << 8 | grh[5]), int(lens[i]));    // payload length
            PCHECK(std::memcmp(grh + 8, e.peer.gid, 16) == 0);  // source GID
            const Wire me = e.local();
            PCHECK(std::memcmp(grh + 24, me.gid, 16) == 0);  // destination GID
            for (uint32_t k = 0; k < lens[i]; ++k) PCHECK_EQ(grh[kGrh + k], uint8_t(k * 7 + 1));
            if (i < 2) continue;
            // Answer the sender with an address handle built from this completion's GRH.
            ibv_wc w = wc;
            ibv_ah *ah = ibv_create_ah_from_wc(
                e.pd, &w, reinterpret_cast<ibv_grh *>(const_cast<uint8_t *>(grh)), 1);
            PCHECK(ah);
            for (int k = 0; k < 16; ++k) e.buf[60000 + size_t(k)] = uint8_t(0xe0 + k);
            ibv_sge sge{uint64_t(uintptr_t(e.buf + 60000)), 16, e.mr->lkey};
            ibv_send_wr sw{};
            sw.wr_id = 99;
            sw.opcode = IBV_WR_SEND;
            sw.sg_list = &sge;
            sw.num_sge = 1;
            sw.send_flags = IBV_SEND_SIGNALED;
            sw.wr.ud.ah = ah;
            sw.wr.ud.remote_qpn = wc.src_qp;
            sw.wr.ud.remote_qkey = e.opt.qkey;
            ibv_send_wr *bad = nullptr;
            PCHECK_EQ(ibv_post_send(e.qp, &sw, &bad), 0);
            expect_send_ok(e, 99);
            PCHECK_EQ(ibv_destroy_ah(ah), 0);
        }
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// A wrong Q_Key, a missing receive and hostile bytes on the QP's UDP port each lose one
// datagram and nothing else; a Q_Key with the high bit set means "use the QP's own".
TEST(Ud, LostDatagramsLeaveTheQpWorking) {
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        std::memset(e.buf, 0x5a, 256);
        oob.barrier();  // receiver has no receive posted
        PCHECK_EQ(ud_send(e, ah, 1, 0, 64, e.opt.qkey), 0);
        expect_send_ok(e, 1);  // completes: UD never waits for the peer
        oob.barrier();         // receiver saw nothing and posted receives
        PCHECK_EQ(ud_send(e, ah, 2, 0, 64, 0x12345678), 0);  // wrong Q_Key (high bit clear)
        expect_send_ok(e, 2);
        // Hostile datagrams straight at the receiver's UDP port (QPN = port << 8 | 0xff).
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(s >= 0);
        const sockaddr_in to = loopback(uint16_t(e.peer.qpn >> 8));  // the QP's UDP port
        uint8_t junk[64];
        for (int k = 0; k < 20; ++k) {
            for (auto &b : junk) b = uint8_t(rand());
            if (k % 2) junk[0] = 0x55, junk[1] = 1;  // plausible magic, garbage after
            PCHECK(sendto(s, junk, size_t(k + 1) * 3, 0, reinterpret_cast<const sockaddr *>(&to),
                          sizeof to) > 0);
        }
        close(s);
        oob.barrier();                                        // all of it is on its way
        oob.barrier();                                        // receiver saw nothing again
        PCHECK_EQ(ud_send(e, ah, 3, 0, 64, 0x80000000u), 0);  // use our own Q_Key
        expect_send_ok(e, 3);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        oob.barrier();
        PCHECK(e.quiet_for(200));
        for (int i = 0; i < 4; ++i) e.post_recv(uint64_t(i), size_t(i) * 1024, 1024);
        oob.barrier();
        oob.barrier();
        PCHECK(e.quiet_for(200));
        oob.barrier();
        const ibv_wc wc = e.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, 0u);  // the first receive: nothing before consumed one
        PCHECK_EQ(wc.byte_len, kGrh + 64);
        PCHECK_EQ(e.buf[kGrh], 0x5a);
        PCHECK_EQ(e.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// A burst larger than the receive queue: exactly as many datagrams as receives were posted
// arrive; the rest are dropped, not held back for receives posted later, and the QP goes on.
TEST(Ud, FullReceiveQueueDrops) {
    constexpr int kPosted = 10, kBurst = 50;
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        oob.barrier();  // receiver posted kPosted receives
        for (int i = 0; i < kBurst; ++i) {
            e.buf[0] = uint8_t(i);
            PCHECK_EQ(ud_send(e, ah, uint64_t(i), 0, 64, e.opt.qkey), 0);
            expect_send_ok(e, uint64_t(i));
        }
        oob.barrier();  // burst sent
        oob.barrier();  // receiver reposted and saw nothing more
        e.buf[0] = 0xee;
        PCHECK_EQ(ud_send(e, ah, 99, 0, 64, e.opt.qkey), 0);
        expect_send_ok(e, 99);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        for (int i = 0; i < kPosted; ++i) e.post_recv(uint64_t(i), size_t(i) * 256, 256);
        oob.barrier();
        oob.barrier();
        for (int i = 0; i < kPosted; ++i) {
            const ibv_wc wc = e.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, uint64_t(i));
            PCHECK_EQ(e.buf[size_t(i) * 256 + kGrh], uint8_t(i));  // the first ten, in order
        }
        PCHECK(e.quiet_for(200));
        for (int i = 0; i < kPosted; ++i) e.post_recv(uint64_t(100 + i), size_t(i) * 256, 256);
        PCHECK(e.quiet_for(300));  // the other forty were dropped, not queued
        oob.barrier();
        const ibv_wc wc = e.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, 100u);
        PCHECK_EQ(e.buf[kGrh], 0xee);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// Flow control, what a lossless RoCE fabric gives: while the receiving process is stopped,
// a burst larger than its socket buffer is held back at the sender (the send completions
// wait), and every datagram arrives, in order, once it runs again.
TEST(Ud, FlowControlHoldsSendsWhileReceiverIsStopped) {
    constexpr int kCount = 2000;
    constexpr uint32_t kLen = 4096, kSlot = 4096 + 64;
    EpOptions o = ud_opts();
    o.buf_size = size_t(kCount) * kSlot + 8192;
    o.max_send_wr = o.max_recv_wr = 4096;
    o.cqe = 8192;
    auto sender = [o](Oob &oob) {
        Endpoint e(o);
        e.exchange_and_connect(oob);
        const pid_t peer = oob.get<pid_t>();
        ibv_ah *ah = make_ah(e);
        oob.barrier();  // receives posted
        PCHECK_EQ(kill(peer, SIGSTOP), 0);
        for (int i = 0; i < kCount; ++i) {
            for (uint32_t k = 0; k < kLen; k += 64) e.buf[size_t(i) * kSlot + k] = uint8_t(i + k);
            PCHECK_EQ(ud_send(e, ah, uint64_t(i), size_t(i) * kSlot, kLen, e.opt.qkey, true,
                              uint32_t(i) * 7 + 1),
                      0);
        }
        // Held back, not lost: far fewer completions than posts while the peer sleeps.
        ibv_wc wc[64];
        int done = 0;
        const uint64_t until = now_ms() + 50;
        while (now_ms() < until) {
            const int n = ibv_poll_cq(e.cq, 64, wc);
            PCHECK(n >= 0);
            for (int k = 0; k < n; ++k) PCHECK_EQ(wc[k].status, IBV_WC_SUCCESS);
            done += n;
        }
        PCHECK(done < kCount / 2);
        PCHECK_EQ(kill(peer, SIGCONT), 0);
        const uint64_t deadline = now_ms() + 20000;
        while (done < kCount && now_ms() < deadline) {
            const int n = ibv_poll_cq(e.cq, 64, wc);
            PCHECK(n >= 0);
            for (int k = 0; k < n; ++k) {
                PCHECK_EQ(wc[k].status, IBV_WC_SUCCESS);
                PCHECK_EQ(wc[k].wr_id, uint64_t(done + k));  // in order
            }
            done += n;
        }
        PCHECK_EQ(done, kCount);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [o](Oob &oob) {
        Endpoint e(o);
        e.exchange_and_connect(oob);
        oob.put(getpid());
        for (int i = 0; i < kCount; ++i) e.post_recv(uint64_t(i), size_t(i) * kSlot, kSlot);
        oob.barrier();
        for (int i = 0; i < kCount; ++i) {
            const ibv_wc wc = e.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, uint64_t(i));
            PCHECK_EQ(wc.byte_len, kGrh + kLen);
            PCHECK(wc.wc_flags & IBV_WC_WITH_IMM);  // each header travelled with its request
            PCHECK_EQ(ntohl(wc.imm_data), uint32_t(i) * 7 + 1);
            for (uint32_t k = 0; k < kLen; k += 64)
                PCHECK_EQ(e.buf[size_t(i) * kSlot + kGrh + k], uint8_t(i + k));
        }
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// Held-back work requests occupy the send queue: with the receiver stopped, the initial
// window goes out, max_send_wr more wait, and the next post fails with ENOMEM (a full send
// queue); once the receiver runs, every one of them completes.
TEST(Ud, HeldBackSendsFillTheSendQueue) {
    constexpr uint32_t kDepth = 16, kInitialWindow = 8;
    EpOptions o = ud_opts();
    o.max_send_wr = kDepth;
    auto sender = [o](Oob &oob) {
        Endpoint e(o);
        e.exchange_and_connect(oob);
        const pid_t peer = oob.get<pid_t>();
        ibv_ah *ah = make_ah(e);
        oob.barrier();
        PCHECK_EQ(kill(peer, SIGSTOP), 0);
        uint32_t posted = 0;
        int rc = 0;
        const uint64_t t0 = now_ms();
        while ((rc = ud_send(e, ah, posted, 0, 64, e.opt.qkey)) == 0 && posted < 1000) ++posted;
        const uint64_t took = now_ms() - t0;
        PCHECK_EQ(kill(peer, SIGCONT), 0);  // before any check: a failed child must not leave it
        PCHECK_EQ(rc, ENOMEM);
        // Exactly the window plus the queue, unless the loop itself outlasted the watchdog
        // (1 s: a loaded machine, a sanitizer), which then rightly released the silent peer.
        if (took < 1000)
            PCHECK_EQ(posted, kInitialWindow + kDepth);
        else
            PCHECK(posted >= kInitialWindow + kDepth);
        for (uint32_t i = 0; i < posted; ++i) expect_send_ok(e, i);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [o](Oob &oob) {
        Endpoint e(o);
        e.exchange_and_connect(oob);
        oob.put(getpid());
        oob.barrier();
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// Unreliable still means a send never waits for a peer that is gone: the kernel's ICMP port
// unreachable releases flow control at once (well before its 1 s watchdog), and datagrams to
// a destroyed QP complete (and are lost) without stalling the sender.
TEST(Ud, SendsToAGonePeerComplete) {
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        oob.barrier();  // the peer's QP is gone
        const uint64_t t0 = now_ms();
        for (int i = 0; i < 60; ++i) {
            PCHECK_EQ(ud_send(e, ah, uint64_t(i), 0, 512, e.opt.qkey), 0);
            expect_send_ok(e, uint64_t(i));
        }
        PCHECK(now_ms() - t0 < 500);
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        PCHECK_EQ(ibv_destroy_qp(e.qp), 0);
        e.qp = nullptr;
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// Posting checks: UD carries SENDs of at most one MTU; a receive too small for GRH + data
// completes with a length error.
TEST(Ud, PostingLimitsAndShortReceive) {
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        PCHECK_EQ(ud_send(e, ah, 1, 0, 4097, e.opt.qkey), EINVAL);
        PCHECK_EQ(ud_send(e, ah, 1, 0, 8, e.opt.qkey, false, 0, IBV_WR_RDMA_WRITE), EINVAL);
        PCHECK(e.quiet_for(50));  // rejected posts complete nothing
        oob.barrier();
        PCHECK_EQ(ud_send(e, ah, 2, 0, 100, e.opt.qkey), 0);
        expect_send_ok(e, 2);
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        e.post_recv(7, 0, 64);  // 40 + 100 does not fit
        oob.barrier();
        const ibv_wc wc = e.wait_wc();
        PCHECK_EQ(wc.wr_id, 7u);
        PCHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// Forged flow-control grants (docs/wire.md §8.1) — naming the receiver's QPN, with windows of
// 0, 1, 2^32-1 or random and random counts, and a few malformed ones — flood the sender's
// port while it streams to the receiver. They may reshape the window, but every datagram must
// still arrive intact and every send complete.
TEST(Ud, ForgedGrantsLoseNothing) {
    constexpr int kMsgs = 60;
    constexpr uint32_t kLen = 512;
    auto sender = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        ibv_ah *ah = make_ah(e);
        oob.barrier();  // receives posted, forger running
        for (int i = 0; i < kMsgs; ++i) {
            std::memset(e.buf, uint8_t(i + 1), kLen);
            PCHECK_EQ(ud_send(e, ah, uint64_t(i), 0, kLen, e.opt.qkey), 0);
            expect_send_ok(e, uint64_t(i));
        }
        oob.barrier();
        ibv_destroy_ah(ah);
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        for (int i = 0; i < kMsgs; ++i) e.post_recv(uint64_t(i), size_t(i) * 1024, 1024);
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(s >= 0);
        const sockaddr_in to = loopback(uint16_t(e.peer.qpn >> 8));  // the QP's UDP port
        auto put32 = [](uint8_t *p, uint32_t v) {
            p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8),
            p[3] = uint8_t(v);
        };
        auto forge = [&](int k) {
            uint8_t g[20] = {0x55, 1, 0x04, 0};
            put32(g + 4, e.peer.qpn);     // to the sender
            put32(g + 8, e.local().qpn);  // "from" the receiver
            const uint32_t windows[] = {0, 1, 0xffffffffu, uint32_t(rand())};
            put32(g + 12, windows[k % 4]);
            put32(g + 16, uint32_t(rand()));  // datagrams "consumed"
            size_t n = sizeof g;
            if (k % 7 == 0) g[2] = 0x14;   // an unknown flag bit
            if (k % 11 == 0) n = 13;       // truncated
            if (k % 13 == 0) g[4] = 0x01;  // a QPN above 24 bits
            PCHECK(sendto(s, g, n, 0, reinterpret_cast<const sockaddr *>(&to), sizeof to) > 0);
        };
        for (int k = 0; k < 200; ++k) forge(k);  // before the first send too
        oob.barrier();
        int got = 0;
        const uint64_t deadline = now_ms() + 20000;
        bool seen[kMsgs] = {};
        for (int k = 200; got < kMsgs && now_ms() < deadline; ++k) {
            forge(k);
            ibv_wc wc;
            const int n = ibv_poll_cq(e.cq, 1, &wc);
            PCHECK(n >= 0);
            if (n == 0) {
                usleep(20);  // a steady flood, not one that only fills the sender's socket
                continue;
            }
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.byte_len, kGrh + kLen);
            const uint8_t *p = e.buf + wc.wr_id * 1024 + kGrh;
            const uint8_t tag = p[0];
            PCHECK(tag >= 1 && tag <= kMsgs && !seen[tag - 1]);
            seen[tag - 1] = true;
            for (uint32_t i = 0; i < kLen; ++i) PCHECK_EQ(p[i], tag);
            ++got;
        }
        close(s);
        PCHECK_EQ(got, kMsgs);
        PCHECK_EQ(e.qp_state(), IBV_QPS_RTS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// A UD QP sends from the UDP port its QPN names (port << 8 | 0xff): a well-formed SEND with
// the right Q_Key whose source QPN names another port is forged and dropped; the same
// datagram naming its own port's QPN is delivered, with that QPN as src_qp.
TEST(Ud, SourceQpnMustMatchTheSendingPort) {
    auto idle = [](Oob &oob) { return connected_idle_peer(oob, ud_opts()); };
    auto receiver = [](Oob &oob) {
        Endpoint e(ud_opts());
        e.exchange_and_connect(oob);
        for (int i = 0; i < 2; ++i) e.post_recv(uint64_t(i), size_t(i) * 1024, 1024);
        const int s = socket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(s >= 0);
        sockaddr_in self = loopback(0);
        PCHECK_EQ(bind(s, reinterpret_cast<const sockaddr *>(&self), sizeof self), 0);
        socklen_t sl = sizeof self;
        PCHECK_EQ(getsockname(s, reinterpret_cast<sockaddr *>(&self), &sl), 0);
        const uint32_t own_qpn = uint32_t(ntohs(self.sin_port)) << 8 | 0xff;
        const sockaddr_in to = loopback(uint16_t(e.local().qpn >> 8));  // our QP's UDP port
        auto send_as = [&](uint32_t src_qpn, uint8_t fill) {
            uint8_t d[20 + 32] = {0x55, 1, 0, 0};
            const uint32_t words[] = {e.local().qpn, src_qpn, e.opt.qkey, 0};
            for (int w = 0; w < 4; ++w)
                for (int b = 0; b < 4; ++b) d[4 + 4 * w + b] = uint8_t(words[w] >> (24 - 8 * b));
            std::memset(d + 20, fill, 32);
            PCHECK(sendto(s, d, sizeof d, 0, reinterpret_cast<const sockaddr *>(&to), sizeof to) >
                   0);
        };
        send_as(e.peer.qpn, 0x11);  // claims to be the peer QP: another port's QPN
        PCHECK(e.quiet_for(200));
        send_as(own_qpn, 0x22);
        const ibv_wc wc = e.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.wr_id, 0u);  // the forged one took no receive
        PCHECK_EQ(wc.byte_len, kGrh + 32);
        PCHECK_EQ(wc.src_qp, own_qpn);
        PCHECK_EQ(e.buf[kGrh], 0x22);
        close(s);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(idle, receiver));
}

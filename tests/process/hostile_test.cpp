// SPDX-License-Identifier: BSD-2-Clause
// Hostile input on the TCP side: a raw client that speaks MPA and FPDUs by hand (the bytes of
// docs/wire.md §2–§5, written independently of our encoders) takes the place of a victim QP's
// peer and sends forged frames: WRITEs to an unknown key, to a read-only region, past a
// region's end, with a wrong key, a READ past a region's end, malformed headers, a truncated
// frame, an oversized MPA request and a flood of junk connections. The victim process must
// survive, end each offending connection (TERMINATE with the right error for the access
// faults, with RFC 5040 codes for malformed headers too), leave every byte outside its permitted
// regions — and inside them — untouched, and keep serving an unrelated connection.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "process/harness.h"

using namespace sr_test;

namespace {

constexpr size_t kPage = 4096;
constexpr uint8_t kPattern = 0xa5;
constexpr int kCases = 8;
constexpr int kQps = kCases + 1;  // the last one meets a request with bytes behind it

using Bytes = std::vector<uint8_t>;

void be16(Bytes &b, uint16_t v) {
    b.push_back(uint8_t(v >> 8));
    b.push_back(uint8_t(v));
}
void be32(Bytes &b, uint32_t v) {
    be16(b, uint16_t(v >> 16));
    be16(b, uint16_t(v));
}
void be64(Bytes &b, uint64_t v) {
    be32(b, uint32_t(v >> 32));
    be32(b, uint32_t(v));
}

// What the victim tells the attacker for each case.
struct Target {
    uint32_t qpn;
    uint32_t fake_peer_qpn;
    uint64_t rw_addr;
    uint32_t rw_rkey;
    uint64_t ro_addr;
    uint32_t ro_rkey;
};

const uint8_t kLoopGid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

// MPA request (rev 2, Enhanced, IRD = ORD = 4) carrying the 48-byte QP hello.
Bytes mpa_request(uint32_t dst_qpn, uint32_t src_qpn) {
    const char key[] = "MPA ID Req Frame";
    Bytes b(key, key + 16);
    b.push_back(0x10);  // Enhanced
    b.push_back(2);     // revision
    be16(b, 4 + 48);
    be16(b, 4);           // IRD
    be16(b, 4);           // ORD
    be32(b, 0x53525150);  // "SRQP"
    b.push_back(1);       // version
    b.push_back(0);       // status: request
    b.push_back(2);       // IBV_QPT_RC
    b.push_back(0);
    be32(b, dst_qpn);
    be32(b, src_qpn);
    b.insert(b.end(), kLoopGid, kLoopGid + 16);  // source GID
    b.insert(b.end(), kLoopGid, kLoopGid + 16);  // destination GID
    return b;
}

Bytes pad(Bytes b) {
    while (b.size() % 4) b.push_back(0);
    return b;
}

Bytes write_fpdu(uint32_t stag, uint64_t to, size_t len) {
    Bytes b;
    be16(b, uint16_t(14 + len));
    b.push_back(0xc1);  // tagged, last, DDP v1
    b.push_back(0x40);  // RDMAP v1, WRITE
    be32(b, stag);
    be64(b, to);
    b.insert(b.end(), len, 0x5c);
    return pad(b);
}

Bytes read_request_fpdu(uint32_t src_stag, uint64_t src_to, uint32_t len) {
    Bytes b;
    be16(b, 18 + 28);
    b.push_back(0x41);  // untagged, last
    b.push_back(0x41);  // READ REQUEST
    be32(b, 0);
    be32(b, 1);           // QN 1
    be32(b, 1);           // MSN 1
    be32(b, 0);           // MO
    be32(b, 0xff000000);  // sink STag
    be64(b, 0);           // sink TO
    be32(b, len);
    be32(b, src_stag);
    be64(b, src_to);
    return pad(b);
}

int dial(uint16_t port) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    PCHECK(s >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    PCHECK(connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    return s;
}

void send_all(int s, const Bytes &b) {
    PCHECK(send(s, b.data(), b.size(), MSG_NOSIGNAL) == ssize_t(b.size()));
}

// Everything the victim sends until it closes (bounded by `ms`); fails if it never closes.
Bytes read_until_close(int s, int ms = 5000) {
    Bytes got;
    const uint64_t end = now_ms() + uint64_t(ms);
    while (now_ms() < end) {
        pollfd p{s, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        uint8_t buf[4096];
        const ssize_t n = recv(s, buf, sizeof buf, 0);
        if (n <= 0) return got;  // closed (or reset)
        got.insert(got.end(), buf, buf + n);
    }
    PCHECK(!"the victim kept the connection open");
    return got;
}

// Connects as the victim QP's peer; returns the socket after an accepted MPA exchange.
int become_peer(const Target &t) {
    const int s = dial(uint16_t(t.qpn >> 8));
    send_all(s, mpa_request(t.qpn, t.fake_peer_qpn));
    uint8_t rep[20 + 52];
    size_t got = 0;
    while (got < sizeof rep) {
        const ssize_t n = recv(s, rep + got, sizeof rep - got, 0);
        PCHECK(n > 0);
        got += size_t(n);
    }
    PCHECK(std::memcmp(rep, "MPA ID Rep Frame", 16) == 0);
    PCHECK((rep[16] & 0x20) == 0);  // not rejected
    PCHECK_EQ(rep[20 + 4 + 5], 1);  // hello status: accept
    return s;
}

// The opcodes (and a TERMINATE's error type/code) in a byte stream of FPDUs (no CRC).
struct Seen {
    bool terminate = false, read_response = false;
    uint8_t layer = 0xff, etype = 0xff, ecode = 0xff;
};
Seen parse(const Bytes &b) {
    Seen s;
    size_t off = 0;
    while (off + 4 <= b.size()) {
        const size_t ulpdu = size_t(b[off]) << 8 | b[off + 1];
        const uint8_t op = b[off + 3] & 0x0f;
        const size_t hdr = (b[off + 2] & 0x80) ? 16 : 20;
        if (op == 0x7 && off + hdr + 2 <= b.size()) {
            s.terminate = true;
            s.layer = b[off + hdr] >> 4;
            s.etype = b[off + hdr] & 0x0f;
            s.ecode = b[off + hdr + 1];
        }
        if (op == 0x2) s.read_response = true;
        off += (2 + ulpdu + 3) & ~size_t(3);
    }
    return s;
}

}  // namespace

TEST(Hostile, ForgedFramesEndOnlyTheirConnectionAndTouchNothing) {
    auto victim = [](Oob &oob) {
        unsetenv("SOFTRDMA_MPA_CRC");  // the attacker's frames carry no CRC trailer
        Endpoint legit;                // an unrelated connection that must keep working
        legit.exchange_and_connect(oob);
        ibv_pd *pd = legit.pd;
        // Three pages each: guard | registered page | guard, all one known pattern.
        auto *rw = static_cast<uint8_t *>(aligned_alloc(kPage, 3 * kPage));
        auto *ro = static_cast<uint8_t *>(aligned_alloc(kPage, 3 * kPage));
        std::memset(rw, kPattern, 3 * kPage);
        std::memset(ro, kPattern, 3 * kPage);
        ibv_mr *mrw =
            ibv_reg_mr(pd, rw + kPage, kPage,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        ibv_mr *mro = ibv_reg_mr(pd, ro + kPage, kPage, IBV_ACCESS_REMOTE_READ);
        PCHECK(mrw && mro);
        std::vector<ibv_qp *> qps;
        for (int k = 0; k < kQps; ++k) {
            ibv_qp_init_attr a{};
            a.send_cq = a.recv_cq = legit.cq;
            a.qp_type = IBV_QPT_RC;
            a.cap.max_send_wr = a.cap.max_recv_wr = 4;
            a.cap.max_send_sge = a.cap.max_recv_sge = 1;
            ibv_qp *qp = ibv_create_qp(pd, &a);
            PCHECK(qp);
            ibv_qp_attr at{};
            at.qp_state = IBV_QPS_INIT;
            at.port_num = 1;
            at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
            PCHECK(ibv_modify_qp(
                       qp, &at,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
            std::memset(&at, 0, sizeof at);
            at.qp_state = IBV_QPS_RTR;
            at.path_mtu = IBV_MTU_4096;
            // A peer QPN above ours: we wait for the call, the attacker makes it.
            at.dest_qp_num = 0xfff000u + uint32_t(k);
            at.max_dest_rd_atomic = 4;
            at.min_rnr_timer = 1;
            at.ah_attr.is_global = 1;
            at.ah_attr.port_num = 1;
            std::memcpy(at.ah_attr.grh.dgid.raw, kLoopGid, 16);
            PCHECK(ibv_modify_qp(qp, &at,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER) == 0);
            oob.put(Target{qp->qp_num, at.dest_qp_num, uint64_t(uintptr_t(rw + kPage)), mrw->rkey,
                           uint64_t(uintptr_t(ro + kPage)), mro->rkey});
            qps.push_back(qp);
        }
        oob.barrier();  // the attacker is done
        // Not one byte changed: guards, the writable page, the read-only page.
        for (size_t i = 0; i < 3 * kPage; ++i) {
            PCHECK_EQ(rw[i], kPattern);
            PCHECK_EQ(ro[i], kPattern);
        }
        // The connection still serves its real peer, both ways.
        legit.post_recv(1, 0, 64);
        oob.barrier();
        ibv_wc wc = legit.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(legit.buf, "still here", 10) == 0);
        std::memcpy(legit.buf + 256, "and so am I", 11);
        PCHECK_EQ(legit.post(IBV_WR_SEND, 2, 256, 11), 0);
        wc = legit.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        oob.barrier();
        for (ibv_qp *qp : qps) PCHECK_EQ(ibv_destroy_qp(qp), 0);
        ibv_dereg_mr(mrw);
        ibv_dereg_mr(mro);
        std::free(rw);
        std::free(ro);
        return 0;
    };
    auto attacker = [](Oob &oob) {
        Endpoint legit;
        legit.exchange_and_connect(oob);
        Target t[kQps];
        for (auto &x : t) x = oob.get<Target>();
        struct Expect {
            const char *what;
            Bytes frames;
            int etype, ecode;  // RDMAP layer; -1: closed without a TERMINATE
        };
        const Expect cases[kCases] = {
            {"WRITE to an unknown key", write_fpdu(0x7ffffff0u, t[0].rw_addr, 64), 1, 0x00},
            {"WRITE to a read-only region", write_fpdu(t[1].ro_rkey, t[1].ro_addr, 64), 1, 0x02},
            {"WRITE past the region's end", write_fpdu(t[2].rw_rkey, t[2].rw_addr + kPage - 8, 64),
             1, 0x01},
            {"WRITE with a wrong key", write_fpdu(t[3].rw_rkey ^ 0x1, t[3].rw_addr, 64), 1, 0x00},
            {"READ past the region's end",
             read_request_fpdu(t[4].rw_rkey, t[4].rw_addr + kPage / 2, kPage), 1, 0x01},
            {"opcode 0xF",
             Bytes{0x00, 0x12, 0x41, 0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 2,
             0x06},  // remote operation error, unexpected opcode
            {"ULPDU length shorter than the header", Bytes{0x00, 0x05, 0xc1, 0x40, 0, 0, 0, 0}, 2,
             0xff},  // remote operation error, unspecified
            {"a truncated header, then EOF", Bytes{0x00, 0x40, 0xc1}, -1, 0},
        };
        for (int k = 0; k < kCases; ++k) {
            SCOPED_TRACE(cases[k].what);
            const int s = become_peer(t[k]);
            send_all(s, cases[k].frames);
            if (k == kCases - 1) shutdown(s, SHUT_WR);
            const Seen seen = parse(read_until_close(s));
            if (cases[k].etype >= 0) {
                if (!seen.terminate)
                    std::fprintf(stderr, "case %d (%s): no TERMINATE\n", k, cases[k].what);
                PCHECK(seen.terminate);
                PCHECK_EQ(seen.layer, 0);
                PCHECK_EQ(seen.etype, cases[k].etype);
                PCHECK_EQ(seen.ecode, cases[k].ecode);
            }
            PCHECK(!seen.read_response);  // not one byte read out
            close(s);
        }
        // The listener itself: an MPA request announcing 65535 bytes of private data is
        // closed without a reply; a flood of junk connections changes nothing.
        {
            const int s = dial(uint16_t(t[0].qpn >> 8));
            Bytes b = mpa_request(t[0].qpn, 1);
            b.resize(20);
            b[18] = b[19] = 0xff;
            send_all(s, b);
            PCHECK(read_until_close(s).empty());
            close(s);
        }
        // Nothing may follow a request before the reply: a request with an FPDU behind it in
        // the same segment is closed without a reply, and the QP it named still takes the
        // same request made properly.
        {
            const Target &x = t[kQps - 1];
            const int s = dial(uint16_t(x.qpn >> 8));
            Bytes b = mpa_request(x.qpn, x.fake_peer_qpn);
            const Bytes w = write_fpdu(x.rw_rkey, x.rw_addr, 64);
            b.insert(b.end(), w.begin(), w.end());
            send_all(s, b);
            PCHECK(read_until_close(s).empty());
            close(s);
            close(become_peer(x));
        }
        for (int i = 0; i < 200; ++i) {
            const int s = dial(uint16_t(t[i % kCases].qpn >> 8));
            uint8_t junk[24];
            for (auto &c : junk) c = uint8_t(rand());
            send(s, junk, sizeof junk, MSG_NOSIGNAL);
            close(s);
        }
        oob.barrier();
        std::memcpy(legit.buf, "still here", 10);
        oob.barrier();  // the victim posted its receive
        PCHECK_EQ(legit.post(IBV_WR_SEND, 1, 0, 10), 0);
        legit.post_recv(2, 512, 64);
        ibv_wc wc = legit.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        wc = legit.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(legit.buf + 512, "and so am I", 11) == 0);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(victim, attacker));
}

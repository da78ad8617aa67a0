// SPDX-License-Identifier: BSD-2-Clause
// XRC between two processes: a sender's XRC send QP reaches the receiver's XRC receive QP,
// and each message lands in the XRC SRQ it names (completing on that SRQ's CQ); a number
// that names no SRQ of the domain is an invalid request. Domains are named by file inode.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "process/harness.h"

using namespace sr_test;

namespace {

struct XrcSide {
    ibv_device **list = nullptr;
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    ibv_xrcd *xrcd = nullptr;
    ibv_srq *srq[2] = {};
    ibv_qp *send_qp = nullptr;
    ibv_qp *recv_qp = nullptr;
    ibv_mr *mr = nullptr;
    uint8_t buf[1 << 16] = {};
    uint8_t gid[16] = {};

    XrcSide() {
        int n = 0;
        list = ibv_get_device_list(&n);
        for (int i = 0; i < n; ++i)
            if (std::strcmp(ibv_get_device_name(list[i]), "sr_lo") == 0)
                ctx = ibv_open_device(list[i]);
        PCHECK(ctx);
        pd = ibv_alloc_pd(ctx);
        cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
        PCHECK(pd && cq);
        ibv_xrcd_init_attr xa{};
        xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
        xa.fd = -1;  // a private domain
        xa.oflags = O_CREAT;
        xrcd = ibv_open_xrcd(ctx, &xa);
        PCHECK(xrcd);
        for (ibv_srq *&s : srq) {
            ibv_srq_init_attr_ex sa{};
            sa.attr.max_wr = 16;
            sa.attr.max_sge = 1;
            sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                           IBV_SRQ_INIT_ATTR_CQ;
            sa.srq_type = IBV_SRQT_XRC;
            sa.pd = pd;
            sa.xrcd = xrcd;
            sa.cq = cq;
            s = ibv_create_srq_ex(ctx, &sa);
            PCHECK(s);
        }
        mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(mr);
        ibv_qp_init_attr_ex qa{};
        qa.qp_type = IBV_QPT_XRC_RECV;
        qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
        qa.xrcd = xrcd;
        recv_qp = ibv_create_qp_ex(ctx, &qa);
        PCHECK(recv_qp);
        std::memset(&qa, 0, sizeof qa);
        qa.qp_type = IBV_QPT_XRC_SEND;
        qa.comp_mask = IBV_QP_INIT_ATTR_PD;
        qa.pd = pd;
        qa.send_cq = cq;
        qa.cap.max_send_wr = 16;
        qa.cap.max_send_sge = 1;
        send_qp = ibv_create_qp_ex(ctx, &qa);
        PCHECK(send_qp);
        for (ibv_qp *q : {recv_qp, send_qp}) {
            ibv_qp_attr a{};
            a.qp_state = IBV_QPS_INIT;
            a.port_num = 1;
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
            PCHECK(ibv_modify_qp(
                       q, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
        }
        ibv_gid g;
        PCHECK(ibv_query_gid(ctx, 1, 0, &g) == 0);
        std::memcpy(gid, g.raw, 16);
    }
    ~XrcSide() {
        ibv_destroy_qp(send_qp);
        ibv_destroy_qp(recv_qp);
        for (ibv_srq *s : srq) ibv_destroy_srq(s);
        ibv_dereg_mr(mr);
        ibv_close_xrcd(xrcd);
        ibv_destroy_cq(cq);
        ibv_dealloc_pd(pd);
        ibv_close_device(ctx);
        ibv_free_device_list(list);
    }
    // As ibv_xsrq_pingpong: our receive QP meets the peer's send QP and the other way round.
    void connect(uint32_t peer_recv_qpn, uint32_t peer_send_qpn, const uint8_t *peer_gid) {
        auto rtr_rts = [&](ibv_qp *q, uint32_t dest, bool send) {
            ibv_qp_attr a{};
            a.qp_state = IBV_QPS_RTR;
            a.dest_qp_num = dest;
            a.path_mtu = IBV_MTU_4096;
            a.min_rnr_timer = 1;
            a.ah_attr.is_global = 1;
            a.ah_attr.port_num = 1;
            std::memcpy(a.ah_attr.grh.dgid.raw, peer_gid, 16);
            int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
            if (!send) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
            PCHECK(ibv_modify_qp(q, &a, mask) == 0);
            std::memset(&a, 0, sizeof a);
            a.qp_state = IBV_QPS_RTS;
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
            if (send) mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
            PCHECK(ibv_modify_qp(q, &a, mask) == 0);
        };
        rtr_rts(recv_qp, peer_send_qpn, false);
        rtr_rts(send_qp, peer_recv_qpn, true);
    }
    uint32_t srqn(int i) {
        uint32_t n = 0;
        PCHECK(ibv_get_srq_num(srq[i], &n) == 0);
        return n;
    }
    ibv_wc wait_wc() {
        ibv_wc wc{};
        const uint64_t end = now_ms() + 20000;
        while (ibv_poll_cq(cq, 1, &wc) == 0) PCHECK(now_ms() < end);
        return wc;
    }
};

struct XrcAddr {
    uint32_t recv_qpn, send_qpn, srqn[2];
    uint8_t gid[16];
    uint64_t addr;
    uint32_t rkey;
};

XrcAddr exchange(XrcSide &s, Oob &oob) {
    XrcAddr me{s.recv_qp->qp_num, s.send_qp->qp_num, {s.srqn(0), s.srqn(1)}, {}, 0, 0};
    std::memcpy(me.gid, s.gid, 16);
    me.addr = uint64_t(uintptr_t(s.buf));
    me.rkey = s.mr->rkey;
    oob.put(me);
    const XrcAddr peer = oob.get<XrcAddr>();
    s.connect(peer.recv_qpn, peer.send_qpn, peer.gid);
    oob.barrier();
    return peer;
}

int post(XrcSide &s, ibv_wr_opcode op, uint32_t srqn, uint64_t id, uint32_t off, uint32_t len,
         uint64_t raddr = 0, uint32_t rkey = 0) {
    ibv_sge sge{uint64_t(uintptr_t(s.buf + off)), len, s.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.qp_type.xrc.remote_srqn = srqn;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr *bad = nullptr;
    return ibv_post_send(s.send_qp, &wr, &bad);
}

}  // namespace

TEST(Xrc, MessagesLandInTheSrqTheyName) {
    auto receiver = [](Oob &oob) {
        XrcSide s;
        for (int i = 0; i < 2; ++i) {  // SRQ i gets bytes [i*4096, +4096)
            ibv_sge sge{uint64_t(uintptr_t(s.buf + i * 4096)), 4096, s.mr->lkey};
            ibv_recv_wr wr{};
            wr.wr_id = 100 + uint64_t(i);
            wr.sg_list = &sge;
            wr.num_sge = 1;
            ibv_recv_wr *bad = nullptr;
            PCHECK(ibv_post_srq_recv(s.srq[i], &wr, &bad) == 0);
        }
        // An XRC QP has no receive queue of its own.
        ibv_recv_wr rw{};
        ibv_recv_wr *bad = nullptr;
        PCHECK_EQ(ibv_post_recv(s.recv_qp, &rw, &bad), EINVAL);
        exchange(s, oob);
        bool seen[2] = {};
        for (int k = 0; k < 2; ++k) {
            const ibv_wc wc = s.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_RECV);
            PCHECK_EQ(wc.qp_num, s.recv_qp->qp_num);
            const int i = int(wc.wr_id - 100);
            PCHECK(i == 0 || i == 1);
            seen[i] = true;
            PCHECK_EQ(wc.byte_len, uint32_t(1000 + i));
            for (uint32_t b = 0; b < wc.byte_len; ++b)
                PCHECK_EQ(s.buf[i * 4096 + int(b)], uint8_t(b * 3 + i));
        }
        PCHECK(seen[0] && seen[1]);
        oob.barrier();  // the WRITE landed
        for (int b = 0; b < 64; ++b) PCHECK_EQ(s.buf[8192 + b], uint8_t(0xc0 + b));
        oob.barrier();
        return 0;
    };
    auto sender = [](Oob &oob) {
        XrcSide s;
        const XrcAddr peer = exchange(s, oob);
        for (int i = 1; i >= 0; --i) {  // to SRQ 1 first: the number, not the order, decides
            for (int b = 0; b < 1000 + i; ++b) s.buf[i * 4096 + b] = uint8_t(b * 3 + i);
            PCHECK(post(s, IBV_WR_SEND, peer.srqn[i], uint64_t(i), uint32_t(i * 4096),
                        uint32_t(1000 + i)) == 0);
            const ibv_wc wc = s.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.opcode, IBV_WC_SEND);
        }
        for (int b = 0; b < 64; ++b) s.buf[16384 + b] = uint8_t(0xc0 + b);
        PCHECK(post(s, IBV_WR_RDMA_WRITE, peer.srqn[0], 7, 16384, 64, peer.addr + 8192,
                    peer.rkey) == 0);
        PCHECK_EQ(s.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

TEST(Xrc, UnknownSrqNumberIsAnInvalidRequest) {
    auto receiver = [](Oob &oob) {
        XrcSide s;
        exchange(s, oob);
        oob.barrier();
        return 0;
    };
    auto sender = [](Oob &oob) {
        XrcSide s;
        const XrcAddr peer = exchange(s, oob);
        const uint32_t bogus = peer.srqn[0] + peer.srqn[1] + 1000;
        PCHECK(post(s, IBV_WR_SEND, bogus, 1, 0, 16) == 0);
        PCHECK_EQ(s.wait_wc().status, IBV_WC_REM_INV_REQ_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

// ibv_open_xrcd: a file names one domain (every open of it returns the domain); without
// O_CREAT a domain must exist, with O_EXCL it must not; ibv_open_qp finds a receive QP by
// number in its domain and its handle is dropped on its own.
TEST(Xrc, DomainsByInodeAndOpenQp) {
    auto solo = [](Oob &oob) {
        XrcSide s;
        char path[] = "/tmp/sr_xrc_test.XXXXXX";
        const int fd = mkstemp(path);
        PCHECK(fd >= 0);
        ibv_xrcd_init_attr xa{};
        xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
        xa.fd = fd;
        xa.oflags = 0;
        errno = 0;
        PCHECK(ibv_open_xrcd(s.ctx, &xa) == nullptr);  // no domain yet, no O_CREAT
        PCHECK_EQ(errno, EINVAL);
        xa.oflags = O_CREAT;
        ibv_xrcd *a = ibv_open_xrcd(s.ctx, &xa);
        PCHECK(a);
        const int fd2 = open(path, O_RDONLY);
        xa.fd = fd2;
        xa.oflags = 0;
        ibv_xrcd *b = ibv_open_xrcd(s.ctx, &xa);
        PCHECK(b == a);  // the same inode, the same domain
        xa.oflags = O_CREAT | O_EXCL;
        PCHECK(ibv_open_xrcd(s.ctx, &xa) == nullptr);
        PCHECK_EQ(ibv_close_xrcd(b), 0);
        PCHECK_EQ(ibv_close_xrcd(a), 0);
        close(fd);
        close(fd2);
        unlink(path);

        ibv_qp_open_attr oa{};
        oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
        oa.qp_num = s.recv_qp->qp_num;
        oa.xrcd = s.xrcd;
        oa.qp_type = IBV_QPT_XRC_RECV;
        ibv_qp *opened = ibv_open_qp(s.ctx, &oa);
        PCHECK(opened == s.recv_qp);
        PCHECK_EQ(ibv_destroy_qp(opened), 0);  // drops the opened handle only
        ibv_qp_attr qa{};
        ibv_qp_init_attr ia{};
        PCHECK_EQ(ibv_query_qp(s.recv_qp, &qa, IBV_QP_STATE, &ia), 0);
        oa.qp_num = s.send_qp->qp_num;  // not a receive QP of the domain
        PCHECK(ibv_open_qp(s.ctx, &oa) == nullptr);
        PCHECK_EQ(ibv_close_xrcd(s.xrcd), EBUSY);  // its SRQs and QP still use it
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(idle_peer, solo));
}

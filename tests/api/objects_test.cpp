// SPDX-License-Identifier: BSD-2-Clause
// PD, MR, CQ, completion channel, SRQ and QP objects: creation, argument errors, EBUSY rules.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "api/api_util.h"

using Objects = VerbsTest;

TEST_F(Objects, MrRegistration) {
    std::vector<char> buf(8192);
    ibv_mr *mr = ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(mr->addr, buf.data());
    EXPECT_EQ(mr->length, buf.size());
    EXPECT_EQ(mr->lkey, mr->rkey);
    EXPECT_EQ(mr->pd, pd_);
    ibv_mr *mr2 = ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr2, nullptr);
    EXPECT_NE(mr2->lkey, mr->lkey);
    // The PD is in use.
    EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY);
    EXPECT_EQ(ibv_dereg_mr(mr2), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Objects, MrArgumentErrors) {
    std::vector<char> buf(4096);
    // Remote write without local write is invalid (IB spec).
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_REMOTE_WRITE), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_REMOTE_ATOMIC), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, buf.data(), 0, IBV_ACCESS_LOCAL_WRITE), nullptr);
    EXPECT_EQ(errno, EINVAL);
    // Unmapped memory cannot be registered.
    void *p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    munmap(p, 8192);
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd_, p, 8192, IBV_ACCESS_LOCAL_WRITE), nullptr);
    EXPECT_EQ(errno, EFAULT);
    // Optional flags (RELAXED_ORDERING) are accepted, as perftest passes them.
    unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING;
    ibv_mr *mr = ibv_reg_mr(pd_, buf.data(), buf.size(), access);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    mr = ibv_reg_mr_iova2(pd_, buf.data(), buf.size(), 0x100000, access | IBV_ACCESS_REMOTE_READ);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Objects, MrRereg) {
    std::vector<char> a(4096), b(8192);
    ibv_mr *mr = ibv_reg_mr(pd_, a.data(), a.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    // The keys stay across re-registration (as on rxe and mlx5: peers keep using them).
    const uint32_t lkey = mr->lkey, rkey = mr->rkey;
    ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, b.data(), b.size(), 0), 0);
    EXPECT_EQ(mr->addr, b.data());
    EXPECT_EQ(mr->length, b.size());
    ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
              0);
    ibv_pd *other = ibv_alloc_pd(ctx_);
    ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, other, nullptr, 0, 0), 0);
    EXPECT_EQ(mr->pd, other);
    EXPECT_EQ(ibv_dealloc_pd(other), EBUSY);  // the region now counts against it
    ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd_, nullptr, 0, 0), 0);
    EXPECT_EQ(ibv_dealloc_pd(other), 0);
    EXPECT_EQ(mr->lkey, lkey);
    EXPECT_EQ(mr->rkey, rkey);
    EXPECT_NE(
        ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE),
        0);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Objects, CqAndChannelRules) {
    ibv_comp_channel *ch = ibv_create_comp_channel(ctx_);
    ASSERT_NE(ch, nullptr);
    ASSERT_GE(ch->fd, 0);
    errno = 0;
    EXPECT_EQ(ibv_create_cq(ctx_, 0, nullptr, nullptr, 0), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(ibv_create_cq(ctx_, 16, nullptr, ch, 5), nullptr);  // no such vector
    EXPECT_EQ(errno, EINVAL);
    ibv_cq *cq = ibv_create_cq(ctx_, 16, this, ch, 0);
    ASSERT_NE(cq, nullptr);
    EXPECT_GE(cq->cqe, 16);
    EXPECT_EQ(cq->cq_context, this);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);  // a CQ uses it
    ibv_qp *qp = make_qp(cq);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);  // a QP uses it
    EXPECT_EQ(ibv_resize_cq(cq, 64), 0);
    EXPECT_GE(cq->cqe, 64);
    EXPECT_EQ(ibv_req_notify_cq(cq, 0), 0);
    EXPECT_EQ(ibv_req_notify_cq(cq, 1), 0);
    // Nothing happened: the channel is empty, and non-blocking reads say so.
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    ibv_cq *ev_cq;
    void *ev_ctx;
    errno = 0;
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(Objects, ArmWithoutChannelFails) {
    ibv_cq *cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    EXPECT_NE(ibv_req_notify_cq(cq, 0), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Objects, ExtendedCq) {
    ibv_cq_init_attr_ex a{};
    a.cqe = 32;
    a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    ibv_cq_ex *cq = ibv_create_cq_ex(ctx_, &a);
    ASSERT_NE(cq, nullptr);
    ibv_poll_cq_attr pa{};
    EXPECT_EQ(ibv_start_poll(cq, &pa), ENOENT);  // empty
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    a.comp_mask = 1u << 20;  // unknown
    errno = 0;
    EXPECT_EQ(ibv_create_cq_ex(ctx_, &a), nullptr);
    EXPECT_NE(errno, 0);
}

TEST_F(Objects, QpCreationCapsAndErrors) {
    ibv_cq *cq = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap = {8, 8, 1, 1, 16};
    ibv_qp *qp = ibv_create_qp(pd_, &a);
    ASSERT_NE(qp, nullptr);
    EXPECT_GE(a.cap.max_inline_data, 16u);  // granted caps are written back
    EXPECT_EQ(qp->state, IBV_QPS_RESET);
    EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
    EXPECT_NE(qp->qp_num, 0u);
    EXPECT_LE(qp->qp_num, 0xffffffu);
    ibv_qp_attr at;
    ibv_qp_init_attr ia;
    ASSERT_EQ(ibv_query_qp(qp, &at, IBV_QP_CAP, &ia), 0);
    EXPECT_EQ(at.cap.max_send_wr, 8u);
    EXPECT_EQ(at.cap.max_inline_data, a.cap.max_inline_data);
    EXPECT_EQ(ia.send_cq, cq);
    // Too many WRs / SGEs / inline.
    ibv_qp_init_attr bad = a;
    bad.cap.max_send_wr = 1u << 30;
    errno = 0;
    EXPECT_EQ(ibv_create_qp(pd_, &bad), nullptr);
    EXPECT_EQ(errno, EINVAL);
    bad = a;
    bad.cap.max_send_sge = 1000;
    EXPECT_EQ(ibv_create_qp(pd_, &bad), nullptr);
    bad = a;
    bad.cap.max_inline_data = 1u << 20;
    EXPECT_EQ(ibv_create_qp(pd_, &bad), nullptr);
    bad = a;
    bad.send_cq = nullptr;
    EXPECT_EQ(ibv_create_qp(pd_, &bad), nullptr);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// A QPN carries the port of the socket behind it (port << 8 | slot). Those ports must stay out
// of the kernel's ephemeral range: ibv_rc_pingpong-style harnesses take a port from bind(0),
// close it, start a server that creates its QP and only then binds the port (seen in CI: the
// server's own QP listener held it).
TEST_F(Objects, QpPortsStayOutOfTheEphemeralRange) {
    unsigned lo = 0, hi = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fscanf(f, "%u %u", &lo, &hi), 2);
    fclose(f);
    if (hi >= 0xfffe && lo <= 1025) GTEST_SKIP() << "the ephemeral range covers every port";
    auto private_port = [&](uint32_t qpn) {
        const unsigned port = qpn >> 8;
        return (port > hi || port < lo) && port >= 1024;
    };
    ibv_cq *cq = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    // 300 RC QPs take at least two listeners; each UD QP has its own UDP socket.
    std::vector<ibv_qp *> qps;
    for (int i = 0; i < 300; ++i) qps.push_back(make_qp(cq));
    for (int i = 0; i < 8; ++i) qps.push_back(make_qp(cq, IBV_QPT_UD));
    for (ibv_qp *qp : qps) {
        ASSERT_NE(qp, nullptr);
        EXPECT_TRUE(private_port(qp->qp_num))
            << std::hex << "QPN 0x" << qp->qp_num << std::dec << " uses port " << (qp->qp_num >> 8)
            << ", inside the ephemeral range " << lo << "-" << hi;
    }
    // The harness pattern itself: a kernel-chosen port is still free after QPs are created.
    for (int round = 0; round < 3; ++round) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        socklen_t len = sizeof a;
        ASSERT_EQ(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr *>(&a), &len), 0);
        close(s);
        for (int i = 0; i < 256; ++i) qps.push_back(make_qp(cq));  // opens a listener
        qps.push_back(make_qp(cq, IBV_QPT_UD));
        s = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        EXPECT_EQ(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a), 0)
            << "port " << ntohs(a.sin_port) << ": " << strerror(errno);
        EXPECT_EQ(listen(s, 1), 0);
        close(s);
    }
    for (ibv_qp *qp : qps) {
        ASSERT_NE(qp, nullptr);
        EXPECT_EQ(ibv_destroy_qp(qp), 0);
    }
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(Objects, SrqLifecycle) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    ibv_srq *srq = ibv_create_srq(pd_, &sa);
    ASSERT_NE(srq, nullptr);
    ibv_srq_attr q;
    ASSERT_EQ(ibv_query_srq(srq, &q), 0);
    EXPECT_EQ(q.max_wr, 4u);
    // Post until full.
    std::vector<char> buf(64);
    ibv_mr *mr = ibv_reg_mr(pd_, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ibv_sge sge{uint64_t(uintptr_t(buf.data())), 64, mr->lkey};
    ibv_recv_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
    EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), ENOMEM);
    wr.num_sge = 2;
    EXPECT_EQ(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
    // Limit above max_wr is invalid; growing works.
    ibv_srq_attr m{};
    m.srq_limit = 10;
    EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT), EINVAL);
    m.max_wr = 16;
    EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR), 0);
    ASSERT_EQ(ibv_query_srq(srq, &q), 0);
    EXPECT_EQ(q.max_wr, 16u);
    // A QP on the SRQ makes it busy; posting receives to that QP is invalid.
    ibv_cq *cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    ibv_qp *qp = make_qp(cq, IBV_QPT_RC, srq);
    ASSERT_NE(qp, nullptr);
    wr.num_sge = 1;
    EXPECT_EQ(ibv_post_recv(qp, &wr, &bad), EINVAL);
    EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_srq(srq), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(Objects, AddressHandles) {
    ibv_ah_attr a{};
    a.port_num = 1;
    errno = 0;
    EXPECT_EQ(ibv_create_ah(pd_, &a), nullptr);  // RoCE needs a GRH
    EXPECT_EQ(errno, EINVAL);
    a.is_global = 1;
    a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;
    a.grh.dgid.raw[12] = 127;
    a.grh.dgid.raw[15] = 1;
    ibv_ah *ah = ibv_create_ah(pd_, &a);
    ASSERT_NE(ah, nullptr);
    EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST(Strings, EnumNames) {
    EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
    EXPECT_STREQ(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
    EXPECT_STREQ(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
    EXPECT_STREQ(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
    EXPECT_STREQ(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED), "SRQ limit reached");
    EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
    EXPECT_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
    EXPECT_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
}

// A QP moved to RESET takes its completions out of its CQs (rdma-core's providers clean them),
// so a program that restarts a failed QP polls only what the new life produces.
TEST_F(Objects, ResetQpLeavesNoCompletionsBehind) {
    ibv_cq *cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp *qp = make_qp(cq);
    ibv_qp *other = make_qp(cq);
    ASSERT_TRUE(qp && other);
    char buf[64];
    ibv_mr *mr = ibv_reg_mr(pd_, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    for (ibv_qp *q : {qp, other}) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        ASSERT_EQ(ibv_modify_qp(
                      q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                  0);
        ibv_sge sge{uint64_t(uintptr_t(buf)), sizeof buf, mr->lkey};
        ibv_recv_wr wr{}, *bad;
        wr.wr_id = q == qp ? 1 : 2;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ASSERT_EQ(ibv_post_recv(q, &wr, &bad), 0);
        a.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), 0);  // flushes the receive
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    ibv_wc wc[4];
    ASSERT_EQ(ibv_poll_cq(cq, 4, wc), 1);  // only the other QP's flushed receive is left
    EXPECT_EQ(wc[0].wr_id, 2u);
    EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_qp(other), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// The device clock (ibv_query_rt_values_ex) is the clock of completion timestamps: a
// completion made between two readings carries a time between them.
TEST_F(Objects, RtValuesAndCompletionTimestampsShareAClock) {
    ibv_device_attr_ex da{};
    ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &da), 0);
    ASSERT_EQ(da.hca_core_clock, 1000000u);  // kHz: one tick per nanosecond
    ibv_cq_init_attr_ex a{};
    a.cqe = 4;
    a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    ibv_cq_ex *cq = ibv_create_cq_ex(ctx_, &a);
    ASSERT_NE(cq, nullptr);
    ibv_qp *qp = make_qp(ibv_cq_ex_to_cq(cq));
    ASSERT_NE(qp, nullptr);
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    ASSERT_EQ(ibv_modify_qp(qp, &qa,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
              0);
    ibv_recv_wr wr{};
    ibv_recv_wr *bad = nullptr;
    ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
    ibv_values_ex before{}, after{};
    before.comp_mask = after.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    ASSERT_EQ(ibv_query_rt_values_ex(ctx_, &before), 0);
    EXPECT_EQ(before.comp_mask, uint32_t(IBV_VALUES_MASK_RAW_CLOCK));
    qa.qp_state = IBV_QPS_ERR;  // flushes the receive: one completion, stamped now
    ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
    ASSERT_EQ(ibv_query_rt_values_ex(ctx_, &after), 0);
    ibv_poll_cq_attr pa{};
    ASSERT_EQ(ibv_start_poll(cq, &pa), 0);
    EXPECT_EQ(cq->status, IBV_WC_WR_FLUSH_ERR);
    const uint64_t ts = ibv_wc_read_completion_ts(cq);
    ibv_end_poll(cq);
    EXPECT_LE(uint64_t(before.raw_clock.tv_nsec), ts);
    EXPECT_LE(ts, uint64_t(after.raw_clock.tv_nsec));
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

// A parent domain's allocator is application code: it runs with no lock of ours held, so it
// may use the very object it allocates for (here: poll the CQ being resized, query the SRQ
// being grown). With a lock held across it, this test deadlocks.
namespace {
ibv_cq *g_resizing_cq = nullptr;
ibv_srq *g_growing_srq = nullptr;
int g_reentered = 0;
void *reentrant_alloc(ibv_pd *, void *, size_t size, size_t align, uint64_t) {
    ibv_wc wc;
    if (g_resizing_cq && ibv_poll_cq(g_resizing_cq, 1, &wc) == 0) ++g_reentered;
    ibv_srq_attr a;
    if (g_growing_srq && ibv_query_srq(g_growing_srq, &a) == 0) ++g_reentered;
    void *p = nullptr;
    return posix_memalign(&p, align, size) == 0 ? p : nullptr;
}
void plain_free(ibv_pd *, void *, void *p, uint64_t) {
    std::free(p);
}
}  // namespace

TEST_F(Objects, ParentDomainAllocatorsRunWithoutOurLocks) {
    ibv_parent_domain_init_attr pa{};
    pa.pd = pd_;
    pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    pa.alloc = reentrant_alloc;
    pa.free = plain_free;
    ibv_pd *domain = ibv_alloc_parent_domain(ctx_, &pa);
    ASSERT_NE(domain, nullptr);
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 8;
    ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    ca.parent_domain = domain;
    ibv_cq_ex *cq = ibv_create_cq_ex(ctx_, &ca);
    ASSERT_NE(cq, nullptr);
    g_resizing_cq = ibv_cq_ex_to_cq(cq);
    EXPECT_EQ(ibv_resize_cq(g_resizing_cq, 64), 0);
    g_resizing_cq = nullptr;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    ibv_srq *srq = ibv_create_srq(domain, &sa);
    ASSERT_NE(srq, nullptr);
    g_growing_srq = srq;
    ibv_srq_attr grow{};
    grow.max_wr = 64;
    EXPECT_EQ(ibv_modify_srq(srq, &grow, IBV_SRQ_MAX_WR), 0);
    g_growing_srq = nullptr;
    EXPECT_EQ(g_reentered, 4);  // two rings each for the CQ and the SRQ
    ibv_srq_attr now{};
    EXPECT_EQ(ibv_query_srq(srq, &now), 0);
    EXPECT_EQ(now.max_wr, 64u);
    EXPECT_EQ(ibv_destroy_srq(srq), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    EXPECT_EQ(ibv_dealloc_pd(domain), 0);
}

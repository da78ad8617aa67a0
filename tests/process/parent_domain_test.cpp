// SPDX-License-Identifier: BSD-2-Clause
// Parent domains between two processes: a QP and CQ made on a parent domain get their rings
// from the application's allocator (given back at destroy) and move data protected by the
// PD the domain wraps.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "process/harness.h"

using namespace sr_test;

namespace {

struct Calls {
    int allocs = 0, frees = 0, defaults = 0;
    uint64_t types_seen = 0;  // bit (type & 63) per resource type seen
};

void *counting_alloc(ibv_pd *, void *ctx, size_t size, size_t align, uint64_t type) {
    auto *c = static_cast<Calls *>(ctx);
    c->types_seen |= 1ull << (type & 63);
    if ((type & 0xffffffff) == 2) {  // the receive queue: let the library allocate it
        ++c->defaults;
        return IBV_ALLOCATOR_USE_DEFAULT;
    }
    void *p = nullptr;
    if (posix_memalign(&p, align, size) != 0) return nullptr;
    ++c->allocs;
    return p;
}

void counting_free(ibv_pd *, void *ctx, void *p, uint64_t) {
    ++static_cast<Calls *>(ctx)->frees;
    std::free(p);
}

}  // namespace

TEST(ParentDomain, QueuesFromTheApplicationsAllocatorCarryTraffic) {
    auto side = [](Oob &oob) {
        Endpoint ep;  // its PD and MR are the plain ones; its own QP is replaced below
        Calls calls;
        ibv_td_init_attr ta{};
        ibv_td *td = ibv_alloc_td(ep.ctx, &ta);
        PCHECK(td);
        ibv_parent_domain_init_attr pa{};
        pa.pd = ep.pd;
        pa.td = td;
        pa.comp_mask =
            IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
        pa.alloc = counting_alloc;
        pa.free = counting_free;
        pa.pd_context = &calls;
        ibv_pd *domain = ibv_alloc_parent_domain(ep.ctx, &pa);
        PCHECK(domain && domain != ep.pd);
        PCHECK_EQ(ibv_dealloc_td(td), EBUSY);
        ibv_cq_init_attr_ex ca{};
        ca.cqe = 64;
        ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
        ca.parent_domain = ep.pd;  // a plain PD is not a parent domain
        PCHECK(ibv_create_cq_ex(ep.ctx, &ca) == nullptr);
        ca.parent_domain = domain;
        ibv_cq_ex *cq = ibv_create_cq_ex(ep.ctx, &ca);
        PCHECK(cq);
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        ibv_qp *qp = ibv_create_qp(domain, &qa);
        PCHECK(qp && qp->pd == domain);
        PCHECK(calls.allocs >= 3);     // CQ ring, send queue rings
        PCHECK_EQ(calls.defaults, 2);  // the receive queue's two rings, by our choice
        std::swap(ep.qp, qp);
        ibv_cq *own_cq = ep.cq;
        ep.cq = ibv_cq_ex_to_cq(cq);  // the endpoint polls this CQ now
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        PCHECK(ibv_modify_qp(
                   ep.qp, &a,
                   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
        ep.exchange_and_connect(oob);
        // The MR on the wrapped PD serves the QP on the parent domain, both ways.
        std::memset(ep.buf, 0, 4096);
        ep.post_recv(1, 0, 4096);
        oob.barrier();
        for (int i = 0; i < 1000; ++i) ep.buf[8192 + i] = uint8_t(i * 13 + getpid());
        PCHECK(ep.post(IBV_WR_SEND, 2, 8192, 1000) == 0);
        oob.put(int(getpid()));  // what the peer's message must hold
        int got = 0;
        for (int k = 0; k < 2; ++k) {
            const ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            if (wc.opcode == IBV_WC_RECV) {
                const int peer = oob.get<int>();
                for (int i = 0; i < 1000; ++i) PCHECK_EQ(ep.buf[i], uint8_t(i * 13 + peer));
                ++got;
            }
        }
        PCHECK_EQ(got, 1);
        oob.barrier();
        PCHECK_EQ(ibv_dealloc_pd(ep.pd), EBUSY);  // the domain wraps it
        PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
        ep.qp = qp;
        PCHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
        PCHECK_EQ(calls.frees, calls.allocs);  // every ring went back to the application
        PCHECK(calls.types_seen != 0);
        PCHECK_EQ(ibv_dealloc_pd(domain), 0);
        PCHECK_EQ(ibv_dealloc_td(td), 0);
        ep.cq = own_cq;  // the endpoint destroys its own QP and CQ
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(side, side));
}

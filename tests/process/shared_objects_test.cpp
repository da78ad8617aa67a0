// SPDX-License-Identifier: BSD-2-Clause
// A verbs context's command fd stands for its objects: a dup of it imports the context
// (ibv_import_device), and its PDs and MRs by handle; a QP made on the imported objects moves
// real data into the original region.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "process/harness.h"

using namespace sr_test;

namespace {

// An RC QP with its own CQ on `pd` (an imported one), moved to INIT with `access`.
ibv_qp *rc_qp_on(ibv_context *ctx, ibv_pd *pd, uint32_t depth, unsigned access, ibv_cq *&cq) {
    cq = ibv_create_cq(ctx, int(depth) * 2, nullptr, nullptr, 0);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = depth;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(pd, &qa);
    PCHECK(cq && qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = access;
    PCHECK(ibv_modify_qp(
               qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    return qp;
}

}  // namespace

TEST(SharedObjects, ImportedPdAndMrCarryTraffic) {
    auto importer = [](Oob &oob) {
        Endpoint ep;  // the exporter: context, PD, MR (and a QP left unused)
        PCHECK(ep.ctx->cmd_fd >= 0);
        const int fd = dup(ep.ctx->cmd_fd);
        ibv_context *ctx = ibv_import_device(fd);
        PCHECK(ctx && ctx != ep.ctx);
        PCHECK_EQ(ctx->cmd_fd, fd);
        PCHECK(ibv_import_pd(ctx, ep.pd->handle + 1000) == nullptr);
        PCHECK_EQ(errno, EINVAL);
        ibv_pd *pd = ibv_import_pd(ctx, ep.pd->handle);
        PCHECK(pd);
        ibv_mr *mr = ibv_import_mr(pd, ep.mr->handle);
        PCHECK(mr && mr->lkey == ep.mr->lkey && mr->addr == ep.mr->addr);
        ibv_cq *cq = nullptr;
        ibv_qp *qp = rc_qp_on(ctx, pd, 4, IBV_ACCESS_REMOTE_WRITE, cq);
        // Swap the endpoint's QP for the one on imported objects; it connects it.
        std::swap(ep.qp, qp);
        ep.exchange_and_connect(oob);
        oob.barrier();  // the peer wrote into the region through the imported QP
        for (int i = 0; i < 4096; ++i) PCHECK_EQ(ep.buf[i], uint8_t(i * 5 + 1));
        ibv_unimport_mr(mr);
        ibv_unimport_pd(pd);
        PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
        ep.qp = qp;  // the exporter's own QP, destroyed with the endpoint
        PCHECK_EQ(ibv_destroy_cq(cq), 0);
        PCHECK_EQ(ibv_close_device(ctx), 0);
        // Any other fd is not a verbs context of this process.
        const int other = dup(0);
        errno = 0;
        PCHECK(ibv_import_device(other) == nullptr);
        PCHECK_EQ(errno, EOPNOTSUPP);
        close(other);
        return 0;
    };
    auto writer = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 4096; ++i) ep.buf[i] = uint8_t(i * 5 + 1);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 4096) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(writer, importer));
}

// The command fd handed to another process (SCM_RIGHTS), as rdma-core allows: the importer's
// QP, made on the imported PD, moves data in and out of the exporter's region (its memory stays
// there), atomics from both processes on one word stay atomic, the sharing works the other way
// too, and a region its owner deregisters is gone for the importer.
namespace {
constexpr size_t kWord = 800000;  // offset of the word both processes add to
constexpr int kAdds = 300;
}  // namespace

TEST(SharedObjects, ContextHandedToAnotherProcess) {
    auto exporter = [](Oob &oob) {
        Endpoint own;  // context, PD and region the importer will use
        for (size_t i = 0; i < own.opt.buf_size; ++i) own.buf[i] = uint8_t(i * 7 + 3);
        std::memset(own.buf + kWord, 0, 8);
        oob.send_fd(own.ctx->cmd_fd);
        oob.put(own.pd->handle);
        oob.put(own.mr->handle);
        oob.put(uint64_t(uintptr_t(own.buf)));
        Endpoint peer;  // talks to the importer's QP; its peer region is ours
        peer.exchange_and_connect(oob);
        PCHECK_EQ(peer.peer.addr, uint64_t(uintptr_t(own.buf)));

        // WRITE into the imported region lands here; READ of it comes from here.
        for (size_t i = 0; i < 200000; ++i) peer.buf[i] = uint8_t(i * 13 + 1);
        PCHECK(peer.post(IBV_WR_RDMA_WRITE, 1, 0, 200000, 0) == 0);
        PCHECK_EQ(peer.wait_wc().status, IBV_WC_SUCCESS);
        for (size_t i = 0; i < 200000; ++i) PCHECK_EQ(own.buf[i], uint8_t(i * 13 + 1));
        PCHECK(peer.post(IBV_WR_RDMA_READ, 2, 300000, 100000, 300000) == 0);
        PCHECK_EQ(peer.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(peer.buf + 300000, own.buf + 300000, 100000) == 0);

        // The importer SENDs bytes of our region; our SEND fills its RECV in our region.
        peer.post_recv(3, 500000, 70000);
        oob.barrier();
        ibv_wc wc = peer.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 70000u);
        PCHECK(std::memcmp(peer.buf + 500000, own.buf + 500000, 70000) == 0);
        for (size_t i = 0; i < 90000; ++i) peer.buf[600000 + i] = uint8_t(i * 3 + 5);
        oob.barrier();  // its RECV is posted
        PCHECK(peer.post(IBV_WR_SEND, 4, 600000, 90000) == 0);
        PCHECK_EQ(peer.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();  // it saw the RECV complete
        PCHECK(std::memcmp(peer.buf + 600000, own.buf + 600000, 90000) == 0);

        // The importer READs our peer's bytes into our region, and fetch-adds into it.
        for (size_t i = 0; i < 50000; ++i) peer.buf[700000 + i] = uint8_t(i * 11 + 9);
        std::memset(peer.buf + 760000, 0, 8);
        oob.barrier();
        oob.barrier();  // done
        PCHECK(std::memcmp(peer.buf + 700000, own.buf + 700000, 50000) == 0);
        uint64_t fetched;
        std::memcpy(&fetched, own.buf + 760000, 8);
        PCHECK_EQ(fetched, 0u);  // the word's value before its add
        uint64_t added;
        std::memcpy(&added, peer.buf + 760000, 8);
        PCHECK_EQ(added, 42u);

        // Atomics on one word from both processes: ours through the importer's QP (it reads
        // and writes our memory), the importer's through our own QP (a CPU atomic here).
        own.exchange_and_connect(oob);
        oob.barrier();
        std::vector<uint64_t> seen;
        for (int i = 0; i < kAdds; ++i) {
            PCHECK(peer.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 10, 900000, kWord, 1, 0) == 0);
            PCHECK_EQ(peer.wait_wc().status, IBV_WC_SUCCESS);
            uint64_t v;
            std::memcpy(&v, peer.buf + 900000, 8);
            seen.push_back(v);
        }
        oob.barrier();
        for (int i = 0; i < kAdds; ++i) seen.push_back(oob.get<uint64_t>());
        uint64_t total;
        std::memcpy(&total, own.buf + kWord, 8);
        PCHECK_EQ(total, uint64_t(2 * kAdds));
        std::sort(seen.begin(), seen.end());
        for (int i = 0; i < 2 * kAdds; ++i) PCHECK_EQ(seen[size_t(i)], uint64_t(i));

        // The other way: a region the importer registered on the shared PD, imported here.
        const auto handle = oob.get<uint32_t>();
        const auto addr = oob.get<uint64_t>();
        ibv_mr *theirs = ibv_import_mr(own.pd, handle);
        PCHECK(theirs && uint64_t(uintptr_t(theirs->addr)) == addr && theirs->length == 65536);
        oob.put(theirs->rkey);
        oob.barrier();  // the importer's WRITE through our QP landed in its memory
        ibv_unimport_mr(theirs);

        // Deregistered here, the region is gone for the importer too.
        PCHECK_EQ(ibv_dereg_mr(own.mr), 0);
        own.mr = nullptr;
        PCHECK(peer.post(IBV_WR_RDMA_WRITE, 8, 0, 4096, 0) == 0);
        PCHECK_EQ(peer.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
        oob.barrier();
        return 0;
    };
    auto importer = [](Oob &oob) {
        const int fd = oob.recv_fd();
        const auto pd_handle = oob.get<uint32_t>();
        const auto mr_handle = oob.get<uint32_t>();
        const auto addr = oob.get<uint64_t>();
        ibv_context *ctx = ibv_import_device(fd);
        PCHECK(ctx);
        errno = 0;
        PCHECK(ibv_import_pd(ctx, pd_handle + 1000) == nullptr);
        PCHECK_EQ(errno, EINVAL);
        ibv_pd *pd = ibv_import_pd(ctx, pd_handle);
        PCHECK(pd && pd->handle == pd_handle);
        PCHECK(ibv_import_mr(pd, mr_handle + 1000) == nullptr);
        ibv_mr *mr = ibv_import_mr(pd, mr_handle);
        PCHECK(mr && uint64_t(uintptr_t(mr->addr)) == addr && mr->length == (1u << 20));
        // Its memory is not here: re-registering it is the owner's business.
        PCHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                               IBV_ACCESS_LOCAL_WRITE),
                  IBV_REREG_MR_ERR_INPUT);

        Endpoint ep;  // QP, CQ and region swapped for ones on the imported objects
        ibv_cq *cq = nullptr;
        ibv_qp *qp = rc_qp_on(ctx, pd, 16, unsigned(ep.opt.qp_access), cq);
        std::swap(ep.qp, qp);
        std::swap(ep.cq, cq);
        std::swap(ep.mr, mr);
        uint8_t *own_buf = ep.buf;
        ep.buf = reinterpret_cast<uint8_t *>(uintptr_t(addr));
        ep.exchange_and_connect(oob);

        oob.barrier();
        PCHECK(ep.post(IBV_WR_SEND, 3, 500000, 70000) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        ep.post_recv(4, 600000, 90000);
        oob.barrier();
        ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 90000u);
        oob.barrier();

        oob.barrier();
        PCHECK(ep.post(IBV_WR_RDMA_READ, 5, 700000, 50000, 700000) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        // The peer's word becomes 42; its old value (0) lands in the exporter's region.
        PCHECK(ep.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 6, 760000, 760000, 42, 0) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();

        Endpoint e2;  // a plain endpoint of ours, connected to the exporter's own QP
        e2.exchange_and_connect(oob);
        oob.barrier();
        std::vector<uint64_t> seen;
        for (int i = 0; i < kAdds; ++i) {
            PCHECK(e2.post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 11, 0, kWord, 1, 0) == 0);
            PCHECK_EQ(e2.wait_wc().status, IBV_WC_SUCCESS);
            uint64_t v;
            std::memcpy(&v, e2.buf, 8);
            seen.push_back(v);
        }
        oob.barrier();
        for (uint64_t v : seen) oob.put(v);

        std::vector<uint8_t> mine(65536, 0);
        ibv_mr *m2 = ibv_reg_mr(pd, mine.data(), mine.size(),
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(m2);
        oob.put(m2->handle);
        oob.put(uint64_t(uintptr_t(mine.data())));
        e2.peer.rkey = oob.get<uint32_t>();
        e2.peer.addr = uint64_t(uintptr_t(mine.data()));
        for (size_t i = 0; i < mine.size(); ++i) e2.buf[i] = uint8_t(i * 17 + 2);
        PCHECK(e2.post(IBV_WR_RDMA_WRITE, 12, 0, uint32_t(mine.size()), 0) == 0);
        PCHECK_EQ(e2.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(mine.data(), e2.buf, mine.size()) == 0);
        oob.barrier();

        oob.barrier();  // the exporter deregistered the region; its WRITE failed here
        PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
        ep.qp = qp;
        PCHECK_EQ(ibv_dereg_mr(m2), 0);
        std::swap(ep.mr, mr);
        ep.buf = own_buf;
        ibv_unimport_mr(mr);
        PCHECK_EQ(ibv_destroy_cq(ep.cq), 0);
        ep.cq = cq;
        ibv_unimport_pd(pd);
        PCHECK_EQ(ibv_close_device(ctx), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(exporter, importer));
}

// SPDX-License-Identifier: BSD-2-Clause
// SOFTRDMA_FAULTS between two processes: each injected fault is seen by the program the way
// hardware reports the real one (work completion status, async event, CM event and status).
// Each child sets the variable for itself before it first touches the library.
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

ibv_qp_init_attr qp_attr() {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 16;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return a;
}

// True if no event arrives on `ch` within `ms`.
bool no_event_for(rdma_event_channel *ch, int ms) {
    pollfd p{ch->fd, POLLIN, 0};
    return poll(&p, 1, ms) == 0;
}

// A connection through the CM on loopback with a QP on each side; the server posts `recvs`
// receives of 64 bytes before accepting. Each side calls the matching half.
struct CmSide {
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *id = nullptr;
    char buf[64 * 16] = {};
    ibv_mr *mr = nullptr;

    void make_qp() {
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        mr = ibv_reg_mr(id->pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
        PCHECK(mr);
    }
    void post_recv(int i) {
        ibv_sge s{reinterpret_cast<uintptr_t>(buf + 64 * i), 64, mr->lkey};
        ibv_recv_wr wr{}, *bad;
        wr.wr_id = uint64_t(i);
        wr.sg_list = &s;
        wr.num_sge = 1;
        PCHECK(ibv_post_recv(id->qp, &wr, &bad) == 0);
    }
    int post_send(uint64_t wr_id) {
        std::snprintf(buf, 64, "message %llu", static_cast<unsigned long long>(wr_id));
        ibv_sge s{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey};
        ibv_send_wr wr{}, *bad;
        wr.wr_id = wr_id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        return ibv_post_send(id->qp, &wr, &bad);
    }
    ibv_wc wait_wc(int timeout_ms = 10000) {
        ibv_wc wc{};
        const uint64_t end = now_ms() + uint64_t(timeout_ms);
        while (now_ms() < end)
            if (ibv_poll_cq(id->send_cq, 1, &wc) == 1 || ibv_poll_cq(id->recv_cq, 1, &wc) == 1)
                return wc;
        PCHECK(!"no completion in time");
        return wc;
    }
    // Server: listen, take the request, create the QP, post receives, accept.
    void serve(Oob &oob, int recvs, bool expect_established = true) {
        listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        id = ev->id;
        rdma_ack_cm_event(ev);
        make_qp();
        for (int i = 0; i < recvs; ++i) post_recv(i);
        PCHECK(rdma_accept(id, nullptr) == 0);
        if (expect_established) rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
    }
    // Client: resolve, create the QP, connect; returns the event the connect ended with.
    rdma_cm_event *dial(Oob &oob, uint8_t rnr_retry = 7) {
        id = resolved_id(ch, oob.get<uint16_t>());
        make_qp();
        rdma_conn_param p{};
        p.retry_count = 7;
        p.rnr_retry_count = rnr_retry;
        PCHECK(rdma_connect(id, &p) == 0);
        return next_event(ch);
    }
    // Client: dial, and the connect must end ESTABLISHED.
    void connect(Oob &oob, uint8_t rnr_retry = 7) {
        rdma_cm_event *ev = dial(oob, rnr_retry);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_ESTABLISHED);
        rdma_ack_cm_event(ev);
    }
};

}  // namespace

// The requester goes away while the passive side's accept reply is held back (cm_delay): the
// reply cannot be sent when its time comes, and the passive side gets CONNECT_ERROR
// (-ECONNRESET) for the id it accepted, with its QP in the error state; nothing hangs.
TEST(FaultInjection, HeldReplyToAVanishedRequester) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "cm_delay=300", 1);
        CmSide s;
        s.serve(oob, 1, false);          // accepted; the reply waits 300 ms
        PCHECK(oob.get<char>() == 'g');  // the requester has gone
        rdma_cm_event *ev = wait_event(s.ch, RDMA_CM_EVENT_CONNECT_ERROR, 5000);
        PCHECK(ev->id == s.id);
        PCHECK_EQ(ev->status, -ECONNRESET);
        rdma_ack_cm_event(ev);
        PCHECK_EQ(qp_state_of(s.id->qp), IBV_QPS_ERR);
        PCHECK(no_event_for(s.ch, 200));
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = connecting_id(ch, oob.get<uint16_t>(), qp_attr());
        usleep(50000);
        PCHECK(no_event_for(ch, 0));  // no answer yet: it is held
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);  // gives up: the connection closes
        oob.put<char>('g');
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// A plan with an unknown key injects nothing (rnr=1 alone would NAK every SEND) and says so,
// naming the item, in one line on stderr.
TEST(FaultInjection, MalformedPlanInjectsNothingAndSaysWhy) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "rnr=1,bogus=3", 1);
        char path[] = "/tmp/sr_faults_stderr.XXXXXX";
        const int fd = mkstemp(path);
        PCHECK(fd >= 0);
        unlink(path);
        const int saved = dup(2);
        PCHECK(dup2(fd, 2) == 2);  // the library's complaint lands in the file
        CmSide s;
        s.serve(oob, 1);
        const ibv_wc wc = s.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);  // received: no RNR was injected
        PCHECK_EQ(wc.opcode, IBV_WC_RECV);
        PCHECK(dup2(saved, 2) == 2);
        char text[512] = {};
        PCHECK(pread(fd, text, sizeof text - 1, 0) > 0);
        PCHECK(std::strstr(text, "SOFTRDMA_FAULTS: cannot use 'bogus=3'") != nullptr);
        PCHECK(std::strstr(text, "no faults injected") != nullptr);
        PCHECK(std::strchr(text, '\n') == text + std::strlen(text) - 1);  // one line
        close(fd);
        oob.barrier();
        return 0;
    };
    auto client = [](Oob &oob) {
        CmSide c;
        c.connect(oob, 0);  // rnr_retry 0: a single injected RNR NAK would fail the send
        PCHECK(c.post_send(1) == 0);
        PCHECK_EQ(c.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// rnr=1: every SEND finds "no receive posted". With rnr_retry 2 the sender gives up after
// three attempts with IBV_WC_RNR_RETRY_EXC_ERR, and its QP is in the error state.
TEST(FaultInjection, RnrNakExhaustsRnrRetry) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "rnr=1", 1);
        CmSide s;
        s.serve(oob, 4);
        oob.barrier();  // the sender saw its error
        // Nothing was received (the connection's end may have flushed the receives).
        ibv_wc wc;
        while (ibv_poll_cq(s.id->recv_cq, 1, &wc) == 1) PCHECK(wc.status != IBV_WC_SUCCESS);
        return 0;
    };
    auto client = [](Oob &oob) {
        CmSide c;
        c.connect(oob, 2);
        PCHECK(c.post_send(1) == 0);
        const ibv_wc wc = c.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
        PCHECK_EQ(wc.wr_id, 1u);
        PCHECK_EQ(qp_state_of(c.id->qp), IBV_QPS_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// rnr=0.5 with unlimited RNR retries: the NAKs cost time only; every message arrives once,
// in order.
TEST(FaultInjection, RnrNaksWithUnlimitedRetryDeliverEverything) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "seed=3,rnr=0.5", 1);
        CmSide s;
        s.serve(oob, 16);
        for (int i = 0; i < 40; ++i) {
            const ibv_wc wc = s.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            char want[64];
            std::snprintf(want, sizeof want, "message %d", i);
            PCHECK(std::strcmp(s.buf + 64 * wc.wr_id, want) == 0);
            s.post_recv(int(wc.wr_id));
        }
        oob.barrier();
        return 0;
    };
    auto client = [](Oob &oob) {
        CmSide c;
        c.connect(oob);
        for (int i = 0; i < 40; ++i) {  // one at a time: the send buffer is reused
            PCHECK(c.post_send(uint64_t(i)) == 0);
            const ibv_wc wc = c.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        }
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// reject=1: the requester sees REJECTED with IB's consumer-defined status, as after
// rdma_reject; the listening application never sees the request.
TEST(FaultInjection, RejectedRequest) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "reject=1", 1);
        CmSide s;
        listen_any(s.ch, oob);
        oob.barrier();  // the client saw REJECTED
        PCHECK(no_event_for(s.ch, 200));
        return 0;
    };
    auto client = [](Oob &oob) {
        CmSide c;
        rdma_cm_event *ev = c.dial(oob);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_REJECTED);
        PCHECK_EQ(ev->status, 28);  // IB_CM_REJ_CONSUMER_DEFINED
        rdma_ack_cm_event(ev);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// cm_delay=400: the accept's reply leaves 400 ms late; then the connection works.
TEST(FaultInjection, DelayedReply) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "cm_delay=400", 1);
        CmSide s;
        s.serve(oob, 1);
        const ibv_wc wc = s.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::strcmp(s.buf, "message 9") == 0);
        oob.barrier();  // stay until the client has its acknowledgement
        return 0;
    };
    auto client = [](Oob &oob) {
        CmSide c;
        const uint64_t t0 = now_ms();
        c.connect(oob);
        const uint64_t dt = now_ms() - t0;
        PCHECK(dt >= 400);
        PCHECK(dt < 5000);
        PCHECK(c.post_send(9) == 0);
        PCHECK_EQ(c.wait_wc().status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// cm_drop=1: the reply is lost for good, so both sides time out as IB's CM does when its
// retransmissions run out: UNREACHABLE with -ETIMEDOUT (CM timeout shortened for the test).
TEST(FaultInjection, LostReplyTimesOutOnBothSides) {
    auto server = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "cm_drop=1", 1);
        setenv("SOFTRDMA_CM_TIMEOUT_MS", "700", 1);
        CmSide s;
        s.serve(oob, 1, false);
        rdma_cm_event *ev = wait_event(s.ch, RDMA_CM_EVENT_UNREACHABLE, 5000);
        PCHECK_EQ(ev->status, -ETIMEDOUT);
        rdma_ack_cm_event(ev);
        return 0;
    };
    auto client = [](Oob &oob) {
        setenv("SOFTRDMA_CM_TIMEOUT_MS", "700", 1);
        CmSide c;
        const uint64_t t0 = now_ms();
        rdma_cm_event *ev = c.dial(oob);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_UNREACHABLE);
        PCHECK_EQ(ev->status, -ETIMEDOUT);
        PCHECK(now_ms() - t0 >= 600);
        rdma_ack_cm_event(ev);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// disconnect=1 on the client: its first completed send ends the connection as a peer's
// disconnect would. Both sides get DISCONNECTED; the client's later sends are flushed.
TEST(FaultInjection, SpuriousDisconnect) {
    auto server = [](Oob &oob) {
        CmSide s;
        s.serve(oob, 4);
        PCHECK_EQ(s.wait_wc().status, IBV_WC_SUCCESS);  // the one message that made it
        rdma_ack_cm_event(wait_event(s.ch, RDMA_CM_EVENT_DISCONNECTED));
        return 0;
    };
    auto client = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "disconnect=1", 1);
        CmSide c;
        c.connect(oob);
        PCHECK(c.post_send(1) == 0);
        PCHECK_EQ(c.wait_wc().status, IBV_WC_SUCCESS);
        rdma_ack_cm_event(wait_event(c.ch, RDMA_CM_EVENT_DISCONNECTED));
        PCHECK(c.post_send(2) == 0);  // a QP in the error state takes it, and flushes it
        PCHECK_EQ(c.wait_wc().status, IBV_WC_WR_FLUSH_ERR);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// qp_error_after=5 on a raw-verbs sender: five sends complete, then the QP fails: the async
// event IBV_EVENT_QP_FATAL names it, what is still queued is flushed, the state is ERR.
TEST(FaultInjection, QpErrorAfterN) {
    auto sender = [](Oob &oob) {
        setenv("SOFTRDMA_FAULTS", "qp_error_after=5", 1);
        EpOptions o;
        o.sig_all = true;
        Endpoint ep(o);
        ep.exchange_and_connect(oob);
        for (uint64_t i = 0; i < 5; ++i) {
            PCHECK(ep.post(IBV_WR_SEND, i, 0, 64) == 0);
            const ibv_wc wc = ep.wait_wc(5000);
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        }
        PCHECK(ep.post(IBV_WR_SEND, 5, 0, 64) == 0);
        const ibv_wc wc = ep.wait_wc(5000);
        PCHECK_EQ(wc.wr_id, 5u);
        PCHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        PCHECK_EQ(ep.qp_state(), IBV_QPS_ERR);
        ibv_async_event ae;
        PCHECK(ibv_get_async_event(ep.ctx, &ae) == 0);
        PCHECK_EQ(ae.event_type, IBV_EVENT_QP_FATAL);
        PCHECK(ae.element.qp == ep.qp);
        ibv_ack_async_event(&ae);
        oob.barrier();
        return 0;
    };
    auto receiver = [](Oob &oob) {
        Endpoint ep;
        for (uint64_t i = 0; i < 8; ++i) ep.post_recv(i, 64 * i, 64);
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 5; ++i) PCHECK_EQ(ep.wait_wc(5000).status, IBV_WC_SUCCESS);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(sender, receiver));
}

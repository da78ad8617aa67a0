// SPDX-License-Identifier: BSD-2-Clause
// The RDMA CM between two processes: events, private data (RoCE sizes), reject paths,
// sync mode, killed peers, migrate, destroy-waits-for-ack, non-blocking channels.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

// Ends each connection and frees its QP and id.
void close_all(const std::vector<rdma_cm_id *> &ids) {
    for (rdma_cm_id *id : ids) {
        rdma_disconnect(id);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
    }
}

// Once the peer is done too: ends the connections, then the listener (if any) and the channel.
int end_all(Oob &oob, rdma_event_channel *ch, const std::vector<rdma_cm_id *> &ids,
            rdma_cm_id *listener = nullptr) {
    oob.barrier();
    close_all(ids);
    if (listener) PCHECK(rdma_destroy_id(listener) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

// Server side: waits for the peer's disconnect, then frees the connection, listener, channel.
int end_on_disconnect(rdma_event_channel *ch, rdma_cm_id *c, rdma_cm_id *listener) {
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
    rdma_destroy_qp(c);
    PCHECK(rdma_destroy_id(c) == 0);
    PCHECK(rdma_destroy_id(listener) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

// Client side: disconnects, waits for the DISCONNECTED, frees the id and channel.
int hang_up(rdma_event_channel *ch, rdma_cm_id *id) {
    PCHECK(rdma_disconnect(id) == 0);
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
    rdma_destroy_qp(id);
    PCHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

ibv_qp_init_attr qp_attr() {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return a;
}

}  // namespace

TEST(Cm, ConnectAcceptDataAndDisconnectWithPrivateData) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        PCHECK(ch);
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        PCHECK(ev->listen_id == l);
        rdma_cm_id *c = ev->id;
        PCHECK(c != l && c->verbs);
        // As rdma-core: an id with a device has the device's PD before any QP (programs
        // create their own QP on id->pd).
        PCHECK(c->pd && c->pd->context == c->verbs);
        // RoCE reports the REQ's full 56 bytes, zero padded.
        PCHECK_EQ(ev->param.conn.private_data_len, 56);
        const auto *pd = static_cast<const uint8_t *>(ev->param.conn.private_data);
        PCHECK(std::memcmp(pd, "hello-req!", 10) == 0);
        for (int i = 10; i < 56; ++i) PCHECK_EQ(pd[i], 0);
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);  // NULL PD: the CM's default
        PCHECK(c->qp && c->pd && c->send_cq && c->recv_cq);
        char buf[64] = {};
        ibv_mr *mr = rdma_reg_msgs(c, buf, sizeof buf);
        PCHECK(mr);
        PCHECK(rdma_post_recv(c, nullptr, buf, sizeof buf, mr) == 0);
        rdma_conn_param p{};
        p.private_data = "hello-rep-twenty-byt";
        p.private_data_len = 20;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        PCHECK(rdma_accept(c, &p) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        ibv_wc wc;
        PCHECK(rdma_get_recv_comp(c, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::strcmp(buf, "data over the CM") == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        rdma_dereg_mr(mr);
        rdma_destroy_qp(c);
        PCHECK(rdma_destroy_id(c) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        PCHECK(id->pd && id->pd->context == id->verbs);  // set by the address resolution
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        rdma_conn_param p{};
        p.private_data = "hello-req!";
        p.private_data_len = 10;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
        PCHECK_EQ(ev->param.conn.private_data_len, 196);
        // The connection's retry counts are the QP's.
        ibv_qp_attr qa_now;
        ibv_qp_init_attr ia_now;
        PCHECK(ibv_query_qp(id->qp, &qa_now, IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, &ia_now) == 0);
        PCHECK_EQ(qa_now.qp_state, IBV_QPS_RTS);
        PCHECK_EQ(qa_now.retry_cnt, 7);
        PCHECK_EQ(qa_now.rnr_retry, 7);
        PCHECK(std::memcmp(ev->param.conn.private_data, "hello-rep-twenty-byt", 20) == 0);
        rdma_ack_cm_event(ev);
        char buf[64] = "data over the CM";
        ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
        PCHECK(rdma_post_send(id, nullptr, buf, sizeof buf, mr, IBV_SEND_SIGNALED) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(rdma_disconnect(id) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        // Then the IB CM's timewait ends (about 2 s with the default timeout).
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 5000));
        // After disconnect the QP is in ERR, as on RoCE.
        PCHECK_EQ(qp_state_of(id->qp), IBV_QPS_ERR);
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

TEST(Cm, RejectWithPrivateDataAndLimits) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *c = ev->id;
        rdma_ack_cm_event(ev);
        char big[200] = {};
        rdma_conn_param p{};
        p.private_data = big;
        p.private_data_len = 197;  // RoCE accept limit is 196
        errno = 0;
        PCHECK(rdma_accept(c, &p) == -1 && errno == EINVAL);
        errno = 0;
        PCHECK(rdma_reject(c, big, 149) == -1 && errno == EINVAL);  // limit 148
        PCHECK(rdma_reject(c, "go away", 8) == 0);
        oob.barrier();
        PCHECK(rdma_destroy_id(c) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        char big[60] = {};
        rdma_conn_param p{};
        p.private_data = big;
        p.private_data_len = 57;  // RoCE REQ limit is 56
        errno = 0;
        PCHECK(rdma_connect(id, &p) == -1 && errno == EINVAL);
        p.private_data_len = 56;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_REJECTED);
        PCHECK_EQ(ev->status, 28);  // IB_CM_REJ_CONSUMER_DEFINED
        PCHECK_EQ(ev->param.conn.private_data_len, 148);
        PCHECK(std::strcmp(static_cast<const char *>(ev->param.conn.private_data), "go away") == 0);
        rdma_ack_cm_event(ev);
        oob.barrier();
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// Connects a resolved id where nothing listens: REJECTED with the IB CM's "invalid service ID";
// then frees the id and its channel.
static int connect_refused(rdma_event_channel *ch, rdma_cm_id *id) {
    rdma_conn_param p = qp_less_param();
    PCHECK(rdma_connect(id, &p) == 0);
    rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_REJECTED);
    PCHECK_EQ(ev->status, 8);  // IB_CM_REJ_INVALID_SERVICE_ID
    rdma_ack_cm_event(ev);
    PCHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

TEST(Cm, NothingListensRejectedWithInvalidServiceId) {
    auto client = [](Oob &) {
        rdma_event_channel *ch = rdma_create_event_channel();
        // A port that was just free: bind and release one.
        rdma_cm_id *probe;
        PCHECK(rdma_create_id(ch, &probe, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a = loopback(0);
        PCHECK(rdma_bind_addr(probe, reinterpret_cast<sockaddr *>(&a)) == 0);
        const uint16_t port = ntohs(rdma_get_src_port(probe));
        PCHECK(rdma_destroy_id(probe) == 0);
        rdma_cm_id *id = resolved_id(ch, port);
        return connect_refused(ch, id);
    };
    EXPECT_PAIR_OK(run_pair(client, [](Oob &) { return 0; }));
}

// Dialing a free port from that same port: TCP connects the socket to itself (a simultaneous
// open), which the kernel can produce when it hands a just-released port out again. Nothing
// listens, so it is REJECTED like any refused connection, not a CONNECT_ERROR from reading
// our own request back.
TEST(Cm, ConnectionToItselfIsRefused) {
    auto client = [](Oob &) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id;
        PCHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a = loopback(0);
        PCHECK(rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) == 0);
        sockaddr_in d = loopback(ntohs(rdma_get_src_port(id)));
        PCHECK(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 2000) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
        PCHECK(rdma_resolve_route(id, 2000) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
        PCHECK_EQ(rdma_get_src_port(id), rdma_get_dst_port(id));
        return connect_refused(ch, id);
    };
    EXPECT_PAIR_OK(run_pair(client, [](Oob &) { return 0; }));
}

// rdma_destroy_id frees the listener's port before it returns, as the kernel's does: perftest -R
// accepts its control connection, destroys that listener and at once binds the same port
// again for its data connections, while the accepted connection lives on. Each round also
// checks at the kernel's level that nothing listens on the port any more.
TEST(Cm, DestroyedListenerFreesItsPortAtOnce) {
    constexpr int kRounds = 40;
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        const sockaddr_in a = loopback(ntohs(rdma_get_src_port(l)));
        std::vector<rdma_cm_id *> kept;
        for (int r = 0; r < kRounds; ++r) {
            kept.push_back(accepted_id(ch, qp_attr()));
            PCHECK(rdma_destroy_id(l) == 0);
            // A plain socket may listen on the port now: no listening socket is left behind.
            const int s = socket(AF_INET, SOCK_STREAM, 0);
            const int one = 1;
            PCHECK(setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
            PCHECK(bind(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
            PCHECK(::listen(s, 1) == 0);
            close(s);
            PCHECK(rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP) == 0);
            PCHECK(rdma_bind_addr(l, reinterpret_cast<sockaddr *>(const_cast<sockaddr_in *>(&a))) ==
                   0);
            PCHECK(rdma_listen(l, 4) == 0);
            oob.put<char>('l');  // listening again
        }
        return end_all(oob, ch, kept, l);
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        const uint16_t port = oob.get<uint16_t>();
        std::vector<rdma_cm_id *> ids;
        for (int r = 0; r < kRounds; ++r) {
            rdma_cm_id *id = connecting_id(ch, port, qp_attr());
            rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
            ids.push_back(id);
            PCHECK(oob.get<char>() == 'l');
        }
        return end_all(oob, ch, ids);
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// An id that rdma_resolve_addr bound leaves its port to the connect; rdma_get_src_port still
// answers the port the connection then comes from: asked before the connect (the socket takes
// one at once) or after it. The server sees each client's port as its peer's.
TEST(Cm, ResolvedIdsReportThePortTheirConnectionUses) {
    constexpr int kIds = 6;
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        std::vector<rdma_cm_id *> kept;
        for (int i = 0; i < kIds; ++i) {
            kept.push_back(accepted_id(ch, qp_attr()));
            oob.put<uint16_t>(ntohs(rdma_get_dst_port(kept.back())));
        }
        return end_all(oob, ch, kept, l);
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        const uint16_t port = oob.get<uint16_t>();
        std::vector<rdma_cm_id *> ids;
        std::vector<uint16_t> early;
        for (int i = 0; i < kIds; ++i) {
            rdma_cm_id *id = resolved_id(ch, port);
            const bool ask_first = i % 2 == 0;
            const uint16_t before = ask_first ? ntohs(rdma_get_src_port(id)) : 0;
            if (ask_first) PCHECK(before != 0);
            ibv_qp_init_attr qa = qp_attr();
            PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
            PCHECK(rdma_connect(id, nullptr) == 0);
            rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
            const uint16_t after = ntohs(rdma_get_src_port(id));
            const uint16_t seen = oob.get<uint16_t>();
            PCHECK(after != 0);
            PCHECK_EQ(after, seen);
            if (ask_first) PCHECK_EQ(before, after);
            // Another id cannot take that port while this one holds it (loopback counts as
            // a wildcard in the kernel's check: EADDRNOTAVAIL).
            rdma_cm_id *other;
            PCHECK(rdma_create_id(ch, &other, nullptr, RDMA_PS_TCP) == 0);
            sockaddr_in a = loopback(after);
            errno = 0;
            PCHECK(rdma_bind_addr(other, reinterpret_cast<sockaddr *>(&a)) == -1 &&
                   errno == EADDRNOTAVAIL);
            PCHECK(rdma_destroy_id(other) == 0);
            ids.push_back(id);
        }
        return end_all(oob, ch, ids);
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// The server is out of file descriptors when a connection comes: its listener stops looking
// (no busy loop on the socket that stays readable), tries again every 100 ms, and accepts
// once descriptors are free again.
TEST(Cm, ListenerOutOfDescriptorsWaitsWithoutSpinning) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        // A connection made and dropped first, so the listener and a handshake have run once:
        // the sanitizers check a type's vptr with a pipe the first time they meet it, and
        // without descriptors they report every object as invalid.
        {
            const int s = socket(AF_INET, SOCK_STREAM, 0);
            const sockaddr_in a = loopback(ntohs(rdma_get_src_port(l)));
            PCHECK(connect(s, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
            close(s);
            usleep(100000);  // accepted, then closed on its end of file
        }
        rlimit lim{};
        PCHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
        rlimit low = lim;
        low.rlim_cur = 512;
        PCHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
        std::vector<int> held;
        for (int fd; (fd = dup(0)) >= 0;) held.push_back(fd);
        PCHECK(errno == EMFILE && !held.empty());
        auto cpu_ms = [] {
            timespec t{};
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
            return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
        };
        oob.put<char>('x');  // exhausted: connect now
        (void)oob.get<char>();
        usleep(50000);  // the connection waits in the kernel's queue
        const double c0 = cpu_ms();
        usleep(400000);
        const double burnt = cpu_ms() - c0;
        if (burnt > 150) {
            fprintf(stderr, "the process used %.0f ms of CPU in 400 ms while out of fds\n", burnt);
            return 3;
        }
        for (int fd : held) close(fd);
        PCHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
        rdma_cm_id *c = accepted_id(ch, qp_attr());
        return end_on_disconnect(ch, c, l);
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        const uint16_t port = oob.get<uint16_t>();
        PCHECK(oob.get<char>() == 'x');
        rdma_cm_id *id = connecting_id(ch, port, qp_attr());
        oob.put<char>('c');
        rdma_cm_event *ev = next_event(ch, 10000);
        PCHECK(ev != nullptr);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_ESTABLISHED);
        rdma_ack_cm_event(ev);
        return hang_up(ch, id);
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// The connect goes out before anything listens (perftest -R re-creates its listener between
// connections): the refused attempts are retried quietly and the connection is made once the
// listener appears, well before the CM timeout.
TEST(Cm, ListenerAppearingAfterTheConnectIsFound) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        // Pick a free port, tell the client, and only listen on it 200 ms after its connect.
        rdma_cm_id *l;
        PCHECK(rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a = loopback(0);
        PCHECK(rdma_bind_addr(l, reinterpret_cast<sockaddr *>(&a)) == 0);
        oob.put<uint16_t>(ntohs(rdma_get_src_port(l)));
        (void)oob.get<char>();  // the client has called rdma_connect
        usleep(200000);
        PCHECK(rdma_listen(l, 4) == 0);
        rdma_cm_id *c = accepted_id(ch, qp_attr());
        oob.put<uint16_t>(ntohs(rdma_get_dst_port(c)));
        return end_on_disconnect(ch, c, l);
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        const uint64_t t0 = now_ms();
        PCHECK(rdma_connect(id, nullptr) == 0);
        oob.put<char>('c');
        rdma_cm_event *ev = next_event(ch, 5000);
        PCHECK(ev != nullptr);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_ESTABLISHED);
        rdma_ack_cm_event(ev);
        const uint64_t dt = now_ms() - t0;
        PCHECK(dt >= 150 && dt < 1000);
        // The refused attempts' ports are not this connection's: the one reported is.
        PCHECK_EQ(ntohs(rdma_get_src_port(id)), oob.get<uint16_t>());
        return hang_up(ch, id);
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// The peer process dies: the survivor sees DISCONNECTED within 2 s.
TEST(Cm, KilledPeerDisconnects) {
    auto survivor = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_id *c = accepted_id(ch, qp_attr());
        oob.put<char>('k');
        const uint64_t t0 = now_ms();
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED, 2000));
        PCHECK(now_ms() - t0 < 2000);
        rdma_destroy_qp(c);
        PCHECK(rdma_destroy_id(c) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        return 0;
    };
    auto victim = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        connecting_id(ch, oob.get<uint16_t>(), qp_attr());
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        (void)oob.get<char>();
        raise(SIGKILL);
        return 0;
    };
    const PairResult r = run_pair(survivor, victim);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.status_a, 0);
    EXPECT_EQ(r.status_b, 128 + SIGKILL);
}

// The passive side's ESTABLISHED follows the active side's RTU, which rdma-core sends while
// the active application takes its own ESTABLISHED: an active side that is slow to read its
// events holds the passive side's ESTABLISHED back (ucmatose's reject case relies on it), and
// an active side that dies before reading it leaves the passive side with REJECTED (28).
TEST(Cm, PassiveEstablishedFollowsTheActiveApplication) {
    constexpr uint64_t kHoldMs = 300;
    auto passive = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        for (int round = 0; round < 2; ++round) {
            rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
            rdma_cm_id *c = ev->id;
            rdma_ack_cm_event(ev);
            ibv_qp_init_attr qa = qp_attr();
            PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
            const uint64_t t0 = now_ms();
            PCHECK(rdma_accept(c, nullptr) == 0);
            if (round == 0) {
                rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
                const uint64_t waited = now_ms() - t0;
                std::fprintf(stderr, "passive ESTABLISHED %llu ms after accept\n",
                             (unsigned long long)waited);
                PCHECK(waited >= kHoldMs - 50);
                PCHECK(waited < kHoldMs + 2000);
            } else {
                ev = wait_event(ch, RDMA_CM_EVENT_REJECTED);
                PCHECK_EQ(ev->status, 28);
                rdma_ack_cm_event(ev);
            }
            rdma_destroy_qp(c);
            PCHECK(rdma_destroy_id(c) == 0);
            oob.put<char>('n');
        }
        PCHECK(rdma_destroy_id(l) == 0);
        return 0;
    };
    auto active = [](Oob &oob) {
        // The second connection comes from a process that dies before it reads ESTABLISHED;
        // forked now, before this one touches the library, and told the port by a pipe.
        int go[2];
        PCHECK(pipe(go) == 0);
        const pid_t pid = fork();
        PCHECK(pid >= 0);
        if (pid == 0) {
            uint16_t p2 = 0;
            PCHECK(read(go[0], &p2, sizeof p2) == sizeof p2);
            rdma_event_channel *ch2 = rdma_create_event_channel();
            rdma_cm_id *id2 = resolved_id(ch2, p2);
            ibv_qp_init_attr qa2 = qp_attr();
            PCHECK(rdma_create_qp(id2, nullptr, &qa2) == 0);
            PCHECK(rdma_connect(id2, nullptr) == 0);
            usleep(kHoldMs * 1000);
            _exit(0);
        }
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, port);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        PCHECK(rdma_connect(id, nullptr) == 0);
        usleep(kHoldMs * 1000);  // the reply is in; the application has not looked yet
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        (void)oob.get<char>();
        PCHECK(write(go[1], &port, sizeof port) == sizeof port);
        int status = 0;
        PCHECK(waitpid(pid, &status, 0) == pid);
        PCHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        (void)oob.get<char>();
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(passive, active));
}

// Synchronous ids (NULL channel) with rdma_create_ep / rdma_get_request, as rdma_server does.
TEST(Cm, SyncEndpoints) {
    auto server = [](Oob &oob) {
        rdma_addrinfo hints{}, *res;
        hints.ai_flags = RAI_PASSIVE;
        hints.ai_port_space = RDMA_PS_TCP;
        PCHECK(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res) == 0);
        ibv_qp_init_attr qa = qp_attr();
        rdma_cm_id *l;
        PCHECK(rdma_create_ep(&l, res, nullptr, &qa) == 0);
        rdma_freeaddrinfo(res);
        PCHECK(rdma_listen(l, 1) == 0);
        oob.put<uint16_t>(ntohs(rdma_get_src_port(l)));
        rdma_cm_id *c;
        PCHECK(rdma_get_request(l, &c) == 0);
        PCHECK(c->qp != nullptr);  // made from the saved qp_init_attr
        PCHECK(c->event && c->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
        char buf[16] = {};
        ibv_mr *mr = rdma_reg_msgs(c, buf, sizeof buf);
        PCHECK(rdma_post_recv(c, nullptr, buf, sizeof buf, mr) == 0);
        PCHECK(rdma_accept(c, nullptr) == 0);  // blocks until ESTABLISHED
        ibv_wc wc;
        PCHECK(rdma_get_recv_comp(c, &wc) == 1);
        PCHECK(std::strcmp(buf, "sync hello") == 0);
        PCHECK(rdma_disconnect(c) == 0);
        rdma_dereg_mr(mr);
        rdma_destroy_ep(c);
        // A second request is rejected: the sync caller sees ECONNREFUSED.
        PCHECK(rdma_get_request(l, &c) == 0);
        PCHECK(rdma_reject(c, nullptr, 0) == 0);
        oob.barrier();
        rdma_destroy_ep(c);
        rdma_destroy_ep(l);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        char service[8];
        std::snprintf(service, sizeof service, "%u", port);
        rdma_addrinfo hints{}, *res;
        hints.ai_port_space = RDMA_PS_TCP;
        PCHECK(rdma_getaddrinfo("127.0.0.1", service, &hints, &res) == 0);
        PCHECK_EQ(res->ai_qp_type, IBV_QPT_RC);
        ibv_qp_init_attr qa = qp_attr();
        rdma_cm_id *id;
        PCHECK(rdma_create_ep(&id, res, nullptr, &qa) == 0);
        PCHECK(rdma_connect(id, nullptr) == 0);  // blocks until ESTABLISHED
        char buf[16] = "sync hello";
        ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
        PCHECK(rdma_post_send(id, nullptr, buf, sizeof buf, mr, IBV_SEND_SIGNALED) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        rdma_dereg_mr(mr);
        rdma_destroy_ep(id);
        rdma_cm_id *id2;
        PCHECK(rdma_create_ep(&id2, res, nullptr, nullptr) == 0);
        errno = 0;
        PCHECK(rdma_connect(id2, nullptr) == -1);  // no QP and no parameters, as in rdma-core
        PCHECK_EQ(errno, EINVAL);
        rdma_conn_param cp = qp_less_param();
        PCHECK(rdma_connect(id2, &cp) == -1);
        PCHECK_EQ(errno, ECONNREFUSED);
        PCHECK(id2->event && id2->event->event == RDMA_CM_EVENT_REJECTED);
        oob.barrier();
        rdma_destroy_ep(id2);
        rdma_freeaddrinfo(res);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// One process: state errors, options, non-blocking channels, destroy waits for acks, migrate.
TEST(CmLocal, StateErrorsOptionsChannelsAndAcks) {
    auto body = [](Oob &) {
        rdma_event_channel *ch = rdma_create_event_channel();
        PCHECK(ch && ch->fd >= 0);
        PCHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
        rdma_cm_event *ev;
        errno = 0;
        PCHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
        rdma_cm_id *id;
        PCHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
        // Wrong state.
        errno = 0;
        PCHECK(rdma_resolve_route(id, 100) == -1 && errno == EINVAL);
        PCHECK(rdma_connect(id, nullptr) == -1 && errno == EINVAL);
        // Options.
        int one = 1;
        uint8_t tos = 0x20;
        PCHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one) ==
               0);
        PCHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1) == 0);
        errno = 0;
        PCHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof one) == -1 &&
               errno == EINVAL);
        errno = 0;
        PCHECK(rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof one) == -1 && errno == ENOSYS);
        // Binding: the same port twice without REUSEADDR on the second.
        sockaddr_in a = loopback(0);
        PCHECK(rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) == 0);
        a.sin_port = rdma_get_src_port(id);
        rdma_cm_id *id2;
        PCHECK(rdma_create_id(ch, &id2, nullptr, RDMA_PS_TCP) == 0);
        errno = 0;
        PCHECK(rdma_bind_addr(id2, reinterpret_cast<sockaddr *>(&a)) == -1 &&
               errno == EADDRNOTAVAIL);                                      // loopback is "any"
        PCHECK(rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) == -1);  // bound already
        // IPv6 wildcard with port 0 gets a port.
        rdma_cm_id *id6;
        PCHECK(rdma_create_id(ch, &id6, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        PCHECK(rdma_bind_addr(id6, reinterpret_cast<sockaddr *>(&a6)) == 0);
        PCHECK(rdma_get_src_port(id6) != 0);
        // Resolve to ourselves: the event arrives, readable through epoll.
        const int ep = epoll_create1(0);
        epoll_event ee{};
        ee.events = EPOLLIN;
        PCHECK(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ee) == 0);
        sockaddr_in d = loopback(9999);
        PCHECK(rdma_resolve_addr(id2, nullptr, reinterpret_cast<sockaddr *>(&d), 1000) == 0);
        epoll_event out;
        PCHECK(epoll_wait(ep, &out, 1, 5000) == 1);
        PCHECK(rdma_get_cm_event(ch, &ev) == 0);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
        PCHECK(ev->id == id2);
        // Destroy waits until the application acks the event it holds.
        std::thread acker([ev] {
            usleep(150000);
            rdma_ack_cm_event(ev);
        });
        const uint64_t t0 = now_ms();
        PCHECK(rdma_destroy_id(id2) == 0);
        PCHECK(now_ms() - t0 >= 140);
        acker.join();
        // Migrate to another channel: later events arrive there.
        rdma_event_channel *ch2 = rdma_create_event_channel();
        PCHECK(rdma_migrate_id(id, ch2) == 0);
        PCHECK(id->channel == ch2);
        PCHECK(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 1000) == 0);
        pollfd p{ch2->fd, POLLIN, 0};
        PCHECK(poll(&p, 1, 5000) == 1);
        PCHECK(rdma_get_cm_event(ch2, &ev) == 0);
        PCHECK_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
        rdma_ack_cm_event(ev);
        PCHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);  // nothing on the old one
        for (const char *s : {"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_TIMEWAIT_EXIT"}) {
            bool found = false;
            for (int t = RDMA_CM_EVENT_ADDR_RESOLVED; t <= RDMA_CM_EVENT_TIMEWAIT_EXIT; ++t)
                found |= std::strcmp(rdma_event_str(rdma_cm_event_type(t)), s) == 0;
            PCHECK(found);
        }
        PCHECK(rdma_destroy_id(id) == 0);
        PCHECK(rdma_destroy_id(id6) == 0);
        close(ep);
        rdma_destroy_event_channel(ch2);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(body, [](Oob &) { return 0; }));
}

// The rdma_verbs.h helpers for one-sided operations, with the target's buffer advertised in
// the accept's private data.
TEST(Cm, RdmaVerbsReadWriteHelpers) {
    struct Adv {
        uint64_t addr;
        uint32_t rkey;
    };
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *c = ev->id;
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
        static char buf[4096];
        std::strcpy(buf + 2048, "readable by the peer");
        ibv_mr *mr = rdma_reg_write(c, buf, sizeof buf);
        PCHECK(mr);
        PCHECK(ibv_dereg_mr(mr) == 0);
        mr = ibv_reg_mr(c->pd, buf, sizeof buf,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        Adv adv{uint64_t(uintptr_t(buf)), mr->rkey};
        rdma_conn_param p{};
        p.private_data = &adv;
        p.private_data_len = sizeof adv;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        PCHECK(rdma_accept(c, &p) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        PCHECK(std::strcmp(buf, "written by the peer") == 0);
        ibv_dereg_mr(mr);
        rdma_destroy_qp(c);
        PCHECK(rdma_destroy_id(c) == 0);
        PCHECK(rdma_destroy_id(l) == 0);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        rdma_conn_param p{};
        p.responder_resources = 1;
        p.initiator_depth = 1;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
        Adv adv;
        std::memcpy(&adv, ev->param.conn.private_data, sizeof adv);
        rdma_ack_cm_event(ev);
        char buf[64] = "written by the peer";
        ibv_mr *mr = rdma_reg_read(id, buf, sizeof buf);  // read access is a superset here
        ibv_dereg_mr(mr);
        mr = rdma_reg_msgs(id, buf, sizeof buf);
        PCHECK(rdma_post_write(id, nullptr, buf, 20, mr, IBV_SEND_SIGNALED, adv.addr, adv.rkey) ==
               0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        std::memset(buf, 0, sizeof buf);
        PCHECK(rdma_post_read(id, nullptr, buf, 21, mr, IBV_SEND_SIGNALED, adv.addr + 2048,
                              adv.rkey) == 0);
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::strcmp(buf, "readable by the peer") == 0);
        PCHECK(rdma_disconnect(id) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        PCHECK(rdma_destroy_id(id) == 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

TEST(CmLocal, DevicesAndAddrinfo) {
    auto body = [](Oob &) {
        int n = 0;
        ibv_context **devs = rdma_get_devices(&n);
        PCHECK(devs && n >= 1 && devs[n] == nullptr);
        rdma_free_devices(devs);
        rdma_addrinfo hints{}, *res;
        hints.ai_flags = RAI_NUMERICHOST;
        hints.ai_port_space = RDMA_PS_UDP;
        PCHECK(rdma_getaddrinfo("127.0.0.1", "7", &hints, &res) == 0);
        PCHECK_EQ(res->ai_qp_type, IBV_QPT_UD);
        PCHECK_EQ(res->ai_port_space, RDMA_PS_UDP);
        PCHECK(res->ai_dst_addr && res->ai_dst_len == sizeof(sockaddr_in));
        rdma_freeaddrinfo(res);
        hints = {};
        hints.ai_flags = RAI_NUMERICHOST;
        errno = 0;
        PCHECK(rdma_getaddrinfo("not-a-number", "7", &hints, &res) < 0);  // EAI code
        PCHECK(errno != 0);  // and errno says so (perror must not print "Success")
        errno = 0;
        PCHECK(rdma_getaddrinfo(nullptr, nullptr, nullptr, &res) == -1);
        PCHECK_EQ(errno, EINVAL);
        // Nothing to resolve: the hints' own addresses come back (libfabric's passive side).
        sockaddr_in src = loopback(7001);
        hints = {};
        hints.ai_flags = RAI_PASSIVE;
        hints.ai_family = AF_INET;
        hints.ai_port_space = RDMA_PS_TCP;
        hints.ai_qp_type = IBV_QPT_RC;
        hints.ai_src_addr = reinterpret_cast<sockaddr *>(&src);
        hints.ai_src_len = sizeof src;
        res = nullptr;
        PCHECK(rdma_getaddrinfo(nullptr, nullptr, &hints, &res) == 0);
        PCHECK(res && res->ai_src_addr != hints.ai_src_addr && !res->ai_dst_addr);
        PCHECK(res->ai_src_len == sizeof src && !std::memcmp(res->ai_src_addr, &src, sizeof src));
        PCHECK_EQ(res->ai_flags, RAI_PASSIVE);
        PCHECK_EQ(res->ai_family, AF_INET);
        PCHECK_EQ(res->ai_qp_type, IBV_QPT_RC);
        rdma_freeaddrinfo(res);
        hints = {};
        hints.ai_flags = RAI_PASSIVE;
        PCHECK(rdma_getaddrinfo(nullptr, "7000", &hints, &res) == 0);
        PCHECK(res->ai_src_addr && !res->ai_dst_addr);
        PCHECK_EQ(res->ai_port_space, RDMA_PS_TCP);
        rdma_freeaddrinfo(res);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(body, [](Oob &) { return 0; }));
}

// responder_resources negotiated at accept is what the responder enforces: 0 means no READ.
TEST(Cm, ReadNeedsResponderResources) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *c = ev->id;
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
        static char buf[64] = "secret";
        ibv_mr *mr =
            ibv_reg_mr(c->pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
        uint64_t adv[2] = {uint64_t(uintptr_t(buf)), mr->rkey};
        rdma_conn_param p{};
        p.private_data = adv;
        p.private_data_len = sizeof adv;
        p.responder_resources = 0;  // this side serves no READs
        p.initiator_depth = 1;
        PCHECK(rdma_accept(c, &p) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        ibv_dereg_mr(mr);
        rdma_destroy_qp(c);
        rdma_destroy_id(c);
        rdma_destroy_id(l);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        rdma_conn_param p{};
        p.responder_resources = 1;
        p.initiator_depth = 1;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
        uint64_t adv[2];
        std::memcpy(adv, ev->param.conn.private_data, sizeof adv);
        rdma_ack_cm_event(ev);
        char buf[64] = {};
        ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
        PCHECK(rdma_post_read(id, nullptr, buf, 6, mr, IBV_SEND_SIGNALED, adv[0],
                              uint32_t(adv[1])) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(id, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
        PCHECK_EQ(buf[0], 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));  // the responder ended it
        rdma_dereg_mr(mr);
        rdma_destroy_qp(id);
        rdma_destroy_id(id);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// rdma_connect without parameters asks for the device's READ depths (rdma-core's 0xFF), so the
// passive side may READ from the active one; an explicit depth above the device's is refused.
TEST(Cm, ConnectWithoutParametersServesReads) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *c = ev->id;
        // Seen from here: the requester's initiator depth is what we must serve, and the
        // other way round; both are the device's (16) as no parameters were given.
        PCHECK_EQ(ev->param.conn.responder_resources, 16);
        PCHECK_EQ(ev->param.conn.initiator_depth, 16);
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
        rdma_conn_param p{};
        p.responder_resources = RDMA_MAX_RESP_RES;
        p.initiator_depth = RDMA_MAX_INIT_DEPTH;
        PCHECK(rdma_accept(c, &p) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        const auto addr = oob.get<uint64_t>();
        const auto rkey = oob.get<uint32_t>();
        char buf[16] = {};
        ibv_mr *mr = rdma_reg_msgs(c, buf, sizeof buf);
        PCHECK(rdma_post_read(c, nullptr, buf, 9, mr, IBV_SEND_SIGNALED, addr, rkey) == 0);
        ibv_wc wc;
        PCHECK(rdma_get_send_comp(c, &wc) == 1);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(std::memcmp(buf, "read me!", 9) == 0);
        oob.barrier();
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        rdma_dereg_mr(mr);
        rdma_destroy_qp(c);
        rdma_destroy_id(c);
        rdma_destroy_id(l);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        rdma_conn_param too_deep = qp_less_param();
        too_deep.responder_resources = 17;
        errno = 0;
        PCHECK(rdma_connect(id, &too_deep) == -1);
        PCHECK_EQ(errno, EINVAL);
        too_deep = qp_less_param();
        too_deep.initiator_depth = 17;
        PCHECK(rdma_connect(id, &too_deep) == -1);
        PCHECK(rdma_connect(id, nullptr) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        static char buf[16] = "read me!";
        ibv_mr *mr =
            ibv_reg_mr(id->pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
        oob.put<uint64_t>(uintptr_t(buf));
        oob.put<uint32_t>(mr->rkey);
        oob.barrier();  // the server has read
        PCHECK(rdma_disconnect(id) == 0);
        ibv_dereg_mr(mr);
        rdma_destroy_qp(id);
        rdma_destroy_id(id);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// No QP on the active side: CONNECT_RESPONSE; the application's own QP, driven with
// rdma_init_qp_attr, then completes the connection with rdma_establish (no event).
TEST(Cm, ConnectResponseWithApplicationQp) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l = listen_any(ch, oob);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
        rdma_cm_id *c = ev->id;
        rdma_ack_cm_event(ev);
        ibv_qp_init_attr qa = qp_attr();
        PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
        char buf[32] = {};
        ibv_mr *mr = rdma_reg_msgs(c, buf, sizeof buf);
        PCHECK(rdma_post_recv(c, nullptr, buf, sizeof buf, mr) == 0);
        PCHECK(rdma_accept(c, nullptr) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
        ibv_wc wc;
        PCHECK(rdma_get_recv_comp(c, &wc) == 1);
        PCHECK(std::strcmp(buf, "own qp") == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        rdma_dereg_mr(mr);
        rdma_destroy_qp(c);
        rdma_destroy_id(c);
        rdma_destroy_id(l);
        return 0;
    };
    auto client = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *id = resolved_id(ch, oob.get<uint16_t>());
        ibv_pd *pd = ibv_alloc_pd(id->verbs);
        ibv_cq *cq = ibv_create_cq(id->verbs, 8, nullptr, nullptr, 0);
        ibv_qp_init_attr qa = qp_attr();
        qa.send_cq = qa.recv_cq = cq;
        ibv_qp *qp = ibv_create_qp(pd, &qa);
        PCHECK(pd && cq && qp);
        rdma_conn_param cp = qp_less_param(qp->qp_num);
        PCHECK(rdma_connect(id, &cp) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
        PCHECK(rdma_establish(id) == -1 && errno == EINVAL);  // QP not ready yet
        for (ibv_qp_state st : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
            ibv_qp_attr a{};
            int mask = 0;
            a.qp_state = st;
            PCHECK(rdma_init_qp_attr(id, &a, &mask) == 0);
            PCHECK(ibv_modify_qp(qp, &a, mask) == 0);
        }
        PCHECK(rdma_establish(id) == 0);
        pollfd p{ch->fd, POLLIN, 0};
        PCHECK_EQ(poll(&p, 1, 100), 0);  // rdma_establish produces no event
        char buf[32] = "own qp";
        ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
        ibv_sge sge{uint64_t(uintptr_t(buf)), 7, mr->lkey};
        ibv_send_wr wr{}, *bad;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        PCHECK(ibv_post_send(qp, &wr, &bad) == 0);
        ibv_wc wc;
        const uint64_t t0 = now_ms();
        while (ibv_poll_cq(cq, 1, &wc) == 0) PCHECK(now_ms() - t0 < 10000);
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK(rdma_disconnect(id) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        ibv_dereg_mr(mr);
        ibv_destroy_qp(qp);
        ibv_destroy_cq(cq);
        ibv_dealloc_pd(pd);
        rdma_destroy_id(id);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// rping's teardown: the main thread destroys the channel while its CM thread is on its way
// back into rdma_get_cm_event. The late call must block (as it would have a moment earlier),
// not fail with a stray errno or read freed memory.
TEST(Cm, LateReaderOfDestroyedChannelBlocks) {
    auto side = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        PCHECK(ch);
        rdma_destroy_event_channel(ch);
        std::atomic<bool> returned{false};
        std::thread late([&] {
            rdma_cm_event *ev = nullptr;
            rdma_get_cm_event(ch, &ev);
            returned = true;
        });
        late.detach();
        usleep(300 * 1000);
        PCHECK(!returned.load());
        oob.barrier();
        _exit(0);  // the blocked thread goes with the process, as in rping
        return 0;
    };
    auto other = [](Oob &oob) {
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(side, other));
}

// Dual stack: 0.0.0.0:p and [::]:p on two ids both bind when the IPv6 one is AFONLY (the
// kernel's rule; IPv4 ids are AF-only by default), and each takes its own family's requests.
TEST(Cm, DualStackListenersShareAPort) {
    auto server = [](Oob &oob) {
        rdma_event_channel *ch = rdma_create_event_channel();
        rdma_cm_id *l4, *l6, *l6_any;
        PCHECK(rdma_create_id(ch, &l4, nullptr, RDMA_PS_TCP) == 0);
        PCHECK(rdma_create_id(ch, &l6, nullptr, RDMA_PS_TCP) == 0);
        PCHECK(rdma_create_id(ch, &l6_any, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in a4{};
        a4.sin_family = AF_INET;
        PCHECK(rdma_bind_addr(l4, reinterpret_cast<sockaddr *>(&a4)) == 0);
        const uint16_t port = rdma_get_src_port(l4);
        // Without AFONLY an IPv6 wildcard covers IPv4 too: refused as the kernel does.
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = port;
        int zero = 0, one = 1;
        PCHECK(rdma_set_option(l6_any, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &zero, sizeof zero) ==
               0);
        errno = 0;
        PCHECK(rdma_bind_addr(l6_any, reinterpret_cast<sockaddr *>(&a6)) == -1);
        PCHECK_EQ(errno, EADDRNOTAVAIL);
        PCHECK(rdma_set_option(l6, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof one) == 0);
        PCHECK(rdma_bind_addr(l6, reinterpret_cast<sockaddr *>(&a6)) == 0);
        PCHECK(rdma_listen(l4, 4) == 0);
        PCHECK(rdma_listen(l6, 4) == 0);
        oob.put<uint16_t>(ntohs(port));
        for (int i = 0; i < 2; ++i) {  // the client dials IPv4, then IPv6
            rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
            PCHECK(ev->listen_id == (i == 0 ? l4 : l6));
            PCHECK_EQ(rdma_get_local_addr(ev->id)->sa_family, i == 0 ? AF_INET : AF_INET6);
            PCHECK(rdma_reject(ev->id, nullptr, 0) == 0);
            rdma_cm_id *child = ev->id;
            rdma_ack_cm_event(ev);
            rdma_destroy_id(child);
            oob.barrier();
        }
        rdma_destroy_id(l6_any);
        rdma_destroy_id(l6);
        rdma_destroy_id(l4);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        sockaddr_in6 d6{};
        d6.sin6_family = AF_INET6;
        d6.sin6_addr = in6addr_loopback;
        d6.sin6_port = htons(port);
        rdma_cm_id *ids[2] = {resolved_id(ch, port),
                              resolved_id(ch, reinterpret_cast<const sockaddr *>(&d6))};
        for (rdma_cm_id *id : ids) {
            rdma_conn_param p = qp_less_param();
            PCHECK(rdma_connect(id, &p) == 0);
            rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_REJECTED));
            oob.barrier();
            rdma_destroy_id(id);
        }
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// A sync id (NULL channel) keeps its last event in id->event; moving it to a channel acks that
// event instead of waiting for an ack nobody will give (libfabric's verbs provider does this
// after a blocking rdma_resolve_addr).
TEST(CmLocal, MigratingASyncIdAcksItsHeldEvent) {
    auto body = [](Oob &) {
        rdma_cm_id *id;
        PCHECK(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) == 0);
        sockaddr_in dst = loopback(7);
        PCHECK(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&dst), 2000) == 0);
        PCHECK(id->event && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED);
        rdma_event_channel *ch = rdma_create_event_channel();
        auto done = std::async(std::launch::async, [&] { return rdma_migrate_id(id, ch); });
        PCHECK(done.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
        PCHECK_EQ(done.get(), 0);
        PCHECK(id->channel == ch && id->event == nullptr);
        // Events now arrive on the new channel.
        PCHECK(rdma_resolve_route(id, 2000) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
        PCHECK(rdma_destroy_id(id) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(body, [](Oob &) { return 0; }));
}

// The RDMA port space with many ids: each bound id holds its port against every other id,
// and gives it back when it is destroyed (the reservations are filed by port).
TEST(CmLocal, ManyBoundIdsHoldAndReleaseTheirPorts) {
    auto body = [](Oob &) {
        constexpr int kIds = 600;
        rdma_event_channel *ch = rdma_create_event_channel();
        PCHECK(ch != nullptr);
        std::vector<rdma_cm_id *> ids(kIds);
        std::vector<uint16_t> ports(kIds);
        for (int i = 0; i < kIds; ++i) {
            PCHECK(rdma_create_id(ch, &ids[i], nullptr, RDMA_PS_TCP) == 0);
            sockaddr_in a = loopback(0);
            PCHECK(rdma_bind_addr(ids[i], reinterpret_cast<sockaddr *>(&a)) == 0);
            ports[i] = ntohs(rdma_get_src_port(ids[i]));
            PCHECK(ports[i] != 0);
        }
        rdma_cm_id *other;
        PCHECK(rdma_create_id(ch, &other, nullptr, RDMA_PS_TCP) == 0);
        for (int i = 0; i < kIds; i += 7) {
            sockaddr_in a = loopback(ports[i]);
            errno = 0;
            PCHECK(rdma_bind_addr(other, reinterpret_cast<sockaddr *>(&a)) == -1 &&
                   errno == EADDRNOTAVAIL);
        }
        // Another port space does not collide.
        rdma_cm_id *udp;
        PCHECK(rdma_create_id(ch, &udp, nullptr, RDMA_PS_UDP) == 0);
        sockaddr_in u = loopback(ports[0]);
        PCHECK(rdma_bind_addr(udp, reinterpret_cast<sockaddr *>(&u)) == 0);
        PCHECK(rdma_destroy_id(udp) == 0);
        for (int i = 0; i < kIds; ++i) PCHECK(rdma_destroy_id(ids[i]) == 0);
        // Every port is free again: one id after another takes them all back.
        for (int i = 0; i < kIds; i += 7) {
            rdma_cm_id *again;
            PCHECK(rdma_create_id(ch, &again, nullptr, RDMA_PS_TCP) == 0);
            sockaddr_in a = loopback(ports[i]);
            PCHECK(rdma_bind_addr(again, reinterpret_cast<sockaddr *>(&a)) == 0);
            PCHECK(rdma_destroy_id(again) == 0);
        }
        PCHECK(rdma_destroy_id(other) == 0);
        rdma_destroy_event_channel(ch);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(body, [](Oob &) { return 0; }));
}

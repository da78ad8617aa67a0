// SPDX-License-Identifier: BSD-2-Clause
// Prints the CM events an id bound to <ip>:<port> receives while the test script changes the
// interface under it (run inside a network namespace by cm_device_events.sh).
#include <arpa/inet.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <ctime>

// A new id of `ps` on a new channel, and <ip>:<port> as its address. 0, or the exit code
// (3: no id, 4: bad address).
static int open_id(rdma_port_space ps, const char *ip, int port, rdma_event_channel *&ch,
                   rdma_cm_id *&id, sockaddr_in &addr) {
    ch = rdma_create_event_channel();
    if (!ch || rdma_create_id(ch, &id, nullptr, ps)) return 3;
    addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    return inet_pton(AF_INET, ip, &addr.sin_addr) == 1 ? 0 : 4;
}

// `resolve <ip> <timeout_ms>`: prints the outcome of rdma_resolve_addr and how long it took.
static int resolve(const char *ip, int timeout_ms) {
    rdma_event_channel *ch;
    rdma_cm_id *id;
    sockaddr_in d;
    if (int e = open_id(RDMA_PS_TCP, ip, 7000, ch, id, d)) return e;
    timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), timeout_ms)) {
        std::printf("CALL_ERROR %d\n", errno);
        return 0;
    }
    rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev)) return 6;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    std::printf("EVENT %s %d after %ld ms\n", rdma_event_str(ev->event), ev->status, ms);
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}

// `connect <ip> <port>`: resolves, connects, prints the event the connect ends with.
static int connect_to(const char *ip, int port) {
    rdma_event_channel *ch;
    rdma_cm_id *id;
    sockaddr_in d;
    if (int e = open_id(RDMA_PS_TCP, ip, port, ch, id, d)) return e;
    rdma_cm_event *ev;
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 2000) ||
        rdma_get_cm_event(ch, &ev))
        return 5;
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, 2000) || rdma_get_cm_event(ch, &ev)) return 6;
    rdma_ack_cm_event(ev);
    rdma_conn_param p{};  // no QP: rdma-core needs parameters
    p.responder_resources = p.initiator_depth = 1;
    if (rdma_connect(id, &p) || rdma_get_cm_event(ch, &ev)) return 7;
    std::printf("EVENT %s %d\n", rdma_event_str(ev->event), ev->status);
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}

// `ud-listen <ip> <port> <n>`: answers n SIDR-style requests of RDMA_PS_UDP ids, each with a
// UD QP, stays 3 s more (the library answers a retransmitted request again: the last reply
// may be lost too), then exits 0 (or 7 after ~60 s without them).
static int ud_listen(const char *ip, int port, int n) {
    rdma_event_channel *ch;
    rdma_cm_id *id;
    sockaddr_in a;
    if (int e = open_id(RDMA_PS_UDP, ip, port, ch, id, a)) return e;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) || rdma_listen(id, 8)) return 5;
    std::printf("READY\n");
    std::fflush(stdout);
    int answered = 0, linger = 30;  // polls of 100 ms after the n-th
    for (int i = 0; i < 600 && (answered < n || linger-- > 0); ++i) {
        pollfd p{ch->fd, POLLIN, 0};
        if (poll(&p, 1, 100) != 1) continue;
        rdma_cm_event *ev;
        if (rdma_get_cm_event(ch, &ev)) return 6;
        if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            ibv_qp_init_attr qa{};
            qa.qp_type = IBV_QPT_UD;
            qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
            qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
            if (rdma_create_qp(ev->id, nullptr, &qa) || rdma_accept(ev->id, nullptr)) return 6;
            ++answered;  // the id stays: a retransmitted request must be answered again
        }
        rdma_ack_cm_event(ev);
    }
    return answered == n ? 0 : 7;
}

// `ud-connect <ip> <port>`: resolves an RDMA_PS_UDP id to a UD listener and prints the event
// the request ends with and how long address, route and request took together.
static int ud_connect(const char *ip, int port) {
    rdma_event_channel *ch;
    rdma_cm_id *id;
    sockaddr_in d;
    if (int e = open_id(RDMA_PS_UDP, ip, port, ch, id, d)) return e;
    timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rdma_cm_event *ev;
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 5000) ||
        rdma_get_cm_event(ch, &ev))
        return 5;
    if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
        std::printf("EVENT %s %d\n", rdma_event_str(ev->event), ev->status);
        return 0;
    }
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, 2000) || rdma_get_cm_event(ch, &ev)) return 6;
    rdma_ack_cm_event(ev);
    rdma_conn_param p{};
    if (rdma_connect(id, &p) || rdma_get_cm_event(ch, &ev)) return 7;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    std::printf("EVENT %s %d after %ld ms\n", rdma_event_str(ev->event), ev->status, ms);
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && std::strcmp(argv[1], "resolve") == 0)
        return resolve(argv[2], std::atoi(argv[3]));
    if (argc == 4 && std::strcmp(argv[1], "connect") == 0)
        return connect_to(argv[2], std::atoi(argv[3]));
    if (argc == 5 && std::strcmp(argv[1], "ud-listen") == 0)
        return ud_listen(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
    if (argc == 4 && std::strcmp(argv[1], "ud-connect") == 0)
        return ud_connect(argv[2], std::atoi(argv[3]));
    if (argc != 3) return 2;
    rdma_event_channel *ch;
    rdma_cm_id *id;
    sockaddr_in a;
    if (int e = open_id(RDMA_PS_TCP, argv[1], std::atoi(argv[2]), ch, id, a)) return e;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&a)) || rdma_listen(id, 1)) {
        std::perror("bind/listen");
        return 5;
    }
    std::printf("READY %s\n", ibv_get_device_name(id->verbs->device));
    std::fflush(stdout);
    for (int i = 0; i < 200; ++i) {  // at most ~20 s
        pollfd p{ch->fd, POLLIN, 0};
        if (poll(&p, 1, 100) != 1) continue;
        rdma_cm_event *ev;
        if (rdma_get_cm_event(ch, &ev)) return 6;
        const rdma_cm_event_type t = ev->event;
        std::printf("EVENT %s %d\n", rdma_event_str(t), ev->status);
        std::fflush(stdout);
        rdma_ack_cm_event(ev);
        if (t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            rdma_destroy_id(id);
            rdma_destroy_event_channel(ch);
            return 0;
        }
    }
    return 7;
}

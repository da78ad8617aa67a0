// SPDX-License-Identifier: BSD-2-Clause
#include "process/cm_helpers.h"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>

namespace sr_test {

rdma_cm_event *next_event(rdma_event_channel *ch, int timeout_ms) {
    pollfd p{ch->fd, POLLIN, 0};
    PCHECK(poll(&p, 1, timeout_ms) == 1);
    rdma_cm_event *ev = nullptr;
    PCHECK(rdma_get_cm_event(ch, &ev) == 0);
    return ev;
}

rdma_cm_event *wait_event(rdma_event_channel *ch, rdma_cm_event_type want, int timeout_ms) {
    rdma_cm_event *ev = next_event(ch, timeout_ms);
    if (ev->event != want) {
        std::fprintf(stderr, "[pid %d] got %s (status %d), wanted %s\n", getpid(),
                     rdma_event_str(ev->event), ev->status, rdma_event_str(want));
        _exit(4);
    }
    return ev;
}

sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

rdma_cm_id *listen_any(rdma_event_channel *ch, Oob &oob, rdma_port_space ps) {
    rdma_cm_id *l;
    PCHECK(rdma_create_id(ch, &l, nullptr, ps) == 0);
    sockaddr_in a = loopback(0);
    PCHECK(rdma_bind_addr(l, reinterpret_cast<sockaddr *>(&a)) == 0);
    PCHECK(rdma_listen(l, 4) == 0);
    const uint16_t port = ntohs(rdma_get_src_port(l));
    PCHECK(port != 0);
    oob.put(port);
    return l;
}

rdma_conn_param qp_less_param(uint32_t qp_num) {
    rdma_conn_param p{};
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    p.qp_num = qp_num;
    return p;
}

rdma_cm_id *resolved_id(rdma_event_channel *ch, uint16_t port, rdma_port_space ps) {
    const sockaddr_in d = loopback(port);
    return resolved_id(ch, reinterpret_cast<const sockaddr *>(&d), ps);
}

rdma_cm_id *resolved_id(rdma_event_channel *ch, const sockaddr *dst, rdma_port_space ps) {
    rdma_cm_id *id;
    PCHECK(rdma_create_id(ch, &id, nullptr, ps) == 0);
    PCHECK(rdma_resolve_addr(id, nullptr, const_cast<sockaddr *>(dst), 2000) == 0);
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
    PCHECK(id->verbs != nullptr);
    PCHECK(id->port_num == 1);
    PCHECK(rdma_resolve_route(id, 2000) == 0);
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
    return id;
}

rdma_cm_id *connecting_id(rdma_event_channel *ch, uint16_t port, ibv_qp_init_attr qa) {
    rdma_cm_id *id = resolved_id(ch, port);
    PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
    PCHECK(rdma_connect(id, nullptr) == 0);
    return id;
}

rdma_cm_id *accepted_id(rdma_event_channel *ch, ibv_qp_init_attr qa) {
    rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    rdma_cm_id *c = ev->id;
    rdma_ack_cm_event(ev);
    PCHECK(rdma_create_qp(c, nullptr, &qa) == 0);
    PCHECK(rdma_accept(c, nullptr) == 0);
    rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ESTABLISHED));
    return c;
}

}  // namespace sr_test

// SPDX-License-Identifier: BSD-2-Clause
#include "load/cm_fleet.h"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "load/pattern.h"
#include "process/cm_helpers.h"

using sr_test::now_ms;

namespace sr_load {
namespace {

constexpr uint32_t kMagicConnect = 0x636f6e6e, kMagicClient = 0x636c6e74, kMagicServer = 0x73727672;

struct ConnectInfo {  // client → server, in the connect private data
    uint32_t index;
    uint32_t magic;
};

struct AcceptInfo {  // server → client, in the accept private data
    uint64_t addr;   // the connection's WRITE target slot
    uint32_t rkey;
    uint32_t index;
};

struct Msg {  // the SEND each way
    uint32_t tag;
    uint32_t index;
    uint32_t magic;
};

// Connections the client has in progress at once (below the listener's backlog of 1024).
constexpr uint32_t kOpenWindow = 128;

enum Kind : uint64_t { kWrite = 0, kSend = 1, kRecv = 2 };

uint64_t wr_id(uint32_t index, Kind k) {
    return uint64_t(index) << 2 | k;
}

[[noreturn]] void timed_out(const char *role, const char *what) {
    std::fprintf(stderr, "[%s pid %d] deadline passed while %s\n", role, getpid(), what);
    std::fflush(stderr);
    _exit(3);
}

int remaining_ms(uint64_t deadline_ms, const char *role, const char *what) {
    const uint64_t now = now_ms();
    if (now >= deadline_ms) timed_out(role, what);
    return int(deadline_ms - now);
}

}  // namespace

std::vector<uint32_t> every(uint32_t n, uint32_t step) {
    std::vector<uint32_t> v;
    for (uint32_t i = 0; i < n; i += step) v.push_back(i);
    return v;
}

// ---------------------------------------------------------------------------- common

Fleet::Fleet(sr_test::Oob &oob, uint32_t max_conns, const char *role)
    : oob_(oob), role_(role), conns_(max_conns) {
    ch_ = rdma_create_event_channel();
    PCHECK(ch_);
    // The CM opens one context per device and shares it between ids; take the loopback one.
    int n = 0;
    ibv_context **list = rdma_get_devices(&n);
    PCHECK(list && n > 0);
    for (int i = 0; i < n; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]->device), "sr_lo") == 0) ctx_ = list[i];
    rdma_free_devices(list);
    PCHECK(ctx_);
    pd_ = ibv_alloc_pd(ctx_);
    PCHECK(pd_);
    // At most a WRITE, a SEND and a receive per connection are ever outstanding.
    cq_ = ibv_create_cq(ctx_, int(max_conns) * 3 + 16, nullptr, nullptr, 0);
    PCHECK(cq_);
    const size_t len = (size_t(max_conns) * kSlots * 64 + 4095) & ~size_t(4095);
    buf_ = static_cast<uint8_t *>(std::aligned_alloc(4096, len));
    PCHECK(buf_);
    std::memset(buf_, 0, len);  // touched now, so it is part of every RSS baseline
    mr_ = ibv_reg_mr(pd_, buf_, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    PCHECK(mr_);
}

Fleet::~Fleet() {
    PCHECK(ibv_dereg_mr(mr_) == 0);
    PCHECK(ibv_destroy_cq(cq_) == 0);
    PCHECK(ibv_dealloc_pd(pd_) == 0);
    std::free(buf_);
    rdma_destroy_event_channel(ch_);
}

void Fleet::print_totals() const {
    std::printf("[%s] CM events:", role_);
    for (int t = 0; t < kEventTypes; ++t)
        if (totals_[t])
            std::printf(" %s=%llu", rdma_event_str(rdma_cm_event_type(t)),
                        (unsigned long long)totals_[t]);
    std::printf("\n");
    std::fflush(stdout);
}

Fleet::Event Fleet::take_event(uint64_t deadline_ms) {
    pollfd p{ch_->fd, POLLIN, 0};
    const int r = poll(&p, 1, remaining_ms(deadline_ms, role_, "waiting for a CM event"));
    PCHECK(r >= 0);
    if (r == 0) timed_out(role_, "waiting for a CM event");
    rdma_cm_event *ev = nullptr;
    PCHECK(rdma_get_cm_event(ch_, &ev) == 0);
    Event e{};
    e.type = ev->event;
    if (ev->status != 0) {
        std::fprintf(stderr, "[%s pid %d] %s with status %d\n", role_, getpid(),
                     rdma_event_str(ev->event), ev->status);
        _exit(4);
    }
    PCHECK(int(e.type) >= 0 && int(e.type) < kEventTypes);
    if (ev->param.conn.private_data)
        std::memcpy(e.pd, ev->param.conn.private_data,
                    std::min<size_t>(ev->param.conn.private_data_len, sizeof e.pd));
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        // A new child id: the client's private data says which connection it is.
        ConnectInfo ci;
        std::memcpy(&ci, e.pd, sizeof ci);
        PCHECK_EQ(ci.magic, kMagicConnect);
        PCHECK(ci.index < conns_.size());
        Conn &c = conns_[ci.index];
        PCHECK(c.id == nullptr);  // a second request for one connection
        c.id = ev->id;
        c.index = ci.index;
        ev->id->context = &c;
    }
    e.conn = static_cast<Conn *>(ev->id->context);
    PCHECK(e.conn);
    ++e.conn->events[e.type];
    ++totals_[e.type];
    rdma_ack_cm_event(ev);
    return e;
}

void Fleet::expect_no_event(int quiet_ms) {
    pollfd p{ch_->fd, POLLIN, 0};
    if (poll(&p, 1, quiet_ms) == 0) return;
    rdma_cm_event *ev = nullptr;
    PCHECK(rdma_get_cm_event(ch_, &ev) == 0);
    std::fprintf(stderr, "[%s pid %d] unexpected extra event %s\n", role_, getpid(),
                 rdma_event_str(ev->event));
    _exit(4);
}

void Fleet::check_and_reset_events(uint32_t n, const uint32_t (&want)[kEventTypes]) {
    for (uint32_t i = 0; i < n; ++i) {
        Conn &c = conns_[i];
        for (int t = 0; t < kEventTypes; ++t) {
            if (c.events[t] == want[t]) continue;
            std::fprintf(stderr, "[%s pid %d] connection %u saw %s %u times, expected %u\n", role_,
                         getpid(), i, rdma_event_str(rdma_cm_event_type(t)), c.events[t], want[t]);
            _exit(4);
        }
        std::memset(c.events, 0, sizeof c.events);
    }
}

ibv_qp_init_attr Fleet::qp_attr() const {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RC;
    a.send_cq = a.recv_cq = cq_;  // one CQ for all: no per-connection CQ or channel fds
    a.cap.max_send_wr = 4;
    a.cap.max_recv_wr = 2;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return a;
}

void Fleet::post_recv(Conn &c) {
    ibv_sge sge{uint64_t(uintptr_t(slot(c.index, kSlotRecv))), 64, mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id(c.index, kRecv);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    PCHECK(ibv_post_recv(c.id->qp, &wr, &bad) == 0);
}

void Fleet::post_send(Conn &c, ibv_wr_opcode op, int from_slot, uint64_t remote) {
    const uint32_t len = op == IBV_WR_SEND ? sizeof(Msg) : 64;
    ibv_sge sge{uint64_t(uintptr_t(slot(c.index, from_slot))), len, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id(c.index, op == IBV_WR_SEND ? kSend : kWrite);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = c.peer_rkey;
    ibv_send_wr *bad = nullptr;
    PCHECK(ibv_post_send(c.id->qp, &wr, &bad) == 0);
}

void Fleet::reap(uint32_t want, uint64_t deadline_ms) {
    ibv_wc wcs[64];
    uint32_t got = 0;
    while (got < want) {
        const int n = ibv_poll_cq(cq_, 64, wcs);
        PCHECK(n >= 0);
        if (n == 0) {
            remaining_ms(deadline_ms, role_, "waiting for completions");
            continue;
        }
        for (int k = 0; k < n; ++k) {
            const ibv_wc &wc = wcs[k];
            if (wc.status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "[%s pid %d] completion %llx: %s\n", role_, getpid(),
                             (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
                _exit(5);
            }
            const uint32_t index = uint32_t(wc.wr_id >> 2);
            PCHECK(index < conns_.size() && conns_[index].id);
            Conn &c = conns_[index];
            PCHECK_EQ(wc.qp_num, c.id->qp->qp_num);
            switch (Kind(wc.wr_id & 3)) {
                case kWrite:
                    PCHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
                    break;
                case kSend:
                    PCHECK_EQ(wc.opcode, IBV_WC_SEND);
                    break;
                case kRecv:
                    PCHECK_EQ(wc.opcode, IBV_WC_RECV);
                    PCHECK_EQ(wc.byte_len, sizeof(Msg));
                    on_recv(c, wc);
                    break;
                default:
                    PCHECK(!"unknown wr_id kind");
            }
        }
        got += uint32_t(n);
    }
    PCHECK_EQ(got, want);  // a batch never overshoots: nothing else is outstanding
}

void Fleet::destroy_all(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        Conn &c = conns_[i];
        rdma_destroy_qp(c.id);
        PCHECK(rdma_destroy_id(c.id) == 0);
        c = Conn{};
    }
}

void Fleet::expect_cq_empty() {
    ibv_wc wc;
    const int n = ibv_poll_cq(cq_, 1, &wc);
    if (n == 0) return;
    std::fprintf(stderr, "[%s pid %d] stray completion %llx status %s\n", role_, getpid(),
                 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
    _exit(5);
}

void Fleet::await_closed(uint32_t n, uint64_t deadline_ms) {
    uint32_t disconnected = 0, timewait = 0;
    while (disconnected < n || timewait < n) {
        const Event e = take_event(deadline_ms);
        if (e.type == RDMA_CM_EVENT_DISCONNECTED) {
            ++disconnected;
        } else if (e.type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
            ++timewait;
        } else {
            std::fprintf(stderr, "[%s] unexpected %s while closing\n", role_,
                         rdma_event_str(e.type));
            _exit(4);
        }
    }
    expect_no_event(100);
}

// ---------------------------------------------------------------------------- client

ClientFleet::ClientFleet(sr_test::Oob &oob, uint32_t max_conns)
    : Fleet(oob, max_conns, "client"), port_(oob.get<uint16_t>()) {}

void ClientFleet::open(uint32_t n, uint64_t deadline_ms) {
    PCHECK(n <= conns_.size());
    const sockaddr_in dst = sr_test::loopback(port_);
    const ibv_qp_init_attr qa = qp_attr();
    uint32_t started = 0, established = 0;
    while (established < n) {
        // Windowed, as a real client pool would: a burst of thousands of SYNs would only
        // overflow the listener's accept queue and wait for TCP's 1 s SYN retransmission.
        for (; started < n && started - established < kOpenWindow; ++started) {
            Conn &c = conns_[started];
            c.index = started;
            PCHECK(rdma_create_id(ch_, &c.id, &c, RDMA_PS_TCP) == 0);
            sockaddr_in d = dst;
            PCHECK(rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr *>(&d), 2000) == 0);
        }
        const Event e = take_event(deadline_ms);
        Conn &c = *e.conn;
        switch (e.type) {
            case RDMA_CM_EVENT_ADDR_RESOLVED:
                PCHECK(c.id->verbs == ctx_);
                PCHECK(rdma_resolve_route(c.id, 2000) == 0);
                break;
            case RDMA_CM_EVENT_ROUTE_RESOLVED: {
                ibv_qp_init_attr a = qa;
                PCHECK(rdma_create_qp(c.id, pd_, &a) == 0);
                ConnectInfo ci{c.index, kMagicConnect};
                rdma_conn_param p{};
                p.private_data = &ci;
                p.private_data_len = sizeof ci;
                p.retry_count = 7;
                p.rnr_retry_count = 7;
                PCHECK(rdma_connect(c.id, &p) == 0);
                break;
            }
            case RDMA_CM_EVENT_ESTABLISHED: {
                AcceptInfo ai;
                std::memcpy(&ai, e.pd, sizeof ai);
                PCHECK_EQ(ai.index, c.index);  // the server took it for the right connection
                c.peer_addr = ai.addr;
                c.peer_rkey = ai.rkey;
                ++established;
                break;
            }
            default:
                std::fprintf(stderr, "[client] unexpected %s while opening\n",
                             rdma_event_str(e.type));
                _exit(4);
        }
    }
}

void ClientFleet::exchange(uint32_t tag, const std::vector<uint32_t> &which, uint64_t deadline_ms) {
    tag_ = tag;
    for (uint32_t i : which) post_recv(conns_[i]);
    oob_.barrier();  // the server's receives are posted too
    for (uint32_t i : which) {
        Conn &c = conns_[i];
        fill_pattern(slot(i, kSlotTarget), 64, i, tag);
        post_send(c, IBV_WR_RDMA_WRITE, kSlotTarget, c.peer_addr);
        // RC order: the SEND completes at the server only after the WRITE was placed.
        const Msg m{tag, i, kMagicClient};
        std::memcpy(slot(i, kSlotSend), &m, sizeof m);
        post_send(c, IBV_WR_SEND, kSlotSend);
    }
    reap(uint32_t(which.size()) * 3, deadline_ms);
    oob_.barrier();  // the server has its own completions too: nothing is left in flight
}

void ClientFleet::on_recv(Conn &c, const ibv_wc &) {
    Msg m;
    std::memcpy(&m, slot(c.index, kSlotRecv), sizeof m);
    PCHECK_EQ(m.magic, kMagicServer);
    PCHECK_EQ(m.tag, tag_);
    PCHECK_EQ(m.index, c.index);
}

void ClientFleet::close(uint32_t n, uint64_t deadline_ms) {
    for (uint32_t i = 0; i < n; ++i) PCHECK(rdma_disconnect(conns_[i].id) == 0);
    await_closed(n, deadline_ms);
    uint32_t want[kEventTypes] = {};
    want[RDMA_CM_EVENT_ADDR_RESOLVED] = want[RDMA_CM_EVENT_ROUTE_RESOLVED] = 1;
    want[RDMA_CM_EVENT_ESTABLISHED] = want[RDMA_CM_EVENT_DISCONNECTED] = 1;
    want[RDMA_CM_EVENT_TIMEWAIT_EXIT] = 1;
    check_and_reset_events(n, want);
    destroy_all(n);
    expect_cq_empty();  // every receive was consumed, so there is nothing to flush
}

// ---------------------------------------------------------------------------- server

ServerFleet::ServerFleet(sr_test::Oob &oob, uint32_t max_conns) : Fleet(oob, max_conns, "server") {
    PCHECK(rdma_create_id(ch_, &listen_, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = sr_test::loopback(0);
    PCHECK(rdma_bind_addr(listen_, reinterpret_cast<sockaddr *>(&a)) == 0);
    PCHECK(listen_->verbs == nullptr);  // the kernel CM binds a loopback address to no device
    // The deepest backlog the CM takes: the client keeps fewer requests in flight than this.
    PCHECK(rdma_listen(listen_, 1024) == 0);
    oob.put<uint16_t>(ntohs(rdma_get_src_port(listen_)));
}

ServerFleet::~ServerFleet() {
    PCHECK(rdma_destroy_id(listen_) == 0);
}

void ServerFleet::open(uint32_t n, uint64_t deadline_ms) {
    PCHECK(n <= conns_.size());
    const ibv_qp_init_attr qa = qp_attr();
    uint32_t established = 0;
    while (established < n) {
        const Event e = take_event(deadline_ms);
        Conn &c = *e.conn;
        switch (e.type) {
            case RDMA_CM_EVENT_CONNECT_REQUEST: {
                PCHECK(c.index < n);
                PCHECK(c.id->verbs == ctx_);
                ibv_qp_init_attr a = qa;
                PCHECK(rdma_create_qp(c.id, pd_, &a) == 0);
                AcceptInfo ai{uint64_t(uintptr_t(slot(c.index, kSlotTarget))), mr_->rkey, c.index};
                rdma_conn_param p{};
                p.private_data = &ai;
                p.private_data_len = sizeof ai;
                p.rnr_retry_count = 7;
                PCHECK(rdma_accept(c.id, &p) == 0);
                break;
            }
            case RDMA_CM_EVENT_ESTABLISHED:
                ++established;
                break;
            default:
                std::fprintf(stderr, "[server] unexpected %s while opening\n",
                             rdma_event_str(e.type));
                _exit(4);
        }
    }
}

void ServerFleet::exchange(uint32_t tag, const std::vector<uint32_t> &which, uint64_t deadline_ms) {
    tag_ = tag;
    for (uint32_t i : which) post_recv(conns_[i]);
    oob_.barrier();
    reap(uint32_t(which.size()) * 2, deadline_ms);  // each receive, then the answer's SEND
    oob_.barrier();
}

void ServerFleet::on_recv(Conn &c, const ibv_wc &) {
    Msg m;
    std::memcpy(&m, slot(c.index, kSlotRecv), sizeof m);
    PCHECK_EQ(m.magic, kMagicClient);
    PCHECK_EQ(m.tag, tag_);
    PCHECK_EQ(m.index, c.index);
    uint8_t *target = slot(c.index, kSlotTarget);
    if (!check_pattern(target, 64, c.index, tag_)) {
        std::fprintf(stderr, "[server pid %d] WRITE on connection %u round %u: wrong bytes\n",
                     getpid(), c.index, tag_);
        _exit(6);
    }
    std::memset(target, 0, 64);  // so a WRITE that went missing next round cannot pass
    const Msg answer{tag_, c.index, kMagicServer};
    std::memcpy(slot(c.index, kSlotSend), &answer, sizeof answer);
    post_send(c, IBV_WR_SEND, kSlotSend);
}

void ServerFleet::close(uint32_t n, uint64_t deadline_ms) {
    // The client disconnects; each connection ends here as DISCONNECTED, then TIMEWAIT_EXIT.
    await_closed(n, deadline_ms);
    uint32_t want[kEventTypes] = {};
    want[RDMA_CM_EVENT_CONNECT_REQUEST] = want[RDMA_CM_EVENT_ESTABLISHED] = 1;
    want[RDMA_CM_EVENT_DISCONNECTED] = want[RDMA_CM_EVENT_TIMEWAIT_EXIT] = 1;
    check_and_reset_events(n, want);
    destroy_all(n);
    expect_cq_empty();
}

}  // namespace sr_load

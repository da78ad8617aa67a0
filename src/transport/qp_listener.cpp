// SPDX-License-Identifier: BSD-2-Clause
#include "transport/qp_listener.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "transport/handshake_gate.h"
#include "transport/wildcard_socket.h"

namespace softrdma::transport {

namespace {

constexpr uint64_t kHandshakeTimeoutNs = 5'000'000'000ull;
// Out of file descriptors with no half-open connection to close: try accepting again later.
constexpr uint64_t kAcceptRetryNs = 100'000'000ull;

class Listener : public Pollable, public std::enable_shared_from_this<Listener> {
  public:
    static std::shared_ptr<Listener> open();
    uint16_t port() const { return port_; }
    // Returns the slot, or -1 when full.
    int take_slot(const std::shared_ptr<QpAcceptor> &qp);
    void release_slot(uint32_t slot);
    std::shared_ptr<QpAcceptor> find(uint32_t slot);
    void on_io(uint32_t events) override;
    void on_timer() override;

  private:
    UniqueFd fd_;
    uint16_t port_ = 0;
    std::mutex mu_;
    std::array<std::weak_ptr<QpAcceptor>, kSlotsPerListener> slots_;
    std::array<bool, kSlotsPerListener> used_{};
    uint32_t nused_ = 0;
    uint32_t next_ = 0;
    HandshakeGate gate_;
};

std::mutex g_mu;
std::vector<std::shared_ptr<Listener>> g_listeners;

std::shared_ptr<Listener> find_listener(uint16_t port) {
    std::lock_guard lk(g_mu);
    for (auto &l : g_listeners)
        if (l->port() == port) return l;
    return nullptr;
}

std::shared_ptr<Listener> Listener::open() {
    auto l = std::make_shared<Listener>();
    // SO_REUSEADDR lets two processes bind the same port while neither listens yet; the
    // second listen() then fails with EADDRINUSE: take another port (seen as a rare
    // "Unable to create QP" when two perftest processes started together).
    UniqueFd fd;
    for (int tries = 0; tries < 8 && !fd; ++tries) {
        fd = bind_wildcard(SOCK_STREAM, l->port_);
        if (!fd) return nullptr;
        if (::listen(fd.get(), 1024) != 0) {
            if (errno != EADDRINUSE) return nullptr;
            fd.reset();
        }
    }
    if (!fd) return nullptr;
    tune_stream_socket(fd.get());  // accepted sockets inherit TCP_NODELAY
    l->fd_ = std::move(fd);
    if (!ProgressEngine::get().watch(l->fd_.get(), l, EPOLLIN)) return nullptr;
    return l;
}

int Listener::take_slot(const std::shared_ptr<QpAcceptor> &qp) {
    std::lock_guard lk(mu_);
    // A full listener answers at once: a process with thousands of QPs asks each in turn.
    if (nused_ == kSlotsPerListener - 1) return -1;  // every slot but kUdSlot
    for (uint32_t i = 0; i < kSlotsPerListener; ++i) {
        const uint32_t s = (next_ + i) % kSlotsPerListener;
        if (s == kUdSlot) continue;  // UD QPNs are UDP port << 8 | 0xff
        if (!used_[s]) {
            used_[s] = true;
            ++nused_;
            slots_[s] = qp;
            next_ = s + 1;  // do not hand a just-freed QPN out again at once
            return int(s);
        }
    }
    return -1;
}

void Listener::release_slot(uint32_t slot) {
    std::lock_guard lk(mu_);
    if (slot >= kSlotsPerListener || !used_[slot]) return;
    used_[slot] = false;
    --nused_;
    slots_[slot].reset();
}

std::shared_ptr<QpAcceptor> Listener::find(uint32_t slot) {
    std::lock_guard lk(mu_);
    return slot < kSlotsPerListener ? slots_[slot].lock() : nullptr;
}

void Listener::on_io(uint32_t) {
    for (;;) {
        sockaddr_storage peer{};
        socklen_t plen = sizeof peer;
        UniqueFd c(::accept4(fd_.get(), reinterpret_cast<sockaddr *>(&peer), &plen,
                             SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!c) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (gate_.shed_oldest()) continue;
                // Nothing of ours to close: stop listening for a moment instead of spinning.
                SR_DEBUG(
                    "QP listener on port %u: out of file descriptors, accepting again "
                    "in 100 ms",
                    port_);
                ProgressEngine::get().rearm(fd_.get(), shared_from_this(), 0);
                ProgressEngine::get().schedule(shared_from_this(), now_ns() + kAcceptRetryNs);
            }
            return;
        }
        std::weak_ptr<Listener> self = shared_from_this();
        auto target = std::make_shared<std::weak_ptr<QpAcceptor>>();
        auto decide = [self, target](const wire::MpaFrame &req, MpaHandshake &) {
            MpaHandshake::Decision d;
            wire::QpHello hello;
            auto l = self.lock();
            if (!l || !wire::decode_qp_hello(req.private_data, hello)) {
                d.kind = MpaHandshake::Decision::Kind::kClose;
                return d;
            }
            auto qp =
                qpn_port(hello.dst_qpn) == l->port() ? l->find(hello.dst_qpn & 0xff) : nullptr;
            if (!qp) {
                d.kind = MpaHandshake::Decision::Kind::kReply;
                d.reply = encode_hello_reply(hello, wire::QpHelloStatus::kNoSuchQp, 0, 0, 0);
                return d;
            }
            *target = qp;
            return qp->on_hello(req, hello);
        };
        auto done = [target](MpaHandshake::Result &&r) {
            if (r.err) return;
            if (auto qp = target->lock()) qp->on_passive_connected(std::move(r));
        };
        const uint64_t limit = std::min(kHandshakeTimeoutNs, handshake_limits().request_timeout_ns);
        gate_.admit(peer,
                    MpaHandshake::start_passive(std::move(c), decide, now_ns() + limit, done));
    }
}

void Listener::on_timer() {
    ProgressEngine::get().rearm(fd_.get(), shared_from_this(), EPOLLIN);
    on_io(EPOLLIN);
}

}  // namespace

std::vector<uint8_t> encode_hello_reply(const wire::QpHello &request, wire::QpHelloStatus status,
                                        uint16_t flags, uint16_t ird, uint16_t ord) {
    wire::MpaFrame f;
    f.reply = true;
    f.flags = uint16_t(flags | wire::kMpaFlagEnhanced);
    if (status != wire::QpHelloStatus::kAccept) f.flags |= wire::kMpaFlagReject;
    f.ird = ird;
    f.ord = ord;
    wire::QpHello h = request;
    h.status = status;
    std::swap(h.src_qpn, h.dst_qpn);
    std::swap(h.src_gid, h.dst_gid);
    f.private_data.resize(wire::kQpHelloLen);
    wire::encode_qp_hello(h, f.private_data.data());
    return wire::encode_mpa_frame(f);
}

uint32_t register_qp(const std::shared_ptr<QpAcceptor> &qp) {
    {
        std::lock_guard lk(g_mu);
        for (auto &l : g_listeners) {
            const int s = l->take_slot(qp);
            if (s >= 0) return uint32_t(l->port()) << 8 | uint32_t(s);
        }
    }
    auto l = Listener::open();
    if (!l) return 0;
    const int s = l->take_slot(qp);
    std::lock_guard lk(g_mu);
    g_listeners.push_back(l);
    SR_DEBUG("QP listener on port %u", l->port());
    return uint32_t(l->port()) << 8 | uint32_t(s);
}

void unregister_qp(uint32_t qpn) {
    if (auto l = find_listener(qpn_port(qpn))) l->release_slot(qpn & 0xff);
}

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
#include "transport/mpa_handshake.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"

namespace softrdma::transport {

void tune_stream_socket(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

UniqueFd tcp_connect_nonblocking(const sockaddr *addr, unsigned addrlen) {
    UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fd;
    tune_stream_socket(fd.get());
    if (::connect(fd.get(), addr, addrlen) != 0 && errno != EINPROGRESS) return UniqueFd();
    return fd;
}

namespace {

// TCP lets a socket connect to its own address and port (a "simultaneous open" with itself):
// dialing a free port from that same port, which the kernel may hand out again at once.
// Nothing listens there, so it counts as refused; the handshake would read its own request.
bool connected_to_itself(int fd) {
    sockaddr_storage self, peer;
    socklen_t slen = sizeof self, plen = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&self), &slen) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &plen) != 0)
        return false;
    return slen == plen && std::memcmp(&self, &peer, plen) == 0;
}

}  // namespace

namespace {
// What each side waits for once its request is out (active) or while it arrives (passive).
// One-shot on the active side: the reply usually comes whole, and a disarmed socket can be
// handed to the QP with one re-arm.
constexpr uint32_t kActiveReceive = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr uint32_t kPassiveReceive = EPOLLIN | EPOLLRDHUP;
}  // namespace

MpaHandshake::MpaHandshake(UniqueFd fd, bool active, uint64_t deadline)
    : fd_(std::move(fd)),
      active_(active),
      deadline_(deadline),
      state_(active ? State::kConnecting : State::kReceiving),
      awaiting_request_(!active) {}

std::shared_ptr<MpaHandshake> MpaHandshake::start_active(UniqueFd fd, std::vector<uint8_t> request,
                                                         uint64_t deadline_ns, Done done) {
    std::shared_ptr<MpaHandshake> h(new MpaHandshake(std::move(fd), true, deadline_ns));
    h->out_ = std::move(request);
    h->done_ = std::move(done);
    h->self_ = h;
    std::unique_lock lk(h->mu_);
    // Registered once, for what is next: on loopback the request is usually out already.
    h->send_early();
    if (!h->arm(h->state_ == State::kReceiving ? kActiveReceive
                                               : EPOLLIN | EPOLLOUT | EPOLLRDHUP)) {
        h->finish(lk, errno);
        return h;
    }
    ProgressEngine::get().schedule(h, deadline_ns);
    return h;
}

// Registers the socket with the engine, or changes what it waits for. mu_ held.
bool MpaHandshake::arm(uint32_t events) {
    auto &eng = ProgressEngine::get();
    if (!(watched_ ? eng.rearm(fd_.get(), shared_from_this(), events)
                   : eng.watch(fd_.get(), shared_from_this(), events)))
        return false;
    watched_ = true;
    armed_ = events;
    return true;
}

// A connection that is already up (loopback completes inside connect()) takes its request
// now, from the caller's thread, instead of after a trip through the engine. Only the
// sending: anything that would finish the handshake (and call `done`, which takes locks the
// caller may hold) is left to the engine.
void MpaHandshake::send_early() {
    if (state_ != State::kConnecting) return;
    // The send itself says whether the connection is up: EAGAIN while it is still being made
    // (left to step()), or the connection's error, which it consumes: kept for step().
    state_ = State::kSending;
    int err = 0;
    if (flush_out(err)) {
        state_ = State::kReceiving;  // start_active() registers the socket for the reply
        return;
    }
    if (err)
        early_err_ = err;
    else if (out_off_ == 0)
        state_ = State::kConnecting;
}

std::shared_ptr<MpaHandshake> MpaHandshake::start_passive(UniqueFd fd, Decide decide,
                                                          uint64_t deadline_ns, Done done) {
    std::shared_ptr<MpaHandshake> h(new MpaHandshake(std::move(fd), false, deadline_ns));
    h->decide_ = std::move(decide);
    h->done_ = std::move(done);
    h->self_ = h;
    std::unique_lock lk(h->mu_);
    ProgressEngine::get().schedule(h, deadline_ns);
    h->step(lk);  // the request often came with the connection: registered after this
    return h;
}

PathHealth MpaHandshake::path_health(uint64_t recent_ns) {
    std::lock_guard lk(mu_);
    return tcp_path_health(fd_.get(), recent_ns);
}

void MpaHandshake::cancel() {
    std::unique_lock lk(mu_);
    done_ = nullptr;
    if (state_ != State::kFinished) finish(lk, ECANCELED);
}

void MpaHandshake::shed() {
    std::unique_lock lk(mu_);
    if (!active_ && state_ == State::kReceiving) finish(lk, ECONNABORTED);
}

namespace {

const char *state_words(bool active, int state) {
    static const char *const kWords[] = {"connecting",
                                         "sending its request",
                                         "waiting for the peer's frame",
                                         "waiting for room or a decision",
                                         "waiting for the application's answer",
                                         "sending its reply",
                                         "finished"};
    if (!active && state == 2) return "waiting for the peer's request";
    return state >= 0 && state < 7 ? kWords[state] : "?";
}

}  // namespace

void MpaHandshake::finish(std::unique_lock<std::mutex> &lk, int err) {
    if (state_ == State::kFinished) return;
    if (err && err != ECANCELED)
        SR_DEBUG("mpa %s handshake on fd %d ended while %s: %s", active_ ? "active" : "passive",
                 fd_.get(), state_words(active_, int(state_)),
                 err == ETIMEDOUT      ? "timed out"
                 : err == EPROTO       ? "malformed frame"
                 : err == ECONNABORTED ? "closed to make room for newer connections"
                 : err == ECONNREFUSED ? "peer closed, reset or rejected"
                                       : std::strerror(err));
    state_ = State::kFinished;
    awaiting_request_.store(false, std::memory_order_release);
    const bool hand_over_registered = err == 0 && (armed_ == 0 || (armed_ & EPOLLONESHOT));
    if (fd_ && watched_ && !hand_over_registered) ProgressEngine::get().unwatch(fd_.get());
    Result r;
    r.err = err;
    r.got_frame = got_frame_;
    r.rejected = active_ && got_frame_ && (peer_.flags & wire::kMpaFlagReject);
    r.peer = std::move(peer_);
    if (err == 0) {
        r.fd = std::move(fd_);
        r.registered = watched_ && hand_over_registered;
    } else {
        fd_.reset();
    }
    Done done = std::move(done_);
    done_ = nullptr;
    Decide decide = std::move(decide_);  // may own objects that own us: break the cycle
    decide_ = nullptr;
    // Drop our self-reference only after the callback: the caller may hold none.
    auto self = std::move(self_);
    lk.unlock();
    if (done) done(std::move(r));
    lk.lock();
}

bool MpaHandshake::flush_out(int &err) {
    while (out_off_ < out_.size()) {
        const ssize_t n = ::send(fd_.get(), out_.data() + out_off_, out_.size() - out_off_,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
            err = (errno == EPIPE || errno == ECONNRESET) ? ECONNREFUSED : errno;
            return false;
        }
        out_off_ += size_t(n);
    }
    return true;
}

// Reads exactly one MPA frame (never more: FPDUs may follow it immediately).
bool MpaHandshake::read_frame(int &err, bool &complete) {
    complete = false;
    for (;;) {
        size_t want = wire::kMpaFixedLen;
        if (in_.size() >= wire::kMpaFixedLen) {
            const auto r = wire::decode_mpa_frame(in_, active_, peer_);
            if (r.status == wire::DecodeStatus::kMalformed) {
                // Our own request read back: refused (asked only now, off the common path).
                err = active_ && connected_to_itself(fd_.get()) ? ECONNREFUSED : EPROTO;
                return false;
            }
            if (r.status == wire::DecodeStatus::kOk) {
                if (r.needed != in_.size()) {
                    err = EPROTO;
                    return false;
                }
                complete = true;
                return true;
            }
            want = r.needed;
        }
        // Nothing may follow a request before our reply: the passive side reads the largest
        // request at once, and treats bytes beyond it as the protocol error they are.
        if (!active_ && in_.empty())
            want = wire::kMpaFixedLen + wire::kMpaV2DataLen + wire::kMpaMaxPrivateData;
        const size_t have = in_.size();
        in_.resize(want);
        const ssize_t n = ::recv(fd_.get(), in_.data() + have, want - have, MSG_DONTWAIT);
        if (n <= 0) {
            in_.resize(have);
            if (n == 0) {
                err = ECONNREFUSED;
                return false;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
            err = (errno == ECONNRESET) ? ECONNREFUSED : errno;
            return false;
        }
        in_.resize(have + size_t(n));
    }
}

void MpaHandshake::step(std::unique_lock<std::mutex> &lk) {
    for (;;) {
        int err = 0;
        switch (state_) {
            case State::kConnecting: {
                int soerr = 0;
                socklen_t len = sizeof soerr;
                getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
                if (soerr) return finish(lk, soerr == ECONNRESET ? ECONNREFUSED : soerr);
                sockaddr_storage peer;
                socklen_t plen = sizeof peer;
                if (::getpeername(fd_.get(), reinterpret_cast<sockaddr *>(&peer), &plen) != 0)
                    return;  // still connecting
                state_ = State::kSending;
                break;
            }
            case State::kSending:
                if (early_err_) return finish(lk, early_err_);
                if (!flush_out(err)) {
                    if (err) return finish(lk, err);
                    return;
                }
                state_ = State::kReceiving;
                if (!arm(kActiveReceive)) return finish(lk, errno);
                break;
            case State::kReceiving: {
                bool complete;
                if (!read_frame(err, complete)) return finish(lk, err ? err : EPROTO);
                if (!complete) {
                    // Registered (passive: first time here), or re-armed after a one-shot.
                    if (!armed_ && !arm(active_ ? kActiveReceive : kPassiveReceive))
                        return finish(lk, errno);
                    return;
                }
                got_frame_ = true;
                awaiting_request_.store(false, std::memory_order_release);
                if (active_) {
                    if (peer_.flags & wire::kMpaFlagReject) return finish(lk, ECONNREFUSED);
                    return finish(lk, 0);
                }
                // Nothing more may arrive before our reply: watch only for the peer leaving,
                // one-shot, so a closed socket cannot spin the engine while we wait.
                state_ = State::kDeferred;
                if (!arm(EPOLLRDHUP | EPOLLONESHOT)) return finish(lk, errno);
                break;
            }
            case State::kDeferred: {
                Decide decide = decide_;
                decide_running_ = true;
                lk.unlock();
                Decision d = decide(peer_, *this);
                lk.lock();
                decide_running_ = false;
                decided_.notify_all();
                if (state_ != State::kDeferred) return;
                if (d.kind == Decision::Kind::kClose) return finish(lk, ECONNREFUSED);
                if (d.kind == Decision::Kind::kHold) {
                    state_ = State::kHeld;
                    return;
                }
                if (d.kind == Decision::Kind::kDefer) {
                    const uint64_t retry = now_ns() + 5'000'000;
                    if (retry >= deadline_) return finish(lk, ETIMEDOUT);
                    ProgressEngine::get().schedule(shared_from_this(), retry);
                    return;
                }
                out_ = std::move(d.reply);
                out_off_ = 0;
                reply_accepted_ = d.accepted;
                state_ = State::kSendingReply;
                break;
            }
            case State::kSendingReply:
                if (!flush_out(err)) {
                    if (err) return finish(lk, err);
                    if (!arm(EPOLLOUT | EPOLLRDHUP)) return finish(lk, errno);
                    return;
                }
                return finish(lk, reply_accepted_ ? 0 : ECONNREFUSED);
            case State::kHeld:  // waiting for respond()
            case State::kFinished:
                return;
        }
    }
}

bool MpaHandshake::respond(std::vector<uint8_t> reply, bool accepted) {
    std::unique_lock lk(mu_);
    // decide() may have published the request and not returned yet. The reply leaves from
    // this thread, before the call returns, as the kernel sends a REP or REJ: a process that
    // rejects and exits at once must not take its answer with it.
    decided_.wait(lk, [this] { return !decide_running_; });
    if (state_ != State::kHeld) return false;
    out_ = std::move(reply);
    out_off_ = 0;
    reply_accepted_ = accepted;
    state_ = State::kSendingReply;
    step(lk);
    return true;
}

void MpaHandshake::on_io(uint32_t events) {
    std::unique_lock lk(mu_);
    if (armed_ & EPOLLONESHOT) armed_ = 0;  // fired: disarmed until arm()
    if ((state_ == State::kDeferred || state_ == State::kHeld) &&
        (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
        return finish(lk, ECONNREFUSED);  // the requester gave up
    if (state_ == State::kDeferred || state_ == State::kHeld) return;
    step(lk);
}

void MpaHandshake::extend(uint64_t deadline_ns) {
    {
        std::lock_guard lk(mu_);
        if (state_ == State::kFinished || deadline_ns <= deadline_) return;
        deadline_ = deadline_ns;
    }
    ProgressEngine::get().schedule(shared_from_this(), deadline_ns);
}

void MpaHandshake::on_timer() {
    std::unique_lock lk(mu_);
    if (state_ == State::kFinished) return;
    if (now_ns() >= deadline_) return finish(lk, ETIMEDOUT);
    step(lk);
}

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
// The MPA request/reply exchange on a fresh non-blocking TCP socket, driven by the progress
// engine. Either side: the active side sends the request once connected and waits for the
// reply; the passive side waits for the request and asks its owner what to answer.
#pragma once
#include <sys/socket.h>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/unique_fd.h"
#include "transport/path_health.h"
#include "transport/progress_engine.h"
#include "wire/mpa.h"

namespace softrdma::transport {

class MpaHandshake : public Pollable, public std::enable_shared_from_this<MpaHandshake> {
  public:
    struct Result {
        int err = 0;             // 0, or ECONNREFUSED (reset / rejected), ETIMEDOUT, EPROTO
        bool rejected = false;   // active side: the peer answered with an MPA reject
        bool got_frame = false;  // `peer` holds the frame the other side sent
        // `fd` may still be registered with the engine (for its next owner's watch() to take
        // over): a result dropped with its socket unregisters it, so no registration outlives
        // its descriptor (a forked child holding a copy would keep it alive).
        bool registered = false;
        UniqueFd fd;
        wire::MpaFrame peer;
        Result() = default;
        Result(Result &&) = default;
        Result &operator=(Result &&) = default;
        ~Result() {
            if (registered && fd) ProgressEngine::get().unwatch(fd.get());
        }
    };
    using Done = std::function<void(Result &&)>;

    struct Decision {
        // kHold: keep the connection until respond() (the application decides later).
        enum class Kind { kReply, kDefer, kClose, kHold } kind = Kind::kClose;
        std::vector<uint8_t> reply;  // encoded MPA reply (for kReply)
        bool accepted = false;       // after sending a reply: hand over the socket or close it
    };
    // Gets the exchange itself, so a holder can keep it before anyone acts on the request.
    using Decide = std::function<Decision(const wire::MpaFrame &, MpaHandshake &)>;

    // `fd` is a socket whose non-blocking connect() is in progress (or done).
    static std::shared_ptr<MpaHandshake> start_active(UniqueFd fd, std::vector<uint8_t> request,
                                                      uint64_t deadline_ns, Done done);
    static std::shared_ptr<MpaHandshake> start_passive(UniqueFd fd, Decide decide,
                                                       uint64_t deadline_ns, Done done);
    // Stops the exchange; `done` is not called afterwards.
    void cancel();
    // TCP's view of the connection being made (see tcp_path_health).
    PathHealth path_health(uint64_t recent_ns);
    // Answers a held passive exchange. False if it is no longer waiting (peer gone, timeout).
    bool respond(std::vector<uint8_t> reply, bool accepted);
    // Keeps an exchange open until `deadline_ns`: a passive one whose request arrived (the
    // request timeout no longer applies), a reply deliberately held back.
    void extend(uint64_t deadline_ns);
    // Passive: the complete request has not arrived yet (and the exchange goes on).
    bool awaiting_request() const { return awaiting_request_.load(std::memory_order_acquire); }
    // Closes a passive exchange that still waits for its request (a listener making room);
    // `done` sees ECONNABORTED. Does nothing once the request is in.
    void shed();

    void on_io(uint32_t events) override;
    void on_timer() override;

  private:
    enum class State {
        kConnecting,
        kSending,
        kReceiving,
        kDeferred,
        kHeld,
        kSendingReply,
        kFinished
    };
    MpaHandshake(UniqueFd fd, bool active, uint64_t deadline);
    void send_early();
    void step(std::unique_lock<std::mutex> &lk);
    void finish(std::unique_lock<std::mutex> &lk, int err);
    bool flush_out(int &err);
    bool read_frame(int &err, bool &complete);
    bool arm(uint32_t events);

    std::mutex mu_;
    UniqueFd fd_;
    bool active_;
    uint64_t deadline_;
    State state_;
    // The socket's registration with the engine: made at the first arm() (a passive side that
    // reads its request at once registers only for what comes next); the events it waits
    // for, 0 once a one-shot mask has fired. A successful exchange leaves a one-shot socket
    // registered, so the QP that takes it re-arms it instead of registering it again.
    bool watched_ = false;
    uint32_t armed_ = 0;
    int early_err_ = 0;  // the connection's error, consumed by send_early()'s send
    std::vector<uint8_t> out_;
    size_t out_off_ = 0;
    std::vector<uint8_t> in_;
    wire::MpaFrame peer_;
    bool reply_accepted_ = false;
    bool got_frame_ = false;
    bool decide_running_ = false;
    std::atomic<bool> awaiting_request_;
    std::condition_variable decided_;  // respond() waits for a running decide() to return
    Decide decide_;
    Done done_;
    // The exchange owns itself until it finishes: the engine holds only weak references and
    // the listener that started a passive one keeps none.
    std::shared_ptr<MpaHandshake> self_;
};

// Starts a non-blocking TCP connect with TCP_NODELAY; returns an invalid fd (errno set) on an
// immediate failure.
UniqueFd tcp_connect_nonblocking(const sockaddr *addr, unsigned addrlen);
// TCP_NODELAY on a stream socket (created non-blocking, or listening: accepted sockets inherit
// it).
void tune_stream_socket(int fd);

}  // namespace softrdma::transport

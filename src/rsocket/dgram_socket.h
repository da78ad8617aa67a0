// SPDX-License-Identifier: BSD-2-Clause
// A SOCK_DGRAM rsocket: datagrams over one UD QP, with a real UDP socket beside it. The UDP
// socket is the descriptor the application holds, fixes the socket's address, and carries the
// first datagrams to a peer whose QP number we do not know yet; the peer answers with its QP
// number and everything after goes over UD (docs/wire.md §9).
#pragma once
#include <sys/socket.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/unique_fd.h"
#include "rsocket/socket.h"
#include "rsocket/verbs_handles.h"

namespace softrdma::rs {

struct AhFree {
    void operator()(ibv_ah *a) const { ibv_destroy_ah(a); }
};
using AhPtr = std::unique_ptr<ibv_ah, AhFree>;

class DgramSocket final : public Socket {
    // Made only through create() (and accept()): the constructor's key is private.
    struct Key {
        explicit Key() = default;
    };

  public:
    static std::shared_ptr<DgramSocket> create(int domain);
    explicit DgramSocket(Key) {}
    ~DgramSocket() override;

    int bind(const sockaddr *addr, socklen_t len) override;
    int connect(const sockaddr *addr, socklen_t len) override;
    int shutdown(int how) override;
    ssize_t recvmsg(const iovec *iov, int iovcnt, int flags, sockaddr *from,
                    socklen_t *fromlen) override;
    ssize_t sendmsg(const iovec *iov, int iovcnt, int flags, const sockaddr *to,
                    socklen_t tolen) override;
    int getpeername(sockaddr *addr, socklen_t *len) override;
    int getsockname(sockaddr *addr, socklen_t *len) override;
    int setsockopt(int level, int name, const void *val, socklen_t len) override;
    int getsockopt(int level, int name, void *val, socklen_t *len) override;
    int fcntl_getfl() override;
    int fcntl_setfl(int flags) override;
    short ready(short events) override;
    void arm(short events, std::vector<pollfd> &out) override;
    void disarm() override;

  private:
    using Lock = std::unique_lock<std::mutex>;
    // A peer, by its UDP address: its QP once known.
    struct Dest {
        uint32_t qpn = 0;
        AhPtr ah;
    };
    using AddrKey = std::vector<uint8_t>;
    struct Datagram {
        sockaddr_storage from{};
        socklen_t fromlen = 0;
        std::vector<uint8_t> data;
    };

    bool init(int domain);
    int ensure_qp(const sockaddr *toward);
    bool progress();
    bool poll_udp();
    bool poll_cq();
    void learn(const sockaddr *addr, socklen_t len, uint32_t qpn);
    void post_recv(uint32_t slot);
    int send_udp(const sockaddr *to, socklen_t tolen, uint8_t op, const iovec *iov, int iovcnt,
                 size_t total);
    int wait(Lock &lk);
    void disarm_locked();
    static AddrKey key_of(const sockaddr *a);

    std::mutex mu_;
    int domain_ = AF_INET;
    bool nonblock_ = false;
    bool connected_ = false;
    sockaddr_storage peer_{};
    socklen_t peer_len_ = 0;
    UniqueFd udp_;

    ChannelPtr ch_;
    IdPtr id_;
    PdPtr pd_;
    CompChannelPtr cc_;
    CqPtr cq_;
    std::unique_ptr<uint8_t[]> rbuf_;
    MrPtr rbuf_mr_;
    std::unique_ptr<uint8_t[]> sbuf_;
    MrPtr sbuf_mr_;
    std::vector<uint32_t> free_send_;

    std::map<AddrKey, Dest> dests_;
    std::deque<Datagram> udp_in_;      // came over UDP, not yet read
    std::deque<uint32_t> ud_in_;       // receive slots holding datagrams, not yet read
    std::vector<uint32_t> ud_in_len_;  // bytes in each receive slot
};

}  // namespace softrdma::rs

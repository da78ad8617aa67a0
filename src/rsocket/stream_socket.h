// SPDX-License-Identifier: BSD-2-Clause
// A SOCK_STREAM rsocket: one RC QP set up by the CM. Bytes travel as RDMA WRITE WITH IMMEDIATE
// into the peer's receive ring; the receiver hands ring space and receive credits back with
// control messages as the application consumes (src/wire/rsocket_msg.h, docs/wire.md §9).
//
// Progress happens only inside the calls, under the socket's lock: there is no thread of ours
// per socket. A call that must wait polls the CQ for a moment, then sleeps on the completion
// channel and the CM channel with the lock released.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "rsocket/socket.h"
#include "rsocket/verbs_handles.h"
#include "wire/rsocket_msg.h"

namespace softrdma::rs {

struct StreamOptions {
    uint32_t sq_size = 256;     // data writes in flight (RDMA_SQSIZE)
    uint32_t rq_size = 256;     // data writes the peer may have in flight to us (RDMA_RQSIZE)
    uint32_t inline_size = 64;  // RDMA_INLINE
    uint32_t iomap_size = 0;    // RDMA_IOMAPSIZE
    uint32_t sbuf_size = 512 << 10;
    uint32_t rbuf_size = 512 << 10;
    bool nodelay = false;
    bool keepalive = false;
    int keepidle = 7200;  // seconds, as Linux's tcp_keepalive_time
    bool reuseaddr = false;
    bool oobinline = false;
    bool v6only = false;
    linger linger_opt{};
};

// One direct-placement buffer (riomap): where offset..offset+len lands.
struct IomapEntry {
    uint64_t offset = 0;
    uint64_t addr = 0;
    uint32_t rkey = 0;
    uint32_t len = 0;
    MrPtr mr;  // ours only
    bool announced = false;
};

class StreamSocket final : public Socket, public std::enable_shared_from_this<StreamSocket> {
    // Made only through create() (and accept()): the constructor's key is private.
    struct Key {
        explicit Key() = default;
    };

  public:
    // A new, unconnected socket; nullptr with errno on failure.
    static std::shared_ptr<StreamSocket> create(int domain);

    explicit StreamSocket(Key) {}
    ~StreamSocket() override;

    int bind(const sockaddr *addr, socklen_t len) override;
    int listen(int backlog) override;
    int accept(sockaddr *addr, socklen_t *len) override;
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
    off_t iomap(void *buf, size_t len, int prot, int flags, off_t offset) override;
    int iounmap(void *buf, size_t len) override;
    ssize_t iowrite(const void *buf, size_t len, off_t offset, int flags) override;
    short ready(short events) override;
    void arm(short events, std::vector<pollfd> &out) override;
    void disarm() override;

    // Tell the peer we are done and wait (bounded) for our writes to be acknowledged.
    void close_gracefully();

    // Called about once a second by the keepalive thread: a keepalive message when one is due.
    void keepalive_tick(uint64_t now_s);

  private:
    enum class State {
        kIdle,
        kBound,
        kListening,
        kResolvingAddr,
        kResolvingRoute,
        kConnecting,
        kAccepting,
        kConnected,
        kFailed,
    };
    using Lock = std::unique_lock<std::mutex>;

    bool init_new(int domain);
    int setup_qp(rdma_cm_id *id);
    wire::RsConnData local_conn_data() const;
    bool take_peer_conn_data(const void *data, uint8_t len);

    bool progress();  // CQ and CM events, no waiting; true if anything happened
    bool poll_cq();
    bool poll_cm();
    void on_cm_event(rdma_cm_event &ev);
    void handle_recv(const ibv_wc &wc);
    void repost_recv(uint32_t slot);
    void maybe_send_credit();
    void announce_iomaps();
    bool send_ctrl(const wire::RsCtrlMsg &m);
    void set_failed(int err);
    void protocol_broken();
    int wait(Lock &lk);            // sleep until something may have changed; -1/errno
    int wait_connected(Lock &lk);  // drive a connect or accept to its end
    int usable(Lock &lk);          // 0, or -1 with errno: why data cannot move (yet)
    size_t send_room(size_t want, bool &inl) const;  // inl: small enough to go inline
    size_t staging_room(size_t n) const;
    ibv_sge stage(const iovec *iov, int iovcnt, size_t skip, size_t n);
    void post_data(const iovec *iov, int iovcnt, size_t skip, size_t n, bool inl);
    bool post_write(ibv_sge &sge, ibv_wr_opcode op, uint64_t remote_addr, uint32_t rkey,
                    uint32_t imm_be, uint32_t staged, bool inl);
    size_t copy_out(const iovec *iov, int iovcnt, size_t total, bool peek);
    bool connected() const { return state_ == State::kConnected; }
    bool accepting_connections();

    std::mutex mu_;
    int domain_ = AF_INET;
    State state_ = State::kIdle;
    bool nonblock_ = false;
    bool rd_shut_ = false;
    bool wr_shut_ = false;
    bool peer_eof_ = false;
    bool disconnected_ = false;
    bool credit_owed_ = false;
    bool iomap_unsent_ = false;
    int err_ = 0;
    int waiters_ = 0;
    uint32_t cm_skips_ = 0;
    bool cm_stirred_ = false;
    uint64_t keepalive_sent_s_ = 0;  // a sleep woke on the CM channel: read it at the next look
    StreamOptions opt_;

    ChannelPtr ch_;
    IdPtr id_;
    PdPtr pd_;
    CompChannelPtr cc_;
    CqPtr cq_;
    sockaddr_storage peer_addr_{};

    // Receive ring, filled by the peer's writes; positions are byte counts since connect.
    std::unique_ptr<uint8_t[]> ring_;
    MrPtr ring_mr_;
    uint32_t ring_size_ = 0;
    uint64_t rx_head_ = 0;  // consumed by the application
    uint64_t rx_end_ = 0;   // placed by the peer
    uint64_t rx_msgs_ = 0;  // data writes received (each took a receive credit)
    uint64_t credit_bytes_sent_ = 0;
    uint64_t credit_msgs_sent_ = 0;

    // One 32-byte slot per posted receive: control messages land there.
    std::unique_ptr<uint8_t[]> slots_;
    MrPtr slots_mr_;
    uint32_t rq_total_ = 0;

    // Send staging ring: bytes copied here until their write completes.
    std::unique_ptr<uint8_t[]> sbuf_;
    MrPtr sbuf_mr_;
    uint64_t sbuf_head_ = 0;
    uint64_t sbuf_tail_ = 0;

    wire::RsConnData peer_{};
    uint64_t tx_placed_ = 0;      // bytes written into the peer's ring
    uint64_t tx_byte_limit_ = 0;  // it may hold up to here
    uint64_t tx_msgs_ = 0;
    uint64_t tx_msg_limit_ = 0;
    uint32_t data_inflight_ = 0;    // writes posted and not yet retired by a completion
    uint32_t unsignalled_wrs_ = 0;  // writes since the last signalled one
    uint32_t unsignalled_bytes_ = 0;
    uint32_t ctrl_inflight_ = 0;

    std::vector<IomapEntry> local_iomap_;
    std::vector<IomapEntry> remote_iomap_;

    // Connection requests taken off the listener's channel, not yet accepted.
    std::vector<CmEventPtr> requests_;
};

}  // namespace softrdma::rs

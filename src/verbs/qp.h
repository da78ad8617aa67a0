// SPDX-License-Identifier: BSD-2-Clause
// Queue pair: the verbs-level state machine and work queues, plus (for RC/UC) the protocol
// over one TCP connection. The code is split by job like siw: qp.cpp (verbs entry points,
// state, completions), qp_connect.cpp (joining the peer), qp_tx.cpp (requester and response
// transmission), qp_rx.cpp (placement and completion of incoming segments).
#pragma once
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/clock.h"
#include "common/fault_plan.h"
#include "common/stats_page.h"

#include "transport/fpdu_stream.h"
#include "transport/mpa_handshake.h"
#include "transport/progress_engine.h"
#include "transport/qp_listener.h"
#include "transport/ud_flow.h"
#include "verbs/key_cache.h"
#include "verbs/mr.h"
#include "verbs/parent_domain.h"
#include "verbs/work_queue.h"
#include "verbs/wr_batch.h"
#include "wire/eth_frame.h"
#include "wire/ud_header.h"

namespace softrdma::verbs {

class PeerRegions;  // verbs/peer_regions.h

struct Ah;
struct Flow;
struct Mw;
struct RwqIndTable;
struct Xrcd;

class Context;
class Cq;
class Srq;
struct Pd;

struct SendWqe {
    uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    unsigned flags = 0;
    uint32_t num_sge = 0;
    uint64_t total_len = 0;
    // The bytes of the requests posted before it that are still in the queue, counted from
    // the oldest one's own: what a run of them holds is one subtraction (defer_send).
    uint64_t bytes_before = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t imm_or_inv = 0;  // imm_data (network order as given) or invalidate rkey
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    // BIND_MW (remote_addr is the window's start, rkey its new key).
    Mw *bind_mw = nullptr;
    uint32_t bind_mr_lkey = 0;
    uint64_t bind_len = 0;
    int bind_access = 0;
    bool is_inline = false;
    uint32_t xrc_srqn = 0;  // XRC send QPs: the remote SRQ it is for
    // Protocol progress.
    uint32_t first_seq = 0, last_seq = 0;  // request sequence numbers this WQE used
    uint32_t send_msn = 0, read_msn = 0;   // MSN counters before this WQE (for replays)
    bool queued = false;                   // every segment handed to the stream
    bool done = false;                     // nothing more to wait for
    ibv_wc_status status = IBV_WC_SUCCESS;
    uint64_t received = 0;  // READ response bytes placed
    uint8_t rnr_left = 0;
    uint32_t resp_msn = 0;  // MSN of the READ/atomic request (matches its response)
};

// A UD work request held back by flow control (transport/ud_flow.h), ready to go.
struct UdPending {
    SendWqe w;
    ibv_wc_status status = IBV_WC_SUCCESS;
    uint8_t head[wire::kUdHeaderLen];
    uint8_t dgid[16];
    uint32_t dst_qpn = 0;
    bool group = false;    // multicast: no window
    bool has_dst = false;  // an address the datagram can go to
    int iovcnt = 0;        // header included
    sockaddr_storage dst;
    socklen_t dlen = 0;
    alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(in6_pktinfo))];
    size_t ctl_len = 0;
};

// Outgoing work the responder owes the peer (read responses, atomic responses).
struct ResponseJob {
    enum class Kind : uint8_t { kReadResponse, kAtomicResponse } kind;
    uint8_t *src = nullptr;  // checked window in a registered region
    ForeignRegion foreign;   // set: `src` is in another process (an imported region)
    uint32_t length = 0;
    uint32_t sent = 0;
    uint32_t sink_stag = 0;
    uint64_t sink_to = 0;
    uint32_t msn = 0;
    uint64_t atomic_value = 0;
};

// Bytes of imported regions (memory of another process) pass through here (qp_foreign.cpp);
// the buffers are allocated on first use.
constexpr int kMaxForeignIov = 64;
struct ForeignStaging {
    bool any = false;    // the last sge_iov met an imported region
    bool used = false;   // this QP has sent bytes of one (never by reference then)
    size_t tx_used = 0;  // bytes of bufs->tx taken by the batch being built
    // A received segment's payload waits in bufs->rx, to be written out when it is whole.
    enum class Sink : uint8_t { kNone, kWrite, kRecv, kReadResponse } sink = Sink::kNone;
    int cnt = 0;
    uint32_t read_slot = 0;
    // Only QPs that meet an imported region pay for these.
    struct Buffers {
        // Per iovec of the last sge_iov: whose memory it is.
        std::array<ForeignRegion, kMaxForeignIov> region{};
        std::array<iovec, transport::kMaxPlacementIov> iov{};
        std::array<ForeignRegion, transport::kMaxPlacementIov> rx_region{};
        std::unique_ptr<uint8_t[]> tx;  // copies for the batch being built
        std::unique_ptr<uint8_t[]> rx;  // one segment's payload
    };
    std::unique_ptr<Buffers> bufs;
    Buffers &get() {
        if (!bufs) bufs = std::make_unique<Buffers>();
        return *bufs;
    }
};

class Qp : public ibv_qp_ex,
           public transport::Pollable,
           public transport::QpAcceptor,
           public transport::StreamHandler,
           public std::enable_shared_from_this<Qp> {
  public:
    using Lock = std::unique_lock<std::mutex>;
    static std::shared_ptr<Qp> create(Context *ctx, ibv_qp_init_attr_ex &attr, int &err);
    Qp(Context *ctx, const ibv_qp_init_attr_ex &attr);
    ~Qp() override;
    static Qp *from(ibv_qp *q) { return static_cast<Qp *>(reinterpret_cast<ibv_qp_ex *>(q)); }
    ibv_qp *qp() { return &qp_base; }

    int modify(ibv_qp_attr *attr, int mask);
    int query(ibv_qp_attr *attr, int mask, ibv_qp_init_attr *init);
    int post_send(ibv_send_wr *wr, ibv_send_wr **bad);
    int post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad);
    // Tears down the connection and unhooks from CQs; the object dies with its last ref.
    void shutdown();

    // QPs connected by the CM use the CM's TCP connection as their stream (as iWARP does),
    // never dial raw, and report the end of the connection through `hook` (run on the
    // engine thread, outside the QP lock).
    void set_cm_managed(std::function<void()> hook);
    // Passive CM side: `hook` runs (on the engine thread) when the peer's RTU or its first
    // request arrives, at once for a peer without the extensions (it sends no RTU).
    void set_established_hook(std::function<void()> hook);
    // Active CM side: tells the peer the application has seen ESTABLISHED.
    void send_rtu();
    int attach_cm_stream(UniqueFd fd, const wire::MpaFrame &peer);
    bool cm_managed() const { return cm_managed_; }
    // RC and both XRC halves: acknowledged, retried, with RNR and errors reported.
    bool reliable() const {
        return qp_base.qp_type == IBV_QPT_RC || qp_base.qp_type == IBV_QPT_XRC_SEND ||
               qp_base.qp_type == IBV_QPT_XRC_RECV;
    }
    // ibv_open_qp of an XRC receive QP: another handle on this QP; destroy ends the last.
    Xrcd *xrcd() const { return xrcd_; }
    void opened() { opens_.fetch_add(1); }
    bool close_one() { return opens_.fetch_sub(1) > 1; }
    // `now`: the poller's clock reading, reused for the whole pass (a poller spins here).
    void progress_from_poller(uint64_t now);
    void kick_engine();
    void flush_ack(Lock &lk);
    void flush_ack_at_exit() {
        Lock lk(mu_);
        flush_ack(lk);
    }

    // transport::Pollable
    void on_io(uint32_t events) override;
    void on_timer() override;
    bool on_spin() override;
    // transport::QpAcceptor
    transport::MpaHandshake::Decision on_hello(const wire::MpaFrame &req,
                                               const wire::QpHello &hello) override;
    void on_passive_connected(transport::MpaHandshake::Result &&r) override;
    // transport::StreamHandler
    bool place(const wire::SegmentHeader &h, transport::Placement &p) override;
    bool on_segment(const wire::SegmentHeader &h, std::span<const uint8_t> scratch) override;
    bool fill_tx(transport::TxBatch &batch) override;
    bool on_note(uint32_t note) override;

    // The ibv_wr_* (ibv_qp_ex) builder: WRs are staged apart from the QP and posted at
    // wr_complete, together, through the same checks as ibv_post_send (all or none).
    void wr_begin();
    ibv_send_wr &wr_new(ibv_wr_opcode op);
    int wr_finish(bool commit);

    // Raw packet QPs (qp_raw.cpp): the flow rules that choose the frames this QP receives.
    static int raw_check_rss(const ibv_qp_init_attr_ex &a);
    int raw_add_flow(Flow *f);
    void raw_remove_flow(Flow *f);
    bool raw_has_flows();

    // Multicast (qp_mcast.cpp): UD QPs receive a group's datagrams once attached.
    int attach_mcast(const uint8_t mgid[16]);
    int detach_mcast(const uint8_t mgid[16]);
    void on_mcast_io();

  private:
    friend class QpTestPeer;

    // qp.cpp
    int post_one_send(const ibv_send_wr &wr, Lock &lk);
    int validate_send(const ibv_send_wr &wr) const;
    void move_to_error(Lock &lk);
    void flush_all(Lock &lk);
    void complete_send(SendWqe &w, ibv_wc_status st);
    void complete_recv(const RecvWqe &r, ibv_wc_status st, ibv_wc_opcode op, uint32_t byte_len,
                       uint32_t imm, unsigned wc_flags, bool solicited);
    void retire_sends();
    void report_async(ibv_event_type t, Cq *cq = nullptr);
    // SOFTRDMA_FAULTS hooks: a receive the responder pretends not to have; a completed send
    // that may end the connection or the QP; the fault applied where the lock allows it.
    bool injected_rnr();
    void roll_completion_faults();
    void apply_injected_fault(Lock &lk);
    // `now` 0: read the clock. One reading serves the whole pass (pass_ns_).
    // `poller`: the pass of a thread polling a CQ, which gets back to it as soon as the
    // pass has made completions and owes nothing else now (ends_pass_early).
    void progress(Lock &lk, bool rx = true, uint64_t now = 0, bool poller = false);
    bool ends_pass_early() const;
    bool owes_nothing() const;
    bool defer_send(Lock &lk);
    void arm_timer(Lock &lk) { arm_timer(lk, now_ns()); }
    void arm_timer(Lock &lk, uint64_t now);
    void arm_timer_at(uint64_t when) { arm_timer_at(when, now_ns()); }
    void arm_timer_at(uint64_t when, uint64_t now);
    bool poller_active(uint64_t now) const;
    bool poller_active() const { return poller_active(now_ns()); }
    void update_interest(Lock &lk);
    void drive_from_engine();
    uint64_t retry_budget_ns(bool tcp_recovering) const;
    uint64_t retry_deadline_ns() const;
    bool grant_retry_grace(uint64_t now);
    bool awaiting_peer() const;

    // qp_connect.cpp
    bool i_dial() const;
    void start_connect(Lock &lk);
    void on_active_done(transport::MpaHandshake::Result &&r);
    bool adopt_stream(transport::MpaHandshake::Result &&r, Lock &lk);
    void on_stream_lost(Lock &lk, bool peer_error);
    std::vector<uint8_t> build_hello(bool reply, wire::QpHelloStatus st) const;

    // qp_tx.cpp
    bool emit_control(transport::TxBatch &b);
    bool emit_ack(transport::TxBatch &b, bool piggyback);
    bool emit_responses(transport::TxBatch &b);
    bool emit_requests(transport::TxBatch &b);
    bool emit_wqe(transport::TxBatch &b, SendWqe &w, uint32_t idx);
    bool local_protection_error(SendWqe &w);
    void run_local_op(SendWqe &w);
    void queue_control(wire::ControlType t, uint32_t seq, uint32_t arg);
    void queue_terminate(uint8_t etype, uint8_t ecode);
    bool sge_iov(const Sge *sges, uint32_t n, uint64_t off, uint64_t len, iovec *out, int &cnt,
                 int max, int access);

    // qp_foreign.cpp: imported regions. localize_tx copies the pieces of iov[0..cnt) that
    // are in `regions` into this batch's buffer and points them there: 1 done, 0 the buffer
    // is full (send the batch first), -1 the memory could not be read.
    int localize_tx(iovec *iov, int cnt, const ForeignRegion *regions);
    // Redirects a placement with imported pieces (foreign_.region) into the staging buffer;
    // on_segment writes it out (flush_rx) before it looks at the segment.
    void stage_rx(transport::Placement &p, ForeignStaging::Sink sink, uint32_t read_slot = 0);
    void flush_rx();
    // An atomic on an imported region: read, operate, write back under the table's lock.
    bool foreign_atomic(const MemView &v, const wire::AtomicRequest &r, uint64_t &orig);
    static void local_atomic(uint8_t *host, const wire::AtomicRequest &r, uint64_t &orig);
    void publish_stats(const ibv_qp_init_attr_ex &a);

    // qp_rx.cpp
    bool place_write(const wire::SegmentHeader &h, transport::Placement &p);
    bool place_send(const wire::SegmentHeader &h, transport::Placement &p);
    bool place_read_response(const wire::SegmentHeader &h, transport::Placement &p);
    bool room_for_response();
    bool handle_read_request(std::span<const uint8_t> payload);
    bool handle_atomic_request(const wire::SegmentHeader &h, std::span<const uint8_t> payload);
    bool handle_atomic_response(const wire::SegmentHeader &h, std::span<const uint8_t> payload);
    bool on_control(std::span<const uint8_t> payload);
    bool handle_control(const wire::ControlPayload &c);
    bool on_ack(uint32_t seq);
    // Same-host shared memory (qp_shm.cpp): the offer when a stream starts, the answers.
    void shm_offer();
    bool handle_shm_control(const wire::ControlPayload &c);
    void shm_send_switch(wire::ControlType t, uint32_t seq, uint32_t arg);
    // Shared regions (qp_direct.cpp): what this QP lets a same-host peer do, published in the
    // link; a WRITE or READ done straight in the peer's memory when nothing is outstanding.
    void publish_responder();
    bool try_direct(const ibv_send_wr &wr, Lock &lk);
    void await_shm_switch(Lock &lk);
    static constexpr int kMaxDirectSge = 16;
    bool xrc_target(uint32_t srqn);
    void xrc_release();
    bool handle_immediate(const wire::SegmentHeader &h, std::span<const uint8_t> payload);
    void responder_fail(wire::NakCode code, uint8_t etype, uint8_t ecode);
    void request_executed();
    bool take_recv(RecvWqe &out);

    // qp_ud.cpp
    int ud_open();
    bool ud_watch();
    int ud_check(const ibv_send_wr &wr) const;  // the checks ibv_post_send makes on UD
    int ud_post_one(const ibv_send_wr &wr);
    void ud_prepare(const ibv_send_wr &wr, UdPending &p, iovec *iov);
    void ud_transmit(UdPending &p, iovec *iov);
    void ud_pending_alloc();
    void ud_flush_pending();
    void ud_flush_pending_error();
    uint32_t ud_pend_slot(uint32_t i) const {
        return uint32_t((ud_pend_head_ + i) % ud_pending_.size());
    }
    iovec *ud_pend_iov(uint32_t slot) {
        return &ud_pending_iov_[size_t(slot) * (max_send_sge_ + 1)];
    }
    void ud_progress(Lock &lk);
    void ud_deliver(const wire::UdHeader &h, std::span<const uint8_t> payload, const sockaddr *from,
                    const uint8_t *mgid);
    void ud_take_errors(int fd);
    void ud_send_grant(const sockaddr *to, socklen_t len, uint32_t peer_qpn, uint32_t consumed,
                       bool restart);
    bool ud_may_send(const UdPending &p);
    bool ud_recv_one(int fd, bool mcast);

    // qp_raw.cpp
    int raw_open(const ibv_qp_init_attr_ex &a);
    void raw_attach(ibv_rwq_ind_table *table);
    void raw_close();
    int raw_post_one(const ibv_send_wr &wr);
    void raw_progress(Lock &lk);
    void raw_deliver(std::span<const uint8_t> frame, const wire::EthFrame &f);

    // qp_mcast.cpp
    void mcast_progress();
    void mcast_interest();
    bool mcast_fill_dst(const Ah &ah, sockaddr_storage &dst, socklen_t &dlen, uint8_t *ctl,
                        size_t ctl_cap, size_t &ctl_len);
    bool is_own_mcast(const sockaddr *from, uint32_t src_qpn) const;

  public:
    // Everything below is guarded by mu_.
    std::mutex mu_;
    Context *ctx_;
    Pd *pd_;
    Cq *scq_;
    Cq *rcq_;
    Srq *srq_;
    bool sq_sig_all_;
    uint32_t max_inline_;
    uint32_t max_send_sge_, max_recv_sge_;
    bool destroyed_ = false;
    // SOFTRDMA_FAULTS: this QP's decisions, its completed sends, a fault due at next progress.
    FaultDice dice_ = FaultDice::for_new(FaultDice::kQp);
    uint64_t sends_completed_ = 0;
    enum class InjectedFault : uint8_t {
        kNone,
        kDisconnect,
        kFatal
    } injected_ = InjectedFault::kNone;
    bool cm_managed_ = false;
    std::function<void()> cm_hook_;
    std::function<void()> established_hook_;
    void fire_established_hook();
    // Engine callbacks in flight; destroy waits for them so none touches a freed CQ.
    std::atomic<int> callbacks_{0};
    std::atomic<bool> dead_{false};
    struct CallbackGuard {
        explicit CallbackGuard(Qp &q) : qp(q) {
            qp.callbacks_.fetch_add(1);
            alive = !qp.dead_.load();
        }
        ~CallbackGuard() { qp.callbacks_.fetch_sub(1); }
        Qp &qp;
        bool alive;
    };

    // Attributes set by modify.
    ibv_qp_attr attr_{};
    int access_ = 0;
    uint8_t remote_gid_[16] = {};
    uint32_t remote_qpn_ = 0;

    // Send queue: ring of WQEs [head_, tail_), tx_ is the next to transmit. The rings come
    // from the parent domain's allocators when the QP was made on one.
    std::unique_ptr<DomainMemory> sq_mem_, rq_mem_;
    std::pmr::vector<SendWqe> sq_;
    std::pmr::vector<Sge> sq_sges_;
    std::pmr::vector<uint8_t> sq_inline_;
    uint32_t sq_head_ = 0, sq_count_ = 0, sq_tx_ = 0;  // tx_ counts from head
    uint64_t tx_off_ = 0;                              // bytes of the current WQE already segmented
    RecvQueue rq_;
    std::vector<Sge> recv_scratch_sges_;

    // Protocol state.
    std::unique_ptr<transport::FpduStream> stream_;
    std::shared_ptr<transport::MpaHandshake> handshake_;
    bool ext_ = false;            // both ends speak the softrdma extensions
    bool shm_ok_ = false;         // both ends may move the stream to shared memory
    bool shm_offerer_ = false;    // the end that accepted the TCP connection offers
    bool shm_offer_due_ = false;  // a new stream: offer (or say why not) at its first request
    std::atomic<bool> sock_event_{false};  // the engine saw the socket readable
    uint64_t ring_rx_ns_ = 0;              // when frames last came through a shared-memory ring
    // The engine reads our ring on every turn (ProgressEngine::spin) while frames came a
    // moment ago and nobody polls: ring_spinning() says whether that should go on.
    bool spinning_ = false;
    bool ring_spinning(uint64_t now) const;
    // Turns in a row on which on_spin found the lock taken (the engine thread's own count).
    uint32_t spin_lock_misses_ = 0;
    static constexpr uint32_t kSpinLockMisses = 64;
    std::shared_ptr<PeerRegions> peer_regions_;  // the peer's region file, once opened
    bool peer_regions_failed_ = false;           // it cannot be opened: do not try again
    bool shm_switch_awaited_ = false;            // the first direct attempt waited for the move
    bool connecting_ = false;
    bool tx_blocked_ = false;
    uint64_t next_dial_ns_ = 0;
    uint64_t dial_backoff_ns_ = 0;
    uint32_t peer_ird_ = kDefaultIrd;
    static constexpr uint32_t kDefaultIrd = 16;

    // Requester.
    uint32_t next_seq_ = 1;  // sequence number of the next request message
    uint32_t send_msn_ = 1, read_msn_ = 1, atomic_msn_ = 1;
    uint32_t acked_seq_ = 0;
    uint32_t rd_outstanding_ = 0;        // READs + atomics in flight
    uint64_t last_progress_ns_ = 0;      // last ACK/response while requests were outstanding
    uint64_t grace_epoch_ = UINT64_MAX;  // the last_progress_ns_ grace_until_ns_ is for
    uint64_t grace_until_ns_ = 0;
    // Polls that may still skip the full pass: a QP on shared memory with nothing to send
    // and nothing arriving. Every kIdlePolls-th poll makes the full pass all the same (the
    // deferred ACK, the timers, the look at the socket), and so does any other caller.
    uint32_t idle_polls_ = 0;
    static constexpr uint32_t kIdlePolls = 16;
    uint32_t completions_ = 0;           // pushed to a CQ, ever (a pass compares before and after)
    bool ring_idle() const;              // on shared memory, and nothing in the ring or the socket
    bool quiet() const;                  // ring_idle(), and nothing to send, answer or acknowledge
    uint64_t pass_ns_ = 0;               // the clock when the current progress pass began (mu_)
    std::atomic<uint64_t> timer_at_{0};  // deadline of the engine timer we have pending
    std::atomic<uint32_t> armed_mask_{0};  // epoll events the engine is watching for us
    static constexpr uint64_t kPollerWindowNs = 1'000'000;
    // Doorbell batching (defer_send): requests posted behind at least kBatchMinInFlight
    // unacknowledged ones wait, up to kBatchMaxWrs of them and kBatchMaxBytes in all, for
    // at most kBatchFlushNs, or, while the application's own calls flush them, until its
    // next post or poll (the engine's poller-window timer is the backstop).
    bool held_ = false;         // requests wait in the send queue (defer_send)
    bool app_flushes_ = false;  // the last held ones left through a post or a poll
    void note_flush(bool by_app);
    static constexpr uint32_t kBatchMinInFlight = 4;
    static constexpr uint32_t kBatchMaxWrs = 16;
    static constexpr uint64_t kBatchMaxBytes = 64 * 1024;
    static constexpr uint64_t kBatchFlushNs = 30'000;
    // Linux's TCP_RTO_MIN: the soonest TCP retransmits a lost segment.
    static constexpr uint64_t kTcpMinRtoNs = 200'000'000;
    bool tx_imm_stage_ = false;  // WRITE WITH IMM: data queued, immediate not yet
    bool rnr_wait_ = false;
    uint64_t rnr_resume_ns_ = 0;
    uint32_t resync_seq_ = 0;
    bool send_resync_ = false;

    // Responder.
    uint32_t executed_seq_ = 0;  // requests executed, cumulative
    uint32_t acked_sent_ = 0;
    uint64_t ack_due_ns_ = 0;  // a deferred ACK goes out alone at this time
    // How long an ACK may wait for data to ride on. On TCP one of its own costs a send();
    // on the ring a few stores, and a streaming sender whose window waits on it loses far
    // more (64 B SENDs: 2.8 Mmsg/s with 20 µs, 4.5 with 2 µs).
    static constexpr uint64_t kAckDelayNs = 20'000;
    static constexpr uint64_t kShmAckDelayNs = 2'000;
    bool rnr_dropping_ = false;
    bool recv_active_ = false;  // a multi-segment SEND is being placed
    RecvWqe cur_recv_{};
    std::vector<Sge> cur_recv_sges_;
    ForeignStaging foreign_;
    KeyCache keys_;  // the key checks of this QP's traffic (mu_)
    // What `softrdma stat`/`res` show of this QP (common/stats_page.h); written under mu_.
    stats::QpSlot *stats_ = stats::claim_qp();
    uint32_t cur_recv_msn_ = 0;
    uint64_t cur_recv_len_ = 0;
    bool cur_recv_error_ = false;
    std::vector<ResponseJob> responses_;
    uint32_t resp_head_ = 0, resp_count_ = 0;
    bool fatal_pending_ = false;  // a NAK/TERMINATE is queued; close after sending
    struct ControlMsg {
        wire::ControlType type;
        uint32_t seq, arg;
    };
    std::vector<ControlMsg> ctrl_;
    bool term_pending_ = false;
    uint8_t term_etype_ = 0, term_ecode_ = 0;

    // UD: one UDP socket per QP, datagrams land in ud_buf_ before they are checked.
    UniqueFd ud_fd_;
    std::vector<uint8_t> ud_buf_;
    // Datagrams lost, by cause (reported under SOFTRDMA_DEBUG when the QP is destroyed).
    // UD flow control: work requests held back, in order, while a peer's window is full; a
    // ring of max_send_wr slots allocated when first needed.
    std::vector<UdPending> ud_pending_;
    std::vector<iovec> ud_pending_iov_;
    std::vector<uint8_t> ud_pending_inline_;
    uint32_t ud_pend_head_ = 0, ud_pend_count_ = 0;
    std::unique_ptr<transport::UdFlow> ud_flow_;  // UD only: 6 KiB an RC QP need not touch
    uint32_t ud_window_ = 0;                      // datagrams each sender may have in flight to us

    // Raw packet QPs: ud_fd_ is the packet socket and ud_buf_ the frame just received.
    std::vector<Flow *> flows_;  // by priority
    uint32_t raw_mtu_ = 0;
    std::vector<uint8_t> raw_tx_;       // IBV_SEND_IP_CSUM fills checksums in a copy
    RwqIndTable *rss_table_ = nullptr;  // an RSS QP: receives go to the table's WQs
    std::vector<uint8_t> rss_key_;
    uint64_t rss_fields_ = 0;
    static constexpr size_t kMaxRssKey = 128;
    // Multicast: one socket on the group port, joined to every attached group.
    struct McastGroup {
        uint8_t mgid[16];
        sockaddr_in6 ep;  // the IP group and port that carry it
    };
    UniqueFd mc_fd_;
    std::shared_ptr<transport::Pollable> mc_watch_;
    std::vector<McastGroup> mc_groups_;
    std::atomic<bool> mc_armed_{false};
    bool block_self_mcast_ = false;

    // XRC. Receive QPs: their domain, and the SRQ the peer's current requests are for (held;
    // pd_, srq_ and rcq_ follow it). Send QPs: the SRQ number last announced to the peer.
    Xrcd *xrcd_ = nullptr;
    Srq *xrc_srq_ = nullptr;
    static constexpr uint32_t kNoSrqn = UINT32_MAX;
    uint32_t tx_srqn_ = kNoSrqn;
    std::atomic<int> opens_{1};

    // ibv_wr_* builder: the application thread's alone until wr_complete (not under mu_).
    WrBatch wr_batch_;
};

uint32_t sq_slot(const Qp &qp, uint32_t i);

}  // namespace softrdma::verbs

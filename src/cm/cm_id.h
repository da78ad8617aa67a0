// SPDX-License-Identifier: BSD-2-Clause
// The rdma_cm_id: the kernel's rdma_cm state machine, moved into the process. One TCP
// connection per connected id, which becomes its QP's stream (iWARP style).
#pragma once
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cm/cm_event.h"
#include "common/fault_plan.h"
#include "common/stats_page.h"
#include "common/unique_fd.h"
#include "transport/mpa_handshake.h"
#include "transport/progress_engine.h"
#include "verbs/device.h"
#include "wire/mpa.h"

namespace softrdma::cm {

enum class State {
    kIdle,
    kAddrQuery,
    kAddrResolved,
    kRouteQuery,
    kRouteResolved,
    kConnect,
    kDisconnect,
    kAddrBound,
    kListen,
    kDeviceRemoval,
    kDestroying,
};
const char *state_name(State s);

// RoCE private-data limits (IB CM message sizes minus the 36-byte CMA header on REQ).
constexpr size_t kConnectPrivateData = 56;
constexpr size_t kAcceptPrivateData = 196;
constexpr size_t kRejectPrivateData = 148;
constexpr size_t kUdConnectPrivateData = 180;
constexpr size_t kUdAcceptPrivateData = 136;
// IB CM reject reasons reported in REJECTED events.
constexpr int kRejInvalidServiceId = 8;
constexpr int kRejConsumerDefined = 28;
constexpr int kRejVendorOptionNotSupported = 35;

class Listener;

class CmId : public rdma_cm_id,
             public transport::Pollable,
             public std::enable_shared_from_this<CmId> {
  public:
    CmId(EventChannel *ch, void *ctx, rdma_port_space ps, ibv_qp_type qpt);
    ~CmId();
    static CmId *from(rdma_cm_id *id) { return static_cast<CmId *>(id); }

    // Queues an event for the application. Called with mu held.
    // `ud` fills param.ud (ah_attr, qp_num, qkey) instead of param.conn.
    void post_event(rdma_cm_event_type type, int status, const void *pd = nullptr,
                    size_t pd_len = 0, size_t report_len = 0,
                    std::shared_ptr<CmId> new_id = nullptr, const rdma_ud_param *ud = nullptr);
    void set_state(State s);
    // Sync ids: wait for the next event on the private channel and turn it into errno.
    int complete_sync();

    void on_io(uint32_t) override;  // UD ids: SIDR datagrams on `sock`
    void on_timer() override;       // re-dials a refused connect (see connect())

    std::mutex mu;
    std::condition_variable cv;
    State state = State::kIdle;
    // What `softrdma res` shows of this id: refreshed at each state change and event.
    stats::CmSlot *stats = stats::claim_cm();
    void publish_stats();
    EventChannel *chan;
    std::unique_ptr<EventChannel> own_chan;  // sync mode
    bool sync = false;
    unsigned events_reported = 0, events_acked = 0;

    // Options.
    bool reuseaddr = false;
    int afonly = -1;  // -1: not set
    uint8_t tos = 0;
    uint8_t ack_timeout = 0;  // 0: not set
    // The QP's local ACK timeout: the option, or what the kernel's CM gives a RoCE path (its
    // packet lifetime 16, plus one): 4.096 us * 2^17 = 0.54 s per attempt.
    uint8_t qp_timeout() const { return ack_timeout ? ack_timeout : 17; }

    // Addressing.
    UniqueFd sock;          // bound TCP socket: reserves the port, later listens or connects
    uint32_t port_key = 0;  // where the id's port reservation is filed (0: none; cm_addr.cpp)
    bool port_at_connect = false;  // bound without a port: connect picks it (claim_port)
    bool port_by_connect = false;  // the port filed is the one a connect picked
    std::unique_ptr<ibv_sa_path_rec> path;

    // Listening.
    std::shared_ptr<Listener> listener;
    int backlog = 0;
    int pending_requests = 0;
    // ibv_qp_init_attr saved by a passive rdma_create_ep for rdma_get_request.
    bool has_ep_qp_attr = false;
    ibv_qp_init_attr ep_qp_attr{};

    // Connection.
    std::weak_ptr<CmId> parent;  // the listening id that created this one
    std::shared_ptr<transport::MpaHandshake> handshake;
    wire::MpaFrame peer_frame;
    rdma_conn_param conn{};
    std::vector<uint8_t> connect_pd;  // what rdma_connect sent, for re-dials
    uint64_t dial_started_ns = 0;
    uint64_t resolve_deadline_ns = 0;
    uint64_t timewait_exit_ns = 0;  // after a disconnect: when TIMEWAIT_EXIT is due
    // SOFTRDMA_FAULTS: a listener's decisions; an accept reply held back (delayed or lost).
    FaultDice dice = FaultDice::for_new(FaultDice::kCmId);
    std::vector<uint8_t> held_reply;
    uint64_t held_reply_ns = 0;
    bool held_reply_lost = false;
    UniqueFd parked_fd;  // CONNECT_RESPONSE: the stream waits for rdma_establish
    bool passive = false;
    bool established = false;
    bool rtu_due = false;  // active: send the RTU when the application takes ESTABLISHED
    uint32_t token = 0;    // rdma_init_qp_attr's stand-in QPN for an application-driven QP

    // The QP this connection feeds: the CM's own, or the application's (found by token).
    ibv_qp *conn_qp();

    // Resources rdma_create_qp made for the id (NULL PD, NULL CQs).
    bool own_cqs = false;
    bool own_srq_cq = false;

    // SIDR (RDMA_PS_UDP ids): the active side's request and retransmission state; the
    // passive side's requester and a dup of the listener's socket to answer from.
    bool sidr_watched = false;
    uint32_t sidr_req_id = 0;
    std::vector<uint8_t> sidr_request;  // encoded, for retransmission
    uint64_t sidr_deadline_ns = 0;
    UniqueFd sidr_reply_fd;
    std::vector<uint8_t> sidr_reply;  // what we answered, for a retransmitted request
    struct SidrSeen {
        sockaddr_storage from;
        uint32_t req_id;
        std::weak_ptr<CmId> child;
    };
    std::vector<SidrSeen> sidr_seen;  // listener: requests already turned into ids

    // Multicast groups joined through this id (cm_mcast.cpp).
    struct McastJoin {
        sockaddr_storage addr;  // as the application named the group, for leave
        socklen_t addr_len;
        void *context;
        ibv_gid mgid;
        bool send_only;
    };
    std::vector<McastJoin> mcast;

    // ECE.
    ibv_ece local_ece{};
    ibv_ece remote_ece{};
};

// Process-wide: one context per device, shared by all ids (as rdma-core keeps cma_dev).
ibv_context *context_for_gid(const uint8_t gid[16]);
ibv_context *context_for_addr(const sockaddr *sa);
ibv_pd *default_pd(ibv_context *ctx);
// The id now has a device: `verbs`, port 1, and (unless the application gave one) the
// device's default PD in `pd`, as rdma-core sets them when an id acquires its device.
void take_device(rdma_cm_id &id, ibv_context *ctx);
std::vector<ibv_context *> all_contexts();
using verbs::sockaddr_to_gid;
socklen_t sockaddr_len(const sockaddr *sa);
bool is_wildcard(const sockaddr *sa);  // INADDR_ANY or ::
uint16_t port_of(const sockaddr *sa);  // network byte order
void set_port(sockaddr *sa, uint16_t port_be);
// Opens the socket of a TCP id bound without one (rdma_resolve_addr's bind): on its source
// address, with its port if it has one, else with one picked now (`port_now`) or by its
// connect. mu held.
int open_id_socket(CmId &id, bool port_now);
// Files the port the kernel gave an id bound without one (once its socket has it, or, with
// `bind_now`, by opening or binding one now). mu held.
void claim_port(CmId &id, bool bind_now);
// Gives the id's port back to its port space (mu held or the id unreachable).
void release_port(CmId &id);

uint64_t cm_timeout_ns();
// Sets errno and returns -1, the librdmacm error convention (rdma-core's ERR()).
int fail(int err);

// cm_sidr.cpp (mu held unless said otherwise).
int sidr_listen(CmId &id);
int sidr_connect(CmId &id, const rdma_conn_param *param);
int sidr_answer(CmId &id, const rdma_conn_param *param, const void *pd, uint8_t len, bool reject);
void sidr_on_timer(CmId &id);

// cm_mcast.cpp (mu held).
void leave_all_multicast(CmId &id);

bool cm_debug();
void cm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CM_LOG(...)                                                          \
    do {                                                                     \
        if (::softrdma::cm::cm_debug()) ::softrdma::cm::cm_log(__VA_ARGS__); \
    } while (0)

}  // namespace softrdma::cm

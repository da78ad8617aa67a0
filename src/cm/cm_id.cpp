// SPDX-License-Identifier: BSD-2-Clause
// Ids, events, channels, options and the shared device contexts.
#include "cm/cm_id.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <unordered_map>

#include "cm/cm_api.h"
#include "verbs/cm_token.h"
#include "verbs/device.h"
#include "verbs/qp.h"
#include "verbs/verbs_ops.h"

namespace softrdma::cm {
namespace {

std::mutex g_ids_mu;
std::unordered_map<CmId *, std::shared_ptr<CmId>> &ids() {
    static auto *m =
        std::make_unique<std::unordered_map<CmId *, std::shared_ptr<CmId>>>().release();
    return *m;
}

struct DevCtx {
    verbs::Device *dev;
    ibv_context *ctx;
    ibv_pd *pd = nullptr;
};
std::mutex g_dev_mu;
std::vector<DevCtx> &devs() {
    static auto *v = std::make_unique<std::vector<DevCtx>>().release();
    return *v;
}

DevCtx *dev_entry(verbs::Device *d) {
    for (auto &e : devs())
        if (e.dev == d) return &e;
    ibv_context *ctx = verbs::open_device(d);
    if (!ctx) return nullptr;
    devs().push_back({d, ctx});
    return &devs().back();
}

}  // namespace

int fail(int err) {
    errno = err;
    return -1;
}

bool cm_debug() {
    static const bool on = [] {
        const char *v = std::getenv("RDMA_CM_DEBUG");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

void cm_log(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "rdma_cm: %s\n", line);
}

const char *state_name(State s) {
    static const char *const kNames[] = {
        "IDLE",       "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY",    "ROUTE_RESOLVED", "CONNECT",
        "DISCONNECT", "ADDR_BOUND", "LISTEN",        "DEVICE_REMOVAL", "DESTROYING"};
    return kNames[int(s)];
}

socklen_t sockaddr_len(const sockaddr *sa) {
    return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

ibv_context *context_for_gid(const uint8_t gid[16]) {
    std::lock_guard lk(g_dev_mu);
    // The cached list first; an address added a moment ago that the watcher has not seen
    // yet costs one fresh scan.
    for (bool fresh : {false, true})
        for (verbs::Device *d : fresh ? verbs::scan_devices() : verbs::known_devices())
            if (d->has_gid(gid)) {
                DevCtx *e = dev_entry(d);
                return e ? e->ctx : nullptr;
            }
    return nullptr;
}

ibv_context *context_for_addr(const sockaddr *sa) {
    uint8_t gid[16];
    sockaddr_to_gid(sa, gid);
    return context_for_gid(gid);
}

ibv_pd *default_pd(ibv_context *ctx) {
    std::lock_guard lk(g_dev_mu);
    for (auto &e : devs())
        if (e.ctx == ctx) {
            if (!e.pd) e.pd = verbs::alloc_pd(ctx);
            return e.pd;
        }
    return nullptr;
}

void take_device(rdma_cm_id &id, ibv_context *ctx) {
    id.verbs = ctx;
    id.port_num = 1;
    if (ctx && !id.pd) id.pd = default_pd(ctx);
}

std::vector<ibv_context *> all_contexts() {
    std::lock_guard lk(g_dev_mu);
    std::vector<ibv_context *> out;
    for (verbs::Device *d : verbs::scan_devices())
        if (DevCtx *e = dev_entry(d)) out.push_back(e->ctx);
    return out;
}

// ------------------------------------------------------------------------------ CmId

CmId::CmId(EventChannel *ch, void *ctx, rdma_port_space ps_, ibv_qp_type qpt) : rdma_cm_id{} {
    if (!ch) {
        own_chan = std::make_unique<EventChannel>();
        ch = own_chan.get();
        sync = true;
    }
    chan = ch;
    channel = ch;
    context = ctx;
    ps = ps_;
    qp_type = qpt;
    port_num = 0;
    route.addr.src_addr.sa_family = AF_INET;
    route.addr.dst_addr.sa_family = AF_INET;
}

CmId::~CmId() {
    stats::release(stats);
    verbs::cm_token_free(token);
}

void CmId::publish_stats() {
    constexpr auto r = std::memory_order_relaxed;
    stats->state.store(uint8_t(state), r);
    stats->ps.store(uint8_t(unsigned(ps) & 0xff), r);
    uint64_t w[4];
    static_assert(sizeof w >= sizeof(sockaddr_in6));
    std::memset(w, 0, sizeof w);
    std::memcpy(w, &route.addr.src_addr, sizeof(sockaddr_in6));
    for (int i = 0; i < 4; ++i) stats->src[i].store(w[i], r);
    std::memset(w, 0, sizeof w);
    std::memcpy(w, &route.addr.dst_addr, sizeof(sockaddr_in6));
    for (int i = 0; i < 4; ++i) stats->dst[i].store(w[i], r);
    // The QPN is recorded by rdma_create_qp/rdma_destroy_qp: `qp` itself may dangle here (an
    // application may ibv_destroy_qp it before rdma_destroy_id).
    stats->live.store(1, std::memory_order_release);
}

ibv_qp *CmId::conn_qp() {
    if (qp) return qp;
    auto q = verbs::cm_token_qp(token);
    return q ? q->qp() : nullptr;  // the registry keeps it alive until ibv_destroy_qp
}

void CmId::set_state(State s) {
    if (s != state)
        CM_LOG("id %p: %s -> %s", static_cast<void *>(static_cast<rdma_cm_id *>(this)),
               state_name(state), state_name(s));
    state = s;
    publish_stats();
}

void CmId::post_event(rdma_cm_event_type type, int status, const void *pd, size_t pd_len,
                      size_t report_len, std::shared_ptr<CmId> new_id, const rdma_ud_param *ud) {
    switch (type) {
        case RDMA_CM_EVENT_CONNECT_REQUEST:
            stats::count(stats::kCmRequestRcvd);
            break;
        case RDMA_CM_EVENT_ESTABLISHED:
            stats::count(stats::kCmEstablished);
            stats->established.store(1, std::memory_order_relaxed);
            break;
        case RDMA_CM_EVENT_REJECTED:
            stats::count(stats::kCmRejectRcvd);
            break;
        case RDMA_CM_EVENT_DISCONNECTED:
            stats::count(stats::kCmDisconnected);
            stats->established.store(0, std::memory_order_relaxed);
            break;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            stats::count(stats::kCmAddrError);
            break;
        default:
            break;
    }
    publish_stats();
    auto ev = std::make_unique<CmEvent>();
    std::memset(static_cast<rdma_cm_event *>(ev.get()), 0, sizeof(rdma_cm_event));
    std::memset(ev->pd_buf, 0, sizeof ev->pd_buf);
    ev->event = type;
    ev->status = status;
    ev->listen_id = nullptr;
    ev->owner = shared_from_this();
    if (new_id) {
        ev->id = new_id.get();
        ev->listen_id = this;
        ev->new_id = std::move(new_id);
    } else {
        ev->id = this;
    }
    if (pd_len) std::memcpy(ev->pd_buf, pd, std::min(pd_len, sizeof ev->pd_buf));
    // RoCE reports the fixed message size, zero padded, not the length sent.
    const size_t len = std::max(pd_len, report_len);
    if (len) {
        ev->param.conn.private_data = ev->pd_buf;
        ev->param.conn.private_data_len = uint8_t(std::min<size_t>(len, 255));
    }
    if (ud) {
        // MULTICAST_JOIN/ERROR carry the join's context where private data would be.
        if (!len && ud->private_data) ev->param.ud.private_data = ud->private_data;
        ev->param.ud.ah_attr = ud->ah_attr;
        ev->param.ud.qp_num = ud->qp_num;
        ev->param.ud.qkey = ud->qkey;
    } else {
        // A CONNECT_REQUEST (posted on the listener) reports the new id's request.
        const rdma_conn_param &c = ev->new_id ? ev->new_id->conn : conn;
        ev->param.conn.responder_resources = c.responder_resources;
        ev->param.conn.initiator_depth = c.initiator_depth;
        ev->param.conn.retry_count = c.retry_count;
        ev->param.conn.rnr_retry_count = c.rnr_retry_count;
    }
    CM_LOG("id %p: event %s status %d%s%s", static_cast<void *>(ev->id), event_str(type), status,
           status < 0 ? ": " : "", status < 0 ? std::strerror(-status) : "");
    chan->push(std::move(ev));  // CONNECT_REQUEST too: it arrives on the listener's channel
}

int CmId::complete_sync() {
    // Called without mu held: waits for the event the last call produced.
    if (event) {
        ack_cm_event(event);
        event = nullptr;
    }
    rdma_cm_event *ev;
    if (get_cm_event(chan, &ev) != 0) return -1;
    event = ev;
    if (ev->status) {
        if (ev->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
        return fail(ev->status < 0 ? -ev->status : ev->status);
    }
    return 0;
}

// ------------------------------------------------------------------------ channels

rdma_event_channel *create_event_channel() {
    auto ch = std::make_unique<EventChannel>();
    if (ch->fd < 0) {
        errno = EMFILE;
        return nullptr;
    }
    CM_LOG("create_event_channel fd %d", ch->fd);
    return ch.release();
}

void destroy_event_channel(rdma_event_channel *ch) {
    if (!ch) return;
    CM_LOG("destroy_event_channel fd %d", ch->fd);
    // Programs commonly tear down while their CM thread is on its way back into
    // rdma_get_cm_event (rping does). Reclamation is deferred: the last few destroyed channels
    // stay valid (and silent), so such a late reader blocks instead of reading freed memory or
    // a reused fd. The bound keeps fds and memory constant for programs that churn channels.
    // Never destroyed: the program's CM thread may still be reading while exit() runs the
    // static destructors (rping's main returns with it blocked), and must not see EBADF.
    constexpr size_t kRetired = 16;
    struct Retired {
        std::mutex mu;
        std::deque<std::unique_ptr<EventChannel>> q;
    };
    static Retired &r = *std::make_unique<Retired>().release();
    auto &retired_mu = r.mu;
    auto &retired = r.q;
    std::unique_ptr<EventChannel> old;
    auto *c = EventChannel::from(ch);
    c->discard_all();
    {
        std::lock_guard lk(retired_mu);
        retired.emplace_back(c);
        if (retired.size() > kRetired) {
            old = std::move(retired.front());
            retired.pop_front();
        }
    }
}

int get_cm_event(rdma_event_channel *ch, rdma_cm_event **out) {
    if (!ch || !out) return fail(EINVAL);
    CmEvent *ev = EventChannel::from(ch)->get();
    if (!ev) return -1;
    CM_LOG("get_cm_event fd %d: %s status %d id %p", ch->fd, event_str(ev->event), ev->status,
           static_cast<void *>(ev->id));
    {
        CmId *owner = ev->owner.get();
        std::lock_guard lk(owner->mu);
        ++owner->events_reported;
        // rdma-core sends the RTU while it hands CONNECT_RESPONSE to the application as
        // ESTABLISHED: the passive side's ESTABLISHED follows this, not the reply.
        if (ev->event == RDMA_CM_EVENT_ESTABLISHED && owner->rtu_due) {
            owner->rtu_due = false;
            if (ibv_qp *q = owner->conn_qp()) verbs::Qp::from(q)->send_rtu();
        }
    }
    *out = ev;
    return 0;
}

int ack_cm_event(rdma_cm_event *e) {
    if (!e) return fail(EINVAL);
    std::unique_ptr<CmEvent> ev(static_cast<CmEvent *>(e));
    CM_LOG("ack_cm_event %s id %p", event_str(ev->event), static_cast<void *>(ev->id));
    CmId *owner = ev->owner.get();
    {
        std::lock_guard lk(owner->mu);
        ++owner->events_acked;
    }
    owner->cv.notify_all();
    return 0;
}

const char *event_str(rdma_cm_event_type t) {
    static const char *const kNames[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
    const unsigned i = unsigned(t);
    return i < sizeof kNames / sizeof *kNames ? kNames[i] : "UNKNOWN EVENT";
}

// ---------------------------------------------------------------------------- ids

void start_netlink_watcher();

void for_each_id(const std::function<void(CmId &)> &fn) {
    std::vector<std::shared_ptr<CmId>> all;
    {
        std::lock_guard lk(g_ids_mu);
        for (auto &[p, ref] : ids()) all.push_back(ref);
    }
    for (auto &id : all) {
        std::lock_guard lk(id->mu);
        fn(*id);
    }
}

int create_id_qpt(rdma_event_channel *ch, rdma_cm_id **out, void *ctx, rdma_port_space ps,
                  ibv_qp_type qpt) {
    if (!out) return fail(EINVAL);
    start_netlink_watcher();
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB)
        return fail(EINVAL);
    // Not make_shared (nor elsewhere): an engine timer's weak reference would keep the whole
    // id allocated until the timer is due, long after rdma_destroy_id.
    std::shared_ptr<CmId> id =
        std::make_unique<CmId>(ch ? EventChannel::from(ch) : nullptr, ctx, ps, qpt);
    {
        std::lock_guard lk(g_ids_mu);
        ids()[id.get()] = id;
    }
    CM_LOG("create_id %p ps 0x%x%s", static_cast<void *>(id.get()), unsigned(ps),
           id->sync ? " (sync)" : "");
    *out = id.get();
    return 0;
}

int create_id(rdma_event_channel *ch, rdma_cm_id **out, void *ctx, rdma_port_space ps) {
    const ibv_qp_type qpt = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
    return create_id_qpt(ch, out, ctx, ps, qpt);
}

void register_child(const std::shared_ptr<CmId> &id) {
    std::lock_guard lk(g_ids_mu);
    ids()[id.get()] = id;
}

void release_listener(CmId &id);
void abort_connection(CmId &id);

int destroy_id(rdma_cm_id *raw) {
    if (!raw) return fail(EINVAL);
    std::shared_ptr<CmId> id;
    {
        std::lock_guard lk(g_ids_mu);
        auto it = ids().find(CmId::from(raw));
        if (it == ids().end()) return fail(EINVAL);
        id = it->second;
        ids().erase(it);
    }
    CM_LOG("destroy_id %p", static_cast<void *>(raw));
    if (id->event) {
        ack_cm_event(id->event);
        id->event = nullptr;
    }
    {
        std::unique_lock lk(id->mu);
        id->set_state(State::kDestroying);
        release_listener(*id);
        abort_connection(*id);
        leave_all_multicast(*id);
        // The port is free when rdma_destroy_id returns, as in the kernel, even while an
        // engine callback still holds the object: a listening socket left open would make
        // the next bind of the port fail (perftest -R binds its port again at once).
        id->sock.reset();
        // Every event handed to the application must be acked first (rdma_get_cm_event(3)).
        id->cv.wait(lk, [&] { return id->events_acked >= id->events_reported; });
    }
    id->chan->discard_for(id.get());
    release_port(*id);
    return 0;
}

int migrate_id(rdma_cm_id *raw, rdma_event_channel *ch) {
    if (!raw) return fail(EINVAL);
    CmId *id = CmId::from(raw);
    // A sync id keeps its last event for the caller to read; nobody will ack it once the id
    // moves, so it is acked here, as rdma-core does.
    if (id->sync && raw->event) {
        rdma_cm_event *held = raw->event;
        raw->event = nullptr;
        ack_cm_event(held);
    }
    std::unique_lock lk(id->mu);
    id->cv.wait(lk, [&] { return id->events_acked >= id->events_reported; });
    if (ch) {
        id->chan = EventChannel::from(ch);
        id->own_chan.reset();
        id->sync = false;
    } else if (!id->sync) {
        id->own_chan = std::make_unique<EventChannel>();
        id->chan = id->own_chan.get();
        id->sync = true;
    }
    id->channel = id->chan;
    CM_LOG("migrate_id %p to fd %d", static_cast<void *>(raw), id->chan->fd);
    return 0;
}

int set_option(rdma_cm_id *raw, int level, int optname, void *optval, size_t optlen) {
    if (!raw || !optval) return fail(EINVAL);
    CmId *id = CmId::from(raw);
    std::lock_guard lk(id->mu);
    CM_LOG("set_option %p level %d name %d len %zu", static_cast<void *>(raw), level, optname,
           optlen);
    if (level == RDMA_OPTION_ID) {
        switch (optname) {
            case RDMA_OPTION_ID_TOS:
                if (optlen != sizeof(uint8_t)) return fail(EINVAL);
                id->tos = *static_cast<uint8_t *>(optval);
                return 0;
            case RDMA_OPTION_ID_REUSEADDR:
                if (optlen != sizeof(int)) return fail(EINVAL);
                // Can only be cleared before binding.
                if (!*static_cast<int *>(optval) && id->state != State::kIdle) return fail(EINVAL);
                id->reuseaddr = *static_cast<int *>(optval) != 0;
                return 0;
            case RDMA_OPTION_ID_AFONLY:
                if (optlen != sizeof(int)) return fail(EINVAL);
                if (id->state != State::kIdle) return fail(EINVAL);
                id->afonly = *static_cast<int *>(optval) != 0;
                return 0;
            case RDMA_OPTION_ID_ACK_TIMEOUT:
                if (optlen != sizeof(uint8_t)) return fail(EINVAL);
                id->ack_timeout = *static_cast<uint8_t *>(optval);
                return 0;
            default:
                return fail(ENOSYS);
        }
    }
    if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
        if (optlen == 0 || optlen % sizeof(ibv_path_data)) return fail(EINVAL);
        if (id->state != State::kAddrResolved) return fail(EINVAL);
        id->set_state(State::kRouteResolved);
        id->route.num_paths = 1;
        return 0;
    }
    return fail(ENOSYS);
}

}  // namespace softrdma::cm

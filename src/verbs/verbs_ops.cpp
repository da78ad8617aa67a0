// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/verbs_ops.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "verbs/ah.h"
#include "verbs/comp_channel.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/dm.h"
#include "verbs/counters.h"
#include "verbs/flow.h"
#include "verbs/mr.h"
#include "verbs/mw.h"
#include "verbs/odp.h"
#include "verbs/parent_domain.h"
#include "verbs/pd.h"
#include "verbs/qp.h"
#include "verbs/region_file.h"
#include "verbs/srq.h"
#include "verbs/wq.h"
#include "verbs/xrcd.h"

namespace softrdma::verbs {
namespace {

// QPs are shared with the progress engine; the application's handle is one reference.
std::mutex g_qp_mu;
std::unordered_map<Qp *, std::shared_ptr<Qp>> &qp_registry() {
    static auto *m = std::make_unique<std::unordered_map<Qp *, std::shared_ptr<Qp>>>().release();
    return *m;
}

constexpr unsigned kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                  IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB;

bool access_ok(unsigned access) {
    const unsigned mandatory = access & ~unsigned(IBV_ACCESS_OPTIONAL_RANGE);
    if (mandatory & ~kKnownAccess) return false;
    // Remote write or atomic access needs local write (IB spec 10.6.3.1).
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        return false;
    return true;
}

int cq_poll(ibv_cq *cq, int n, ibv_wc *wc) {
    return Cq::from(cq)->poll(n, wc);
}
int cq_arm(ibv_cq *cq, int solicited_only) {
    return Cq::from(cq)->arm(solicited_only != 0);
}
int qp_post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) {
    return Qp::from(qp)->post_send(wr, bad);
}
int qp_post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    return Qp::from(qp)->post_recv(wr, bad);
}
int srq_post_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    return Srq::from(srq)->post(wr, bad);
}

}  // namespace

void install_context_ops(Context &c) {
    ibv_context_ops &o = c.context.ops;
    o.poll_cq = cq_poll;
    o.req_notify_cq = cq_arm;
    o.post_send = qp_post_send;
    o.post_recv = qp_post_recv;
    o.post_srq_recv = srq_post_recv;
    o.alloc_mw = alloc_mw;
    o.dealloc_mw = dealloc_mw;
    o.bind_mw = bind_mw;
    c.query_port = query_port;
    c.query_device_ex = query_device_ex;
    c.create_qp_ex = create_qp_ex;
    c.create_cq_ex = create_cq_ex;
    c.create_srq_ex = create_srq_ex;
    c.advise_mr = advise_mr;
    c.alloc_td = alloc_td;
    c.dealloc_td = dealloc_td;
    c.alloc_parent_domain = alloc_parent_domain;
    c.alloc_dm = alloc_dm;
    c.free_dm = free_dm;
    c.reg_dm_mr = reg_dm_mr;
    c.get_srq_num = get_srq_num;
    c.open_xrcd = open_xrcd;
    c.close_xrcd = close_xrcd;
    c.open_qp = open_qp;
    c.query_rt_values = query_rt_values;
    c.ibv_create_flow = create_flow;
    c.create_counters = create_counters;
    c.destroy_counters = destroy_counters;
    c.attach_counters_point_flow = attach_counters_point_flow;
    c.read_counters = read_counters;
    c.ibv_destroy_flow = destroy_flow;
    c.create_wq = create_wq;
    c.modify_wq = modify_wq;
    c.destroy_wq = destroy_wq;
    c.create_rwq_ind_table = create_rwq_ind_table;
    c.destroy_rwq_ind_table = destroy_rwq_ind_table;
}

// ----------------------------------------------------------------------------- device

ibv_context *open_device(ibv_device *dev) {
    if (!dev) return fail<ibv_context>(refuse(EINVAL, "ibv_open_device", "NULL device"));
    auto ctx = std::make_unique<Context>(Device::from(dev));
    return ctx.release()->ibv();
}

int close_device(ibv_context *ctx) {
    if (!ctx) return EINVAL;
    std::unique_ptr<Context> owned(Context::from(ctx));
    return 0;
}

int query_device(ibv_context *ctx, ibv_device_attr *attr) {
    if (!ctx || !attr) return EINVAL;
    fill_device_attr(*Context::from(ctx)->dev(), *attr);
    return 0;
}

int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *in, ibv_device_attr_ex *attr,
                    size_t attr_size) {
    if (!ctx || !attr) return refuse(EINVAL, "ibv_query_device_ex", "NULL context or attr");
    if (in && in->comp_mask)
        return refuse(EINVAL, "ibv_query_device_ex", "input comp_mask 0x%x: none is defined",
                      in->comp_mask);
    ibv_device_attr_ex a{};
    fill_device_attr(*Context::from(ctx)->dev(), a.orig_attr);
    a.odp_caps = odp_caps();
    a.max_dm_size = kMaxDmSize;
    a.xrc_odp_caps = xrc_odp_caps();
    a.completion_timestamp_mask = ~0ull;
    a.hca_core_clock = 1000000;  // kHz: timestamps are nanoseconds
    a.phys_port_cnt_ex = 1;
    // Raw packet QPs: checksum offload, RSS over receive WQs by Toeplitz hash.
    a.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
    a.max_wq_type_rq = 1 << 20;
    a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
    a.rss_caps.max_rwq_indirection_tables = 1 << 20;
    a.rss_caps.max_rwq_indirection_table_size = 1u << kMaxRwqIndTableLog;
    a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    a.rss_caps.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                     IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                     IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                     IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
    std::memcpy(attr, &a, std::min(attr_size, sizeof a));
    return 0;
}

// The device clock is CLOCK_MONOTONIC in nanoseconds (hca_core_clock 1 GHz), the clock of
// completion timestamps; like mlx5, the raw value is all in tv_nsec.
int query_rt_values(ibv_context *ctx, ibv_values_ex *v) {
    if (!ctx || !v) return refuse(EINVAL, "ibv_query_rt_values_ex", "NULL context or values");
    // As mlx5: comp_mask comes back saying which values were filled.
    const uint32_t asked = v->comp_mask;
    v->comp_mask = 0;
    if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
        v->raw_clock.tv_sec = 0;
        v->raw_clock.tv_nsec = long(clock_ns());
        v->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    }
    return 0;
}

int query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr, size_t attr_size) {
    if (!ctx || !attr) return refuse(EINVAL, "ibv_query_port", "NULL context or attr");
    if (port != 1) return refuse(EINVAL, "ibv_query_port", "port %u: the device has one, 1", port);
    ibv_port_attr a;
    fill_port_attr(*Context::from(ctx)->dev(), a);
    std::memcpy(attr, &a, std::min(attr_size, sizeof a));
    return 0;
}

int query_gid_entry(ibv_context *ctx, uint32_t port, uint32_t index, ibv_gid_entry *e) {
    if (!ctx || !e || port != 1)
        return refuse(EINVAL, "ibv_query_gid_ex", "port %u (the device has one, 1) or NULL", port);
    Device *dev = Context::from(ctx)->dev();
    const auto gids = dev->gids();
    if (index >= gids.size()) return ENODATA;
    std::memset(e, 0, sizeof *e);
    std::memcpy(e->gid.raw, gids[index].raw, 16);
    e->gid_index = index;
    e->port_num = port;
    e->gid_type = IBV_GID_TYPE_ROCE_V2;
    e->ndev_ifindex = uint32_t(dev->ifindex());
    return 0;
}

// ------------------------------------------------------------------------------ PD / MR

ibv_pd *alloc_pd(ibv_context *ctx) {
    if (!ctx) return fail<ibv_pd>(EINVAL);
    auto pd = std::make_unique<Pd>(ctx);
    Context::from(ctx)->objects().add_pd(pd.get());
    stats::opened(stats::Resource::kPd);
    return pd.release();
}

int dealloc_pd(ibv_pd *pd) {
    if (!pd) return EINVAL;
    Pd *p = Pd::itself(pd);
    if (p->users.load()) return EBUSY;
    // Another process's PD: only our stand-in goes (its owner's PD stays).
    if (Context::from(pd->context)->objects().unimport_foreign_pd(pd)) return 0;
    std::unique_ptr<Pd> owned(p);
    if (p->protection) {  // a parent domain lets go of its PD and thread domain
        p->protection->users.fetch_sub(1);
        if (p->td) p->td->users.fetch_sub(1);
        return 0;
    }
    Context::from(pd->context)->objects().remove_pd(pd);
    stats::closed(stats::Resource::kPd);
    return 0;
}

// ---------------------------------------------------------------------- import (shared fd)

// ibv_import_device: another context on the objects of the context whose command fd `fd`
// is (a dup of, in this process or received from another); the new context owns `fd`.
ibv_context *import_device(int fd) {
    const ImportedContext found = find_command_fd(fd);
    if (!found.objects) {
        const int e = errno == ENODEV ? ENODEV : EOPNOTSUPP;
        return fail<ibv_context>(refuse(e, "ibv_import_device",
                                        "fd %d is no softrdma verbs context's command fd%s", fd,
                                        e == ENODEV ? " (its device is missing here)" : ""));
    }
    auto ctx = std::make_unique<Context>(found.dev, fd, found.objects);
    return ctx.release()->ibv();
}

// In this process the imported object is the original one (the same pointer): nothing is
// copied, and ibv_unimport_* leaves it to its owner, as rdma-core leaves the kernel object.
// An object of another process gets a local stand-in (verbs/shared_objects.h).
ibv_pd *import_pd(ibv_context *ctx, uint32_t handle) {
    if (!ctx) return fail<ibv_pd>(EINVAL);
    SharedObjects &objects = Context::from(ctx)->objects();
    ibv_pd *pd = objects.find_pd(handle);
    if (!pd) pd = objects.import_foreign_pd(ctx, handle);
    if (!pd) return fail<ibv_pd>(refuse(EINVAL, "ibv_import_pd", "no PD with handle %u", handle));
    return pd;
}

void unimport_pd(ibv_pd *pd) {
    if (pd) Context::from(pd->context)->objects().unimport_foreign_pd(pd);
}

ibv_mr *import_mr(ibv_pd *pd, uint32_t handle) {
    if (!pd) return fail<ibv_mr>(EINVAL);
    SharedObjects &objects = Context::from(pd->context)->objects();
    ibv_mr *mr = objects.find_mr(handle);
    if (mr) {
        if (mr->pd == pd) return mr;
        mr = nullptr;
    } else {
        mr = objects.import_foreign_mr(pd, handle);
    }
    if (!mr)
        return fail<ibv_mr>(
            refuse(EINVAL, "ibv_import_mr", "no MR with handle %u on this PD", handle));
    Mr &m = *Mr::from(mr);
    mr_publish(m);
    SR_DEBUG("ibv_import_mr: region %u of pid %d (%#llx + %zu) imported with key 0x%x", handle,
             int(m.foreign.pid), (unsigned long long)m.iova, m.length, m.lkey);
    return mr;
}

// A stand-in region goes (as ibv_dereg_mr takes it: not while windows are bound to it); a
// region of this process stays with its owner.
void unimport_mr(ibv_mr *mr) {
    if (mr && Mr::from(mr)->foreign) dereg_mr(mr);
}

ibv_mr *reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access) {
    if (!pd || length == 0)
        return fail<ibv_mr>(refuse(EINVAL, "ibv_reg_mr", "%s", pd ? "length 0" : "NULL pd"));
    if (!access_ok(access))
        return fail<ibv_mr>(refuse(EINVAL, "ibv_reg_mr",
                                   "access 0x%x: remote write or atomic access needs "
                                   "IBV_ACCESS_LOCAL_WRITE, or unknown bits",
                                   access));
    if (!(access & IBV_ACCESS_ON_DEMAND) && !range_mapped(uintptr_t(addr), length))
        return fail<ibv_mr>(
            refuse(EFAULT, "ibv_reg_mr", "%p + %zu is not all mapped memory", addr, length));
    return register_mr(pd, addr, length, iova, access);
}

ibv_mr *register_mr(ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access) {
    const bool implicit = is_implicit_odp(addr, length, access);
    auto mr = std::make_unique<Mr>();
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->owner = Pd::from(pd);
    mr->access = int(access);
    mr->iova = (access & IBV_ACCESS_ZERO_BASED) || implicit ? 0 : iova;
    mr->host = static_cast<uint8_t *>(addr);
    // Before the key is visible: the engine's key checks read it.
    mr->table = Context::from(pd->context)->objects().table();
    if (!mr_table_add(mr.get()))
        return fail<ibv_mr>(refuse(ENOMEM, "ibv_reg_mr", "no memory region key left"));
    pd_hold(pd);
    Context::from(pd->context)->objects().add_mr(mr.get());
    mr_publish(*mr);
    region_share(*mr);
    return mr.release();
}

int rereg_mr(ibv_mr *m, int flags, ibv_pd *pd, void *addr, size_t length, int access) {
    if (!m ||
        (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                   IBV_REREG_MR_CHANGE_ACCESS)) ||
        flags == 0)
        return refuse(EINVAL, "ibv_rereg_mr", "flags 0x%x: none, or unknown bits (or NULL mr)",
                      flags);
    Mr *mr = Mr::from(m);
    if (mr->foreign)
        return refuse(EOPNOTSUPP, "ibv_rereg_mr",
                      "the region was imported from process %d: re-register it there",
                      int(mr->foreign.pid));
    if ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)
        return refuse(EINVAL, "ibv_rereg_mr", "IBV_REREG_MR_CHANGE_PD with a NULL pd");
    if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && !access_ok(unsigned(access)))
        return refuse(EINVAL, "ibv_rereg_mr",
                      "access 0x%x: remote write or atomic access needs "
                      "IBV_ACCESS_LOCAL_WRITE, or unknown bits",
                      access);
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
        (length == 0 || !range_mapped(uintptr_t(addr), length)))
        return refuse(EINVAL, "ibv_rereg_mr", "%p + %zu is empty or not all mapped memory", addr,
                      length);
    MrChange c;
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        c.pd = Pd::from(pd);
        c.handle = pd;
        pd_release(mr->pd);
        pd_hold(pd);
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) c.access = access;
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        c.host = static_cast<uint8_t *>(addr);
        c.length = length;
    }
    region_unshare(*mr);
    mr_table_change(mr, c);
    Context::from(mr->context)->objects().republish_mr(mr);
    mr_publish(*mr);
    region_share(*mr);
    return 0;
}

int dereg_mr(ibv_mr *m) {
    if (!m) return EINVAL;
    if (mr_table_remove(Mr::from(m)))
        return refuse(EINVAL, "ibv_dereg_mr", "memory windows are still bound to the region");
    std::unique_ptr<Mr> mr(Mr::from(m));
    region_unshare(*mr);
    mr_unpublish(*mr);
    if (mr->dm) mr->dm->mrs.fetch_sub(1);
    Context::from(mr->context)->objects().remove_mr(mr.get());
    pd_release(mr->pd);
    return 0;
}

// ------------------------------------------------------------------------------ MW

ibv_mw *alloc_mw(ibv_pd *pd, ibv_mw_type type) {
    if (!pd) return fail<ibv_mw>(refuse(EINVAL, "ibv_alloc_mw", "NULL pd"));
    if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
        return fail<ibv_mw>(
            refuse(EINVAL, "ibv_alloc_mw", "type %d: windows are type 1 or 2", int(type)));
    auto mw = std::make_unique<Mw>();
    mw->context = pd->context;
    mw->pd = pd;
    mw->type = type;
    if (!mw_table_add(mw.get()))
        return fail<ibv_mw>(refuse(ENOMEM, "ibv_alloc_mw", "no memory key left"));
    pd_hold(pd);
    return mw.release();
}

int dealloc_mw(ibv_mw *m) {
    if (!m) return EINVAL;
    std::unique_ptr<Mw> mw(Mw::from(m));
    mw_table_remove(mw.get());
    pd_release(mw->pd);
    return 0;
}

// ibv_bind_mw (type 1): a BIND_MW work request on `qp`; the window's rkey the application
// sees changes now, as rdma-core's providers change it.
int bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *b) {
    if (!qp || !mw || !b) return EINVAL;
    if (b->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
        return refuse(EINVAL, "ibv_bind_mw", "a type 1 window cannot be zero-based");
    ibv_send_wr wr{};
    wr.wr_id = b->wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = b->send_flags;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = b->bind_info;
    ibv_send_wr *bad = nullptr;
    if (const int e = Qp::from(qp)->post_send(&wr, &bad)) return e;
    mw->rkey = wr.bind_mw.rkey;
    return 0;
}

// ------------------------------------------------------------------------------ CQ

ibv_comp_channel *create_comp_channel(ibv_context *ctx) {
    if (!ctx) return fail<ibv_comp_channel>(EINVAL);
    auto ch = std::make_unique<CompChannel>(ctx);
    if (ch->fd < 0) return fail<ibv_comp_channel>(EMFILE);
    return ch.release();
}

int destroy_comp_channel(ibv_comp_channel *ch) {
    if (!ch) return EINVAL;
    if (CompChannel::from(ch)->busy()) return EBUSY;
    std::unique_ptr<CompChannel> owned(CompChannel::from(ch));
    return 0;
}

ibv_cq_ex *create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *a) {
    static constexpr const char *kVerb = "ibv_create_cq";
    if (!ctx || !a) return fail<ibv_cq_ex>(refuse(EINVAL, kVerb, "NULL context or attributes"));
    if (a->cqe < 1 || a->cqe > uint32_t(kMaxCqe))
        return fail<ibv_cq_ex>(refuse(EINVAL, kVerb, "cqe %u: 1 to %d", a->cqe, kMaxCqe));
    if (a->comp_vector >= uint32_t(ctx->num_comp_vectors))
        return fail<ibv_cq_ex>(refuse(EINVAL, kVerb, "comp_vector %u: the device has %d",
                                      a->comp_vector, ctx->num_comp_vectors));
    const uint32_t known = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
    if (a->comp_mask & ~known)
        return fail<ibv_cq_ex>(refuse(EOPNOTSUPP, kVerb, "comp_mask bits 0x%x are not supported",
                                      a->comp_mask & ~known));
    if (a->wc_flags & ~uint64_t(IBV_CREATE_CQ_SUP_WC_FLAGS))
        return fail<ibv_cq_ex>(
            refuse(EOPNOTSUPP, kVerb, "wc_flags bits 0x%llx are not supported",
                   (unsigned long long)(a->wc_flags & ~uint64_t(IBV_CREATE_CQ_SUP_WC_FLAGS))));
    const uint32_t flags_ok =
        IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (a->flags & ~flags_ok))
        return fail<ibv_cq_ex>(
            refuse(EOPNOTSUPP, kVerb, "flags 0x%x are not supported", a->flags & ~flags_ok));
    // A CQ made on a parent domain (IBV_CQ_INIT_ATTR_MASK_PD) takes its ring from the
    // domain's allocators; a plain PD there is EINVAL, as on mlx5.
    ibv_pd *domain = (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ? a->parent_domain : nullptr;
    if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && (!domain || !Pd::itself(domain)->protection))
        return fail<ibv_cq_ex>(
            refuse(EINVAL, kVerb, "IBV_CQ_INIT_ATTR_MASK_PD needs a parent domain"));
    std::unique_ptr<Cq> cq;
    try {
        cq = std::make_unique<Cq>(ctx, int(a->cqe),
                                  a->channel ? CompChannel::from(a->channel) : nullptr,
                                  a->cq_context, a->wc_flags, domain_memory(domain, kResTypeCq));
    } catch (const std::bad_alloc &) {
        return fail<ibv_cq_ex>(refuse(ENOMEM, kVerb, "no memory for the ring"));
    }
    return cq.release();
}

int resize_cq(ibv_cq *cq, int cqe) {
    if (!cq || cqe < 1 || cqe > kMaxCqe)
        return refuse(EINVAL, "ibv_resize_cq", "cqe %d: 1 to %d (or NULL cq)", cqe, kMaxCqe);
    return Cq::from(cq)->resize(cqe);
}

int destroy_cq(ibv_cq *cq) {
    if (!cq) return EINVAL;
    Cq *c = Cq::from(cq);
    if (c->busy()) return EBUSY;
    c->wait_events_acked();
    std::unique_ptr<Cq> owned(c);
    return 0;
}

int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq, void **cq_context) {
    if (!ch || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
    }
    Cq *c = CompChannel::from(ch)->wait();
    if (!c) return -1;
    c->event_reported();
    *cq = c->cq();
    *cq_context = c->cq_context;
    return 0;
}

void ack_cq_events(ibv_cq *cq, unsigned n) {
    if (cq) Cq::from(cq)->ack_events(n);
}

// ------------------------------------------------------------------------------ QP

// A process that exits without destroying its QPs still acknowledges what it received, as
// the HCA would have done on receipt.
void flush_acks_at_exit() {
    std::lock_guard lk(g_qp_mu);
    for (auto &[qp, ref] : qp_registry()) ref->flush_ack_at_exit();
}

ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *a) {
    if (!ctx || !a) return fail<ibv_qp>(EINVAL);
    static const bool hooked = std::atexit(flush_acks_at_exit) == 0;
    (void)hooked;
    int err = 0;
    auto qp = Qp::create(Context::from(ctx), *a, err);
    if (!qp) return fail<ibv_qp>(err);
    std::lock_guard lk(g_qp_mu);
    qp_registry()[qp.get()] = qp;
    return qp->qp();
}

// ibv_open_qp: another handle on an XRC receive QP of the same domain. It is the same QP
// (same ibv_qp); ibv_destroy_qp of either handle only drops one, the last one destroys it.
// Only QPs of this process can be opened (no kernel holds them for other processes).
ibv_qp *open_qp(ibv_context *ctx, ibv_qp_open_attr *a) {
    static constexpr const char *kVerb = "ibv_open_qp";
    constexpr uint32_t kNeeded =
        IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
    if (!ctx || !a || (a->comp_mask & kNeeded) != kNeeded || !a->xrcd)
        return fail<ibv_qp>(refuse(EINVAL, kVerb, "needs the QP number, its domain and its type"));
    if (a->comp_mask & ~uint32_t(kNeeded | IBV_QP_OPEN_ATTR_CONTEXT))
        return fail<ibv_qp>(refuse(EINVAL, kVerb, "comp_mask 0x%x has unknown bits", a->comp_mask));
    if (a->qp_type != IBV_QPT_XRC_RECV)
        return fail<ibv_qp>(refuse(EINVAL, kVerb, "only XRC_RECV QPs can be opened"));
    std::lock_guard lk(g_qp_mu);
    for (auto &[qp, ref] : qp_registry()) {
        if (qp->qp()->qp_num != a->qp_num || qp->xrcd() != Xrcd::from(a->xrcd)) continue;
        qp->opened();
        return qp->qp();
    }
    return fail<ibv_qp>(
        refuse(EINVAL, kVerb, "no XRC_RECV QP %u in this domain (in this process)", a->qp_num));
}

int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask) {
    if (!qp || !attr) return EINVAL;
    return Qp::from(qp)->modify(attr, mask);
}

// The LID is meaningless on RoCE-style ports: a group is its GID.
int attach_mcast(ibv_qp *qp, const ibv_gid *gid) {
    if (!qp || !gid) return EINVAL;
    return Qp::from(qp)->attach_mcast(gid->raw);
}

int detach_mcast(ibv_qp *qp, const ibv_gid *gid) {
    if (!qp || !gid) return EINVAL;
    return Qp::from(qp)->detach_mcast(gid->raw);
}

int query_qp(ibv_qp *qp, ibv_qp_attr *attr, int mask, ibv_qp_init_attr *init) {
    if (!qp || !attr) return EINVAL;
    return Qp::from(qp)->query(attr, mask, init);
}

int destroy_qp(ibv_qp *q) {
    if (!q) return EINVAL;
    Qp *qp = Qp::from(q);
    std::shared_ptr<Qp> ref;
    {
        std::lock_guard lk(g_qp_mu);
        auto it = qp_registry().find(qp);
        if (it == qp_registry().end()) return EINVAL;
        // As in the kernel, a QP that flow rules steer to outlives no rule.
        if (q->qp_type == IBV_QPT_RAW_PACKET && qp->raw_has_flows())
            return refuse(EBUSY, "ibv_destroy_qp", "QP %u still has flow rules", q->qp_num);
        if (qp->close_one()) return 0;  // an ibv_open_qp handle; the QP lives on
        ref = std::move(it->second);
        qp_registry().erase(it);
    }
    ref->shutdown();
    return 0;
}

// ------------------------------------------------------------------------------ SRQ

ibv_srq *create_srq_ex(ibv_context *ctx, ibv_srq_init_attr_ex *a) {
    static constexpr const char *kVerb = "ibv_create_srq";
    if (!ctx || !a || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd)
        return fail<ibv_srq>(refuse(EINVAL, kVerb, "an SRQ needs a context and a PD"));
    const bool xrc = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type == IBV_SRQT_XRC;
    if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC && !xrc)
        return fail<ibv_srq>(refuse(EOPNOTSUPP, kVerb,
                                    "srq_type %d: IBV_SRQT_BASIC or IBV_SRQT_XRC (no tag "
                                    "matching)",
                                    int(a->srq_type)));
    if (xrc && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
                !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq))
        return fail<ibv_srq>(refuse(EINVAL, kVerb, "an XRC SRQ needs its XRC domain and a CQ"));
    const ibv_srq_attr &s = a->attr;
    if (s.max_wr == 0 || s.max_wr > uint32_t(kMaxSrqWr) || s.max_sge == 0 ||
        s.max_sge > uint32_t(kMaxSge) || s.srq_limit > s.max_wr)
        return fail<ibv_srq>(refuse(EINVAL, kVerb,
                                    "max_wr %u (1 to %d), max_sge %u (1 to %d), srq_limit %u "
                                    "(at most max_wr)",
                                    s.max_wr, kMaxSrqWr, s.max_sge, kMaxSge, s.srq_limit));
    std::unique_ptr<Srq> srq;
    try {
        srq =
            std::make_unique<Srq>(ctx, a->pd, s, a->srq_context, domain_memory(a->pd, kResTypeSrq));
    } catch (const std::bad_alloc &) {
        return fail<ibv_srq>(refuse(ENOMEM, kVerb, "no memory for the queue"));
    }
    if (xrc) {
        Xrcd *x = Xrcd::from(a->xrcd);
        srq->make_xrc(x, Cq::from(a->cq), 0);
        srq->make_xrc(x, Cq::from(a->cq), xrc_srq_register(srq.get()));
        x->users.fetch_add(1);
        Cq::from(a->cq)->add_user();
    }
    pd_hold(a->pd);
    return srq.release();
}

int get_srq_num(ibv_srq *srq, uint32_t *num) {
    if (!srq || !num) return EINVAL;
    const Srq *s = Srq::from(srq);
    if (!s->xrcd()) return refuse(EINVAL, "ibv_get_srq_num", "the SRQ is not an XRC SRQ");
    *num = s->srqn();
    return 0;
}

int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) {
    if (!srq || !attr) return EINVAL;
    return Srq::from(srq)->modify(*attr, mask);
}

int query_srq(ibv_srq *srq, ibv_srq_attr *attr) {
    if (!srq || !attr) return EINVAL;
    Srq::from(srq)->query(*attr);
    return 0;
}

int destroy_srq(ibv_srq *srq) {
    if (!srq) return EINVAL;
    Srq *s = Srq::from(srq);
    if (s->busy() || (s->xrcd() && !xrc_srq_retire(s))) return EBUSY;
    if (s->xrcd()) {
        s->xrcd()->users.fetch_sub(1);
        s->cq()->drop_user();
    }
    pd_release(s->pd);
    std::unique_ptr<Srq> owned(s);
    return 0;
}

// ------------------------------------------------------------------------------ AH

ibv_ah *create_ah(ibv_pd *pd, ibv_ah_attr *attr) {
    if (!pd || !attr) return fail<ibv_ah>(refuse(EINVAL, "ibv_create_ah", "NULL pd or attr"));
    if (attr->port_num != 1)
        return fail<ibv_ah>(
            refuse(EINVAL, "ibv_create_ah", "port_num %u: the device has one, 1", attr->port_num));
    if (!attr->is_global)
        return fail<ibv_ah>(refuse(EINVAL, "ibv_create_ah",
                                   "is_global is 0: RoCE addresses peers by GID, so an address "
                                   "handle needs a GRH (is_global = 1, grh.dgid)"));
    auto ah = std::make_unique<Ah>();
    ah->context = pd->context;
    ah->pd = pd;
    ah->attr = *attr;
    pd_hold(pd);
    return ah.release();
}

int destroy_ah(ibv_ah *ah) {
    if (!ah) return EINVAL;
    std::unique_ptr<Ah> owned(Ah::from(ah));
    pd_release(owned->pd);
    return 0;
}

}  // namespace softrdma::verbs

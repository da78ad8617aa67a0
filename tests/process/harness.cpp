// SPDX-License-Identifier: BSD-2-Clause
#include "process/harness.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace sr_test {

int idle_peer(Oob &oob) {
    oob.barrier();
    return 0;
}

int connected_idle_peer(Oob &oob, const EpOptions &o) {
    Endpoint ep(o);
    ep.exchange_and_connect(oob);
    oob.barrier();
    return 0;
}

uint64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

std::string engine_task() {
    DIR *d = opendir("/proc/self/task");
    if (!d) return {};
    std::string found;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string base = std::string("/proc/self/task/") + e->d_name;
        char comm[32] = {};
        FILE *f = std::fopen((base + "/comm").c_str(), "r");
        if (!f) continue;
        const bool ours =
            std::fgets(comm, sizeof comm, f) && std::strncmp(comm, "softrdma", 8) == 0;
        std::fclose(f);
        if (ours) found = base;
    }
    closedir(d);
    return found;
}

void Oob::put(const void *p, size_t n) {
    auto *c = static_cast<const char *>(p);
    while (n) {
        const ssize_t k = ::write(fd_, c, n);
        PCHECK(k > 0);
        c += k;
        n -= size_t(k);
    }
}

void Oob::get(void *p, size_t n) {
    auto *c = static_cast<char *>(p);
    while (n) {
        pollfd pfd{fd_, POLLIN, 0};
        PCHECK(::poll(&pfd, 1, 60000) == 1);
        const ssize_t k = ::read(fd_, c, n);
        PCHECK(k > 0);
        c += k;
        n -= size_t(k);
    }
}

void Oob::barrier() {
    put<char>('b');
    PCHECK(get<char>() == 'b');
}

namespace {
// One marker byte and room for one fd in its control data: what send_fd sends and recv_fd
// takes.
struct FdMessage {
    char byte;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr m{};
    explicit FdMessage(char b) : byte(b) {
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
    }
    FdMessage(const FdMessage &) = delete;
    FdMessage &operator=(const FdMessage &) = delete;
};
}  // namespace

void Oob::send_fd(int fd) {
    FdMessage f('f');
    cmsghdr *c = CMSG_FIRSTHDR(&f.m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    PCHECK(::sendmsg(fd_, &f.m, 0) == 1);
}

int Oob::recv_fd() {
    FdMessage f(0);
    pollfd pfd{fd_, POLLIN, 0};
    PCHECK(::poll(&pfd, 1, 60000) == 1);
    PCHECK(::recvmsg(fd_, &f.m, MSG_CMSG_CLOEXEC) == 1 && f.byte == 'f');
    cmsghdr *c = CMSG_FIRSTHDR(&f.m);
    PCHECK(c && c->cmsg_type == SCM_RIGHTS);
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

PairResult run_pair(const std::function<int(Oob &)> &a, const std::function<int(Oob &)> &b,
                    int timeout_ms) {
    PairResult r;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return r;
    std::fflush(nullptr);
    const pid_t pa = fork();
    if (pa == 0) {
        close(sv[1]);
        Oob oob(sv[0]);
        _exit(a(oob));
    }
    const pid_t pb = fork();
    if (pb == 0) {
        close(sv[0]);
        Oob oob(sv[1]);
        _exit(b(oob));
    }
    close(sv[0]);
    close(sv[1]);
    const uint64_t deadline = now_ms() + uint64_t(timeout_ms);
    bool done_a = false, done_b = false;
    while (!(done_a && done_b)) {
        int st;
        if (!done_a && waitpid(pa, &st, WNOHANG) == pa) {
            r.status_a = decode_status(st);
            done_a = true;
        }
        if (!done_b && waitpid(pb, &st, WNOHANG) == pb) {
            r.status_b = decode_status(st);
            done_b = true;
        }
        if (now_ms() > deadline) {
            r.timed_out = true;
            // End the children by PID, never by name.
            if (!done_a) kill(pa, SIGKILL);
            if (!done_b) kill(pb, SIGKILL);
            if (!done_a) waitpid(pa, nullptr, 0);
            if (!done_b) waitpid(pb, nullptr, 0);
            break;
        }
        usleep(2000);
    }
    return r;
}

Endpoint::Endpoint(const EpOptions &o) : opt(o) {
    int n = 0;
    list = ibv_get_device_list(&n);
    PCHECK(list && n > 0);
    // The loopback device works the same on a laptop, a CI runner or in a bare namespace.
    ibv_device *dev = list[0];
    for (int i = 0; i < n; ++i)
        if (std::strcmp(ibv_get_device_name(list[i]), "sr_lo") == 0) dev = list[i];
    ctx = ibv_open_device(dev);
    PCHECK(ctx);
    pd = ibv_alloc_pd(ctx);
    PCHECK(pd);
    if (opt.channel) {
        chan = ibv_create_comp_channel(ctx);
        PCHECK(chan);
    }
    cq = ibv_create_cq(ctx, opt.cqe, this, chan, 0);
    PCHECK(cq);
    // aligned_alloc wants a multiple of the alignment.
    buf = static_cast<uint8_t *>(aligned_alloc(4096, (opt.buf_size + 4095) & ~size_t(4095)));
    PCHECK(buf);
    std::memset(buf, 0, opt.buf_size);
    mr = ibv_reg_mr(pd, buf, opt.buf_size, opt.mr_access);
    PCHECK(mr);
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = opt.type;
    a.sq_sig_all = opt.sig_all;
    a.cap.max_send_wr = opt.max_send_wr;
    a.cap.max_recv_wr = opt.max_recv_wr;
    a.cap.max_send_sge = opt.max_sge;
    a.cap.max_recv_sge = opt.max_sge;
    a.cap.max_inline_data = opt.max_inline;
    if (opt.create_flags) {
        ibv_qp_init_attr_ex x{};
        x.qp_context = a.qp_context;
        x.send_cq = a.send_cq;
        x.recv_cq = a.recv_cq;
        x.cap = a.cap;
        x.qp_type = a.qp_type;
        x.sq_sig_all = a.sq_sig_all;
        x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
        x.pd = pd;
        x.create_flags = opt.create_flags;
        qp = ibv_create_qp_ex(ctx, &x);
    } else {
        qp = ibv_create_qp(pd, &a);
    }
    PCHECK(qp);
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = unsigned(opt.qp_access);
    at.qkey = opt.qkey;
    const int extra = opt.type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
    PCHECK(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | extra) == 0);
}

Endpoint::~Endpoint() {
    if (qp) ibv_destroy_qp(qp);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
    if (chan) ibv_destroy_comp_channel(chan);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
    if (list) ibv_free_device_list(list);
    std::free(buf);
}

Wire Endpoint::local() const {
    Wire w{};
    w.qpn = qp->qp_num;
    ibv_gid gid;
    PCHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0);
    std::memcpy(w.gid, gid.raw, 16);
    w.addr = uint64_t(uintptr_t(buf));
    w.rkey = mr->rkey;
    return w;
}

void Endpoint::connect(const Wire &p) {
    peer = p;
    ibv_qp_attr a{};
    if (opt.type == IBV_QPT_UD) {  // no peer: each send names its destination
        a.qp_state = IBV_QPS_RTR;
        PCHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
        a.qp_state = IBV_QPS_RTS;
        PCHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
        return;
    }
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = p.qpn;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = opt.max_dest_rd_atomic;
    a.min_rnr_timer = opt.min_rnr_timer;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, p.gid, 16);
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (opt.type == IBV_QPT_RC) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    PCHECK(ibv_modify_qp(qp, &a, mask) == 0);
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = opt.timeout;
    a.retry_cnt = opt.retry_cnt;
    a.rnr_retry = opt.rnr_retry;
    a.sq_psn = 0;
    a.max_rd_atomic = opt.max_rd_atomic;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (opt.type == IBV_QPT_RC)
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    PCHECK(ibv_modify_qp(qp, &a, mask) == 0);
}

void Endpoint::exchange_and_connect(Oob &oob) {
    oob.put(local());
    connect(oob.get<Wire>());
    oob.barrier();
}

void Endpoint::post_recv(uint64_t wr_id, size_t off, uint32_t len) {
    ibv_sge sge{uint64_t(uintptr_t(buf + off)), len, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    PCHECK(ibv_post_recv(qp, &wr, &bad) == 0);
}

int Endpoint::post(ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t remote_off,
                   unsigned flags, uint32_t imm) {
    ibv_sge sge{uint64_t(uintptr_t(buf + off)), len, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = imm;
    wr.wr.rdma.remote_addr = peer.addr + remote_off;
    wr.wr.rdma.rkey = peer.rkey;
    if (op == IBV_WR_SEND_WITH_INV) wr.invalidate_rkey = imm;
    ibv_send_wr *bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

int Endpoint::post_atomic(ibv_wr_opcode op, uint64_t wr_id, size_t off, uint64_t remote_off,
                          uint64_t compare_add, uint64_t swap) {
    ibv_sge sge{uint64_t(uintptr_t(buf + off)), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = peer.addr + remote_off;
    wr.wr.atomic.rkey = peer.rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
    ibv_send_wr *bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

ibv_wc Endpoint::wait_wc(int timeout_ms) {
    const uint64_t deadline = now_ms() + uint64_t(timeout_ms);
    ibv_wc wc{};
    for (;;) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        PCHECK(n >= 0);
        if (n == 1) return wc;
        if (now_ms() > deadline) {
            std::fprintf(stderr, "[pid %d] no completion within %d ms\n", getpid(), timeout_ms);
            _exit(3);
        }
    }
}

bool Endpoint::quiet_for(int ms) {
    const uint64_t deadline = now_ms() + uint64_t(ms);
    ibv_wc wc;
    while (now_ms() < deadline) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        if (n != 0) {
            std::fprintf(stderr, "[pid %d] not quiet: poll returned %d, wr_id %llu status %s\n",
                         int(getpid()), n, static_cast<unsigned long long>(wc.wr_id),
                         n > 0 ? ibv_wc_status_str(wc.status) : "-");
            return false;
        }
        usleep(200);
    }
    return true;
}

ibv_qp_state qp_state_of(ibv_qp *qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    PCHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
    return a.qp_state;
}

ibv_qp_state Endpoint::qp_state() {
    return qp_state_of(qp);
}

// True once /proc says `pid` is stopped (state T), false after `ms` milliseconds.
bool wait_stopped(pid_t pid, int ms) {
    const uint64_t deadline = now_ms() + uint64_t(ms);
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    while (now_ms() < deadline) {
        std::ifstream f(path);
        std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        // "pid (comm) S ...": the state follows the last ')', as comm may hold one.
        const size_t close = stat.rfind(')');
        if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T')
            return true;
        usleep(1000);
    }
    return false;
}

// Tells the peer our PID, then stops the whole process (engine thread included) until the
// peer sends a char: a forked helper waits for it and continues us.
void stop_until_continued(Oob &oob) {
    const pid_t self = getpid();
    oob.put<pid_t>(self);
    const pid_t helper = fork();
    if (helper == 0) {
        Oob o2 = oob;
        (void)o2.get<char>();
        kill(self, SIGCONT);
        _exit(0);
    }
    raise(SIGSTOP);
    waitpid(helper, nullptr, 0);
}

std::string run_cli(const std::string &args, int &status) {
    const std::string cmd = std::string(SR_CLI) + " " + args + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    PCHECK(p);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    status = pclose(p);
    return out;
}

uint64_t qp_value(const std::string &json, uint32_t qpn, const char *key) {
    const size_t at = json.find("\"qpn\": " + std::to_string(qpn) + ",");
    PCHECK(at != std::string::npos);
    const size_t end = json.find("}}", at);
    const size_t k = json.find(std::string("\"") + key + "\": ", at);
    PCHECK(k != std::string::npos && k < end);
    return std::stoull(json.substr(k + std::strlen(key) + 4));
}

}  // namespace sr_test

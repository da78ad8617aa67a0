// SPDX-License-Identifier: BSD-2-Clause
// RC over softrdma next to plain TCP between the same two cores, in one run:
//   - 8-byte round trip: RC SEND ping-pong vs TCP ping-pong (both busy-polling)
//   - bandwidth: RDMA WRITE stream vs TCP stream, 64 KiB and 1 MiB messages
// Prints absolute numbers and the ratios (the machine is shared: only ratios compare).
// --rc-lat N, --tcp-lat N and --poll-cost N run one piece alone (for perf and strace).
// --cpu-per-msg N: the library's own CPU time per small SEND, both ends in one thread on one
// CPU: steadier than two-process rates on a noisy machine, for changes that only move CPU
// work. It cannot see cross-core traffic: a change that trades cache-line transfers for CPU
// (doorbell batching on the rings: 25% more CPU here, yet faster between two processes)
// must be judged between two processes too.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace {

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "bench: %s failed (errno %d)\n", what, errno);
    _exit(1);
}

void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu % std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN))), &s);
    sched_setaffinity(0, sizeof s, &s);
}

void full_write(int fd, const void *p, size_t n) {
    auto *c = static_cast<const char *>(p);
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k <= 0) die("write");
        c += k;
        n -= size_t(k);
    }
}
void full_read(int fd, void *p, size_t n) {
    auto *c = static_cast<char *>(p);
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k <= 0) die("read");
        c += k;
        n -= size_t(k);
    }
}
// Busy-polling receive, as RDMA programs poll their CQ.
void spin_read(int fd, void *p, size_t n) {
    auto *c = static_cast<char *>(p);
    while (n) {
        ssize_t k = recv(fd, c, n, MSG_DONTWAIT);
        if (k > 0) {
            c += k;
            n -= size_t(k);
        } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            die("recv");
        }
    }
}

// Runs server on CPU1 and client on CPU0, joined by a socketpair; the client writes one
// double (the result) back to the parent through `out`.
double run_pair(const std::function<void(int)> &server, const std::function<double(int)> &client) {
    int sv[2], res[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(res)) die("socketpair");
    const pid_t ps = fork();
    if (ps == 0) {
        pin(1);
        server(sv[1]);
        _exit(0);
    }
    const pid_t pc = fork();
    if (pc == 0) {
        pin(0);
        const double v = client(sv[0]);
        full_write(res[1], &v, sizeof v);
        _exit(0);
    }
    double v = -1;
    full_read(res[0], &v, sizeof v);
    waitpid(pc, nullptr, 0);
    waitpid(ps, nullptr, 0);
    close(sv[0]);
    close(sv[1]);
    close(res[0]);
    close(res[1]);
    return v;
}

// --- TCP ------------------------------------------------------------------------------

int tcp_listen(uint16_t &port) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, reinterpret_cast<sockaddr *>(&a), sizeof a) || listen(l, 1)) die("listen");
    socklen_t len = sizeof a;
    getsockname(l, reinterpret_cast<sockaddr *>(&a), &len);
    port = ntohs(a.sin_port);
    return l;
}
int tcp_connect(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a)) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

double tcp_pingpong_us(int iters) {
    return run_pair(
        [&](int oob) {
            uint16_t port;
            int l = tcp_listen(port);
            full_write(oob, &port, sizeof port);
            int fd = accept(l, nullptr, nullptr);
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            char b[8];
            for (int i = 0; i < iters + 1000; ++i) {
                spin_read(fd, b, 8);
                full_write(fd, b, 8);
            }
            close(fd);
            close(l);
        },
        [&](int oob) {
            uint16_t port;
            full_read(oob, &port, sizeof port);
            int fd = tcp_connect(port);
            char b[8] = {};
            double t0 = 0;
            for (int i = 0; i < iters + 1000; ++i) {
                if (i == 1000) t0 = now_s();  // warm-up excluded
                full_write(fd, b, 8);
                spin_read(fd, b, 8);
            }
            const double us = (now_s() - t0) / iters * 1e6;
            close(fd);
            return us;
        });
}

double tcp_stream_gbs(size_t msg, size_t total) {
    return run_pair(
        [&](int oob) {
            uint16_t port;
            int l = tcp_listen(port);
            full_write(oob, &port, sizeof port);
            int fd = accept(l, nullptr, nullptr);
            std::vector<char> b(msg);
            size_t got = 0;
            while (got < total) {
                ssize_t k = read(fd, b.data(), msg);
                if (k <= 0) die("read");
                got += size_t(k);
            }
            full_write(fd, "k", 1);
            close(fd);
            close(l);
        },
        [&](int oob) {
            uint16_t port;
            full_read(oob, &port, sizeof port);
            int fd = tcp_connect(port);
            std::vector<char> b(msg, 1);
            const double t0 = now_s();
            for (size_t sent = 0; sent < total; sent += msg) full_write(fd, b.data(), msg);
            char k;
            full_read(fd, &k, 1);
            const double gbs = double(total) / (now_s() - t0) / 1e9;
            close(fd);
            return gbs;
        });
}

// --- RC -------------------------------------------------------------------------------

struct Wire {
    uint32_t qpn;
    uint8_t gid[16];
    uint64_t addr;
    uint32_t rkey;
};

struct Rc {
    ibv_device **list;
    ibv_context *ctx;
    ibv_pd *pd;
    ibv_cq *cq;
    ibv_qp *qp;
    ibv_mr *mr;
    char *buf;
    Wire peer;

    explicit Rc(size_t size) {
        int n;
        list = ibv_get_device_list(&n);
        if (!list || !n) die("ibv_get_device_list");
        ibv_device *dev = list[0];
        for (int i = 0; i < n; ++i)
            if (!std::strcmp(ibv_get_device_name(list[i]), "sr_lo")) dev = list[i];
        ctx = ibv_open_device(dev);
        pd = ibv_alloc_pd(ctx);
        cq = ibv_create_cq(ctx, 1024, nullptr, nullptr, 0);
        buf = static_cast<char *>(aligned_alloc(4096, size));
        std::memset(buf, 1, size);
        mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = cq;
        a.qp_type = IBV_QPT_RC;
        a.cap = {256, 256, 1, 1, 64};
        qp = ibv_create_qp(pd, &a);
        if (!ctx || !pd || !cq || !mr || !qp) die("rc setup");
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_INIT;
        at.port_num = 1;
        at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (ibv_modify_qp(qp, &at,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            die("INIT");
    }
    void connect(int oob) {
        Wire w{qp->qp_num, {}, uint64_t(uintptr_t(buf)), mr->rkey};
        ibv_gid g;
        ibv_query_gid(ctx, 1, 0, &g);
        std::memcpy(w.gid, g.raw, 16);
        full_write(oob, &w, sizeof w);
        full_read(oob, &peer, sizeof peer);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_4096;
        a.dest_qp_num = peer.qpn;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
        if (ibv_modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
            die("RTR");
        std::memset(&a, 0, sizeof a);
        a.qp_state = IBV_QPS_RTS;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        if (ibv_modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
            die("RTS");
        char c = 'r';
        full_write(oob, &c, 1);
        full_read(oob, &c, 1);
    }
    void post_recv() {
        ibv_sge s{uint64_t(uintptr_t(buf)), 64, mr->lkey};
        ibv_recv_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        ibv_recv_wr *bad;
        if (ibv_post_recv(qp, &wr, &bad)) die("post_recv");
    }
    void post(ibv_wr_opcode op, size_t off, uint32_t len, unsigned flags) {
        ibv_sge s{uint64_t(uintptr_t(buf + off)), len, mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = flags;
        wr.wr.rdma.remote_addr = peer.addr + off;
        wr.wr.rdma.rkey = peer.rkey;
        ibv_send_wr *bad;
        if (ibv_post_send(qp, &wr, &bad)) die("post_send");
    }
    ibv_wc poll1() {
        ibv_wc wc;
        int n;
        while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
        }
        if (n < 0 || wc.status != IBV_WC_SUCCESS) die("completion");
        return wc;
    }
};

// Like ibv_rc_pingpong: each side waits for its receive, then sends (inline, unsignalled
// except every 64th so the send queue drains).
double rc_pingpong_us(int iters) {
    auto side = [iters](int oob, bool client) {
        Rc rc(4096);
        for (int i = 0; i < 128; ++i) rc.post_recv();
        rc.connect(oob);
        const int total = iters + 1000;
        double t0 = 0;
        int posted_recv = 128;
        for (int i = 0; i < total; ++i) {
            if (client && i == 1000) t0 = now_s();
            const unsigned flags = IBV_SEND_INLINE | ((i % 64) == 63 ? IBV_SEND_SIGNALED : 0);
            if (client) rc.post(IBV_WR_SEND, 0, 8, flags);
            for (;;) {  // wait for the receive, reaping send completions on the way
                ibv_wc wc = rc.poll1();
                if (wc.opcode == IBV_WC_RECV) break;
            }
            if (--posted_recv < 64) {
                for (int k = 0; k < 64; ++k) rc.post_recv();
                posted_recv += 64;
            }
            if (!client) rc.post(IBV_WR_SEND, 0, 8, flags);
        }
        const double us = client ? (now_s() - t0) / iters * 1e6 : 0;
        char c = 'd';
        full_write(oob, &c, 1);
        full_read(oob, &c, 1);
        return us;
    };
    return run_pair([&](int oob) { side(oob, false); }, [&](int oob) { return side(oob, true); });
}

// What one empty ibv_poll_cq costs on a connected, idle QP, next to one recv() that finds
// nothing on a TCP socket: the price of each turn of a busy-polling loop.
void poll_cost(int n) {
    run_pair(
        [&](int oob) {
            Rc rc(4096);
            rc.connect(oob);
            char c;
            full_read(oob, &c, 1);
            full_write(oob, &c, 1);
        },
        [&](int oob) {
            Rc rc(4096);
            rc.connect(oob);
            ibv_wc wc;
            double t0 = now_s();
            for (int i = 0; i < n; ++i)
                if (ibv_poll_cq(rc.cq, 1, &wc) != 0) die("unexpected completion");
            const double poll_ns = (now_s() - t0) / n * 1e9;
            uint16_t port;
            const int l = tcp_listen(port);
            const int fd = tcp_connect(port);
            char b[64];
            t0 = now_s();
            for (int i = 0; i < n; ++i)
                if (recv(fd, b, sizeof b, MSG_DONTWAIT) >= 0) die("unexpected data");
            const double recv_ns = (now_s() - t0) / n * 1e9;
            std::printf("empty ibv_poll_cq %.0f ns, empty recv() %.0f ns\n", poll_ns, recv_ns);
            std::fflush(stdout);  // this child leaves with _exit()
            close(fd);
            close(l);
            char c = 'd';
            full_write(oob, &c, 1);
            full_read(oob, &c, 1);
            return 0.0;
        });
}

double rc_write_gbs(size_t msg, size_t total) {
    const size_t region = std::max<size_t>(msg * 8, 8 << 20);
    return run_pair(
        [&](int oob) {
            Rc rc(region);
            rc.connect(oob);
            char c;
            full_read(oob, &c, 1);  // the target only sleeps
            full_write(oob, &c, 1);
        },
        [&](int oob) {
            Rc rc(region);
            rc.connect(oob);
            const int window = 16;
            const size_t n = total / msg;
            int inflight = 0;
            const double t0 = now_s();
            for (size_t i = 0; i < n; ++i) {
                if (inflight == window) {
                    rc.poll1();
                    --inflight;
                }
                rc.post(IBV_WR_RDMA_WRITE, (i % 8) * msg % region, uint32_t(msg),
                        IBV_SEND_SIGNALED);
                ++inflight;
            }
            while (inflight--) rc.poll1();
            const double gbs = double(n * msg) / (now_s() - t0) / 1e9;
            char c = 'd';
            full_write(oob, &c, 1);
            full_read(oob, &c, 1);
            return gbs;
        });
}

double median3(const std::function<double()> &f) {
    double v[3] = {f(), f(), f()};
    std::sort(v, v + 3);
    return v[1];
}

}  // namespace

// Two QPs of this process, connected to each other (the same-host path unless SOFTRDMA_SHM=0):
// A SENDs 64 B messages, B takes them from its receive queue; one thread polls both CQs.
// Every 64th send is signalled, so A's completions never wait on the 2 µs ACK deadline.
void cpu_per_msg(int iters) {
    pin(0);
    Rc a(4096), b(4096);
    for (int i = 0; i < 256; ++i) b.post_recv();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) die("socketpair");
    std::thread tb([&] { b.connect(sv[1]); });
    a.connect(sv[0]);
    tb.join();
    close(sv[0]);
    close(sv[1]);
    auto run = [&](int n) {
        int unsignalled = 0, outstanding = 0;
        auto reap = [&] {  // one poll of A's CQ; a signalled completion retires 64 sends
            ibv_wc wc;
            const int k = ibv_poll_cq(a.cq, 1, &wc);
            if (k < 0 || (k == 1 && wc.status != IBV_WC_SUCCESS)) die("send completion");
            if (k == 1) outstanding -= 64;
        };
        for (int i = 0; i < n; ++i) {
            const bool sig = ++unsignalled == 64;
            if (sig) unsignalled = 0;
            while (outstanding >= 192) reap();  // the send queue is 256 deep
            a.post(IBV_WR_SEND, 0, 64, sig ? unsigned(IBV_SEND_SIGNALED) : 0u);
            if (sig) outstanding += 64;
            // A poll of A's CQ that finds nothing also sends what doorbell batching holds.
            reap();
            if (b.poll1().opcode != IBV_WC_RECV) die("receive");
            b.post_recv();
        }
    };
    // The baseline, in the same run: the same 64 B through a Unix socket pair, one send()
    // and one recv() per message in the same thread (the host's speed swings from run to run;
    // the ratio to this does much less).
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) die("socketpair");
    auto unix_run = [&](int n) {
        char b[64] = {};
        for (int i = 0; i < n; ++i) {
            if (send(sp[0], b, sizeof b, 0) != ssize_t(sizeof b)) die("send");
            if (recv(sp[1], b, sizeof b, MSG_WAITALL) != ssize_t(sizeof b)) die("recv");
        }
    };
    run(iters / 10 + 1000);  // warm-up: the move to shared memory, caches
    unix_run(iters / 10 + 1000);
    double best = 1e30, base = 1e30;
    for (int r = 0; r < 5; ++r) {  // alternating, so both see the same spells of the host
        double t0 = now_s();
        run(iters);
        best = std::min(best, (now_s() - t0) / iters * 1e9);
        t0 = now_s();
        unix_run(iters);
        base = std::min(base, (now_s() - t0) / iters * 1e9);
    }
    close(sp[0]);
    close(sp[1]);
    std::printf(
        "64 B SEND, both ends on one CPU: %.0f ns per message (best of 5 x %d); "
        "Unix socket send+recv: %.0f ns; ratio %.2f\n",
        best, iters, base, best / base);
}

int main(int argc, char **argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    // Single pieces, for profilers: --rc-lat N, --tcp-lat N (round trips), --poll-cost N.
    const int n = argc > 2 ? std::atoi(argv[2]) : 0;
    if (n > 0 && std::strcmp(argv[1], "--rc-lat") == 0) {
        std::printf("RC SEND ping-pong 8 B %8.2f us RTT\n", rc_pingpong_us(n));
        return 0;
    }
    if (n > 0 && std::strcmp(argv[1], "--tcp-lat") == 0) {
        std::printf("TCP ping-pong 8 B     %8.2f us RTT\n", tcp_pingpong_us(n));
        return 0;
    }
    if (n > 0 && std::strcmp(argv[1], "--cpu-per-msg") == 0) {
        cpu_per_msg(n);
        return 0;
    }
    if (n > 0 && std::strcmp(argv[1], "--poll-cost") == 0) {
        poll_cost(n);
        return 0;
    }
    const int iters = quick ? 5000 : 50000;
    const size_t total = quick ? (256u << 20) : (2048ull << 20);
    std::printf("softrdma RC vs kernel TCP on 127.0.0.1 (server CPU1, client CPU0), median of 3\n");
    const double tcp_lat = median3([&] { return tcp_pingpong_us(iters); });
    const double rc_lat = median3([&] { return rc_pingpong_us(iters); });
    std::printf("%-34s %10.2f us RTT\n", "TCP ping-pong 8 B (busy poll)", tcp_lat);
    std::printf("%-34s %10.2f us RTT   ratio %.2fx TCP (target <= 1.3x)\n", "RC SEND ping-pong 8 B",
                rc_lat, rc_lat / tcp_lat);
    for (size_t msg : {size_t(64) << 10, size_t(1) << 20}) {
        const double tcp = median3([&] { return tcp_stream_gbs(msg, total); });
        const double rc = median3([&] { return rc_write_gbs(msg, total); });
        std::printf("TCP stream %5zu KiB writes        %10.2f GB/s\n", msg >> 10, tcp);
        std::printf(
            "RDMA WRITE %5zu KiB (16 in flight) %10.2f GB/s   ratio %.0f%% of TCP (target >= "
            "90%%)\n",
            msg >> 10, rc, rc / tcp * 100);
    }
    return 0;
}

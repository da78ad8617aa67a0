// SPDX-License-Identifier: BSD-2-Clause
// The library lives inside other people's processes: what it must not change there.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

// The blocked-signal mask of our background thread, from /proc (0 if there is no such thread).
unsigned long long engine_sigblk() {
    const std::string task = engine_task();
    FILE *f = task.empty() ? nullptr : std::fopen((task + "/status").c_str(), "r");
    if (!f) return 0;
    unsigned long long mask = 0;
    char line[128];
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "SigBlk: %llx", &mask) == 1) break;
    std::fclose(f);
    return mask;
}

// CPU time (user + system, clock ticks) a thread has used, from /proc/.../stat.
long long task_cpu_ticks(const std::string &task) {
    FILE *f = std::fopen((task + "/stat").c_str(), "r");
    if (!f) return -1;
    char buf[1024] = {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    // "tid (comm) state ...": count fields after the last ')', as comm may hold one.
    const char *p = std::strrchr(buf, ')');
    long long utime = -1, stime = -1;
    if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &utime,
                          &stime) != 2)
        return -1;
    return utime + stime;
}

}  // namespace

// A server that blocks SIGUSR1 in its threads to take it with sigwait() must get it: were our
// thread to leave it unblocked, the kernel would deliver it there (and its default action
// would end the process).
TEST(HostProcess, BackgroundThreadTakesNoSignal) {
    EXPECT_PAIR_OK(run_pair(
        [](Oob &oob) {
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            PCHECK(pthread_sigmask(SIG_BLOCK, &usr1, nullptr) == 0);
            rdma_event_channel *ch = rdma_create_event_channel();
            PCHECK(ch != nullptr);
            rdma_cm_id *listener = listen_any(ch, oob);
            const unsigned long long blk = engine_sigblk();
            // Every signal the kernel lets a thread block (all but SIGKILL and SIGSTOP).
            for (int s = 1; s < 32; ++s)
                if (s != SIGKILL && s != SIGSTOP) PCHECK((blk >> (s - 1)) & 1);
            for (int i = 0; i < 20; ++i) {
                PCHECK(kill(getpid(), SIGUSR1) == 0);
                timespec limit{2, 0};
                PCHECK_EQ(sigtimedwait(&usr1, nullptr, &limit), SIGUSR1);
            }
            rdma_destroy_id(listener);
            rdma_destroy_event_channel(ch);
            oob.barrier();
            return 0;
        },
        [](Oob &oob) {
            oob.get<uint16_t>();  // the listener's port
            oob.barrier();
            return 0;
        }));
}

// Refused arguments explain themselves under SOFTRDMA_DEBUG: one line naming the verb, the
// errno and the attribute (here, the RoCE rule that an address vector needs a GRH).
TEST(HostProcess, RefusedArgumentsSayWhichAndWhy) {
    EXPECT_PAIR_OK(run_pair(
        [](Oob &) {
            setenv("SOFTRDMA_DEBUG", "1", 1);  // before the library reads it
            char path[] = "/tmp/sr-debug-XXXXXX";
            const int log = mkstemp(path);
            PCHECK(log >= 0);
            unlink(path);
            PCHECK(dup2(log, 2) == 2);
            int n = 0;
            ibv_device **devs = ibv_get_device_list(&n);
            PCHECK(devs && n > 0);
            ibv_context *ctx = ibv_open_device(devs[n - 1]);
            ibv_pd *pd = ibv_alloc_pd(ctx);
            ibv_cq *cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
            ibv_qp_init_attr qa{};
            qa.send_cq = qa.recv_cq = cq;
            qa.qp_type = IBV_QPT_RC;
            qa.cap.max_send_wr = qa.cap.max_recv_wr = qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
            ibv_qp *qp = ibv_create_qp(pd, &qa);
            PCHECK(qp != nullptr);
            ibv_qp_attr a{};
            a.qp_state = IBV_QPS_INIT;
            a.port_num = 1;
            PCHECK(ibv_modify_qp(
                       qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
            a = {};
            a.qp_state = IBV_QPS_RTR;
            a.path_mtu = IBV_MTU_1024;
            a.dest_qp_num = 0x123;
            a.ah_attr.port_num = 1;  // no GRH: fine on InfiniBand, not on RoCE
            PCHECK_EQ(
                ibv_modify_qp(qp, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
                EINVAL);
            a.max_dest_rd_atomic = 200;
            PCHECK_EQ(
                ibv_modify_qp(qp, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
                EINVAL);
            char text[4096] = {};
            PCHECK(pread(log, text, sizeof text - 1, 0) > 0);
            PCHECK(std::strstr(text, "softrdma: ibv_modify_qp: EINVAL: ah_attr.is_global is 0") &&
                   std::strstr(text, "needs a GRH"));
            PCHECK(std::strstr(text, "ibv_modify_qp: EINVAL: max_dest_rd_atomic 200 exceeds"));
            ibv_destroy_qp(qp);
            ibv_destroy_cq(cq);
            ibv_dealloc_pd(pd);
            ibv_close_device(ctx);
            ibv_free_device_list(devs);
            return 0;
        },
        [](Oob &) { return 0; }));
}

// A QP dials its peer while the peer's QP is still in INIT: the peer's side holds the request
// until its application names the dialer. If the dialing QP is destroyed meanwhile, the
// closed connection must not keep our background thread busy while it waits (it watched the
// socket for input, which a closed socket always has, until its 5 s deadline).
TEST(HostProcess, NoSpinAfterDialerVanishesBeforeWeConnect) {
    auto side = [](Oob &oob) {
        Endpoint ep;
        oob.put(ep.local());
        const Wire peer = oob.get<Wire>();
        if (ep.local().qpn < peer.qpn) {  // the smaller QPN dials (same GID)
            ep.connect(peer);
            usleep(200000);  // our request is with the peer, which defers its answer
            PCHECK_EQ(ibv_destroy_qp(ep.qp), 0);
            ep.qp = nullptr;
            oob.put<char>('x');
            oob.barrier();
            return 0;
        }
        (void)oob.get<char>();  // the dialer is gone; our QP stays in INIT
        const std::string task = engine_task();
        PCHECK(!task.empty());
        const long long t0 = task_cpu_ticks(task);
        const uint64_t start = now_ms();
        usleep(1500000);
        const long long used = task_cpu_ticks(task) - t0;
        const long long elapsed = (long long)(now_ms() - start) * sysconf(_SC_CLK_TCK) / 1000;
        PCHECK(t0 >= 0 && used >= 0);
        if (used * 5 >= elapsed)  // 20 % of a CPU or more
            std::fprintf(stderr, "engine thread used %lld of %lld ticks\n", used, elapsed);
        PCHECK(used * 5 < elapsed);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(side, side));
}

// SPDX-License-Identifier: BSD-2-Clause
// The library lives inside other people's processes: what it must not change there.
#include <dirent.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

// The blocked-signal mask of our background thread, from /proc (0 if there is no such thread).
unsigned long long engine_sigblk() {
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    unsigned long long mask = 0;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string base = std::string("/proc/self/task/") + e->d_name;
        char comm[32] = {};
        FILE *f = std::fopen((base + "/comm").c_str(), "r");
        if (!f) continue;
        bool ours = std::fgets(comm, sizeof comm, f) && std::strncmp(comm, "softrdma", 8) == 0;
        std::fclose(f);
        if (!ours || !(f = std::fopen((base + "/status").c_str(), "r"))) continue;
        char line[128];
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "SigBlk: %llx", &mask) == 1) break;
        std::fclose(f);
    }
    closedir(d);
    return mask;
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

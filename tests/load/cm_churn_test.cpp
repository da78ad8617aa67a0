// SPDX-License-Identifier: BSD-2-Clause
// Issue 5, load: 1,000 RC connections opened, used and closed through the CM on loopback, ten
// times over. Every CM event is counted per connection (exact counts: none lost, none
// duplicated), every connection carries a WRITE and a SEND each way that the other side checks,
// and fds, threads and RSS after the last round must match the first round's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "load/cm_fleet.h"
#include "load/proc_stats.h"

using namespace sr_load;
using sr_test::now_ms;
using sr_test::Oob;

namespace {

constexpr uint32_t kConns = 1000, kRounds = 10;
constexpr int kTimeLimitS = 150;  // takes 25-35 s on 2 busy vCPUs

// Round 1 is the warm-up: it grows the allocator's arenas, the CM's tables and the engine's
// epoll set to their working size. Later rounds reuse that, so what remains is growth. A
// connection holds well over 64 KiB (the stream's staging buffer alone), so a leak of even one
// per round, or of 1 KiB per connection (9 MiB over rounds 2..10), crosses 8 MiB. What
// identical rounds do leave is allocator fragmentation: measured +0.8 MiB (server) and
// +3.6 MiB (client) by round 10, then flat up to round 24.
constexpr int64_t kRssGrowthLimitKiB = 8 * 1024;
// The allocator's bytes in use are a finer measure than RSS. Identical rounds still grow it a
// little, then stop (containers reaching their working size, presumably): measured +0.6 MiB
// on each side by round 10, flat from round 12 and slightly lower by round 24. (This used to swing
// in a 3 MiB band: a destroyed QP's 8 KiB stayed allocated while a timer due later still referred
// to it, because the object shared its allocation with the reference count. Now they are separate.)
// A leak of 256 bytes per connection over rounds 2..10 exceeds 2 MiB.
constexpr int64_t kHeapGrowthLimitKiB = 2 * 1024;

// Compares the two snapshots of one process; the fds and threads must be back exactly.
void check_no_leak(const char *who, const ProcStats &first, const ProcStats &last) {
    std::printf(
        "[%s] round 1 -> %u: fds %d -> %d, threads %d -> %d, rss %+lld KiB, heap %+lld KiB\n", who,
        kRounds, first.fds, last.fds, first.threads, last.threads,
        (long long)(last.rss_kib - first.rss_kib), (long long)(last.heap_kib - first.heap_kib));
    std::fflush(stdout);
    PCHECK_EQ(last.fds, first.fds);
    PCHECK_EQ(last.threads, first.threads);
    if (!kRssMeaningful) return;  // under ASan: see proc_stats.h
    PCHECK(last.rss_kib - first.rss_kib < kRssGrowthLimitKiB);
    PCHECK(last.heap_kib - first.heap_kib < kHeapGrowthLimitKiB);
}

struct Timing {
    uint64_t open_ms = 0, use_ms = 0, close_ms = 0;
};

template <typename Side>
int run(Side &side, Oob &oob, const char *who, bool client) {
    ProcStats first{}, last{};
    Timing t;
    const uint64_t deadline = now_ms() + uint64_t(kTimeLimitS) * 1000;
    for (uint32_t round = 1; round <= kRounds; ++round) {
        uint64_t t0 = now_ms();
        side.open(kConns, deadline);
        uint64_t t1 = now_ms();
        side.exchange(round, every(kConns, 1), deadline);
        uint64_t t2 = now_ms();
        side.close(kConns, deadline);
        oob.barrier();  // both sides destroyed everything before either measures
        uint64_t t3 = now_ms();
        t.open_ms += t1 - t0;
        t.use_ms += t2 - t1;
        t.close_ms += t3 - t2;
        // Every round, so a slow leak shows as a slope in the log, not only as two numbers.
        const ProcStats now = proc_stats();
        char when[32];
        std::snprintf(when, sizeof when, "after round %u", round);
        print_stats(who, when, now);
        if (round == 1) first = now;
        last = now;
        // Neither side opens the next round before both have counted: a client that did
        // would have the server's engine accept up to 145 of the next round's connections
        // into the server's count (seen as "sockets kept past destroy" before this barrier).
        oob.barrier();
    }
    side.print_totals();
    if (client) {
        const double s = double(t.open_ms + t.use_ms + t.close_ms) / 1000;
        std::printf(
            "[%s] %u connections churned (%u rounds of %u held at once) in %.1f s: "
            "%.0f connections/s overall; open %.0f/s, use %.1f s, close %.1f s "
            "(includes the CM's ~2 s timewait per round)\n",
            who, kConns * kRounds, kRounds, kConns, s, kConns * kRounds / s,
            kConns * kRounds * 1000.0 / double(t.open_ms), double(t.use_ms) / 1000,
            double(t.close_ms) / 1000);
    }
    check_no_leak(who, first, last);
    return 0;
}

}  // namespace

TEST(LoadCm, ThousandConnectionsTenTimes) {
    auto server = [](Oob &oob) {
        alarm(kTimeLimitS + 20);  // outlives the test process if ctest kills it
        raise_fd_limit();
        ServerFleet s(oob, kConns);
        return run(s, oob, "server", false);
    };
    auto client = [](Oob &oob) {
        alarm(kTimeLimitS + 20);
        raise_fd_limit();
        ClientFleet c(oob, kConns);
        return run(c, oob, "client", true);
    };
    EXPECT_PAIR_OK(sr_test::run_pair(server, client, (kTimeLimitS + 10) * 1000));
}

// SPDX-License-Identifier: BSD-2-Clause
// `softrdma stat [-w] [-i SECONDS] [-n COUNT] [--json] [PID]`: the live counters of every process
// using softrdma on this host (or one), per process and per QP, read from the pages the
// processes publish (common/stats_page.h). With -w it prints again every -i SECONDS (1), adding
// per-second rates of the byte and packet counters.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <array>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/stats_reader.h"

namespace softrdma::cli {
namespace {

using Key = std::pair<pid_t, uint32_t>;  // process, qpn
using Snapshot = std::map<Key, std::array<uint64_t, stats::kQpCounterCount>>;

void print_text(const std::vector<std::unique_ptr<StatsView>> &views, const Snapshot *prev,
                double dt, Snapshot &now) {
    for (const auto &v : views) {
        const stats::Header &h = v->header();
        std::printf("pid %d %s: contexts %u pds %u cqs %u srqs %u\n", int(h.pid), h.program,
                    h.contexts.load(), h.pds.load(), h.cqs.load(), h.srqs.load());
        std::printf("  cm:");
        for (uint32_t k = 0; k < stats::kProcCounterCount; ++k)
            std::printf(" %s %llu", stats::kProcCounterNames[k], (unsigned long long)h.c[k].load());
        std::printf("\n");
        for (uint32_t i = 0; i < h.qp_slots && i < stats::kQpSlots; ++i) {
            const stats::QpSlot &q = v->qp(i);
            if (!q.live.load(std::memory_order_acquire)) continue;
            const uint32_t qpn = q.qpn.load();
            std::printf("  qp %u (0x%06x) %s %s%s:", qpn, qpn, qp_type_name(q.type.load()),
                        qp_state_name(q.state.load()), q.shm.load() ? " shared-memory" : "");
            auto &row = now[{h.pid, qpn}];
            for (uint32_t k = 0; k < stats::kQpCounterCount; ++k) {
                row[k] = q.get(stats::QpCounter(k));
                // Packets and bytes always; the error and drop counters once they happen.
                if (k > stats::kRcvdBytes && !row[k]) continue;
                std::printf(" %s %llu", stats::kQpCounterNames[k], (unsigned long long)row[k]);
            }
            if (prev && dt > 0) {
                auto it = prev->find({h.pid, qpn});
                if (it != prev->end()) {
                    auto rate = [&](stats::QpCounter k) {
                        return double(row[k] - it->second[k]) / dt;
                    };
                    std::printf(" | %.0f pkts/s out %.0f in, %.1f MB/s out %.1f in",
                                rate(stats::kSentPkts), rate(stats::kRcvdPkts),
                                rate(stats::kSentBytes) / 1e6, rate(stats::kRcvdBytes) / 1e6);
                }
            }
            std::printf("\n");
        }
        if (h.qps_unlisted.load())
            std::printf("  (%u QPs made after the table filled are not listed)\n",
                        h.qps_unlisted.load());
    }
    if (views.empty()) std::printf("no process is using softrdma (that we may look at)\n");
}

void print_json(const std::vector<std::unique_ptr<StatsView>> &views) {
    std::printf("{\"processes\": [");
    bool first = true;
    for (const auto &v : views) {
        const stats::Header &h = v->header();
        std::printf(
            "%s\n  {\"pid\": %d, \"program\": %s, \"contexts\": %u, \"pds\": %u, "
            "\"cqs\": %u, \"srqs\": %u, \"counters\": {",
            first ? "" : ",", int(h.pid), json_string(h.program).c_str(), h.contexts.load(),
            h.pds.load(), h.cqs.load(), h.srqs.load());
        first = false;
        for (uint32_t k = 0; k < stats::kProcCounterCount; ++k)
            std::printf("%s\"%s\": %llu", k ? ", " : "", stats::kProcCounterNames[k],
                        (unsigned long long)h.c[k].load());
        std::printf("}, \"qps\": [");
        bool qfirst = true;
        for (uint32_t i = 0; i < h.qp_slots && i < stats::kQpSlots; ++i) {
            const stats::QpSlot &q = v->qp(i);
            if (!q.live.load(std::memory_order_acquire)) continue;
            std::printf(
                "%s\n    {\"qpn\": %u, \"type\": \"%s\", \"state\": \"%s\", "
                "\"shared_memory\": %s, \"counters\": {",
                qfirst ? "" : ",", q.qpn.load(), qp_type_name(q.type.load()),
                qp_state_name(q.state.load()), q.shm.load() ? "true" : "false");
            qfirst = false;
            for (uint32_t k = 0; k < stats::kQpCounterCount; ++k)
                std::printf("%s\"%s\": %llu", k ? ", " : "", stats::kQpCounterNames[k],
                            (unsigned long long)q.get(stats::QpCounter(k)));
            std::printf("}}");
        }
        std::printf("]}");
    }
    std::printf("\n]}\n");
}

}  // namespace

int stat_command(int argc, char **argv) {
    bool json = false, watch = false;
    double every = 1.0;
    long count = -1;  // -w: until interrupted
    pid_t only = 0;
    for (int i = 0; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            json = true;
        } else if (!std::strcmp(argv[i], "-w")) {
            watch = true;
        } else if (!std::strcmp(argv[i], "-i") && i + 1 < argc && std::atof(argv[i + 1]) > 0) {
            every = std::atof(argv[++i]);
        } else if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
            count = std::atol(argv[++i]);
        } else if (argv[i][0] >= '1' && argv[i][0] <= '9') {
            only = pid_t(std::atoi(argv[i]));
        } else {
            std::fprintf(stderr,
                         "usage: softrdma stat [-w] [-i SECONDS] [-n COUNT] [--json] [PID]\n");
            return 2;
        }
    }
    if (!watch && count < 0) count = 1;  // -n alone also repeats
    Snapshot prev, now;
    bool have_prev = false;
    for (long n = 0; count < 0 || n < count; ++n) {
        if (n) usleep(useconds_t(every * 1e6));
        auto views = find_stats(only);
        if (only && views.empty()) {
            std::fprintf(stderr,
                         "softrdma stat: process %d does not use softrdma, or is not ours to "
                         "look at\n",
                         int(only));
            return 1;
        }
        if (json) {
            print_json(views);
        } else {
            now.clear();
            print_text(views, have_prev ? &prev : nullptr, every, now);
            prev.swap(now);
            have_prev = true;
            if (watch) std::printf("\n");
        }
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace softrdma::cli

// SPDX-License-Identifier: BSD-2-Clause
#include "common/fault_plan.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace softrdma {

namespace {

bool parse_prob(const char *v, double &out) {
    char *end;
    const double d = std::strtod(v, &end);
    if (end == v || *end || !(d >= 0 && d <= 1)) return false;
    out = d;
    return true;
}

bool parse_uint(const char *v, uint64_t max, uint64_t &out) {
    char *end;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end == v || *end || errno || v[0] == '-' || n > max) return false;
    out = n;
    return true;
}

uint64_t splitmix(uint64_t &s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

bool parse_fault_plan(const char *spec, FaultPlan &plan, const char *&err) {
    static thread_local std::string bad;
    FaultPlan p;
    std::string s(spec);
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos) end = s.size();
        std::string item = s.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq);
        const char *val = eq == std::string::npos ? "" : item.c_str() + eq + 1;
        uint64_t n = 0;
        bool ok;
        if (key == "seed") {
            ok = parse_uint(val, UINT64_MAX, p.seed);
        } else if (key == "rnr") {
            ok = parse_prob(val, p.rnr);
        } else if (key == "reject") {
            ok = parse_prob(val, p.reject);
        } else if (key == "cm_drop") {
            ok = parse_prob(val, p.cm_drop);
        } else if (key == "cm_delay") {
            ok = parse_uint(val, 600000, n);
            p.cm_delay_ms = uint32_t(n);
        } else if (key == "disconnect") {
            ok = parse_prob(val, p.disconnect);
        } else if (key == "qp_error_after") {
            ok = parse_uint(val, UINT64_MAX, p.qp_error_after) && p.qp_error_after > 0;
        } else {
            ok = false;
        }
        if (!ok) {
            bad = item;
            err = bad.c_str();
            return false;
        }
    }
    p.active = p.rnr > 0 || p.reject > 0 || p.cm_drop > 0 || p.cm_delay_ms || p.disconnect > 0 ||
               p.qp_error_after;
    plan = p;
    return true;
}

const FaultPlan &fault_plan() {
    static const FaultPlan plan = [] {
        FaultPlan p;
        const char *spec = std::getenv("SOFTRDMA_FAULTS");
        const char *err = nullptr;
        if (spec && *spec && !parse_fault_plan(spec, p, err)) {
            std::fprintf(stderr,
                         "softrdma: SOFTRDMA_FAULTS: cannot use '%s' (keys: seed, rnr, reject, "
                         "cm_drop, cm_delay, disconnect, qp_error_after); no faults injected\n",
                         err);
            p = FaultPlan{};
        }
        return p;
    }();
    return plan;
}

FaultDice FaultDice::for_new(Kind kind) {
    static std::atomic<uint64_t> created[2];
    return make(fault_plan().seed, kind, created[kind].fetch_add(1, std::memory_order_relaxed));
}

FaultDice FaultDice::make(uint64_t seed, uint32_t kind, uint64_t n) {
    uint64_t s = seed ^ (uint64_t(kind) << 56) ^ (n * 0xd1b54a32d192ed03ull);
    splitmix(s);
    return FaultDice(s);
}

bool FaultDice::roll(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return double(splitmix(s_) >> 11) * 0x1.0p-53 < p;
}

}  // namespace softrdma

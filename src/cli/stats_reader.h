// SPDX-License-Identifier: BSD-2-Clause
// Finds the stats pages of the processes using softrdma on this host (common/stats_page.h):
// each is a memfd named "softrdma-stats", reached through /proc/PID/fd, mapped read-only.
// Only processes we may inspect (our own user's, or any as root) are seen.
#pragma once
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/stats_page.h"

namespace softrdma::cli {

class StatsView {
  public:
    ~StatsView();
    StatsView(const StatsView &) = delete;
    StatsView &operator=(const StatsView &) = delete;
    static std::unique_ptr<StatsView> open(pid_t pid, int fd);

    const stats::Header &header() const { return *reinterpret_cast<const stats::Header *>(base_); }
    const stats::QpSlot &qp(uint32_t i) const;
    const stats::MrSlot &mr(uint32_t i) const;
    const stats::CmSlot &cm(uint32_t i) const;

  private:
    StatsView(const uint8_t *base) : base_(base) {}
    const uint8_t *base_;
};

// Every page found, by pid order; `only` (not 0) limits the search to that process.
std::vector<std::unique_ptr<StatsView>> find_stats(pid_t only = 0);

}  // namespace softrdma::cli

namespace softrdma::cli {

const char *qp_type_name(unsigned type);
const char *qp_state_name(unsigned state);
// A JSON string literal of `s` (quotes included).
std::string json_string(const char *s);

}  // namespace softrdma::cli

// SPDX-License-Identifier: BSD-2-Clause
// A same-host peer's region file (verbs/region_file.h) as this process sees it: opened through
// /proc/<pid>/fd/<n>, checked, and mapped; WRITE and READ then copy straight between its
// published regions and ours. Every field of the peer's table is checked as the responder
// checks an incoming request (key, PD, rights, bounds), and no copy leaves what was mapped.
#pragma once
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "common/unique_fd.h"

namespace softrdma::verbs {

class PeerRegions {
    struct Token {
        explicit Token() = default;
    };

  public:
    explicit PeerRegions(Token) {}
    ~PeerRegions();
    PeerRegions(const PeerRegions &) = delete;
    PeerRegions &operator=(const PeerRegions &) = delete;

    // The file `fd` of process `pid`, shared by every QP to that process; null if it cannot
    // be opened or is not a region file of that process.
    static std::shared_ptr<PeerRegions> open(pid_t pid, int fd);

    // What the responder's QP allows (its PD and rights): the peer publishes them in the
    // link (transport/shm_link.h).
    struct Responder {
        uint64_t pd;
        int access;
    };
    // Copies between our iovecs and [iova, iova+n) of the region `rkey`. False (nothing
    // copied) when the key, PD, rights or bounds do not allow it or the range is not in the
    // file: the request then takes the rings, and the responder judges it there.
    bool write(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *src, int cnt,
               uint64_t n);
    bool read(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *dst, int cnt,
              uint64_t n);

  private:
    bool copy(const Responder &r, uint32_t rkey, uint64_t iova, const iovec *v, int cnt, uint64_t n,
              bool to_peer);
    bool map_upto(uint64_t end);

    UniqueFd fd_;
    uint8_t *base_ = nullptr;  // a reservation of kRegionFileMax; the file mapped at its start
    uint64_t mapped_ = 0;
    std::mutex map_mu_;
};

}  // namespace softrdma::verbs

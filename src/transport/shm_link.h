// SPDX-License-Identifier: BSD-2-Clause
// The shared-memory segment of one same-host connection: a memfd holding a header and two
// byte rings (offerer to accepter, accepter to offerer). The offerer creates it; the accepter
// opens it through /proc/<offerer pid>/fd/<fd> (the kernel allows that only to a process that
// may trace the offerer: the same user), and both check that the header names their own TCP
// connection before trusting it. docs/wire.md §3.6 has the layout.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/unique_fd.h"
#include "transport/shm_ring.h"

namespace softrdma::transport {

// SOFTRDMA_SHM=0 turns the same-host path off (both ends then stay on TCP).
bool shm_enabled();
// True if the connected TCP socket `sock` leads to this host, in this network namespace:
// its local and peer addresses are the same address.
bool shm_same_host(int sock);
// SOFTRDMA_SHM_NOTES=0: this end does not read the peer's ring notes (ShmRing::set_note), as
// an end older than them; its peer then sends ACKs as frames. For tests and comparisons.
bool shm_notes_enabled();
// SOFTRDMA_SHM_CMA=1: peers may send this process large payload pieces by reference (it copies
// them once, with process_vm_readv) instead of through the rings (two copies, one on each
// side's CPU); the reader opts in because it does the copy (set_peer probes only then). Off by
// default: with both ends' CPUs free, the pipelined two copies move more bytes per second
// (bench/README.md). The smallest piece sent by reference: SOFTRDMA_SHM_CMA_MIN (bytes,
// default 16384, at least 4096).
bool shm_cma_enabled();
size_t shm_cma_min();

class ShmLink {
    struct Token {
        explicit Token() = default;
    };

  public:
    explicit ShmLink(Token) {}
    ~ShmLink();
    ShmLink(const ShmLink &) = delete;
    ShmLink &operator=(const ShmLink &) = delete;

    // The offerer's segment for the connection on `sock`; null (errno set) on failure.
    static std::unique_ptr<ShmLink> create(int sock);
    enum class OpenError { kNone, kCannotOpen, kBadSegment };
    // The accepter's view of the segment the peer offered; null with `err` on failure.
    static std::unique_ptr<ShmLink> open(int sock, uint32_t pid, uint32_t fd, OpenError &err);

    int fd() const { return fd_.get(); }
    // One-copy transfers (transport/shm_channel.h): the peer's pid, learnt at setup (the
    // offer names the offerer, the accept the accepter); then whether we may read its memory
    // (process_vm_readv: the kernel's ptrace check, which Yama or a container may refuse)
    // is probed once and published in the segment for the peer.
    void set_peer(uint32_t pid);
    uint32_t peer_pid() const { return peer_pid_; }
    // The peer found it can read our memory: we may send it references.
    bool peer_reads_me() const;
    // Whether we read the note of the ring we read (ShmRing::set_note) and the peer reads
    // that of the ring we write (an older peer does not).
    bool reads_notes() const { return reads_notes_; }
    bool peer_reads_notes() const;
    void close_fd() { fd_.reset(); }  // once the accepter has it open
    // Words each end publishes for the other in the header page, for shared regions
    // (verbs/region_file.h): its region file's descriptor (+1; 0: none), and what its QP lets
    // a peer do (the PD, and the rights with bit 31 set while the QP takes requests).
    enum Word { kRegionFd, kResponderPd, kResponderAccess, kWordCount };
    void publish(Word w, uint64_t v);
    uint64_t peer_word(Word w) const;
    ShmRing &tx() { return tx_; }
    ShmRing &rx() { return rx_; }
    uint64_t ring_bytes() const { return ring_bytes_; }

  private:
    bool map(bool offerer);
    struct CmaWords *cma() const;
    struct SideWords *words() const;
    UniqueFd fd_;
    void *base_ = nullptr;
    size_t size_ = 0;
    uint64_t ring_bytes_ = 0;
    int side_ = 0;  // 0: offerer, 1: accepter
    uint32_t peer_pid_ = 0;
    bool reads_notes_ = false;  // what map() published in our feature word
    ShmRing tx_, rx_;
};

}  // namespace softrdma::transport

// SPDX-License-Identifier: BSD-2-Clause
// Software devices: one per IP interface (lo included), listed non-loopback first, each with
// one RoCE-like port whose GID table holds the interface's addresses.
#pragma once
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace softrdma::verbs {

struct Gid {
    uint8_t raw[16];
};

// Converts a GID to a socket address (IPv4-mapped GIDs become AF_INET).
bool gid_to_sockaddr(const uint8_t gid[16], uint16_t port, sockaddr_storage &out, socklen_t &len);
// The GID of an IPv4 (as ::ffff:a.b.c.d) or IPv6 socket address; zero for other families.
void sockaddr_to_gid(const sockaddr *sa, uint8_t gid[16]);

class Device : public ibv_device {
  public:
    Device(const std::string &ifname, int ifindex, bool loopback, const uint8_t mac[6]);

    const std::string &ifname() const { return ifname_; }
    int ifindex() const { return ifindex_; }
    bool loopback() const { return loopback_; }
    uint64_t guid_host() const { return guid_; }  // host byte order
    std::vector<Gid> gids() const;
    void set_gids(std::vector<Gid> g);
    bool has_gid(const uint8_t gid[16]) const;
    bool gid_at(int index, uint8_t out[16]) const;
    // The GID at `index` if it is IPv4-mapped exactly when `v4`, else the first GID that
    // is; false if the table has none of that family.
    bool pick_gid(int index, bool v4, uint8_t out[16]) const;

    static Device *from(ibv_device *d) { return static_cast<Device *>(d); }

  private:
    std::string ifname_;
    int ifindex_;
    bool loopback_;
    uint64_t guid_;
    mutable std::mutex mu_;
    std::vector<Gid> gids_;
};

// Re-reads the interfaces and returns the current device set. Devices are never freed
// (programs keep ibv_device pointers for their whole life); a vanished interface keeps its
// device with an empty GID table.
std::vector<Device *> scan_devices();
// The devices the last scan found, without asking the kernel again (getifaddrs is a netlink
// dump of every link and address). The CM's netlink watcher rescans when addresses change.
std::vector<Device *> known_devices();

}  // namespace softrdma::verbs

// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/device.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netpacket/packet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "wire/gid.h"

namespace softrdma::verbs {
namespace {

std::mutex g_mu;
std::vector<std::unique_ptr<Device>> g_devices;
std::vector<Device *> g_listed;  // what the last scan found, in its order
bool g_scanned = false;

uint64_t guid_from(const uint8_t mac[6], const std::string &ifname) {
    bool zero = true;
    for (int i = 0; i < 6; ++i) zero &= mac[i] == 0;
    if (!zero) {
        // EUI-64 from the MAC, as RoCE devices do.
        return uint64_t(mac[0] ^ 0x02) << 56 | uint64_t(mac[1]) << 48 | uint64_t(mac[2]) << 40 |
               uint64_t(0xff) << 32 | uint64_t(0xfe) << 24 | uint64_t(mac[3]) << 16 |
               uint64_t(mac[4]) << 8 | mac[5];
    }
    // No MAC (loopback): a stable locally administered id from the name.
    return 0x0200000000000000ull |
           (std::hash<std::string>{}("softrdma:" + ifname) & 0x00ffffffffffffffull);
}

}  // namespace

bool gid_to_sockaddr(const uint8_t gid[16], uint16_t port, sockaddr_storage &out, socklen_t &len) {
    std::memset(&out, 0, sizeof out);
    if (wire::gid_is_v4_mapped(gid)) {
        auto &a = reinterpret_cast<sockaddr_in &>(out);
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        std::memcpy(&a.sin_addr, gid + 12, 4);
        len = sizeof a;
        return true;
    }
    static const uint8_t kZero[16] = {};
    if (std::memcmp(gid, kZero, 16) == 0) return false;
    auto &a = reinterpret_cast<sockaddr_in6 &>(out);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    std::memcpy(&a.sin6_addr, gid, 16);
    len = sizeof a;
    return true;
}

Device::Device(const std::string &ifname, int ifindex, bool loopback, const uint8_t mac[6])
    : ibv_device{},
      ifname_(ifname),
      ifindex_(ifindex),
      loopback_(loopback),
      guid_(guid_from(mac, ifname)) {
    node_type = IBV_NODE_CA;
    transport_type = IBV_TRANSPORT_IB;
    std::snprintf(name, sizeof name, "sr_%s", ifname.c_str());
    std::snprintf(dev_name, sizeof dev_name, "uverbs_sr_%s", ifname.c_str());
    std::snprintf(dev_path, sizeof dev_path, "/sys/class/infiniband_verbs/%s", dev_name);
    std::snprintf(ibdev_path, sizeof ibdev_path, "/sys/class/infiniband/%s", name);
}

std::vector<Gid> Device::gids() const {
    std::lock_guard lk(mu_);
    return gids_;
}

void Device::set_gids(std::vector<Gid> g) {
    std::lock_guard lk(mu_);
    gids_ = std::move(g);
}

bool Device::has_gid(const uint8_t gid[16]) const {
    std::lock_guard lk(mu_);
    for (const Gid &g : gids_)
        if (std::memcmp(g.raw, gid, 16) == 0) return true;
    return false;
}

bool Device::gid_at(int index, uint8_t out[16]) const {
    std::lock_guard lk(mu_);
    if (index < 0 || size_t(index) >= gids_.size()) return false;
    std::memcpy(out, gids_[size_t(index)].raw, 16);
    return true;
}

void sockaddr_to_gid(const sockaddr *sa, uint8_t gid[16]) {
    std::memset(gid, 0, 16);
    if (sa->sa_family == AF_INET) {
        gid[10] = gid[11] = 0xff;
        std::memcpy(gid + 12, &reinterpret_cast<const sockaddr_in *>(sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        std::memcpy(gid, &reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr, 16);
    }
}

bool Device::pick_gid(int index, bool v4, uint8_t out[16]) const {
    auto fits = [&](const Gid &g) { return wire::gid_is_v4_mapped(g.raw) == v4; };
    std::lock_guard lk(mu_);
    const Gid *pick = nullptr;
    if (index >= 0 && size_t(index) < gids_.size() && fits(gids_[size_t(index)]))
        pick = &gids_[size_t(index)];
    for (size_t i = 0; !pick && i < gids_.size(); ++i)
        if (fits(gids_[i])) pick = &gids_[i];
    if (pick) std::memcpy(out, pick->raw, 16);
    return pick != nullptr;
}

std::vector<Device *> scan_devices() {
    struct Found {
        std::string name;
        int index = 0;
        bool loopback = false;
        uint8_t mac[6] = {};
        std::vector<Gid> v4, v6;
    };
    std::vector<Found> found;
    ifaddrs *ifa = nullptr;
    if (getifaddrs(&ifa) == 0) {
        auto get = [&](const char *name) -> Found & {
            for (auto &f : found)
                if (f.name == name) return f;
            found.push_back({});
            found.back().name = name;
            found.back().index = int(if_nametoindex(name));
            return found.back();
        };
        for (ifaddrs *p = ifa; p; p = p->ifa_next) {
            if (!p->ifa_addr || !(p->ifa_flags & IFF_UP)) continue;
            const int fam = p->ifa_addr->sa_family;
            if (fam == AF_PACKET) {
                auto *ll = reinterpret_cast<sockaddr_ll *>(p->ifa_addr);
                Found &f = get(p->ifa_name);
                if (ll->sll_halen == 6) std::memcpy(f.mac, ll->sll_addr, 6);
                f.loopback = p->ifa_flags & IFF_LOOPBACK;
                continue;
            }
            if (fam != AF_INET && fam != AF_INET6) continue;
            Found &f = get(p->ifa_name);
            f.loopback = p->ifa_flags & IFF_LOOPBACK;
            Gid g{};
            if (fam == AF_INET) {
                g.raw[10] = g.raw[11] = 0xff;
                std::memcpy(g.raw + 12, &reinterpret_cast<sockaddr_in *>(p->ifa_addr)->sin_addr, 4);
                f.v4.push_back(g);
            } else {
                std::memcpy(g.raw, &reinterpret_cast<sockaddr_in6 *>(p->ifa_addr)->sin6_addr, 16);
                f.v6.push_back(g);
            }
        }
        freeifaddrs(ifa);
    }
    // Non-loopback first, as a RoCE machine lists its NICs; stable by ifindex otherwise.
    std::stable_sort(found.begin(), found.end(), [](const Found &a, const Found &b) {
        if (a.loopback != b.loopback) return !a.loopback;
        return a.index < b.index;
    });

    std::lock_guard lk(g_mu);
    // Each table is replaced in one step: a thread reading a GID meanwhile (another id
    // connecting) must never see an emptied table.
    for (auto &d : g_devices) {
        bool present = false;
        for (auto &f : found)
            present = present || (f.name == d->ifname() && !(f.v4.empty() && f.v6.empty()));
        if (!present) d->set_gids({});
    }
    for (auto &f : found) {
        if (f.v4.empty() && f.v6.empty()) continue;
        // IPv4 addresses first so that GID index 0 is the one programs expect on RoCE v2.
        std::vector<Gid> gids = f.v4;
        gids.insert(gids.end(), f.v6.begin(), f.v6.end());
        Device *dev = nullptr;
        for (auto &d : g_devices)
            if (d->ifname() == f.name) dev = d.get();
        if (!dev) {
            g_devices.push_back(std::make_unique<Device>(f.name, f.index, f.loopback, f.mac));
            dev = g_devices.back().get();
        }
        dev->set_gids(std::move(gids));
    }
    std::vector<Device *> out;
    for (auto &f : found)
        for (auto &d : g_devices)
            if (d->ifname() == f.name && !d->gids().empty()) out.push_back(d.get());
    g_listed = out;
    g_scanned = true;
    return out;
}

std::vector<Device *> known_devices() {
    {
        std::lock_guard lk(g_mu);
        if (g_scanned) return g_listed;
    }
    return scan_devices();
}

}  // namespace softrdma::verbs

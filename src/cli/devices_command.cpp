// SPDX-License-Identifier: BSD-2-Clause
// `softrdma devices [--json]`: our devices as programs see them, with what `rdma link` and
// `ibv_devices` would tell of a NIC: network interface, state, MTUs, GUID, GID table.
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "transport/packet_socket.h"
#include "verbs/device.h"

namespace softrdma::cli {

std::string gid_text(const uint8_t raw[16]) {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, raw, buf, sizeof buf)) return "?";
    return buf;
}

namespace {

std::string guid_text(uint64_t g) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff,
                  unsigned(g >> 32) & 0xffff, unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
    return buf;
}

}  // namespace

int devices_command(int argc, char **argv) {
    bool json = false;
    for (int i = 0; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--json")) {
            json = true;
        } else {
            std::fprintf(stderr, "usage: softrdma devices [--json]\n");
            return 2;
        }
    }
    const auto devs = verbs::scan_devices();
    if (json) std::printf("[");
    bool first = true;
    for (verbs::Device *d : devs) {
        const auto gids = d->gids();
        const unsigned mtu = transport::interface_mtu(d->ifindex());
        if (json) {
            std::printf(
                "%s\n  {\"name\": \"%s\", \"netdev\": \"%s\", \"ifindex\": %d, "
                "\"state\": \"ACTIVE\", \"link_layer\": \"Ethernet\", \"active_mtu\": 4096, "
                "\"netdev_mtu\": %u, \"loopback\": %s, \"node_guid\": \"%s\", \"gids\": [",
                first ? "" : ",", d->name, d->ifname().c_str(), d->ifindex(), mtu,
                d->loopback() ? "true" : "false", guid_text(d->guid_host()).c_str());
            for (size_t i = 0; i < gids.size(); ++i)
                std::printf("%s\"%s\"", i ? ", " : "", gid_text(gids[i].raw).c_str());
            std::printf("]}");
        } else {
            std::printf(
                "%s: netdev %s (ifindex %d)%s, state ACTIVE, link layer Ethernet, "
                "active_mtu 4096, netdev mtu %u, node_guid %s\n",
                d->name, d->ifname().c_str(), d->ifindex(), d->loopback() ? ", loopback" : "", mtu,
                guid_text(d->guid_host()).c_str());
            for (size_t i = 0; i < gids.size(); ++i)
                std::printf("    gid %zu: %s\n", i, gid_text(gids[i].raw).c_str());
        }
        first = false;
    }
    if (json) std::printf("\n]\n");
    if (devs.empty() && !json)
        std::printf("no devices: no network interface is up with an IP address\n");
    return 0;
}

}  // namespace softrdma::cli

// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/sysfs_view.h"

#include <cinttypes>
#include <cstdio>

#include "verbs/context.h"
#include "verbs/device.h"

namespace softrdma::verbs {
namespace {

std::string hex16_groups(const uint8_t *b, int groups) {
    std::string s;
    char g[8];
    for (int i = 0; i < groups; ++i) {
        std::snprintf(g, sizeof g, "%s%02x%02x", i ? ":" : "", b[2 * i], b[2 * i + 1]);
        s += g;
    }
    return s;
}

// Formats as the kernel's attribute files print them (one value and a newline).
std::string guid_text(uint64_t host_order) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(host_order >> (56 - 8 * i));
    return hex16_groups(b, 4) + "\n";
}

std::string rate_text(const ibv_port_attr &p) {
    // ib_core's rate file: "<Gb/s> Gb/sec (<width>X <speed name>)".
    const int lanes = p.active_width == 2    ? 4
                      : p.active_width == 4  ? 8
                      : p.active_width == 8  ? 12
                      : p.active_width == 16 ? 2
                                             : 1;
    struct Speed {
        int code, gbps_per_lane;
        const char *name;
    };
    static const Speed kSpeeds[] = {{1, 2, " SDR"},    {2, 5, " DDR"},    {4, 10, " QDR"},
                                    {8, 10, " FDR10"}, {16, 14, " FDR"},  {32, 25, " EDR"},
                                    {64, 50, " HDR"},  {128, 100, " NDR"}};
    const Speed *s = &kSpeeds[0];
    for (const Speed &k : kSpeeds)
        if (k.code == p.active_speed) s = &k;
    char out[64];
    std::snprintf(out, sizeof out, "%d Gb/sec (%dX%s)\n", lanes * s->gbps_per_lane, lanes, s->name);
    return out;
}

void add_device(std::vector<SysfsEntry> &v, Device &dev) {
    using K = SysfsEntry::Kind;
    const std::string ib = std::string("/sys/class/infiniband/") + dev.name;
    auto file = [&](const std::string &p, std::string text) {
        v.push_back({K::kFile, p, std::move(text)});
    };
    ibv_device_attr da;
    fill_device_attr(dev, da);
    ibv_port_attr pa;
    fill_port_attr(dev, pa);
    file(ib + "/node_type", "1: CA\n");
    file(ib + "/node_guid", guid_text(dev.guid_host()));
    file(ib + "/sys_image_guid", guid_text(dev.guid_host()));
    file(ib + "/fw_ver", std::string(da.fw_ver) + "\n");
    file(ib + "/hw_rev", std::to_string(da.hw_ver) + "\n");
    file(ib + "/hca_type", "softrdma\n");
    file(ib + "/node_desc", std::string("softrdma ") + dev.ifname() + "\n");
    // The netdev behind the port, where rdma-core's tests and `rdma link` look for it.
    file(ib + "/device/numa_node", "-1\n");
    v.push_back(
        {K::kSymlink, ib + "/device/net/" + dev.ifname(), "/sys/class/net/" + dev.ifname()});
    const std::string port = ib + "/ports/1";
    file(port + "/state", "4: ACTIVE\n");
    file(port + "/phys_state", "5: LinkUp\n");
    file(port + "/link_layer", "Ethernet\n");
    file(port + "/rate", rate_text(pa));
    file(port + "/lid", "0x0\n");
    file(port + "/sm_lid", "0x0\n");
    file(port + "/lid_mask_count", "0\n");
    file(port + "/sm_sl", "0\n");
    char cap[16];
    std::snprintf(cap, sizeof cap, "0x%08x\n", pa.port_cap_flags);
    file(port + "/cap_mask", cap);
    file(port + "/pkeys/0", "0xffff\n");
    const auto gids = dev.gids();
    for (size_t i = 0; i < gids.size(); ++i) {
        const std::string n = std::to_string(i);
        file(port + "/gids/" + n, hex16_groups(gids[i].raw, 8) + "\n");
        // Every GID of ours is a RoCE v2 one (UDP/IP), as rxe marks them.
        file(port + "/gid_attrs/types/" + n, "RoCE v2\n");
        file(port + "/gid_attrs/ndevs/" + n, dev.ifname() + "\n");
    }
    const std::string uverbs = std::string("/sys/class/infiniband_verbs/") + dev.dev_name;
    file(uverbs + "/ibdev", std::string(dev.name) + "\n");
    file(uverbs + "/abi_version", "1\n");
    v.push_back({K::kSymlink, uverbs + "/device", ib + "/device"});
    v.push_back({K::kCharDevice, std::string("/dev/infiniband/") + dev.dev_name, ""});
}

}  // namespace

std::vector<SysfsEntry> sysfs_view(const std::vector<Device *> &devices) {
    std::vector<SysfsEntry> v;
    v.push_back({SysfsEntry::Kind::kFile, "/sys/class/infiniband_verbs/abi_version", "6\n"});
    v.push_back({SysfsEntry::Kind::kCharDevice, "/dev/infiniband/rdma_cm", ""});
    for (Device *d : devices) add_device(v, *d);
    return v;
}

std::optional<std::string> sysfs_view_file(const std::string &path) {
    if (path.rfind("/sys/class/infiniband", 0) != 0) return std::nullopt;
    for (const SysfsEntry &e : sysfs_view(known_devices()))
        if (e.kind == SysfsEntry::Kind::kFile && e.path == path) return e.content;
    return std::nullopt;
}

}  // namespace softrdma::verbs

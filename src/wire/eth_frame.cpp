// SPDX-License-Identifier: BSD-2-Clause
#include "wire/eth_frame.h"

#include <cstring>

namespace softrdma::wire {
namespace {

uint16_t be16(const uint8_t *p) {
    return uint16_t(p[0] << 8 | p[1]);
}
void put_be16(uint8_t *p, uint16_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}

constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr size_t kIpv4MinHeader = 20;
constexpr size_t kIpv6Header = 40;
constexpr size_t kUdpHeader = 8;
constexpr size_t kTcpMinHeader = 20;

bool bytes_match(const uint8_t *want, const uint8_t *mask, const uint8_t *have, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if ((have[i] & mask[i]) != (want[i] & mask[i])) return false;
    return true;
}

template <typename T>
bool masked_equal(T want, T mask, T have) {
    return (have & mask) == (want & mask);
}

uint16_t fold(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return uint16_t(sum);
}

}  // namespace

bool parse_eth_frame(std::span<const uint8_t> frame, EthFrame &f) {
    f = EthFrame{};
    if (frame.size() < kEthHeaderLen) return false;
    const uint8_t *p = frame.data();
    std::memcpy(f.dst_mac, p, 6);
    std::memcpy(f.src_mac, p + 6, 6);
    size_t off = 12;
    f.ether_type = be16(p + off);
    if (f.ether_type == kEtherTypeVlan && frame.size() >= kEthHeaderLen + kVlanTagLen) {
        f.has_vlan = true;
        f.vlan_tci = be16(p + off + 2);
        off += kVlanTagLen;
        f.ether_type = be16(p + off);
    }
    off += 2;
    f.l3_off = off;
    const size_t left = frame.size() - off;
    const uint8_t *ip = p + off;
    size_t l4_len = 0;
    if (f.ether_type == kEtherTypeIpv4 && left >= kIpv4MinHeader && (ip[0] >> 4) == 4) {
        const size_t ihl = size_t(ip[0] & 0x0f) * 4;
        if (ihl < kIpv4MinHeader || ihl > left) return true;
        f.ip_version = 4;
        f.tos = ip[1];
        f.ipv4_flags = uint8_t(ip[6] >> 5);
        f.ttl = ip[8];
        f.l4_proto = ip[9];
        std::memcpy(f.src_ip, ip + 12, 4);
        std::memcpy(f.dst_ip, ip + 16, 4);
        // A later fragment carries no L4 header.
        const bool later_fragment = (be16(ip + 6) & 0x1fff) != 0;
        f.l4_off = off + ihl;
        l4_len = later_fragment ? 0 : left - ihl;
    } else if (f.ether_type == kEtherTypeIpv6 && left >= kIpv6Header && (ip[0] >> 4) == 6) {
        f.ip_version = 6;
        f.tos = uint8_t((ip[0] & 0x0f) << 4 | ip[1] >> 4);
        f.flow_label = uint32_t(ip[1] & 0x0f) << 16 | uint32_t(ip[2]) << 8 | ip[3];
        f.l4_proto = ip[6];
        f.ttl = ip[7];
        std::memcpy(f.src_ip, ip + 8, 16);
        std::memcpy(f.dst_ip, ip + 24, 16);
        f.l4_off = off + kIpv6Header;
        l4_len = left - kIpv6Header;
    } else {
        return true;
    }
    const size_t need = f.l4_proto == kProtoTcp   ? kTcpMinHeader
                        : f.l4_proto == kProtoUdp ? kUdpHeader
                                                  : SIZE_MAX;
    if (need != SIZE_MAX && l4_len >= need) {
        f.has_ports = true;
        f.src_port = be16(p + f.l4_off);
        f.dst_port = be16(p + f.l4_off + 2);
    }
    return true;
}

bool frame_matches(const FrameMatch &m, const EthFrame &f) {
    if (!bytes_match(m.dst_mac, m.dst_mac_mask, f.dst_mac, 6) ||
        !bytes_match(m.src_mac, m.src_mac_mask, f.src_mac, 6) ||
        !masked_equal(m.ether_type, m.ether_type_mask, f.ether_type))
        return false;
    if (m.vlan_tci_mask && (!f.has_vlan || !masked_equal(m.vlan_tci, m.vlan_tci_mask, f.vlan_tci)))
        return false;
    if (m.ip_version) {
        if (f.ip_version != m.ip_version) return false;
        const size_t n = m.ip_version == 4 ? 4 : 16;
        if (!bytes_match(m.src_ip, m.src_ip_mask, f.src_ip, n) ||
            !bytes_match(m.dst_ip, m.dst_ip_mask, f.dst_ip, n) ||
            !masked_equal(m.l4_proto, m.l4_proto_mask, f.l4_proto) ||
            !masked_equal(m.tos, m.tos_mask, f.tos) || !masked_equal(m.ttl, m.ttl_mask, f.ttl) ||
            !masked_equal(m.ipv4_flags, m.ipv4_flags_mask, f.ipv4_flags) ||
            !masked_equal(m.flow_label, m.flow_label_mask, f.flow_label))
            return false;
    }
    if (m.want_l4) {
        if (!f.has_ports || f.l4_proto != m.want_l4) return false;
        if (!masked_equal(m.src_port, m.src_port_mask, f.src_port) ||
            !masked_equal(m.dst_port, m.dst_port_mask, f.dst_port))
            return false;
    }
    return true;
}

uint32_t ones_sum(std::span<const uint8_t> d, uint32_t sum) {
    size_t i = 0;
    for (; i + 1 < d.size(); i += 2) sum += uint32_t(d[i]) << 8 | d[i + 1];
    if (i < d.size()) sum += uint32_t(d[i]) << 8;
    return fold(sum);
}

namespace {

// Where a frame's TCP/UDP segment is and what its pseudo-header sums to.
struct L4Span {
    size_t len = 0;
    size_t csum_at = 0;  // offset of the checksum in the segment
    uint32_t pseudo = 0;
};

bool l4_span(std::span<const uint8_t> frame, const EthFrame &f, L4Span &s) {
    const uint8_t *ip = frame.data() + f.l3_off;
    s.len = frame.size() - f.l4_off;
    if (f.ip_version == 4) {
        // The IP total length bounds the segment (the frame may carry Ethernet padding).
        const size_t ihl = f.l4_off - f.l3_off;
        const size_t total = be16(ip + 2);
        if (total >= ihl && total - ihl < s.len) s.len = total - ihl;
        s.pseudo = ones_sum({ip + 12, 8});
    } else {
        const size_t plen = be16(ip + 4);
        if (plen < s.len) s.len = plen;
        s.pseudo = ones_sum({ip + 8, 32});
    }
    if (!f.has_ports) return false;
    s.csum_at = f.l4_proto == kProtoTcp ? 16 : 6;
    if (s.len < s.csum_at + 2) return false;
    s.pseudo = fold(s.pseudo + f.l4_proto + uint32_t(s.len >> 16) + uint32_t(s.len & 0xffff));
    return true;
}

}  // namespace

void fill_checksums(std::span<uint8_t> frame) {
    EthFrame f;
    if (!parse_eth_frame(frame, f) || !f.ip_version) return;
    if (f.ip_version == 4) {
        uint8_t *ip = frame.data() + f.l3_off;
        ip[10] = ip[11] = 0;
        put_be16(ip + 10, uint16_t(~ones_sum({ip, f.l4_off - f.l3_off})));
    }
    L4Span s;
    if (!l4_span(frame, f, s)) return;
    uint8_t *l4 = frame.data() + f.l4_off;
    l4[s.csum_at] = l4[s.csum_at + 1] = 0;
    uint16_t c = uint16_t(~ones_sum({l4, s.len}, s.pseudo));
    if (c == 0 && f.l4_proto == kProtoUdp) c = 0xffff;
    put_be16(l4 + s.csum_at, c);
}

bool checksums_ok(std::span<const uint8_t> frame) {
    EthFrame f;
    if (!parse_eth_frame(frame, f) || !f.ip_version) return false;
    if (f.ip_version == 4 && ones_sum(frame.subspan(f.l3_off, f.l4_off - f.l3_off)) != 0xffff)
        return false;
    L4Span s;
    if (!l4_span(frame, f, s)) return false;
    const uint8_t *l4 = frame.data() + f.l4_off;
    if (f.l4_proto == kProtoUdp && f.ip_version == 4 && l4[6] == 0 && l4[7] == 0)
        return true;  // an IPv4 UDP sender may leave the checksum out
    return ones_sum({l4, s.len}, s.pseudo) == 0xffff;
}

uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input) {
    if (key.size() < 4) return 0;
    uint32_t hash = 0;
    // The 32-bit window of the key that lines up with the current input bit.
    uint32_t window =
        uint32_t(key[0]) << 24 | uint32_t(key[1]) << 16 | uint32_t(key[2]) << 8 | key[3];
    size_t next_key_byte = 4;
    for (uint8_t byte : input) {
        const uint8_t k = next_key_byte < key.size() ? key[next_key_byte] : 0;
        ++next_key_byte;
        for (int bit = 7; bit >= 0; --bit) {
            if (byte >> bit & 1) hash ^= window;
            window = window << 1 | uint32_t(k >> bit & 1);
        }
    }
    return hash;
}

}  // namespace softrdma::wire

// SPDX-License-Identifier: BSD-2-Clause
// Ethernet frames as raw packet QPs send and receive them: the header fields flow steering
// matches on (Ethernet, one 802.1Q tag, IPv4 or IPv6, TCP or UDP ports), the checksums a
// sender may ask the device to fill in (IBV_SEND_IP_CSUM), and the Toeplitz hash RSS spreads
// frames with. Pure functions on bytes: no I/O, fuzzable. Layout: docs/wire.md §9.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrdma::wire {

constexpr size_t kEthHeaderLen = 14;
constexpr size_t kVlanTagLen = 4;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;

// The fields of one frame; multi-byte values in host order, addresses as on the wire.
struct EthFrame {
    uint8_t dst_mac[6] = {}, src_mac[6] = {};
    bool has_vlan = false;
    uint16_t vlan_tci = 0;
    uint16_t ether_type = 0;  // after the tag, if any
    uint8_t ip_version = 0;   // 4, 6, or 0 when the payload is not (a whole) IP header
    uint8_t src_ip[16] = {}, dst_ip[16] = {};  // IPv4: the first 4 bytes
    uint8_t l4_proto = 0;                      // IPv4 protocol, IPv6 next header
    uint8_t tos = 0;                           // IPv4 TOS, IPv6 traffic class
    uint8_t ttl = 0;                           // IPv4 TTL, IPv6 hop limit
    uint8_t ipv4_flags = 0;                    // the 3 flag bits
    uint32_t flow_label = 0;                   // IPv6
    bool has_ports = false;                    // a whole TCP or UDP header follows
    uint16_t src_port = 0, dst_port = 0;
    size_t l3_off = 0, l4_off = 0;  // where the IP and TCP/UDP headers start
};

// False when the frame is shorter than an Ethernet header. Upper layers that are cut short
// or malformed are left unparsed (ip_version 0, has_ports false), as a NIC's parser does.
bool parse_eth_frame(std::span<const uint8_t> frame, EthFrame &out);

// One flow-steering rule, all of whose parts must match. A part is the field under its mask;
// a rule part that names a layer (want_ipv4, want_tcp...) also requires that layer.
struct FrameMatch {
    uint8_t dst_mac[6] = {}, dst_mac_mask[6] = {};
    uint8_t src_mac[6] = {}, src_mac_mask[6] = {};
    uint16_t ether_type = 0, ether_type_mask = 0;
    uint16_t vlan_tci = 0, vlan_tci_mask = 0;
    uint8_t ip_version = 0;  // 0: any
    uint8_t src_ip[16] = {}, src_ip_mask[16] = {};
    uint8_t dst_ip[16] = {}, dst_ip_mask[16] = {};
    uint8_t l4_proto = 0, l4_proto_mask = 0;
    uint8_t tos = 0, tos_mask = 0;
    uint8_t ttl = 0, ttl_mask = 0;
    uint8_t ipv4_flags = 0, ipv4_flags_mask = 0;
    uint32_t flow_label = 0, flow_label_mask = 0;
    uint8_t want_l4 = 0;  // 6 (TCP) or 17 (UDP): the frame must carry that header
    uint16_t src_port = 0, src_port_mask = 0;
    uint16_t dst_port = 0, dst_port_mask = 0;
};

bool frame_matches(const FrameMatch &m, const EthFrame &f);

// IBV_SEND_IP_CSUM: fills the IPv4 header checksum and the TCP or UDP checksum (over the
// pseudo-header) of an IPv4 or IPv6 frame in place. Frames it cannot parse are left as
// they are; a UDP checksum that comes to 0 is sent as 0xffff (RFC 768).
void fill_checksums(std::span<uint8_t> frame);
// What a NIC reports as IBV_WC_IP_CSUM_OK: an IPv4 or IPv6 frame carrying TCP or UDP whose
// checksums (IPv4 header, and TCP/UDP over the pseudo-header) all verify.
bool checksums_ok(std::span<const uint8_t> frame);
// The Internet checksum (RFC 1071) of `data`, folded, not complemented, added to `sum`.
uint32_t ones_sum(std::span<const uint8_t> data, uint32_t sum = 0);

// RSS: the Toeplitz hash of `input` under `key` (the key needs 4 bytes more than the input).
uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input);

}  // namespace softrdma::wire

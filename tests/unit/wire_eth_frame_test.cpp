// SPDX-License-Identifier: BSD-2-Clause
// Ethernet frames for raw packet QPs (docs/wire.md §9): header parsing, flow-rule matching,
// checksum offload and the Toeplitz hash RSS uses (Microsoft's published test vectors).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire/eth_frame.h"

using namespace softrdma::wire;

namespace {

using Bytes = std::vector<uint8_t>;

// Ethernet (optional 802.1Q tag) | IPv4 or IPv6 | UDP or TCP | 8 payload bytes.
Bytes frame(int ip, uint8_t proto, bool vlan = false) {
    Bytes f = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7, 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
    if (vlan) f.insert(f.end(), {0x81, 0x00, 0xac, 0x0c});
    const size_t l4 = proto == 6 ? 20 : 8;
    if (ip == 4) {
        f.insert(f.end(), {0x08, 0x00, 0x45, 0x10, 0,  uint8_t(20 + l4 + 8),
                           0,    0,    0x40, 0,    64, proto,
                           0,    0,    1,    1,    1,  1,
                           2,    2,    2,    2});
    } else {
        f.insert(f.end(), {0x86, 0xdd, 0x6a, 0x12, 0x34, 0x56, 0, uint8_t(l4 + 8), proto, 64});
        for (int i = 0; i < 16; ++i) f.push_back(uint8_t(0xa0 + i));
        for (int i = 0; i < 16; ++i) f.push_back(uint8_t(0xb0 + i));
    }
    f.insert(f.end(), {0x04, 0xd2, 0x16, 0x2e});  // ports 1234 -> 5678
    if (proto == 6) {
        f.insert(f.end(), {0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0});
    } else {
        f.insert(f.end(), {0, uint8_t(l4 + 8), 0, 0});
    }
    for (int i = 0; i < 8; ++i) f.push_back(uint8_t(i * 31));
    return f;
}

uint32_t hash_of(const Bytes &in) {
    static const uint8_t kKey[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                                     0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                                     0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                                     0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
    return toeplitz_hash(kKey, in);
}

}  // namespace

TEST(WireEthFrame, ParsesEachLayer) {
    EthFrame f;
    const Bytes v4 = frame(4, 17, true);
    ASSERT_TRUE(parse_eth_frame(v4, f));
    EXPECT_TRUE(f.has_vlan);
    EXPECT_EQ(f.vlan_tci, 0xac0c);
    EXPECT_EQ(f.ether_type, kEtherTypeIpv4);
    EXPECT_EQ(f.ip_version, 4);
    EXPECT_EQ(f.tos, 0x10);
    EXPECT_EQ(f.ipv4_flags, 2);  // don't fragment
    EXPECT_EQ(f.l4_proto, 17);
    EXPECT_TRUE(f.has_ports);
    EXPECT_EQ(f.src_port, 1234);
    EXPECT_EQ(f.dst_port, 5678);
    EXPECT_EQ(f.src_ip[0], 1);
    EXPECT_EQ(f.dst_ip[3], 2);

    const Bytes v6 = frame(6, 6);
    ASSERT_TRUE(parse_eth_frame(v6, f));
    EXPECT_FALSE(f.has_vlan);
    EXPECT_EQ(f.ip_version, 6);
    EXPECT_EQ(f.tos, 0xa1);
    EXPECT_EQ(f.flow_label, 0x23456u);
    EXPECT_EQ(f.l4_proto, 6);
    EXPECT_EQ(f.ttl, 64);
    EXPECT_EQ(f.src_ip[15], 0xaf);
    EXPECT_TRUE(f.has_ports);

    // Cut short: Ethernet still parses, the layers that are not whole do not.
    Bytes cut(v4.begin(), v4.begin() + 20);
    ASSERT_TRUE(parse_eth_frame(cut, f));
    EXPECT_EQ(f.ip_version, 0);
    EXPECT_FALSE(parse_eth_frame(Bytes(13, 0), f));
}

TEST(WireEthFrame, RulesMatchUnderTheirMasks) {
    EthFrame f;
    ASSERT_TRUE(parse_eth_frame(frame(4, 17), f));
    FrameMatch any;
    EXPECT_TRUE(frame_matches(any, f));

    FrameMatch m;
    const uint8_t dst[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
    std::memcpy(m.dst_mac, dst, 6);
    std::memset(m.dst_mac_mask, 0xff, 6);
    m.ether_type = kEtherTypeIpv4;
    m.ether_type_mask = 0xffff;
    EXPECT_TRUE(frame_matches(m, f));
    m.dst_mac[5] ^= 1;
    EXPECT_FALSE(frame_matches(m, f));
    m.dst_mac_mask[5] = 0xfe;  // the bit that differs is not looked at
    EXPECT_TRUE(frame_matches(m, f));

    FrameMatch udp;
    udp.want_l4 = 17;
    udp.dst_port = 5678;
    udp.dst_port_mask = 0xffff;
    EXPECT_TRUE(frame_matches(udp, f));
    udp.dst_port = 5679;
    EXPECT_FALSE(frame_matches(udp, f));
    udp.dst_port = 5678;
    udp.want_l4 = 6;  // a TCP rule never takes UDP
    EXPECT_FALSE(frame_matches(udp, f));

    FrameMatch v6;
    v6.ip_version = 6;
    EXPECT_FALSE(frame_matches(v6, f));
    FrameMatch tagged;  // a rule on the tag needs a tagged frame
    tagged.vlan_tci_mask = 0x0fff;
    EXPECT_FALSE(frame_matches(tagged, f));
    ASSERT_TRUE(parse_eth_frame(frame(4, 17, true), f));
    tagged.vlan_tci = 0x0c0c;
    EXPECT_TRUE(frame_matches(tagged, f));
}

// Checksums filled in verify (and are those of a hand-checked IPv4 header); a corrupted byte
// is caught; the frame is otherwise untouched.
TEST(WireEthFrame, ChecksumsAreFilledAndVerified) {
    for (int ip : {4, 6})
        for (uint8_t proto : {uint8_t(6), uint8_t(17)}) {
            Bytes f = frame(ip, proto);
            const Bytes before = f;
            EXPECT_FALSE(checksums_ok(f)) << ip << "/" << int(proto);
            fill_checksums(f);
            EXPECT_TRUE(checksums_ok(f)) << ip << "/" << int(proto);
            size_t differ = 0;
            for (size_t i = 0; i < f.size(); ++i) differ += f[i] != before[i];
            EXPECT_LE(differ, 4u);
            f.back() ^= 0x40;
            EXPECT_FALSE(checksums_ok(f));
        }
    // Words 4510 0024 0000 4000 4011 0101 0101 0202 0202 sum to cb4b; its complement is 34b4.
    Bytes f = frame(4, 17);
    fill_checksums(f);
    EXPECT_EQ(f[24], 0x34);
    EXPECT_EQ(f[25], 0xb4);
}

// Microsoft's RSS verification suite (IPv4 rows): source address, destination address, then
// source and destination ports.
TEST(WireEthFrame, ToeplitzMatchesPublishedVectors) {
    const Bytes ip1 = {66, 9, 149, 187, 161, 142, 100, 80};
    EXPECT_EQ(hash_of(ip1), 0x323e8fc2u);
    Bytes tcp1 = ip1;
    tcp1.insert(tcp1.end(), {0x0a, 0xea, 0x06, 0xe6});  // 2794 -> 1766
    EXPECT_EQ(hash_of(tcp1), 0x51ccc178u);
    const Bytes ip2 = {199, 92, 111, 2, 65, 69, 140, 83};
    EXPECT_EQ(hash_of(ip2), 0xd718262au);
    Bytes tcp2 = ip2;
    tcp2.insert(tcp2.end(), {0x37, 0x96, 0x12, 0x83});  // 14230 -> 4739
    EXPECT_EQ(hash_of(tcp2), 0xc626b0eau);
}

// Random and truncated frames: parse and checksum never read or write outside the frame
// (ASan sees each prefix in a buffer of its own size).
TEST(WireEthFrame, SurvivesAnyBytes) {
    std::mt19937 rng(7);
    const Bytes seeds[] = {frame(4, 17, true), frame(6, 6), frame(4, 6)};
    for (int round = 0; round < 3000; ++round) {
        Bytes f = seeds[round % 3];
        for (int k = 0; k < 3; ++k) f[rng() % f.size()] = uint8_t(rng());
        const size_t n = rng() % (f.size() + 1);
        Bytes cut(f.begin(), f.begin() + long(n));
        EthFrame e;
        if (parse_eth_frame(cut, e)) {
            ASSERT_LE(e.l3_off, cut.size());
            if (e.ip_version) {
                ASSERT_LE(e.l4_off, cut.size());
            }
        }
        fill_checksums(cut);
        (void)checksums_ok(cut);
    }
}

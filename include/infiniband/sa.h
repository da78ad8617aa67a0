/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <infiniband/sa.h>
 *
 * Subnet administration records as seen by user space (path, multicast
 * member and service records).  Source-compatible with rdma-core 44.
 */
#ifndef INFINIBAND_SA_H
#define INFINIBAND_SA_H

#include <stdint.h>
#include <linux/types.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Unpacked path record (what rdma_route.path_rec points to); 64 bytes.
 * Multi-byte fields marked __be are in network byte order.
 */
struct ibv_sa_path_rec {
	union ibv_gid dgid;
	union ibv_gid sgid;
	__be16        dlid;
	__be16        slid;
	int           raw_traffic;
	__be32        flow_label;
	uint8_t       hop_limit;
	uint8_t       traffic_class;
	int           reversible;
	uint8_t       numb_path;
	__be16        pkey;
	uint8_t       sl;
	uint8_t       mtu_selector;
	uint8_t       mtu;
	uint8_t       rate_selector;
	uint8_t       rate;
	uint8_t       packet_life_time_selector;
	uint8_t       packet_life_time;
	uint8_t       preference;
};

/* Unpacked multicast member record. */
struct ibv_sa_mcmember_rec {
	union ibv_gid mgid;
	union ibv_gid port_gid;
	uint32_t      qkey;
	uint16_t      mlid;
	uint8_t       mtu_selector;
	uint8_t       mtu;
	uint8_t       traffic_class;
	uint16_t      pkey;
	uint8_t       rate_selector;
	uint8_t       rate;
	uint8_t       packet_life_time_selector;
	uint8_t       packet_life_time;
	uint8_t       sl;
	uint32_t      flow_label;
	uint8_t       hop_limit;
	uint8_t       scope;
	uint8_t       join_state;
	int           proxy_join;
};

/* Unpacked service record. */
struct ibv_sa_service_rec {
	uint64_t      id;
	union ibv_gid gid;
	uint16_t      pkey;
	uint32_t      lease;
	uint8_t       key[16];
	uint8_t       name[64];
	uint8_t       data8[16];
	uint16_t      data16[8];
	uint32_t      data32[4];
	uint64_t      data64[2];
};

/* Bit 7 of ibv_path_record.reversible_numpath. */
#define IBV_PATH_RECORD_REVERSIBLE 0x80

/*
 * Packed (wire format) path record, 64 bytes, all in network byte order:
 *   flowlabel_hoplimit: flow label in bits 27..8, hop limit in bits 7..0
 *   reversible_numpath: reversible in bit 7, number of paths in bits 6..0
 *   qosclass_sl:        QoS class in bits 15..4, SL in bits 3..0
 *   mtu, rate, packetlifetime: selector in bits 7..6, value in bits 5..0
 */
struct ibv_path_record {
	__be64        service_id;
	union ibv_gid dgid;
	union ibv_gid sgid;
	__be16        dlid;
	__be16        slid;
	__be32        flowlabel_hoplimit;
	uint8_t       tclass;
	uint8_t       reversible_numpath;
	__be16        pkey;
	__be16        qosclass_sl;
	uint8_t       mtu;
	uint8_t       rate;
	uint8_t       packetlifetime;
	uint8_t       preference;
	uint8_t       reserved[6];
};

/* ibv_path_data.flags: which direction(s) a supplied path applies to. */
#define IBV_PATH_FLAG_GMP             (1 << 0)
#define IBV_PATH_FLAG_PRIMARY         (1 << 1)
#define IBV_PATH_FLAG_ALTERNATE       (1 << 2)
#define IBV_PATH_FLAG_OUTBOUND        (1 << 3)
#define IBV_PATH_FLAG_INBOUND         (1 << 4)
#define IBV_PATH_FLAG_INBOUND_REVERSE (1 << 5)
#define IBV_PATH_FLAG_BIDIRECTIONAL \
	(IBV_PATH_FLAG_OUTBOUND | IBV_PATH_FLAG_INBOUND_REVERSE)

/* Element of the array passed with rdma_set_option(RDMA_OPTION_IB_PATH). */
struct ibv_path_data {
	uint32_t               flags;
	uint32_t               reserved;
	struct ibv_path_record path;
};

#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_SA_H */

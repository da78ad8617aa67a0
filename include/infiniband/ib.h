/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <infiniband/ib.h>
 *
 * Native InfiniBand socket addressing (AF_IB).  Source-compatible with the
 * header of the same name shipped by rdma-core 44.
 */
#ifndef _RDMA_IB_H
#define _RDMA_IB_H

#include <linux/types.h>
#include <endian.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Address family number reserved for InfiniBand in the Linux kernel. */
#ifndef AF_IB
#define AF_IB 27
#endif
#ifndef PF_IB
#define PF_IB AF_IB
#endif

/* A 128-bit GID, addressable as bytes or as big-endian 16/32/64-bit words. */
struct ib_addr {
	union {
		__u8   uib_addr8[16];
		__be16 uib_addr16[8];
		__be32 uib_addr32[4];
		__be64 uib_addr64[2];
	} ib_u;
};

/* Shorthand accessors into ib_addr.ib_u. */
#define sib_addr8          ib_u.uib_addr8
#define sib_addr16         ib_u.uib_addr16
#define sib_addr32         ib_u.uib_addr32
#define sib_addr64         ib_u.uib_addr64
#define sib_raw            ib_u.uib_addr8
#define sib_subnet_prefix  ib_u.uib_addr64[0]
#define sib_interface_id   ib_u.uib_addr64[1]

/* Non-zero when every bit of the address is clear (the wildcard GID). */
static inline int ib_addr_any(const struct ib_addr *a)
{
	__be64 bits = a->ib_u.uib_addr64[0] | a->ib_u.uib_addr64[1];

	return bits == 0;
}

/* Non-zero for the loopback GID ::1 (fifteen zero bytes, then 1). */
static inline int ib_addr_loopback(const struct ib_addr *a)
{
	const __be32 *w = a->ib_u.uib_addr32;

	return (w[0] | w[1] | w[2]) == 0 && a->ib_u.uib_addr8[12] == 0 &&
	       a->ib_u.uib_addr8[13] == 0 && a->ib_u.uib_addr8[14] == 0 &&
	       a->ib_u.uib_addr8[15] == 1;
}

/* Store four big-endian words, most significant first. */
static inline void ib_addr_set(struct ib_addr *addr, __be32 w1, __be32 w2,
			       __be32 w3, __be32 w4)
{
	__be32 *w = addr->ib_u.uib_addr32;

	w[0] = w1;
	w[1] = w2;
	w[2] = w3;
	w[3] = w4;
}

/* memcmp()-style comparison of two addresses. */
static inline int ib_addr_cmp(const struct ib_addr *a1, const struct ib_addr *a2)
{
	return memcmp(a1, a2, sizeof(*a1));
}

/* struct sockaddr for AF_IB (48 bytes). */
struct sockaddr_ib {
	unsigned short int sib_family;   /* AF_IB */
	__be16             sib_pkey;
	__be32             sib_flowinfo;
	struct ib_addr     sib_addr;
	__be64             sib_sid;      /* service id */
	__be64             sib_sid_mask;
	__u64              sib_scope_id;
};

#ifdef __cplusplus
}
#endif

#endif /* _RDMA_IB_H */

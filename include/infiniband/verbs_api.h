/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <infiniband/verbs_api.h>
 *
 * Source-compatible with rdma-core 44.  rdma-core builds the names below
 * on top of the kernel uAPI header <rdma/ib_user_ioctl_verbs.h>; softrdma
 * defines them directly (values from the kernel uAPI) so that this header
 * is self-contained.  Every name here is in the ibv_ / IBV_ namespace, so a
 * program may include the kernel uAPI headers as well without a clash.
 *
 * The IBV_* constants are enumerators that are also defined as macros
 * expanding to themselves, because rdma-core exposes them as macros and
 * programs test them with #ifdef.
 */
#ifndef VERBS_API_H
#define VERBS_API_H

#include <stdint.h>
#include <endian.h>
#include <linux/types.h>

/*
 * A pointer member that always occupies a 64-bit slot.  The kernel header
 * uses RDMA_UAPI_PTR only when it is not defined yet, so define ours only if
 * nobody did before us.
 */
#if UINTPTR_MAX == UINT64_MAX
#define __SOFTRDMA_UAPI_PTR(_type, _name)                                      \
	union {                                                                \
		_type _name;                                                   \
		__aligned_u64 _name##_data_u64;                                \
	}
#elif UINTPTR_MAX == UINT32_MAX && __BYTE_ORDER == __LITTLE_ENDIAN
#define __SOFTRDMA_UAPI_PTR(_type, _name)                                      \
	union {                                                                \
		struct {                                                       \
			_type _name;                                           \
			__u32 _name##_reserved;                                \
		};                                                             \
		__aligned_u64 _name##_data_u64;                                \
	}
#elif UINTPTR_MAX == UINT32_MAX
#define __SOFTRDMA_UAPI_PTR(_type, _name)                                      \
	union {                                                                \
		struct {                                                       \
			__u32 _name##_reserved;                                \
			_type _name;                                           \
		};                                                             \
		__aligned_u64 _name##_data_u64;                                \
	}
#else
#error "softrdma: unsupported pointer size"
#endif

#ifndef RDMA_UAPI_PTR
#define RDMA_UAPI_PTR(_type, _name) __SOFTRDMA_UAPI_PTR(_type, _name)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory registration: optional access bits ---- */

/* Access bits 20..29 are "optional": a kernel may ignore them. */
#define IBV_ACCESS_OPTIONAL_FIRST (1 << 20)

enum {
	IBV_ACCESS_OPTIONAL_RANGE = 0x3ff00000,	/* bits 20..29 */
};
#define IBV_ACCESS_OPTIONAL_RANGE IBV_ACCESS_OPTIONAL_RANGE

/* ---- ibv_query_port(): port_attr.flags ---- */

enum {
	IBV_QPF_GRH_REQUIRED = 1,
};
#define IBV_QPF_GRH_REQUIRED IBV_QPF_GRH_REQUIRED

/* ---- ibv_advise_mr() ---- */

enum ibv_advise_mr_advice {
	IBV_ADVISE_MR_ADVICE_PREFETCH = 0,
	IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1,
	IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2,
};
#define ibv_advise_mr_advice ibv_advise_mr_advice
#define IBV_ADVISE_MR_ADVICE_PREFETCH IBV_ADVISE_MR_ADVICE_PREFETCH
#define IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
#define IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT

enum {
	IBV_ADVISE_MR_FLAG_FLUSH = 1,
};
#define IBV_ADVISE_MR_FLAG_FLUSH IBV_ADVISE_MR_FLAG_FLUSH

/* ---- IPsec ESP flow actions ---- */

enum ibv_flow_action_esp_keymat {
	IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM = 0,
};
#define ibv_flow_action_esp_keymat ibv_flow_action_esp_keymat
#define IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM

enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo {
	IBV_FLOW_ACTION_IV_ALGO_SEQ = 0,
};
#define ibv_flow_action_esp_keymat_aes_gcm_iv_algo ibv_flow_action_esp_keymat_aes_gcm_iv_algo
#define IBV_FLOW_ACTION_IV_ALGO_SEQ IBV_FLOW_ACTION_IV_ALGO_SEQ

struct ibv_flow_action_esp_keymat_aes_gcm {
	__aligned_u64 iv;
	__u32 iv_algo;		/* enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo */
	__u32 salt;
	__u32 icv_len;
	__u32 key_len;
	__u32 aes_key[8];	/* up to 256 bits */
};
#define ibv_flow_action_esp_keymat_aes_gcm ibv_flow_action_esp_keymat_aes_gcm

enum ibv_flow_action_esp_replay {
	IBV_FLOW_ACTION_ESP_REPLAY_NONE = 0,
	IBV_FLOW_ACTION_ESP_REPLAY_BMP = 1,
};
#define ibv_flow_action_esp_replay ibv_flow_action_esp_replay
#define IBV_FLOW_ACTION_ESP_REPLAY_NONE IBV_FLOW_ACTION_ESP_REPLAY_NONE
#define IBV_FLOW_ACTION_ESP_REPLAY_BMP IBV_FLOW_ACTION_ESP_REPLAY_BMP

struct ibv_flow_action_esp_replay_bmp {
	__u32 size;
};
#define ibv_flow_action_esp_replay_bmp ibv_flow_action_esp_replay_bmp

/* Pairs of alternatives: the zero value of each pair is the default. */
enum ibv_flow_action_esp_flags {
	IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO = 0x0,
	IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD = 0x1,
	IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL = 0x0,
	IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT = 0x2,
	IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT = 0x0,
	IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT = 0x4,
	IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW = 0x8,
};
#define ibv_flow_action_esp_flags ibv_flow_action_esp_flags
#define IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO
#define IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD
#define IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL
#define IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT
#define IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT
#define IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT
#define IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW

/* Linked list of flow filters that encapsulate the payload (tunnel mode). */
struct ibv_flow_action_esp_encap {
	__SOFTRDMA_UAPI_PTR(void *, val_ptr);	/* -> struct ibv_flow_xxx_filter */
	__SOFTRDMA_UAPI_PTR(struct ibv_flow_action_esp_encap *, next_ptr);
	__u16 len;	/* size of *val_ptr */
	__u16 type;	/* enum ibv_flow_spec_type */
};
#define ibv_flow_action_esp_encap ibv_flow_action_esp_encap

struct ibv_flow_action_esp {
	__u32 spi;
	__u32 seq;
	__u32 tfc_pad;
	__u32 flags;	/* enum ibv_flow_action_esp_flags */
	__aligned_u64 hard_limit_pkts;
};
#define ibv_flow_action_esp ibv_flow_action_esp

#ifdef __cplusplus
}
#endif

#endif /* VERBS_API_H */

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * softrdma - <rdma/rdma_cma.h>
 *
 * RDMA communication manager API.  Source- and binary-compatible with the
 * librdmacm of rdma-core 44 (librdmacm.so.1): every type, enumerator, macro
 * and struct layout below matches it; the functions are provided by
 * softrdma's librdmacm.so.1.
 */
#ifndef RDMA_CMA_H
#define RDMA_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/types.h>
#include <infiniband/verbs.h>
#include <infiniband/sa.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Events reported on an rdma_event_channel.  After DEVICE_REMOVAL the
 * application must destroy the id and everything it allocated on the device.
 */
enum rdma_cm_event_type {
	RDMA_CM_EVENT_ADDR_RESOLVED   = 0,
	RDMA_CM_EVENT_ADDR_ERROR      = 1,
	RDMA_CM_EVENT_ROUTE_RESOLVED  = 2,
	RDMA_CM_EVENT_ROUTE_ERROR     = 3,
	RDMA_CM_EVENT_CONNECT_REQUEST = 4,
	RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
	RDMA_CM_EVENT_CONNECT_ERROR   = 6,
	RDMA_CM_EVENT_UNREACHABLE     = 7,
	RDMA_CM_EVENT_REJECTED        = 8,
	RDMA_CM_EVENT_ESTABLISHED     = 9,
	RDMA_CM_EVENT_DISCONNECTED    = 10,
	RDMA_CM_EVENT_DEVICE_REMOVAL  = 11,
	RDMA_CM_EVENT_MULTICAST_JOIN  = 12,
	RDMA_CM_EVENT_MULTICAST_ERROR = 13,
	RDMA_CM_EVENT_ADDR_CHANGE     = 14,
	RDMA_CM_EVENT_TIMEWAIT_EXIT   = 15
};

/* Port spaces: the protocol number of the IP service the id lives in. */
enum rdma_port_space {
	RDMA_PS_IPOIB = 0x0002,
	RDMA_PS_TCP   = 0x0106,
	RDMA_PS_UDP   = 0x0111,
	RDMA_PS_IB    = 0x013F,
};

/* Layout of an IB service id that carries an IP port space and port. */
#define RDMA_IB_IP_PS_MASK   0xFFFFFFFFFFFF0000ULL
#define RDMA_IB_IP_PORT_MASK 0x000000000000FFFFULL
#define RDMA_IB_IP_PS_TCP    0x0000000001060000ULL
#define RDMA_IB_IP_PS_UDP    0x0000000001110000ULL
#define RDMA_IB_PS_IB        0x00000000013F0000ULL

/* Q_Key used for every UD QP and multicast group set up through the CM. */
#define RDMA_UDP_QKEY 0x01234567

/* GIDs and P_Key an id resolved to (40 bytes). */
struct rdma_ib_addr {
	union ibv_gid sgid;
	union ibv_gid dgid;
	__be16        pkey;
};

/* Source and destination socket addresses plus their RDMA form (296 bytes). */
struct rdma_addr {
	union {
		struct sockaddr         src_addr;
		struct sockaddr_in      src_sin;
		struct sockaddr_in6     src_sin6;
		struct sockaddr_storage src_storage;
	};
	union {
		struct sockaddr         dst_addr;
		struct sockaddr_in      dst_sin;
		struct sockaddr_in6     dst_sin6;
		struct sockaddr_storage dst_storage;
	};
	union {
		struct rdma_ib_addr ibaddr;
	} addr;
};

/* Resolved route: addresses and (optionally) path records (312 bytes). */
struct rdma_route {
	struct rdma_addr        addr;
	struct ibv_sa_path_rec *path_rec;
	int                     num_paths;
};

/* Event channel; fd is readable while events are pending. */
struct rdma_event_channel {
	int fd;
};

struct rdma_cm_event;

/*
 * Communication identifier, the RDMA analogue of a socket (416 bytes).
 * Allocated by the library; applications read the public fields only.
 */
struct rdma_cm_id {
	struct ibv_context        *verbs;
	struct rdma_event_channel *channel;
	void                      *context;
	struct ibv_qp             *qp;
	struct rdma_route          route;
	enum rdma_port_space       ps;
	uint8_t                    port_num;
	struct rdma_cm_event      *event;
	struct ibv_comp_channel   *send_cq_channel;
	struct ibv_cq             *send_cq;
	struct ibv_comp_channel   *recv_cq_channel;
	struct ibv_cq             *recv_cq;
	struct ibv_srq            *srq;
	struct ibv_pd             *pd;
	enum ibv_qp_type           qp_type;
};

enum {
	RDMA_MAX_RESP_RES   = 0xFF,
	RDMA_MAX_INIT_DEPTH = 0xFF
};

/* Connection parameters for rdma_connect()/rdma_accept() (24 bytes). */
struct rdma_conn_param {
	const void *private_data;
	uint8_t     private_data_len;
	uint8_t     responder_resources;
	uint8_t     initiator_depth;
	uint8_t     flow_control;
	uint8_t     retry_count;      /* not used by rdma_accept() */
	uint8_t     rnr_retry_count;
	/* srq and qp_num only matter when the id has no QP of its own. */
	uint8_t     srq;
	uint32_t    qp_num;
};

/* Parameters of a UD resolution or multicast event (56 bytes). */
struct rdma_ud_param {
	const void        *private_data;
	uint8_t            private_data_len;
	struct ibv_ah_attr ah_attr;
	uint32_t           qp_num;
	uint32_t           qkey;
};

/* One event returned by rdma_get_cm_event() (80 bytes). */
struct rdma_cm_event {
	struct rdma_cm_id       *id;
	struct rdma_cm_id       *listen_id;
	enum rdma_cm_event_type  event;
	int                      status;
	union {
		struct rdma_conn_param conn;
		struct rdma_ud_param   ud;
	} param;
};

/* rdma_addrinfo.ai_flags */
#define RAI_PASSIVE     0x00000001
#define RAI_NUMERICHOST 0x00000002
#define RAI_NOROUTE     0x00000004
#define RAI_FAMILY      0x00000008

/* Result (and hints) of rdma_getaddrinfo() (96 bytes). */
struct rdma_addrinfo {
	int                   ai_flags;
	int                   ai_family;
	int                   ai_qp_type;
	int                   ai_port_space;
	socklen_t             ai_src_len;
	socklen_t             ai_dst_len;
	struct sockaddr      *ai_src_addr;
	struct sockaddr      *ai_dst_addr;
	char                 *ai_src_canonname;
	char                 *ai_dst_canonname;
	size_t                ai_route_len;
	void                 *ai_route;
	size_t                ai_connect_len;
	void                 *ai_connect;
	struct rdma_addrinfo *ai_next;
};

/* rdma_cm_join_mc_attr_ex.comp_mask bits */
enum rdma_cm_join_mc_attr_mask {
	RDMA_CM_JOIN_MC_ATTR_ADDRESS    = 1 << 0,
	RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS = 1 << 1,
	RDMA_CM_JOIN_MC_ATTR_RESERVED   = 1 << 2,
};

/* rdma_cm_join_mc_attr_ex.join_flags values */
enum rdma_cm_mc_join_flags {
	RDMA_MC_JOIN_FLAG_FULLMEMBER          = 0,
	RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = 1,
	RDMA_MC_JOIN_FLAG_RESERVED            = 2,
};

/* Argument of rdma_join_multicast_ex() (16 bytes). */
struct rdma_cm_join_mc_attr_ex {
	uint32_t         comp_mask;  /* enum rdma_cm_join_mc_attr_mask bits */
	uint32_t         join_flags; /* enum rdma_cm_mc_join_flags value */
	struct sockaddr *addr;       /* group address */
};

/* Event channels. */
struct rdma_event_channel *rdma_create_event_channel(void);
void rdma_destroy_event_channel(struct rdma_event_channel *channel);

/* Identifier life cycle.  A NULL channel makes the id synchronous. */
int rdma_create_id(struct rdma_event_channel *channel,
		   struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps);
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);
void rdma_destroy_ep(struct rdma_cm_id *id);
int rdma_destroy_id(struct rdma_cm_id *id);
int rdma_migrate_id(struct rdma_cm_id *id,
		    struct rdma_event_channel *channel);

/* Addressing and route resolution. */
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms);
int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms);

/* Queue pairs owned by an id. */
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr);
int rdma_create_qp_ex(struct rdma_cm_id *id,
		      struct ibv_qp_init_attr_ex *qp_init_attr);
void rdma_destroy_qp(struct rdma_cm_id *id);

/* Connection establishment and teardown. */
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_establish(struct rdma_cm_id *id);
int rdma_listen(struct rdma_cm_id *id, int backlog);
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id);
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len);
int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len);
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event);
int rdma_disconnect(struct rdma_cm_id *id);

/* Multicast. */
int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context);
int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr);
int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context);

/* Events.  Every event returned must be acknowledged. */
int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event);
int rdma_ack_cm_event(struct rdma_cm_event *event);
const char *rdma_event_str(enum rdma_cm_event_type event);

/* Ports of the id's addresses, in network byte order. */
__be16 rdma_get_src_port(struct rdma_cm_id *id);
__be16 rdma_get_dst_port(struct rdma_cm_id *id);

/* The id's local and remote socket addresses (inside id->route.addr). */
static inline struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id)
{
	struct rdma_addr *a = &id->route.addr;

	return &a->src_addr;
}

static inline struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id)
{
	struct rdma_addr *a = &id->route.addr;

	return &a->dst_addr;
}

/* NULL-terminated array of open contexts, one per RDMA device. */
struct ibv_context **rdma_get_devices(int *num_devices);
void rdma_free_devices(struct ibv_context **list);

/* rdma_set_option() levels */
enum {
	RDMA_OPTION_ID = 0,
	RDMA_OPTION_IB = 1
};

/* Options at level RDMA_OPTION_ID */
enum {
	RDMA_OPTION_ID_TOS         = 0, /* uint8_t, IP type of service */
	RDMA_OPTION_ID_REUSEADDR   = 1, /* int, like SO_REUSEADDR */
	RDMA_OPTION_ID_AFONLY      = 2, /* int, like IPV6_V6ONLY */
	RDMA_OPTION_ID_ACK_TIMEOUT = 3  /* uint8_t, local ACK timeout */
};

/* Options at level RDMA_OPTION_IB */
enum {
	RDMA_OPTION_IB_PATH = 1 /* array of struct ibv_path_data */
};

int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen);

/* Address lookup (getaddrinfo() for RDMA). */
int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res);
void rdma_freeaddrinfo(struct rdma_addrinfo *res);

/* Attributes needed to move an application-managed QP to a new state. */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask);

/* Enhanced connection establishment options. */
int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece);
int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_CMA_H */

/*
 * softrdma: stub libefa.so.1 (SONAME libefa.so.1).
 *
 * Why this exists: Debian's perftest binaries are linked directly against
 * libefa.so.1 (and libmlx5.so.1) and, being BIND_NOW, need every imported
 * symbol@version to resolve at start-up.  Debian's own libefa cannot be used
 * with our libibverbs (it imports IBVERBS_PRIVATE_34 internals and registers
 * a kernel provider from its constructor), so we ship this stub next to our
 * libibverbs.so.1.  No EFA device ever exists in softrdma, so every function
 * fails cleanly: efadv_query_device returns EOPNOTSUPP (rdma-core's
 * convention for a non-EFA device: a positive errno value) and sets errno;
 * efadv_create_qp_ex returns NULL with errno = EOPNOTSUPP.
 *
 * Exported (see efa.map): EFA_1.1 efadv_create_qp_ex, efadv_query_device
 * (the two symbols perftest 4.5 imports), plus Debian's node chain
 * EFA_1.0 <- EFA_1.1 <- EFA_1.2.
 *
 * Prototypes: written here by hand instead of including rdma-core's
 * <infiniband/efadv.h>, so the stub builds without the system rdma-core
 * headers and cannot clash with softrdma's own verbs headers.  Struct pointer
 * parameters/returns are declared as void *: a pointer to an incomplete struct
 * is passed exactly like void * in the C ABI, and C symbol names carry no type
 * information, so the symbols are ABI-identical to the real ones.  The
 * integer parameter keeps its real type (uint32_t).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define SOFTRDMA_STUB_EXPORT __attribute__((visibility("default")))

/* int efadv_query_device(struct ibv_context *, struct efadv_device_attr *, uint32_t inlen); */
SOFTRDMA_STUB_EXPORT int efadv_query_device(void *ibvctx, void *attr, uint32_t inlen);
/* struct ibv_qp *efadv_create_qp_ex(struct ibv_context *, struct ibv_qp_init_attr_ex *,
 *                                   struct efadv_qp_init_attr *, uint32_t inlen); */
SOFTRDMA_STUB_EXPORT void *efadv_create_qp_ex(void *ibvctx, void *attr_ex, void *efa_attr,
					      uint32_t inlen);

int efadv_query_device(void *ibvctx, void *attr, uint32_t inlen)
{
	(void)ibvctx;
	(void)attr;
	(void)inlen;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

void *efadv_create_qp_ex(void *ibvctx, void *attr_ex, void *efa_attr, uint32_t inlen)
{
	(void)ibvctx;
	(void)attr_ex;
	(void)efa_attr;
	(void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * softrdma: stub libmlx5.so.1 (SONAME libmlx5.so.1).
 *
 * Why this exists: Debian's perftest binaries are linked directly against
 * libmlx5.so.1 and libefa.so.1 and, being BIND_NOW, need every imported
 * symbol@version to resolve at start-up, even though the mlx5dv_* paths are
 * only taken for real Mellanox hardware.  Debian's own libmlx5 cannot be used
 * with our libibverbs (it imports ~60 IBVERBS_PRIVATE_34 internals and
 * registers a kernel provider from its constructor), so we ship this stub
 * next to our libibverbs.so.1.  No mlx5 device ever exists in softrdma, so
 * every function fails cleanly: pointer-returning ones return NULL with
 * errno = EOPNOTSUPP, int-returning ones return EOPNOTSUPP (rdma-core's
 * mlx5dv_* convention: a positive errno value) and also set errno.
 *
 * Exported (see mlx5.map): exactly the 9 symbols perftest 4.5 imports,
 *   MLX5_1.3  mlx5dv_create_qp
 *   MLX5_1.7  mlx5dv_devx_general_cmd, mlx5dv_open_device
 *   MLX5_1.10 mlx5dv_create_mkey, mlx5dv_destroy_mkey,
 *             mlx5dv_qp_ex_from_ibv_qp_ex
 *   MLX5_1.21 mlx5dv_crypto_login, mlx5dv_dek_create, mlx5dv_dek_destroy
 * plus the full empty node chain MLX5_1.0 ... MLX5_1.24 of Debian's library.
 *
 * Prototypes: written here by hand instead of including rdma-core's
 * <infiniband/mlx5dv.h>, so the stub builds without the system rdma-core
 * headers and cannot clash with softrdma's own verbs headers.  All struct
 * pointer parameters/returns are declared as void *: on x86-64 (and any C ABI)
 * a pointer to an incomplete struct is passed exactly like void *, and C
 * symbol names carry no type information, so the symbols are ABI-identical to
 * the real ones.  Non-pointer parameters keep their real types (size_t).
 */
#include <errno.h>
#include <stddef.h>

#define SOFTRDMA_STUB_EXPORT __attribute__((visibility("default")))

/* struct ibv_qp *mlx5dv_create_qp(struct ibv_context *, struct ibv_qp_init_attr_ex *,
 *                                 struct mlx5dv_qp_init_attr *); */
SOFTRDMA_STUB_EXPORT void *mlx5dv_create_qp(void *context, void *qp_attr, void *mlx5_qp_attr);
/* int mlx5dv_devx_general_cmd(struct ibv_context *, const void *in, size_t inlen,
 *                             void *out, size_t outlen); */
SOFTRDMA_STUB_EXPORT int mlx5dv_devx_general_cmd(void *context, const void *in, size_t inlen,
						 void *out, size_t outlen);
/* struct ibv_context *mlx5dv_open_device(struct ibv_device *, struct mlx5dv_context_attr *); */
SOFTRDMA_STUB_EXPORT void *mlx5dv_open_device(void *device, void *attr);
/* struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *); */
SOFTRDMA_STUB_EXPORT void *mlx5dv_create_mkey(void *mkey_init_attr);
/* int mlx5dv_destroy_mkey(struct mlx5dv_mkey *); */
SOFTRDMA_STUB_EXPORT int mlx5dv_destroy_mkey(void *mkey);
/* struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *); */
SOFTRDMA_STUB_EXPORT void *mlx5dv_qp_ex_from_ibv_qp_ex(void *qp);
/* int mlx5dv_crypto_login(struct ibv_context *, struct mlx5dv_crypto_login_attr *); */
SOFTRDMA_STUB_EXPORT int mlx5dv_crypto_login(void *context, void *login_attr);
/* struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *, struct mlx5dv_dek_init_attr *); */
SOFTRDMA_STUB_EXPORT void *mlx5dv_dek_create(void *context, void *init_attr);
/* int mlx5dv_dek_destroy(struct mlx5dv_dek *); */
SOFTRDMA_STUB_EXPORT int mlx5dv_dek_destroy(void *dek);

static void *fail_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int fail_errno(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

void *mlx5dv_create_qp(void *context, void *qp_attr, void *mlx5_qp_attr)
{
	(void)context;
	(void)qp_attr;
	(void)mlx5_qp_attr;
	return fail_null();
}

int mlx5dv_devx_general_cmd(void *context, const void *in, size_t inlen,
			    void *out, size_t outlen)
{
	(void)context;
	(void)in;
	(void)inlen;
	(void)out;
	(void)outlen;
	return fail_errno();
}

void *mlx5dv_open_device(void *device, void *attr)
{
	(void)device;
	(void)attr;
	return fail_null();
}

void *mlx5dv_create_mkey(void *mkey_init_attr)
{
	(void)mkey_init_attr;
	return fail_null();
}

int mlx5dv_destroy_mkey(void *mkey)
{
	(void)mkey;
	return fail_errno();
}

void *mlx5dv_qp_ex_from_ibv_qp_ex(void *qp)
{
	(void)qp;
	return fail_null();
}

int mlx5dv_crypto_login(void *context, void *login_attr)
{
	(void)context;
	(void)login_attr;
	return fail_errno();
}

void *mlx5dv_dek_create(void *context, void *init_attr)
{
	(void)context;
	(void)init_attr;
	return fail_null();
}

int mlx5dv_dek_destroy(void *dek)
{
	(void)dek;
	return fail_errno();
}

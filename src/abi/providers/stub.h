/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Definitions for the stub vendor providers (libmlx5.so.1, libefa.so.1).
 *
 * Programs link these libraries directly (perftest, libfabric, pyverbs, UCX) and, when loaded
 * with softrdma's libibverbs, must find every symbol@version the real rdma-core 44 library
 * exports. No mlx5 or EFA device ever exists here, so each function answers as the real one
 * does for a device that is not its own: int functions return EOPNOTSUPP (the vendor
 * libraries' convention: a positive errno value) and set errno; pointer functions return NULL
 * with errno = EOPNOTSUPP; ssize_t functions -1 with errno; the one bool (mlx5dv_is_supported)
 * false; void functions nothing.
 *
 * The functions are declared without parameters: C symbols carry no types, and in the SysV
 * calling conventions the caller owns its arguments, so ignoring them is ABI-safe. This keeps
 * rdma-core's vendor headers (and their types) out of the build.
 */
#ifndef SOFTRDMA_PROVIDER_STUB_H
#define SOFTRDMA_PROVIDER_STUB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SR_EXPORT __attribute__((visibility("default")))

#define SR_ANSWER_ERRNO(fn)                                                                        \
	SR_EXPORT int fn(void);                                                                    \
	int fn(void)                                                                               \
	{                                                                                          \
		errno = EOPNOTSUPP;                                                                \
		return EOPNOTSUPP;                                                                 \
	}
#define SR_ANSWER_NULL_ERRNO(fn)                                                                   \
	SR_EXPORT void *fn(void);                                                                  \
	void *fn(void)                                                                             \
	{                                                                                          \
		errno = EOPNOTSUPP;                                                                \
		return NULL;                                                                       \
	}
#define SR_ANSWER_MINUS_ONE_ERRNO(fn)                                                              \
	SR_EXPORT ssize_t fn(void);                                                                \
	ssize_t fn(void)                                                                           \
	{                                                                                          \
		errno = EOPNOTSUPP;                                                                \
		return -1;                                                                         \
	}
#define SR_ANSWER_FALSE(fn)                                                                        \
	SR_EXPORT bool fn(void);                                                                   \
	bool fn(void)                                                                              \
	{                                                                                          \
		return false;                                                                      \
	}
#define SR_ANSWER_NOTHING(fn)                                                                      \
	SR_EXPORT void fn(void);                                                                   \
	void fn(void)                                                                              \
	{                                                                                          \
	}

#define SR_STUB(node, name, answer) SR_ANSWER_##answer(name)
/* A name with two versions: each is defined under a private name that .symver binds to
 * name@node (the older) or name@@node (the current one, which new links pick). */
#define SR_STUB_OLD(node, name, answer)                                                            \
	SR_ANSWER_##answer(sr_old_##name) __asm__(".symver sr_old_" #name "," #name "@" #node);
#define SR_STUB_NEW(node, name, answer)                                                            \
	SR_ANSWER_##answer(sr_new_##name) __asm__(".symver sr_new_" #name "," #name "@@" #node);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Stub libmlx5.so.1: every mlx5dv_* function of rdma-core 44, answering "not an mlx5 device"
 * (stub.h says how). UCX asks mlx5dv_is_supported() first and takes the plain verbs path. */
#include "stub.h"

#include "mlx5_symbols.def"

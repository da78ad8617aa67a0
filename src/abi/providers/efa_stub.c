/* SPDX-License-Identifier: BSD-2-Clause */
/* Stub libefa.so.1: every efadv_* function of rdma-core 44, answering "not an EFA device"
 * (stub.h says how). libfabric and pyverbs link it; perftest calls efadv_query_device. */
#include "stub.h"

#include "efa_symbols.def"

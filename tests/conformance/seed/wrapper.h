/* SPDX-License-Identifier: BSD-2-Clause */
/* Force-included (cc -include) before the seed manual's §10.2 server example, which is
 * compiled unchanged by tests/conformance/seed_examples.sh. The example never prints what
 * it received; it calls ibv_dereg_mr(conn->mr) from destroy_connection() after the client's
 * SEND landed in conn->buf, so routing that one call through sr_test_dereg_mr() lets the
 * test see the received bytes without editing the example. */
#ifndef SR_TEST_SEED_WRAPPER_H
#define SR_TEST_SEED_WRAPPER_H
#include <infiniband/verbs.h> /* first, so the macro below does not rename its declaration */

int sr_test_dereg_mr(struct ibv_mr *mr);
#define ibv_dereg_mr(mr) sr_test_dereg_mr(mr)

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* See wrapper.h. Compiled on its own (without -include wrapper.h): ibv_dereg_mr below is the
 * real libibverbs function. */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#undef ibv_dereg_mr

int sr_test_dereg_mr(struct ibv_mr *mr)
{
	if (mr && mr->addr) {
		const char *s = mr->addr;
		printf("server received: %.*s\n", (int)strnlen(s, mr->length), s);
		fflush(stdout);
	}
	return ibv_dereg_mr(mr);
}

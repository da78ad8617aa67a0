#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Programs linked against rdma-core's vendor providers (libmlx5.so.1, libefa.so.1) keep
# working with our libraries on the library path, where our complete stubs stand in for them:
#   1. libfabric (links libefa) loads, and its tcp provider runs fi_pingpong with data checks
#      on 127.0.0.1;
#   2. pyverbs (links libmlx5 and libefa) imports and lists our devices, and opens sr_lo.
#   usage: providers.sh <libdir> <bindir>
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/lib.sh"
conf_init "$@"
require_pkg_prog fi_pingpong libfabric-bin
[[ -x /usr/bin/python3 ]] || die "no /usr/bin/python3"

run_pair fi_pingpong_tcp fi_pingpong -p tcp -e msg -B @PORT@ -I 100 -c -- \
    fi_pingpong -p tcp -e msg -P @PORT@ -I 100 -c 127.0.0.1 &&
    if grep -qE '^1m +100 ' "$PAIR_CLIENT_OUT"; then
        pass "libfabric's tcp provider: fi_pingpong 64 B - 1 MiB with data checks"
    else
        fail "libfabric's tcp provider: no 1 MiB result"; dump_file client "$PAIR_CLIENT_OUT" 20
    fi

run_cmd pyverbs /usr/bin/python3 -c '
import pyverbs.device as d
names = sorted(x.name.decode() for x in d.get_device_list())
ctx = d.Context(name="sr_lo")
attr = ctx.query_device()
print("devices:", " ".join(names), "| sr_lo max_qp_wr:", attr.max_qp_wr)
'
if ((RUN_RC == 0)) && grep -q 'devices:.* sr_lo .*max_qp_wr: [1-9]' "$RUN_OUT"; then
    pass "pyverbs imports with our libraries: $(cat "$RUN_OUT")"
else
    fail "pyverbs: $(describe_rc "$RUN_RC" 60)"; dump_file pyverbs "$RUN_OUT" 20
fi
conf_finish

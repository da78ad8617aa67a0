#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified rdma_server/rdma_client and rdma_xserver/rdma_xclient
# (rdmacm-utils) over 127.0.0.1 on our librdmacm.so.1 + libibverbs.so.1. They use the
# synchronous "rdma_verbs" API: rdma_getaddrinfo, rdma_create_ep, rdma_get_request,
# rdma_accept/rdma_connect on ids without an event channel, rdma_reg_msgs,
# rdma_post_recv/rdma_post_send and rdma_get_recv_comp/rdma_get_send_comp.
#   1. rdma_server -p PORT / rdma_client -s 127.0.0.1 -p PORT (x3): both exit 0 and print
#      "<prog>: end 0";
#   2. rdma_xserver -p PORT / rdma_xclient -s 127.0.0.1 -p PORT (RC, the default) (x3): same;
#   3. rdma_client with nobody listening fails promptly (non-zero, no "end 0").
# (XRC, "-c x", is not supported by softrdma: see docs/compatibility.md; not tested here.)
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
for p in rdma_server rdma_client rdma_xserver rdma_xclient; do require_pkg_prog "$p" rdmacm-utils; done
require_prog ldd

check_resolves_to_ours rdma_server.ldd rdma_server librdmacm.so.1 libibverbs.so.1
check_resolves_to_ours rdma_xclient.ldd rdma_xclient librdmacm.so.1 libibverbs.so.1

# cs_case <name> <server prog> <client prog>
cs_case() {
    local name=$1 sprog=$2 cprog=$3 before=$CONF_FAILS
    run_pair "$name" "$sprog" -p @PORT@ -- "$cprog" -s 127.0.0.1 -p @PORT@ || return 1
    expect_grep "$name" "$PAIR_SERVER_OUT" "^$sprog: start\$" "server did not print '$sprog: start'"
    expect_grep "$name" "$PAIR_SERVER_OUT" "^$sprog: end 0\$" "server did not print '$sprog: end 0'"
    expect_grep "$name" "$PAIR_CLIENT_OUT" "^$cprog: start\$" "client did not print '$cprog: start'"
    expect_grep "$name" "$PAIR_CLIENT_OUT" "^$cprog: end 0\$" "client did not print '$cprog: end 0'"
    ((CONF_FAILS == before)) && pass "$name: $sprog / $cprog: both exit 0 and print 'end 0'"
}

for run in 1 2 3; do cs_case "rdma_server.$run" rdma_server rdma_client; done
for run in 1 2 3; do cs_case "rdma_xserver.$run" rdma_xserver rdma_xclient; done

# Nothing listens: rdma_client's rdma_connect must fail, promptly.
port=$(free_port)
if port_listening "$port"; then
    fail "rdma_client.no_server: free port $port is already listening (race); cannot run the check"
else
    t0=$SECONDS
    run_cmd rdma_client.no_server rdma_client -s 127.0.0.1 -p "$port"
    if ((RUN_RC != 0 && RUN_RC != 124 && RUN_RC != 125 && RUN_RC != 137 && SECONDS - t0 < 20)) &&
        ! grep -q 'end 0' "$RUN_OUT"; then
        pass "rdma_client.no_server: fails in $((SECONDS - t0))s (exit $RUN_RC: $(grep -m1 -iE 'connect|error|fail' "$RUN_OUT"))"
    else
        fail "rdma_client.no_server: client with nobody listening on 127.0.0.1:$port: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT") after $((SECONDS - t0))s; expected a prompt non-zero exit"
        dump_file rdma_client.no_server "$RUN_OUT"
    fi
fi

conf_finish

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ucmatose (rdmacm-utils) over 127.0.0.1 on our
# librdmacm.so.1 + libibverbs.so.1. ucmatose drives everything through one event channel:
# rdma_resolve_addr/route, rdma_connect/accept of many ids at once, SENDs both ways on
# each connection, rdma_disconnect, DISCONNECTED on both sides.
#   1. ucmatose -p PORT -c 10  /  ucmatose -s 127.0.0.1 -p PORT -c 10  (x2)
#      both exit 0 and print "return status 0"; the server went through "data transfers
#      complete" and "disconnected"; the client through "data transfers complete".
#   2. the same with -m on both sides (Debian 12's ucmatose has it, "[-m(igrate)]"): after
#      the transfers every id (and the server's listening id) is moved to a new event
#      channel with rdma_migrate_id and the DISCONNECTED events arrive on the new channel.
#   3. reject: ucmatose has no reject option; its reject path is a server with fewer
#      connection slots than the client opens. Server -c 1 -C 0, client -c 2 -C 0: the
#      server accepts one request and rejects the other with rdma_reject(id, NULL, 0)
#      ("cmatose: failing connection request"), then returns -ENOMEM (exit 244); the client
#      gets RDMA_CM_EVENT_REJECTED with status 28 (IB_CM_REJ_CONSUMER_DEFINED, as a RoCE
#      peer reports a consumer reject) and exits 28. Both sides must end promptly.
#   4. no listener: a client aimed at a port where nothing listens gets
#      RDMA_CM_EVENT_REJECTED with status 8 (IB_CM_REJ_INVALID_SERVICE_ID, what a RoCE
#      port with no listener answers) and exits 8, promptly.
# (ucmatose's other options, -b -f -P -C -S -t -a, are not exercised here.)
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog ucmatose rdmacm-utils
require_prog ldd

check_resolves_to_ours ucmatose.ldd ucmatose librdmacm.so.1 libibverbs.so.1

# The option list of the installed ucmatose (it prints its usage for an unknown option).
usage=$(timeout 10 ucmatose -h 2>&1)
HAVE_MIGRATE=0
if grep -qF -- '-m(igrate)' <<<"$usage"; then HAVE_MIGRATE=1; fi

# ucm_case <name> <migrate 0|1> <extra args...>
ucm_case() {
    local name=$1 migrate=$2 before=$CONF_FAILS n
    shift 2
    run_pair "$name" ucmatose -p @PORT@ "$@" -- ucmatose -s 127.0.0.1 -p @PORT@ "$@" || return 1
    expect_grep "$name" "$PAIR_SERVER_OUT" '^return status 0$' "server did not print 'return status 0'"
    expect_grep "$name" "$PAIR_CLIENT_OUT" '^return status 0$' "client did not print 'return status 0'"
    expect_grep "$name" "$PAIR_SERVER_OUT" '^data transfers complete$' "server did not complete its data transfers"
    expect_grep "$name" "$PAIR_SERVER_OUT" '^disconnected$' "server did not print 'disconnected'"
    expect_grep "$name" "$PAIR_CLIENT_OUT" '^data transfers complete$' "client did not complete its data transfers"
    if ((migrate)); then
        expect_grep "$name" "$PAIR_SERVER_OUT" '^migrating to new event channel$' "server did not migrate"
        expect_grep "$name" "$PAIR_CLIENT_OUT" '^migrating to new event channel$' "client did not migrate"
    fi
    for f in "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"; do
        if grep -qE 'cmatose: (event|fail|unable)|failed|failure' "$f"; then
            fail "$name: an error was printed in $(basename "$f")"
            dump_file "$name server" "$PAIR_SERVER_OUT"
            dump_file "$name client" "$PAIR_CLIENT_OUT"
            break
        fi
    done
    n=$(grep -oE -- '-c [0-9]+' <<<"$*" | awk '{ print $2 }')
    ((CONF_FAILS == before)) && pass "$name: ucmatose $*: ${n:-1} connection(s), both 'return status 0'"
}

ucm_case ucmatose.c10.1 0 -c 10
ucm_case ucmatose.c10.2 0 -c 10
if ((HAVE_MIGRATE)); then
    ucm_case ucmatose.migrate 1 -c 10 -m
else
    fail "ucmatose.migrate: this ucmatose has no -m option (Debian 12's rdmacm-utils 44 does); usage was:"
    printf '%s\n' "$usage" | sed 's/^/    | /'
fi

# Reject path: more client connections than server slots.
name=ucmatose.reject
t0=$SECONDS
if run_pair_rc "$name" 244 28 ucmatose -p @PORT@ -c 1 -C 0 -- ucmatose -s 127.0.0.1 -p @PORT@ -c 2 -C 0; then
    before=$CONF_FAILS
    expect_grep "$name" "$PAIR_SERVER_OUT" '^cmatose: failing connection request$' "server did not reject the second request"
    expect_grep "$name" "$PAIR_SERVER_OUT" '^return status -12$' "server did not return -ENOMEM"
    expect_grep "$name" "$PAIR_CLIENT_OUT" '^cmatose: event: RDMA_CM_EVENT_REJECTED, error: 28$' \
        "client did not get RDMA_CM_EVENT_REJECTED with status 28 (consumer reject)"
    expect_grep "$name" "$PAIR_CLIENT_OUT" '^return status 28$' "client did not return the reject status"
    expect_count "$name" "$PAIR_CLIENT_OUT" 'RDMA_CM_EVENT_' 1 "client should report exactly one CM error event"
    if ((SECONDS - t0 > 20)); then
        fail "$name: took $((SECONDS - t0))s; a reject should end both sides promptly"
    fi
    ((CONF_FAILS == before)) && pass "$name: server -c 1 rejects the client's second connection; client gets REJECTED (28), exits 28; server exits 244 (-ENOMEM) in $((SECONDS - t0))s"
fi

# No listener.
name=ucmatose.no_server
port=$(free_port)
if port_listening "$port"; then
    fail "$name: free port $port is already listening (race); cannot run the check"
else
    t0=$SECONDS
    run_cmd "$name" ucmatose -s 127.0.0.1 -p "$port" -c 1
    if ((RUN_RC == 8 && SECONDS - t0 < 20)) &&
        grep -qx 'cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8' "$RUN_OUT" &&
        grep -qx 'return status 8' "$RUN_OUT"; then
        pass "$name: client with no server gets RDMA_CM_EVENT_REJECTED (8) and exits 8 in $((SECONDS - t0))s"
    else
        fail "$name: client with nobody listening on 127.0.0.1:$port: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT") after $((SECONDS - t0))s; expected exit 8 with 'RDMA_CM_EVENT_REJECTED, error: 8', promptly"
        dump_file "$name" "$RUN_OUT"
    fi
fi

conf_finish

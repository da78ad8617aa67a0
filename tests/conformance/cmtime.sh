#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified cmtime (rdmacm-utils) over 127.0.0.1 on our
# librdmacm.so.1 + libibverbs.so.1. The client times each CM step for many connections
# at once (rdma_create_id, rdma_resolve_addr, rdma_resolve_route, rdma_create_qp,
# rdma_connect, rdma_disconnect, rdma_destroy_id), driven from an event thread; the server
# accepts from a request thread and disconnects/destroys from a third thread.
#   server: cmtime -p PORT          client: cmtime -s 127.0.0.1 -p PORT -c 200
# The client must exit 0 and print the timing table: the header and one row per step,
# "<step>: <total ms> <max ms> <min us> <us / conn>", and no CM error event.
# cmtime's server (rdma-core 44) never exits: it serves until killed. So the server must
# still be running after the client finished (it did not crash while tearing down 200
# connections), must not have failed any request, and must serve a second client run just
# as well, without keeping descriptors from the first run (its open file count after the
# second run is at most 2 above the count after the first); then it is killed by PID.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog cmtime rdmacm-utils
require_prog ldd

check_resolves_to_ours cmtime.ldd cmtime librdmacm.so.1 libibverbs.so.1

CONNS=200
NUM='[0-9]+\.[0-9]{2}'
STEPS=("create id" "resolve addr" "resolve route" "create qp" "connect" "disconnect" "destroy")

# check_table <name> <file>: the timing table of a client run.
check_table() {
    local name=$1 file=$2 step re before=$CONF_FAILS
    expect_grep "$name" "$file" '^step +total ms +max ms +min us +us / conn$' "client did not print the table header" || return 1
    for step in "${STEPS[@]}"; do
        re="^$(printf '%-13s' "$step"): +$NUM +$NUM +$NUM +$NUM\$"
        expect_grep "$name" "$file" "$re" "client did not print the '$step' row" || return 1
    done
    if grep -qE '^(event: |RDMA_CM_EVENT_|failure|failing)' "$file"; then
        fail "$name: the client reported CM errors"
        dump_file "$name client" "$file"
    fi
    ((CONF_FAILS == before))
}

name=cmtime
port=$(free_port)
if start_bg "$name" "$port" cmtime -p "$port"; then
    spid=$BG_PID
    sout=$BG_OUT
    ok=1
    fds=()
    for run in 1 2; do
        cname=$name.client.$run
        log "-- $cname: client: cmtime -s 127.0.0.1 -p $port -c $CONNS"
        if run_cmd "$cname" cmtime -s 127.0.0.1 -p "$port" -c "$CONNS"; then
            if check_table "$cname" "$RUN_OUT"; then
                pass "$cname: $CONNS connections, exit 0; $(grep -E '^connect +:' "$RUN_OUT" | tr -s ' ')"
            else
                ok=0
            fi
        else
            fail "$cname: cmtime client: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
            dump_file "$name server" "$sout"
            dump_file "$cname client" "$RUN_OUT"
            ok=0
        fi
        # The server must have survived the run (it only ends when killed).
        sleep 0.5
        if ! is_alive "$spid"; then
            wait "$spid" 2>/dev/null
            fail "$cname: the cmtime server died during or after the client run ($(describe_rc $? "$CONF_PAIR_TIMEOUT"))"
            dump_file "$name server" "$sout"
            ok=0
            break
        fi
        # Open descriptors of the cmtime process itself (the child of the timeout wrapper).
        fds+=("$(for c in $(child_pids "$spid"); do find "/proc/$c/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; done | sort -n | tail -1)")
    done
    if ((${#fds[@]} == 2)) && [[ -n ${fds[0]} && -n ${fds[1]} ]]; then
        if ((fds[1] > fds[0] + 2)); then
            fail "$name: the server holds ${fds[1]} descriptors after the second run, ${fds[0]} after the first: connections leak"
            ok=0
        else
            log "   server open descriptors after run 1: ${fds[0]}, after run 2: ${fds[1]}"
        fi
    fi
    if is_alive "$spid"; then
        if grep -qE 'fail|error|RDMA_CM_EVENT_' "$sout"; then
            fail "$name: the server reported errors"
            dump_file "$name server" "$sout"
        elif ((ok)); then
            pass "$name: server still serving after 2 x $CONNS connections, no error printed"
        fi
    fi
    stop_bg "$spid"
fi

conf_finish
